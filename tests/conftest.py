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
# design: RocksDB waits for each write, so writes use pwrite64 on every engine
# unless the backend says buffered_writes=engine (the WAL, the MANIFEST) or
# direct_writes=engine (O_DIRECT flush and compaction writes): ext4 punts
# buffered io_uring writes to kernel workers (55 us per WAL append against
# 1.6 us), and a write nothing overlaps gains nothing from a queue. Likewise a
# read RocksDB waits for on a buffered file (an SST without use_direct_reads,
# the MANIFEST and WAL at open) uses pread64 unless buffered_reads=engine: the
# page cache serves it inside the call. MultiRead and ReadAsync use the engine,
# except on buffered files: libaio's take pread64 (Linux AIO reads a buffered
# file inside io_submit), and io_uring's try each request with preadv2
# (RWF_NOWAIT) first unless buffered_batches=engine.
ENGINE_SYSCALLS = {
    "posix": {"read": ["pread64"], "write": ["pwrite64"]},
    "libaio": {"read": ["io_submit", "io_getevents"], "write": ["io_submit", "io_getevents"]},
    "io_uring": {"read": ["io_uring_enter"], "write": ["io_uring_enter"]},
}
DATA_SYSCALLS = ["pread64", "preadv2", "pwrite64", "io_submit", "io_getevents", "io_uring_enter"]


def pwrite_allowed(backend: str) -> bool:
    """May this backend issue pwrite64 for some of its writes?"""
    return not ("buffered_writes=engine" in backend and "direct_writes=engine" in backend)


def pread_allowed(backend: str) -> bool:
    """May this backend issue pread64 for some of its reads (those of buffered files)?"""
    return "buffered_reads=engine" not in backend


def nowait_allowed(backend: str) -> bool:
    """May this backend issue preadv2 (RWF_NOWAIT) for buffered batches and async reads?"""
    return engine_of(backend) == "io_uring" and "buffered_batches=engine" not in backend


def writes_through_engine(backend: str) -> bool:
    """Does any kind of write (buffered or O_DIRECT) go through the engine?"""
    return "buffered_writes=engine" in backend or "direct_writes=engine" in backend


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
    import rxlab  # noqa: PLC0415 - when a test needs a DB: collecting the others needs no extension

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
    import rxlab  # noqa: PLC0415 - as above

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

# ---------------------------------------------------------------- make check: the `rocksdb` marker
# `make check` runs the tests not marked `rocksdb` (docs/contributing.md). A test that opens a DB, runs
# db_bench, fio, the driver, a study, a notebook, a server, a browser, the docs build or rxlab commands as
# processes (seconds each) carries it: every test of a module in ROCKSDB_MODULES, each test in
# ROCKSDB_TESTS, or a test marked @pytest.mark.rocksdb itself.
TESTS = Path(__file__).resolve().parent
ROCKSDB_MODULES = frozenset({
    "ext/test_crash.py", "ext/test_engines.py", "ext/test_mmap.py", "ext/test_plugin.py",
    "ext/test_strace.py",
    "bench/test_ab_rows.py", "bench/test_cancel.py", "bench/test_conformance.py", "bench/test_driver.py",
    "bench/test_parity.py",
    "bench/test_references.py", "bench/test_selfcheck_backends.py", "bench/test_turns.py",
    "cli/test_ab.py", "cli/test_cli.py", "cli/test_faults.py", "cli/test_lab.py", "cli/test_runs_list.py",
    "cli/test_study_executions.py", "cli/test_worker.py",
    "runs/test_browser.py", "runs/test_distributed.py", "runs/test_explore.py", "runs/test_figures_export.py",
    "runs/test_notebooks.py", "runs/test_report_progress.py", "runs/test_sweep.py",
    "studies/test_async_io.py", "studies/test_backends_study.py", "studies/test_compaction_readahead.py",
    "studies/test_cpu_breakdown.py", "studies/test_device_load.py", "studies/test_io_efficiency.py",
    "studies/test_io_efficiency_tuning.py", "studies/test_perf_model.py", "studies/test_placement.py",
    "studies/test_quickstart.py", "studies/test_quickstart_tmpdir.py", "studies/test_toolchains.py",
    "studies/test_tracing_overhead.py",
    "test_docs.py", "test_readme.py",
})
# Tests of modules that mix both: each runs the installed `rxlab` as a user does.
ROCKSDB_TESTS = frozenset({
    "cli/test_help.py::test_everyday_commands_come_first_and_self_checks_last",
    "cli/test_help.py::test_a_command_takes_no_abbreviation",
    "cli/test_help.py::test_report_help_says_its_scale_and_that_it_overwrites_figures",
    "cli/test_help.py::test_bench_and_fio_help_list_every_flag_with_meaning_and_default",
})
# An unmarked test slower than this is named at the end of `make check`: mark it or make it faster.
CHECK_SLOW_S = 5.0


def _checking(config) -> bool:
    return "not rocksdb" in (config.getoption("markexpr", "") or "")


def pytest_ignore_collect(collection_path, config):
    """Under `-m "not rocksdb"`, a module of ROCKSDB_MODULES is not even imported (collecting them all
    takes a minute on 2 busy cores)."""
    if _checking(config) and collection_path.suffix == ".py":
        try:
            rel = collection_path.relative_to(TESTS).as_posix()
        except ValueError:
            return None
        if rel in ROCKSDB_MODULES:
            return True
    return None


def pytest_collection_modifyitems(config, items):
    for item in items:
        try:
            rel = item.path.relative_to(TESTS).as_posix()
        except ValueError:
            continue
        if rel in ROCKSDB_MODULES or f"{rel}::{item.originalname}" in ROCKSDB_TESTS:
            item.add_marker(pytest.mark.rocksdb)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    if not _checking(config):
        return
    slow = sorted(((r.duration, r.nodeid) for rs in terminalreporter.stats.values() for r in rs
                   if getattr(r, "when", None) in ("setup", "call")
                   and getattr(r, "duration", 0) > CHECK_SLOW_S), reverse=True)
    if slow:
        terminalreporter.section("unmarked slow tests (mark them rocksdb in tests/conftest.py, or make them "
                                 "faster)")
        for d, nodeid in slow:
            terminalreporter.write_line(f"{d:6.1f} s  {nodeid}")
