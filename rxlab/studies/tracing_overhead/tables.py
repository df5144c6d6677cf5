"""The tracing study's tables: throughput per tracer, each tracer's ratio to untraced with its interval
over turns, the syscall counts of strace and rxlab, and the report's Figure 5 numbers beside the local
ones."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.core.resolution import AA
from rxlab.core.turns_plan import result_comparisons
from rxlab.studies.tracing_overhead.params import COMPARE, DATA_SYSCALLS, TRACERS, WORKLOADS
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.syscalls import (
    COMPARE_COLUMNS,
    agreement,
    compare_syscalls,
    load_counters,
    parse_strace_summary,
)

__all__ = ["TABLES", "comparison_table", "measured", "published_beside", "published_rows", "published_table",
           "syscall_summary", "syscall_table", "syscalls_table", "throughput_table"]


def measured(frame: pd.DataFrame) -> pd.DataFrame:
    """The workload steps (flush is bookkeeping, not a throughput)."""
    return frame[frame["test"].isin(WORKLOADS)]


def throughput_table(result: TracingResult) -> pd.DataFrame:
    """Per workload, backend and tracer: median qps and db_bench MB/s over every run of the turns (`none`
    twice a turn), their range, n. The tracers' ratios with their intervals: `comparison_table`."""
    f = measured(result.frame)
    g = f.groupby(["test", "backend", "tracer"], sort=False)
    t = g.agg(qps=("qps", "median"), qps_min=("qps", "min"), qps_max=("qps", "max"),
              mb_per_s=("mb_per_s", "median"), n=("qps", "size")).reset_index()
    order = {"test": WORKLOADS, "backend": result.backends, "tracer": TRACERS}
    for col, vals in order.items():
        t[col] = pd.Categorical(t[col], [v for v in vals if v in set(t[col])], ordered=True)
    return t.sort_values(["test", "backend", "tracer"]).reset_index(drop=True).astype(
        {"test": str, "backend": str, "tracer": str})


def comparison_table(result: TracingResult) -> pd.DataFrame:
    """Per backend and workload, each tracer's qps ratio to untraced (`none`, the A/A pair's geometric
    mean in the same turn) with its 95% interval over turns, half-width (%), resolved, turns and status,
    then none's A/A row (rxlab.core.turns_plan); `slowdown` is 1 / ratio. Workloads in WORKLOADS' order,
    tracers in TRACERS'."""
    c = result_comparisons(result, COMPARE)
    c = c[c["test"].isin(WORKLOADS)]
    rank = {"backend": {b: i for i, b in enumerate(result.backends)},
            "test": {w: i for i, w in enumerate(WORKLOADS)},
            "config": {t: i for i, t in enumerate([*TRACERS, AA])}}
    keys = {f"_{k}": c[k].map(v) for k, v in rank.items()}
    c = c.assign(**keys).sort_values(list(keys), kind="stable").drop(columns=list(keys))
    slowdown = 1 / c["ratio"].where((c["ratio"] > 0) & (c["config"] != AA))
    return c.assign(slowdown=slowdown).reset_index(drop=True)


def syscall_table(result: TracingResult) -> pd.DataFrame:
    """strace's and rxlab's syscall counts of every strace run: one row per run and syscall.

    Read back from each run's attachments (strace.txt, counters.json), so a
    stored study gives the same table. Columns: rep, backend, run_id, then
    compare_syscalls' columns.
    """
    out = []
    strace_runs = result.frame[result.frame["tracer"] == "strace"].drop_duplicates("run_id")
    for r in strace_runs.itertuples():
        d = result.root / r.run_id / "attachments"
        traced = parse_strace_summary((d / "strace.txt").read_text())
        counters = load_counters(d / "counters.json")["counters"] if (d / "counters.json").is_file() else None
        t = compare_syscalls(traced, counters)
        t.insert(0, "run_id", r.run_id)
        t.insert(0, "backend", r.backend)
        t.insert(0, "rep", r.rep)
        out.append(t)
    cols = ["rep", "backend", "run_id", *COMPARE_COLUMNS]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)


