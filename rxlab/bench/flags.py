"""Command lines in the tools' own dialects.

`rxlab bench` takes db_bench's flag names (``--benchmarks=fillseq,readrandom
--num=... --use_direct_reads=true``) for what it shares with db_bench, and
`rxlab fio` takes fio's (``--rw=randread --bs=8k --ioengine=io_uring``).
Every flag is ``--name=value`` (``--name value`` and a bare ``--flag`` for
true also work); an unknown flag or a bad value is one line naming it.
"""
from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

from rxlab.bench import fio
from rxlab.bench.driver import BENCHMARKS, JOBS, SEQUENCES, STEP_FIELDS, RunSpec


def _bool(v: str) -> bool:
    s = str(v).lower()
    if s in ("1", "true", "yes", "on"):
        return True
    if s in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def _int(v: str) -> int:
    s = str(v).strip()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if s and s[-1].lower() in mult:
        return int(float(s[:-1]) * mult[s[-1].lower()])
    return int(s)


def _float(v: str) -> float:
    return float(v)


def _str(v: str) -> str:
    return str(v)


# db_bench flag -> (RunSpec field or "step:<field>" or "cli:<name>", parser)
BENCH_FLAGS: dict[str, tuple[str, Callable]] = {
    "benchmarks": ("steps", lambda v: [s for s in str(v).split(",") if s]),
    "db": ("db", _str),
    "num": ("num", _int),
    "reads": ("reads", _int),
    "duration": ("duration", _float),
    "threads": ("threads", _int),
    "key_size": ("key_size", _int),
    "value_size": ("value_size", _int),
    "block_size": ("block_size", _int),
    "block_align": ("block_align", _bool),
    "compression_type": ("compression", _str),
    "cache_size": ("cache_size", _int),
    "bloom_bits": ("bloom_bits", _int),
    "use_direct_reads": ("use_direct_reads", _bool),
    "use_direct_io_for_flush_and_compaction": ("use_direct_io_for_flush_and_compaction", _bool),
    "use_existing_db": ("use_existing_db", _bool),
    "readonly": ("readonly", _bool),
    "batch_size": ("batch_size", _int),
    "async_io": ("async_io", _bool),
    "seek_nexts": ("seek_nexts", _int),
    "multiread_batched": ("multiread_batched", _bool),
    "write_buffer_size": ("write_buffer_size", _int),
    "target_file_size_base": ("target_file_size_base", _int),
    "max_bytes_for_level_base": ("max_bytes_for_level_base", _int),
    "compaction_readahead_size": ("compaction_readahead_size", _int),
    "perf_level": ("perf_level", _int),
    "perf_events": ("perf_events", _bool),
    "cpus_allowed_policy": ("cpus_allowed_policy", _str),
    "statistics": ("statistics", _bool),
    "seed": ("seed", _int),
    "benchmark_write_rate_limit": ("write_rate_limit", _int),
    "fs_uri": ("backend", _str),
    "options": ("options", _str),
    "reverse_iterator": ("step:reverse_iterator", _bool),
    "multiread_stride": ("step:multiread_stride", _int),
    "optimize_multiget_for_io": ("step:optimize_multiget_for_io", _bool),
    "readahead_size": ("step:readahead_size", _int),
    "verify_checksum": ("step:verify_checksums", _bool),
    "sync": ("step:sync", _bool),
    "disable_wal": ("step:disable_wal", _bool),
    "compression_ratio": ("step:compression_ratio", _float),
    "io_uring_enabled": ("cli:io_uring_enabled", _bool),
    "json": ("cli:json", _bool),
    "quiet": ("cli:quiet", _bool),
    "name": ("name", _str),
    "runs_dir": ("cli:runs_dir", _str),
}
for _f in ("mix_get_ratio", "mix_put_ratio", "mix_seek_ratio", "keyrange_dist_a", "keyrange_dist_b",
           "keyrange_dist_c", "keyrange_dist_d", "value_k", "value_sigma", "iter_k", "iter_sigma",
           "sine_a", "sine_b", "sine_c", "sine_d", "sine_mix_rate_interval_milliseconds"):
    BENCH_FLAGS[_f] = (f"step:{_f}", _float)
