"""The driver on real IO at small scale: rxlab.bench.driver + ext/bench workloads.

Each db_bench workload runs on a small DB in a tmp dir (the root ext4 file
system, where O_DIRECT works) and its counts are checked against what the
workload must have done: ops, calls, found, bytes, the per-op histograms,
PerfContext block reads, the backend's counters, the 1 Hz series and the
perf_event counters. Job names (overwritesome, flush_mt_l0, fwdrange,
revrange, readrandom2/3) run through driver.expand as the CLI runs them.

Also here: a step row built by hand from known snapshots through
driver.step_row and rxlab.core.metrics (the driver's half of the metrics
contract; rxlab.core.metrics alone is covered by test_metrics.py), and a DB loaded
by rxlab read by the release db_bench and the reverse.

The CLI (`rxlab bench`, `rxlab fio`, `rxlab runs`, `rxlab show`) is in
test_cli.py.
"""
from __future__ import annotations

import itertools
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rxlab.bench import driver, references
from rxlab.bench import irq as bench_irq
from rxlab.bench.turns import read_ops, read_progress
from rxlab.core import metrics, store
from rxlab.core.builds import active_build

pytestmark = pytest.mark.timeout(120)

N = 20000          # keys loaded
VS = 100           # value size
KS = 16            # key size
ENTRY = KS + VS    # bytes a workload counts per key-value pair
BIG = 1000         # value size of the few keys rewritten to make the order visible


def dbkey(i: int, key_size: int = KS) -> bytes:
    """db_bench's key layout: the 8-byte big-endian index, '0'-padded."""
    return i.to_bytes(8, "big") + b"0" * (key_size - 8)


def make_spec(path: Path, **kw) -> driver.RunSpec:
    """A small spec with the seeds' defaults (8 KiB blocks, block_align, no
    compression, O_DIRECT) and a 64 KiB block cache, much smaller than the DB."""
    d = {"db": str(path), "num": N, "key_size": KS, "value_size": VS, "cache_size": 64 << 10, "seed": 1}
    d.update(kw)
    spec = driver.RunSpec(**d)
    driver.validate(spec)
    return spec


@pytest.fixture
def open_session(tmp_path):
    """open_session(**spec fields) -> driver.Session on tmp_path/db, closed at teardown."""
    opened: list[driver.Session] = []

    def _open(name: str = "db", **kw) -> driver.Session:
        s = driver.Session(make_spec(tmp_path / name, **kw))
        opened.append(s)
        return s

    yield _open
    for s in opened:
        s.close()


def step(sess: driver.Session, name: str, **kw) -> dict:
    return sess.run_step({"name": name, "label": name, **kw})


def hcount(row: dict, op: str) -> int:
    return sum(c for _, c in row["histograms"].get(op, []))


def load(sess: driver.Session) -> dict:
    """fillseq + flush: keys 0..N-1 in one L0 file."""
    fill = step(sess, "fillseq")
    step(sess, "flush")
    return fill


def big_first_keys(sess: driver.Session, n: int = 5) -> None:
    """Rewrite keys 0..n-1 with BIG-byte values: bytes counted show which keys a step visited."""
    for i in range(n):
        sess.db.put(dbkey(i), b"b" * BIG)


def files_at(sess: driver.Session, level: int) -> int:
    return int(sess.db.property(f"rocksdb.num-files-at-level{level}"))


# ------------------------------------------------------------------ fills


