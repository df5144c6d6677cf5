"""RocksDB on every IO backend, on real files (issue 2, sections 2 and 5).

Round trips with direct IO on and off, MultiGet against Get, async_io scans
against sync scans, the delay_us completion deadline (overlapping in a batch
on the queued engines, serial on posix), fault injection (correct data or a
clear error, never a crash or a wrong value), one-line errors for bad input,
and the GIL released around IO. The counters must show that the IO went
through the engine under test.
"""
from __future__ import annotations

import ast
import contextlib
import errno
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
import zlib
from pathlib import Path

import pytest
from conftest import (
    BACKENDS,
    DATA_SYSCALLS,
    ENGINE_SYSCALLS,
    ENGINES,
    RX_BACKENDS,
    backend_id,
    engine_of,
    key,
    load_db,
    nowait_allowed,
    polled_queues_present,
    pread_allowed,
    pwrite_allowed,
    rocksdb_options,
    value_for,
    writes_through_engine,
)

import rxlab
from rxlab import _core
from rxlab.core.pagecache import page_in, page_out

MS = 1e-3


def sys_count(c: dict, name: str) -> int:
    return c[f"sys.{name}.count"]


def nonzero(c: dict) -> dict:
    """The counters that moved, for assertion messages."""
    return {k: v for k, v in c.items() if v and k != "read_latency_ns"}


def assert_engine_did_io(backend: str, c: dict, kind: str, *, direct: bool = True) -> None:
    """The counters show `kind` ("read"/"write") IO through the backend's
    engine, and no data-path syscall of another engine. direct=False: the
    files were buffered, so reads use pread64 unless buffered_reads=engine and
    writes pwrite64 unless buffered_writes=engine."""
    eng = engine_of(backend)
    assert c["uri"].startswith("rxlab://" + eng), c["uri"]
    ours = ENGINE_SYSCALLS[eng][kind]
    if kind == "write" and not (writes_through_engine(backend) if direct
                                else "buffered_writes=engine" in backend):
        ours = ["pwrite64"]  # every engine writes with pwrite unless asked (conftest)
    if kind == "read" and not direct and pread_allowed(backend):
        ours = ["pread64"]  # a buffered read RocksDB waits for: pread unless asked (conftest)
    for name in ours:
        assert sys_count(c, name) > 0, f"{backend}: no {name} for {kind}s: {c}"
    own_all = {n for k in ENGINE_SYSCALLS[eng].values() for n in k}
    if pwrite_allowed(backend):
        own_all.add("pwrite64")  # buffered writes (WAL, MANIFEST) by design
    if pread_allowed(backend):
        own_all.add("pread64")  # buffered reads (the MANIFEST and WAL at open) by design
    if nowait_allowed(backend):
        own_all.add("preadv2")  # buffered batches and async reads, tried at once first
    for name in DATA_SYSCALLS:
        if name not in own_all:
            assert sys_count(c, name) == 0, f"{backend} issued {name}, which is another engine's"


def seed_of(*parts: object) -> int:
    """A reproducible seed (unlike hash(), which varies per process)."""
    return zlib.crc32(repr(parts).encode())


def private_copy(src: Path, tmp_path: Path) -> Path:
    """A copy of a shared DB for a test that writes to it."""
    dst = tmp_path / "db"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("LOCK"))
    return dst


def hist_total(c: dict) -> int:
    return sum(n for _, n in c["read_latency_ns"])


def hist_min_max(c: dict) -> tuple[int, int]:
    lows = [lo for lo, n in c["read_latency_ns"] if n]
    return min(lows), max(lows)


# ---------------------------------------------------------------- shared DBs

BIG_N = 20_000  # keys of 1000 bytes: ~20 MB, one SST file
ONE_FILE = {"target_file_size_base": 256 << 20, "write_buffer_size": 64 << 20,
            "disable_auto_compactions": True}


def sst_files_per_level(db) -> list[int]:
    return [int(db.property(f"rocksdb.num-files-at-level{lvl}")) for lvl in range(7)]


@pytest.fixture(scope="module")
def big_db(tmp_path_factory) -> tuple[Path, dict[bytes, bytes]]:
    """20k keys x 1 KB compacted into a single SST file (built on posix, direct writes)."""
    path = tmp_path_factory.mktemp("big") / "db"
    expected = load_db(path, "posix", BIG_N, 1000, rocksdb_options(direct=True, **ONE_FILE), seed=7)
    with rxlab.open(path, "default", rocksdb_options(**ONE_FILE)) as db:
        assert sum(sst_files_per_level(db)) == 1, sst_files_per_level(db)
    return path, expected


FAULT_N = 1500
FAULT_SIZES = [10, 100, 700, 1000, 3000, 9000, 20000]


@pytest.fixture(scope="module")
def fault_db(tmp_path_factory) -> tuple[Path, dict[bytes, bytes]]:
    """A small DB of varied value sizes (some larger than a block) in a few SST files."""
    path = tmp_path_factory.mktemp("faults") / "db"
    opts = rocksdb_options(direct=False, write_buffer_size=2 << 20, target_file_size_base=2 << 20)
    expected = load_db(path, "posix", FAULT_N, FAULT_SIZES, opts, seed=11)
    return path, expected


def spaced_keys(rng: random.Random, n: int, stride: int = 12) -> list[bytes]:
    """n distinct keys of big_db, at least `stride` keys apart (so in different
    8 KiB blocks: about 7 entries of 1 KB fit in one)."""
    return [key(i) for i in rng.sample(range(0, BIG_N, stride), n)]


# ---------------------------------------------------------------- round trip

RT_N = 2000
RT_SIZES = [0, 1, 10, 100, 300, 1000, 1000, 2000, 4096, 8192, 8193, 12000, 20000]


