"""The async IO study's tables: the comparisons measured in turns (each backend against the delay's base,
and within a backend MultiGet against the Get loop and async_io on and off, ratios with 95% intervals), and
medians over turns per backend and delay, the page's rows beside."""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rxlab.core import published, stats
from rxlab.core.resolution import AA
from rxlab.studies.async_io.params import (
    ASYNC_SCAN,
    GET_LOOP,
    KIND,
    MIB,
    MULTIGET,
    MULTIGET_ASYNC,
    SCAN_ASYNC,
    SCAN_SYNC,
    SEED_BATCH,
    SEED_SCAN_KEYS,
    SEED_THREADS,
    reference_configurations,
)
from rxlab.studies.async_io.result import AsyncIOResult

__all__ = ["PAGE_BACKEND", "PCT", "TABLES", "backends_table", "comparison_table", "db_structure_table",
           "effect_table", "latency_table", "limits_table", "multiget_table", "published_multiget",
           "published_scans", "scan_table"]

PCT = ("p50_us", "p95_us", "p99_us")
PAGE_BACKEND = "ws:// remote flash"   # the page's storage, in the backend column of its rows


def comparison_table(result: AsyncIOResult) -> pd.DataFrame:
    """Per delay and read step, each backend's MB/s ratio to the delay's base (posix by default) with its
    95% interval over turns, half-width (%), resolved, turns and status, and the base's A/A row
    (rxlab.core.turns_plan; computed once per result: AsyncIOResult.comparisons)."""
    return result.comparisons.copy()


def effect_table(result: AsyncIOResult) -> pd.DataFrame:
    """Within each backend and delay, a step's MB/s over its base step (params.EFFECTS): MultiGet at each
    batch size over the Get loop (the gain per key), MultiGet with async_io over without (at the page's
    batch size), the scan with async prefetch over without (the speedup, time without / with). Paired by
    turn like the comparisons (95% interval, resolved to the turns' target, status), with the base
    backend's A/A row (its base step's second run over its first). AsyncIOResult.effects."""
    return result.effects.copy()