@pytest.mark.parametrize("threads", [1, 2])
def test_fillseq(open_session, threads):
    s = open_session(threads=threads)
    sst0 = int(s.db.property("rocksdb.total-sst-files-size"))
    row = step(s, "fillseq")
    # batch_size 1: one Write per key; the threads split the key space
    assert row["ops"] == row["calls"] == N
    assert row["threads"] == threads
    assert row["found"] == 0 and row["bytes"] == N * ENTRY
    assert set(row["histograms"]) == {"put"} and hcount(row, "put") == N
    assert row["benchmark"] == row["name"] == "fillseq"
    step(s, "flush")
    assert int(s.db.property("rocksdb.total-sst-files-size")) >= sst0 + N * ENTRY
    for i in (0, 1, N // 2, N - 1):
        v = s.db.get(dbkey(i))
        assert v is not None and len(v) == VS, i
    assert s.db.get(dbkey(N)) is None
    assert [k for k, _ in s.db.scan()] == [dbkey(i) for i in range(N)]


def test_fillrandom(open_session):
    s = open_session()
    row = step(s, "fillrandom")
    assert row["ops"] == row["calls"] == hcount(row, "put") == N
    assert row["bytes"] == N * ENTRY
    keys = [k for k, _ in s.db.scan()]
    # N uniform draws from N keys hit N (1 - 1/e) distinct ones (sd about 0.3 %)
    assert len(keys) == pytest.approx(N * (1 - math.exp(-1)), rel=0.02)
    assert all(int.from_bytes(k[:8], "big") < N and k[8:] == b"0" * 8 for k in keys)


def test_overwrite_and_overwritesome(open_session):
    s = open_session()
    load(s)
    before = dict(s.db.scan())
    row = step(s, "overwrite")
    assert row["ops"] == row["calls"] == hcount(row, "put") == N
    assert row["bytes"] == N * ENTRY
    after = dict(s.db.scan())
    assert after.keys() == before.keys()  # same keys, new values
    changed = sum(after[k] != before[k] for k in before)
    assert changed > 0.55 * N, changed  # ~63 % of the keys were drawn
    (some,) = driver.expand(["overwritesome"])
    row = s.run_step(some)
    assert (row["name"], row["benchmark"], row["job"]) == ("overwritesome", "overwrite", "overwritesome")
    assert row["ops"] == hcount(row, "put") == N // 10
    assert len(s.db.scan()) == N


# ------------------------------------------------------------------ reads


def test_readrandom_found_counts(open_session):
    s = open_session()
    load(s)
    row = step(s, "readrandom", ops=3000)
    assert row["ops"] == row["calls"] == row["found"] == 3000
    assert row["bytes"] == 3000 * ENTRY
    assert set(row["histograms"]) == {"get"} and hcount(row, "get") == 3000
    # a key space twice the loaded one: about half of the keys exist
    half = step(s, "readrandom", ops=3000, num=2 * N)
    assert half["ops"] == 3000
    assert 0.4 * 3000 < half["found"] < 0.6 * 3000, half["found"]
    assert half["bytes"] == half["found"] * ENTRY
    # ops is per thread
    two = step(s, "readrandom", ops=1500, threads=2)
    assert two["threads"] == 2
    assert two["ops"] == two["found"] == hcount(two, "get") == 3000


def test_readseq_readreverse_order_and_counts(open_session):
    s = open_session()
    load(s)
    big_first_keys(s, 5)
    # the first five keys now hold BIG-byte values: ascending order reads them first
    fwd = step(s, "readseq", ops=5)
    rev = step(s, "readreverse", ops=5)
    assert fwd["ops"] == fwd["found"] == rev["ops"] == rev["found"] == 5
    assert fwd["bytes"] == 5 * (KS + BIG)
    assert rev["bytes"] == 5 * ENTRY
    for name in ("readseq", "readreverse"):
        row = step(s, name, ops=2 * N)  # more ops than keys: one pass over every key
        assert row["ops"] == row["found"] == row["calls"] == N, name
        assert row["bytes"] == (N - 5) * ENTRY + 5 * (KS + BIG), name
        assert hcount(row, "next") == N and hcount(row, "seek") == 1, name


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_seekrandom(open_session, reverse):
    s = open_session(seek_nexts=10)
    load(s)
    row = step(s, "seekrandom", ops=2000, reverse_iterator=reverse)
    assert row["ops"] == row["calls"] == row["found"] == 2000
    assert set(row["histograms"]) == {"seek"} and hcount(row, "seek") == 2000
    # seek_nexts entries per seek, fewer only within 10 keys of the end
    assert 0.99 * 2000 * 10 * ENTRY <= row["bytes"] <= 2000 * 10 * ENTRY


def test_fwdrange_revrange_direction(open_session):
    s = open_session(seek_nexts=5)
    load(s)
    big_first_keys(s, 5)
    # num=1: every seek targets key 0. Forward visits keys 0..4; reverse finds
    # key 0 and nothing before it.
    fwd, rev = (s.run_step(st) for st in driver.expand([{"name": "fwdrange", "num": 1, "ops": 100},
                                                        {"name": "revrange", "num": 1, "ops": 100}]))
    assert (fwd["name"], fwd["job"], fwd["benchmark"]) == ("fwdrange", "fwdrange", "seekrandom")
    assert (rev["name"], rev["job"], rev["benchmark"]) == ("revrange", "revrange", "seekrandom")
    assert fwd["found"] == rev["found"] == 100
    assert fwd["bytes"] == 100 * 5 * (KS + BIG)
    assert rev["bytes"] == 100 * (KS + BIG)


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "vector"])
def test_multireadrandom(open_session, batched):
    s = open_session(batch_size=16, multiread_batched=batched, perf_level=2)
    load(s)
    row = step(s, "multireadrandom", ops=1000)
    calls = math.ceil(1000 / 16)
    assert row["calls"] == calls and row["ops"] == row["found"] == calls * 16
    assert set(row["histograms"]) == {"multiget"} and hcount(row, "multiget") == calls
    assert row["bytes"] == row["found"] * ENTRY
    assert "async_io" not in row["notes"]
    # multiread_stride=1: a batch is 16 neighbouring keys, which share a block or two;
    # random keys need a block each (the 64 KiB cache holds 8 of ~290 data blocks)
    stride = step(s, "multireadrandom", ops=1000, multiread_stride=1)
    assert stride["calls"] == calls and stride["ops"] == stride["found"] == calls * 16
    assert row["pc.block_read_count"] > 0.5 * row["ops"], row["pc.block_read_count"]
    assert stride["pc.block_read_count"] < 0.3 * row["pc.block_read_count"]
    # async_io does nothing for MultiGet without coroutines: the row says so
    note = step(s, "multireadrandom", ops=160, async_io=True)
    assert note["ops"] == note["found"] == 160 and note["calls"] == 10
    assert "async_io" in note["notes"] and "coroutines" in note["notes"]