def round_trip(open_db, path: Path, backend: str, *, direct: bool, n: int, sizes,
               rng: random.Random) -> tuple[dict, dict, dict[bytes, bytes], int]:
    """Write n keys (background flushes and compactions on a 1 MB memtable),
    overwrite some, delete some, flush, compact, leave a tail only in the WAL,
    close; reopen and check that get (on present and absent keys), forward and
    reverse scans return exactly what was written.

    Returns (counters of the writing DB, counters of the reading DB, expected
    content, bytes of values put)."""
    opts = rocksdb_options(direct=direct, cache="1M", write_buffer_size=1 << 20,
                           target_file_size_base=2 << 20)
    expected: dict[bytes, bytes] = {}
    put_bytes = 0

    def put(db, i):
        nonlocal put_bytes
        v = value_for(rng, sizes)
        db.put(key(i), v)
        expected[key(i)] = v
        put_bytes += len(v)

    db = open_db(path, backend, opts)
    order = list(range(n))
    rng.shuffle(order)
    for i in order:
        put(db, i)
    for i in rng.sample(range(n), n // 8):  # overwrites
        put(db, i)
    for i in rng.sample(range(n), n // 16):
        db.delete(key(i))
        expected.pop(key(i), None)
    db.flush()
    db.compact()
    # A tail that only the WAL holds at close.
    for i in range(n, n + 50):
        put(db, i)
    for i in rng.sample(range(n), 20):
        db.delete(key(i))
        expected.pop(key(i), None)
    c_write = db.counters()
    db.close()

    db = open_db(path, backend, opts)
    probe = [key(i) for i in range(n + 60)] + [b"", b"key", b"key00000001x", b"zzz"]
    rng.shuffle(probe)
    for k in probe:
        got = db.get(k)
        assert got == expected.get(k), f"get({k!r}) on {backend}: {len(got or b'')} bytes"
    fwd = sorted(expected.items())
    scan = db.scan()
    assert len(scan) == len(fwd)
    assert scan == fwd
    assert db.scan(reverse=True) == fwd[::-1]
    # Bounded scans from a start key, both directions.
    m, cnt = len(fwd) // 2, min(100, len(fwd) // 2)
    assert db.scan(start=fwd[m][0], count=cnt) == fwd[m: m + cnt]
    assert db.scan(start=fwd[m][0], count=cnt, reverse=True) == fwd[m - cnt + 1: m + 1][::-1]
    c_read = db.counters()
    db.close()
    return c_write, c_read, expected, put_bytes


def check_round_trip_counters(backend, c_write, c_read, expected, put_bytes, *, direct: bool) -> None:
    if engine_of(backend) is None:
        assert c_write == {"uri": backend}
        assert c_read == {"uri": backend}
        return
    assert_engine_did_io(backend, c_write, "write", direct=direct)
    assert c_write["writes"] > 0
    # Every value went through the engine at least once (the WAL).
    assert c_write["write_bytes"] >= put_bytes, (c_write["write_bytes"], put_bytes)
    assert_engine_did_io(backend, c_read, "read", direct=direct)
    assert c_read["reads"] > 0
    # The cache (1 MB) is far smaller than the data: all of it was read.
    live = sum(len(v) for v in expected.values())
    assert c_read["read_bytes"] >= live, (c_read["read_bytes"], live)
    assert hist_total(c_read) == c_read["reads"], "latency histogram and read count disagree"
    if engine_of(backend) == "posix":
        # a posix read is one timed pread, and that timer is its latency: the histogram (bucket
        # lower bounds, log-linear) sums to just under the preads' own time
        lower = sum(lo * n for lo, n in c_read["read_latency_ns"])
        pread_ns = c_read["sys.pread64.ns"]
        assert 0.8 * pread_ns <= lower <= pread_ns, (lower, pread_ns)


@pytest.mark.parametrize("calls", [1, 7, 8, 9, 40])
def test_buffered_appends_are_all_counted_and_one_in_every_timed(calls):
    """A buffered append's pwrite is counted every call and timed one call in `every` (the first of
    each group of `every`), a timed call standing for `every`: the counters' time is `every` times the
    durations of calls 0, every, 2 every, ... (each measured around the timer by CLOCK_MONOTONIC,
    so a little longer)."""
    r = rxlab._core.sampled_timer(calls, 300.0)
    every, each = r["every"], r["monotonic_ns"]
    assert every > 1 and r["count"] == calls and len(each) == calls
    expected = every * sum(each[0::every])
    assert 0.97 * expected - 20_000 <= r["ns"] <= expected, (r["ns"], expected, each)
    with pytest.raises(ValueError, match=r"^sampled_timer calls=0, sleep_us=300.0: calls must be 1 to"):
        rxlab._core.sampled_timer(0, 300.0)


def test_counters_clock_agrees_with_the_monotonic_clock():
    """The counters time system calls with the TSC where the kernel's clocksource is the TSC,
    scaled by a calibration at load: the same sleep measured by it and by CLOCK_MONOTONIC agrees
    within 0.5% (a wrong scale, or ticks taken for ns, would be off by far more)."""
    source = Path("/sys/devices/system/clocksource/clocksource0/current_clocksource").read_text().strip()
    for sleep_ms in (5.0, 50.0):
        c = rxlab._core.tick_clock(sleep_ms)
        assert c["source"] == ("tsc" if source == "tsc" else "clock_gettime"), (c, source)
        assert c["monotonic_ns"] >= sleep_ms * 1e6
        assert abs(c["counters_ns"] - c["monotonic_ns"]) <= 0.005 * c["monotonic_ns"] + 2000, c
    for bad in (0.0, -1.0, float("nan"), 1e9):
        with pytest.raises(ValueError, match=r"^tick_clock sleep_ms=.*: must be above 0 and at most 10000$"):
            rxlab._core.tick_clock(bad)


@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "direct"])
@pytest.mark.parametrize("backend", BACKENDS, ids=backend_id)
def test_round_trip(backend, direct, tmp_path, open_db):
    """Every backend, direct IO off and on: what was written is read back
    exactly, and the counters show the IO went through the engine (default: none)."""
    res = round_trip(open_db, tmp_path / "db", backend, direct=direct, n=RT_N, sizes=RT_SIZES,
                     rng=random.Random(seed_of(backend, direct, "rt")))
    check_round_trip_counters(backend, *res, direct=direct)


VARIANTS = [
    "io_uring?registered_files=1&max_files=2",  # more files than slots
    "io_uring?fixed_buffers=1&fixed_buf_kb=4",  # blocks larger than the bounce buffers
    "io_uring?depth=1",
    "io_uring?defer_taskrun=1",  # completions posted only when the ring's thread waits
    "io_uring?spin_us=200",  # the reader spins on the completion queue before it sleeps
    "libaio?depth=1",
    "posix?powerloss=1",
    "libaio?powerloss=1",
    "io_uring?powerloss=1",
    "io_uring?buffered_writes=engine&direct_writes=engine",  # every write through the ring: no pwrite64
    "libaio?buffered_writes=engine&direct_writes=engine",
    "io_uring?direct_writes=engine",  # O_DIRECT writes through the ring, the WAL with pwrite
    "io_uring?buffered_reads=engine",  # buffered reads through the ring: no pread64
]
BIG_SIZES = [10, 1000, 9000, 40_000, 200_000]


@pytest.mark.parametrize("direct", [False, True], ids=["buffered", "direct"])
@pytest.mark.parametrize("backend", VARIANTS, ids=backend_id)
def test_round_trip_variants(backend, direct, tmp_path, open_db):
    """Engine options that change the data path (slots, bounce buffers, depth,
    powerloss holding unsynced data until a clean close), with values up to
    200 KB: the same exact round trip."""
    res = round_trip(open_db, tmp_path / "db", backend, direct=direct, n=150, sizes=BIG_SIZES,
                     rng=random.Random(seed_of(backend, direct, "rtv")))
    check_round_trip_counters(backend, *res, direct=direct)
    c_read = res[1]
    if "depth=1" in backend:
        assert c_read["max_inflight"] <= 1
    if "fixed_buffers" in backend and (direct or not pread_allowed(backend)):
        assert c_read["fixed_buf_reads"] > 0  # the small blocks still use them


@pytest.mark.parametrize("backend", ["posix", "io_uring", "default"], ids=backend_id)
def test_iterator_api(backend, fault_db, open_db):
    """The Iterator object: seek/next/prev/seek_for_prev agree with the data."""
    path, expected = fault_db
    items = sorted(expected.items())
    keys = [k for k, _ in items]
    db = open_db(path, backend, rocksdb_options(direct=True, cache="256K"))
    for async_io in (False, True):
        it = db.iterator(async_io=async_io)
        it.seek(keys[500] + b"\0")  # between keys: lands on the next one
        got = []
        while it.valid() and len(got) < 400:
            got.append((it.key(), it.value()))
            it.next()
        it.status()
        assert got == items[501:901]
        it.seek_for_prev(keys[300] + b"\0")
        got = []
        while it.valid() and len(got) < 200:
            got.append((it.key(), it.value()))
            it.prev()
        assert got == items[101:301][::-1]
        it.seek_to_last()
        assert (it.key(), it.value()) == items[-1]
        it.seek_to_first()
        assert (it.key(), it.value()) == items[0]
        it.close()


# ---------------------------------------------------------------- MultiGet

