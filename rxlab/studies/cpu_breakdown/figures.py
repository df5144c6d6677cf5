"""The CPU breakdown's figures, each drawn from one tidy table.

Every table has one row per value: `kind` says what it is: `here` (the
repetitions' samples pooled) or `median` (over the repetitions), `rep` (one
repetition: a dot), `seed` (the post's percentage). `backend` (the run's
file system) gives the colour of this machine's bars.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import figures as style
from rxlab.core.study import FigureSpec
from rxlab.studies.cpu_breakdown.params import TESTS
from rxlab.studies.cpu_breakdown.result import CpuResult
from rxlab.studies.cpu_breakdown.rules import CATEGORIES, KERNEL_CATEGORIES
from rxlab.studies.cpu_breakdown.tables import (
    breakdown_long,
    breakdown_table,
    crosscheck,
    kernel_per_query_long,
    per_query_long,
)

# categories and kernel parts, not backends: palettes of their own (tab10), the rest in light grey
CATEGORY_COLORS = dict(zip(CATEGORIES, ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                                        "#e377c2", "#bcbd22", "#d9d9d9"), strict=True))
KERNEL_COLORS = dict(zip(KERNEL_CATEGORIES, ("#d62728", "#1f77b4", "#ff7f0e", "#9467bd", "#8c564b",
                                             "#2ca02c", "#17becf", "#e377c2", "#bcbd22", "#7f7f7f",
                                             "#d9d9d9"), strict=True))
COUNTER_COLOR = "#8c8c8c"


def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


# --------------------------------------------------------------------------- the tables drawn

def breakdown_data(result: CpuResult) -> pd.DataFrame:
    """Percent of the reading threads' samples per test and category: here (pooled), each repetition,
    the seed."""
    wide = breakdown_table(result)
    reps = breakdown_long(result).assign(kind="rep")
    rows = []
    for t in TESTS:
        for c in CATEGORIES:
            for kind in ("here", "seed"):
                rows.append({"test": t, "category": c, "kind": kind, "rep": None,
                             "pct": wide.loc[c, f"{t} {kind}"]})
    out = pd.concat([pd.DataFrame(rows), reps[["test", "category", "kind", "rep", "pct"]]], ignore_index=True)
    return out.assign(backend=result.backend)


def per_query_data(result: CpuResult) -> pd.DataFrame:
    """CPU microseconds per query per test and category: each repetition and their median."""
    reps = per_query_long(result).assign(kind="rep")[["test", "category", "kind", "rep", "us_per_query"]]
    med = reps.groupby(["test", "category"], sort=False)["us_per_query"].median().reset_index()
    return pd.concat([med.assign(kind="median", rep=None), reps], ignore_index=True)[reps.columns]


def crosscheck_data(result: CpuResult) -> pd.DataFrame:
    """Per test and quantity: the sampled microseconds per query and the counter's (PerfContext timer,
    or getrusage for the process CPU), `counter` naming it."""
    c = crosscheck(result)
    sampled = c.assign(source="perf samples", us=c["sampled_us"])
    counted = c.assign(source="counter", us=c["perfcontext_us"].fillna(c["rusage_us"]))
    out = pd.concat([sampled, counted]).sort_index(kind="stable")   # crosscheck's order, sampled first
    return out[["test", "quantity", "source", "us", "counter"]].assign(backend=result.backend) \
        .reset_index(drop=True)


def kernel_data(result: CpuResult) -> pd.DataFrame:
    """libc+k's parts in CPU microseconds per query per test: each repetition and their median, with
    the device reads per query of the same steps (the doorbell and the switch come once per read)."""
    long = kernel_per_query_long(result)
    reps = long.melt(id_vars=["test", "rep", "reads per query"], value_vars=list(KERNEL_CATEGORIES),
                     var_name="part", value_name="us_per_query").assign(kind="rep")
    reps = reps.rename(columns={"reads per query": "reads_per_query"})
    med = reps.groupby(["test", "part"], sort=False)[["us_per_query", "reads_per_query"]].median()
    med = med.reset_index()
    cols = ["test", "part", "kind", "rep", "us_per_query", "reads_per_query"]
    return pd.concat([med.assign(kind="median", rep=None), reps], ignore_index=True)[cols]


# --------------------------------------------------------------------------- drawing

def draw_breakdown(t: pd.DataFrame):
    """Percent of samples per category, one panel per test: here (the backend's colour, dots for the
    repetitions) and the seed (outlined)."""
    tests, cats = _order(t["test"]), _order(t["category"])
    backend = str(t["backend"].iloc[0])
    fig, axes = style.figure("page", aspect=0.36, ncols=len(tests), sharex=True, sharey=True, squeeze=False)
    y = np.arange(len(cats))
    h = 0.38
    for ax, test in zip(axes[0], tests, strict=True):
        sel = t[t["test"] == test]

        def pct(kind, sel=sel):
            return sel[sel["kind"] == kind].set_index("category")["pct"].reindex(cats).to_numpy(float)

        ax.barh(y - h / 2, pct("here"), h, color=style.backend_color(backend), label=f"here ({backend})")
        ax.barh(y + h / 2, pct("seed"), h, color="white", edgecolor=style.BACKEND_COLORS["published"],
                linewidth=0.7, label="seed")
        reps = sel[sel["kind"] == "rep"]
        if reps["rep"].nunique() > 1:
            ax.plot(reps["pct"], [cats.index(c) - h / 2 for c in reps["category"]], "o", ms=1.8,
                    color="#222222", alpha=0.7, label="repetitions")
        ax.set_title(test)
        ax.set_yticks(y, cats)
        ax.invert_yaxis()
        ax.set_xlabel("% of samples")
    axes[0][0].legend(loc="lower right")
    fig.tight_layout()
    return fig


def _stacked(ax, t: pd.DataFrame, part_col: str, colors: dict) -> None:
    """Stacked horizontal bars of the medians, one per test, parts in the table's order; dots for the
    repetitions' totals when there are several."""
    med = t[t["kind"] == "median"]
    tests = _order(med["test"])
    y = np.arange(len(tests))
    left = np.zeros(len(tests))
    for part in _order(med[part_col]):
        v = med[med[part_col] == part].set_index("test")["us_per_query"].reindex(tests).fillna(0)
        v = v.to_numpy(float)
        ax.barh(y, v, left=left, color=colors.get(part, COUNTER_COLOR), label=part)
        left += v
    reps = t[t["kind"] == "rep"]
    if reps["rep"].nunique() > 1:
        totals = reps.groupby(["test", "rep"], sort=False)["us_per_query"].sum().reset_index()
        ax.plot(totals["us_per_query"], [tests.index(x) for x in totals["test"]], "o", ms=2, color="#222222",
                label="repetitions (total)")
    ax.set_yticks(y, tests)
    ax.invert_yaxis()
    ax.legend(ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=6)


