"""Column names as a paper's table headers: words with their units, in one place.

rxlab's tables keep the seeds' short column names (qps, usPer, rx.lat...) so
that they line up with the published tables; a reader of a paper wants
"QPS" and "CPU per op (us)". `header(name)` gives the words: the seeds'
columns and the common ones from `HEADERS`, any other name from its unit
suffix (`_us`, `_pct`, `_kb`...) and its words (`rx_minus_io_us` ->
"Rx minus io (us)").
"""
from __future__ import annotations

import re

__all__ = ["HEADERS", "UNIT_SUFFIXES", "header"]

# The seeds' columns (DESIGN.md's metrics table) and the names most tables share.
HEADERS = {
    "qps": "QPS",
    "iops": "IOPS",
    "reqsz": "Request size (KB)",
    "usPer": "User CPU per op (us)",
    "syPer": "System CPU per op (us)",
    "cpuPer": "CPU per op (us)",
    "rx.lat": "Op latency (us)",
    "io.lat": "Device latency (us)",
    "io.eff": "IO efficiency",
    "us.inc": "User CPU over fio (us)",
    "cpu.inc": "CPU over fio (us)",
    "runqPer": "Run-queue wait per op (us)",
    "awayShare": "Time away share",
    "lat.us": "Latency (us)",
    "us_per_op": "Time per op (us)",
    "mb_per_s": "MB/s",
    "stall.pct": "Stall (%)",
    "cache.hit": "Cache hit ratio",
    "test": "Benchmark",
    "backend": "Backend",
    "threads": "Threads",
    "numjobs": "Jobs",
    "rep": "Repetition",
    "config": "Configuration",
    "build": "Build",
    "toolchain": "Toolchain",
    "source": "Source",
    "note": "Note",
    "block_align": "Block aligned",
    "bloom": "Bloom filter",
    "async_io": "Async IO",
    "batch_size": "Batch size",
    "seek_nexts": "Nexts per seek",
    "max_sectors_kb": "Max request (KB)",
    "max_hw_sectors_kb": "Max hardware request (KB)",
    "readahead_kb": "Readahead (KB)",
    "read_ahead_kb": "Readahead (KB)",
    "delay_us": "Added delay (us)",
    "lo": "Low",
    "hi": "High",
    "rel": "Ratio",
    "sd_pct": "SD (%)",
    "cv_pct": "CV (%)",
}

# A name's last part and the unit it stands for (checked longest first).
UNIT_SUFFIXES = {
    "us_per_op": "us per op",
    "mb_per_s": "MB/s",
    "per_s": "per s",
    "us": "us",
    "ms": "ms",
    "s": "s",
    "ns": "ns",
    "pct": "%",
    "pp": "percentage points",
    "kb": "KB",
    "kib": "KiB",
    "mb": "MB",
    "mib": "MiB",
    "gib": "GiB",
    "bytes": "bytes",
    "mbps": "MB/s",
}
# Words that stay as written (abbreviations a reader knows in capitals).
_CAPS = {"qps": "QPS", "iops": "IOPS", "io": "IO", "cpu": "CPU", "fio": "fio", "db": "DB", "lat": "latency",
         "p50": "p50", "p95": "p95", "p99": "p99", "sst": "SST", "l0": "L0", "irq": "IRQ", "irqs": "IRQs",
         "rx": "rx", "sys": "system", "eff": "efficiency", "pred": "predicted", "meas": "measured",
         "err": "error", "max": "max", "min": "min", "abs": "absolute", "rocksdb": "RocksDB",
         "reqsz": "request size", "libc": "libc", "cgroup": "cgroup", "pct": "%"}
# Names written in lower case even at the start of a header.
_LOWER = {"fio", "p50", "p95", "p99", "rx", "libc", "cgroup"}
# A name rxlab writes: lower-case words joined by _ or . (camelCase allowed); others (a build key, a
# published column such as MultiRead) are shown as written.
_NAME = re.compile(r"[a-z][a-z0-9]*(?:[_.]?[A-Za-z0-9]+)*")


def header(name: object) -> str:
    """The words (and unit) a paper's table shows for column `name`."""
    s = str(name)
    if s in HEADERS:
        return HEADERS[s]
    if not _NAME.fullmatch(s):
        return s
    parts = [p for p in re.split(r"[_.]", s) if p]
    unit = None
    for n in (3, 2, 1):
        tail = "_".join(parts[-n:]).lower() if len(parts) > n else None
        if tail in UNIT_SUFFIXES:
            unit, parts = UNIT_SUFFIXES[tail], parts[:-n]
            break
    if len(parts) == 1 and parts[0] in HEADERS:
        words = HEADERS[parts[0]]
    else:
        # camelCase parts split too (qpsOn -> qps on)
        split = [w for p in parts for w in re.sub(r"(?<=[a-z])(?=[A-Z])", " ", p).split()]
        words = " ".join(_CAPS.get(w.lower(), w) for w in split)
        if split and split[0].lower() not in _LOWER:
            words = words[:1].upper() + words[1:]
    return f"{words} ({unit})" if unit else words
