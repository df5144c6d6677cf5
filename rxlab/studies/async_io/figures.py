"""The async IO study's figures, each drawn from one tidy table alone.

Every table has a `kind` column: `median` (a line, a bar: the median over
repetitions), `rep` (one repetition: a dot) or `published` (the page's
number, black). Backends appear in the order they are drawn; local rows
carry their delay_us, the page's rows none.

asyncio_multiget: micros/op per key against keys per op, MultiGet and the
Get loop per backend, one panel per device latency, the page's three
MultiGet rows at batch 8. asyncio_scan: scan MB/s without and with async
prefetch and the speedup (`metric` says which), with the overlap verdict.
asyncio_latency: p50, p95, p99 of one MultiGet at the page's batch size.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.patches import Patch

from rxlab.core import figures as style
from rxlab.core.study import FigureSpec
from rxlab.studies.async_io.params import MULTIGET, SCAN_ASYNC, SCAN_SYNC, SEED_BATCH
from rxlab.studies.async_io.result import AsyncIOResult
from rxlab.studies.async_io.tables import PCT, by_backend_order, latency_table, multiget_table, scan_table

__all__ = ["FIGURES", "draw_latency", "draw_multiget", "draw_scan", "latency_data", "multiget_data",
           "scan_data"]

MULTIGET_COLUMNS = ["kind", "backend", "delay_us", "api", "batch_size", "threads", "rep", "micros_per_key"]
SCAN_COLUMNS = ["kind", "backend", "delay_us", "async_io", "threads", "metric", "rep", "value", "overlap"]
LATENCY_COLUMNS = ["kind", "backend", "delay_us", "api", "batch_size", "threads", *PCT, "overlap"]
PAGE_MARKERS = {"MultiGet single-file": "o", "MultiGet single-level": "s", "MultiGet multi-level": "^"}


# --------------------------------------------------------------------------- the tables drawn

def multiget_data(result: AsyncIOResult) -> pd.DataFrame:
    """MultiGet and the Get loop per backend, delay and batch size (medians, MultiGet's repetitions),
    the page's MultiGet rows."""
    t = multiget_table(result)
    loc = t[(t["source"] == "local") & t["api"].isin(["MultiGet", "Get loop"])]
    med = loc.assign(kind="median", rep=np.nan)
    f = result.frame
    mg = f[f["test"] == MULTIGET]
    reps = pd.DataFrame({"kind": "rep", "backend": mg["backend"], "delay_us": mg["delay_us"],
                         "api": "MultiGet", "batch_size": pd.to_numeric(mg["batch_size"]).astype(int),
                         "threads": result.threads,
                         "rep": mg["rep"], "micros_per_key": pd.to_numeric(mg["micros_per_op"])})
    pub = t[t["source"] == "published"].assign(kind="published", rep=np.nan)
    local = by_backend_order(pd.concat([med, reps], ignore_index=True), result.backends)
    return pd.concat([local, pub], ignore_index=True)[MULTIGET_COLUMNS]


def scan_data(result: AsyncIOResult) -> pd.DataFrame:
    """Scan MB/s (medians and repetitions) and the speedup from async_io per backend and delay, with the
    overlap verdict; the page's two scans and its speedup."""
    t = scan_table(result)
    rows = []
    for r in t.itertuples():
        kind = "median" if r.source == "local" else "published"
        base = {"kind": kind, "backend": r.backend, "delay_us": r.delay_us, "async_io": bool(r.async_io),
                "threads": r.threads, "rep": np.nan, "overlap": r.overlap}
        rows.append({**base, "metric": "MB/s", "value": r.mb_per_s})
        if r.async_io:
            rows.append({**base, "metric": "speedup", "value": r.speedup})
    f = result.frame
    sc = f[f["test"].isin([SCAN_SYNC, SCAN_ASYNC])]
    rows += [{"kind": "rep", "backend": b, "delay_us": d, "async_io": test == SCAN_ASYNC,
              "threads": result.threads, "metric": "MB/s", "rep": rep, "value": float(v), "overlap": o}
             for b, d, test, rep, v, o in zip(sc["backend"], sc["delay_us"], sc["test"], sc["rep"],
                                              pd.to_numeric(sc["mb_per_s"]), sc["overlap"], strict=True)]
    out = pd.DataFrame(rows, columns=SCAN_COLUMNS)
    local = by_backend_order(out[out["kind"] != "published"], result.backends)
    return pd.concat([local, out[out["kind"] == "published"]], ignore_index=True)


def latency_data(result: AsyncIOResult, batch_size: int = SEED_BATCH) -> pd.DataFrame:
    """p50, p95, p99 of one MultiGet of the page's batch size per backend and delay (medians; the
    async_io variant left out: without coroutines it is the same path), the page's three rows."""
    t = latency_table(result, batch_size)
    t = t[t["api"] != "MultiGet async_io"].assign(batch_size=batch_size)
    loc = by_backend_order(t[t["source"] == "local"], result.backends).assign(kind="median")
    pub = t[t["source"] == "published"].assign(kind="published")
    return pd.concat([loc, pub], ignore_index=True)[LATENCY_COLUMNS]


# --------------------------------------------------------------------------- drawing

def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _delay_label(d) -> str:
    return "no added latency" if not d else f"delay_us={int(d)}"


def _tick(backend: str, delay_us) -> str:
    """A short two- or three-line tick label: the backend (query on its own line) and the delay."""
    return f"{backend.replace('?', chr(10))}\nd={int(delay_us)}"


def draw_multiget(t: pd.DataFrame):
    """Micros per key against batch size: MultiGet (solid, dots for repetitions) and the Get loop (dashed)
    per backend, one panel per device latency; the page's three MultiGet rows at batch 8 (black)."""
    loc, pub = t[t["kind"] != "published"], t[t["kind"] == "published"]
    delays = _order(loc["delay_us"])
    fig, axes = style.figure(width="page", aspect=0.36, ncols=max(len(delays), 1), sharey=True, squeeze=False)
    for ax, d in zip(axes[0], delays, strict=False):
        here = loc[loc["delay_us"] == d]
        for b in _order(loc["backend"]):
            color = style.backend_color(b)
            for api, ls in (("MultiGet", "-"), ("Get loop", "--")):
                g = here[(here["backend"] == b) & (here["api"] == api) & (here["kind"] == "median")]
                if len(g):
                    g = g.sort_values("batch_size")
                    ax.plot(g["batch_size"], g["micros_per_key"], ls, color=color, label=f"{b}, {api}",
                            marker="." if api == "MultiGet" else None)
            reps = here[(here["backend"] == b) & (here["kind"] == "rep")]
            if reps.groupby("batch_size").size().max() > 1:   # one repetition is the line already
                ax.plot(reps["batch_size"], reps["micros_per_key"], "o", ms=1.8, color=color, alpha=0.5)
        for r in pub.itertuples():
            threads = int(r.threads)
            ax.plot([r.batch_size], [r.micros_per_key], PAGE_MARKERS.get(r.api, "o"), color="#000000",
                    mfc="none", label=f"page: {r.api.removeprefix('MultiGet ')} ({threads} threads)")
        ax.set_xscale("log", base=2)
        sizes = sorted(int(b) for b in here["batch_size"].unique())
        ax.set_xticks(sizes, [str(b) for b in sizes])
        ax.minorticks_off()  # no minor ticks between batch sizes of 2^k
        ax.set_yscale("log")
        ax.set_xlabel("keys per op (batch_size)")
        ax.set_title(_delay_label(d))
    axes[0][0].set_ylabel("micros/op per key (db_bench)")
    h, lab = axes[0][0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=4, fontsize=5.5)
    return fig


def draw_scan(t: pd.DataFrame):
    """Scan throughput (MB/s) without and with async prefetch per backend and delay, the page's beside;
    below: the speedup (time without / with), with the counters' overlap verdict above each bar."""
    loc, pub = t[t["kind"] != "published"], t[t["kind"] == "published"]
    mbps = loc[(loc["metric"] == "MB/s") & (loc["kind"] == "median")]
    groups = list(dict.fromkeys(zip(mbps["backend"], mbps["delay_us"], strict=True)))
    threads = int(pub["threads"].iloc[0]) if len(pub) else 0
    labels = [_tick(b, d) for b, d in groups] + ([f"page\n({threads} threads)"] if len(pub) else [])
    x = np.arange(len(labels))
    fig, (ax, ax2) = style.figure(width="page", aspect=0.5, nrows=2, sharex=True)
    for i, (b, d) in enumerate(groups):
        here = loc[(loc["backend"] == b) & (loc["delay_us"] == d)]
        for a, off, hatch in ((False, -0.2, "///"), (True, 0.2, None)):
            g = here[here["async_io"] == a]
            m = g[(g["metric"] == "MB/s") & (g["kind"] == "median")]
            if m.empty:
                continue
            ax.bar(x[i] + off, m["value"].iloc[0], 0.38, color=style.backend_color(b), hatch=hatch,
                   edgecolor="#333333", linewidth=0.4)
            reps = g[(g["metric"] == "MB/s") & (g["kind"] == "rep")]["value"]
            if len(reps) > 1:
                ax.plot([x[i] + off] * len(reps), reps, "o", ms=1.8, color="#222222", alpha=0.7, zorder=3)
            s = g[g["metric"] == "speedup"]
            if len(s):
                ax2.bar(x[i], s["value"].iloc[0], 0.6, color=style.backend_color(b), edgecolor="none")
                ax2.text(x[i], s["value"].iloc[0], s["overlap"].iloc[0], ha="center", va="bottom", fontsize=6)
    if len(pub):
        for a, off, hatch in ((False, -0.2, "///"), (True, 0.2, None)):
            g = pub[(pub["async_io"] == a) & (pub["metric"] == "MB/s")]
            ax.bar(x[-1] + off, g["value"].iloc[0], 0.38, color="#000000" if a else "#8c8c8c", hatch=hatch,
                   edgecolor="#333333", linewidth=0.4)
        ax2.bar(x[-1], pub[pub["metric"] == "speedup"]["value"].iloc[0], 0.6, color="#000000")
    ax.legend(handles=[Patch(facecolor="white", edgecolor="#333333", hatch="///", label="async_io off"),
                       Patch(facecolor="#999999", edgecolor="#333333", label="async_io on")],
              loc="lower left", bbox_to_anchor=(0.0, 1.0), ncols=2)
    ax.set_ylabel("scan MB/s")
    ax2.set_xticks(x, labels, fontsize=6)
    ax2.axhline(1.0, color="#555555", lw=0.6, ls="--")
    ax2.set_ylim(0, ax2.get_ylim()[1] * 1.12)   # room for the verdict above the tallest bar
    ax2.set_ylabel("speedup from async_io (x)")
    ax2.set_title("above each bar: did ReadAsync overlap, by the counters (yes / no / unknown)")
    return fig


def draw_latency(t: pd.DataFrame):
    """p50/p95/p99 of one MultiGet per backend and delay, the page's three rows (black)."""
    batch = int(t["batch_size"].iloc[0])
    loc, pub = t[t["kind"] == "median"], t[t["kind"] == "published"]
    rows = [(_tick(r.backend, r.delay_us), style.backend_color(r.backend), r) for r in loc.itertuples()]
    rows += [(f"page\n{r.api.removeprefix('MultiGet ')}", "#000000", r) for r in pub.itertuples()]
    fig, ax = style.figure(width="page", aspect=0.3)
    for i, (_, color, r) in enumerate(rows):
        ax.plot([i, i], [r.p50_us, r.p99_us], color=color, lw=1.2)
        for v, m in ((r.p50_us, "o"), (r.p95_us, "s"), (r.p99_us, "^")):
            ax.plot([i], [v], m, color=color, mfc="white" if m != "o" else color, ms=4)
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel(f"one MultiGet of {batch} keys (us)")
    threads = f"{int(pub['threads'].iloc[0])} threads, " if len(pub) else ""
    ax.set_title(f"p50 (filled), p95 (square), p99 (triangle); the page: {threads}remote flash")
    return fig


FIGURES = {
    "asyncio_multiget": FigureSpec(multiget_data, draw_multiget),
    "asyncio_scan": FigureSpec(scan_data, draw_scan),
    "asyncio_latency": FigureSpec(latency_data, draw_latency),
}
