"""The whole FileOptions contract on every engine (issue 29), as RocksDB's posix
file system honours it: memory-mapped reads and writes (allow_mmap_reads,
allow_mmap_writes), a recycled WAL written from its start (ReuseWritableFile),
allow_fallocate and is_fd_close_on_exec; and what cannot be honoured refused
at open with the option named.

A mapped read hands RocksDB a pointer into the mapping and may be given no
scratch buffer at all: PlainTable with allow_mmap_reads read "Bad address"
through a pread-only file. Mapped reads are page faults, not engine requests:
the counters show them as mmap_reads/mmap_read_bytes, apart from reads and
from the engines' system calls.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import DATA_SYSCALLS, ENGINES, key, load_db, rocksdb_options

import rxlab

N = 3000


def _data_syscalls(c: dict) -> dict[str, int]:
    return {n: c[f"sys.{n}.count"] for n in DATA_SYSCALLS if c[f"sys.{n}.count"]}


def _read_back(db, expected: dict[bytes, bytes]) -> None:
    ks = sorted(expected)
    for k in ks[::7]:
        assert db.get(k) == expected[k]
    assert db.multi_get(ks[:64]) == [expected[k] for k in ks[:64]]
    assert db.scan(count=len(ks)) == [(k, expected[k]) for k in ks]
    assert db.scan(ks[100], count=50, async_io=True) == [(k, expected[k]) for k in ks[100:150]]


@pytest.mark.parametrize("engine", ENGINES)
def test_mmap_reads_block_based_are_page_faults_not_engine_reads(tmp_path, engine):
    opts = rocksdb_options(direct=False, cache=None, allow_mmap_reads=True)
    expected = load_db(tmp_path / "db", engine, N, 200, opts)
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        db.reset_counters()
        _read_back(db, expected)
        c = db.counters()
    assert c["mmap_reads"] > 0 and c["mmap_read_bytes"] >= N * 200, c
    # Every table read came from the mapping: no engine read, no read syscall.
    assert c["reads"] == 0 and c["read_bytes"] == 0, c
    assert _data_syscalls(c) == {}, c


@pytest.mark.parametrize("engine", ENGINES)
def test_plain_table_with_mmap_reads(tmp_path, engine):
    """PlainTable reads its file through the mapping with a null scratch buffer."""
    opts = ("allow_mmap_reads=true;table_factory=PlainTable;compression=kNoCompression;"
            "prefix_extractor=rocksdb.FixedPrefix.3")
    expected = load_db(tmp_path / "db", engine, N, 100, opts)
    files = [p for p in (tmp_path / "db").iterdir() if p.is_file()]
    tables = sum(p.stat().st_size for p in files if p.suffix == ".sst")
    others = sum(p.stat().st_size for p in files if p.suffix != ".sst")
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        # PlainTable reads each file once, at open, and then serves every get
        # from the mapping without another Read: the counters are taken after
        # the open and the gets.
        for k in sorted(expected)[::5]:
            assert db.get(k) == expected[k]
        c = db.counters()
    assert tables > 0 and c["mmap_read_bytes"] >= tables, (tables, c)
    # The engine read only the other files (MANIFEST, WAL, OPTIONS).
    assert c["read_bytes"] <= others, (others, c)


@pytest.mark.parametrize("engine", ENGINES)
def test_mmap_writes_write_the_tables_and_read_back(tmp_path, engine):
    opts = rocksdb_options(direct=False, allow_mmap_writes=True)
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        expected = {key(i): os.urandom(300) for i in range(N)}
        for k, v in expected.items():
            db.put(k, v)
        db.reset_counters()
        db.flush()
        db.compact()
        c = db.counters()
    # The tables went through mappings (the WAL and MANIFEST never do:
    # RocksDB turns mmap writes off for them).
    assert c["mmap_writes"] > 0 and c["mmap_write_bytes"] >= N * 300, c
    assert c["sys.mmap.count"] > 0 and c["sys.munmap.count"] > 0, c
    sst = sorted((tmp_path / "db").glob("*.sst"))
    assert sst and all(p.stat().st_size > 0 for p in sst)
    # The files hold exactly what was written (Close trimmed the mapped
    # regions' tails): read back through ordinary reads and through mappings.
    for o in (rocksdb_options(direct=True), rocksdb_options(direct=False, allow_mmap_reads=True)):
        with rxlab.open(tmp_path / "db", engine, o) as db:
            _read_back(db, expected)


@pytest.mark.parametrize("engine", ENGINES)
def test_recycled_wal_is_written_from_its_start(tmp_path, engine):
    """recycle_log_file_num: RocksDB renames an old WAL (ReuseWritableFile) and
    writes it from offset 0 over the old records, whose log number tells the
    reader where the new ones end. Appended after them instead, the new
    records are never read back at recovery: writes acknowledged, then lost."""
    opts = rocksdb_options(direct=False, recycle_log_file_num=2)
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        for i in range(4):
            db.put(b"flushed%d" % i, b"x" * 1000)
            db.flush()
        last = {b"wal%04d" % i: os.urandom(100) for i in range(200)}
        for k, v in last.items():
            db.put(k, v)
    log = (tmp_path / "db" / "LOG").read_text(errors="replace")
    assert "reusing log" in log, "the test did not reach a recycled WAL"
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        assert {k: db.get(k) for k in last} == last


def _fd_flags(path_part: str) -> list[int]:
    """open(2) flags of this process's descriptors whose target contains path_part."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            if path_part in target and target.endswith(".sst"):
                for line in Path(f"/proc/self/fdinfo/{fd}").read_text().splitlines():
                    if line.startswith("flags:"):
                        out.append(int(line.split()[1], 8))
        except OSError:
            pass
    return out


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("cloexec", [True, False])
def test_is_fd_close_on_exec(tmp_path, engine, cloexec):
    opts = rocksdb_options(direct=False, is_fd_close_on_exec=cloexec)
    expected = load_db(tmp_path / "db", engine, 500, 100, opts)
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        assert db.get(min(expected)) == expected[min(expected)]
        flags = _fd_flags(str(tmp_path / "db"))
    assert flags, "no table file open"
    assert all(bool(f & os.O_CLOEXEC) == cloexec for f in flags), [oct(f) for f in flags]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("allow", [True, False])
