"""The performance model against this machine's runs: notebook 20's analysis of the IO-efficiency study.

The IO-efficiency study (notebook 10) stores fio's baseline and RocksDB's
read tests per repetition, thread count and delay; this module turns those
runs into the model's rows (`model_rows`), fits the seed's model and rxlab's
(`compare_models`), tests the fit on rows it was not fitted on (`held_out`),
measures how well the runs repeat (`repeatability`, `agreement`), and draws
the predicted-against-measured, error and sensitivity figures.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import ticker as mticker

from rxlab.core import figures, metrics, model, published
from rxlab.studies.io_efficiency.study import (
    BLOCK_BYTES,
    DB_COLUMNS,
    DB_TOOL,
    FIO_KINDS,
    FIO_TOOL,
    FIO_UNALIGNED_TOOL,
    KEYS,
    SEED_TESTS,
    StudyResult,
    background_lines,
    value_range,
)

# --------------------------------------------------------------------------- notebook 20: the model

def model_rows(*results: StudyResult, unaligned: bool = False) -> pd.DataFrame:
    """rxlab.core.model's input from studies: the fio baselines and the seed's read tests.

    Columns: study, rep, tool, backend, threads, delay_us, block_align,
    bloom (readrandom and readrandom2 have bloom filters, readrandom3 not),
    test, run_id, the seeds' columns, runqPer and awayShare where measured, and
    `baseline` (False for the fio runs placed away from the interrupt's CPU,
    which inform the model's remote_us but are no io.eff denominator).
    unaligned=True keeps fio's unaligned runs too (baseline False), so that they
    set the model's size penalty; off by default because on these VMs their
    cost per KiB is several times what RocksDB's reads without block_align pay
    (`unaligned_cost`), and with them the block_align-off rows are predicted worse.
    """
    parts = []
    for r in results:
        if r is None:
            continue
        f = r.frame
        fio_tools = [t for t in FIO_KINDS if unaligned or t != FIO_UNALIGNED_TOOL]
        keep = f["tool"].isin(fio_tools) | ((f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS))
        # studies stored before the wait for a CPU (or where the readers woke) was measured lack it
        extra = [c for c in (model.RUNQ, model.AWAY, model.STEAL) if c in f.columns]
        parts.append(f.loc[keep, [*KEYS, *[c for c in DB_COLUMNS if c != "test"], *extra]])
    if not parts:
        raise ValueError("no study to take model rows from")
    out = pd.concat(parts, ignore_index=True)
    out["bloom"] = out["test"].map(model.SEED_BLOOM).astype(object).where(out["tool"] == DB_TOOL, False)
    out["bloom"] = out["bloom"].astype(bool)
    out["baseline"] = ~out["tool"].isin([t for t in FIO_KINDS if t != FIO_TOOL])
    return out


def unaligned_cost(*results: StudyResult) -> pd.DataFrame:
    """What reads without block_align cost, in fio and in RocksDB, per client count (undelayed).

    fio: its unaligned run (bs=8704 at 512-byte offsets) against its baseline (8 KiB aligned),
    medians over repetitions; RocksDB: block_align off against on, medians over the seed's
    three tests and the repetitions. Columns per threads and tool: reqsz_excess_kib (KiB per
    read above 8), lat_us and io_lat_us (extra latency per read: fio's lat, RocksDB's latency
    per query / reads per query; iostat's io.lat) and io_lat_us_per_kib. Empty without the
    unaligned runs or without both block_align settings.
    """
    rows = model_rows(*results, unaligned=True)
    rows = rows[rows["delay_us"] == 0].copy()
    rows["lat"] = pd.to_numeric(rows["rx.lat"])
    db = rows["tool"] == DB_TOOL
    rows.loc[db, "lat"] = rows.loc[db, "threads"] * 1e6 / pd.to_numeric(rows.loc[db, "iops"])  # per read
    cols = ["reqsz", "lat", "io.lat"]
    out = []
    for t in sorted(rows["threads"].unique()):
        at = rows[rows["threads"] == t]
        at_db = at[at["tool"] == DB_TOOL]
        aligned = at_db["block_align"].astype(bool)
        pairs = [("fio", at[at["tool"] == FIO_UNALIGNED_TOOL], at[at["tool"] == FIO_TOOL]),
                 ("rocksdb", at_db[~aligned], at_db[aligned])]
        for tool, off, on in pairs:
            if off.empty or on.empty:
                continue
            d = off[cols].apply(pd.to_numeric).median() - on[cols].apply(pd.to_numeric).median()
            excess = float(pd.to_numeric(off["reqsz"]).median()) - BLOCK_BYTES / 1024
            out.append({"threads": int(t), "tool": tool, "reqsz_excess_kib": excess, "lat_us": d["lat"],
                        "io_lat_us": d["io.lat"],
                        "io_lat_us_per_kib": d["io.lat"] / excess if excess > 0.05 else np.nan})
    return pd.DataFrame(out, columns=["threads", "tool", "reqsz_excess_kib", "lat_us", "io_lat_us",
                                      "io_lat_us_per_kib"])


def _fio_mask(rows: pd.DataFrame) -> pd.Series:
    """fio rows, as rxlab.core.model tells them: a tool name containing "fio"."""
    return rows["tool"].astype(str).str.contains("fio", case=False)


def _baseline_mask(rows: pd.DataFrame) -> pd.Series:
    """fio rows that are io.eff's denominator (not the placed or unaligned runs beside them)."""
    base = rows["baseline"].fillna(True).astype(bool) if "baseline" in rows.columns else True
    return _fio_mask(rows) & base


def _seed_predictions(rows: pd.DataFrame) -> pd.DataFrame:
    """The seed's model on each RocksDB row: device = fio lat - fio cpuPer, libc+kernel = fio cpuPer,
    RocksDB = cpu.inc (rxlab.core.metrics.efficiency against the mean fio row of its threads and delay)."""
    is_fio = _fio_mask(rows)
    fio, db = rows[_baseline_mask(rows)], rows[~is_fio]
    base = fio.groupby(["threads", "delay_us"])[["iops", "usPer", "cpuPer", "rx.lat"]].mean()
    parts = []
    for key, g in db.groupby(["threads", "delay_us"]):
        if key not in base.index:
            raise ValueError(f"no fio baseline for threads={key[0]}, delay_us={key[1]}")
        b = base.loc[key]
        e = metrics.efficiency(g[["qps", "iops", "usPer", "cpuPer"]],
                               {"iops": b["iops"], "usPer": b["usPer"], "cpuPer": b["cpuPer"]})
        pred = model.seed_model(e["cpu.inc"].to_numpy(float), float(b["rx.lat"] - b["cpuPer"]),
                                float(b["cpuPer"]), float(key[0]))
        parts.append(pd.DataFrame({"seed_iops_pred": pred, "cpu.inc": e["cpu.inc"], "io.eff": e["io.eff"]},
                                  index=g.index))
    return pd.concat(parts).loc[db.index]


@dataclass
class Comparison:
    """The seed's model and the fitted model on published and local rows.

    table: one row per RocksDB row (source, test, threads, block_align,
    delay_us, measured iops, both predictions and their errors in %);
    summary: per source and model, rows and max / median |error| %; fits:
    the ModelFit per source.
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    fits: dict


def compare_models(local: pd.DataFrame, published_rows: pd.DataFrame | None = None,
                   n_boot: int | str = "auto") -> Comparison:
    """Fit rxlab.core.model on each source (the seed's tables, this machine's runs), predict its rows,
    and put the seed's own model beside (IOPS predicted against iops measured, as the seed compares).

    n_boot: bootstrap draws for the standard errors; "auto" draws 200 when
    the local rows repeat each configuration at least 3 times (with fewer, a
    bootstrap says nothing) and none otherwise.
    """
    if n_boot == "auto":
        reps = local[~_fio_mask(local)].groupby(["threads", "delay_us", "block_align", "test"]).size()
        n_boot = 200 if len(reps) and reps.min() >= 3 else 0
    sources = {"published": model.published_frame() if published_rows is None else published_rows,
               "local": local}
    tables, fits = [], {}
    for src, frame in sources.items():
        rows = frame.reset_index(drop=True)
        f = model.fit(rows, n_boot=int(n_boot) if src == "local" else 0)
        fits[src] = f
        pred = f.predict(rows)
        seed = _seed_predictions(rows)
        t = pd.DataFrame({"source": src, "test": pred["test"], "threads": pred["threads"],
                          "block_align": pred.get("block_align", np.nan),
                          "delay_us": pred["delay_us"], "iops": pred["iops"],
                          "seed_iops_pred": seed["seed_iops_pred"],
                          "seed_err_pct": (seed["seed_iops_pred"] / pred["iops"] - 1.0) * 100.0,
                          "fitted_iops_pred": pred["iops_pred"], "fitted_err_pct": pred["err_iops_pct"],
                          "qps": pred["qps"], "fitted_qps_pred": pred["qps_pred"],
                          "fitted_err_qps_pct": pred["err_qps_pct"]})
        tables.append(t)
    table = pd.concat(tables, ignore_index=True)
    return Comparison(table=table, summary=error_summary(table), fits=fits)


def error_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per source and model: rows, max and median |error| % and the share within 3%."""
    out = []
    for src, g in table.groupby("source", sort=False):
        for name, col in (("seed", "seed_err_pct"), ("fitted", "fitted_err_pct")):
            a = pd.to_numeric(g[col]).abs()
            out.append({"source": src, "model": name, "rows": int(a.size), "max_abs_err_pct": a.max(),
                        "median_abs_err_pct": a.median(), "within_3pct": float((a <= 3.0).mean())})
    return pd.DataFrame(out)


# The held-out models: rxlab.core.model's device option -> the name in held_out's summary.
HELD_OUT_MODELS = {"curve": "fitted", "iostat": "fitted, iostat device"}


def held_out(rows: pd.DataFrame,
             devices: Sequence[str] = tuple(HELD_OUT_MODELS)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rxlab.core.model.evaluate over the splits these rows allow; returns (rows, summary).

    Splits: each test left out in turn (fit on the other two); block_align
    off predicted from on; the larger thread counts from the smallest; the
    delayed rows from the undelayed. devices: the fitted models to hold out,
    rxlab.core.model's `device` option: "curve" predicts from fio's device
    ("fitted"), "iostat" takes each run's own io.lat ("fitted, iostat
    device"; the seed's model is reported once, beside the first). The rows
    carry the option in `device`. A split that cannot be fitted is
    reported in the summary's `note` instead of failing the notebook.
    `config_floor_pct` is the median over the held-out configurations of
    `repeatability`'s floor: what a model that knew each one's true rate
    would still miss its median by (NaN with one repetition). The errors can
    be smaller: the held-out rows ran in the same repetitions as the rows the
    model was fitted on, and share their drift.
    """
    bad = [d for d in devices if d not in HELD_OUT_MODELS]
    if bad or not devices:
        raise ValueError(f"held_out devices={list(devices)!r}: choose from {', '.join(HELD_OUT_MODELS)}")
    is_db = ~_fio_mask(rows)
    splits = [(f"{t} held out", is_db & (rows["test"] != t)) for t in SEED_TESTS]
    if rows.loc[is_db, "block_align"].nunique() > 1:
        splits.append(("block_align off from on", is_db & (rows["block_align"] == True)))  # noqa: E712
    th = sorted(rows.loc[is_db, "threads"].unique())
    if len(th) > 1:
        splits.append((f"threads > {th[0]} from {th[0]}", is_db & (rows["threads"] == th[0])))
    if (rows.loc[is_db, "delay_us"] > 0).any() and (rows.loc[is_db, "delay_us"] == 0).any():
        splits.append(("delayed from undelayed", is_db & (rows["delay_us"] == 0)))
    all_rows, summ = [], []
    for device, (name, mask) in ((d, sp) for d in devices for sp in splits):
        try:
            ev = model.evaluate(rows, fit_on=mask.to_numpy(), device=device)
        except ValueError as e:
            summ.append({"split": name, "model": HELD_OUT_MODELS[device], "rows": 0,
                         "max_abs_err_pct": np.nan,
                         "median_abs_err_pct": np.nan, "configs": 0, "config_max_abs_err_pct": np.nan,
                         "config_median_abs_err_pct": np.nan, "config_floor_pct": np.nan, "note": str(e)})
            continue
        all_rows.append(ev.rows.assign(split=name, device=device))
        per_config = config_errors(ev.rows)
        floor = float(repeatability(ev.rows)["floor_pct"].median())
        for _, s in ev.summary.iterrows():
            if s["model"] == "fitted (qps)" or (s["model"] == "seed (iops)" and device != devices[0]):
                continue
            m = s["model"].removesuffix(" (iops)")
            c = per_config[f"{m}_err_pct"].abs()
            summ.append({"split": name, "model": HELD_OUT_MODELS[device] if m == "fitted" else m,
                         "rows": s["rows"],
                         "max_abs_err_pct": s["max_abs_err_pct"],
                         "median_abs_err_pct": s["median_abs_err_pct"],
                         "configs": len(c), "config_max_abs_err_pct": c.max(),
                         "config_median_abs_err_pct": c.median(), "config_floor_pct": floor, "note": ""})
    out_rows = pd.concat(all_rows, ignore_index=True) if all_rows else pd.DataFrame()
    return out_rows, pd.DataFrame(summ, columns=["split", "model", "rows", "max_abs_err_pct",
                                                 "median_abs_err_pct", "configs", "config_max_abs_err_pct",
                                                 "config_median_abs_err_pct", "config_floor_pct", "note"])


HELD_OUT_CONFIG = ("test", "block_align", "threads", "delay_us")


def config_errors(pred: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per configuration, the median over its repetitions of measured and predicted IOPS and the error.

    The studies judge every figure on medians of repetitions; a single
    repetition carries the host's drift (fio's device latency moves 5-15%
    from one repetition to the next here), which no model of the
    configuration can predict. `by`: the columns that name a configuration
    (default: those of HELD_OUT_CONFIG present). Columns: iops, fitted_iops,
    seed_iops, n and fitted_err_pct / seed_err_pct (median predicted /
    median measured - 1).
    """
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in pred.columns]
    if not by:
        raise ValueError(f"config_errors: none of the columns {list(HELD_OUT_CONFIG if by is None else by)} "
                         "is in the predictions")
    g = pred.groupby(by, dropna=False).agg(iops=("iops", "median"), fitted_iops=("iops_pred", "median"),
                                           seed_iops=("seed_iops_pred", "median"), n=("iops", "size"))
    g["fitted_err_pct"] = (g["fitted_iops"] / g["iops"] - 1.0) * 100.0
    g["seed_err_pct"] = (g["seed_iops"] / g["iops"] - 1.0) * 100.0
    return g.reset_index()


@functools.lru_cache(maxsize=None)
def _median_abs_normal(n: int) -> float:
    """E|median of n standard normal draws| (a fixed-seed simulation: the same number every time)."""
    rng = np.random.default_rng(12345)
    return float(np.mean(np.abs(np.median(rng.standard_normal((200_000, max(int(n), 1))), axis=1))))


def repeatability(rows: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """How far a configuration's median over its repetitions can be from its own true rate.

    Per configuration of the RocksDB rows (`by`, default HELD_OUT_CONFIG): n repetitions, the
    median qps, `spread_pct` ((max - min) / median), `sd_pct` (their standard deviation in % of the
    median) and `floor_pct`: E|median of n - mean| for normal draws of that spread, that is what a
    model that knew each configuration's true rate would still miss the median by, on average.
    With n=3 the spread is itself rough: read the floor as a scale, not a bound.
    """
    db = rows[~_fio_mask(rows)] if "tool" in rows.columns else rows
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in db.columns]
    if not by or db.empty:
        raise ValueError("repeatability: needs RocksDB rows with qps and configuration columns "
                         f"({', '.join(HELD_OUT_CONFIG)})")
    qps = pd.to_numeric(db["qps"])
    g = qps.groupby([db[c] for c in by], dropna=False)
    out = pd.DataFrame({"n": g.size(), "qps": g.median(), "qps_min": g.min(), "qps_max": g.max(),
                        "sd": g.std(ddof=1)})
    out["spread_pct"] = (out["qps_max"] - out["qps_min"]) / out["qps"] * 100.0
    out["sd_pct"] = out.pop("sd") / out["qps"] * 100.0
    out["floor_pct"] = [sd * _median_abs_normal(n) if n > 1 else np.nan
                        for sd, n in zip(out["sd_pct"], out["n"], strict=True)]
    return out.reset_index()


def agreement(a: pd.DataFrame, b: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """The same configurations in two studies (model_rows of each): median qps in each and
    `diff_pct` = b / a - 1. On one machine, a day apart or an hour, this is the A/A difference that
    any model fitted on one study and judged on the other's medians carries."""
    ra, rb = repeatability(a, by), repeatability(b, by)
    keys = [c for c in ra.columns if c in (HELD_OUT_CONFIG if by is None else by)]
    m = ra[[*keys, "n", "qps"]].merge(rb[[*keys, "n", "qps"]], on=keys, suffixes=("_a", "_b"))
    if m.empty:
        raise ValueError("agreement: the two studies share no configuration")
    m["diff_pct"] = (m["qps_b"] / m["qps_a"] - 1.0) * 100.0
    return m


def steal_effect(rows: pd.DataFrame, by: Sequence[str] | None = None) -> pd.Series:
    """How much of the repetitions' spread the hypervisor's steal accounts for.

    Over the RocksDB rows, within each configuration (`by`, default HELD_OUT_CONFIG), log qps and
    cpuPer regressed on stealPer (each centred on its configuration's mean, one pooled slope):
    `qps_pct_per_10us` (% of qps per 10 us of steal per query), `cpu_us_per_us` (us of cpuPer per us
    of steal), `r2` (the share of the within-configuration variance of log qps that steal
    explains), and the rows' stealPer (`steal_median_us`, `steal_max_us`) and `rows`. Where steal
    does not vary within any configuration (one repetition each, as at smoke scale) the slopes and
    r2 are NaN: there is nothing to regress.
    """
    db = rows[~_fio_mask(rows)] if "tool" in rows.columns else rows
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in db.columns]
    if not by or model.STEAL not in db.columns or pd.to_numeric(db[model.STEAL], errors="coerce").notna().sum() < 3:
        raise ValueError(f"steal_effect: needs RocksDB rows with {model.STEAL} and configuration columns "
                         f"({', '.join(HELD_OUT_CONFIG)})")
    d = db.assign(_lq=np.log(pd.to_numeric(db["qps"])), _s=pd.to_numeric(db[model.STEAL]),
                  _c=pd.to_numeric(db["cpuPer"])).dropna(subset=["_lq", "_s", "_c"])
    g = d.groupby(by, dropna=False)
    x, lq, cpu = (d[c] - g[c].transform("mean") for c in ("_s", "_lq", "_c"))
    sxx, syy = float((x * x).sum()), float((lq * lq).sum())
    b_q, b_c = (float((x * lq).sum()) / sxx, float((x * cpu).sum()) / sxx) if sxx > 0 else (np.nan, np.nan)
    return pd.Series({"rows": len(d), "steal_median_us": float(d["_s"].median()), "steal_max_us": float(d["_s"].max()),
                      "qps_pct_per_10us": (np.exp(10.0 * b_q) - 1.0) * 100.0, "cpu_us_per_us": b_c,
                      "r2": b_q * b_q * sxx / syy if sxx > 0 and syy > 0 else np.nan})


def held_out_change(with_term: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    """Two `held_out` summaries side by side (the same rows with and without a term's column, say
    stealPer): per split and model, the median and worst configuration's error in each, and the
    change (with - without, percentage points; negative is better)."""
    keys = ["split", "model"]
    cols = ["config_median_abs_err_pct", "config_max_abs_err_pct"]
    m = with_term[keys + cols].merge(without[keys + cols], on=keys, suffixes=("", "_without"))
    if m.empty:
        raise ValueError("held_out_change: the two summaries share no split and model")
    for c in cols:
        m[c.replace("_abs_err_pct", "_change_pp")] = m[c] - m[f"{c}_without"]
    return m


def _steal_lines(f: model.ModelFit | None, eff: pd.Series | None) -> list[str]:
    """The host's steal: how the runs moved with it, and the model's steal_factor ([] without either)."""
    lines = []
    if eff is not None and not np.isnan(eff["r2"]):
        lines.append(f"- The host's steal (stealPer, us per query that the VM's runnable vCPUs waited for a "
                     f"physical CPU) was {eff['steal_median_us']:.1f} us per query in the median RocksDB row and "
                     f"up to {eff['steal_max_us']:.1f}. Within a configuration, each 10 us of it moved qps by "
                     f"{eff['qps_pct_per_10us']:+.1f}% and cpuPer by {10 * eff['cpu_us_per_us']:+.1f} us, and it "
                     f"accounts for {eff['r2']:.0%} of the repetitions' spread of qps (steal_effect).")
    if f is not None and "steal_factor" in f.free:
        lines.append(f"- Beyond the CPU it inflates, each us of steal per query cost "
                     f"{f.params['steal_factor']:.2f} ± {f.stderr['steal_factor']:.2f} us of latency "
                     f"(steal_factor, fitted on fio's and RocksDB's rows alike: the emulated disk answers later "
                     f"when the host is busy).")
    return lines


def _floor_clause(h: pd.DataFrame) -> str:
    """'; the medians themselves ...' from held_out's config_floor_pct, or '' where it is unknown."""
    if "config_floor_pct" not in h.columns or not h["config_floor_pct"].notna().any():
        return ""
    return (f"; the medians themselves are uncertain by about {value_range(h['config_floor_pct'].dropna(), '.1f')}% "
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


SEED_DEVICE_UNROUNDED_US = 101.61 - 10.916   # fio lat - cpuPer at one job, the seed's device term


def sensitivity_data(fit: model.ModelFit, rows: pd.DataFrame, threads: int | None = None
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Model curves and measured points for the seed's two bullets; returns (curves, points).

    curves: rxlab.core.model.sensitivity for the seed's model and the fitted one,
    with `panel` "device" (io.eff against device latency, one line per local
    cpu.inc of readrandom and readrandom3) and "cpu" (io.eff against RocksDB
    CPU per query, at this machine's device latency and the seed's 90.7 us).
    libc+kernel is fio's cpuPer here, reads per query and reqsz the local
    medians (undelayed rows at `threads`, by default the smallest client count).
    points: measured io.eff (medians over repetitions) with x = the fio device
    latency (lat - cpuPer) at each delay_us ("device") or cpu.inc ("cpu"),
    local and the seed's one-user rows.
    """
    if threads is None:  # the smallest client count with undelayed fio rows
        fio0 = rows[_baseline_mask(rows) & (rows["delay_us"] == 0)]
        threads = int(fio0["threads"].min()) if len(fio0) else 1
    base = rows[_baseline_mask(rows) & (rows["threads"] == threads)]
    base0 = base[base["delay_us"] == 0]
    if base0.empty:
        raise ValueError(f"no undelayed fio rows at threads={threads}")
    libc = float(pd.to_numeric(base0["cpuPer"]).median())
    dev0 = float((pd.to_numeric(base0["rx.lat"]) - pd.to_numeric(base0["cpuPer"])).median())
    pred = _seed_predictions(rows)
    db = rows.loc[pred.index].assign(**{"cpu.inc": pred["cpu.inc"], "io.eff": pred["io.eff"]})
    db = db[db["threads"] == threads]
    db0 = db[db["delay_us"] == 0]
    main = db0[db0["block_align"] == True] if (db0["block_align"] == True).any() else db0  # noqa: E712
    rpq = float((pd.to_numeric(main["iops"]) / pd.to_numeric(main["qps"])).median())
    reqsz = float(pd.to_numeric(main["reqsz"]).median())
    cpus = sorted({round(float(main.loc[main["test"] == t, "cpu.inc"].median()), 1)
                   for t in ("readrandom", "readrandom3") if (main["test"] == t).any()})
    kw = {"threads": threads, "libc_kernel_us": libc, "reads_per_query": rpq, "reqsz_kib": reqsz}
    dev_grid = np.linspace(5.0, 400.0, 80)
    c1 = model.sensitivity(fit, device_latency_us=dev_grid, cpu_per_query_us=cpus, **kw)
    c1 = c1.assign(panel="device")
    devices = sorted({round(dev0, 1), round(SEED_DEVICE_UNROUNDED_US, 1)})
    c2 = model.sensitivity(fit, device_latency_us=devices, cpu_per_query_us=np.linspace(0.0, 40.0, 81), **kw)
    c2 = c2.assign(panel="cpu")
    curves = pd.concat([c1, c2], ignore_index=True)

    pts = []
    fio_dev = base.assign(device_us=pd.to_numeric(base["rx.lat"]) - pd.to_numeric(base["cpuPer"]))
    fdev = fio_dev.groupby("delay_us")["device_us"].median()
    main_all = db[db["block_align"] == True] if (db["block_align"] == True).any() else db  # noqa: E712
    for (d, t), g in main_all.groupby(["delay_us", "test"]):
        if d in fdev.index:
            pts.append({"panel": "device", "source": "local", "test": t, "delay_us": d, "x": fdev[d],
                        "y": g["io.eff"].median(), "n": len(g)})
    for (t, ba), g in db0.groupby(["test", "block_align"]):
        pts.append({"panel": "cpu", "source": "local", "test": t, "delay_us": 0, "block_align": ba,
                    "x": g["cpu.inc"].median(), "y": g["io.eff"].median(), "n": len(g)})
    pe = published.load("ioeff_efficiency")
    for _, r in pe[pe["users"] == 1].iterrows():
        pts.append({"panel": "device", "source": "published", "test": r["test"], "delay_us": 0,
                    "x": SEED_DEVICE_UNROUNDED_US, "y": r["io.eff"], "n": 1})
        pts.append({"panel": "cpu", "source": "published", "test": r["test"], "delay_us": 0,
                    "block_align": True, "x": r["cpu.inc"], "y": r["io.eff"], "n": 1})
    points = pd.DataFrame(pts, columns=["panel", "source", "test", "delay_us", "block_align", "x", "y", "n"])
    return curves, points


def fig_predicted_vs_measured(comp: Comparison):
    """Predicted against measured IOPS, the seed's model and the fitted one, seed's data and local."""

    fig, axes = figures.figure(width="page", aspect=0.36, ncols=2)
    for ax, src in zip(axes, ("published", "local"), strict=True):
        t = comp.table[comp.table["source"] == src]
        lo = float(np.nanmin(t[["iops", "seed_iops_pred", "fitted_iops_pred"]].to_numpy(float))) * 0.9
        hi = float(np.nanmax(t[["iops", "seed_iops_pred", "fitted_iops_pred"]].to_numpy(float))) * 1.1
        xs = np.array([lo, hi])
        ax.fill_between(xs, xs * 0.97, xs * 1.03, color="#dddddd", lw=0, label="within 3%")
        ax.plot(xs, xs, color="#555555", lw=0.6)
        ax.plot(t["iops"], t["seed_iops_pred"], "x", color="#d55e00", label="seed's model")
        ax.plot(t["iops"], t["fitted_iops_pred"], "o", mfc="none", color="#0072b2", label="fitted model")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        thousands = mticker.FuncFormatter(lambda v, _: f"{v / 1000:g}k")
        ax.xaxis.set_major_formatter(thousands)
        ax.yaxis.set_major_formatter(thousands)
        ax.set_xlabel("measured IOPS")
        ax.set_title("the seed's tables" if src == "published" else "this machine")
    axes[0].set_ylabel("predicted IOPS")  # both panels: the right one's label ran into the left's ticks
    axes[0].legend(loc="upper left")
    return fig


def fig_model_error(comp: Comparison, heldout_rows: pd.DataFrame | None = None):
    """Error % of each model per row: seed's model and fitted (in sample, and held out when given:
    per repetition, then on each configuration's median over its repetitions beside the seed's model)."""
    cats = []
    for src in ("published", "local"):
        t = comp.table[comp.table["source"] == src]
        where = "seed" if src == "published" else "local"
        cats.append((f"{where}\nseed's model", t["seed_err_pct"], "#d55e00"))
        cats.append((f"{where}\nfitted", t["fitted_err_pct"], "#0072b2"))
    if heldout_rows is not None and len(heldout_rows):
        device = (heldout_rows["device"] if "device" in heldout_rows.columns
                  else pd.Series("curve", heldout_rows.index))
        curve = heldout_rows[device == "curve"]
        cats.append(("held out\nfitted\nper row", curve["err_iops_pct"], "#56b4e9"))
        per_config = pd.concat([config_errors(g) for _, g in curve.groupby("split", sort=False)])
        cats.append(("held out\nfitted\nmedians", per_config["fitted_err_pct"], "#56b4e9"))
        cats.append(("held out\nseed's\nmedians", per_config["seed_err_pct"], "#d55e00"))
        iostat = heldout_rows[device == "iostat"]
        if len(iostat):
            per_config = pd.concat([config_errors(g) for _, g in iostat.groupby("split", sort=False)])
            cats.append(("held out\niostat device\nmedians", per_config["fitted_err_pct"], "#009e73"))
    fig, ax = figures.figure(width="page", aspect=0.32)
    rng = np.random.default_rng(0)
    for i, (_, vals, color) in enumerate(cats):
        v = pd.to_numeric(vals).to_numpy(float)
        ax.plot(i + rng.uniform(-0.15, 0.15, v.size), v, "o", ms=3, color=color, alpha=0.8)
        if v.size:
            ax.plot([i - 0.25, i + 0.25], [np.median(v)] * 2, color="#222222", lw=1.2)
    ax.axhspan(-3, 3, color="#dddddd", zorder=0)
    ax.axhline(0, color="#555555", lw=0.6)
    ax.set_xticks(range(len(cats)), [c[0] for c in cats])
    ax.set_ylabel("predicted / measured IOPS - 1 (%)")
    ax.set_title("model error (grey: within 3%; bar: median)")
    return fig


def _sens_axes(curves: pd.DataFrame, points: pd.DataFrame, panel: str, *, line_key: str, xlabel: str,
               fmt: str):
    fig, ax = figures.figure(aspect=0.8)
    c = curves[curves["panel"] == panel]
    x_col = "device_latency_us" if panel == "device" else "cpu_per_query_us"
    colors = figures.CYCLE
    for i, (v, g) in enumerate(c.groupby(line_key)):
        for name, ls in (("seed", "--"), ("fitted", "-")):
            gg = g[g["model"] == name].sort_values(x_col)
            # a fitted wait below zero can make the latency vanish at the edge of the grid: not a prediction
            gg = gg[(gg["lat_us"] > 0) & gg["io.eff"].between(0, 1.5)]
            if len(gg):
                ax.plot(gg[x_col], gg["io.eff"], ls, color=colors[i % len(colors)],
                        label=f"{name}, {fmt.format(v)}")
    p = points[points["panel"] == panel]
    markers = {"readrandom": "o", "readrandom2": "s", "readrandom3": "^"}
    for (src, test), g in p.groupby(["source", "test"]):
        ax.plot(g["x"], g["y"], markers.get(test, "o"), ms=4,
                color="#000000" if src == "published" else "#d55e00",
                mfc="none" if src == "published" else None,
                label=f"{'seed' if src == 'published' else 'here'}: {test}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("io.eff")
    top = float(pd.to_numeric(p["y"]).max()) if len(p) else 1.0
    ax.set_ylim(0, max(1.02, top * 1.05))  # a measured io.eff above 1 is shown, not clipped
    ax.legend(fontsize=5.5, ncols=2, loc="lower right")
    return fig, ax


def fig_sensitivity_device(curves: pd.DataFrame, points: pd.DataFrame):
    """io.eff against device latency: model lines per RocksDB CPU, measured points (delay_us), the seed's."""
    fig, ax = _sens_axes(curves, points, "device", line_key="cpu_per_query_us",
                         xlabel="device latency per read (us)", fmt="{:.1f} us CPU")
    ax.set_title("io.eff rises with device latency")
    return fig


def fig_sensitivity_cpu(curves: pd.DataFrame, points: pd.DataFrame):
    """io.eff against RocksDB CPU per query: model lines per device latency, measured tests, the seed's."""
    fig, ax = _sens_axes(curves, points, "cpu", line_key="device_latency_us",
                         xlabel="RocksDB CPU per query, cpu.inc (us)", fmt="device {:.0f} us")
    ax.set_title("io.eff falls with RocksDB CPU")
    return fig


def _wait_for_cpu_lines(gap: pd.DataFrame | None) -> list[str]:
    """What the readers' wait for a CPU (runqPer) explains, per client count, from `model.latency_gap`
    of undelayed rows; nothing when the rows did not measure it."""
    if gap is None or model.RUNQ not in gap.columns:
        return []
    g = gap[(gap["delay_us"] == 0) & (gap[model.RUNQ] > 0)]
    if g.empty:
        return []
    m = g.groupby("threads")[[model.RUNQ, "unexplained_us"]].median()
    parts = [f"{m.loc[t, model.RUNQ]:.1f} us per query at {int(t)} client{'s' if t > 1 else ''}" for t in m.index]
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
            med, worst = value_range(io["config_median_abs_err_pct"], ".1f"), io["config_max_abs_err_pct"].max()
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