for _f in ("keyrange_num", "mix_max_value_size", "mix_max_scan_len"):
    BENCH_FLAGS[_f] = (f"step:{_f}", _int)
BENCH_FLAGS["sine_mix_rate"] = ("step:sine_mix_rate", _bool)
assert all(t.split(":")[1] in STEP_FIELDS for t, _ in BENCH_FLAGS.values() if t.startswith("step:"))

FIO_FLAGS: dict[str, Callable] = {
    "name": _str, "rw": _str, "bs": _str, "size": _str, "filename": _str, "direct": _bool,
    "ioengine": _str, "iodepth": _int, "numjobs": _int, "runtime": _float, "time_based": _bool,
    "ramp_time": _float, "engine_options": _str, "json": _bool, "quiet": _bool, "real": _bool,
    "runs_dir": _str, "seed": _int, "iodepth_batch_submit": _int, "iodepth_batch_complete_max": _int,
    "thinktime": _float, "thinktime_spin": _float, "cpus_allowed_policy": _str,
    "cpus_allowed": _str, "blockalign": _str,
}


# ------------------------------------------------------------------ what each flag means

# section -> [(flag, meaning)], in the order `rxlab bench --help` prints them. Defaults are not
# written here: they are read from RunSpec (rxlab.bench.driver), the C++ step's defaults
# (STEP_DEFAULTS) and bench_spec, so the help cannot drift from what runs.
BENCH_HELP: dict[str, list[tuple[str, str]]] = {
    "what to run": [
        ("benchmarks", "comma-separated db_bench benchmarks, helper-script jobs or sequences (listed above); "
                       "required"),
        ("db", "the database directory; the device under it is the one measured"),
        ("use_existing_db", "true: open the DB at --db as it is; false: delete it and start a new one; "
                            "not given: a DB already at --db is refused when a fill step would write "
                            "over it"),
        ("readonly", "open the existing DB read-only (no lock: other processes may read it too); read "
                     "steps only"),
        ("fs_uri", "the backend: an rxlab engine URI (posix, libaio, io_uring?sqpoll=1, ... `rxlab engines`) "
                   "or default / default?io_uring=1 (RocksDB's own file system)"),
        ("io_uring_enabled", "without --fs_uri: RocksDB's own file system may use io_uring for MultiRead and "
                             "ReadAsync (db_bench's flag; true is default?io_uring=1)"),
        ("num", "keys in the key space (fills write num keys)"),
        ("reads", "operations per read step and thread (-1: num)"),
        ("duration", "seconds per read step (0: run --reads operations)"),
        ("threads", "client threads per step"),
        ("seed", "seed of the key generators (db_bench's; 0 is a seed here, not the time)"),
        ("name", "the run's name in the store"),
    ],
    "keys, values, table": [
        ("key_size", "bytes per key"),
        ("value_size", "bytes per value"),
        ("compression_ratio", "values compress to this fraction (db_bench's generator)"),
        ("block_size", "bytes per data block"),
        ("block_align", "align data blocks to pages (needs compression none)"),
        ("compression_type", "none, snappy, lz4, zstd or zlib"),
        ("cache_size", "block cache bytes (0: no block cache)"),
        ("bloom_bits", "bloom filter bits per key (0: no filter)"),
        ("write_buffer_size", "memtable bytes"),
        ("target_file_size_base", "SST file size at level 1"),
        ("max_bytes_for_level_base", "bytes of level 1"),
        ("compaction_readahead_size", "compaction readahead bytes (not given: RocksDB's default)"),
        ("options", "more RocksDB options in RocksDB's own syntax (they win over the flags)"),
    ],
    "IO": [
        ("use_direct_reads", "O_DIRECT for reads"),
        ("use_direct_io_for_flush_and_compaction", "O_DIRECT for flush and compaction writes"),
        ("async_io", "asynchronous reads for iterator prefetch (ReadAsync)"),
        ("readahead_size", "iterator readahead bytes"),
        ("verify_checksum", "verify each block's checksum on read"),
        ("sync", "fsync each write"),
        ("disable_wal", "write without the WAL"),
        ("benchmark_write_rate_limit", "bytes/s of the writer of *whilewriting"),
    ],
    "reads and scans": [
        ("batch_size", "keys per MultiGet call (multireadrandom) and entries per write batch"),
        ("multiread_batched", "MultiGet's batched API"),
        ("multiread_stride", "distance between the keys of one MultiGet batch (0: random keys)"),
        ("optimize_multiget_for_io", "RocksDB reads a MultiGet's SST files of several levels together"),
        ("seek_nexts", "Next() calls after each Seek (seekrandom)"),
        ("reverse_iterator", "scan with Prev() instead of Next()"),
    ],
    "mixgraph (defaults: the lab report's ZippyDB values)": [
        ("mix_get_ratio", "share of Gets"), ("mix_put_ratio", "share of Puts"),
        ("mix_seek_ratio", "share of Seeks"),
        ("keyrange_dist_a", "key-range distribution a"), ("keyrange_dist_b", "key-range distribution b"),
        ("keyrange_dist_c", "key-range distribution c"), ("keyrange_dist_d", "key-range distribution d"),
        ("keyrange_num", "key ranges"), ("value_k", "value size Pareto k"),
        ("value_sigma", "value size Pareto sigma"), ("iter_k", "scan length Pareto k"),
        ("iter_sigma", "scan length Pareto sigma"), ("mix_max_value_size", "largest value"),
        ("mix_max_scan_len", "longest scan"), ("sine_mix_rate", "vary the rate as a sine"),
        ("sine_a", "sine amplitude"), ("sine_b", "sine frequency"), ("sine_c", "sine phase"),
        ("sine_d", "sine offset"), ("sine_mix_rate_interval_milliseconds", "rate update interval"),
    ],
    "measuring": [
        ("statistics", "RocksDB Statistics tickers per step"),
        ("perf_level", "RocksDB PerfContext level (2: counts, 3+: timers; costs CPU per op)"),
        ("perf_events", "perf_event counters per reader thread (costs 1-11 us of CPU per op)"),
        ("cpus_allowed_policy", "shared (the scheduler places the readers) or split (reader i on the "
                                "i-th allowed CPU, as fio)"),
    ],
    "output": [
        ("json", "print the steps as JSON only"),
        ("quiet", "no progress bar, no header, no seed table"),
        ("runs_dir", "the results store"),
    ],
}