def test_allow_fallocate(tmp_path, engine, allow):
    """allow_fallocate=false bypasses preallocation (of the WAL, the tables)."""
    opts = rocksdb_options(direct=False, allow_fallocate=allow)
    with rxlab.open(tmp_path / "db", engine, opts) as db:
        for i in range(500):
            db.put(key(i), b"v" * 100)
        db.flush()
        c = db.counters()
    assert (c["sys.fallocate.count"] > 0) == allow, c


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("option", ["delay_us=100", "fault_eio=0.01"])
def test_mmap_reads_refused_where_an_option_acts_on_device_reads(tmp_path, engine, option):
    """delay_us and the read faults act on device reads; a mapped read is a page
    fault that never reaches the engine, so the open is refused, naming both."""
    opts = rocksdb_options(direct=False)
    expected = load_db(tmp_path / "db", engine, 500, 100, opts)
    name = option.split("=")[0]
    with (pytest.raises(rxlab.RocksDBError, match=rf"allow_mmap_reads.*{name}") as e,
          rxlab.open(tmp_path / "db", f"{engine}?{option}", opts + ";allow_mmap_reads=true") as db):
        db.get(min(expected))
    assert "Not implemented" in str(e.value) or "NotSupported" in str(e.value), e.value


@pytest.mark.parametrize("engine", ENGINES)
def test_mmap_writes_refused_with_powerloss(tmp_path, engine):
    with (pytest.raises(rxlab.RocksDBError, match=r"allow_mmap_writes.*powerloss=1"),
          rxlab.open(tmp_path / "db", f"{engine}?powerloss=1",
                     rocksdb_options(direct=False, allow_mmap_writes=True)) as db):
        db.put(b"k", b"v")
        db.flush()
