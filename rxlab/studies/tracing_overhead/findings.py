"""What a tracing study measured, in Markdown bullets with its numbers."""
from __future__ import annotations

import pandas as pd

from rxlab.studies.tracing_overhead.params import TOLERANCE, WORKLOADS
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.tables import overhead_table, published_rows, syscalls_table


def findings(result: TracingResult) -> str:
    """The study's results in a few Markdown bullets, with their numbers."""
    ot = overhead_table(result)
    summary = syscalls_table(result)
    lines = []
    for test in [w for w in WORKLOADS if w in set(ot["test"])]:
        o = ot[ot["test"] == test]
        parts = []
        for tr in ("strace", "perf", "counters"):
            g = o[o["tracer"] == tr]
            if len(g):
                parts.append(f"{tr} keeps {_rng(100 * g['rel'], '.0f')}% of the untraced throughput "
                             f"({', '.join(f'{r.backend} {100 * r.rel:.0f}%' for r in g.itertuples())})")
        if parts:
            lines.append(f"- **{test}**: " + "; ".join(parts) + ".")
        spread = []
        for tr in ("strace", "perf", "counters"):
            g = o[o["tracer"] == tr]
            if len(g) and int(g["n"].min()) > 1:
                slower = int((g["rel_max"] < 1).sum())
                faster = int((g["rel_min"] > 1).sum())
                spread.append(f"{tr}: slower than untraced in every repetition on {slower} of {len(g)} "
                              "backends"
                              + (f", faster on {faster}" if faster else "")
                              + (f", within the run-to-run spread on {len(g) - slower - faster}"
                                 if len(g) - slower - faster else ""))
        if spread:
            lines.append(f"  - {test}, repetition by repetition: " + "; ".join(spread) + ".")
    pub = published_rows().set_index("tracing")
    if {"none", "strace"} <= set(pub.index):
        s = ot[(ot["tracer"] == "strace") & ot["backend"].isin(["posix", "libaio"])]
        if len(s):
            lines.append(f"- The report: posix and libaio {pub.loc['none', 'qualifier']} "
                         f"{pub.loc['none', 'value']:g} MB/s untraced, {pub.loc['strace', 'qualifier']} "
                         f"{pub.loc['strace', 'value']:g} MB/s under strace (at most "
                         f"{pub.loc['strace', 'value'] / pub.loc['none', 'value']:.0%} kept, "
                         "workload not stated). "
                         f"Here posix and libaio keep {_rng(100 * s['rel'], '.0f')}% under strace "
                         f"(a slowdown of {_rng(s['slowdown'], '.1f')}x).")
    judged = summary[summary["judged"]]
    if len(judged):
        worst = judged.loc[judged["worst_run_rel_diff"].abs().idxmax()]
        ok = bool(judged["within_1pct"].all())
        lines.append(f"- Syscall counts: {len(judged)} data-path read/write syscall counts "
                     "(backend x syscall, "
                     f"{int(judged['runs'].max())} run(s) each) compared; "
                     f"{'all agree' if ok else 'NOT all agree'} within {TOLERANCE:.0%} between strace and "
                     f"rxlab's counters; the largest difference of a single run is "
                     f"{100 * worst['worst_run_rel_diff']:+.3f}% "
                     f"({worst['backend']} {worst['syscall']}: strace {int(worst['strace']):,}, rxlab "
                     f"{int(worst['rxlab']):,} over all runs).")
        differ = summary["rxlab"].notna() & (summary["strace"] != summary["rxlab"])
        other = summary[~summary["judged"] & differ]
        if len(other):
            lines.append("- Not judged (outside rxlab's data path, or not issued by it): "
                         + "; ".join(f"{r.backend} {r.syscall} strace {int(r.strace):,} vs rxlab "
                                     f"{int(r.rxlab):,}" for r in other.itertuples()) + ".")
    return "\n".join(lines)


def _rng(v, fmt: str) -> str:
    v = pd.to_numeric(pd.Series(v)).dropna()
    if v.empty:
        return "n/a"
    lo, hi = v.min(), v.max()
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}} to {hi:{fmt}}"
