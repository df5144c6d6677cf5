"""The in-process driver: a run spec, its steps, and one row per step.

A run opens one RocksDB database on one backend and executes a sequence of
steps. Each step is a db_bench benchmark executed by C++ threads
(`rxlab._core.run_step`, GIL released) with the system-side counters taken
around it here: process CPU (getrusage), system CPU (/proc/stat), the DB
device's /proc/diskstats, the backend's counters and RocksDB's Statistics.
Rows use the raw column names of `rxlab.core.metrics`, which derives the seeds'
columns from them.

Helper-script job names (overwritesome, flush_mt_l0, fwdrange, revrange,
fwdrangewhilewriting, revrangewhilewriting, and the first seed's
readrandom2/readrandom3) are expansions into db_bench steps, not benchmarks:
`expand()` turns them into steps and records which job each came from.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

import rxlab
from rxlab.bench import irq as irqs
from rxlab.bench.sampler import Sampler
from rxlab.core import sysinfo
from rxlab.core.builds import active_build
from rxlab.core.cpus import CPUS_ALLOWED_POLICIES
from rxlab.core.units import size_words

# A process measured in turns (rxlab.bench.timed, rxlab.bench.ab) imports this module to run its steps, and
# every session starts such processes afresh: what only storing a run or reading the published tables needs
# (pandas and pyarrow through rxlab.core.store and rxlab.core.published, tqdm's bar) is imported where it is
# used, not here. tests/bench/test_driver_imports.py keeps it so.

# db_bench's benchmarks that the C++ driver runs (checked again there).
BENCHMARKS = ("fillseq", "fillrandom", "overwrite", "readrandom", "readseq", "readreverse",
              "seekrandom", "multireadrandom", "readwhilewriting", "seekrandomwhilewriting",
              "mixgraph", "flush", "compact", "compact0", "waitforcompaction")

# The benchmark-helper scripts' jobs: sequences of benchmarks with flags.
JOBS = {
    "overwritesome": [{"name": "overwrite", "ops_fraction": 0.1}],
    "flush_mt_l0": [{"name": "flush"}, {"name": "waitforcompaction"}, {"name": "compact0"},
                    {"name": "waitforcompaction"}],
    "fwdrange": [{"name": "seekrandom", "reverse_iterator": False}],
    "revrange": [{"name": "seekrandom", "reverse_iterator": True}],
    "fwdrangewhilewriting": [{"name": "seekrandomwhilewriting", "reverse_iterator": False}],
    "revrangewhilewriting": [{"name": "seekrandomwhilewriting", "reverse_iterator": True}],
    # The first seed: readrandom on a one-level tree with and without bloom filters.
    "readrandom2": [{"name": "readrandom"}],
    "readrandom3": [{"reopen": {"bloom_bits": 0}}, {"name": "readrandom"}],
}

SEQUENCES = {
    # The IO-efficiency seed's sequence.
    "io_efficiency": ["fillseq", "revrange", "overwritesome", "flush_mt_l0", "readrandom", "compact",
                      "readrandom2", "readrandom3"],
    # The lab report's.
    "lab_report": ["fillseq", "fillrandom", "readrandom", "readseq", "mixgraph"],
    # The async-IO wiki page's.
    "async_io": ["multireadrandom", "seekrandom"],
}

# Step options that the C++ StepSpec takes (db_bench's flag names).
STEP_FIELDS = ("num", "ops", "duration", "threads", "key_size", "value_size", "compression_ratio",
               "batch_size", "seek_nexts", "reverse_iterator", "async_io", "multiread_batched",
               "optimize_multiget_for_io", "multiread_stride", "verify_checksums", "readahead_size",
               "sync", "disable_wal", "write_rate_limit", "perf_level", "perf_events", "cpus_split", "seed",
               "mix_get_ratio", "mix_put_ratio", "mix_seek_ratio", "keyrange_dist_a", "keyrange_dist_b",
               "keyrange_dist_c", "keyrange_dist_d", "keyrange_num", "value_k", "value_sigma", "iter_k",
               "iter_sigma", "sine_a", "sine_b", "sine_c", "sine_d", "sine_mix_rate",
               "sine_mix_rate_interval_milliseconds", "mix_max_value_size", "mix_max_scan_len",
               "progress_file")

# The lab report whose ZippyDB mixgraph command data/published/flags.csv holds.
LAB_REPORT = "lab-report-disaggregated-rocksdb-backends.txt"
# Keys per MultiGet of the parity matrix's multireadrandom row and `rxlab ab`'s: enough to keep a batch of
# reads in flight (db_bench's default batch_size of 1 makes the row readrandom through another call).
MULTIGET_BATCH = 16


def zippydb_options() -> dict:
    """The mixgraph options of the lab report's ZippyDB command (data/published/flags.csv), those a
    step takes. Its key_size 48, num, reads and 256 MiB cache are not applied: the step reads the DB
    its run loaded (16-byte keys) for the run's duration."""
    from rxlab.core import published  # noqa: PLC0415 - pandas: see the imports

    f = published.load("flags")
    f = f[(f["source"] == LAB_REPORT) & (f["table"] == "5.2.2 ZippyDB mixgraph command")]
    skip = {"key_size", "num", "reads"}
    return {r.flag: float(r.value) if "." in str(r.value) or "e" in str(r.value).lower() else int(r.value)
            for r in f.itertuples() if r.flag in STEP_FIELDS and r.flag not in skip}

