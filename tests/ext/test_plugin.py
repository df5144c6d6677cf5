"""Stock db_bench (the release build rxlab uses) on rxlab's engines through
the plugin, LD_PRELOADed into db_bench only. The counters JSON the plugin
writes at exit proves the IO went through our file system."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import pread_allowed
from helpers_plugin import describe, found, read_counters, run_db_bench

pytestmark = pytest.mark.timeout(120)

NUM = 20000

# The syscalls that carry the engine's data path, and those it must not use.
ENGINE_SYSCALLS = {
    "posix": (("pread64", "pwrite64"), ("io_submit", "io_getevents", "io_uring_enter")),
    "libaio": (("io_submit", "io_getevents"), ("pread64", "pwrite64", "io_uring_enter")),
    "io_uring": (("io_uring_enter",), ("pread64", "pwrite64", "io_submit", "io_getevents")),
}

ENGINES = ["posix", "libaio", "io_uring", "io_uring?registered_files=1&fixed_buffers=1",
           "io_uring?buffered_writes=engine&direct_writes=engine", "libaio?buffered_reads=engine"]


def nonzero(c: dict) -> str:
    """Counters that are not zero, in full (pytest abbreviates big dicts)."""
    return ", ".join(f"{k}={v}" for k, v in sorted(c.items()) if v and not k.endswith(".ns"))


def with_counters(engine: str, path: Path) -> str:
    sep = "&" if "?" in engine else "?"
    return f"rxlab://{engine}{sep}counters_path={path}"


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "buffered"])
@pytest.mark.parametrize("engine", ENGINES)
def test_fillseq_flush_readrandom(tmp_path, engine, direct):
    cpath = tmp_path / "counters.json"
    db = tmp_path / "db"
    proc = run_db_bench([
        f"--fs_uri={with_counters(engine, cpath)}", f"--db={db}",
        "--benchmarks=fillseq,flush,readrandom", f"--num={NUM}", f"--reads={NUM}",
        # A small block cache, so that readrandom reads SST blocks from storage.
        "--cache_size=65536", f"--use_direct_reads={str(direct).lower()}", "--seed=1",
    ])
    info = describe(proc)
    assert proc.returncode == 0, info
    assert found(proc.stdout, "readrandom") == (NUM, NUM), info
    ssts = list(db.glob("*.sst"))
    assert ssts, f"no SST file in {db}: the data never left the memtable\n{info}"

    data = read_counters(cpath)
    c = data["counters"]
    base = engine.split("?")[0]
    assert data["uri"].startswith(f"rxlab://{base}"), data["uri"]
    if "registered_files=1" in engine:
        assert "registered_files=1" in data["uri"] and "fixed_buffers=1" in data["uri"], data["uri"]
    assert data["threads"] >= 1, data
    # Reads: the SST blocks readrandom fetched came through us.
    assert c["reads"] > 0, nonzero(c)
    assert c["reads"] >= NUM // 10, f"{NUM} lookups with a 64 KB cache: {nonzero(c)}"
    assert c["read_bytes"] >= c["reads"], nonzero(c)
    assert c["read_bytes"] / c["reads"] <= 1 << 20, nonzero(c)  # no absurd average read size
    assert sum(n for _, n in data["read_latency_ns"]) == c["reads"], (
        "the read latency histogram must hold one sample per read", data["read_latency_ns"], c)
    # Writes: the WAL and the SST files were written through us.
    assert c["writes"] > 0, nonzero(c)
    sst_bytes = sum(p.stat().st_size for p in ssts)
    assert c["write_bytes"] >= sst_bytes, (c["write_bytes"], sst_bytes)
    # The engine's own syscalls carried the data; the others were not used.
    used, unused = ENGINE_SYSCALLS[base]
    buffered_preads = not direct and pread_allowed(engine)
    if buffered_preads:
        used = ("pread64",)  # a buffered read RocksDB waits for is a pread unless buffered_reads=engine
    for name in used:
        assert c[f"sys.{name}.count"] > 0, f"{name}: {nonzero(c)}"
    for name in unused:
        all_through_engine = "buffered_writes=engine" in engine and "direct_writes=engine" in engine
        if name == "pwrite64" and not all_through_engine:
            continue  # writes use pwrite64 unless buffered_writes=engine and direct_writes=engine
        if name == "pread64" and pread_allowed(engine):
            continue  # buffered files (the OPTIONS file read back, SSTs without O_DIRECT) use pread64
        assert c[f"sys.{name}.count"] == 0, f"{name}: {nonzero(c)}"
    if base == "posix" or buffered_preads:
        assert c["sys.pread64.count"] >= c["reads"], nonzero(c)
    if base == "posix":
        assert c["sys.pwrite64.count"] >= c["writes"], nonzero(c)
    if "fixed_buffers=1" in engine and direct:
        assert c["fixed_buf_reads"] > 0, nonzero(c)


@pytest.mark.parametrize("engine", ["io_uring", "libaio", "posix"])
def test_multireadrandom_batched(tmp_path, engine):
    """MultiRead keeps a batch in flight together on io_uring and libaio;
    posix (pread) is the serial baseline, one request at a time."""
    cpath = tmp_path / "counters.json"
    proc = run_db_bench([
        f"--fs_uri={with_counters(engine, cpath)}", f"--db={tmp_path / 'db'}",
        "--benchmarks=fillseq,flush,multireadrandom", f"--num={NUM}", f"--reads={NUM}",
        "--multiread_batched=true", "--batch_size=16", "--cache_size=65536",
        "--use_direct_reads=true", "--seed=1",
    ])
    info = describe(proc)
    assert proc.returncode == 0, info
    assert found(proc.stdout, "multireadrandom") == (NUM, NUM), info
    c = read_counters(cpath)["counters"]
    assert c["multireads"] > 0, nonzero(c)
    assert c["multiread_reqs"] > c["multireads"], nonzero(c)
    if engine == "posix":
        # pread completes inside the call: nothing is ever queued (the
        # counter reads 0 for this synchronous engine).
        assert c["max_inflight"] <= 1, nonzero(c)
    else:
        assert c["max_inflight"] > 1, nonzero(c)


@pytest.mark.parametrize(("uri", "bad_part"), [
    ("rxlab://nosuch", "nosuch"),
    ("rxlab://io_uring?bogus=1", "bogus"),
    ("rxlab://posix?powerloss=2", "powerloss"),
    ("rxlab://libaio?depth=0", "depth"),
    ("rxlab://posix?buffer_align=1000", "buffer_align"),
    ("rxlab://io_uring?sqpoll", "sqpoll"),
    ("rxlab://sync", "sync"),  # rxlab fio's lseek+read engine: not for RocksDB
])
def test_bad_uri_one_line(tmp_path, uri, bad_part):
    proc = run_db_bench([f"--fs_uri={uri}", f"--db={tmp_path / 'db'}", "--benchmarks=fillseq",
                         "--num=10"], timeout=60)
    info = describe(proc)
    ours = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.startswith("rxlab:")]
    assert len(ours) == 1, f"want exactly one 'rxlab: ...' line, got {ours}\n{info}"
    assert ours[0] in proc.stderr.splitlines(), f"the rxlab line must go to stderr\n{info}"
    assert bad_part in ours[0], f"{ours[0]!r} does not name {bad_part!r}"
    assert proc.returncode != 0 or "Failed creating env" in proc.stdout + proc.stderr, info
    assert proc.returncode > 0, f"db_bench must exit with an error, not a signal\n{info}"


@pytest.mark.parametrize("engine", ["posix", "io_uring"])
def test_compaction_readahead_past_32_mib_reads_what_was_written(tmp_path, engine):
    """A compaction that reads an SST of more than 32 MiB with O_DIRECT, through 2 MiB readaheads.

    buffer_align=auto used to switch a file from the logical block to a page after 16 page-aligned
    reads: at 32 MiB into a compaction input, and RocksDB's prefetch buffer kept data placed for the
    old alignment, so the block there failed its checksum ("block checksum mismatch ... size 4099")
    and the write stopped. With the plugin of 66824ea this command failed 5 runs of 5.
    """
    db = tmp_path / "db"
    proc = run_db_bench([
        f"--fs_uri=rxlab://{engine}", f"--db={db}", "--benchmarks=fillrandom", "--num=100000",
        "--key_size=16", "--value_size=1000", "--write_buffer_size=2097152", "--compression_type=none",
        "--use_direct_reads=true", "--use_direct_io_for_flush_and_compaction=true", "--seed=1",
    ])
    info = describe(proc)
    assert proc.returncode == 0, info
    assert "Corruption" not in proc.stdout + proc.stderr, info
    assert re.search(r"^fillrandom\s*:.* 100000 operations", proc.stdout, re.M), info
    assert max(p.stat().st_size for p in db.glob("*.sst")) > 32 << 20, (
        f"no SST past 32 MiB: the case is not exercised\n{info}")