@pytest.mark.parametrize(("name", "op"), [("readwhilewriting", "get"), ("seekrandomwhilewriting", "seek")])
def test_whilewriting(open_session, name, op):
    rate = 1 << 20
    s = open_session(duration=1.0, write_rate_limit=rate, seek_nexts=2)
    load(s)
    row = step(s, name)
    assert row["wall_s"] == pytest.approx(1.0, abs=0.3)
    assert row["writer_ops"] > 0
    written = row["writer_ops"] * ENTRY
    # the token bucket holds the writer to its rate, and the writer keeps up with it
    assert 0.3 * rate * row["wall_s"] <= written <= 1.2 * rate * row["wall_s"] + ENTRY
    # ops, found and the histogram are the readers' (the writer's puts are not in them)
    assert row["ops"] > 100 and row["found"] == row["ops"]
    assert set(row["histograms"]) == {op} and hcount(row, op) == row["ops"]
    assert f"the writer did {row['writer_ops']} puts" in row["notes"]


# A process running readwhilewriting for 3 s at 1 MiB/s, its readers counting in a progress file; it prints
# the step's writer puts and wall time.
HELD_WRITER = """
import json, sys
from rxlab.bench import driver
spec = driver.RunSpec(**json.loads(sys.argv[1]))
s = driver.Session(spec)
s.run_step({"name": "fillseq"})
row = s.run_step({"name": "readwhilewriting", "progress_file": sys.argv[2]})
s.close()
print(json.dumps({"writer_ops": row["writer_ops"], "wall_s": row["wall_s"]}))
"""


def test_a_writer_held_back_keeps_at_most_a_tenth_of_a_second_of_credit(tmp_path):
    """The *whilewriting writer stopped for 1.5 s (a process measured in slices is) catches up at most
    0.1 s of its rate when it runs again, not the whole pause's bytes at once."""
    rate, held = 1 << 20, 1.5
    spec = make_spec(tmp_path / "db", duration=3.0, write_rate_limit=rate, cache_size=64 << 20)
    ops = tmp_path / "ops"
    with subprocess.Popen([sys.executable, "-c", HELD_WRITER, json.dumps(spec.to_dict()), str(ops)],
                          stdout=subprocess.PIPE, text=True) as p:
        deadline = time.monotonic() + 60
        while read_ops(ops) == 0 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)
        p.send_signal(signal.SIGSTOP)
        time.sleep(held)
        p.send_signal(signal.SIGCONT)
        out, _ = p.communicate(timeout=60)
    assert p.returncode == 0
    got = json.loads(out.strip().splitlines()[-1])
    written, running = got["writer_ops"] * ENTRY, got["wall_s"] - held
    assert got["wall_s"] >= held
    # its rate over the time it ran, plus 0.1 s of credit; without the cap it wrote rate x wall_s
    assert 0.3 * rate * running <= written <= 1.2 * rate * (running + 0.1) + ENTRY, (written, got)


@pytest.mark.parametrize(("name", "threads"), [("readrandom", 2), ("readseq", 1), ("readwhilewriting", 2),
                                               ("fillrandom", 2)])
def test_a_progress_file_holds_every_workers_operations(open_session, tmp_path, name, threads):
    """progress_file: two int64 a worker, its operations and their bytes so far; at the step's end they sum
    to the step's ops and bytes (what rxlab.bench.turns reads between the slices of a process)."""
    s = open_session(threads=threads, duration=0.3)
    load(s)
    path = tmp_path / f"ops-{name}"
    row = step(s, name, progress_file=str(path))
    assert path.stat().st_size == 16 * threads
    assert row["ops"] > 0 and read_progress(path) == (row["ops"], row["bytes"])
    again = step(s, name, progress_file=str(path))      # a step naming the same file continues its counts
    assert read_progress(path) == (row["ops"] + again["ops"], row["bytes"] + again["bytes"])
    other = tmp_path / f"ops-{name}-other"
    other.write_bytes(b"\x07" * (16 * threads + 8))      # another layout: counted from zero
    third = step(s, name, progress_file=str(other))
    assert other.stat().st_size == 16 * threads and read_progress(other) == (third["ops"], third["bytes"])
    assert read_ops(tmp_path / "none") == 0 and read_progress(tmp_path / "none") == (0, 0)
    with pytest.raises(Exception, match=r"progress_file '/nonexistent/ops'"):
        step(s, name, progress_file="/nonexistent/ops")


