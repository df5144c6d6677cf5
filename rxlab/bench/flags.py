"""Command lines in the tools' own dialects.

`rxlab bench` takes db_bench's flag names (``--benchmarks=fillseq,readrandom
--num=... --use_direct_reads=true``) for what it shares with db_bench, and
`rxlab fio` takes fio's (``--rw=randread --bs=8k --ioengine=io_uring``).
Every flag is ``--name=value`` (``--name value`` and a bare ``--flag`` for
true also work); an unknown flag or a bad value is one line naming it.
"""
from __future__ import annotations

from collections.abc import Callable

from rxlab.bench.driver import STEP_FIELDS, RunSpec


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
    cli: dict = {"json": False, "quiet": False, "io_uring_enabled": True, "runs_dir": None}
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
        fields["db"] = "/tmp/rxlab-bench-db"
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
