"""The readahead study's columns beside the seeds' ones, and the page-cache hit ratio, defined once.

    cache.hit = 1 - own_read_bytes / fs.read_bytes

``fs.read_bytes`` is what RocksDB read through the file system in the step
(rxlab's engine counters, every thread: compaction's reads), and
``own_read_bytes`` what the same process made the block layer read
(/proc/self/io read_bytes: page-cache misses, plus what the kernel read ahead
for it, including the readahead(2) calls RocksDB issues for compaction with
buffered IO). It is the share of what compaction read that was in memory
before the step went for it (files flushed or written moments earlier, or
kept from earlier reads): 1 means nothing came from the device, 0 that all
of it did, whether through RocksDB's own readahead (whose 8 KiB reads then
find the pages it just fetched) or read by read. Below 0 the device
delivered more than RocksDB consumed (prefetched data evicted or never
used). A DB that fits in the page cache keeps it near 1, and then no
readahead setting can matter: that is why the step runs under a memory
limit, where it should be low. Both counters are the process's own, so
other processes on the machine cannot move it. The seeds' columns (qps,
iops, reqsz, wmbps) and the read MB/s (rmbps, own_rmbps) come from
rxlab.core.metrics.
"""
from __future__ import annotations

import pandas as pd

from rxlab.core import metrics
from rxlab.core.metrics import column
from rxlab.studies.compaction_readahead.params import MIB

READ_MBPS = "rmbps"   # device read MiB/s (rxlab.core.metrics)
DERIVED = ("qps", "iops", "reqsz", READ_MBPS, "own_rmbps", "fs_rmbps", "cache.hit", "compact_rmbps",
           "stall.pct", "wmbps", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat")


def derived(df: pd.DataFrame) -> pd.DataFrame:
    """This study's columns beside rxlab.core.metrics.seed_columns (same index).

    rmbps (device-wide, iostat's rMB/s) and own_rmbps (the process's own
    storage reads) come from rxlab.core.metrics. cache.hit: the page-cache hit
    ratio (module docstring). fs_rmbps: what RocksDB read through the file
    system per second. compact_rmbps: RocksDB's compaction read MiB/s (ticker
    rocksdb.compact.read.bytes). stall.pct: write-stall time (ticker
    rocksdb.stall.micros) as % of the step's wall time: how much overwrite
    waited for compaction.
    """
    seed = metrics.seed_columns(df)
    wall = column(df, "wall_s").where(lambda w: w > 0)
    out = pd.DataFrame(index=df.index)
    for c in ("qps", "iops", "reqsz", "wmbps", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat"):
        out[c] = seed[c]
    out[READ_MBPS] = seed["rmbps"]
    out["own_rmbps"] = seed["own_rmbps"]
    fs = column(df, "fs.read_bytes")
    out["cache.hit"] = 1.0 - column(df, "own_read_bytes") / fs.where(fs > 0)
    out["compact_rmbps"] = column(df, "ticker.rocksdb.compact.read.bytes").fillna(0) / MIB / wall
    out["stall.pct"] = column(df, "ticker.rocksdb.stall.micros").fillna(0) / 1e6 / wall * 100
    out["fs_rmbps"] = fs / MIB / wall
    return out