# Steps that write nothing: the only ones a read-only DB can run.
READ_ONLY_STEPS = ("readrandom", "readseq", "readreverse", "seekrandom", "multireadrandom")
READ_STEPS = ("readrandom", "readseq", "readreverse", "seekrandom", "multireadrandom",
              "readwhilewriting", "seekrandomwhilewriting", "mixgraph")
FILL_STEPS = ("fillseq", "fillrandom", "overwrite")
# Steps that end at the DB's last key whatever their duration (one pass of a scan).
PASS_STEPS = ("readseq", "readreverse")


@dataclass
class RunSpec:
    """What to run. Defaults follow the seeds: 8 KiB blocks, block_align, no
    compression, O_DIRECT reads and flush/compaction, a small block cache."""

    db: str
    name: str = "run"
    backend: str = "posix"
    steps: list = field(default_factory=lambda: ["fillseq", "flush", "readrandom"])
    num: int = 1_000_000
    key_size: int = 16
    value_size: int = 400
    threads: int = 1
    duration: float = 0.0          # seconds per read step (0: `reads` operations)
    reads: int = -1                # operations per read step and thread (-1: num)
    block_size: int = 8192
    block_align: bool = True
    compression: str = "none"
    cache_size: int = 8 << 20
    bloom_bits: int = 10
    use_direct_reads: bool = True
    use_direct_io_for_flush_and_compaction: bool = True
    write_buffer_size: int = 64 << 20
    target_file_size_base: int = 64 << 20
    max_bytes_for_level_base: int = 256 << 20
    compaction_readahead_size: int | None = None
    options: str = ""              # more RocksDB options (RocksDB's syntax); these win
    use_existing_db: bool = False
    # db_bench's --readonly: RocksDB's OpenForReadOnly, which takes no lock, so other
    # processes (another rxlab, db_bench --readonly) can read the same DB at once.
    readonly: bool = False
    perf_level: int = 1            # 2: counts; 3: waits; 4: timers; 5: timers and CPU timers (cost CPU)
    # perf_event counters per reader thread (task-clock, context switches,
    # migrations, page faults; cycles and instructions where there is a PMU).
    # Off by default: an enabled task event adds work to every context switch
    # of its thread: microseconds of CPU per readrandom query (`rxlab selfcheck
    # driver` measures it), which would be charged to RocksDB. getrusage already
    # gives CPU, context switches and page faults.
    perf_events: bool = False
    # fio's cpus_allowed_policy for the reader threads: "shared" (the
    # scheduler places them, as db_bench does) or "split" (thread i pinned to
    # the i-th allowed CPU). Unpinned, this VM keeps two readers on the vCPU
    # that takes the disk's interrupt, each waiting for the other (runqPer).
    cpus_allowed_policy: str = "shared"
    statistics: bool = True
    seek_nexts: int = 10
    batch_size: int = 1
    async_io: bool = False
    multiread_batched: bool = False
    write_rate_limit: int = 2 << 20  # bytes/s of the writer in *whilewriting
    seed: int = 0
    step_options: dict = field(default_factory=dict)  # any STEP_FIELDS for every step
    scale: str | None = None
    build: str | None = None       # the RocksDB build (rxlab builds) the run must use; None: the loaded one

    @classmethod
    def from_dict(cls, d: Mapping) -> RunSpec:
        names = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - names)
        if bad:
            raise ValueError(f"unknown run spec key {bad[0]!r}: allowed are {', '.join(sorted(names))}")
        return cls(**d)

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> RunSpec:

        with open(path) as f:
            return cls.from_dict(yaml.safe_load(f) or {})

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def rocksdb_options(spec: RunSpec, bloom_bits: int | None = None) -> str:
    """The RocksDB option string of a spec (RocksDB parses it)."""
    bits = spec.bloom_bits if bloom_bits is None else bloom_bits
    table = [f"block_size={spec.block_size}", f"block_align={str(spec.block_align).lower()}",
             f"block_cache={spec.cache_size}" if spec.cache_size > 0 else "no_block_cache=true"]
    if bits > 0:
        table.append(f"filter_policy=bloomfilter:{bits}:false")
    # RocksDB replaces the whole table factory when the string names it twice, so the spec's
    # options for it are merged into this one (theirs win) instead of appended after it.
    extra = split_options(spec.options)
    mine = dict(split_options(";".join(table)))
    for k, v in split_options(extra.pop("block_based_table_factory", "").strip().removeprefix("{")
                              .removesuffix("}")).items():
        mine[k] = v
    table = [f"{k}={v}" for k, v in mine.items()]
    comp = {"none": "kNoCompression", "snappy": "kSnappyCompression", "lz4": "kLZ4Compression",
            "zstd": "kZSTD", "zlib": "kZlibCompression"}[spec.compression]
    opts = [f"compression={comp}", f"use_direct_reads={str(spec.use_direct_reads).lower()}",
            "use_direct_io_for_flush_and_compaction="
            f"{str(spec.use_direct_io_for_flush_and_compaction).lower()}",
            f"write_buffer_size={spec.write_buffer_size}",
            f"target_file_size_base={spec.target_file_size_base}",
            f"max_bytes_for_level_base={spec.max_bytes_for_level_base}",
            "block_based_table_factory={" + ";".join(table) + "}"]
    if spec.compaction_readahead_size is not None:
        opts.append(f"compaction_readahead_size={spec.compaction_readahead_size}")
    opts += [f"{k}={v}" for k, v in extra.items()]
    return ";".join(opts)