def test_mixgraph_mix(open_session):
    s = open_session()
    load(s)
    row = step(s, "mixgraph", ops=4000)
    h = {op: hcount(row, op) for op in row["histograms"]}
    assert set(h) == {"get", "put", "seek"}
    assert sum(h.values()) == row["ops"] == row["calls"] == 4000
    # the ZippyDB mix of the lab report: 0.85 get, 0.14 put, 0.01 seek
    assert h["get"] / 4000 == pytest.approx(0.85, abs=0.04)
    assert h["put"] / 4000 == pytest.approx(0.14, abs=0.04)
    assert 0 < h["seek"] / 4000 <= 0.03
    assert row["found"] == h["get"] + h["seek"]  # every key exists
    assert "keys uniform" in row["notes"]
    # bytes as db_bench counts them in mixgraph: Gets' and scans' keys and values, never the Puts'
    puts_only = step(s, "mixgraph", ops=500, mix_get_ratio=0.0, mix_put_ratio=1.0, mix_seek_ratio=0.0)
    assert hcount(puts_only, "put") == 500 and puts_only["bytes"] == 0


# ------------------------------------------------------------------ flush and compaction


@pytest.mark.parametrize("dynamic", [False, True], ids=["static-levels", "dynamic-levels"])
def test_flush_mt_l0_then_compact(open_session, dynamic):
    # RocksDB 9's default, level_compaction_dynamic_level_bytes=true, drains the L1 that
    # compact0 fills into the base level (L6 for a small DB) during the wait that follows
    s = open_session(options=f"level_compaction_dynamic_level_bytes={str(dynamic).lower()}")
    load(s)
    for _ in range(2):
        step(s, "overwrite", ops=2000)
        fl = step(s, "flush")
    assert fl["ops"] == fl["calls"] == hcount(fl, "flush") == 1
    assert files_at(s, 0) == 3  # below level0_file_num_compaction_trigger (4): no compaction yet
    rows = [s.run_step(st) for st in driver.expand(["flush_mt_l0"])]
    assert [r["benchmark"] for r in rows] == ["flush", "waitforcompaction", "compact0", "waitforcompaction"]
    assert all(r["name"] == r["job"] == "flush_mt_l0" and r["ops"] == 1 for r in rows)
    assert files_at(s, 0) == 0
    levels = s.db.property("rocksdb.levelstats")
    if dynamic:
        assert sum(files_at(s, lv) for lv in range(1, 7)) >= 1, levels
    else:
        assert files_at(s, 1) >= 1 and sum(files_at(s, lv) for lv in range(2, 7)) == 0, levels
    assert len(s.db.scan()) == N
    c = step(s, "compact")
    assert c["ops"] == 1 and hcount(c, "compact") == 1
    assert files_at(s, 0) == 0 and sum(files_at(s, lv) for lv in range(1, 7)) >= 1
    assert len(s.db.scan()) == N


# ------------------------------------------------------------------ what a step records


def test_block_reads_bytes_and_backend_counters(open_session):
    s = open_session(perf_level=2)
    assert s.spec.use_direct_reads and s.spec.block_align and s.spec.block_size == 8192
    load(s)
    row = step(s, "readrandom", ops=3000)
    n, b = row["pc.block_read_count"], row["pc.block_read_byte"]
    # a 64 KiB cache over ~290 data blocks: nearly every Get reads a block
    assert n > 0.5 * 3000 and b > 0
    assert 0.5 * 8192 <= b / n <= 8192, b / n
    # the backend (posix, O_DIRECT) saw those reads, whole aligned blocks each
    assert row["fs.reads"] >= 0.9 * n
    assert row["fs.read_bytes"] >= b
    assert 4096 <= row["fs.read_bytes"] / row["fs.reads"] <= 16384
    assert row["fs.sys.pread64.count"] >= row["fs.reads"]
    # perf_level 1 (the default) records no PerfContext
    s2 = open_session(name="db2", perf_level=1)
    load(s2)
    assert not any(k.startswith("pc.") for k in step(s2, "readrandom", ops=100))