def syscall_summary(table: pd.DataFrame, backends: Sequence[str] | None = None) -> pd.DataFrame:
    """Per backend and syscall, summed over the repetitions: strace, rxlab, rel_diff; the worst run's.

    `within_1pct` answers the issue's claim per compared row (NaN where not
    compared); `judged` says whether the row is one of the data path's read
    and write syscalls that rxlab issued.
    """
    if table.empty:
        return pd.DataFrame(columns=["backend", "syscall", "strace", "rxlab", "rel_diff",
                                     "worst_run_rel_diff", "runs", "judged", "within_1pct"])
    rows = []
    for (b, sc), g in table.groupby(["backend", "syscall"], sort=False):
        s = int(g["strace"].sum())
        has = g["rxlab"].notna().all()
        o = float(g["rxlab"].sum()) if has else np.nan
        rel = (o - s) / s if has and s else np.nan
        worst = g["rel_diff"].iloc[int(np.nanargmax(g["rel_diff"].abs().to_numpy()))] \
            if g["rel_diff"].notna().any() else np.nan
        judged = bool(g["compared"].all())
        w = agreement(g)
        rows.append({"backend": b, "syscall": sc, "strace": s, "rxlab": o, "rel_diff": rel,
                     "worst_run_rel_diff": worst, "runs": len(g), "judged": judged,
                     "within_1pct": w["within"] if judged else np.nan})
    t = pd.DataFrame(rows)
    order = list(backends) if backends is not None else list(dict.fromkeys(table["backend"]))
    t["_b"] = t["backend"].map({b: i for i, b in enumerate(order)})
    t["_s"] = t["syscall"].map(lambda n: DATA_SYSCALLS.index(n) if n in DATA_SYSCALLS else len(DATA_SYSCALLS))
    return t.sort_values(["_b", "_s", "syscall"]).drop(columns=["_b", "_s"]).reset_index(drop=True)


def published_rows() -> pd.DataFrame:
    """The report's Figure 5 numbers (lab_throughput): setup, engine, tracing, value, qualifier (MB/s)."""
    p = published.load("lab_throughput")
    p = p[p["table"] == "Figure 5"]
    return p[["table", "workload", "engine", "tracing", "value", "value_max", "unit", "qualifier"]] \
        .reset_index(drop=True)


def published_beside(tp: pd.DataFrame) -> pd.DataFrame:
    """The local median MB/s of posix and libaio without tracing and under strace, beside the report's."""
    pub = published_rows()
    rows = []
    for p in pub.itertuples():
        engines = str(p.engine).split("|")
        hedge = f"{p.qualifier} " if isinstance(p.qualifier, str) and p.qualifier != "nan" else ""
        tracer = {"none": "none", "strace": "strace", "perf": "perf"}.get(str(p.tracing), str(p.tracing))
        for test in tp["test"].unique():
            loc = tp[(tp["test"] == test) & tp["backend"].isin(engines) & (tp["tracer"] == tracer)]
            for r in loc.itertuples():
                rows.append({"test": test, "backend": r.backend, "tracer": tracer,
                             "local_mb_per_s": r.mb_per_s,
                             "published_mb_per_s": f"{hedge}{p.value:g}",
                             "published_workload": "not stated"})
    return pd.DataFrame(rows, columns=["test", "backend", "tracer", "local_mb_per_s", "published_mb_per_s",
                                       "published_workload"])


def syscalls_table(result: TracingResult) -> pd.DataFrame:
    """syscall_summary of the study's strace runs, backends in the study's order."""
    return syscall_summary(syscall_table(result), result.backends)


def published_table(result: TracingResult) -> pd.DataFrame:
    """published_beside of the study's throughput table."""
    return published_beside(throughput_table(result))


TABLES = {
    "throughput": throughput_table,
    "comparisons": comparison_table,
    "syscalls": syscalls_table,
    "syscall_runs": syscall_table,
    "published": published_table,
}