# The C++ step's own defaults (ext/bench/workloads.h, StepSpec) for the flags that set a step field.
STEP_DEFAULTS = {
    "reverse_iterator": False, "multiread_stride": 0, "optimize_multiget_for_io": True, "readahead_size": 0,
    "verify_checksums": True, "sync": False, "disable_wal": False, "compression_ratio": 0.5,
    "mix_get_ratio": 0.85, "mix_put_ratio": 0.14, "mix_seek_ratio": 0.01, "keyrange_dist_a": 14.18,
    "keyrange_dist_b": -2.917, "keyrange_dist_c": 0.0164, "keyrange_dist_d": -0.08082, "keyrange_num": 30,
    "value_k": 0.2615, "value_sigma": 25.45, "iter_k": 2.517, "iter_sigma": 14.236, "sine_a": 1000,
    "sine_b": 0.000073, "sine_c": 0, "sine_d": 4500, "sine_mix_rate_interval_milliseconds": 0,
    "sine_mix_rate": False, "mix_max_value_size": 1024, "mix_max_scan_len": 10000,
}
CLI_DEFAULTS = {"json": False, "quiet": False, "io_uring_enabled": True,
                "runs_dir": "$RXLAB_RUNS or data/runs"}
DEFAULT_DB = "/tmp/rxlab-bench-db"

# Where `rxlab bench` starts from other defaults than db_bench 9.10's (db_bench --help): the seeds'
# setup (8 KiB aligned blocks, no compression, O_DIRECT, a small cache, bloom filters, 400-byte values).
DB_BENCH_DEFAULTS = {
    "use_direct_reads": "false", "use_direct_io_for_flush_and_compaction": "false",
    "compression_type": "snappy", "block_align": "false", "block_size": "4096",
    "cache_size": "33554432", "bloom_bits": "-1 (no filter)", "value_size": "100", "statistics": "false",
    "seed": "0 (the time)", "db": "/tmp/rocksdbtest-UID/dbbench",
    "benchmarks": "about 30 benchmarks, over any DB already there",
}


