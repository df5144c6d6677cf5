"""The backends study's figures (the lab report's Figures 3, 4, 6 and 10 to 13), each drawn from one table.

Every figure's table is long and tidy: one row per value drawn, with `kind`
saying what it is: `median` (a bar or a curve: the median over repetitions),
`rep` (one repetition: a dot) or `published` (the report's number: a
diamond, with `value_max` when the report gives a range). Backends appear in
the table in the order they are drawn.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import figures as style
from rxlab.core import params as checks
from rxlab.core.plots import ratio_plot
from rxlab.core.study import FigureSpec
from rxlab.studies.backends.params import CLUSTER_TESTS, LOCAL_TESTS, PCT_NAMES, ZIPPY_TEST
from rxlab.studies.backends.result import BackendsResult
from rxlab.studies.backends.tables import comparison_table, latency_table, throughput_table, zippydb_table

BAR_COLUMNS = ["case", "test", "backend", "kind", "rep", "value", "value_max"]
CURVE_COLUMNS = ["case", "test", "backend", "percentile", "kind", "us", "us_max"]


# --------------------------------------------------------------------------- the tables drawn

def _bar(base: dict, median: float, reps: pd.DataFrame, col: str, *, published: float,
         published_max: float = np.nan) -> list[dict]:
    """One bar's rows: its median, a dot per repetition (`col` of the `reps` rows that measured it: a
    whole run has no MB/s where the slices give it, a slice no latency), and the report's number where it
    gives one."""
    base = {**base, "value_max": np.nan}
    rows = [{**base, "kind": "median", "rep": None, "value": median}]
    rows += [{**base, "kind": "rep", "rep": int(rep), "value": float(v)}
             for rep, v in zip(reps["rep"], pd.to_numeric(reps[col]), strict=True) if np.isfinite(v)]
    if np.isfinite(published):
        rows.append({**base, "kind": "published", "rep": None, "value": published,
                     "value_max": published_max})
    return rows


def _bar_rows(result: BackendsResult, cases, tests, engines_only: bool = False) -> pd.DataFrame:
    """MB/s per case, test and backend: medians, repetitions and the report's numbers."""
    rows = []
    for case in cases:
        t = throughput_table(result, case, tests)
        f = result.frame[result.frame["case"] == case]
        for _, r in t.iterrows():
            b, test = r["backend"], r["test"]
            if engines_only and checks.is_default(b):
                continue
            rows += _bar({"case": case, "test": test, "backend": b}, r["MB/s"],
                         f[(f["backend"] == b) & (f["test"] == test)], "mbps",
                         published=r["published MB/s"], published_max=r["published max"])
    return pd.DataFrame(rows, columns=BAR_COLUMNS)


def throughput_data(result: BackendsResult) -> pd.DataFrame:
    return _bar_rows(result, ["local"], LOCAL_TESTS)


def emulated_throughput_data(result: BackendsResult) -> pd.DataFrame:
    return _bar_rows(result, result.cases, CLUSTER_TESTS, engines_only=True)


def zippydb_data(result: BackendsResult) -> pd.DataFrame:
    """mixgraph per backend: MB/s and mean Get latency (the `test` column names the metric)."""
    z = zippydb_table(result).set_index("backend")
    f = result.frame[(result.frame["case"] == "local") & (result.frame["test"] == ZIPPY_TEST)]
    rows = []
    for metric, col, frame_col, pub in (("MB/s", "MB/s", "mbps", "published MB/s"),
                                        ("latency us", "rx.lat", "rx.lat", "published latency us")):
        for b, r in z.iterrows():
            rows += _bar({"case": "local", "test": metric, "backend": b}, r[col], f[f["backend"] == b],
                         frame_col, published=r[pub])
    return pd.DataFrame(rows, columns=BAR_COLUMNS)


def throughput_ratio_data(result: BackendsResult) -> pd.DataFrame:
    """The local disk's comparisons: each backend's MB/s over default's per workload, with the interval
    measured in turns, and default's A/A rows."""
    c = comparison_table(result)
    return c[c["case"] == "local"].reset_index(drop=True)