def test_ops_series_and_perf_events(open_session):
    s = open_session(duration=3.0, perf_events=True)
    load(s)
    row = step(s, "readrandom")
    assert row["wall_s"] == pytest.approx(3.0, abs=0.25)
    assert hcount(row, "get") == row["ops"] == row["found"]
    ts = row["timeseries"]
    assert len(ts) >= 2, ts
    t = [p["t_s"] for p in ts]
    ops = [p["ops"] for p in ts]
    # one row a second from the step's start, each with that second's
    # operations (from the C++ 1 Hz series) beside the device and CPU samples
    assert t[0] == pytest.approx(0.0, abs=0.05)
    assert all(b - a == pytest.approx(1.0, abs=0.05) for a, b in itertools.pairwise(t)), t
    assert all(n > 0 for n in ops), ops
    assert sum(ops) <= row["ops"] * 1.001 and sum(ops) >= row["ops"] * (len(ts) - 0.5) / row["wall_s"] * 0.8
    assert all("disk_reads" in p and "cpu_user_s" in p for p in ts), ts[0]
    # software events work here: task-clock of the reader thread, at most its wall time
    assert 0 < row["perf.task_clock_ns"] <= row["wall_s"] * 1e9 * 1.05
    assert row["perf.context_switches"] >= 0
    if row["perf.hw_available"]:
        assert row["perf.cycles"] > 0  # a machine with a PMU: nothing to say unavailable
    else:
        assert math.isnan(row["perf.cycles"]) and math.isnan(row["perf.instructions"])
    assert row["perf.enabled"] is True
    # the reader's own CPU is part of the process's, and most of it over 3 s
    worker = row["worker_cpu_user_s"] + row["worker_cpu_sys_s"]
    process = row["cpu_user_s"] + row["cpu_sys_s"]
    assert 0 < worker <= process * 1.01, (worker, process)
    # and its wait for a CPU (scheduler run_delay) is part of its wall time
    assert 0 <= row["worker_run_delay_s"] <= row["wall_s"]
    # perf_events=False (the default: they cost CPU) opens none
    off = step(s, "readrandom", duration=0.5, perf_events=False)
    assert off["perf.enabled"] is False and off["ops"] > 0
    assert not any(k.startswith("perf.") and k not in ("perf.enabled", "perf.hw_available") for k in off)


def test_run_stores_steps_and_readrandom3_drops_the_bloom_filter(tmp_path):
    """driver.run end to end: job expansion with a reopen, rows in the store."""
    spec = make_spec(tmp_path / "db", name="jobs", reads=3000,
                     steps=["fillrandom", "flush", "readrandom2", "readrandom3"])
    path = driver.run(spec, root=tmp_path / "runs", progress=False)
    assert store.is_complete(path)
    run = store.load_run(path)
    assert run.steps["name"].tolist() == ["fillrandom", "flush", "readrandom2", "readrandom3"]
    assert run.spec["steps"] == spec.steps
    st = run.steps.set_index("name")
    rr2, rr3 = st.loc["readrandom2"], st.loc["readrandom3"]
    assert rr2["benchmark"] == rr3["benchmark"] == "readrandom"
    # fillrandom wrote ~63 % of the keys. Each step has its own seed (as each db_bench
    # benchmark has): readrandom does not just replay the keys fillrandom drew.
    assert rr2["ops"] == rr3["ops"] == 3000
    for rr in (rr2, rr3):
        assert 0.55 * 3000 < rr["found"] < 0.71 * 3000, rr["found"]
    assert rr2["found"] != rr3["found"]  # other keys (equal by chance with odds ~1/60)
    # misses inside the key range: the filter answers them, until readrandom3 reopens without it
    useful = "ticker.rocksdb.bloom.filter.useful"
    assert rr2.get(useful, 0) > 0.5 * (3000 - rr2["found"])
    assert not rr3.get(useful, 0) > 0  # NaN or 0: no filter
    h = run.histograms
    assert h[(h["name"] == "readrandom2") & (h["op"] == "get")]["count"].sum() == 3000
    cat = store.catalog(tmp_path / "runs")
    assert len(cat) == 4 and cat["run_id"].nunique() == 1
    seed = metrics.seed_columns(cat)
    assert (seed["qps"] > 0).all()


def test_table_options_in_spec_options_merge_with_the_specs_own(tmp_path):
    """RocksDB replaces the whole table factory when a string names it twice; the driver merges
    instead, so extra table options keep the spec's block size, alignment, cache and filter.
    Checked in the OPTIONS file RocksDB writes, i.e. what it really applied."""
    spec = make_spec(tmp_path / "db", name="opts", steps=["fillseq", "flush"],
                     options="block_based_table_factory={cache_index_and_filter_blocks=true};"
                             "max_open_files=321")
    driver.run(spec, root=tmp_path / "runs", progress=False)
    text = max((tmp_path / "db").glob("OPTIONS-*")).read_text()
    table = text.split("[TableOptions/BlockBasedTable")[1]
    for line in (f"block_size={spec.block_size}", "block_align=true", "cache_index_and_filter_blocks=true",
                 "filter_policy=bloomfilter"):
        assert line in table, line
    assert "max_open_files=321" in text


def test_cache_size_zero_means_no_block_cache(tmp_path):
    """RocksDB's string parser left its default 32 MiB cache in place beside no_block_cache=true;
    without a cache every Get reads its data block from the file system."""
    spec = make_spec(tmp_path / "db", name="nocache", cache_size=0, reads=2000,
                     steps=["fillseq", "flush", "compact", "readrandom"])
    run = store.load_run(driver.run(spec, root=tmp_path / "runs", progress=False))
    rr = run.steps.set_index("name").loc["readrandom"]
    assert rr["fs.reads"] == rr["ops"] == 2000
    assert not rr.get("ticker.rocksdb.block.cache.data.hit", 0) > 0