def _verdict(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One overlap verdict per group: the same in every run, else 'mixed'."""
    g = rows.groupby(by, sort=False, dropna=False)
    v = g["overlap"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    ev = g["overlap_evidence"].agg(lambda s: s.iloc[0])
    return pd.DataFrame({"overlap": v, "evidence": ev}).reset_index()


def _results(benchmark_filter) -> dict[str, dict[str, float]]:
    """The page's results (data/published/asyncio_results.csv) as {variant: {metric: value}}."""
    r = published.load("asyncio_results")
    r = r[benchmark_filter(r)]
    return {v: dict(zip(g["metric"], pd.to_numeric(g["value"]), strict=True))
            for v, g in r.groupby("variant", sort=False)}


def published_multiget() -> pd.DataFrame:
    """The page's three MultiGet rows (single-file, single-level, multi-level) in multiget_table's form."""
    res = _results(lambda r: r["table"].str.startswith("MultiGet ") & ~r["table"].str.contains("text"))
    return pd.DataFrame([{
        "source": "published", "backend": PAGE_BACKEND, "delay_us": np.nan, "api": f"MultiGet {variant}",
        "batch_size": SEED_BATCH, "threads": SEED_THREADS, "micros_per_key": v["micros/op"],
        "us_per_op": v["rocksdb.db.multiget.micros SUM"] / v["rocksdb.db.multiget.micros COUNT"],
        "p50_us": v["rocksdb.db.multiget.micros P50"], "p95_us": v["rocksdb.db.multiget.micros P95"],
        "p99_us": v["rocksdb.db.multiget.micros P99"], "overlap": "", "n": np.nan,
    } for variant, v in res.items()])


def published_scans() -> pd.DataFrame:
    """The page's two scan rows (async prefetch off, on) in scan_table's form, with its speedup."""
    res = _results(lambda r: r["benchmark"] == "seekrandom")
    return pd.DataFrame([{
        "source": "published", "backend": PAGE_BACKEND, "async_io": a, "seek_nexts": SEED_SCAN_KEYS,
        "threads": SEED_THREADS, "micros_per_scan": res[variant]["micros/op"],
        "mb_per_s": res[variant]["MB/s"], "overlap": "",
        "speedup": res["sync"]["micros/op"] / res[variant]["micros/op"] if a else np.nan,
    } for variant, a in (("sync", False), ("async", True))])


def multiget_table(result: AsyncIOResult) -> pd.DataFrame:
    """Get loop against MultiGet at equal keys per op, per backend, delay and batch size.

    Per key: db_bench's micros/op (threads x wall / keys). Per op (one
    MultiGet of b keys, or b Gets in a loop): the mean latency, and p50, p95,
    p99 measured per MultiGet call. The loop's per-op mean is b x the mean Get
    (readrandom); its per-op percentiles are not measured (the driver times each
    Get, not b of them together), except at b = 1. Then the page's MultiGet rows
    (4 threads, remote flash, batch 8, a DB of several levels).
    """
    f = result.frame
    cols = ["micros_per_op", "us_per_call", *PCT, "qps", "reads_per_key", "cpuPer", "fs.max_inflight",
            "fs.multireads", "fs.multiread_reqs"]
    by = ["backend", "delay_us", "test"]
    mg = f[f["test"].isin([MULTIGET, MULTIGET_ASYNC])]
    med = stats.medians(mg, [*by, "batch_size"], cols, sort=False).merge(
        _verdict(mg, [*by, "batch_size"]), on=[*by, "batch_size"])
    med["reads_per_multiread"] = med["fs.multiread_reqs"] / med["fs.multireads"]
    loop = f[f["test"] == GET_LOOP]
    get = stats.medians(loop, by[:2], cols, sort=False).merge(_verdict(loop, by[:2]), on=by[:2])
    rows = []
    for _, r in med.iterrows():
        g = get[(get["backend"] == r["backend"]) & (get["delay_us"] == r["delay_us"])]
        b = int(r["batch_size"])
        base = {"source": "local", "backend": r["backend"], "delay_us": r["delay_us"], "batch_size": b,
                "threads": result.threads}
        rows.append({**base, "api": KIND[r["test"]], "micros_per_key": r["micros_per_op"],
                     "us_per_op": r["us_per_call"], **{p: r[p] for p in PCT},
                     "reads_per_multiread": r["reads_per_multiread"], "max_inflight": r["fs.max_inflight"],
                     "cpu_us_per_key": r["cpuPer"], "overlap": r["overlap"], "n": r["n"]})
        if len(g) and r["test"] == MULTIGET:
            gg = g.iloc[0]
            rows.append({**base, "api": "Get loop", "micros_per_key": gg["micros_per_op"],
                         "us_per_op": b * gg["us_per_call"], **{p: gg[p] if b == 1 else np.nan for p in PCT},
                         "reads_per_multiread": np.nan, "max_inflight": gg["fs.max_inflight"],
                         "cpu_us_per_key": gg["cpuPer"], "overlap": gg["overlap"], "n": gg["n"]})
    local = pd.DataFrame(rows)
    if not local.empty:
        order = {b: i for i, b in enumerate(result.backends)}
        local = local.sort_values(["delay_us", "backend", "batch_size", "api"], kind="stable",
                                  key=lambda s: s.map(order) if s.name == "backend" else s)
    cols = ["source", "backend", "delay_us", "api", "batch_size", "threads", "micros_per_key", "us_per_op",
            *PCT, "reads_per_multiread", "max_inflight", "cpu_us_per_key", "overlap", "n"]
    return pd.concat([local, published_multiget()], ignore_index=True).reindex(columns=cols)


def scan_table(result: AsyncIOResult) -> pd.DataFrame:
    """Scans with and without async prefetch per backend and delay, the page's two rows beside.

    micros_per_scan is db_bench's micros/op; MB/s the keys and values read per
    second of wall time (medians over turns); async reads, Poll calls and the
    overlap verdict from the counters; speedup = time without / with async_io
    (the page: 2.05), paired by turn (effect_table), with the half-width of its
    95% interval (%) and whether it is resolved (speedup_status).
    """
    f = result.frame
    sc = f[f["test"].isin([SCAN_SYNC, SCAN_ASYNC])]
    cols = ["micros_per_op", "mb_per_s", *PCT, "qps", "cpuPer", "fs.read_async", "fs.polls", "fs.reads",
            "ticker.rocksdb.prefetch.bytes"]
    by = ["backend", "delay_us", "test"]
    med = stats.medians(sc, by, cols, sort=False).merge(_verdict(sc, by), on=by)
    med = med.rename(columns={"micros_per_op": "micros_per_scan", "fs.read_async": "read_async",
                              "fs.polls": "polls", "ticker.rocksdb.prefetch.bytes": "prefetch_bytes"})
    med.insert(0, "source", "local")
    med["async_io"] = med["test"] == SCAN_ASYNC
    med["seek_nexts"] = int(pd.to_numeric(sc["seek_nexts"]).iloc[0]) if len(sc) else np.nan
    med["threads"] = result.threads
    e = effect_table(result)
    e = e[(e["effect"] == ASYNC_SCAN) & (e["config"] != AA)].set_index(["backend", "delay_us"])
    for col, src in (("speedup", "ratio"), ("speedup_half_width", "half_width"), ("speedup_status", "status")):
        med[col] = [e[src].get((b, d), np.nan) if a else np.nan
                    for b, d, a in zip(med["backend"], med["delay_us"], med["async_io"], strict=True)]
    out = pd.concat([med, published_scans()], ignore_index=True)
    keep = ["source", "backend", "delay_us", "async_io", "seek_nexts", "threads", "micros_per_scan",
            "mb_per_s", "speedup", "speedup_half_width", "speedup_status", *PCT, "cpuPer", "read_async", "polls",
            "prefetch_bytes", "overlap", "evidence", "n"]
    return out[[c for c in keep if c in out.columns]]


def latency_table(result: AsyncIOResult, batch_size: int = SEED_BATCH) -> pd.DataFrame:
    """p50, p95, p99 of one MultiGet at the page's batch size per backend and delay, the page's beside."""
    t = multiget_table(result)
    t = t[(t["batch_size"] == batch_size) & t["api"].str.startswith("MultiGet")]
    return t[["source", "backend", "delay_us", "api", "threads", "us_per_op", *PCT, "overlap", "n"]]


def db_structure_table(result: AsyncIOResult) -> pd.DataFrame:
    """Files and bytes per level: the local DB (one SST) and the page's benchmark DB."""
    loc = result.structure.groupby("level").agg(files=("file", "count"), size_bytes=("size_bytes", "sum"))
    loc = loc.reset_index().assign(source="local")
    p = published.load("asyncio_db_structure")

    def nfiles(s):
        m = re.match(r"/(\d+)\.sst - /(\d+)\.sst", s)
        return int(m.group(2)) - int(m.group(1)) + 1 if m else 1

    pub = (p.assign(files=p["files"].map(nfiles)).groupby("level")
           .agg(files=("files", "sum"), size_bytes=("size_bytes", "sum")).reset_index()
           .assign(source="published"))
    out = pd.concat([loc, pub], ignore_index=True)
    out["size_mib"] = out["size_bytes"] / MIB
    return out[["source", "level", "files", "size_bytes", "size_mib"]]


def limits_table(result: AsyncIOResult) -> pd.DataFrame:
    """The page's results and what this build measures for each (or why it cannot)."""
    t = multiget_table(result)
    loc = t[t["source"] == "local"]
    a = loc[loc["api"] == "MultiGet async_io"]
    m8 = loc[(loc["api"] == "MultiGet") & (loc["batch_size"] == SEED_BATCH)]
    sc = scan_table(result)
    sca = sc[(sc["source"] == "local") & sc["async_io"].astype(bool)]
    pubm = t[t["source"] == "published"].set_index("api")["micros_per_key"]
    pubs = sc[sc["source"] == "published"].set_index("async_io")["micros_per_scan"]

    def overlapped(d: pd.DataFrame) -> str:
        return f"{int((d['overlap'] == 'yes').sum())} of {len(d)} configurations"

    batches = ", ".join(map(str, sorted(loc["batch_size"].dropna().astype(int).unique())))
    rows = [
        ("MultiGet single-file", pubm.get("MultiGet single-file"),
         f"measured: MultiGet on a one-SST DB, batch sizes {batches}",
         f"reads overlapped (MultiRead, >1 in flight) in {overlapped(m8)} at batch {SEED_BATCH}"),
        ("MultiGet single-level", pubm.get("MultiGet single-level"),
         "no local counterpart: async reads across files need USE_COROUTINES (folly), "
         "absent from these builds",
         f"async_io=true MultiGet run anyway: same path as without it; overlap only from MultiRead "
         f"({overlapped(a)})"),
        ("MultiGet multi-level", pubm.get("MultiGet multi-level"),
         "no local counterpart: same reason (optimize_multiget_for_io acts only with coroutines)",
         "the local DB has one file on one level, so there is nothing to read in parallel across levels"),
        ("Scan without async", pubs.get(False), "measured: seekrandom async_io=false, block_align off", ""),
        ("Scan with async", pubs.get(True), "measured: seekrandom async_io=true (ReadAsync + Poll)",
         f"ReadAsync overlapped in {overlapped(sca)}"),
    ]
    return pd.DataFrame(rows, columns=["page result", "page micros/op", "here", "counters say"])


def backends_table(result: AsyncIOResult) -> pd.DataFrame:
    """What each backend of the study is: its file system, how it serves MultiRead and ReadAsync."""
    return reference_configurations(result.backends)


TABLES = {
    "comparisons": comparison_table,
    "effects": effect_table,
    "backends": backends_table,
    "db_structure": db_structure_table,
    "multiget": multiget_table,
    "latency": latency_table,
    "scan": scan_table,
    "limits": limits_table,
}


def by_backend_order(t: pd.DataFrame, backends: Sequence[str]) -> pd.DataFrame:
    """Rows sorted by delay, then backend in the given order (stable otherwise)."""
    order = {b: i for i, b in enumerate(backends)}
    t = t.assign(_o=t["backend"].map(order))
    return t.sort_values(["delay_us", "_o"], kind="stable").drop(columns="_o")