@pytest.mark.parametrize("direct", [True, False], ids=["direct", "buffered"])
@pytest.mark.parametrize("backend", BACKENDS, ids=backend_id)
def test_multi_get_equals_get(backend, direct, tmp_path, open_db):
    """MultiGet returns what Get returns, on random batches of 1..64 keys
    (present, deleted, never written, duplicates) over the memtable, two L0
    files and the last level."""
    rng = random.Random(seed_of(backend, direct, "mg"))
    path = tmp_path / "db"
    opts = rocksdb_options(direct=direct, cache="256K", write_buffer_size=16 << 20,
                           disable_auto_compactions=True)
    n = 2000
    expected = load_db(path, backend, n, [50, 200, 700, 1500, 3000], opts, seed=rng.randrange(1 << 30))
    db = open_db(path, backend, opts)
    deleted = []
    for round_ in range(3):
        for i in rng.sample(range(n + 300), 300):
            v = value_for(rng, [20, 500, 2500])
            db.put(key(i), v)
            expected[key(i)] = v
        for i in rng.sample(range(n), 100):
            db.delete(key(i))
            expected.pop(key(i), None)
            deleted.append(key(i))
        if round_ < 2:
            db.flush()  # two L0 files over the compacted last level; round 3 stays in the memtable
    levels = sst_files_per_level(db)
    assert levels[0] == 2 and sum(levels[1:]) >= 1, levels
    db.reset_counters()

    present = list(expected)
    absent = deleted + [key(i) for i in range(10**7, 10**7 + 200)] + [key(i) + b"x" for i in range(0, n, 37)]
    for b in range(100):
        size = rng.randint(1, 64)
        batch = [rng.choice(present) if rng.random() < 0.7 else rng.choice(absent) for _ in range(size)]
        if b % 10 == 0 and size > 1:
            batch[-1] = batch[0]  # a duplicate
        want = [expected.get(k) for k in batch]
        assert [db.get(k) for k in batch] == want
        assert db.multi_get(batch) == want, f"batch {b} of {size}"
        if b % 3 == 0:
            assert db.multi_get(batch, async_io=True) == want
            assert db.multi_get(batch, optimize_multiget_for_io=False) == want
    if engine_of(backend) is not None:
        c = db.counters()
        assert c["multireads"] > 0, "MultiGet never reached the backend's MultiRead"
        assert c["multiread_reqs"] >= c["multireads"]
        assert_engine_did_io(backend, c, "read", direct=direct)
        if not direct and nowait_allowed(backend):
            # the page cache holds this DB (written buffered): io_uring's batches were read at once
            assert sys_count(c, "preadv2") >= c["multiread_reqs"] and c["nowait_queued"] == 0, nonzero(c)


def checked_multigets(db, expected: dict[bytes, bytes], rng: random.Random, n: int = 10) -> dict:
    """`n` MultiGets of 16 keys in distinct blocks, each checked against `expected`; the counters of
    those alone."""
    db.reset_counters()
    for _ in range(n):
        batch = spaced_keys(rng, 16)
        assert db.multi_get(batch) == [expected[k] for k in batch]
    return db.counters()


