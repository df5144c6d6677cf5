"""The seeds' table columns, defined once.

Every producer of results (the C++ driver, real fio, real db_bench) records
the same raw counters for a step; every table, figure and model derives the
seeds' columns from them here and nowhere else. Recomputing them elsewhere is
how two figures end up disagreeing about what "iops" meant.

Raw columns of a step row (the contract with the drivers):

    name, ops, wall_s, lat_mean_us, cpu_user_s, cpu_sys_s,
    disk_reads, disk_read_sectors, disk_read_ticks_ms,
    disk_writes, disk_write_sectors, disk_write_ticks_ms

``ops`` is operations for a database step and reads for fio. ``cpu_*`` is
process CPU (getrusage deltas). ``disk_*`` are /proc/diskstats deltas of the
device holding the data, over the same window as ``wall_s``.

Derived columns (the seeds' names):

    qps     ops / wall_s
    iops    disk_reads / wall_s                    (the device, not the program)
    reqsz   disk_read_sectors * 512 / disk_reads / 1024   (KB per device read)
    usPer, syPer, cpuPer   CPU microseconds per op (user, system, sum)
    rx.lat  lat_mean_us                            (as the program measured it)
    io.lat  disk_read_ticks_ms * 1000 / disk_reads (device read latency, us)
    wmbps   disk_write_sectors * 512 / 2**20 / wall_s
    mbps    bytes / 2**20 / wall_s                 (db_bench's MB/s: key+value bytes the op moved)
    micros_per_op  threads * wall_s * 1e6 / ops    (db_bench's micros/op; per key for MultiGet)
    rmbps   disk_read_sectors * 512 / 2**20 / wall_s   (iostat's rMB/s: the device, every process)
    own_rmbps  own_read_bytes / 2**20 / wall_s     (this process's storage reads, /proc/self/io)
    runqPer worker_run_delay_s * 1e6 / ops         (us per op the workers waited, runnable, for a
                                                    CPU: the scheduler's run_delay; rxlab rows only)
    sleepsPer  vcsw / ops                          (voluntary context switches per op)
    unclockedPer  (worker_cpu_user_s + worker_cpu_sys_s) * 1e6 / ops - perf.task_clock_ns / 1e3 / ops
                                                   (us per op the scheduler charged the workers that
                                                    perf's task clock did not count; rxlab rows with
                                                    perf_events=1)
    awayShare  1 - calls_on_irq_cpu / calls_counted  (share of the workers' calls, fio's IOs, that
                                                    returned on a CPU other than the one that took
                                                    the disk's interrupts in that window: reads
                                                    woken by an inter-processor wake-up; rxlab
                                                    rows only)
    stealPer  steal_s * 1e6 / ops                  (us per op the hypervisor kept this VM's runnable
                                                    vCPUs off a physical CPU, every CPU of the VM:
                                                    /proc/stat's steal over the step, system_cpu.steal
                                                    from rxlab's driver, sys_steal_s around real fio
                                                    and db_bench)

and, against a fio baseline row measured the same way:

    io.eff  iops / fio iops
    us.inc  usPer - fio usPer
    cpu.inc cpuPer - fio cpuPer

A zero denominator gives NaN, never inf or an exception: a step with no
device reads (everything in the block cache) has no io.lat, and saying so is
the honest answer.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from rxlab.core import engines

SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size

RAW_COLUMNS = (
    "name", "ops", "wall_s", "lat_mean_us", "cpu_user_s", "cpu_sys_s",
    "disk_reads", "disk_read_sectors", "disk_read_ticks_ms",
    "disk_writes", "disk_write_sectors", "disk_write_ticks_ms",
)

# Column order of the seeds' tables ("test" is the step name).
SEED_COLUMNS = ("qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "test")
# Extra derived columns that the seeds use in prose but not in the main table.
EXTRA_COLUMNS = ("wmbps", "mbps", "micros_per_op", "rmbps", "own_rmbps", "runqPer", "sleepsPer",
                 "unclockedPer", "awayShare", "stealPer")
EFFICIENCY_COLUMNS = ("io.eff", "us.inc", "cpu.inc")

# Latency percentiles every producer reports, and their column names. The
# seeds quote p50..p99.99; db_bench prints P50 P75 P99 P99.9 P99.99 and fio
# prints whatever --percentile_list asks for.
PERCENTILES = (50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 99.99)


def percentile_column(p: float) -> str:
    """'p50_us', 'p99.9_us', 'p99.99_us': one spelling for every producer."""
    return f"p{p:g}_us"


PERCENTILE_COLUMNS = (*(percentile_column(p) for p in PERCENTILES), "max_us")


def backend_label(uri) -> str | None:
    """The one label of an engine URI, whatever the entry point gave it.

    The CLI and db_bench's --fs_uri spell a backend `rxlab://posix`, Python
    `posix`: both are `posix` here, so a groupby on the catalog's `backend`
    keeps one engine together. Options stay as written
    (`io_uring?registered_files=1`); RocksDB's own file system is `default`
    or `default?io_uring=1`. None (or NaN) for a run without a backend.
    """
    if uri is None or (isinstance(uri, float) and np.isnan(uri)):
        return None
    s = str(uri).strip()
    if not s:
        return None
    try:
        return engines.label(s)
    except ValueError:
        return s  # not a backend string: kept as written rather than lost


def _frame(rows) -> pd.DataFrame:
    """Accept a DataFrame, one row (dict or Series) or a list of dicts."""
    if isinstance(rows, pd.DataFrame):
        return rows
    if isinstance(rows, pd.Series):
        return rows.to_frame().T.infer_objects()
    if isinstance(rows, Mapping):
        return pd.DataFrame([dict(rows)])
    return pd.DataFrame(list(rows))


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """A raw column as float; a column the producer did not record is NaN."""
    if name not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype="float64")
    return pd.to_numeric(df[name], errors="coerce").astype("float64")


_col = column


def _div(num: pd.Series, den: pd.Series) -> pd.Series:
    return num / den.where(den != 0)


def seed_columns(rows) -> pd.DataFrame:
    """The seeds' columns for each step row (same index as the input).

    Columns: SEED_COLUMNS then EXTRA_COLUMNS. Input may be a DataFrame of
    step rows, one row as a dict or Series, or a list of dicts.
    """
    df = _frame(rows)
    ops, wall = _col(df, "ops"), _col(df, "wall_s")
    reads = _col(df, "disk_reads")
    user_us = _col(df, "cpu_user_s") * 1e6
    sys_us = _col(df, "cpu_sys_s") * 1e6
    out = pd.DataFrame(index=df.index)
    out["qps"] = _div(ops, wall)
    out["iops"] = _div(reads, wall)
    out["reqsz"] = _div(_col(df, "disk_read_sectors") * SECTOR_BYTES, reads) / 1024
    out["usPer"] = _div(user_us, ops)
    out["syPer"] = _div(sys_us, ops)
    out["cpuPer"] = _div(user_us + sys_us, ops)
    out["rx.lat"] = _col(df, "lat_mean_us")
    out["io.lat"] = _div(_col(df, "disk_read_ticks_ms") * 1000, reads)
    out["test"] = df["name"].astype(str) if "name" in df.columns else ""
    out["wmbps"] = _div(_col(df, "disk_write_sectors") * SECTOR_BYTES / 2**20, wall)
    out["mbps"] = _div(_col(df, "bytes") / 2**20, wall)
    out["micros_per_op"] = _div(_col(df, "threads").fillna(1.0) * wall * 1e6, ops)
    out["rmbps"] = _div(_col(df, "disk_read_sectors") * SECTOR_BYTES / 2**20, wall)
    out["own_rmbps"] = _div(_col(df, "own_read_bytes") / 2**20, wall)
    out["runqPer"] = _div(_col(df, "worker_run_delay_s") * 1e6, ops)
    # Voluntary context switches per op: how often a query's thread slept. A blocking read whose
    # completion arrives before its reader has scheduled out does not sleep, and this kernel
    # (no CONFIG_IRQ_TIME_ACCOUNTING) then charges the interrupt to the reader: on these VMs the
    # share moves between 0.55 and 0.95 per read from run to run, and CPU per op and QPS with it.
    out["sleepsPer"] = _div(_col(df, "vcsw"), ops)
    # getrusage and schedstat count a thread's time from the scheduler's clock, perf's task clock
    # from its own switch-in and switch-out. Measured here (readrandom, one reader on CPU 1, the
    # same 3 s window of db_bench, rxlab and a plain C++ reader): 8-10 us more per sleep by the
    # scheduler's count, about a quarter of a query's CPU, the same in every tool. So a profile's
    # sampled CPU falls that far below getrusage. A reader woken on an idle CPU is charged from its
    # wake-up inside the completion interrupt on (the wake-up skips the run-queue clock update),
    # which is the likely cause: with two readers on one CPU, so that it is idle less often, it
    # falls to 3.5-4 us per sleep.
    out["unclockedPer"] = _div((_col(df, "worker_cpu_user_s") + _col(df, "worker_cpu_sys_s")) * 1e6
                               - _col(df, "perf.task_clock_ns") / 1e3, ops)
    # Where the readers were woken (rxlab.studies.perf_model.placement): on these VMs a blocking read whose reader
    # sleeps away from the interrupt's CPU is 18-36 us slower, and that wake-up is in no CPU,
    # run-queue or disk counter. Counted per call when it returns (sched_getcpu).
    out["awayShare"] = 1.0 - _div(_col(df, "calls_on_irq_cpu"), _col(df, "calls_counted"))
    # Time the host kept a runnable vCPU waiting (contention on the host, and the wake-up of a
    # halted vCPU). On these VMs a 5 s step's steal moves between 0 and 22 us per query, and the
    # query's CPU and the disk's latency rise with it (rxlab.core.model's steal_factor).
    out["stealPer"] = _div(_col(df, "system_cpu.steal").fillna(_col(df, "sys_steal_s")) * 1e6, ops)
    return out


def _baseline_values(baseline) -> tuple[float, float, float]:
    """(iops, usPer, cpuPer) of a baseline given raw or already derived."""
    if isinstance(baseline, pd.DataFrame):
        if len(baseline) != 1:
            raise ValueError(f"the fio baseline must be one row, got {len(baseline)}: "
                             "pick the total row (name == 'total') or one job")
        baseline = baseline.iloc[0]
    row = dict(baseline)
    if all(k in row for k in ("iops", "usPer", "cpuPer")) and "disk_reads" not in row:
        derived = row
    else:
        derived = seed_columns(row).iloc[0].to_dict()
    vals = tuple(float(derived[k]) for k in ("iops", "usPer", "cpuPer"))
    return vals  # type: ignore[return-value]


def efficiency(rows, baseline_row) -> pd.DataFrame:
    """Seed columns plus io.eff, us.inc and cpu.inc against a fio baseline.

    ``baseline_row`` is a step row of raw columns (the fio step measured with
    the same accounting), or a row that already has iops/usPer/cpuPer (for
    published numbers transcribed from a seed). The baseline should be
    measured at the same concurrency as the rows: the seed compares 1 client
    with fio numjobs=1 and 6 with 6.
    """
    df = _frame(rows)
    out = df if {"iops", "usPer", "cpuPer"} <= set(df.columns) and "disk_reads" not in df.columns \
        else seed_columns(df)
    out = out.copy()
    b_iops, b_us, b_cpu = _baseline_values(baseline_row)
    out["io.eff"] = out["iops"] / b_iops if b_iops else np.nan
    out["us.inc"] = out["usPer"] - b_us
    out["cpu.inc"] = out["cpuPer"] - b_cpu
    return out


def histogram_percentiles(buckets, ps=PERCENTILES) -> dict[str, float]:
    """Percentile columns from log-linear buckets [(lower_us, count), ...].

    The value is interpolated inside its bucket, as the C++ histogram does, so
    a percentile computed here and one computed in C++ agree.
    """
    b = sorted((float(lo), int(c)) for lo, c in buckets if c)
    n = sum(c for _, c in b)
    out = {}
    for p in ps:
        if n == 0:
            out[percentile_column(p)] = float("nan")
            continue
        target, seen = p / 100.0 * n, 0
        for i, (lo, c) in enumerate(b):
            if seen + c >= target:
                hi = b[i + 1][0] if i + 1 < len(b) and b[i + 1][0] < lo * 1.07 else lo * (1 + 1 / 32)
                out[percentile_column(p)] = lo + (target - seen) / c * (hi - lo)
                break
            seen += c
    return out