def split_options(text: str) -> dict[str, str]:
    """A RocksDB option string as {name: value}, a braced value ({...}) kept whole; later names win.

    Only the top level is split: RocksDB itself parses the values. An unbalanced
    brace raises ValueError naming the string.
    """
    out: dict[str, str] = {}
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(text or ""):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                break
        elif ch == ";" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"options={text!r}: unbalanced braces")
    parts.append((text or "")[start:])
    for raw in parts:
        part = raw.strip()
        if not part:
            continue
        k, eq, v = part.partition("=")
        if not eq:
            raise ValueError(f"options: {part!r} is not name=value")
        out[k.strip()] = v.strip()
    return out


def expand(steps: Iterable) -> list[dict]:
    """Sequence names, job names and benchmark names -> db_bench steps."""
    out: list[dict] = []
    for s in steps:
        if isinstance(s, str) and s in SEQUENCES:
            out.extend(expand(SEQUENCES[s]))
            continue
        d = {"name": s} if isinstance(s, str) else dict(s)
        if "reopen" in d:
            out.append(d)
            continue
        name = d.get("name")
        if name in JOBS:
            for job_step in JOBS[name]:
                sub = {**job_step, **{k: v for k, v in d.items() if k != "name"}}
                sub.setdefault("label", name)
                sub["job"] = name
                out.append(sub)
        elif name in BENCHMARKS:
            d.setdefault("label", name)
            out.append(d)
        else:
            allowed = ", ".join([*BENCHMARKS, *JOBS, *SEQUENCES])
            raise ValueError(f"unknown step {name!r}: allowed are {allowed}")
    return out


