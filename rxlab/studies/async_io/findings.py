"""What an async IO study measured, in Markdown bullets with the numbers, the page's beside."""
from __future__ import annotations

from rxlab.studies.async_io.params import SEED_BATCH
from rxlab.studies.async_io.result import AsyncIOResult
from rxlab.studies.async_io.tables import multiget_table, scan_table

__all__ = ["findings"]


def _delay_label(d) -> str:
    return "no added latency" if not d else f"delay_us={int(d)}"


def findings(result: AsyncIOResult) -> str:
    """What the tables show, in Markdown bullets with their numbers."""
    mg, sc = multiget_table(result), scan_table(result)
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
            parts.append(f"{b} {loop:.0f} -> {big['micros_per_key']:.0f} us/key at batch "
                         f"{int(big['batch_size'])} ({loop / big['micros_per_key']:.1f}x, "
                         f"overlap: {big['overlap']})")
        if parts:
            lines.append(f"- MultiGet against the Get loop, {_delay_label(d)}: " + "; ".join(parts) + ".")
    a = loc[loc["api"] == "MultiGet async_io"]
    m8 = loc[(loc["api"] == "MultiGet") & (loc["batch_size"] == SEED_BATCH)]
    if len(a) and len(m8):
        j = a.merge(m8, on=["backend", "delay_us"], suffixes=("_a", ""))
        ratio = j["micros_per_key_a"] / j["micros_per_key"]
        same = j["max_inflight_a"].fillna(-1).eq(j["max_inflight"].fillna(-1)).all()
        counters = ("the backends' counters show the same reads in flight with and without it" if same
                    else "the counters differ between the two in some configuration (see the table)")
        lines.append(
            f"- MultiGet with async_io=true at batch {SEED_BATCH} takes {ratio.min():.2f}x to "
            f"{ratio.max():.2f}x the time of plain MultiGet ({counters}; without coroutines async_io "
            "does not change MultiGet's reads, so the spread is run-to-run variation): the page's "
            f"single-level ({pub.loc['MultiGet single-level', 'micros_per_key']:.0f} us/op) and "
            f"multi-level ({pub.loc['MultiGet multi-level', 'micros_per_key']:.0f} us/op) rows have no "
            "local counterpart.")
    s = pub.loc["MultiGet single-file"]
    lines.append(f"- The page ({int(s['threads'])} threads, remote flash, batch {SEED_BATCH}): single-file "
                 f"{s['micros_per_key']:.0f} us/op, p50/p95/p99 {s['p50_us']:.0f}/{s['p95_us']:.0f}/"
                 f"{s['p99_us']:.0f} us per MultiGet.")
    sl = sc[(sc["source"] == "local") & sc["async_io"].astype(bool)]
    if len(sl):
        parts = [f"{r.backend} d={int(r.delay_us)} {r.speedup:.2f}x ({r.overlap})" for r in sl.itertuples()]
        sp = sc[(sc["source"] == "published") & sc["async_io"].astype(bool)]["speedup"].iloc[0]
        lines.append("- Scan speedup from async_io (time without / with; overlap per the counters): "
                     + "; ".join(parts) + f". The page: {sp:.2f}x.")
    return "\n".join(lines)
