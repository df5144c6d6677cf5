"""What the model comparison shows, in Markdown bullets with the numbers: the seed's model and the fitted
one on the seed's tables and this machine's runs, held out, and the terms the fit found."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.bench.ioeff.baseline import background_io, background_lines, value_range
from rxlab.bench.ioeff.names import BLOCK_BYTES
from rxlab.core import model
from rxlab.studies.perf_model import device_load, placement
from rxlab.studies.perf_model.analysis import HELD_OUT_MODELS, Comparison
from rxlab.studies.perf_model.result import PerfModelResult


def _steal_lines(f: model.ModelFit | None, eff: pd.Series | None) -> list[str]:
    """The host's steal: how the runs moved with it, and the model's steal_factor ([] without either)."""
    lines = []
    if eff is not None and not np.isnan(eff["r2"]):
        lines.append(f"- The host's steal (stealPer, us per query that the VM's runnable vCPUs waited for a "
                     f"physical CPU) was {eff['steal_median_us']:.1f} us per query in the median RocksDB row "
                     f"and up to {eff['steal_max_us']:.1f}. Within a configuration, each 10 us of it moved "
                     f"qps by {eff['qps_pct_per_10us']:+.1f}% and cpuPer by "
                     f"{10 * eff['cpu_us_per_us']:+.1f} us, "
                     f"and it accounts for {eff['r2']:.0%} of the repetitions' spread of qps (steal_effect).")
    if f is not None and "steal_factor" in f.free:
        lines.append(f"- Beyond the CPU it inflates, each us of steal per query cost "
                     f"{f.params['steal_factor']:.2f} ± {f.stderr['steal_factor']:.2f} us of latency "
                     f"(steal_factor, fitted on fio's and RocksDB's rows alike: the emulated disk answers "
                     f"later when the host is busy).")
    return lines


def _floor_clause(h: pd.DataFrame) -> str:
    """'; the medians themselves ...' from held_out's config_floor_pct, or '' where it is unknown."""
    if "config_floor_pct" not in h.columns or not h["config_floor_pct"].notna().any():
        return ""
    floor = value_range(h["config_floor_pct"].dropna(), ".1f")
    return (f"; the medians themselves are uncertain by about {floor}% "
            "per split (the repetitions' spread), and a held-out error can fall below that only because the "
            "fitted and the held-out rows share each repetition's drift")


def _repeatability_lines(rep: pd.DataFrame | None, agree: pd.DataFrame | None) -> list[str]:
    """Findings on the measurements' own noise: the repetitions' spread and, given a second study,
    how far the same configurations moved between the two."""
    lines = []
    if rep is not None and rep["floor_pct"].notna().any():
        lines.append(f"- The repetitions themselves: a configuration's {int(rep['n'].median())} repetitions "
                     f"spanned {rep['spread_pct'].median():.1f}% of its median qps (median over "
                     f"{len(rep)} configurations; widest {rep['spread_pct'].max():.1f}%), so a model that "
                     f"knew each configuration's true rate would still miss the medians by about "
                     f"{rep['floor_pct'].median():.1f}% (largest {rep['floor_pct'].max():.1f}%).")
    if agree is not None and len(agree):
        d = agree["diff_pct"].abs()
        lines.append(f"- The same {len(agree)} configurations in an earlier study with the same parameters: "
                     f"medians {d.median():.1f}% apart (median over configurations; widest {d.max():.1f}%).")
    return lines


def _wait_for_cpu_lines(gap: pd.DataFrame | None) -> list[str]:
    """What the readers' wait for a CPU (runqPer) explains, per client count, from `model.latency_gap`
    of undelayed rows; nothing when the rows did not measure it."""
    if gap is None or model.RUNQ not in gap.columns:
        return []
    g = gap[(gap["delay_us"] == 0) & (gap[model.RUNQ] > 0)]
    if g.empty:
        return []
    m = g.groupby("threads")[[model.RUNQ, "unexplained_us"]].median()
    parts = [f"{m.loc[t, model.RUNQ]:.1f} us per query at {int(t)} client{'s' if t > 1 else ''}"
             for t in m.index]
    rest = ", ".join(f"{m.loc[t, 'unexplained_us']:.1f}" for t in m.index)
    return [f"- The readers waited for a CPU (runqPer, the scheduler's run_delay) {', '.join(parts)} "
            f"(medians, no delay). Counted beside cpuPer, and fio's out of its device term (the model's "
            f"runq=True), it leaves {rest} us per query unexplained at "
            f"{', '.join(str(int(t)) for t in m.index)} client(s)."]