@pytest.mark.parametrize("backend", RX_BACKENDS, ids=backend_id)
def test_multiread_queue_depth(backend, big_db, open_db):
    """On one SST file with a small cache, a MultiGet batch reaches MultiRead
    with many blocks; libaio and io_uring keep them in flight together, posix
    reads them one by one."""
    path, expected = big_db
    db = open_db(path, backend, rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    assert sum(sst_files_per_level(db)) == 1
    c = checked_multigets(db, expected, random.Random(3))
    assert c["multireads"] >= 10, c
    assert c["multiread_reqs"] >= 100, c  # most of the 160 keys are in distinct blocks
    if engine_of(backend) == "posix":
        assert c["max_inflight"] <= 1, c["max_inflight"]
    else:
        assert c["max_inflight"] > 1, f"{backend}: MultiRead had no queue depth: {c['max_inflight']}"
        assert c["max_inflight"] >= 8, c["max_inflight"]
    assert_engine_did_io(backend, c, "read")


@pytest.mark.parametrize("backend", ["libaio", "posix"])
def test_a_buffered_multiread_on_libaio_reads_with_pread(backend, big_db, open_db):
    """Linux AIO reads a buffered file inside io_submit, one request after another, so a batch queued to
    libaio is not in flight together: libaio's MultiRead of a buffered file makes the preads posix's
    makes (no io_submit, no io_getevents), with the same values and counts."""
    path, expected = big_db
    db = open_db(path, backend, rocksdb_options(direct=False, cache="64K", **ONE_FILE))
    c = checked_multigets(db, expected, random.Random(5))
    assert c["multireads"] >= 10 and c["multiread_reqs"] >= 100, nonzero(c)
    assert sys_count(c, "pread64") >= c["multiread_reqs"], nonzero(c)
    assert sys_count(c, "io_submit") == 0 and sys_count(c, "io_getevents") == 0, nonzero(c)
    assert c["reads"] >= c["multiread_reqs"] and c["max_inflight"] <= 1, nonzero(c)


@pytest.mark.parametrize("backend", ["io_uring", "io_uring?registered_files=1&fixed_buffers=1",
                                     "io_uring?buffered_batches=engine"], ids=backend_id)
def test_a_buffered_multiread_on_io_uring_queues_only_what_is_not_cached(backend, big_db, open_db,
                                                                          tmp_path):
    """io_uring tries each request of a buffered batch with preadv2(RWF_NOWAIT) first: what the page cache
    holds is read at once, without the ring; only the rest is queued, in flight together. With
    buffered_batches=engine every request is queued."""
    src, expected = big_db
    path = private_copy(src, tmp_path)  # its own files: evicting them leaves the other tests' alone
    db = open_db(path, backend, rocksdb_options(direct=False, cache="64K", **ONE_FILE))
    page_out(path)
    cold = checked_multigets(db, expected, random.Random(11))
    page_in(path)
    warm = checked_multigets(db, expected, random.Random(12))
    for c in (cold, warm):
        assert c["multireads"] >= 10 and c["multiread_reqs"] >= 100, nonzero(c)
        assert c["reads"] == c["multiread_reqs"] and sys_count(c, "pread64") == 0, nonzero(c)
    if not nowait_allowed(backend):
        for c in (cold, warm):
            assert sys_count(c, "preadv2") == 0 and c["nowait_queued"] == 0, nonzero(c)
            assert sys_count(c, "io_uring_enter") >= c["multireads"], nonzero(c)
        return
    # one try per request, two where the first read part of it (the second tells EOF from a missing page)
    for c in (cold, warm):
        assert c["multiread_reqs"] <= sys_count(c, "preadv2") <= 2 * c["multiread_reqs"], nonzero(c)
    assert sys_count(warm, "preadv2") == warm["multiread_reqs"], nonzero(warm)
    # cold: nearly every block missed, and the misses of a batch were in flight together
    assert cold["nowait_queued"] >= cold["multiread_reqs"] // 2, nonzero(cold)
    assert sys_count(cold, "io_uring_enter") > 0 and cold["max_inflight"] >= 8, nonzero(cold)
    # warm: every block read at once, the ring never entered
    assert warm["nowait_queued"] == 0 and sys_count(warm, "io_uring_enter") == 0, nonzero(warm)
    assert warm["max_inflight"] == 1, nonzero(warm)


def nowait_unsupported_dir() -> Path | None:
    """A writable directory whose file system answers RWF_NOWAIT reads with EOPNOTSUPP (tmpfs), or None."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        return None
    probe = shm / f"rxlab-nowait-probe-{os.getpid()}"
    try:
        probe.write_bytes(b"x" * 8192)
        fd = os.open(probe, os.O_RDONLY)
        try:
            os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        except OSError as e:
            return shm if e.errno == errno.EOPNOTSUPP else None
        finally:
            os.close(fd)
    finally:
        probe.unlink(missing_ok=True)
    return None


def test_a_file_system_without_nowait_reads_leaves_the_batches_to_the_ring(big_db, open_db):
    """On a file system that cannot read without waiting (tmpfs answers RWF_NOWAIT with EOPNOTSUPP) each
    file is tried once: its requests then go to io_uring's ring, and MultiGet returns the same values."""
    where = nowait_unsupported_dir()
    if where is None:
        pytest.skip("no writable file system here answers RWF_NOWAIT with EOPNOTSUPP (tmpfs at /dev/shm)")
    src, expected = big_db
    with tempfile.TemporaryDirectory(dir=where, prefix="rxlab-nowait-") as d:
        path = private_copy(src, Path(d))
        db = open_db(path, "io_uring", rocksdb_options(direct=False, cache="64K", **ONE_FILE))
        c = checked_multigets(db, expected, random.Random(13))
        db.close()
    files = sum(1 for _ in src.glob("*.sst"))
    assert c["multiread_reqs"] >= 100 and c["reads"] == c["multiread_reqs"], nonzero(c)
    assert 1 <= sys_count(c, "preadv2") <= files and c["nowait_queued"] == sys_count(c, "preadv2"), nonzero(c)
    assert sys_count(c, "io_uring_enter") >= c["multireads"], nonzero(c)


@pytest.mark.parametrize("backend", ["io_uring", "io_uring?buffered_batches=engine", "libaio"],
                         ids=backend_id)
def test_a_buffered_async_scan_reads_what_is_cached_at_once(backend, big_db, open_db, tmp_path):
    """An async_io scan of buffered files: io_uring's ReadAsync tries preadv2(RWF_NOWAIT) first and queues
    what the page cache lacks (buffered_batches=engine: all of it); libaio's is a pread, as Linux AIO would
    read a buffered file inside io_submit. The scan returns the sync scan's entries either way."""
    src, expected = big_db
    path = private_copy(src, tmp_path)
    db = open_db(path, backend, rocksdb_options(direct=False, block_align=False, cache="1M", **ONE_FILE))
    want = sorted(expected.items())
    counts = {}
    for state in ("cold", "warm"):
        if state == "cold":
            page_out(path)
        else:
            page_in(path)
        db.reset_counters()
        assert db.scan(async_io=True, readahead_size=256 << 10) == want
        c = counts[state] = db.counters()
        assert c["read_async"] > 0 and c["polls"] > 0, nonzero(c)
        assert c["read_bytes"] >= sum(len(v) for v in expected.values()), nonzero(c)
    if engine_of(backend) == "libaio":
        for c in counts.values():
            assert sys_count(c, "pread64") >= c["read_async"], nonzero(c)
            assert sys_count(c, "io_submit") == 0 and sys_count(c, "io_getevents") == 0, nonzero(c)
    elif nowait_allowed(backend):
        cold, warm = counts["cold"], counts["warm"]
        assert sys_count(cold, "preadv2") >= cold["read_async"], nonzero(cold)
        assert cold["nowait_queued"] > 0 and sys_count(cold, "io_uring_enter") > 0, nonzero(cold)
        assert warm["nowait_queued"] == 0 and sys_count(warm, "io_uring_enter") == 0, nonzero(warm)
        assert warm["async_completed"] >= warm["read_async"], nonzero(warm)
    else:
        for c in counts.values():
            assert sys_count(c, "preadv2") == 0 and sys_count(c, "io_uring_enter") > 0, nonzero(c)


def io_uring_fds() -> int:
    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # the directory's own fd is gone by now
            n += "io_uring" in str(fd.readlink())
    return n


@pytest.mark.parametrize("backend", ["default", "default?io_uring=1"], ids=backend_id)
def test_default_io_uring_reference(backend, big_db, open_db):
    """The two references: RocksDB's own file system batches MultiGet through
    a (thread-local) io_uring only when RocksDbIOUringEnable() says so, i.e.
    for "default?io_uring=1", and reads one pread at a time for "default"."""
    path, expected = big_db
    db = open_db(path, backend, rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    batch = spaced_keys(random.Random(43), 32)
    out = {}

    def in_fresh_thread():  # RocksDB's ring is per thread: start from none
        before = io_uring_fds()
        out["values"] = db.multi_get(batch)
        out["new_rings"] = io_uring_fds() - before

    t = threading.Thread(target=in_fresh_thread)
    t.start()
    t.join()
    assert out["values"] == [expected[k] for k in batch]
    if backend == "default":
        assert out["new_rings"] == 0, "default must not use io_uring"
    else:
        assert out["new_rings"] >= 1, "default?io_uring=1 did not batch through io_uring"


# ---------------------------------------------------------------- threads

@pytest.mark.parametrize("backend", ["io_uring", "libaio"])
def test_each_thread_its_own_engine(backend, big_db, open_db):
    """Nothing is shared between reading threads: each has its own ring or AIO
    context (so no lock or shared queue serialises them) and its own counter
    block. Four threads read at once; while all four hold their engines there
    are four new rings (io_uring; libaio contexts have no descriptor, so the
    counter blocks show it), and every thread's reads went through its own."""
    path, expected = big_db
    db = open_db(path, backend, rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    n_threads, per_thread = 4, 200
    keys = spaced_keys(random.Random(44), per_thread * n_threads, stride=4)
    db.reset_counters()
    threads_before = db.counters()["threads"]
    read, done = threading.Barrier(n_threads + 1), threading.Barrier(n_threads + 1)
    got, rings_before = {}, io_uring_fds()

    def reader(i):
        mine = keys[i * per_thread:(i + 1) * per_thread]
        got[i] = [db.get(k) for k in mine] == [expected[k] for k in mine]
        read.wait()
        done.wait()  # hold the thread (and its ring) until the main thread has counted

    ts = [threading.Thread(target=reader, args=(i,)) for i in range(n_threads)]
    for t in ts:
        t.start()
    read.wait()
    rings = io_uring_fds() - rings_before
    done.wait()
    for t in ts:
        t.join()
    assert all(got.values()) and len(got) == n_threads, got
    c = db.counters()
    assert c["threads"] - threads_before == n_threads, (c["threads"], threads_before)
    assert c["reads"] >= n_threads * per_thread // 2, nonzero(c)
    if backend == "io_uring":
        assert rings == n_threads, f"{rings} new rings for {n_threads} reading threads"


@pytest.mark.parametrize("backend", ["io_uring", "libaio", "io_uring?direct_writes=engine"], ids=backend_id)
def test_writes_use_pwrite_unless_asked(backend, tmp_path, open_db):
    """RocksDB writes one request at a time and waits for it, so writes use
    pwrite unless direct_writes=engine / buffered_writes=engine: a thread that
    only appends to the WAL sets up no ring and calls no engine, and a flush's
    O_DIRECT SST writes are pwrite64 calls too, unless direct_writes=engine."""
    db = open_db(tmp_path / "db", backend, rocksdb_options(direct=True, **ONE_FILE))
    db.reset_counters()  # the open read the OPTIONS and MANIFEST files
    out = {}

    def writer():
        before = io_uring_fds()
        for i in range(300):
            db.put(key(i), b"v" * 1000)
        out["new_rings"] = io_uring_fds() - before
        out["c"] = db.counters()

    t = threading.Thread(target=writer)
    t.start()
    t.join()
    c = out["c"]
    engine_calls = c["sys.io_uring_enter.count"] + c["sys.io_submit.count"] + c["sys.io_getevents.count"]
    assert c["writes"] >= 300 and c["write_bytes"] >= 300 * 1000, nonzero(c)
    assert out["new_rings"] == 0, f"{backend}: a thread that only appends set up {out['new_rings']} ring(s)"
    assert engine_calls == 0 and c["sys.pwrite64.count"] == c["writes"], nonzero(c)

    db.reset_counters()
    db.flush(True)  # O_DIRECT SST writes (then reads of the new file, through the engine)
    c = db.counters()
    assert c["writes"] > 0 and c["write_bytes"] >= 300 * 1000, nonzero(c)
    if "direct_writes=engine" in backend:
        assert c["sys.pwrite64.count"] < c["writes"], nonzero(c)  # the SST's writes went through the ring
    else:
        assert c["sys.pwrite64.count"] == c["writes"], nonzero(c)


# ---------------------------------------------------------------- async_io scan

@pytest.mark.parametrize("readahead", [0, 256 << 10], ids=["auto_readahead", "readahead_256k"])
# DEFER_TASKRUN posts completions only when the ring's thread enters the kernel: Poll must still see them
@pytest.mark.parametrize("backend", [*BACKENDS, "io_uring?defer_taskrun=1", "io_uring?spin_us=50"],
                         ids=backend_id)
def test_async_scan_equals_sync_scan(backend, readahead, big_db, open_db):
    """An async_io scan (direct reads, no block_align, so readahead happens)
    returns exactly the sync scan; on rxlab backends ReadAsync and Poll ran."""
    path, expected = big_db
    db = open_db(path, backend, rocksdb_options(direct=True, block_align=False, cache="1M", **ONE_FILE))
    want = sorted(expected.items())
    sync = db.scan(readahead_size=readahead)
    assert sync == want
    db.reset_counters()
    got = db.scan(async_io=True, readahead_size=readahead)
    assert len(got) == len(want)
    assert got == sync
    c = db.counters()
    # Part of a scan, and a seek into the middle, with the iterator object.
    it = db.iterator(async_io=True, readahead_size=readahead)
    it.seek(key(12_345))
    part = []
    while it.valid() and len(part) < 3000:
        part.append((it.key(), it.value()))
        it.next()
    it.status()
    it.close()
    assert part == want[12_345:15_345]
    if engine_of(backend) is not None:
        assert c["read_async"] > 0, f"{backend}: async_io scan never called ReadAsync: {c}"
        assert c["polls"] > 0, f"{backend}: async_io scan never called Poll: {c}"
        assert c["reads"] > 0
        assert c["read_bytes"] >= sum(len(v) for v in expected.values())
        assert_engine_did_io(backend, c, "read")
        if engine_of(backend) != "posix":
            assert c["async_completed"] > 0, c


# ---------------------------------------------------------------- delay_us

DELAY_US = 2000


def mean_get_s(db, keys) -> float:
    lat = []
    for k in keys:
        t = time.perf_counter()
        assert db.get(k) is not None
        lat.append(time.perf_counter() - t)
    return statistics.mean(lat)


@pytest.mark.parametrize("engine", ENGINES)
def test_delay_slows_each_read(engine, big_db, open_db):
    """delay_us=2000 makes every device read take at least 2 ms (a completion
    deadline: max(device time, 2 ms)), so an uncached get takes >= 2 ms per
    storage read, well above its latency without the delay."""
    path, _ = big_db
    opts = rocksdb_options(direct=True, cache="64K", **ONE_FILE)
    rng = random.Random(5)
    keys = spaced_keys(rng, 60)

    db = open_db(path, engine, opts)
    db.reset_counters()
    base = mean_get_s(db, keys[:30])
    base_reads = db.counters()["reads"] / 30
    db.close()

    db = open_db(path, f"{engine}?delay_us={DELAY_US}", opts)
    db.reset_counters()
    delayed = mean_get_s(db, keys[30:])
    c = db.counters()
    reads_per_get = c["reads"] / 30
    assert c["reads"] >= 30, "gets of uncached keys must read from storage"
    expect_extra = reads_per_get * DELAY_US * 1e-6
    assert delayed >= 0.97 * expect_extra, (delayed, reads_per_get)
    # The deadline absorbs the device time itself, hence not base + 2 ms.
    assert delayed - base >= 0.75 * expect_extra, (
        f"{engine}: mean get {delayed / MS:.2f} ms with delay vs {base / MS:.2f} ms without "
        f"({reads_per_get:.2f} reads/get, {base_reads:.2f} without)")
    # Not wildly more either (a sleep with coarse timer slack, a double delay).
    assert delayed <= base + expect_extra + 3 * MS, (delayed, base, reads_per_get)
    assert c["delayed"] > 0
    lo, _ = hist_min_max(c)
    assert lo >= 0.95 * DELAY_US * 1000, f"a read completed in {lo} ns despite delay_us={DELAY_US}"
    assert hist_total(c) == c["reads"]


def timed_multigets(db, rng: random.Random, expected: dict[bytes, bytes], n: int = 5) -> list[float]:
    """Seconds of each of `n` MultiGets of 16 spaced (uncached) keys, their values checked."""
    times = []
    for _ in range(n):
        batch = spaced_keys(rng, 16)
        t = time.perf_counter()
        got = db.multi_get(batch)
        times.append(time.perf_counter() - t)
        assert got == [expected[k] for k in batch]
    return times


@pytest.mark.parametrize("engine", ENGINES)
def test_delay_with_counters_off(engine, big_db, open_db):
    """With the counters off a read takes no start time unless a delay needs one (RunOne, and RunJobs
    for MultiGet's batches): the delay must still hold, each uncached get reading storage at least once
    and each batch of uncached keys taking at least one delay."""
    path, expected = big_db
    db = open_db(path, f"{engine}?delay_us={DELAY_US}&counters=0",
                 rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    delayed = mean_get_s(db, spaced_keys(random.Random(13), 20))
    assert delayed >= 0.97 * DELAY_US * 1e-6, f"{engine}: mean get {delayed / MS:.2f} ms, delay_us={DELAY_US}"
    rng = random.Random(17)
    times = timed_multigets(db, rng, expected)
    assert min(times) >= 0.95 * DELAY_US * 1e-6, (
        f"{engine}: a MultiGet of 16 uncached keys took {min(times) / MS:.2f} ms, delay_us={DELAY_US}")


def test_jitter_spreads_latency(big_db, open_db):
    """jitter_us spreads each read's deadline uniformly around delay_us."""
    path, _ = big_db
    db = open_db(path, "posix?delay_us=2000&jitter_us=1500",
                 rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    db.reset_counters()
    mean_get_s(db, spaced_keys(random.Random(9), 40))
    c = db.counters()
    lo, hi = hist_min_max(c)
    assert lo >= 0.95 * 500_000, lo  # delay - jitter
    assert hi >= lo + 1_000_000, (lo, hi)  # spread over at least 1 ms of the 3 ms range
    assert lo <= 1_500_000 and hi >= 2_500_000, (lo, hi)


@pytest.mark.parametrize("engine", ENGINES)
def test_delay_overlaps_in_multiget(engine, big_db, open_db):
    """A MultiGet batch of 16 blocks in one file: the deadlines overlap on the
    queued engines (far less than 16 x 2 ms), and add up on posix (serial)."""
    path, expected = big_db
    db = open_db(path, f"{engine}?delay_us={DELAY_US}", rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    rng = random.Random(13)
    db.reset_counters()
    times = timed_multigets(db, rng, expected)
    c = db.counters()
    reads_per_batch = c["reads"] / 5
    assert c["multireads"] >= 5
    assert reads_per_batch >= 12, c  # the keys are in distinct blocks
    med = statistics.median(times)
    serial = reads_per_batch * DELAY_US * 1e-6
    assert med >= 0.95 * DELAY_US * 1e-6, med
    if engine == "posix":
        assert med >= 0.95 * serial, (
            f"posix MultiGet of {reads_per_batch:.1f} reads took {med / MS:.1f} ms, "
            f"less than the serial {serial / MS:.1f} ms")
    else:
        assert med <= 0.35 * serial, (
            f"{engine} MultiGet of {reads_per_batch:.1f} reads took {med / MS:.1f} ms: "
            f"the delays did not overlap (serial would be {serial / MS:.1f} ms)")


# ---------------------------------------------------------------- faults

FAULTS = {
    "short_read": "fault_short_read=0.3",
    "eintr": "fault_eintr=0.3",
    "eagain": "fault_eagain=0.3",
    "combined": "fault_short_read=0.3&fault_eintr=0.3&fault_eagain=0.3",
}


def check_all_reads(db, expected: dict[bytes, bytes], rng: random.Random) -> None:
    items = sorted(expected.items())
    for k, v in items:
        assert db.get(k) == v
    assert db.scan() == items
    assert db.scan(async_io=True) == items
    assert db.scan(reverse=True) == items[::-1]
    keys = [k for k, _ in items]
    for _ in range(20):
        batch = rng.sample(keys, rng.randint(1, 64))
        assert db.multi_get(batch) == [expected[k] for k in batch]


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "buffered"])
@pytest.mark.parametrize("fault", list(FAULTS))
@pytest.mark.parametrize("engine", ENGINES)
def test_retried_faults_give_exact_data(engine, fault, direct, fault_db, open_db):
    """Short reads, EINTR and EAGAIN (p=0.3 each, and all together) are retried:
    gets, scans (sync and async) and MultiGet return exactly the data."""
    path, expected = fault_db
    backend = f"{engine}?{FAULTS[fault]}&fault_files=.sst"
    db = open_db(path, backend, rocksdb_options(direct=direct, cache="256K"))
    check_all_reads(db, expected, random.Random(17))
    c = db.counters()
    assert c["faults_injected"] > 0, c
    if fault == "short_read":
        assert c["short_reads"] >= c["faults_injected"], c
    elif fault in ("eintr", "eagain"):
        assert c["retries"] >= c["faults_injected"], c
    else:
        assert c["retries"] > 0 and c["short_reads"] > 0, c
        assert c["retries"] + c["short_reads"] >= c["faults_injected"], c


@pytest.mark.parametrize(("engine", "direct"), [("posix", True), ("posix", False), ("io_uring", False)],
                         ids=["posix-direct", "posix-buffered", "io_uring-buffered"])
def test_a_plain_read_counts_as_the_executor_counts_it(engine, direct, fault_db, open_db, tmp_path):
    """A read RocksDB waits for that one pread serves (posix; any engine's buffered reads) takes a
    path of its own, without the executor's request (ThreadState::Pread). It returns the same data
    and counts the same reads, bytes, calls and latencies as the executor, which a fault option
    sends every SST read through (here with a probability too small to fire)."""
    path, expected = fault_db
    order = random.Random(23).sample(sorted(expected), len(expected))
    names = ["reads", "read_bytes", "short_reads", "retries", "max_inflight", "faults_injected",
             "sys.pread64.count"]
    executor = f"{engine}?fault_eio=1e-15&fault_files=.sst"
    seen = {}
    for path_taken, backend in (("plain", engine), ("executor", executor)):
        # Each opens a copy of the same files: an open rewrites the MANIFEST and OPTIONS, and the next
        # open reads a few bytes more or less of them (new file numbers), which the counts would show.
        db = open_db(private_copy(path, tmp_path / path_taken), backend,
                     rocksdb_options(direct=direct, cache="256K"))
        for k in order:
            assert db.get(k) == expected[k], (backend, k)
        c = db.counters()
        db.close()
        seen[path_taken] = {**{n: c[n] for n in names}, "latencies": hist_total(c)}
    assert seen["plain"]["reads"] > len(expected) // 4, seen
    assert seen["plain"] == seen["executor"]


@pytest.mark.parametrize("backend", ["io_uring?registered_files=1&fixed_buffers=1", "io_uring?sqpoll=1",
                                     "io_uring?defer_taskrun=1"], ids=backend_id)
def test_retried_faults_io_uring_variants(backend, fault_db, open_db):
    """The same on the io_uring variants (fixed buffers copy out; SQPOLL)."""
    path, expected = fault_db
    db = open_db(path, f"{backend}&{FAULTS['combined']}&fault_files=.sst",
                 rocksdb_options(direct=True, cache="256K"))
    check_all_reads(db, expected, random.Random(19))
    c = db.counters()
    assert c["retries"] > 0 and c["short_reads"] > 0, c
    if "fixed_buffers" in backend:
        assert c["fixed_buf_reads"] > 0, c


@pytest.mark.parametrize("engine", ENGINES)
def test_eio_is_a_clear_error(engine, fault_db, tmp_path):
    """fault_eio=1 on SST files: RocksDB reports the read error with the errno text."""
    src, expected = fault_db
    path = private_copy(src, tmp_path)  # this test writes
    backend = f"{engine}?fault_eio=1&fault_files=.sst"
    opts = rocksdb_options(direct=True, cache="256K")
    # With paranoid checks (the default) the open itself reads the tables and fails.
    with pytest.raises(rxlab.RocksDBError) as ei:
        rxlab.open(path, backend, opts)
    msg = str(ei.value)
    assert "Input/output error" in msg and "\n" not in msg, msg
    assert ".sst" in msg, msg
    # Without them the open succeeds and each read of an SST fails.
    with rxlab.open(path, backend, opts + ";paranoid_checks=false") as db:
        k = sorted(expected)[100]
        for call in (lambda: db.get(k), lambda: db.multi_get([k, sorted(expected)[900]]), db.scan):
            with pytest.raises(rxlab.RocksDBError) as ei:
                call()
            msg = str(ei.value)
            assert "Input/output error" in msg and "\n" not in msg, msg
        # The memtable still answers; the DB is usable and closes cleanly.
        db.put(b"fresh", b"value")
        assert db.get(b"fresh") == b"value"
    with rxlab.open(path, engine, opts) as db:
        assert db.get(k) == expected[k]
        assert db.get(b"fresh") == b"value"


@pytest.mark.parametrize("engine", ENGINES)
def test_random_eio_never_gives_wrong_data(engine, fault_db, open_db):
    """fault_eio=0.2: every read is either the exact value or a RocksDBError
    naming the I/O error; never a wrong value or a missing key."""
    path, expected = fault_db
    db = open_db(path, f"{engine}?fault_eio=0.2&fault_files=.sst&fault_seed=3",
                 rocksdb_options(direct=True, cache=None, paranoid_checks=False))
    rng = random.Random(23)
    keys = sorted(expected)
    ok = errors = 0
    for k in rng.sample(keys, 300):
        try:
            got = db.get(k)
        except rxlab.RocksDBError as e:
            assert "Input/output error" in str(e) and "\n" not in str(e), str(e)
            errors += 1
        else:
            assert got == expected[k]
            ok += 1
    for _ in range(30):
        batch = rng.sample(keys, 8)
        try:
            got = db.multi_get(batch)
        except rxlab.RocksDBError as e:
            assert "Input/output error" in str(e), str(e)
            errors += 1
        else:
            assert got == [expected[k] for k in batch]
            ok += 1
    assert ok > 0 and errors > 0, (ok, errors)
    assert db.counters()["faults_injected"] > 0


@pytest.mark.parametrize("where", ["wal", "flush"])
@pytest.mark.parametrize("engine", ENGINES)
def test_enospc_is_a_clear_error(engine, where, tmp_path, open_db):
    """enospc_after: writes end with a RocksDBError saying no space, in the
    WAL (a foreground put) or in a flush (direct writes of an SST); the process
    survives, acknowledged writes stay readable and survive a reopen."""
    path = tmp_path / "db"
    if where == "wal":
        opts = rocksdb_options(direct=False, write_buffer_size=8 << 20)
    else:
        opts = rocksdb_options(direct=True, write_buffer_size=64 << 10)
    db = open_db(path, f"{engine}?enospc_after=300000", opts)
    rng = random.Random(29)
    acked: dict[bytes, bytes] = {}
    err = None
    try:
        for i in range(5000):
            v = rng.randbytes(1000)
            db.put(key(i), v)
            acked[key(i)] = v
            if where == "flush" and i % 50 == 49:
                db.flush()
    except rxlab.RocksDBError as e:
        err = str(e)
    assert err is not None, "writes never failed with enospc_after=300000"
    assert "No space" in err or "ENOSPC" in err, err
    assert "\n" not in err, err
    assert 0 < len(acked) < 300, len(acked)
    # Later writes fail the same clear way (or succeed); reads still work.
    try:
        db.put(b"after", b"x")
    except rxlab.RocksDBError as e:
        assert "No space" in str(e) or "ENOSPC" in str(e), str(e)
    for k, v in list(acked.items())[-20:]:
        assert db.get(k) == v
    try:
        db.close()
    except rxlab.RocksDBError as e:
        assert "\n" not in str(e), str(e)
    with rxlab.open(path, engine, opts) as db:
        for k, v in acked.items():
            assert db.get(k) == v, f"acknowledged {k!r} lost after ENOSPC"


# ---------------------------------------------------------------- bad input


# (backend, RocksDB options, exception, words the one-line message must contain)
BAD_INPUT = [
    ("nosuch", "", ValueError, ["nosuch", "posix", "io_uring"]),
    ("rxlab://iouring", "", ValueError, ["iouring"]),
    ("io_uring?bogus=1", "", ValueError, ["bogus"]),
    ("posix?sqpoll=1", "", ValueError, ["sqpoll"]),  # an io_uring option on posix
    ("posix?delay_us=-1", "", ValueError, ["delay_us", "-1"]),
    ("io_uring?sqpoll=2", "", ValueError, ["sqpoll", "2"]),
    ("libaio?fault_eio=1.5", "", ValueError, ["fault_eio", "1.5"]),
    ("posix?fault_short_read=abc", "", ValueError, ["fault_short_read", "abc"]),
    ("libaio?depth=0", "", ValueError, ["depth", "0"]),
    ("io_uring?depth=5000", "", ValueError, ["depth", "5000"]),
    ("posix?delay_us=10&jitter_us=20", "", ValueError, ["jitter_us", "20"]),
    ("io_uring?fixed_buf_kb=1", "", ValueError, ["fixed_buf_kb", "1"]),
    ("io_uring?max_files=0", "", ValueError, ["max_files", "0"]),
    ("io_uring?iopoll=1", "", ValueError, ["iopoll", "io_poll"]),
    ("io_uring?defer_taskrun=1&sqpoll=1", "", ValueError, ["defer_taskrun=1", "sqpoll=1"]),
    ("io_uring?spin_us=2000000", "", ValueError, ["spin_us=2000000", "between 0 and 1000000"]),
    ("io_uring?spin_us=100&defer_taskrun=1", "", ValueError, ["spin_us", "defer_taskrun=1"]),
    ("posix?delay_us", "", ValueError, ["delay_us"]),
    ("posix?enospc_after=lots", "", ValueError, ["enospc_after", "lots"]),
    ("libaio?buffered_reads=aio", "", ValueError, ["buffered_reads='aio'", "pread or engine"]),
    ("io_uring?buffered_batches=maybe", "", ValueError, ["buffered_batches='maybe'", "nowait or engine"]),
    ("posix?buffer_align=page", "", ValueError, ["buffer_align=page", "auto, 0"]),
    ("libaio?buffer_align=768", "", ValueError, ["buffer_align=768", "power of two"]),
    ("default?foo=1", "", ValueError, ["foo=1"]),
    ("default?io_uring=2", "", ValueError, ["io_uring=2"]),
    ("posix", "no_such_option=1", ValueError, ["no_such_option"]),
    ("posix", "write_buffer_size=abc", ValueError, ["write_buffer_size", "abc"]),
    ("io_uring", "block_based_table_factory={block_size=abc}", ValueError, ["block_size", "abc"]),
    ("default", "use_direct_reads=maybe", ValueError, ["use_direct_reads", "maybe"]),
]


@pytest.mark.parametrize(("backend", "options", "exc", "words"), BAD_INPUT,
                         ids=[f"{b}|{o}" for b, o, _, _ in BAD_INPUT])
def test_bad_input_one_line_error(backend, options, exc, words, tmp_path):
    if "iopoll=1" in backend and polled_queues_present():
        pytest.skip("this machine has a device with polled queues: iopoll=1 is valid here")
    path = tmp_path / "db"
    with pytest.raises(exc) as ei:
        rxlab.open(path, backend, options)
    msg = str(ei.value)
    assert type(ei.value) is exc or (exc is rxlab.RocksDBError and isinstance(ei.value, exc))
    assert msg and "\n" not in msg, repr(msg)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"
    # parse_uri gives the same verdict for rxlab URIs.
    if options == "" and not backend.startswith("default"):
        with pytest.raises(ValueError) as ei2:
            rxlab.parse_uri(backend)
        assert "\n" not in str(ei2.value)
        for w in words:
            assert w in str(ei2.value)


def test_sync_engine_is_for_rxlab_fio_only(tmp_path):
    """fio's sync engine (lseek + read) moves the file offset that RocksDB's
    threads share: a valid engine URI (rxlab fio uses it), refused for a DB."""
    assert rxlab.parse_uri("sync")["engine"] == "sync"
    with pytest.raises(ValueError) as ei:
        rxlab.open(tmp_path / "db", "sync")
    msg = str(ei.value)
    assert "\n" not in msg and "'sync'" in msg and "posix" in msg, msg


@pytest.mark.parametrize("backend", ["default", "posix", "io_uring"])
def test_path_is_a_regular_file(backend, tmp_path):
    f = tmp_path / "not_a_dir"
    f.write_bytes(b"x")
    with pytest.raises(rxlab.RocksDBError) as ei:
        rxlab.open(f, backend, rocksdb_options())
    msg = str(ei.value)
    assert "\n" not in msg and str(f) in msg, msg
    assert "not a directory" in msg or "Not a directory" in msg, msg


def test_parse_uri_good():
    d = rxlab.parse_uri("rxlab://io_uring?sqpoll=1&fixed_buffers=1&delay_us=100")
    assert d["engine"] == "io_uring"
    assert d["options"]["sqpoll"] == "1" and d["options"]["delay_us"] == "100"
    assert d["uri"].startswith("rxlab://io_uring?")
    # buffer_align: auto by default (left out of the canonical URI), 0 or a power of two
    assert rxlab.parse_uri("posix")["options"]["buffer_align"] == "auto"
    assert rxlab.parse_uri("posix?buffer_align=auto")["uri"] == "rxlab://posix"
    assert rxlab.parse_uri("posix?buffer_align=0")["uri"] == "rxlab://posix?buffer_align=0"
    # ENGINES are those RocksDB runs on; sync (lseek + read) serves rxlab fio only
    assert {e["name"] for e in rxlab.engines()} == {*ENGINES, "sync"}
    assert {e["name"] for e in rxlab.engines() if e["rocksdb"]} == set(ENGINES)


def test_uri_one_parser_for_every_spelling():
    """A backend is taken apart in one place (the C++ registry): the bare name,
    the rxlab:// URI and RocksDB's own file system all parse, with one
    canonical form (defaults dropped, options in name order) and one label."""
    for spelling in ("posix", "rxlab://posix", "posix?depth=64", "rxlab://posix?counters=1&"):
        d = rxlab.parse_uri(spelling)
        assert (d["engine"], d["uri"], d["label"], d["set"], d["is_default"]) == \
            ("posix", "rxlab://posix", "posix", {}, False), (spelling, d)
    d = rxlab.parse_uri("io_uring?sqpoll=1&delay_us=100&registered_files=0")
    assert d["uri"] == "rxlab://io_uring?delay_us=100&sqpoll=1"
    assert d["label"] == "io_uring?delay_us=100&sqpoll=1"
    assert d["set"] == {"delay_us": "100", "sqpoll": "1"}
    for spelling, label in (("default", "default"), ("default?io_uring=0", "default"),
                            ("default?io_uring=1", "default?io_uring=1"),
                            ("rxlab://default?io_uring=1", "default?io_uring=1")):
        d = rxlab.parse_uri(spelling)
        assert d["engine"] == "default" and d["is_default"], d
        assert d["uri"] == d["label"] == label, (spelling, d)  # not an rxlab:// URI
    with pytest.raises(ValueError, match="io_uring='2'"):
        rxlab.parse_uri("default?io_uring=2")
    with pytest.raises(ValueError, match="unknown option 'sqpoll'"):
        rxlab.parse_uri("default?sqpoll=1")


def test_format_uri_canonical():
    """format_uri builds what parse_uri reads back: canonical order, defaults
    dropped, booleans as 1/0, a URI's own options merged (the later wins)."""
    assert rxlab._core.format_uri("posix") == "rxlab://posix"
    assert rxlab._core.format_uri("io_uring", {"sqpoll": True, "registered_files": False, "depth": 32}) == \
        "rxlab://io_uring?depth=32&sqpoll=1"
    assert rxlab._core.format_uri("rxlab://io_uring?sqpoll=1", {"delay_us": 50}, prefix=False) == \
        "io_uring?delay_us=50&sqpoll=1"
    assert rxlab._core.format_uri("io_uring?sqpoll=1", {"sqpoll": 0}) == "rxlab://io_uring"
    assert rxlab._core.format_uri("default", {"io_uring": 1}) == "default?io_uring=1"
    assert rxlab._core.format_uri("default", {"io_uring": False}) == "default"
    for engine in rxlab._core.backends():
        uri = rxlab._core.format_uri(engine)
        assert rxlab.parse_uri(uri)["uri"] == uri
    assert rxlab._core.backends() == ["default", *[e["name"] for e in rxlab.engines() if e["rocksdb"]]]
    with pytest.raises(ValueError) as ei:
        rxlab._core.format_uri("posix", {"sqpoll": 1})
    assert "sqpoll" in str(ei.value) and "\n" not in str(ei.value)
    with pytest.raises(ValueError, match="nosuch"):
        rxlab._core.format_uri("nosuch")


def test_closed_db_raises(tmp_path):
    db = rxlab.open(tmp_path / "db", "posix", rocksdb_options())
    db.put(b"a", b"b")
    db.close()
    assert db.closed
    with pytest.raises(rxlab.RocksDBError) as ei:
        db.get(b"a")
    assert "closed" in str(ei.value)


# ---------------------------------------------------------------- GIL

@pytest.mark.parametrize("engine", ENGINES)
def test_gil_released_during_slow_read(engine, big_db, open_db, tmp_path):
    """A thread blocked in a 50 ms read does not stop another thread's quick
    gets (served from the memtable)."""
    path = private_copy(big_db[0], tmp_path)  # this test writes
    db = open_db(path, f"{engine}?delay_us=50000", rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    db.put(b"hot", b"v")
    slow_keys = spaced_keys(random.Random(31), 4)
    stop = threading.Event()
    stamps: list[float] = []

    def quick():
        while not stop.is_set():
            assert db.get(b"hot") == b"v"
            stamps.append(time.perf_counter())

    def slow():
        for k in slow_keys:
            db.get(k)

    tq = threading.Thread(target=quick)
    ts = threading.Thread(target=slow)
    tq.start()
    time.sleep(0.01)
    t0 = time.perf_counter()
    ts.start()
    ts.join()
    t1 = time.perf_counter()
    stop.set()
    tq.join()
    assert t1 - t0 >= 4 * 0.05 * 0.95, "the slow reads were not slow"
    during = [s for s in stamps if t0 <= s <= t1]
    assert len(during) >= 100, len(during)
    gap = max(b - a for a, b in zip([t0, *during], [*during, t1], strict=True))
    assert gap < 0.025, f"the quick thread stalled {gap / MS:.1f} ms behind a 50 ms read"


@pytest.mark.parametrize("engine", ENGINES)
def test_two_threads_read_concurrently(engine, big_db, open_db):
    """Two threads doing delayed gets (and a MultiGet) on one DB overlap: the
    wall time is about that of one thread, not the sum."""
    path, expected = big_db
    db = open_db(path, f"{engine}?delay_us=20000", rocksdb_options(direct=True, cache="64K", **ONE_FILE))
    keys = spaced_keys(random.Random(37), 14)
    db.reset_counters()
    errors = []

    def work(ks):
        try:
            for k in ks[:6]:
                assert db.get(k) == expected[k]
            assert db.multi_get(ks[6:]) == [expected[k] for k in ks[6:]]
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(keys[i::2],)) for i in range(2)]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t
    assert not errors, errors
    c = db.counters()
    assert c["reads"] >= 12
    assert c["threads"] >= 2
    # One thread: 6 gets x 20 ms + its MultiGet (>= 20 ms); both serialised >= 280 ms.
    serial = 2 * (6 + 1) * 0.02
    assert wall < 0.75 * serial, (
        f"{engine}: two threads took {wall / MS:.0f} ms, serial is {serial / MS:.0f} ms")


# ---------------------------------------------------------------- counters

def test_counters_off(tmp_path, open_db):
    """counters=0: the data path is the same and nothing is counted."""
    res = round_trip(open_db, tmp_path / "db", "io_uring?counters=0", direct=True, n=150,
                     sizes=BIG_SIZES, rng=random.Random(41))
    for c in res[:2]:
        assert c["uri"] == "rxlab://io_uring?counters=0"
        counts = {k: v for k, v in c.items() if isinstance(v, int) and k != "threads"}
        assert counts and not any(counts.values()), {k: v for k, v in counts.items() if v}
        assert c["read_latency_ns"] == []


# ---------------------------------------------------------------- the stub

def _public(obj) -> set[str]:
    return {n for n in dir(obj) if not n.startswith("_")}


def test_the_stub_names_what_the_module_has():
    """rxlab/_core.pyi lists every public function, class, method and attribute of the module, and no more."""
    tree = ast.parse((Path(rxlab.__file__).parent / "_core.pyi").read_text())
    top, classes = set(), {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            top.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            top.add(node.target.id)
        elif isinstance(node, ast.ClassDef):
            top.add(node.name)
            classes[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)
                                  and not n.name.startswith("_")}
    assert top == _public(_core)
    for name, methods in classes.items():
        if name != "RocksDBError":
            assert methods == _public(getattr(_core, name)), name
