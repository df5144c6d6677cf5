"""What a tracing study measured, in Markdown bullets with its numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core.resolution import AA, findings_line
from rxlab.studies.tracing_overhead.params import TOLERANCE, WORKLOADS
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.tables import comparison_table, published_rows, syscalls_table

COSTS = ("strace", "perf", "counters")   # the tracers in the order the findings tell them


def findings(result: TracingResult) -> str:
    """The study's results in a few Markdown bullets, with their numbers."""
    c = comparison_table(result)
    cmp = c[c["config"] != AA]
    summary = syscalls_table(result)
    lines = []
    for test in [w for w in WORKLOADS if w in set(cmp["test"])]:
        parts = [_kept(tr, g) for tr in COSTS if len(g := cmp[(cmp["test"] == test) & (cmp["config"] == tr)])]
        if parts:
            lines.append(f"- **{test}**: " + "; ".join(parts) + ".")
    lines += _resolution(c)
    pub = published_rows().set_index("tracing")
    if {"none", "strace"} <= set(pub.index):
        s = cmp[(cmp["config"] == "strace") & cmp["backend"].isin(["posix", "libaio"])]
        if len(s):
            lines.append(f"- The report: posix and libaio {pub.loc['none', 'qualifier']} "
                         f"{pub.loc['none', 'value']:g} MB/s untraced, {pub.loc['strace', 'qualifier']} "
                         f"{pub.loc['strace', 'value']:g} MB/s under strace (at most "
                         f"{pub.loc['strace', 'value'] / pub.loc['none', 'value']:.0%} kept, "
                         "workload not stated). Here under strace: "
                         + "; ".join(f"{r.backend} {r.test} {100 * r.ratio:.0f}% kept (a slowdown of "
                                     f"{r.slowdown:.1f}x, {'resolved' if r.resolved else 'unresolved'})"
                                     for r in s.itertuples()) + ".")
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


def _kept(tracer: str, g: pd.DataFrame) -> str:
    """`strace keeps 24 to 30% of the untraced throughput (posix 27% [25..29], ...; 3 of 4 resolved)`."""
    each = ", ".join(f"{r.backend} {100 * r.ratio:.0f}% " + (f"[{100 * r.lo:.0f}..{100 * r.hi:.0f}]"
                                                           if np.isfinite(r.lo) else "(no interval yet)")
                     for r in g.itertuples())
    ok = int(g["resolved"].astype(bool).sum())
    said = f"{ok} of {len(g)} resolved" if ok else "none resolved: not to be read as differences"
    return f"{tracer} keeps {_rng(100 * g['ratio'], '.0f')}% of the untraced throughput ({each}; {said})"


def _resolution(c: pd.DataFrame) -> list[str]:
    """What the turns resolved, per backend: the ratios to none resolved to the target and those not (with
    why), and the A/A control's widest interval beside."""
    lines = (findings_line(g, f"{backend}: {{resolved}} of {{of}} ratios to untraced",
                           lambda r: f"{r.test} {r.config}")
             for backend, g in c.groupby("backend", sort=False))
    return [ln for ln in lines if ln]


def _rng(v, fmt: str) -> str:
    v = pd.to_numeric(pd.Series(v)).dropna()
    if v.empty:
        return "n/a"
    lo, hi = v.min(), v.max()
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}} to {hi:{fmt}}"