def _curve_rows(result: BackendsResult, cases, tests, engines_only: bool = False) -> pd.DataFrame:
    rows = []
    for case in cases:
        for _, r in latency_table(result, case, tests).iterrows():
            if engines_only and checks.is_default(r["backend"]):
                continue
            base = {"case": case, "test": r["test"], "backend": r["backend"], "percentile": r["percentile"]}
            rows.append({**base, "kind": "median", "us": r["us"], "us_max": np.nan})
            if np.isfinite(r["published us"]):
                rows.append({**base, "kind": "published", "us": r["published us"],
                             "us_max": r["published max"]})
    return pd.DataFrame(rows, columns=CURVE_COLUMNS)


def latency_data(result: BackendsResult) -> pd.DataFrame:
    return _curve_rows(result, ["local"], LOCAL_TESTS)


def emulated_latency_data(result: BackendsResult) -> pd.DataFrame:
    """The emulated cases' percentiles and the local case's (drawn dashed as the reference)."""
    return _curve_rows(result, result.cases, CLUSTER_TESTS, engines_only=True)


# --------------------------------------------------------------------------- drawing

def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _pub_marker(ax, x, v, vmax, label=None, *, color="#000000"):
    """A published number: a diamond (edge in `color`), with a bar over its range when it has one."""
    if np.isfinite(vmax):
        ax.plot([x, x], [v, vmax], color=color, lw=1.4, zorder=4)
    ax.plot(x, v if not np.isfinite(vmax) else (v + vmax) / 2, "D", ms=3.2, mfc="white", mec=color,
            mew=0.9, zorder=5, label=label)


def _bars(ax, t: pd.DataFrame, groups: list, group_col: str, *, backends: list, seen: list) -> None:
    """One group per `groups` value, one bar per backend (median), dots for repetitions, diamonds for
    the report. `seen` carries whether the report's legend entry was drawn."""
    width = 0.8 / max(len(backends), 1)
    for i, b in enumerate(backends):
        for j, gv in enumerate(groups):
            sel = t[(t["backend"] == b) & (t[group_col] == gv)]
            med = sel[sel["kind"] == "median"]
            if med.empty:
                continue
            x = j - 0.4 + width * (i + 0.5)
            ax.bar(x, med["value"].iloc[0], width * 0.92, color=style.backend_color(b),
                   label=b if j == 0 else None, edgecolor="white", linewidth=0.4)
            reps = sel[sel["kind"] == "rep"]["value"]
            if len(reps) > 1:
                ax.plot([x] * len(reps), reps, "o", ms=1.8, color="#222222", alpha=0.7, zorder=3)
            for p in sel[sel["kind"] == "published"].itertuples():
                _pub_marker(ax, x, p.value, p.value_max, None if seen else "report")
                seen.append(True)
    ax.set_xticks(range(len(groups)), list(groups))


def _legend(fig, axes) -> None:
    handles = {}
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles), ncols=min(len(handles), 6), loc="lower center",
               bbox_to_anchor=(0.5, 1.0), frameon=False)


def _panels(t: pd.DataFrame, group_col: str, ylabel: str):
    tests = _order(t["test"])
    backends = _order(t["backend"])
    fig, axes = style.figure(width="page", aspect=0.3, ncols=len(tests), squeeze=False)
    fig.subplots_adjust(wspace=0.35)
    seen: list = []
    for ax, test in zip(axes[0], tests, strict=True):
        sub = t[t["test"] == test]
        groups = _order(sub[group_col])
        _bars(ax, sub, groups, group_col, backends=backends, seen=seen)
        if group_col == "test":
            ax.set_xticks([])
        ax.set_title(test)
        ax.set_ylim(bottom=0)
    axes[0][0].set_ylabel(ylabel)
    _legend(fig, axes)
    return fig


def draw_throughput(t: pd.DataFrame):
    """Figure 3: MB/s per workload and backend on the local disk (dots: repetitions; diamonds: the report)."""
    return _panels(t, "test", "MB/s (db_bench)")


def draw_throughput_ratio(t: pd.DataFrame):
    """Figure 3 as ratios: each backend's MB/s over the base's per workload (95% interval over turns;
    hollow and dashed: not resolved to the target), the base's A/A interval as the grey band."""
    base = ", ".join(dict.fromkeys(t["base"].astype(str))) or "the base"
    return ratio_plot(t, "test", ylabel=f"MB/s ratio to {base}", width="page")


def draw_emulated_throughput(t: pd.DataFrame):
    """Figures 10 and 11: MB/s of fillseq, readrandom, readseq per case (local, virtual, remote), engine."""
    return _panels(t, "case", "MB/s (db_bench)")


