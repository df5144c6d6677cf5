"""What an async IO study measured, in Markdown bullets with the numbers, the page's beside; every ratio with
its 95% interval over turns and whether it is resolved, the unresolved listed apart."""
from __future__ import annotations

import pandas as pd

from rxlab.core.resolution import AA, findings_line
from rxlab.studies.async_io.params import ASYNC_MULTIGET, ASYNC_SCAN, MULTIGET_GAIN, SEED_BATCH
from rxlab.studies.async_io.result import AsyncIOResult
from rxlab.studies.async_io.tables import (
    comparison_table,
    effect_table,
    multiget_table,
    scan_table,
)

__all__ = ["findings"]


def _delay_label(d) -> str:
    return "no added latency" if not d else f"delay_us={int(d)}"


def _ratio(r) -> str:
    """`1.43x +-3.1%, resolved`, or `1.43x, unresolved: budget (+-9.0% > +-2%)`: the status says why."""
    if r.resolved:
        return f"{r.ratio:.2f}x +-{r.half_width:.1f}%, resolved"
    return f"{r.ratio:.2f}x, {r.status}"


def _effect(e: pd.DataFrame, effect: str, backend: str, delay, config: str | None = None):
    sel = e[(e["effect"] == effect) & (e["backend"] == backend) & (e["delay_us"] == delay)
            & (e["config"] != AA)]
    if config is not None:
        sel = sel[sel["config"] == config]
    return next(sel.itertuples(), None)


def findings(result: AsyncIOResult) -> str:
    """What the tables show, in Markdown bullets with their numbers."""
    mg, sc, e = multiget_table(result), scan_table(result), effect_table(result)
    loc = mg[mg["source"] == "local"]
    pub = mg[mg["source"] == "published"].set_index("api")
    lines = []
    for d in sorted(loc["delay_us"].dropna().unique()):
        parts = []
        for b in result.backends:
            g = loc[(loc["backend"] == b) & (loc["delay_us"] == d)]
            m = g[g["api"] == "MultiGet"].sort_values("batch_size")
            gl = g[g["api"] == "Get loop"]
            if m.empty or gl.empty:
                continue
            big, loop = m.iloc[-1], gl["micros_per_key"].iloc[0]
            gain = _effect(e, MULTIGET_GAIN, b, d, f"MultiGet {int(big['batch_size'])}")
            parts.append(f"{b} {loop:.0f} -> {big['micros_per_key']:.0f} us/key at batch "
                         f"{int(big['batch_size'])} ({_ratio(gain) if gain else 'no ratio'}, "
                         f"overlap: {big['overlap']})")
        if parts:
            lines.append(f"- MultiGet against the Get loop, {_delay_label(d)} (medians; the gain in keys per "
                         "second, paired by turn): " + "; ".join(parts) + ".")
    a = loc[loc["api"] == "MultiGet async_io"]
    m8 = loc[(loc["api"] == "MultiGet") & (loc["batch_size"] == SEED_BATCH)]
    ea = e[(e["effect"] == ASYNC_MULTIGET) & (e["config"] != AA)]
    if len(a) and len(m8) and len(ea):
        j = a.merge(m8, on=["backend", "delay_us"], suffixes=("_a", ""))
        same = j["max_inflight_a"].fillna(-1).eq(j["max_inflight"].fillna(-1)).all()
        counters = ("the backends' counters show the same reads in flight with and without it" if same
                    else "the counters differ between the two in some configuration (see the table)")
        ratios = "; ".join(f"{r.backend} d={int(r.delay_us)} {_ratio(r)}" for r in ea.itertuples())
        lines.append(
            f"- MultiGet with async_io=true at batch {SEED_BATCH}, its keys per second over plain "
            f"MultiGet's: {ratios} ({counters}; without coroutines async_io does not change MultiGet's "
            "reads): the page's "
            f"single-level ({pub.loc['MultiGet single-level', 'micros_per_key']:.0f} us/op) and "
            f"multi-level ({pub.loc['MultiGet multi-level', 'micros_per_key']:.0f} us/op) rows have no "
            "local counterpart.")
    s = pub.loc["MultiGet single-file"]
    lines.append(f"- The page ({int(s['threads'])} threads, remote flash, batch {SEED_BATCH}): single-file "
                 f"{s['micros_per_key']:.0f} us/op, p50/p95/p99 {s['p50_us']:.0f}/{s['p95_us']:.0f}/"
                 f"{s['p99_us']:.0f} us per MultiGet.")
    sl = sc[(sc["source"] == "local") & sc["async_io"].astype(bool)]
    if len(sl):
        parts = []
        for r in sl.itertuples():
            sp = _effect(e, ASYNC_SCAN, r.backend, r.delay_us)
            parts.append(f"{r.backend} d={int(r.delay_us)} {_ratio(sp) if sp else 'no ratio'}, overlap: "
                         f"{r.overlap}")
        page = sc[(sc["source"] == "published") & sc["async_io"].astype(bool)]["speedup"].iloc[0]
        lines.append("- Scan speedup from async_io (time without / with, paired by turn; overlap per the "
                     "counters): " + "; ".join(parts) + f". The page: {page:.2f}x.")
    lines += _resolution(result, e)
    return "\n".join(lines)


def _resolution(result: AsyncIOResult, effects: pd.DataFrame) -> list[str]:
    """What the turns resolved: per delay, the backends' ratios to the base resolved to the target and those
    not (with why), the widest A/A interval beside; how many of the within-backend effects were resolved."""
    c = comparison_table(result)
    lines = (findings_line(g, f"{_delay_label(d)}: {{resolved}} of {{of}} MB/s ratios to {g['base'].iloc[0]}",
                           lambda r: f"{r.step} {r.config}") for d, g in c.groupby("delay_us", sort=False))
    out = [ln for ln in lines if ln]
    e = effects[effects["config"] != AA]
    if len(e):
        ok = e["resolved"].astype(bool)
        out.append("- Within a backend (MultiGet over the Get loop, async_io on and off): "
                   f"{int(ok.sum())} of {len(e)} ratios resolved; the others, marked unresolved above, are "
                   "not to be read as differences.")
    return out