def model_findings(comp: Comparison, heldout_summary: pd.DataFrame | None = None,
                   background: pd.DataFrame | None = None, gap: pd.DataFrame | None = None,
                   repeat: pd.DataFrame | None = None, agree: pd.DataFrame | None = None,
                   steal: pd.Series | None = None) -> str:
    """The model comparison in a few Markdown bullets with its numbers (background: `background_io`;
    gap: `model.latency_gap(rows, runq=True)` of the local rows, for the wait for a CPU; repeat:
    `repeatability(rows)`; agree: `agreement` with an earlier study; steal: `steal_effect(rows)`)."""
    s = comp.summary.set_index(["source", "model"])
    lines = background_lines(background) + _wait_for_cpu_lines(gap)
    for src, label in (("published", "the seed's tables"), ("local", "this machine's runs")):
        if (src, "seed") not in s.index:
            continue
        a, b = s.loc[(src, "seed")], s.loc[(src, "fitted")]
        lines.append(f"- On {label} ({int(a['rows'])} rows) the seed's model misses by a median "
                     f"{a['median_abs_err_pct']:.1f}% (max {a['max_abs_err_pct']:.1f}%); the fitted model by "
                     f"{b['median_abs_err_pct']:.1f}% (max {b['max_abs_err_pct']:.1f}%), "
                     f"{b['within_3pct']:.0%} of rows within 3%.")
    if heldout_summary is not None and len(heldout_summary):
        h = heldout_summary[heldout_summary["model"] == "fitted"]
        if len(h):
            lines.append(f"- Held out ({len(h)} splits), the fitted model's median error per split is "
                         f"{value_range(h['median_abs_err_pct'], '.1f')}% over single repetitions (worst row "
                         f"{h['max_abs_err_pct'].max():.1f}%), and "
                         f"{value_range(h['config_median_abs_err_pct'], '.1f')}% "
                         f"on each configuration's median over its repetitions (worst configuration "
                         f"{h['config_max_abs_err_pct'].max():.1f}%)" + _floor_clause(h) + ".")
            sd = heldout_summary[heldout_summary["model"] == "seed"]
            if len(sd):
                lines.append(f"- The seed's model on the same held-out configurations: median error "
                             f"per split "
                             f"{value_range(sd['config_median_abs_err_pct'], '.1f')}% (worst configuration "
                             f"{sd['config_max_abs_err_pct'].max():.1f}%).")
        io = heldout_summary[(heldout_summary["model"] == HELD_OUT_MODELS["iostat"])
                             & heldout_summary["config_median_abs_err_pct"].notna()]
        if len(io):
            med = value_range(io["config_median_abs_err_pct"], ".1f")
            worst = io["config_max_abs_err_pct"].max()
            lines.append(f"- Given the disk's latency that iostat saw in each run (device='iostat': each "
                         f"row's io.lat less the reader's CPU inside it, fitted on the fio rows), the model "
                         f"misses "
                         f"held-out configurations by a median {med}% "
                         f"per split (worst configuration {worst:.1f}%): CPU, the "
                         f"wait for a CPU and the disk's own latency account for a query"
                         + _excess_clause(gap) + ".")
    f = comp.fits.get("local")
    lines += _repeatability_lines(repeat, agree) + _steal_lines(f, steal)
    lines += _remote_lines(f, gap) + _size_lines(f)
    if f is not None:
        p = f.params
        held = [q for q, why in f.held.items() if not why.startswith(("used with device=", "device="))]
        lines.append(f"- Fitted here: device {p['dev_1_us']:.1f} us per read at one client "
                     f"({p['dev_per_thread_us']:+.1f} us per extra client), a wait of {p['wait_us']:.1f} us "
                     f"per query that neither CPU nor device time explains"
                     + (f"; held: {', '.join(held)}." if held else "."))
    return "\n".join(lines)


