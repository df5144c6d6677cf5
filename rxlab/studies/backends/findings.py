"""What a backends study measured against the report, in Markdown bullets with the numbers."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from rxlab.core.resolution import findings_line
from rxlab.studies.backends.params import CLUSTER_TESTS, LOCAL_TESTS, engine
from rxlab.studies.backends.result import BackendsResult
from rxlab.studies.backends.tables import (
    change_table,
    comparison_table,
    emulated_table,
    latency_table,
    throughput_table,
    zippydb_table,
)


def _fmt_range(vals: Iterable[float], fmt: str = ".1f") -> str:
    v = [x for x in vals if np.isfinite(x)]
    if not v:
        return "n/a"
    lo, hi = format(min(v), fmt), format(max(v), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def _by_backend(t: pd.DataFrame, col: str, fmt: str = ".1f") -> str:
    return ", ".join(f"{engine(r['backend'])} {format(r[col], fmt)}" for _, r in t.iterrows()
                     if np.isfinite(r[col]))


def _pub_by_backend(t: pd.DataFrame, col: str = "published MB/s") -> str:
    seen, out = set(), []
    for _, r in t.iterrows():
        if not np.isfinite(r[col]):
            continue
        vmax = r.get("published max", np.nan)
        v = f"{r[col]:g}" + (f"-{vmax:g}" if np.isfinite(vmax) else "")
        who = r.get("published for") or engine(r["backend"])
        key = (r.get("figure"), who, v)
        if key not in seen:
            seen.add(key)
            out.append(f"{who.replace('|', ' and ')} {v}")
    return ", ".join(out) if out else "none stated"


def findings(result: BackendsResult) -> str:
    """What this run measured against the report, in Markdown bullets with the numbers."""
    lines = _method(result)
    thr = throughput_table(result, "local")
    for test in LOCAL_TESTS:
        t = thr[thr["test"] == test]
        if t.empty:
            continue
        best = t.loc[t["MB/s"].idxmax()]
        lines.append(f"- {test}, local: {_by_backend(t, 'MB/s')} MB/s (fastest {best['backend']}); "
                     f"the report (Figure 3): {_pub_by_backend(t)} MB/s.")
    lat = latency_table(result, "local")
    for test in LOCAL_TESTS:
        t = lat[lat["test"] == test]
        p50, p999 = t[t["percentile"] == "p50"], t[t["percentile"] == "p99.9"]
        if len(p50):
            lines.append(f"- {test} latency, local: p50 {_fmt_range(p50['us'], '.1f')} us, p99.9 "
                         f"{_fmt_range(p999['us'], '.1f')} us across backends.")
    z = zippydb_table(result)
    if len(z):
        lines.append(f"- ZippyDB mixgraph, local: {_by_backend(z, 'MB/s')} MB/s, mean Get latency "
                     f"{_by_backend(z, 'rx.lat')} us; the report (Figure 4): {_pub_by_backend(z)} MB/s, "
                     f"{_pub_by_backend(z, 'published latency us')} us.")
    if len(result.cases) > 1:
        e = emulated_table(result)
        for test in CLUSTER_TESTS:
            t = e[e["test"] == test]
            here, pub = [], []
            for c in result.cases:
                tc = t[t["case"] == c]
                if len(tc):
                    here.append(f"{c} {_by_backend(tc, 'MB/s')}")
                    if c != "local" and tc["published MB/s"].notna().any():
                        pub.append(f"{c} {_pub_by_backend(tc)}")
            lines.append(f"- {test} MB/s by case: " + "; ".join(here) + ". The report (Figure 10): "
                         + ("; ".join(pub) if pub else "none stated") + ".")
        if {"virtual", "remote"} <= set(result.cases):
            ch = change_table(result)
            for test in CLUSTER_TESTS:
                t = ch[ch["test"] == test]
                here = ", ".join(f"{engine(r['backend'])} {r['change virtual->remote %']:+.0f}%"
                                 for _, r in t.iterrows())
                pub = ", ".join(f"{engine(r['backend'])} {r['published direction']}"
                                + (f" {r['published %']:g}%" if np.isfinite(r["published %"]) else "")
                                for _, r in t.iterrows() if r["published direction"])
                lines.append(f"- {test}, virtual to remote: {here} here; the report (Figure 11): {pub}.")
    lines += _resolution(result)
    return "\n".join(lines)


def _method(result: BackendsResult) -> list[str]:
    """How the throughput and the latency were measured (slices, whole runs)."""
    f = result.frame
    if "method" not in f.columns or not (f["method"] == "slices").any():
        return ["- Throughput and latency from whole runs of the report's sequence, one backend after "
                "another."]
    whole = sorted(f.loc[f["method"] == "whole", "rep"].unique())
    turns = f.loc[f["method"] == "slices", "rep"].nunique()
    return [f"- Throughput (MB/s, CPU per op) measured in slices, every backend of a case at once, in "
            f"{turns} turn{'s' if turns != 1 else ''}; latency from whole runs of the report's sequence in "
            f"turn{'s' if len(whole) != 1 else ''} {', '.join(str(int(t) + 1) for t in whole) or 'none'}."]


def _resolution(result: BackendsResult) -> list[str]:
    """What the turns resolved: per case, the comparisons resolved to the target and those not (with
    why), and the widest A/A interval beside."""
    c = comparison_table(result)
    lines = (findings_line(g, f"{case}: {{resolved}} of {{of}} ratios to {g['base'].iloc[0]}",
                           lambda r: f"{r.test} {r.config}") for case, g in c.groupby("case", sort=False))
    return [ln for ln in lines if ln]
