"""The async IO study's figures, each drawn from one tidy table alone.

Every comparison a figure shows was measured in turns (rxlab.core.turns_plan)
and is drawn as resolved or not: a ratio with its 95% interval (filled and
solid when resolved to the target, hollow and dashed when not, the A/A
control's interval as the grey band: rxlab.core.plots.ratio_plot), or in an
absolute figure a hollow marker where the backend's ratio to the base at
that step is not resolved, the base's A/A interval as a grey band around it.

asyncio_ratio: every read step's MB/s per backend over the delay's base
(posix by default), one panel per delay. asyncio_multiget: micros/op per
key against keys per op, MultiGet and the Get loop per backend, one panel
per device latency, the page's three MultiGet rows at batch 8.
asyncio_scan: the speedup from async prefetch (scan MB/s with over
without, paired by turn) per backend, the counters' overlap verdict under
each, the page's 2.05x as a dotted line. asyncio_latency: p50, p95, p99 of
one MultiGet at the page's batch size, the page's beside.

The absolute tables have a `kind` column: `median` (a line, a marker: the
median over the turns' runs), `rep` (one run: a dot) or `published` (the
page's number, black).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from rxlab.core import figures as style
from rxlab.core.plots import AA_COLOR, ratio_plot
from rxlab.core.resolution import AA
from rxlab.core.study import FigureSpec
from rxlab.studies.async_io.params import ASYNC_SCAN, GET_LOOP, MULTIGET, SEED_BATCH, step_name
from rxlab.studies.async_io.result import AsyncIOResult
from rxlab.studies.async_io.tables import (
    PCT,
    by_backend_order,
    comparison_table,
    effect_table,
    latency_table,
    multiget_table,
    published_scans,
    scan_table,
)

__all__ = ["FIGURES", "draw_latency", "draw_multiget", "draw_ratio", "draw_scan", "latency_data",
           "multiget_data", "ratio_data", "scan_data"]

# base: the backend the comparisons are relative to; resolved: this backend's ratio to it at the step (empty
# for the base and the page); band_lo, band_hi: the base's A/A interval around its median (its rows only).
MARKS = ["base", "resolved", "band_lo", "band_hi"]
MULTIGET_COLUMNS = ["kind", "backend", "delay_us", "api", "batch_size", "threads", "rep", "micros_per_key",
                    *MARKS]
LATENCY_COLUMNS = ["kind", "backend", "delay_us", "api", "batch_size", "threads", *PCT, "overlap", "base",
                   "resolved", "aa_half_width"]
PAGE_MARKERS = {"MultiGet single-file": "o", "MultiGet single-level": "s", "MultiGet multi-level": "^"}
SPEEDUP = "speedup (async_io on / off)"


def _delay_label(d) -> str:
    return "no added latency" if not d else f"delay_us={int(d)}"


def _resolved(v) -> bool:
    """A `resolved` cell as read back from a CSV too (True, 'True'; empty is not)."""
    return v is True or str(v) == "True"


# --------------------------------------------------------------------------- the tables drawn

def _marks(result: AsyncIOResult) -> tuple[dict, dict]:
    """From the comparison table: {(delay_us, step, backend): resolved} of each contender and
    {(delay_us, step): (base, lo, hi, half_width)} of each A/A control."""
    c = comparison_table(result)
    resolved, aa = {}, {}
    for r in c.itertuples():
        key = (int(r.delay_us), r.step)
        if r.config == AA:
            aa[key] = (r.base, r.lo, r.hi, r.half_width)
        else:
            resolved[(*key, r.config)] = bool(r.resolved)
    return resolved, aa


def ratio_data(result: AsyncIOResult) -> pd.DataFrame:
    """The comparison table (every read step's MB/s per backend over the delay's base, 95% interval over
    turns, the base's A/A rows) with its panel's name (the delay)."""
    c = comparison_table(result)
    return c.assign(panel=c["delay_us"].map(_delay_label))


def multiget_data(result: AsyncIOResult) -> pd.DataFrame:
    """MultiGet and the Get loop per backend, delay and batch size (medians over the turns' runs, MultiGet's
    runs as dots), each contender's median marked resolved or not against the base, the base's A/A interval
    as a band around its median; the page's MultiGet rows."""
    t = multiget_table(result)
    loc = t[(t["source"] == "local") & t["api"].isin(["MultiGet", "Get loop"])]
    resolved, aa = _marks(result)
    rows = []
    for r in loc.itertuples():
        step = step_name(GET_LOOP, 1) if r.api == "Get loop" else step_name(MULTIGET, r.batch_size)
        key = (int(r.delay_us), step)
        base, lo, hi, _ = aa.get(key, (None, np.nan, np.nan, np.nan))
        mine = r.backend == base
        # micros per key is the inverse of MB/s: the A/A interval of MB/s [lo, hi] spans median/hi..median/lo
        rows.append({"kind": "median", "backend": r.backend, "delay_us": r.delay_us, "api": r.api,
                     "batch_size": r.batch_size, "threads": r.threads, "rep": np.nan,
                     "micros_per_key": r.micros_per_key, "base": base,
                     "resolved": None if mine else resolved.get((*key, r.backend), False),
                     "band_lo": r.micros_per_key / hi if mine else np.nan,
                     "band_hi": r.micros_per_key / lo if mine else np.nan})
    med = pd.DataFrame(rows, columns=MULTIGET_COLUMNS)
    f = result.frame
    mg = f[f["test"] == MULTIGET]
    reps = pd.DataFrame({"kind": "rep", "backend": mg["backend"], "delay_us": mg["delay_us"],
                         "api": "MultiGet", "batch_size": pd.to_numeric(mg["batch_size"]).astype(int),
                         "threads": result.threads,
                         "rep": mg["rep"], "micros_per_key": pd.to_numeric(mg["micros_per_op"])})
    pub = t[t["source"] == "published"].assign(kind="published", rep=np.nan)
    local = by_backend_order(pd.concat([med, reps], ignore_index=True), result.backends)
    return pd.concat([local, pub], ignore_index=True).reindex(columns=MULTIGET_COLUMNS)


def scan_data(result: AsyncIOResult) -> pd.DataFrame:
    """The speedup from async prefetch per backend and delay (scan MB/s with async_io over without, paired by
    turn: effect_table), the counters' overlap verdict in each tick, the base's scan A/A interval behind
    every backend of its delay; the page's speedup and threads in every row (drawn as a line)."""
    e = effect_table(result)
    e = e[e["effect"] == ASYNC_SCAN]
    sc = scan_table(result)
    verdict = (sc[(sc["source"] == "local") & sc["async_io"].astype(bool)]
               .set_index(["backend", "delay_us"])["overlap"])
    pub = published_scans()
    page = pub.loc[pub["async_io"], "speedup"].iloc[0]
    rows = []
    for d, g in e.groupby("delay_us", sort=False):
        aa = g[g["config"] == AA]
        for r in g[g["config"] != AA].itertuples():
            tick = f"{r.backend.replace('?', chr(10))}\noverlap: {verdict.get((r.backend, r.delay_us), '?')}"
            here = {"delay_us": d, "panel": _delay_label(d), "tick": tick}
            rows.append({**here, "backend": r.backend, "config": SPEEDUP, "ratio": r.ratio, "lo": r.lo,
                         "hi": r.hi, "half_width": r.half_width, "resolved": r.resolved, "turns": r.turns,
                         "status": r.status})
            for a in aa.itertuples():   # what equal looks like for a scan here, beside every backend's
                rows.append({**here, "backend": a.backend, "config": AA, "ratio": a.ratio, "lo": a.lo,
                             "hi": a.hi, "half_width": a.half_width, "resolved": a.resolved, "turns": a.turns,
                             "status": a.status})
    out = pd.DataFrame(rows, columns=["delay_us", "panel", "tick", "backend", "config", "ratio", "lo", "hi",
                                      "half_width", "resolved", "turns", "status"])
    return out.assign(page_speedup=page, page_threads=int(pub["threads"].iloc[0]))


def latency_data(result: AsyncIOResult, batch_size: int = SEED_BATCH) -> pd.DataFrame:
    """p50, p95, p99 of one MultiGet of the page's batch size per backend and delay (medians over the turns'
    runs; the async_io variant left out: without coroutines it is the same path), each contender marked
    resolved or not by its MB/s ratio to the base at that step (one thread: the inverse of the mean
    latency), the base with its A/A half-width; the page's three rows."""
    t = latency_table(result, batch_size)
    t = t[t["api"] != "MultiGet async_io"].assign(batch_size=batch_size)
    loc = by_backend_order(t[t["source"] == "local"], result.backends).assign(kind="median")
    resolved, aa = _marks(result)
    step = step_name(MULTIGET, batch_size)
    base = [aa.get((int(d), step), (None,) * 4) for d in loc["delay_us"]]
    loc = loc.assign(base=[b[0] for b in base],
                     resolved=[None if b[0] == r.backend else resolved.get((int(r.delay_us), step, r.backend),
                                                                           False)
                               for b, r in zip(base, loc.itertuples(), strict=True)],
                     aa_half_width=[b[3] if b[0] == r.backend else np.nan
                                    for b, r in zip(base, loc.itertuples(), strict=True)])
    pub = t[t["source"] == "published"].assign(kind="published")
    return pd.concat([loc, pub], ignore_index=True).reindex(columns=LATENCY_COLUMNS)


# --------------------------------------------------------------------------- drawing

def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _tick(backend: str, delay_us) -> str:
    """A short two- or three-line tick label: the backend (query on its own line) and the delay."""
    return f"{backend.replace('?', chr(10))}\nd={int(delay_us)}"


def _unresolved_handles(base: str) -> list:
    return [Line2D([], [], marker="o", ls="", color="#555555", mfc="white", ms=4,
                   label=f"hollow: ratio to {base} not resolved"),
            Patch(facecolor=AA_COLOR, alpha=0.5, label=f"{base} A/A (95%)")]



def draw_ratio(t: pd.DataFrame):
    """Every read step's MB/s per backend over the delay's base (95% interval over turns; hollow and dashed:
    not resolved to the target), the base's A/A interval as the grey band, one panel per delay (the axis
    grows to every ratio: MultiGet at a delay gains up to 15x)."""
    base = ", ".join(dict.fromkeys(t["base"].astype(str))) or "the base"
    fig = ratio_plot(t, "step", panel="panel", ylabel=f"MB/s ratio to {base}", width="page")
    for ax in fig.axes:
        for label in ax.get_xticklabels():
            label.set_rotation(60)
            label.set_horizontalalignment("right")
            label.set_fontsize(5.5)
    return fig


def draw_multiget(t: pd.DataFrame):
    """Micros per key against batch size: MultiGet (solid, circles; dots: its runs) and the Get loop (dashed,
    squares) per backend, one panel per device latency; a contender's marker hollow where its ratio to the
    base is not resolved, the base's A/A interval grey around its lines; the page's three rows (black)."""
    loc, pub = t[t["kind"] != "published"], t[t["kind"] == "published"]
    delays = _order(loc["delay_us"])
    fig, axes = style.figure(width="page", aspect=0.36, ncols=max(len(delays), 1), sharey=True, squeeze=False)
    for ax, d in zip(axes[0], delays, strict=False):
        here = loc[loc["delay_us"] == d]
        for b in _order(loc["backend"]):
            color = style.backend_color(b)
            for api, ls, marker in (("MultiGet", "-", "o"), ("Get loop", "--", "s")):
                g = here[(here["backend"] == b) & (here["api"] == api) & (here["kind"] == "median")]
                if g.empty:
                    continue
                g = g.sort_values("batch_size")
                ax.plot(g["batch_size"], g["micros_per_key"], ls, color=color, lw=0.9, label=f"{b}, {api}")
                for r in g.itertuples():
                    # the base: no ratio, always filled
                    filled = pd.isna(r.resolved) or _resolved(r.resolved)
                    ax.plot([r.batch_size], [r.micros_per_key], marker, ms=3, color=color,
                            mfc=color if filled else "white", mew=0.8, zorder=4)
                if g["band_lo"].notna().any():
                    ax.fill_between(g["batch_size"], g["band_lo"], g["band_hi"], color=AA_COLOR, alpha=0.5,
                                    lw=0, zorder=1)
            reps = here[(here["backend"] == b) & (here["kind"] == "rep")]
            if len(reps) and reps.groupby("batch_size").size().max() > 1:   # one run is the line already
                ax.plot(reps["batch_size"], reps["micros_per_key"], "o", ms=1.5, color=color, alpha=0.5)
        for r in pub.itertuples():
            threads = int(r.threads)
            ax.plot([r.batch_size], [r.micros_per_key], PAGE_MARKERS.get(r.api, "o"), color="#000000",
                    mfc="none", label=f"page: {r.api.removeprefix('MultiGet ')} ({threads} threads)")
        ax.set_xscale("log", base=2)
        sizes = sorted(int(b) for b in here["batch_size"].unique())
        ax.set_xticks(sizes, [str(b) for b in sizes])
        ax.minorticks_off()  # no minor ticks between batch sizes of 2^k
        ax.set_yscale("log")
        ax.set_xlabel("keys per op (batch_size)")
        ax.set_title(_delay_label(d))
    axes[0][0].set_ylabel("micros/op per key (db_bench)")
    h, lab = axes[0][0].get_legend_handles_labels()
    bases = loc["base"].dropna()
    extra = _unresolved_handles(str(bases.iloc[0])) if len(bases) else []
    fig.legend(h + extra, lab + [x.get_label() for x in extra], loc="lower center", bbox_to_anchor=(0.5, 1.0),
               ncols=4, fontsize=5.5)
    return fig


def draw_scan(t: pd.DataFrame):
    """The speedup from async prefetch per backend (scan MB/s with async_io over without, 95% interval over
    turns; hollow and dashed: not resolved), the counters' overlap verdict under each backend, the base's
    scan A/A interval as the grey band, one panel per delay; the page's speedup as a dotted line."""
    fig = ratio_plot(t, "tick", panel="panel", ylabel="scan speedup from async_io (x)", width="page")
    page, threads = float(t["page_speedup"].iloc[0]), int(t["page_threads"].iloc[0])
    for ax in fig.axes:
        lo, hi = ax.get_ylim()
        ax.set_ylim(min(lo, page / 1.1), max(hi, page * 1.1))
        ax.axhline(page, color="#000000", lw=0.8, ls=":", zorder=2)
        ax.annotate(f"page {page:.2f}x ({threads} threads, remote flash)", (1.0, page),
                    xycoords=("axes fraction", "data"), xytext=(-2, 2), textcoords="offset points",
                    ha="right", va="bottom", fontsize=5.5)
        for label in ax.get_xticklabels():
            label.set_fontsize(5.5)
    return fig


def draw_latency(t: pd.DataFrame):
    """p50/p95/p99 of one MultiGet per backend and delay, the page's three rows (black); a contender hollow
    and dashed where its ratio to the base at this step is not resolved, the base's A/A half-width under
    its name."""
    batch = int(t["batch_size"].iloc[0])
    loc, pub = t[t["kind"] == "median"], t[t["kind"] == "published"]
    rows = []
    for r in loc.itertuples():
        tick = _tick(r.backend, r.delay_us)
        if np.isfinite(r.aa_half_width):
            tick += f"\nA/A +-{r.aa_half_width:.1f}%"
        rows.append((tick, style.backend_color(r.backend), pd.isna(r.resolved) or _resolved(r.resolved), r))
    rows += [(f"page\n{r.api.removeprefix('MultiGet ')}", "#000000", True, r) for r in pub.itertuples()]
    fig, ax = style.figure(width="page", aspect=0.3)
    for i, (_, color, ok, r) in enumerate(rows):
        ax.plot([i, i], [r.p50_us, r.p99_us], color=color, lw=1.2, ls="-" if ok else "--")
        for v, m in ((r.p50_us, "o"), (r.p95_us, "s"), (r.p99_us, "^")):
            ax.plot([i], [v], m, color=color, mfc=color if m == "o" and ok else "white", ms=4)
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel(f"one MultiGet of {batch} keys (us)")
    threads = f"{int(pub['threads'].iloc[0])} threads, " if len(pub) else ""
    bases = loc["base"].dropna()
    base = str(bases.iloc[0]) if len(bases) else "the base"
    ax.set_title(f"p50 (filled), p95 (square), p99 (triangle); the page: {threads}remote flash. Hollow p50, "
                 f"dashed: MB/s ratio to {base} not resolved", fontsize=6)
    return fig


FIGURES = {
    "asyncio_multiget": FigureSpec(multiget_data, draw_multiget),
    "asyncio_scan": FigureSpec(scan_data, draw_scan),
    "asyncio_latency": FigureSpec(latency_data, draw_latency),
    "asyncio_ratio": FigureSpec(ratio_data, draw_ratio),
}