def _text(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


# Flags whose default is not one value of RunSpec, the step or the command.
_OWN_DEFAULTS = {"benchmarks": "none (asked for)", "db": DEFAULT_DB, "fs_uri": "default?io_uring=1",
                 "name": "bench-<benchmarks>", "use_existing_db": "not given", "options": "none",
                 "compaction_readahead_size": "RocksDB's"}


def bench_default(flag: str) -> str:
    """The default of a `rxlab bench` flag, read from where it is set."""
    target, _ = BENCH_FLAGS[flag]
    if flag in _OWN_DEFAULTS:
        return _OWN_DEFAULTS[flag]
    kind, _, name = target.rpartition(":")
    if kind:
        return _text((CLI_DEFAULTS if kind == "cli" else STEP_DEFAULTS)[name])
    field = {f.name: f for f in dataclasses.fields(RunSpec)}[target]
    v = field.default if field.default is not dataclasses.MISSING else \
        field.default_factory()  # type: ignore[misc]
    return _text(v)


def bench_help() -> str:
    """`rxlab bench --help`: what runs, then each flag with its meaning and default."""
    lines = ["usage: rxlab bench --benchmarks=B1,B2,... [--flag=value ...]",
             "",
             "db_bench's workloads run in this process by C++ threads, on one backend, stored as one run.",
             "Flags are db_bench's (--name=value, --name value, or --name for true).",
             "",
             f"benchmarks: {', '.join(BENCHMARKS)}",
             f"helper-script jobs: {', '.join(JOBS)}",
             f"sequences: {', '.join(SEQUENCES)}",
             "",
             "Where rxlab's defaults differ from db_bench's (db_bench's in brackets): "
             + ", ".join(f"--{k}={bench_default(k)} [{v}]" for k, v in DB_BENCH_DEFAULTS.items()
                         if k not in ("benchmarks", "db", "seed")) + ".",
             "A DB already at --db is never written over unless --use_existing_db says so. Ctrl-C stops the "
             "step in progress within a second; the run is kept as failed.",
             ]
    for section, flags in BENCH_HELP.items():
        lines += ["", f"{section}:"]
        for flag, meaning in flags:
            theirs = f"; db_bench: {DB_BENCH_DEFAULTS[flag]}" if flag in DB_BENCH_DEFAULTS else ""
            lines.append(_flag_line(flag, f"{meaning} (default: {bench_default(flag)}{theirs})"))
    return "\n".join(lines)


def _flag_line(flag: str, text: str, width: int = 26) -> str:
    """`  --flag    text`, the text on the next line when the flag is longer than the column."""
    if len(flag) + 2 > width:
        return f"  --{flag}\n  {'':{width + 2}}{text}"
    return f"  --{flag:<{width}}{text}"


def differences(given: set[str] | frozenset[str]) -> list[str]:
    """The defaults a run took that db_bench would not have (flags the user did not give)."""
    return [f"--{k}={bench_default(k)} (db_bench: {v})" for k, v in DB_BENCH_DEFAULTS.items()
            if k not in given and k not in ("benchmarks",)]


FIO_HELP: dict[str, str] = {
    "filename": "the file to read; laid out to --size if shorter",
    "rw": "randread, read, randwrite or write",
    "bs": "bytes per IO (k, m suffixes)",
    "size": "bytes of the file region IOs go to",
    "direct": "O_DIRECT",
    "ioengine": "sync, psync (= posix), posix, libaio or io_uring: rxlab's engines",
    "engine_options": "the engine's URI options, e.g. sqpoll=1&registered_files=1 (`rxlab engines`)",
    "iodepth": "IOs in flight per job",
    "numjobs": "jobs (threads)",
    "runtime": "seconds measured",
    "ramp_time": "seconds run before measuring",
    "time_based": "accepted for fio's command lines; runs are always time based",
    "seed": "seed of the offsets",
    "iodepth_batch_submit": "IOs submitted per call (fio's)",
    "iodepth_batch_complete_max": "completions reaped per wait at most (fio's)",
    "thinktime": "us of stall before each IO (not with --real: fio 3.33 hangs on thinktime_spin here)",
    "thinktime_spin": "us of that stall spent spinning on the CPU (CPU work without IO, in cpuPer)",
    "cpus_allowed_policy": "shared (the scheduler places jobs) or split (job i on the i-th allowed CPU)",
    "cpus_allowed": "CPUs the jobs may use (fio's list: 1, 0-1)",
    "blockalign": "offsets are multiples of this; bs=8704 blockalign=512 reads as RocksDB does without "
                  "block_align",
    "real": "run real fio beside it with the same options",
    "name": "the run's name in the store",
    "json": "print JSON only",
    "quiet": "print no store paths",
    "runs_dir": "the results store",
}


def fio_default(flag: str) -> str:
    """A `rxlab fio` flag's default: rxlab.bench.fio.run's signature, or the command's own."""
    own = {"filename": "none: required", "time_based": "true", "real": "false", "name": "fio",
           "json": "false", "quiet": "false", "runs_dir": "$RXLAB_RUNS or data/runs",
           "cpus_allowed": "this process's CPUs", "blockalign": "bs", "engine_options": "none"}
    if flag in own:
        return own[flag]
    return _text(inspect.signature(fio.run).parameters[flag].default)


def fio_help() -> str:
    """`rxlab fio --help`: each flag with its meaning and default."""
    lines = ["usage: rxlab fio --filename=F [--flag=value ...]",
             "",
             "rxlab's raw-IO baseline: fio's job semantics through rxlab's engines, measured as rxlab "
             "measures RocksDB (the seeds' columns), stored as a run. Flags are fio's.",
             ""]
    lines += [_flag_line(k, f"{v} (default: {fio_default(k)})") for k, v in FIO_HELP.items()]
    return "\n".join(lines)


def split_flags(argv: list[str], known: dict) -> dict[str, str]:
    """['--a=1', '--b', '2', '--c'] -> {'a': '1', 'b': '2', 'c': 'true'}."""
    out: dict[str, str] = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("--") or a == "--":
            raise ValueError(f"unexpected argument {a!r}: flags are --name=value")
        name, eq, val = a[2:].partition("=")
        name = name.replace("-", "_")
        if name not in known:
            close = [k for k in known if name in k or k in name][:3]
            hint = f" (did you mean {', '.join('--' + c for c in close)}?)" if close else ""
            raise ValueError(f"unknown flag --{name}{hint}")
        if not eq:
            if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                val = argv[i + 1]
                i += 1
            else:
                val = "true"
        out[name] = val
        i += 1
    return out


def bench_spec(argv: list[str]) -> tuple[RunSpec, dict]:
    """db_bench-style flags -> (RunSpec, CLI options)."""
    raw = split_flags(argv, BENCH_FLAGS)
    fields: dict = {}
    steps: dict = {}
    cli: dict = {"json": False, "quiet": False, "io_uring_enabled": True, "runs_dir": None,
                 "given": frozenset(raw)}
    for name, val in raw.items():
        target, parse = BENCH_FLAGS[name]
        try:
            v = parse(val)
        except (ValueError, TypeError) as e:
            raise ValueError(f"--{name}={val}: {e}") from None
        if target.startswith("step:"):
            steps[target[5:]] = v
        elif target.startswith("cli:"):
            cli[target[4:]] = v
        else:
            fields[target] = v
    if "db" not in fields:
        fields["db"] = DEFAULT_DB
    if "backend" not in fields:
        # As db_bench: RocksDB's own file system, with --io_uring_enabled (default true).
        fields["backend"] = "default?io_uring=1" if cli["io_uring_enabled"] else "default"
    fields.setdefault("name", "bench-" + "-".join(fields.get("steps", ["default"]))[:60])
    fields["step_options"] = steps
    return RunSpec.from_dict(fields), cli


def fio_args(argv: list[str]) -> dict:
    raw = split_flags(argv, FIO_FLAGS)
    out = {}
    for name, val in raw.items():
        try:
            out[name] = FIO_FLAGS[name](val)
        except (ValueError, TypeError) as e:
            raise ValueError(f"--{name}={val}: {e}") from None
    if "filename" not in out:
        raise ValueError("--filename is required (the file to read; it is laid out to --size if shorter)")
    return out