def _remote_lines(f: model.ModelFit | None, gap: pd.DataFrame | None) -> list[str]:
    """Where the readers were woken: the fitted remote_us and the undelayed rows' awayShare per
    client count, RocksDB's against its fio baseline's ([] when the term was held)."""
    if f is None or "remote_us" not in f.free or gap is None or model.AWAY not in gap.columns:
        return []
    g = gap[gap["delay_us"] == 0].groupby("threads")[[model.AWAY, "fio_awayShare"]].median()
    share = ", ".join(f"{r[model.AWAY]:.0%} against fio's {r['fio_awayShare']:.0%} at {int(t)} "
                      f"client{'s' if t > 1 else ''}" for t, r in g.iterrows())
    p, se = f.params["remote_us"], f.stderr["remote_us"]
    slope = ""
    if "remote_per_thread_us" in f.free:
        slope = (f", {f.params['remote_per_thread_us']:+.1f} ± {f.stderr['remote_per_thread_us']:.1f} us per "
                 "extra client")
    return [f"- A read whose reader was woken away from the CPU that takes the disk's interrupts costs "
            f"{p:.1f} ± {se:.1f} us more at one client{slope} (remote_us, fitted with fio placed away beside "
            f"its baseline). RocksDB's readers were woken away on {share} (medians of awayShare)."]


def _size_lines(f: model.ModelFit | None) -> list[str]:
    """What a read's KiB above the block cost (size penalty at one client and per extra client),
    [] when the rows held the penalty."""
    if f is None or "size_penalty_us_per_kib" not in f.free:
        return []
    p, se = f.params, f.stderr
    per = "size_penalty_per_thread_us_per_kib"
    slope = (f", {p[per]:+.1f} ± {se[per]:.1f} us per extra client" if per in f.free
             else f" (per extra client: held, {f.held.get(per, '')})")
    return [f"- Each KiB a read carries above the {BLOCK_BYTES // 1024} KiB block (block_align off) costs "
            f"{p['size_penalty_us_per_kib']:.1f} ± {se['size_penalty_us_per_kib']:.1f} us at one client"
            f"{slope} "
            "(size penalty, fitted on the rows whose reqsz differs: RocksDB's without block_align, and fio's "
            "unaligned runs where model_rows was asked for them)."]


def _excess_clause(gap: pd.DataFrame | None) -> str:
    """'; the fio-device model's miss ...' with the disk's io.lat under RocksDB minus under fio, per
    client count (undelayed rows of `gap`, rxlab.core.model.latency_gap), or '' without fio's io.lat."""
    if gap is None or "io_lat_excess_us" not in gap.columns:
        return ""
    g = gap[(gap["delay_us"] == 0) & gap["io_lat_excess_us"].notna()]
    if g.empty:
        return ""
    by = g.groupby("threads")["io_lat_excess_us"].median()
    parts = ", ".join(f"{v:+.1f} us at {int(t)} client{'s' if t > 1 else ''}" for t, v in by.items())
    return (f"; what the fio-device model misses is the disk itself being slower under RocksDB's reads "
            f"than under fio's (iostat's io.lat, RocksDB minus fio, medians: {parts})")



def findings(result: PerfModelResult) -> str:
    """The study's findings: the model comparison, then where the clients ran and the disk under the
    vCPUs' load (each under a heading)."""
    heldout = result.held_out[1]
    text = model_findings(result.comparison, heldout, background_io(result.ioeff, result.delayed),
                          gap=result.gap, repeat=result.repeat, agree=result.agreement, steal=result.steal)
    parts = [text]
    if len(result.placement_runs):
        parts += ["", "**Where the clients run**", "",
                  placement.findings(placement.summary(result.placement_runs))]
    if len(result.device_load_runs):
        parts += ["", "**The disk under the vCPUs' load**", "",
                  device_load.findings(device_load.summary(result.device_load_runs))]
    return "\n".join(parts)