def validate(spec: RunSpec) -> None:
    """Reject bad specs with one line, before anything is written."""
    if spec.build is not None:

        loaded = active_build().name
        if spec.build != loaded:
            raise ValueError(f"build={spec.build!r}: this process runs RocksDB build {loaded!r}; start it "
                             f"with RXLAB_BUILD={spec.build} (`rxlab build-module {spec.build}` first)")
    if spec.num < 1:
        raise ValueError(f"num={spec.num}: must be at least 1")

    if spec.cpus_allowed_policy not in CPUS_ALLOWED_POLICIES:
        raise ValueError(f"cpus_allowed_policy={spec.cpus_allowed_policy!r}: allowed are "
                         f"{', '.join(CPUS_ALLOWED_POLICIES)}")
    if spec.threads < 1 or spec.threads > 1024:
        raise ValueError(f"threads={spec.threads}: must be 1..1024")
    if spec.key_size < 8:
        raise ValueError(f"key_size={spec.key_size}: must be at least 8 (db_bench's key layout)")
    if spec.value_size < 1:
        raise ValueError(f"value_size={spec.value_size}: must be at least 1")
    if spec.duration < 0:
        raise ValueError(f"duration={spec.duration}: must be >= 0 seconds")
    if spec.block_size < 512 or spec.block_size & (spec.block_size - 1):
        raise ValueError(f"block_size={spec.block_size}: must be a power of two >= 512")
    if spec.compression not in ("none", "snappy", "lz4", "zstd", "zlib"):
        raise ValueError(f"compression={spec.compression!r}: allowed are none, snappy, lz4, zstd, zlib")
    if spec.block_align and spec.compression != "none":
        raise ValueError(f"block_align with compression={spec.compression}: block_align needs "
                         "compression none")
    if spec.cache_size < 0:
        raise ValueError(f"cache_size={spec.cache_size}: must be >= 0")
    if not 1 <= spec.perf_level <= 6:
        raise ValueError(f"perf_level={spec.perf_level}: must be 1..6 (RocksDB's PerfLevel)")
    if spec.batch_size < 1:
        raise ValueError(f"batch_size={spec.batch_size}: must be at least 1")
    if spec.seek_nexts < 0:
        raise ValueError(f"seek_nexts={spec.seek_nexts}: must be >= 0")
    if spec.scale not in (None, "smoke", "small", "full"):
        raise ValueError(f"scale={spec.scale!r}: allowed are smoke, small, full")
    bad = sorted(set(spec.step_options) - set(STEP_FIELDS))
    if bad:
        raise ValueError(f"unknown step option {bad[0]!r}: allowed are {', '.join(STEP_FIELDS)}")
    steps = expand(spec.steps)
    if spec.backend == "default" or spec.backend.startswith("default?"):
        # checked here as the C++ side does at open, which is after the run directory exists
        if spec.backend.removeprefix("default").removeprefix("?") not in ("", "io_uring=0", "io_uring=1"):
            raise ValueError(f"backend {spec.backend!r}: the default file system takes only "
                             "io_uring=0 or io_uring=1")
    else:

        # the combination first: it is wrong on any machine, whatever the device check below says
        direct = spec.use_direct_reads and spec.use_direct_io_for_flush_and_compaction
        if "iopoll=1" in spec.backend and not direct:
            raise ValueError("iopoll=1 needs O_DIRECT: set use_direct_reads and "
                             "use_direct_io_for_flush_and_compaction")
        rxlab._core.parse_uri(spec.backend)  # ValueError with the reason
    db = Path(spec.db)
    why = sysinfo.dir_problem(db)
    if why:
        raise ValueError(f"db={db}: {why}; choose a directory you can write")
    fills = [s["name"] for s in steps if s.get("name") in FILL_STEPS]
    if not spec.use_existing_db and fills and db.is_dir() and any(db.iterdir()) and not is_rocksdb(db):
        # the run would delete the directory to start a fresh DB: never one that holds something else
        raise ValueError(f"db={db}: a directory with files that is not a RocksDB database; {fills[0]} "
                         "would replace it: choose a new or empty directory")
    if spec.readonly:
        if not spec.use_existing_db:
            raise ValueError("readonly=true needs use_existing_db=true: a read-only DB cannot be created")
        writes = [s["name"] for s in steps if "reopen" not in s and s.get("name") not in READ_ONLY_STEPS]
        if writes:
            raise ValueError(f"readonly=true with step {writes[0]!r}: a read-only DB runs only "
                             f"{', '.join(READ_ONLY_STEPS)}")
    if spec.use_existing_db and not (db / "CURRENT").is_file():
        raise ValueError(f"use_existing_db: no RocksDB database at {db}")
    any_direct = spec.use_direct_reads or spec.use_direct_io_for_flush_and_compaction
    if any_direct and not sysinfo.direct_io_works(db):
        raise ValueError(f"db={db}: its file system does not support O_DIRECT; "
                         "set use_direct_reads=false and use_direct_io_for_flush_and_compaction=false")
    if not spec.use_existing_db and any(s.get("name") in FILL_STEPS for s in steps):
        need = spec.num * (spec.key_size + spec.value_size) * 1.5
        free = shutil.disk_usage(sysinfo.existing_parent(db)).free
        if need > free:
            raise ValueError(f"num={spec.num}: needs about {size_words(need)} at {db}, "
                             f"only {size_words(free)} free")