def test_split_options_keeps_braced_values_and_refuses_unbalanced_braces():
    assert driver.split_options("a=1; b={x=1;y={z=2}} ;c=3;a=4") == {"a": "4", "b": "{x=1;y={z=2}}", "c": "3"}
    assert driver.split_options("") == {}
    with pytest.raises(ValueError, match="unbalanced"):
        driver.split_options("b={x=1")
    with pytest.raises(ValueError, match="not name=value"):
        driver.split_options("nonsense")


# ------------------------------------------------------------------ metrics from a step row


def test_step_row_from_known_snapshots():
    """driver.step_row turns a C++ result and the snapshots around it into raw
    columns; rxlab.core.metrics derives the seeds' columns from those. Known answers:
    1000 gets in 2 s, 400 device reads of 16 sectors taking 20 ms in all,
    10 ms user and 5 ms system CPU, 50 us mean latency."""
    res = {"name": "readrandom", "ops": 1000, "calls": 1000, "found": 990, "bytes": 990 * ENTRY,
           "wall_s": 2.0, "start_mono_s": 100.0, "writer_ops": 0, "notes": ["a", "b"],
           "histograms": [{"op": "get", "count": 1000, "sum_ns": 50_000_000, "max_ns": 250_000,
                           "buckets": [(40_000, 500), (60_000, 500)],
                           "percentiles_us": {"p50": 40.0, "p99": 60.0}},
                          {"op": "seek", "count": 1, "sum_ns": 1000, "max_ns": 1000,
                           "buckets": [(1000, 1)], "percentiles_us": {"p50": 1.0}}],
           "perf_events": {"task_clock_ns": 12_000_000, "context_switches": 7, "cycles": -1,
                           "instructions": -1},
           "perf_context": {"block_read_count": 400}, "iostats_context": {"bytes_read": 400 * 8192},
           "ops_series": [(101.0, 480), (102.0, 1000)]}
    d0 = {"reads": 5, "read_sectors": 80, "read_ticks_ms": 2**32 - 5, "writes": 1, "write_sectors": 8,
          "write_ticks_ms": 3, "in_flight": 0, "io_ticks_ms": 0}
    d1 = {"reads": 405, "read_sectors": 80 + 6400, "read_ticks_ms": 15, "writes": 4,
          "write_sectors": 8 + 4096, "write_ticks_ms": 4, "in_flight": 2, "io_ticks_ms": 30}
    c0 = {"user": 10.0, "system": 5.0, "idle": 100.0}
    c1 = {"user": 10.5, "system": 5.25, "idle": 101.0}
    r0 = {"self_user_s": 1.0, "self_sys_s": 0.5, "self_nvcsw": 10, "self_nivcsw": 1, "self_minflt": 100,
          "self_majflt": 0}
    r1 = {"self_user_s": 1.010, "self_sys_s": 0.505, "self_nvcsw": 30, "self_nivcsw": 2,
          "self_minflt": 150, "self_majflt": 0}
    f0 = {"reads": 10, "read_bytes": 10 * 8192, "uri": "rxlab://posix", "threads": 1}
    f1 = {"reads": 410, "read_bytes": 410 * 8192, "uri": "rxlab://posix", "threads": 2}
    t0 = {"rocksdb.block.cache.miss": 7, "rocksdb.bytes.read": 0}
    t1 = {"rocksdb.block.cache.miss": 407, "rocksdb.bytes.read": 0}
    step_ = {"name": "readrandom", "label": "readrandom2", "job": "readrandom2"}
    row = driver.step_row(step_, {"threads": 1}, res, d0, d1, c0, c1, r0, r1, f0, f1, t0, t1, "posix")

    assert (row["name"], row["benchmark"], row["job"], row["backend"]) == \
        ("readrandom2", "readrandom", "readrandom2", "posix")
    assert row["op"] == "get"  # the op with the most samples
    assert row["lat_mean_us"] == pytest.approx(50.0) and row["max_us"] == pytest.approx(250.0)
    assert row["p50_us"] == 40.0 and row["p99_us"] == 60.0
    assert row["disk_reads"] == 400 and row["disk_read_sectors"] == 6400
    assert row["disk_read_ticks_ms"] == 20  # across the 32-bit wrap of the millisecond field
    assert row["disk_in_flight"] == 2  # a gauge: its value at the end
    assert row["vcsw"] == 20 and row["ivcsw"] == 1 and row["minflt"] == 50
    assert row["system_cpu.user"] == pytest.approx(0.5) and row["system_cpu.busy"] == pytest.approx(0.75)
    assert row["fs.reads"] == 400 and row["fs.read_bytes"] == 400 * 8192 and "fs.threads" not in row
    assert row["ticker.rocksdb.block.cache.miss"] == 400 and "ticker.rocksdb.bytes.read" not in row
    assert row["pc.block_read_count"] == 400 and row["iostats.bytes_read"] == 400 * 8192
    assert row["perf.task_clock_ns"] == 12_000_000
    assert math.isnan(row["perf.cycles"]) and row["perf.hw_available"] is False
    assert row["notes"] == "a | b"
    assert row["histograms"] == {"get": [(40.0, 500), (60.0, 500)], "seek": [(1.0, 1)]}
    assert "timeseries" not in row  # Session.run_step adds the sampled series

    seed = metrics.seed_columns(row).iloc[0]
    assert seed["qps"] == pytest.approx(500.0)
    assert seed["iops"] == pytest.approx(200.0)
    assert seed["reqsz"] == pytest.approx(8.0)
    assert seed["usPer"] == pytest.approx(10.0)
    assert seed["syPer"] == pytest.approx(5.0)
    assert seed["cpuPer"] == pytest.approx(15.0)
    assert seed["rx.lat"] == pytest.approx(50.0)
    assert seed["io.lat"] == pytest.approx(50.0)
    assert seed["wmbps"] == pytest.approx(1.0)  # 4096 sectors = 2 MiB in 2 s
    assert seed["test"] == "readrandom2"
    # against a fio row measured the same way: 250 IOPS at 2 us user, 12 us CPU per read
    fio = {"name": "fio", "ops": 500, "wall_s": 2.0, "cpu_user_s": 0.001, "cpu_sys_s": 0.005,
           "disk_reads": 500, "disk_read_sectors": 8000, "disk_read_ticks_ms": 20}
    eff = metrics.efficiency(row, fio).iloc[0]
    assert eff["io.eff"] == pytest.approx(0.8)
    assert eff["us.inc"] == pytest.approx(8.0)
    assert eff["cpu.inc"] == pytest.approx(3.0)