def draw_per_query(t: pd.DataFrame):
    """Stacked CPU us per query by category for each test (here only: the seed gives percentages)."""
    fig, ax = style.figure("column", aspect=0.8)
    _stacked(ax, t, "category", CATEGORY_COLORS)
    ax.set_xlabel("CPU us per query (reading threads)")
    fig.tight_layout()
    return fig


def draw_kernel_per_query(t: pd.DataFrame):
    """Stacked CPU us per query of the parts of libc+k, one bar per test, its device reads per query
    at the bar's end."""
    fig, ax = style.figure("column", aspect=0.8)
    _stacked(ax, t, "part", KERNEL_COLORS)
    med = t[t["kind"] == "median"]
    ends = med.groupby("test", sort=False).agg(us=("us_per_query", "sum"), reads=("reads_per_query", "first"))
    for i, (_, r) in enumerate(ends.iterrows()):
        ax.annotate(f"{r['reads']:.2f} reads/query", (r["us"], i), xytext=(3, 0), textcoords="offset points",
                    va="center", fontsize=6, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5})
    ax.set_xlim(right=ends["us"].max() * 1.3 if len(ends) else None)
    ax.set_xlabel("libc+k CPU us per query (reading threads)")
    fig.tight_layout()
    return fig


def draw_crosscheck(t: pd.DataFrame):
    """Sampled CPU per query against the counters (PerfContext timers, getrusage), per test."""
    tests, quantities = _order(t["test"]), _order(t["quantity"])
    backend = str(t["backend"].iloc[0])
    fig, axes = style.figure("page", aspect=0.34, ncols=len(tests), sharey=True, squeeze=False)
    x = np.arange(len(quantities))
    w = 0.38
    for ax, test in zip(axes[0], tests, strict=True):
        sel = t[t["test"] == test]

        def us(source, sel=sel):
            return sel[sel["source"] == source].set_index("quantity")["us"].reindex(quantities).to_numpy(
                float)

        ax.bar(x - w / 2, us("perf samples"), w, color=style.backend_color(backend), label="perf samples")
        ax.bar(x + w / 2, us("counter"), w, color=COUNTER_COLOR, label="PerfContext / getrusage")
        ax.set_xticks(x, quantities, rotation=30, ha="right")
        ax.set_title(test)
    axes[0][0].set_ylabel("us per query")
    fig.tight_layout()
    # above the panels: inside any panel it covers the tall process-CPU bars
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2)
    return fig


FIGURES = {
    "cpu_breakdown": FigureSpec(breakdown_data, draw_breakdown),
    "cpu_per_query": FigureSpec(per_query_data, draw_per_query),
    "cpu_crosscheck": FigureSpec(crosscheck_data, draw_crosscheck),
    "cpu_kernel_per_query": FigureSpec(kernel_data, draw_kernel_per_query),
}
