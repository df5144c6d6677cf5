"""Shared helpers and fixtures for the tests that open RocksDB on rxlab's backends.

Plain names, importable from any test module (`from conftest import BACKENDS,
rocksdb_options, load_db`), plus fixtures wrapping them. The compiled core is
imported lazily, so the tests that do not need it (metrics, store, ...) still
collect when it is not built.

- BACKENDS: every backend spec `rxlab.open` accepts that the suite covers.
- RX_BACKENDS: those that are rxlab engines (they have counters).
- ENGINES: the bare rxlab engine names.
- engine_of(backend): "posix" / "libaio" / "io_uring", or None for default.
- ENGINE_SYSCALLS: the data-path syscalls each engine must issue (by counter name).
- rocksdb_options(direct=True, block_align=False, cache="1M", **extra): a RocksDB option string.
- key(i) / value_for(rng, size): the key format and value generator load_db uses.
- load_db(path, backend, n, value_size, options): write n keys through a backend,
  flush, compact, close; returns {key: value} of what the DB holds.
- fixtures: `open_db` (opens, closes at teardown), `backend` (parametrized over BACKENDS).
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pytest

BACKENDS = [
    "default",
    "default?io_uring=1",
    "posix",
    "libaio",
    "io_uring",
    "io_uring?registered_files=1&fixed_buffers=1",
    "io_uring?sqpoll=1",
]
ENGINES = ["posix", "libaio", "io_uring"]
RX_BACKENDS = [b for b in BACKENDS if not b.startswith("default")]

# Syscall counters (sys.NAME.count) that prove IO went through an engine, and
# the ones of the other engines, which must stay at zero. One exception by
# design: buffered (non-O_DIRECT) writes use pwrite64 on every engine unless
# the backend says buffered_writes=engine (ext4 punts buffered io_uring
# writes to kernel workers: 55 us per WAL append against 1.6 us).
ENGINE_SYSCALLS = {
    "posix": {"read": ["pread64"], "write": ["pwrite64"]},
    "libaio": {"read": ["io_submit", "io_getevents"], "write": ["io_submit", "io_getevents"]},
    "io_uring": {"read": ["io_uring_enter"], "write": ["io_uring_enter"]},
}
DATA_SYSCALLS = ["pread64", "pwrite64", "io_submit", "io_getevents", "io_uring_enter"]


def pwrite_allowed(backend: str) -> bool:
    """May this backend issue pwrite64 for buffered writes?"""
    return "buffered_writes=engine" not in backend


def engine_of(backend: str) -> str | None:
    """The rxlab engine of a backend spec, None for RocksDB's own file system."""
    name = backend.removeprefix("rxlab://").split("?", 1)[0]
    return None if name == "default" else name


def backend_id(backend: str) -> str:
    """A short test id for a backend spec."""
    return backend.replace("?", "+").replace("&", "+").replace("=1", "")


def _fmt(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def rocksdb_options(direct: bool = True, block_align: bool = False, cache: str | None = "1M", *,
                    block_size: int = 8192, compression: str = "kNoCompression",
                    table: dict | None = None, **extra: object) -> str:
    """RocksDB's option string (parsed by RocksDB itself).

    direct: O_DIRECT for reads and for flush/compaction writes.
    cache: block cache capacity in RocksDB's size syntax ("1M", "64K"); None or
    "0" means no block cache at all.
    table: further block_based_table_factory options.
    extra: further DB/CF options, e.g. write_buffer_size=1 << 20,
    disable_auto_compactions=True (booleans become true/false).
    """
    t = {"block_size": block_size, "block_align": block_align}
    if cache in (None, "0", 0):
        t["no_block_cache"] = True
    else:
        t["block_cache"] = cache
    t.update(table or {})
    parts = [
        f"use_direct_reads={_fmt(direct)}",
        f"use_direct_io_for_flush_and_compaction={_fmt(direct)}",
        f"compression={compression}",
    ]
    parts += [f"{k}={_fmt(v)}" for k, v in extra.items()]
    parts.append("block_based_table_factory={" + ";".join(f"{k}={_fmt(v)}" for k, v in t.items()) + "}")
    return ";".join(parts)


def key(i: int) -> bytes:
    return b"key%08d" % i


def value_for(rng: random.Random, size: int | Sequence[int]) -> bytes:
    """Random (incompressible) bytes; size is a length or a choice of lengths."""
    n = size if isinstance(size, int) else rng.choice(size)
    return rng.randbytes(n)


def load_db(path: str | Path, backend: str, n: int, value_size: int | Sequence[int], options: str,
            *, seed: int = 0, keys: Iterable[bytes] | None = None, flush: bool = True,
            compact: bool = True, shuffle: bool = True) -> dict[bytes, bytes]:
    """Write n keys (key(0..n-1), or `keys`) with random values through `backend`,
    then flush and compact (into the last level) and close.

    value_size: an int, or a sequence of sizes to choose from per key.
    Returns {key: value} of everything written (the expected content).
    """
    import rxlab

    rng = random.Random(seed)
    ks = list(keys) if keys is not None else [key(i) for i in range(n)]
    if shuffle:
        rng.shuffle(ks)
    expected = {}
    with rxlab.open(path, backend, options) as db:
        for k in ks:
            v = value_for(rng, value_size)
            db.put(k, v)
            expected[k] = v
        if flush:
            db.flush()
        if compact:
            db.compact()
    return expected


@pytest.fixture
def open_db() -> Callable:
    """open_db(path, backend, options, statistics=False): rxlab.open, closed at teardown
    (so a failing test does not leave a DB open)."""
    import rxlab

    opened = []

    def _open(path, backend="posix", options="", statistics=False):
        db = rxlab.open(path, backend, options, statistics)
        opened.append(db)
        return db

    yield _open
    for db in opened:
        if not db.closed:
            db.close()


@pytest.fixture(params=BACKENDS, ids=backend_id)
def backend(request) -> str:
    """Each backend of BACKENDS in turn."""
    return request.param


def polled_queues_present() -> bool:
    """Does any block device here have polled queues (what io_uring iopoll needs)?"""
    for f in Path("/sys/block").glob("*/queue/io_poll"):
        try:
            if f.read_text().strip() == "1":
                return True
        except OSError:
            pass
    return False
