"""The CPU breakdown's tables: the seed's percentages beside ours, CPU per query, the cross-check, the rules.

Percentages are shares of the reading threads' samples (the repetitions'
samples pooled); CPU per query is samples x sample period / queries of the
step, median over the repetitions.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.studies.cpu_breakdown.params import PROFILE, TESTS, TIMERS
from rxlab.studies.cpu_breakdown.result import CpuResult
from rxlab.studies.cpu_breakdown.rules import (
    CATEGORIES,
    KERNEL_CATEGORIES,
    KERNEL_RULES,
    RULES,
    Rule,
    breakdown,
    inclusive,
    kernel_breakdown,
    kernel_rule_table,
    rule_table,
    top_symbols,
)

# (label, reader-stack pattern measured by sampling, PerfContext counter, what the counter times)
CROSSCHECKS = (
    ("DBImpl::Get", r"^rocksdb::DBImpl::Get$", "get_cpu_nanos", "thread CPU time in DB::Get"),
    ("block reads", r"^rocksdb::RandomAccessFileReader::(Read|MultiRead)$", "block_read_cpu_time",
     "thread CPU time of the block reads (file system and kernel)"),
    ("checksum", r"^rocksdb::VerifyBlockChecksum$", "block_checksum_time",
     "wall time of VerifyBlockChecksum (CPU-bound)"),
    ("block seeks", r"^rocksdb::(DataBlockIter|IndexBlockIter|MetaBlockIter)::SeekImpl$", "block_seek_nanos",
     "wall time of Data/Index/MetaBlockIter::SeekImpl (CPU-bound)"),
)


def published_breakdown() -> pd.DataFrame:
    """The seed's percentages: category, meaning, test, pct_published."""
    p = published.load("gccclang_flamegraph")
    return p.rename(columns={"pct": "pct_published"})[["category", "meaning", "test", "pct_published"]]


def _profiled(result: CpuResult) -> pd.DataFrame:
    f = result.frame
    return f[f["cpu.mode"] == PROFILE].set_index(["test", "cpu.rep"])


def _us_per_sample_per_query(row: pd.Series) -> float:
    """CPU microseconds per query that one sample of the step stands for."""
    return float(row["cpu.period_ns"]) / 1e3 / float(row["ops"])