def draw_zippydb(t: pd.DataFrame):
    """Figure 4: ZippyDB (mixgraph) MB/s and mean Get latency per backend, the report's beside."""
    fig = _panels(t, "test", "")
    for ax, label, title in zip(fig.axes, ("MB/s (db_bench)", "mean Get latency (us)"),
                                ("throughput", "latency"), strict=False):
        ax.set_ylabel(label)
        ax.set_title(f"mixgraph {title}")
    return fig


def _percentile_lines(ax, t: pd.DataFrame, backends: list, *, reference: pd.DataFrame | None = None,
                      reference_label: str = "local", seen: list) -> None:
    """Percentile curves per backend (log y), the report's numbers as diamonds; `reference` (another
    case's rows) drawn thin and dashed in the same colours."""
    x = np.arange(len(PCT_NAMES))
    for b in backends:
        c = style.backend_color(b)
        s = t[(t["backend"] == b) & (t["kind"] == "median")].set_index("percentile").reindex(PCT_NAMES)
        if s["us"].notna().any():
            ax.plot(x, s["us"], "o-", ms=2.5, color=c, label=b)
        if reference is not None:
            r = reference[(reference["backend"] == b) & (reference["kind"] == "median")]
            r = r.set_index("percentile").reindex(PCT_NAMES)
            if r["us"].notna().any():
                ax.plot(x, r["us"], "--", lw=0.7, color=c, alpha=0.8,
                        label=f"{reference_label} (dashed)" if b == backends[-1] else None)
        pub = t[(t["backend"] == b) & (t["kind"] == "published")].set_index("percentile")
        for i, name in enumerate(PCT_NAMES):
            if name in pub.index:
                p = pub.loc[name]
                label = None if seen else "report (edge: backend)"
                _pub_marker(ax, x[i], p["us"], p["us_max"], label, color=c)
                seen.append(True)
    ax.set_xticks(x, PCT_NAMES)
    ax.set_yscale("log")
    ax.minorticks_off()  # minor tick labels of log axes cost seconds per figure in layout


def draw_latency(t: pd.DataFrame):
    """Figure 6: latency percentiles p50..p99.9 per workload and backend on the local disk."""
    tests, backends = _order(t["test"]), _order(t["backend"])
    fig, axes = style.figure(width="page", aspect=0.3, ncols=len(tests), squeeze=False)
    fig.subplots_adjust(wspace=0.3)
    seen: list = []
    for ax, test in zip(axes[0], tests, strict=True):
        _percentile_lines(ax, t[t["test"] == test], backends, seen=seen)
        ax.set_title(test)
    axes[0][0].set_ylabel("latency per operation (us)")
    _legend(fig, axes)
    return fig


def draw_emulated_latency(t: pd.DataFrame):
    """Figures 12 and 13: latency percentiles per emulated case (rows) and cluster workload (columns),
    engines only; the local case dashed in each panel, the report's numbers as diamonds."""
    cases = [c for c in _order(t["case"]) if c != "local"] or ["local"]
    tests, backends = _order(t["test"]), _order(t["backend"])
    ref = t[t["case"] == "local"] if cases != ["local"] else None
    fig, axes = style.figure(width="page", aspect=0.26 * len(cases), nrows=len(cases), ncols=len(tests),
                             squeeze=False, sharex=True)
    fig.subplots_adjust(wspace=0.25, hspace=0.3)
    seen: list = []
    for i, c in enumerate(cases):
        for j, test in enumerate(tests):
            ax = axes[i][j]
            sel = t[(t["case"] == c) & (t["test"] == test)]
            _percentile_lines(ax, sel, backends, seen=seen,
                              reference=ref[ref["test"] == test] if ref is not None else None)
            ax.set_title(f"{test}, {c}")
        axes[i][0].set_ylabel("latency (us)")
    _legend(fig, axes)
    return fig


FIGURES = {
    "lab_throughput": FigureSpec(throughput_data, draw_throughput),
    "lab_throughput_ratio": FigureSpec(throughput_ratio_data, draw_throughput_ratio),
    "lab_latency": FigureSpec(latency_data, draw_latency),
    "lab_zippydb": FigureSpec(zippydb_data, draw_zippydb),
    "lab_emulated_throughput": FigureSpec(emulated_throughput_data, draw_emulated_throughput),
    "lab_emulated_latency": FigureSpec(emulated_latency_data, draw_emulated_latency),
}