# ------------------------------------------------------------------ db_bench interoperability

DB_BENCH_FLAGS = {"key_size": KS, "value_size": VS, "compression_type": "none", "block_size": 8192,
                  "block_align": True, "bloom_bits": 10, "cache_size": 64 << 10, "use_direct_reads": True,
                  "use_direct_io_for_flush_and_compaction": True, "threads": 1, "seed": 1}


def _db_bench() -> Path:
    path = references.db_bench_path()
    if not path.is_file():
        pytest.skip(f"release db_bench not built at {path}: run `make rocksdb`")
    return path


def _interop_spec(db: Path, **kw) -> driver.RunSpec:
    return make_spec(db, compression="none", bloom_bits=10, block_size=8192, block_align=True, **kw)


def test_db_loaded_by_rxlab_is_read_by_db_bench(tmp_path):
    db_bench = _db_bench()
    db = tmp_path / "db"
    s = driver.Session(_interop_spec(db))
    try:
        assert step(s, "fillseq")["ops"] == N
        step(s, "flush")
    finally:
        s.close()
    rows = references.run_db_bench(db_bench, {"benchmarks": "readrandom", "use_existing_db": True, "db": db,
                                        "num": N, "reads": 2000, **DB_BENCH_FLAGS},
                             timeout=120, log_path=tmp_path / "db_bench.log", background_s=0.05)
    assert [r["name"] for r in rows] == ["readrandom"]
    assert (rows[0]["found"], rows[0]["found_of"]) == (2000, 2000), (tmp_path / "db_bench.log").read_text()


def test_db_loaded_by_db_bench_is_read_by_rxlab(tmp_path):
    db_bench = _db_bench()
    db = tmp_path / "db"
    rows = references.run_db_bench(db_bench, {"benchmarks": "fillseq,flush", "db": db, "num": N,
                                              **DB_BENCH_FLAGS}, timeout=120, background_s=0.05)
    assert [r["name"] for r in rows] == ["fillseq"] and rows[0]["ops"] == N
    s = driver.Session(_interop_spec(db, use_existing_db=True))
    try:
        row = step(s, "readrandom", ops=2000)
        assert row["ops"] == row["found"] == 2000
        assert row["bytes"] == 2000 * ENTRY
        seq = step(s, "readseq")
        assert seq["ops"] == seq["found"] == N
        assert len(s.db.get(dbkey(123))) == VS
        assert s.db.get(dbkey(N)) is None
    finally:
        s.close()


