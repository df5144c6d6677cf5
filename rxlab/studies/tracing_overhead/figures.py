"""The tracing study's figures, each drawn from one tidy table.

tracing_overhead is the comparison: each tracer's throughput over
untraced with its 95% interval over turns (rxlab.core.plots.ratio_plot:
unresolved hollow and dashed, none's A/A interval the grey band), the
report's Figure 5 ratio as a `published` row. tracing_throughput's table is
long, one row per value drawn, `kind` saying what it is: `median` (a bar:
the median over the turns' runs), `rep` (one run: together they give the
min..max line) or `published` (the report's Figure 5 number); its bars are
absolute MB/s, not differences: those are read in tracing_overhead.
Backends appear in the order they are drawn.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator

from rxlab.core import engines
from rxlab.core import figures as style
from rxlab.core.plots import ratio_plot
from rxlab.core.resolution import COMPARISON_COLUMNS
from rxlab.core.study import FigureSpec
from rxlab.studies.tracing_overhead.params import DATA_SYSCALLS, TOLERANCE, TRACERS, WORKLOADS
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.tables import (
    comparison_table,
    measured,
    published_rows,
    syscalls_table,
    throughput_table,
)

THROUGHPUT_COLUMNS = ["test", "backend", "tracer", "kind", "rep", "mb_per_s", "qualifier"]
OVERHEAD_COLUMNS = ["backend", "test", *COMPARISON_COLUMNS, "kind", "label"]
# The ratio axis when it must reach below ratio_plot's 1/4 (strace keeps a fraction; the report's 1/8)
RATIO_TICKS = (0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0)
SYSCALL_COLUMNS = ["backend", "syscall", "strace", "rxlab", "rel_diff", "worst_run_rel_diff", "runs",
                   "judged"]

TRACER_STYLE = {"none": {"hatch": "", "alpha": 1.0},
                "counters": {"hatch": "..", "alpha": 0.85},
                "perf": {"hatch": "//", "alpha": 0.7},
                "strace": {"hatch": "xx", "alpha": 0.45}}


# --------------------------------------------------------------------------- the tables drawn

def throughput_data(result: TracingResult) -> pd.DataFrame:
    """db_bench's MB/s per workload, backend and tracer: medians and every run of the turns (`none` twice a
    turn), and the report's Figure 5 numbers (test 'report', backend 'posix|libaio', the tracer its
    `tracing`)."""
    tp = throughput_table(result)
    f = measured(result.frame)
    rows = []
    for r in tp.itertuples():
        base = {"test": r.test, "backend": r.backend, "tracer": r.tracer, "qualifier": ""}
        rows.append({**base, "kind": "median", "rep": None, "mb_per_s": r.mb_per_s})
        reps = f[(f["test"] == r.test) & (f["backend"] == r.backend) & (f["tracer"] == r.tracer)]
        rows += [{**base, "kind": "rep", "rep": int(rep), "mb_per_s": float(v)}
                 for rep, v in zip(reps["rep"], pd.to_numeric(reps["mb_per_s"]), strict=True)]
    for p in published_rows().itertuples():
        rows.append({"test": "report", "backend": p.engine, "tracer": p.tracing, "kind": "published",
                     "rep": None, "mb_per_s": float(p.value),
                     "qualifier": p.qualifier if isinstance(p.qualifier, str) else ""})
    return pd.DataFrame(rows, columns=THROUGHPUT_COLUMNS)


def overhead_data(result: TracingResult) -> pd.DataFrame:
    """Each tracer's throughput over untraced per backend and workload, with its 95% interval over turns
    and none's A/A rows (`comparison` rows: comparison_table); the report's strace ratio for posix and
    libaio (Figure 5) as a `published` row with its label."""
    c = comparison_table(result).assign(kind="comparison", label="")
    rows = []
    pub = published_rows().set_index("tracing")
    if {"none", "strace"} <= set(pub.index):
        none, strace = pub.loc["none"], pub.loc["strace"]
        r = float(strace["value"]) / float(none["value"])
        rows.append({"backend": strace["engine"], "test": "report", "config": "strace", "ratio": r, "lo": r,
                     "hi": r, "kind": "published",
                     # two short lines: it is drawn inside one backend's panel (the panel names the engine)
                     "label": f"report, strace:\n~{strace['value']:g} of >{none['value']:g} MB/s"})
    return pd.concat([c, pd.DataFrame(rows)], ignore_index=True).reindex(columns=OVERHEAD_COLUMNS)


def syscalls_data(result: TracingResult) -> pd.DataFrame:
    """The data path's syscalls per backend (summed over the strace runs), as counted by strace and by
    rxlab, with the relative differences; the dynamic loader's few preads (under 100 calls) are left
    out where rxlab issued none."""
    s = syscalls_table(result)
    if s.empty:
        return pd.DataFrame(columns=SYSCALL_COLUMNS)
    shown = s["syscall"].isin(DATA_SYSCALLS) & ((s["strace"] >= 100) | (s["rxlab"] > 0))
    return s.loc[shown, SYSCALL_COLUMNS].reset_index(drop=True)


# --------------------------------------------------------------------------- drawing

def _order(values) -> list:
    return list(dict.fromkeys(values))


def _tracers(values) -> list:
    return [t for t in TRACERS if t in set(values)]


def _tracer_handles(tracers):
    return [Patch(facecolor="#bbbbbb", edgecolor="#333333", hatch=TRACER_STYLE[t]["hatch"],
                  alpha=TRACER_STYLE[t]["alpha"], label=t) for t in tracers]


def _slot(i: int, j: int, n: int) -> float:
    """x of tracer j's bar (of n) in backend i's group."""
    width = 0.8 / max(n, 1)
    return i - 0.4 + width * (j + 0.5)


def _cells(sel: pd.DataFrame, backends: list, tracers: list, col: str):
    """Each backend and tracer with a median of `col` in `sel`: (x, backend, tracer, the median, the
    repetitions' values)."""
    for j, tr in enumerate(tracers):
        for i, b in enumerate(backends):
            g = sel[(sel["backend"] == b) & (sel["tracer"] == tr)]
            med = g[g["kind"] == "median"][col]
            if not med.empty:
                yield _slot(i, j, len(tracers)), b, tr, float(med.iloc[0]), g[g["kind"] == "rep"][col]


def _spread(ax, x: float, reps: pd.Series) -> None:
    """The repetitions' min..max as a vertical line (where there are two or more)."""
    if len(reps) > 1:
        ax.plot([x, x], [reps.min(), reps.max()], color="#222222", lw=0.7)


def draw_throughput(t: pd.DataFrame):
    """db_bench's MB/s per backend and tracer, one panel per workload; the report's Figure 5 numbers beside.

    Bars: medians; lines: min..max over the repetitions. The report does not
    say which workload its Figure 5 ran, so its numbers get a panel of their
    own (posix and libaio together, as its text gives them).
    """
    here = t[t["kind"] != "published"]
    pub = t[t["kind"] == "published"].reset_index(drop=True)
    tests = [w for w in WORKLOADS if w in set(here["test"])]
    backends, tracers = _order(here["backend"]), _tracers(here["tracer"])
    ratios = [1.0] * len(tests) + ([0.45] if len(pub) else [])
    fig, axes = style.figure(width="page", aspect=0.34, ncols=len(ratios), squeeze=False,
                             gridspec_kw={"width_ratios": ratios})
    width = 0.8 / max(len(tracers), 1)
    for ax, test in zip(axes[0], tests, strict=False):
        for x, b, tr, med, reps in _cells(here[here["test"] == test], backends, tracers, "mb_per_s"):
            st = TRACER_STYLE[tr]
            ax.bar(x, med, width * 0.92, color=style.backend_color(b), alpha=st["alpha"], hatch=st["hatch"],
                   edgecolor="#333333", lw=0.4)
            _spread(ax, x, reps)
        ax.set_xticks(range(len(backends)), backends)
        ax.set_title(f"{test}, here")
    axes[0][0].set_ylabel("db_bench MB/s")
    fig.legend(handles=_tracer_handles(tracers), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncols=len(tracers), fontsize=6)
    if len(pub):
        ax = axes[0][-1]
        for i, p in enumerate(pub.itertuples()):
            st = TRACER_STYLE.get(str(p.tracer), TRACER_STYLE["none"])
            ax.bar(i, p.mb_per_s, 0.7, color=style.BACKEND_COLORS["published"], alpha=st["alpha"] * 0.8,
                   hatch=st["hatch"], edgecolor="#333333", lw=0.4)
            q = p.qualifier if isinstance(p.qualifier, str) else ""
            ax.annotate(f"{q} {p.mb_per_s:g}".strip(), (i, p.mb_per_s), xytext=(0, 2),
                        textcoords="offset points", ha="center", fontsize=6)
        ax.set_xticks(range(len(pub)), [str(x) for x in pub["tracer"]])
        ax.set_title(f"the report, {pub['backend'].iloc[0]}\n(workload not stated)", fontsize=7)
    return fig


def draw_overhead(t: pd.DataFrame):
    """Throughput under each tracer over untraced (log scale), a panel per backend, per workload.

    Markers: the ratio with its 95% interval over turns, filled where resolved
    to the target, hollow and dashed where not; grey band: none's A/A
    interval (rxlab.core.plots.ratio_plot). The report's Figure 5 ratio for
    posix and libaio (around 10 MB/s under strace against more than 80
    untraced: less than 1/8 kept) is the dotted line in their panels.
    """
    here = t[t["kind"] != "published"]
    pub = t[t["kind"] == "published"]
    fig = ratio_plot(here, "test", hue="config", panel="backend", width="page",
                     ylabel="throughput / untraced (95% interval)")
    for ax, backend in zip(fig.axes, _order(here["backend"]), strict=False):
        lines = pub[[engines.engine(backend) in str(p).split("|") for p in pub["backend"]]]
        _reach(ax, pd.concat([here.loc[here["backend"] == backend, ["ratio", "lo", "hi"]].stack(),
                              lines["ratio"]]))
        for p in lines.itertuples():
            ax.axhline(p.ratio, color=style.BACKEND_COLORS["published"], ls=":", lw=0.8)
            # wrapped to the panel's width (a table saved before the label had two lines has one long one)
            text = "\n".join(textwrap.fill(line, 28) for line in str(p.label).split("\n"))
            ax.annotate(text, (1.0, p.ratio), xycoords=("axes fraction", "data"), xytext=(-2, 1),
                        textcoords="offset points", ha="right", va="bottom", fontsize=5.5)
    return fig


def _reach(ax, values: pd.Series) -> None:
    """Lower the y axis below ratio_plot's 1/4 where a ratio, an interval or the report's line is below
    it: strace's cost is the study's largest effect and stays on the axis."""
    v = pd.to_numeric(values, errors="coerce")
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = ax.get_ylim()
    if v.empty or v.min() >= lo:
        return
    lo = max(float(v.min()) / 1.25, RATIO_TICKS[0])
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_locator(FixedLocator([x for x in RATIO_TICKS if lo <= x <= hi]))


def draw_syscalls(t: pd.DataFrame):
    """Left: calls per data-path syscall, strace and rxlab, per backend (log scale, so that a few hundred
    calls show beside 10^5). Right: rxlab / strace - 1 (%) of the syscalls rxlab issued."""
    fig, (a1, a2) = style.figure(width="page", aspect=0.4, ncols=2)
    fig.subplots_adjust(wspace=0.35)
    if t.empty:
        for ax in (a1, a2):
            ax.text(0.5, 0.5, "no strace runs in this study", ha="center", va="center",
                    transform=ax.transAxes)
        return fig
    x = np.arange(len(t))
    colors = [style.backend_color(b) for b in t["backend"]]
    labels = [f"{r.backend} {r.syscall}" for r in t.itertuples()]
    a1.bar(x - 0.2, t["strace"], 0.4, color=colors, alpha=0.45, hatch="xx", edgecolor="#333333", lw=0.4)
    a1.bar(x + 0.2, pd.to_numeric(t["rxlab"]).fillna(0), 0.4, color=colors, edgecolor="#333333", lw=0.4)
    a1.set_yscale("log")
    top = float(np.nanmax(pd.to_numeric(t[["strace", "rxlab"]].stack(), errors="coerce")))
    a1.set_ylim(bottom=1, top=max(top, 10) * 30)   # room above the bars for the legend
    a1.set_xticks(x, labels, rotation=45, ha="right", fontsize=5.5)
    a1.set_ylabel("calls (all repetitions)")
    a1.legend(handles=[Patch(facecolor="#bbbbbb", alpha=0.45, hatch="xx", edgecolor="#333333",
                             label="strace -c -f"),
                       Patch(facecolor="#bbbbbb", edgecolor="#333333", label="rxlab counters")],
              fontsize=6, loc="upper left", ncols=2)
    a1.set_title("data-path syscalls (default: strace only)")
    judged = t["judged"].astype(str).str.lower() == "true"   # bools, or their text in a saved table
    j = t[judged]
    xj = np.arange(len(j))
    a2.axhspan(-100 * TOLERANCE, 100 * TOLERANCE, color="#dddddd", lw=0, label=f"within {TOLERANCE:.0%}")
    a2.axhline(0, color="#555555", lw=0.6)
    a2.plot(xj, 100 * j["rel_diff"].astype(float), "o", color="#222222", label="all repetitions")
    a2.plot(xj, 100 * j["worst_run_rel_diff"].astype(float), "x", color="#d55e00", label="worst run")
    a2.set_xticks(xj, [f"{r.backend} {r.syscall}" for r in j.itertuples()], rotation=45, ha="right",
                  fontsize=5.5)
    worst = float(np.nanmax(np.abs(100 * j["worst_run_rel_diff"].astype(float)))) if len(j) else 0.0
    lim = max(2 * 100 * TOLERANCE, 1.3 * worst)
    a2.set_ylim(-lim, lim)
    a2.set_ylabel("rxlab / strace - 1 (%)")
    a2.set_title("agreement of the syscalls rxlab issued")
    a2.legend(fontsize=6, loc="lower right")
    return fig


FIGURES = {
    "tracing_throughput": FigureSpec(throughput_data, draw_throughput),
    "tracing_overhead": FigureSpec(overhead_data, draw_overhead),
    "tracing_syscalls": FigureSpec(syscalls_data, draw_syscalls),
}
