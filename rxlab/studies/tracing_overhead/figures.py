"""The tracing study's figures, each drawn from one tidy table.

Every table is long: one row per value drawn, `kind` saying what it is:
`median` (a bar or a marker: the median over repetitions), `rep` (one
repetition: together they give the min..max line) or `published` (the
report's Figure 5 number). Backends appear in the order they are drawn.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from rxlab.core import figures as style
from rxlab.core.study import FigureSpec
from rxlab.studies.tracing_overhead.params import DATA_SYSCALLS, TOLERANCE, TRACERS, WORKLOADS
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.tables import (
    measured,
    overhead_ratios,
    overhead_table,
    published_rows,
    syscalls_table,
    throughput_table,
)

THROUGHPUT_COLUMNS = ["test", "backend", "tracer", "kind", "rep", "mb_per_s", "qualifier"]
OVERHEAD_COLUMNS = ["test", "backend", "tracer", "kind", "rep", "rel", "label"]
SYSCALL_COLUMNS = ["backend", "syscall", "strace", "rxlab", "rel_diff", "worst_run_rel_diff", "runs",
                   "judged"]

TRACER_STYLE = {"none": {"hatch": "", "alpha": 1.0, "marker": "o"},
                "counters": {"hatch": "..", "alpha": 0.85, "marker": "o"},
                "perf": {"hatch": "//", "alpha": 0.7, "marker": "s"},
                "strace": {"hatch": "xx", "alpha": 0.45, "marker": "X"}}


# --------------------------------------------------------------------------- the tables drawn

def throughput_data(result: TracingResult) -> pd.DataFrame:
    """db_bench's MB/s per workload, backend and tracer: medians, repetitions, and the report's Figure 5
    numbers (test 'report', backend 'posix|libaio', the tracer its `tracing`)."""
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
    """Throughput over untraced per workload, backend and tracer: medians and repetitions; the report's
    strace ratio for posix and libaio (Figure 5) as a `published` row with its label."""
    ot = overhead_table(result)
    reps = overhead_ratios(result)
    rows = []
    for r in ot.itertuples():
        base = {"test": r.test, "backend": r.backend, "tracer": r.tracer, "label": ""}
        rows.append({**base, "kind": "median", "rep": None, "rel": r.rel})
        g = reps[(reps["test"] == r.test) & (reps["backend"] == r.backend) & (reps["tracer"] == r.tracer)]
        rows += [{**base, "kind": "rep", "rep": int(x.rep), "rel": x.rel} for x in g.itertuples()]
    pub = published_rows().set_index("tracing")
    if {"none", "strace"} <= set(pub.index):
        none, strace = pub.loc["none"], pub.loc["strace"]
        rows.append({"test": "report", "backend": strace["engine"], "tracer": "strace", "kind": "published",
                     "rep": None, "rel": float(strace["value"]) / float(none["value"]),
                     "label": f"report, {strace['engine']}, strace: ~{strace['value']:g} of "
                              f">{none['value']:g} MB/s"})
    return pd.DataFrame(rows, columns=OVERHEAD_COLUMNS)


def syscalls_data(result: TracingResult) -> pd.DataFrame:
    """The data path's syscalls per backend (summed over the strace runs), as counted by strace and by
    rxlab, with the relative differences; the dynamic loader's few preads on libaio and io_uring (under
    100 calls, none issued by rxlab) are left out."""
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


def _tracer_handles(tracers, kind: str = "bar"):
    if kind == "bar":
        return [Patch(facecolor="#bbbbbb", edgecolor="#333333", hatch=TRACER_STYLE[t]["hatch"],
                      alpha=TRACER_STYLE[t]["alpha"], label=t) for t in tracers]
    return [Line2D([], [], ls="", marker=TRACER_STYLE[t]["marker"], color="#555555", label=t)
            for t in tracers]


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
    """Throughput under each tracer relative to untraced (log scale), per workload and backend.

    Markers: medians over the repetitions (lines: min..max). The report's
    Figure 5 ratio for posix and libaio (around 10 MB/s under strace against
    more than 80 untraced: less than 1/8 kept) is the dotted line.
    """
    here = t[t["kind"] != "published"]
    pub = t[t["kind"] == "published"]
    tests = [w for w in WORKLOADS if w in set(here["test"])]
    backends, tracers = _order(here["backend"]), _tracers(here["tracer"])
    fig, axes = style.figure(width="page", aspect=0.34, ncols=max(len(tests), 1), squeeze=False, sharey=True)
    for ax, test in zip(axes[0], tests, strict=False):
        for x, b, tr, med, reps in _cells(here[here["test"] == test], backends, tracers, "rel"):
            _spread(ax, x, reps)
            ax.plot(x, med, TRACER_STYLE[tr]["marker"], color=style.backend_color(b), ms=5, mec="#222222",
                    mew=0.4)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(FixedLocator([0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.axhline(1.0, color="#555555", lw=0.6)
        for p in pub.itertuples():
            ax.axhline(p.rel, color=style.BACKEND_COLORS["published"], ls=":", lw=0.8)
            ax.annotate(p.label, (len(backends) - 0.5, p.rel), xytext=(-2, -2), textcoords="offset points",
                        ha="right", va="top", fontsize=5.5)
        ax.set_xticks(range(len(backends)), backends)
        ax.set_xlim(-0.5, len(backends) - 0.5)
        ax.set_title(test)
    axes[0][0].set_ylabel("throughput / untraced")
    if tracers:
        # beside the axes: clear of the report's line
        axes[0][-1].legend(handles=_tracer_handles(tracers, "marker"), loc="upper left",
                           bbox_to_anchor=(1.0, 1.0), fontsize=6)
    return fig


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