def test_same_seed_draws_the_keys_db_bench_draws(tmp_path):
    """--seed means what it means in db_bench: thread i of a step draws db_bench's keys
    (mt19937_64 seeded with seed + the threads started before it + 1 + i). On a DB where
    about 63% of the keys exist, the same reads find exactly as many keys."""
    db_bench = _db_bench()
    flags = {**DB_BENCH_FLAGS, "num": N}
    references.run_db_bench(db_bench, {"benchmarks": "fillrandom,flush", "db": tmp_path / "a", **flags,
                                 "seed": 3}, timeout=120, background_s=0.05)

    def db_bench_found(seed):
        rows = references.run_db_bench(db_bench, {"benchmarks": "readrandom", "use_existing_db": True,
                                                  "reads": N, "db": tmp_path / "a", **flags, "seed": seed},
                                       timeout=120, background_s=0.05)
        return rows[0]["found"]

    theirs = {seed: db_bench_found(seed) for seed in (7, 8)}
    assert all(0.55 * N < f < 0.71 * N for f in theirs.values())
    for seed in (7, 8):
        s = driver.Session(_interop_spec(tmp_path / "a", use_existing_db=True, seed=seed))
        try:
            assert step(s, "readrandom", ops=N)["found"] == theirs[seed]
        finally:
            s.close()
    # A sequence: fillrandom writes db_bench's keys (its per-batch draw included), and the
    # reader is the invocation's second thread (flush starts none).
    rows = references.run_db_bench(db_bench, {"benchmarks": "fillrandom,flush,readrandom", "reads": N,
                                        "db": tmp_path / "b", **flags, "seed": 7},
                             timeout=120, background_s=0.05)
    s = driver.Session(_interop_spec(tmp_path / "c", seed=7))
    try:
        step(s, "fillrandom")
        step(s, "flush")
        mine = step(s, "readrandom", ops=N)
    finally:
        s.close()
    assert mine["found"] == next(r for r in rows if r["name"] == "readrandom")["found"]


def test_threads_started_counts_as_db_bench_does():
    spec = make_spec(Path("/tmp/unused"), threads=3)
    started = [driver.threads_started(driver.step_spec(spec, {"name": n}))
               for n in ("fillrandom", "flush", "compact0", "waitforcompaction", "compact",
                         "readwhilewriting", "readrandom")]
    assert started == [3, 0, 0, 0, 3, 4, 3]
    assert driver.step_spec(spec, {"name": "readrandom"}, first_thread=5)["first_thread"] == 5


def test_merge_series_spreads_ops_over_the_sampled_seconds():
    """The C++ cumulative 1 Hz ops series, interpolated onto the sampler's periods."""
    res = {"start_mono_s": 100.0, "wall_s": 2.0, "ops": 1000,
           "ops_series": [(101.0, 480), (102.0, 1000)]}
    system = [{"t_s": 0.0, "dt_s": 1.0, "disk_reads": 400}, {"t_s": 1.0, "dt_s": 1.0, "disk_reads": 410}]
    out = driver.merge_series(system, res)
    assert [r["ops"] for r in out] == [pytest.approx(480), pytest.approx(520)]
    assert [r["qps"] for r in out] == [pytest.approx(480), pytest.approx(520)]
    assert out[1]["disk_reads"] == 410


def test_a_spec_names_its_build_and_runs_only_on_it(tmp_path):
    spec = driver.RunSpec(db=str(tmp_path / "db"), num=100, build="9.9.9-nosuch")
    with pytest.raises(ValueError, match=r"^build='9.9.9-nosuch': this process runs RocksDB build '.*'; "
                                         r"start it with RXLAB_BUILD=9.9.9-nosuch"):
        driver.validate(spec)
    driver.validate(driver.RunSpec(db=str(tmp_path / "db"), num=100, build=active_build().name))


def test_cpus_allowed_policy_split_pins_each_reader(open_session):
    """fio's cpus_allowed_policy=split for the reader threads: each is pinned to its own
    allowed CPU before it starts, so no reader migrates during the step."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: nothing to split")
    s = open_session(threads=2, duration=1.0, perf_events=True, cpus_allowed_policy="split")
    load(s)
    row = step(s, "readrandom")
    assert row["ops"] > 0 and row["found"] == row["ops"]
    # Unpinned, the same step migrates its readers about 10^4 times a second here; pinned, 0 in
    # nearly every run, but a fresh-clone CI run once counted 1 (cause not found: a pinned thread
    # has nowhere to go). At most one per reader still tells pinned from unpinned.
    assert row["perf.cpu_migrations"] <= 2, row["perf.cpu_migrations"]
    assert not any("cpus_allowed_policy" in n for n in row.get("notes", []))
    # every call is counted on the CPU its reader returned on: one reader per CPU, so both CPUs
    # have calls, and where the disk's interrupts went, some of them returned on that CPU
    assert row["calls_counted"] == row["calls"]
    if bench_irq.device_irqs(s.spec.db):
        assert row["irq_cpu"] in os.sched_getaffinity(0)
        assert 0 < row["calls_on_irq_cpu"] < row["calls"]
    with pytest.raises(ValueError, match=r"^cpus_allowed_policy='spread': allowed are shared, split$"):
        make_spec(Path(s.spec.db).parent / "other", cpus_allowed_policy="spread")