def is_rocksdb(db: str | os.PathLike) -> bool:
    """Does the directory hold a RocksDB database (its CURRENT file)?"""
    return (Path(db) / "CURRENT").is_file()


def db_size(db: str | os.PathLike) -> int:
    """Bytes of the files under a directory (0 when it is missing)."""
    p = Path(db)
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else 0


def no_block_device_note(db: str | os.PathLike, fstype: str | None) -> str:
    """The note of a step whose DB has no block device under it (tmpfs, ...): the device columns are not
    measured there, which is why they are empty, not because the step read nothing."""
    return (f"no block device under {db} ({fstype or 'unknown'} file system): iops, reqsz and io.lat "
            "come from a device's /proc/diskstats and are not measured here")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the step in progress stopped, the run was kept as failed at `path`
    (None when it stopped before the run's directory existed)."""

    def __init__(self, path: Path | None):
        super().__init__(str(path) if path else "")
        self.path = path


def step_spec(spec: RunSpec, step: Mapping, first_thread: int = 0) -> dict:
    """The C++ StepSpec for one step: run-level defaults, then the step's own.

    `first_thread` is the number of threads that earlier steps of the run started
    (`threads_started`): thread i of this step draws its keys from db_bench's
    generator seeded with seed + first_thread + 1 + i, as db_bench seeds its
    threads, so the same seed gives both tools the same keys, and readrandom
    after fillrandom does not read exactly the keys just written.
    """
    d = {"name": step["name"], "num": spec.num, "threads": spec.threads, "key_size": spec.key_size,
         "value_size": spec.value_size, "seek_nexts": spec.seek_nexts, "batch_size": spec.batch_size,
         "async_io": spec.async_io, "multiread_batched": spec.multiread_batched,
         "write_rate_limit": spec.write_rate_limit, "perf_level": spec.perf_level,
         "perf_events": spec.perf_events,
         "cpus_split": spec.cpus_allowed_policy == "split", "seed": spec.seed,
         "first_thread": first_thread}
    if step["name"] in READ_STEPS:
        d["duration"] = spec.duration
        d["ops"] = spec.reads
    d.update(spec.step_options)
    for k, v in step.items():
        if k in STEP_FIELDS:
            d[k] = v
    if "ops_fraction" in step:
        d["ops"] = max(1, int(spec.num * step["ops_fraction"]) // d["threads"])
        d["duration"] = 0
    return d


# db_bench runs these outside its thread machinery (they start no thread);
# a *whilewriting benchmark adds its writer as thread 0.
_NO_THREADS = frozenset({"flush", "compact0", "waitforcompaction"})
_WITH_WRITER = frozenset({"readwhilewriting", "seekrandomwhilewriting"})


def threads_started(sspec: Mapping) -> int:
    """How many threads db_bench starts for this step (its total_thread_count_ grows by it)."""
    if sspec["name"] in _NO_THREADS:
        return 0
    return int(sspec["threads"]) + (sspec["name"] in _WITH_WRITER)


class Session:
    """An open DB plus the machinery that turns a C++ step into a row."""

    def __init__(self, spec: RunSpec, bloom_bits: int | None = None):

        self.spec = spec
        self.device = sysinfo.device_for_path(spec.db)
        Path(spec.db).mkdir(parents=True, exist_ok=True)
        self.db = rxlab._core.DB(str(spec.db), spec.backend, rocksdb_options(spec, bloom_bits),
                                 spec.statistics, spec.readonly)
        # Threads started by the run's steps so far (db_bench's total_thread_count_, which seeds
        # the key generators); a reopened DB continues the run's count.
        self.threads_started = 0

    def close(self) -> None:
        self.db.close()

    def run_step(self, step: Mapping) -> dict:
        """Run one step (its threads' keys seeded as db_bench seeds them, see step_spec)."""

        sspec = step_spec(self.spec, step, self.threads_started)
        self.threads_started += threads_started(sspec)
        disk = self.device.disk
        d0 = sysinfo.diskstats(disk) if disk else None
        c0, r0 = sysinfo.proc_stat_cpu(), sysinfo.rusage()
        f0, t0 = self.db.counters(), self.db.statistics()
        io0 = sysinfo.proc_pid_io(os.getpid())
        # System counters sampled in a Python thread while the C++ threads
        # run without the GIL: per-second device IOPS and CPU beside ops.

        sampler = Sampler(disk, pid=os.getpid(), interval=0.5).start()
        irq = irqs.IrqWindow(self.spec.db)
        wall0 = time.time()
        try:
            res = rxlab._core.run_step(self.db, sspec)
        finally:
            sampler.stop()
        series = merge_series(sampler.timeseries(wall0, time.time()), res)
        d1 = sysinfo.diskstats(disk) if disk else None
        c1, r1 = sysinfo.proc_stat_cpu(), sysinfo.rusage()
        f1, t1 = self.db.counters(), self.db.statistics()
        io1 = sysinfo.proc_pid_io(os.getpid())
        row = step_row(step, sspec, res, d0, d1, c0, c1, r0, r1, f0, f1, t0, t1, self.spec.backend)
        if not disk:
            row["notes"] = " | ".join(filter(None, [row["notes"], no_block_device_note(self.spec.db,
                                                                                     self.device.fstype)]))
        row.update(irq.columns(res.get("calls_by_cpu", [])))
        if io0 and io1:  # this process's own storage IO (page-cache hits excluded), unlike diskstats
            for k, col in (("read_bytes", "own_read_bytes"), ("write_bytes", "own_write_bytes"),
                           ("rchar", "own_rchar")):
                row[col] = io1[k] - io0[k]
        row["timeseries"] = series
        return row


def merge_series(system_rows: list[dict], res: Mapping) -> list[dict]:
    """Per-second system samples with the step's operations in each second.

    The C++ series is cumulative ops at 1 Hz on the monotonic clock from the
    step's start; it is interpolated onto the sampler's periods.
    """

    t = [0.0] + [ts - res["start_mono_s"] for ts, _ in res["ops_series"]] + [res["wall_s"]]
    n = [0] + [ops for _, ops in res["ops_series"]] + [res["ops"]]
    out = []
    for r in system_rows:
        a, b = r["t_s"], r["t_s"] + r["dt_s"]
        ops = float(np.interp(b, t, n) - np.interp(a, t, n))
        out.append({**r, "ops": ops, "qps": ops / r["dt_s"] if r["dt_s"] else float("nan")})
    return out


def _delta(a: Mapping, b: Mapping) -> dict:
    return {k: b[k] - a.get(k, 0) for k in b if isinstance(b[k], (int, float)) and not isinstance(b[k], bool)}


def step_row(step, sspec, res, d0, d1, c0, c1, r0, r1, f0, f1, t0, t1, backend) -> dict:
    """One row of raw columns (see rxlab.core.metrics) from a step's result and snapshots."""
    ru = sysinfo.rusage_delta(r0, r1)
    row = {
        "name": step.get("label", res["name"]), "benchmark": res["name"], "job": step.get("job"),
        "backend": backend, "threads": sspec["threads"], "ops": res["ops"], "calls": res["calls"],
        "found": res["found"], "bytes": res["bytes"], "wall_s": res["wall_s"],
        "cpu_user_s": ru["self_user_s"], "cpu_sys_s": ru["self_sys_s"],
        "worker_cpu_user_s": res.get("worker_user_s"), "worker_cpu_sys_s": res.get("worker_sys_s"),
        "worker_run_delay_s": res.get("worker_run_delay_s"),
        "vcsw": ru["self_nvcsw"], "ivcsw": ru["self_nivcsw"], "minflt": ru["self_minflt"],
        "majflt": ru["self_majflt"], "writer_ops": res["writer_ops"],
        "notes": " | ".join(res["notes"]),
    }
    hists = res["histograms"]
    main = max(hists, key=lambda h: h["count"]) if hists else None
    if main is not None:
        row["op"] = main["op"]
        row["lat_mean_us"] = main["sum_ns"] / main["count"] / 1000.0
        row["max_us"] = main["max_ns"] / 1000.0
        for p, v in main["percentiles_us"].items():
            row[f"{p}_us"] = v
    row["histograms"] = {h["op"]: [(lo / 1000.0, c) for lo, c in h["buckets"]] for h in hists}
    if d0 is not None:
        dd = sysinfo.diskstats_delta(d0, d1)
        for k in ("reads", "read_sectors", "read_ticks_ms", "writes", "write_sectors", "write_ticks_ms",
                  "in_flight", "io_ticks_ms"):
            if k in dd:
                row[f"disk_{k}"] = dd[k]
    for k, v in sysinfo.proc_stat_delta(c0, c1).items():
        row[f"system_cpu.{k}"] = v
    for k, v in res["perf_events"].items():
        row[f"perf.{k}"] = v if v >= 0 else float("nan")
    row["perf.enabled"] = bool(res["perf_events"])
    row["perf.hw_available"] = all(res["perf_events"].get(k, -1) >= 0 for k in ("cycles", "instructions"))
    for k, v in res["perf_context"].items():
        row[f"pc.{k}"] = v
    for k, v in res["iostats_context"].items():
        row[f"iostats.{k}"] = v
    for k, v in _delta(f0, f1).items():
        if k != "threads":
            row[f"fs.{k}"] = v
    for k, v in _delta(t0, t1).items():
        if v:
            row[f"ticker.{k}"] = v
    return row


def run(spec: RunSpec | Mapping, root: str | os.PathLike | None = None, progress: bool = True, *,
        meta: Mapping | None = None, fingerprint: Mapping | None = None, step_probe=None):
    """Execute a spec and store it; returns the run directory.

    meta: more keys for the stored spec (a study's labels). fingerprint: more
    environment facts (e.g. the memory cgroup a child runs in). step_probe:
    called just before each step, it returns a callable that, called just
    after the step, returns more columns for the step's row (counters that
    must be taken inside the step's window).
    """


    from tqdm.auto import tqdm  # noqa: PLC0415 - a notebook shows a widget bar, a terminal a text bar

    from rxlab.core.store import RunWriter  # noqa: PLC0415 - pandas and pyarrow: see the imports

    if not isinstance(spec, RunSpec):
        spec = RunSpec.from_dict(spec)
    validate(spec)
    steps = expand(spec.steps)
    if not spec.use_existing_db and any(s.get("name") in FILL_STEPS for s in steps):
        shutil.rmtree(spec.db, ignore_errors=True)
    build = active_build()
    rec = (build / "build.json").read_text() if (build / "build.json").is_file() else "{}"

    fp = {**sysinfo.fingerprint(spec.db, rocksdb_build=json.loads(rec)), **(fingerprint or {})}
    # Open first: bad RocksDB options are refused before the run directory exists.
    w = None
    try:
        sess = Session(spec)
    except KeyboardInterrupt:
        raise RunInterrupted(None) from None
    try:
        w = RunWriter(root, {**spec.to_dict(), **(meta or {})}, fp)
        with w:
            for i, step in enumerate(tqdm(steps, desc=spec.name, disable=not progress, unit="step")):
                if "reopen" in step:
                    sess.close()
                    started = sess.threads_started
                    sess = Session(spec, bloom_bits=step["reopen"].get("bloom_bits"))
                    sess.threads_started = started
                    continue
                finish = step_probe() if step_probe is not None else None
                row = sess.run_step(step)
                if finish is not None:
                    row.update(finish())
                row["step_index"] = i
                w.add_step(row)
    except KeyboardInterrupt:
        # the step in progress stopped (rxlab._core.run_step checks for Ctrl-C); RunWriter kept the run
        # as .failed- with the steps done so far
        raise RunInterrupted(w.path if w is not None and w.path.exists() else None) from None
    finally:
        sess.close()
    return w.path