def breakdown_long(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """One row per test, repetition and category: samples and percent of the reader samples."""
    rows = []
    for (test, rep), folded in result.folded.items():
        b = breakdown(folded, rules)
        reader = int(b[list(CATEGORIES)].sum())
        for c in CATEGORIES:
            rows.append({"test": test, "rep": rep, "category": c, "samples": int(b[c]),
                         "pct": 100.0 * b[c] / reader if reader else np.nan})
    return pd.DataFrame(rows, columns=["test", "rep", "category", "samples", "pct"])


def breakdown_table(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """The seed's table: percent of samples per category (rows, the seed's order) and test, here (the
    repetitions' samples pooled) and in the seed, side by side: columns `<test> here`, `<test> seed`."""
    long = breakdown_long(result, rules)
    pooled = long.groupby(["test", "category"], sort=False)["samples"].sum().unstack("category")
    pooled = pooled.reindex(columns=list(CATEGORIES), fill_value=0)
    pct = pooled.div(pooled.sum(axis=1), axis=0) * 100.0
    pub = published_breakdown().pivot(index="category", columns="test", values="pct_published")
    cols = {}
    for t in TESTS:
        cols[f"{t} here"] = pct.loc[t] if t in pct.index else pd.Series(np.nan, index=list(CATEGORIES))
        cols[f"{t} seed"] = pub[t] if t in pub.columns else np.nan
    out = pd.DataFrame(cols).reindex(list(CATEGORIES))
    out.index.name = "category"
    return out


def sample_summary(result: CpuResult) -> pd.DataFrame:
    """Per profiled step: QPS, samples, how many came from the reading threads, stack quality."""
    f = result.frame[result.frame["cpu.mode"] == PROFILE]
    cols = ["test", "cpu.rep", "qps", "cpu.samples", "cpu.reader_samples",
            "cpu.outside_samples", "cpu.whole_stack_pct", "cpu.with_rocksdb_frame_pct", "cpu.kernel_leaf_pct"]
    out = f[[c for c in cols if c in f.columns]].copy()
    return out.rename(columns=lambda c: c.removeprefix("cpu.")).reset_index(drop=True)


def crosscheck(result: CpuResult) -> pd.DataFrame:
    """Microseconds per query of parts of the stack, from the samples (profiled steps: samples with
    the frame x sample period / queries) and from RocksDB's PerfContext (the timed steps), plus
    the process CPU per query (getrusage, rxlab.core.metrics' cpuPer) against all samples of the step.
    Medians over the repetitions."""
    f = result.frame
    rows = []
    for test in TESTS:
        prof = f[(f["test"] == test) & (f["cpu.mode"] == PROFILE)]
        timed = f[(f["test"] == test) & (f["cpu.mode"] == TIMERS)]
        if prof.empty:
            continue
        per_rep = []
        for _, r in prof.iterrows():
            folded = result.folded[(test, int(r["cpu.rep"]))]
            us = _us_per_sample_per_query(r)
            per_rep.append({"all samples": sum(folded.values()) * us,
                            **{lab: inclusive(folded, pat) * us for lab, pat, _, _ in CROSSCHECKS}})
        samp = pd.DataFrame(per_rep).median()
        rows.append({"test": test, "quantity": "process CPU", "sampled_us": samp["all samples"],
                     "perfcontext_us": np.nan, "rusage_us": float(prof["cpuPer"].median()),
                     "counter": "getrusage (cpuPer)", "counter_measures": "process user + system CPU"})
        for lab, _, counter, what in CROSSCHECKS:
            col = f"pc.{counter}"
            pc = (pd.to_numeric(timed[col], errors="coerce").fillna(0) / timed["ops"] / 1e3).median() \
                if col in timed.columns and len(timed) else np.nan
            rows.append({"test": test, "quantity": lab, "sampled_us": samp[lab], "perfcontext_us": pc,
                         "rusage_us": np.nan, "counter": col, "counter_measures": what})
    out = pd.DataFrame(rows, columns=["test", "quantity", "sampled_us", "perfcontext_us", "rusage_us",
                                      "counter", "counter_measures"])
    out["sampled / counter"] = out["sampled_us"] / out["perfcontext_us"].fillna(out["rusage_us"])
    return out


def timer_cost(result: CpuResult) -> pd.DataFrame:
    """QPS and CPU per query of the profiled steps (perf sampling, PerfContext off) and the timed
    steps (no sampling, PerfContext level 5): what each instrument costs. Medians."""
    f = result.frame[result.frame["cpu.mode"].isin([PROFILE, TIMERS])]
    g = f.groupby(["test", "cpu.mode"])[["qps", "cpuPer", "usPer", "syPer"]].median().unstack("cpu.mode")
    g.columns = [f"{a} {b}" for a, b in g.columns]
    return g.reindex([t for t in TESTS if t in g.index])


def per_query_long(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """CPU microseconds per query in each category, per test and repetition."""
    long = breakdown_long(result, rules)
    f = _profiled(result)
    us = [_us_per_sample_per_query(f.loc[(r.test, r.rep)]) for r in long.itertuples()]
    return long.assign(us_per_query=np.array(us, dtype=float) * long["samples"].to_numpy(float))


def per_query(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """CPU microseconds per query in each category (reader samples x period / queries), medians."""
    long = per_query_long(result, rules)
    out = long.groupby(["test", "category"], sort=False)["us_per_query"].median().unstack("category")
    return out.reindex(index=[t for t in TESTS if t in out.index], columns=list(CATEGORIES))


def kernel_per_query_long(result: CpuResult, rules: Iterable[Rule] = KERNEL_RULES) -> pd.DataFrame:
    """libc+k split into its parts (KERNEL_RULES), CPU microseconds per query, per test and repetition,
    with `libc+k` (their sum) and `reads per query` (device reads / queries of the step)."""
    f = _profiled(result)
    rows = []
    for (test, rep), folded in result.folded.items():
        r = f.loc[(test, rep)]
        b = kernel_breakdown(folded, rules) * _us_per_sample_per_query(r)
        reads = float(r["iops"]) / float(r["qps"]) if float(r.get("qps") or 0) > 0 else np.nan
        rows.append({"test": test, "rep": rep, **b.to_dict(), "libc+k": float(b.sum()),
                     "reads per query": reads})
    return pd.DataFrame(rows, columns=["test", "rep", *KERNEL_CATEGORIES, "libc+k", "reads per query"])


def kernel_per_query(result: CpuResult, rules: Iterable[Rule] = KERNEL_RULES) -> pd.DataFrame:
    """The parts of libc+k per query, medians over the repetitions; one row per test. The doorbell and
    the switch happen once per device read, hence `reads per query` beside them."""
    long = kernel_per_query_long(result, rules)
    out = long.groupby("test", sort=False)[[*KERNEL_CATEGORIES, "libc+k", "reads per query"]].median()
    return out.reindex([t for t in TESTS if t in out.index])


def top_leaves(result: CpuResult, test: str = "readrandom", n: int = 12) -> pd.DataFrame:
    """The leaf functions of libc+k and of other in one test (all repetitions), % of reader samples."""
    folded = result.pooled_folded(test)
    parts = [top_symbols(folded, c, n=n).assign(category=c) for c in ("libc+k", "other")]
    out = pd.concat(parts, ignore_index=True)
    return out[["category", "leaf symbol", "samples", "pct of reader samples"]]


def rules_table(result: CpuResult) -> pd.DataFrame:
    """The categories' symbol rules in precedence order (the same for every result)."""
    return rule_table()


def kernel_rules_table(result: CpuResult) -> pd.DataFrame:
    """The parts of libc+k and their kernel symbol rules (the same for every result)."""
    return kernel_rule_table()


TABLES = {
    "breakdown": breakdown_table,
    "samples": sample_summary,
    "crosscheck": crosscheck,
    "timer_cost": timer_cost,
    "per_query": per_query,
    "kernel_per_query": kernel_per_query,
    "top_leaves": top_leaves,
    "rules": rules_table,
    "kernel_rules": kernel_rules_table,
}
