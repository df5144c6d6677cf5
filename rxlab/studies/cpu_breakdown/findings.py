"""What a CPU breakdown measured, in Markdown bullets with the numbers, the seed's beside."""
from __future__ import annotations

import pandas as pd

from rxlab.studies.cpu_breakdown.params import TESTS
from rxlab.studies.cpu_breakdown.result import CpuResult
from rxlab.studies.cpu_breakdown.rules import KERNEL_CATEGORIES, top_symbols
from rxlab.studies.cpu_breakdown.tables import breakdown_table, crosscheck, kernel_per_query, sample_summary

READ_PATH = ["gup", "block", "async", "fs", "syscall"]   # the kernel's read path proper, of KERNEL_CATEGORIES


def breakdown_findings(table: pd.DataFrame, cross: pd.DataFrame, summary: pd.DataFrame,
                       result: CpuResult | None = None) -> str:
    """The seed's table, the samples' quality and the cross-check (with `result`: the largest libc+k
    leaves of readrandom too)."""
    lines = []
    for t in TESTS:
        if f"{t} here" not in table.columns or table[f"{t} here"].isna().all():
            continue
        here, seed = table[f"{t} here"], table[f"{t} seed"]
        d = (here - seed).abs().sort_values(ascending=False)
        big = ", ".join(f"{c} {here[c]:.1f}% vs {seed[c]:.1f}%" for c in d.index[:3])
        lines.append(f"- {t}: libc+k {here['libc+k']:.1f}% of the reading threads' samples here, "
                     f"{seed['libc+k']:.1f}% in the seed; bloom {here['bloom']:.1f}% "
                     f"(seed {seed['bloom']:.1f}%), other {here['other']:.1f}% (seed {seed['other']:.1f}%). "
                     f"Largest differences: {big}.")
    if len(summary):
        lines.append(f"- {int(summary['samples'].sum()):,} samples in {len(summary)} profiled steps; "
                     f"{summary['reader_samples'].sum() / summary['samples'].sum():.1%} from the reading "
                     f"threads; {summary['whole_stack_pct'].median():.0f}% of their stacks reach the "
                     f"thread's start (median over steps).")
    if result is not None and any(t == "readrandom" for t, _ in result.folded):
        top = top_symbols(result.pooled_folded("readrandom"), "libc+k", n=3)
        lines.append("- The largest libc+k leaves in readrandom, % of the reading threads' samples: "
                     + ", ".join(f"`{r['leaf symbol']}` {r['pct of reader samples']:.1f}%"
                                 for _, r in top.iterrows()) + ".")
    c = cross[cross["quantity"] == "DBImpl::Get"]
    if len(c):
        lines.append("- Sampled CPU in DBImpl::Get against RocksDB's get_cpu_nanos, us per query: "
                     + "; ".join(f"{r.test} {r.sampled_us:.1f} vs {r.perfcontext_us:.1f}"
                                 for r in c.itertuples()) + ".")
    p = cross[cross["quantity"] == "process CPU"]
    if len(p):
        lines.append("- All samples against getrusage's process CPU, us per query: "
                     + "; ".join(f"{r.test} {r.sampled_us:.1f} vs {r.rusage_us:.1f}" for r in p.itertuples())
                     + ".")
    return "\n".join(lines)


def kernel_findings(kpq: pd.DataFrame) -> str:
    """The largest parts of libc+k per test (tables.kernel_per_query), with their numbers."""
    lines = []
    for test, r in kpq.iterrows():
        parts = r[list(KERNEL_CATEGORIES)].sort_values(ascending=False)
        total = float(r["libc+k"])
        if not total > 0:
            continue
        top = ", ".join(f"{c} {v:.1f} us ({100 * v / total:.0f}%)" for c, v in parts.head(3).items())
        lines.append(f"- {test}: libc+k {total:.1f} us per query; largest parts {top}; the read path "
                     f"proper (syscall, fs, block, pinning, async) {float(r[READ_PATH].sum()):.1f} us; "
                     f"{r['reads per query']:.2f} device reads per query.")
    return "\n".join(lines)


def findings(result: CpuResult) -> str:
    """Everything above for one result: the seed's table and the cross-check, then inside libc+k."""
    text = breakdown_findings(breakdown_table(result), crosscheck(result), sample_summary(result), result)
    kernel = kernel_findings(kernel_per_query(result))
    return text + ("\n" + kernel if kernel else "")
