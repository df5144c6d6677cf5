"""Processes measured in turns (rxlab.bench.turns) and the read-only DB that lets them share one.

Real processes, real O_DIRECT reads: a reader that burns CPU after every read must come out
costlier per read than one that does not, and the bookkeeping (turn order, fresh processes per
session, a contender that dies) must hold.
"""
from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
from helpers_bench import small_bench_db

import rxlab
from rxlab.bench import driver, turns
from rxlab.bench.selfcheck import backends_in_turns as bb
from rxlab.bench.selfcheck import driver as driver_check
from rxlab.core import sysinfo

# A reader of a file with O_DIRECT preads (so its reads reach storage and /proc/PID/io's
# read_bytes moves), optionally spinning `burn_us` after each read.
READER = """
import mmap, os, sys, time
path, burn = sys.argv[1], float(sys.argv[2]) * 1e-6
fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
buf = mmap.mmap(-1, 4096)
blocks = os.fstat(fd).st_size // 4096
i = 0
while True:
    os.preadv(fd, [buf], (i * 7919 % blocks) * 4096)
    i += 1
    t = time.perf_counter()
    while time.perf_counter() - t < burn:
        pass
"""


@pytest.fixture
def data_file(tmp_path):

    if not sysinfo.direct_io_works(tmp_path):
        pytest.skip("no O_DIRECT where the tests write")
    path = tmp_path / "blocks.dat"
    path.write_bytes(os.urandom(16 << 20))
    return path


def reader(name, path, burn_us=0):
    return turns.Contender(name, [sys.executable, "-c", READER, str(path), str(burn_us)])


def test_turns_tell_a_costlier_reader_apart(data_file):
    df = turns.measure([reader("plain", data_file), reader("burner", data_file, 300)], sessions=2,
                            rounds=3, slice_s=0.3, warmup_s=0.2, progress=False)
    assert len(df) == 2 * 3 * 2
    assert (df["wall_s"] >= 0.3).all() and (df["reads"] > 20).all(), df
    # one process per contender and session, a fresh one every session
    pids = df.groupby(["session", "contender"])["pid"].nunique()
    assert (pids == 1).all() and df["pid"].nunique() == 4
    # ABBA: who goes first alternates from round to round
    for _, g in df[df["position"] == 0].groupby("session"):
        first = g.sort_values("round")["contender"].tolist()
        assert all(a != b for a, b in itertools.pairwise(first)), first
    r = turns.session_ratios(df, "plain", "burner")
    # 300 us of spinning per read: several times the plain reader's CPU per read, fewer reads
    assert (r["cpu"] > 2).all() and (r["rate"] < 0.8).all(), r
    # a single-threaded reader runs only in its own turns: at most its slice's wall time of CPU
    assert (df["cpu_s"] <= df["wall_s"] * 1.02).all()
    text = turns.summarize(df, "plain", "test")
    assert "burner / plain: CPU per read" in text and "n=2 sessions" in text


# A workload that reads no device (as one on a DB that RocksDB has cached): it counts its operations in a
# progress file as the driver's workers do (one int64, stored as it goes), spinning `burn_us` for each.
COUNTER = """
import mmap, os, struct, sys, time
path, burn = sys.argv[1], float(sys.argv[2]) * 1e-6
time.sleep(0.3)                       # start-up, which must not fall into a slice
fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
os.ftruncate(fd, 16)
m = mmap.mmap(fd, 16)
n = 0
while True:
    t = time.perf_counter()
    while time.perf_counter() - t < burn:
        pass
    n += 1
    m[:16] = struct.pack("<qq", n, 100 * n)   # its operations, and 100 bytes each
"""


def test_contenders_that_count_their_operations_are_measured_by_them(tmp_path):
    """A contender with an ops_path: it has started when its count grows (it reads no device), and each
    slice has its operations, their rate and the CPU per operation."""
    def counter(name, burn_us):
        ops = tmp_path / f"ops-{name}"
        return turns.Contender(name, [sys.executable, "-c", COUNTER, str(ops), str(burn_us)],
                               ops_path=str(ops))

    df = turns.measure([counter("fast", 20), counter("slow", 200)], sessions=1, rounds=4, slice_s=0.2,
                       warmup_s=0.1, progress=False)
    assert len(df) == 2 * 4 and (df["ops"] > 0).all(), df
    assert (df["ops_per_s"] == df["ops"] / df["wall_s"]).all() and (df["op_bytes"] == 100 * df["ops"]).all()
    g = df.groupby("contender")[["ops", "cpu_s", "wall_s"]].sum()
    # ten times the spin per operation: several times fewer operations and more CPU per operation
    assert g.loc["slow", "ops"] < 0.4 * g.loc["fast", "ops"], g
    per = df.groupby("contender")["cpu_per_op_us"].median()
    assert per["slow"] > 2.5 * per["fast"] and per["fast"] >= 15, per
    assert turns.read_ops(tmp_path / "ops-none") == 0


def test_turn_order_gives_every_contender_every_position():
    for names in (["a", "b"], ["a", "b", "c"], ["a", "b", "c", "d"]):
        n = len(names)
        orders = [turns._order(names, r) for r in range(2 * n)]
        assert all(sorted(o) == names for o in orders)
        for pos in range(n):
            assert sorted(o[pos] for o in orders) == sorted(names * 2), (names, orders)
    assert turns._order(["a", "b"], 0) == ["a", "b"] and turns._order(["a", "b"], 1) == ["b", "a"]


def test_session_ratios_pool_each_session():
    rows = []
    for session in range(3):
        for rnd in range(2):
            rows.append({"session": session, "contender": "a", "round": rnd, "cpu_s": 1.0, "reads": 100,
                         "wall_s": 1.0})
            rows.append({"session": session, "contender": "b", "round": rnd, "cpu_s": 1.0 + session,
                         "reads": 50, "wall_s": 1.0})
    r = turns.session_ratios(pd.DataFrame(rows), "a", "b")
    assert r["cpu"].tolist() == [2.0, 4.0, 6.0] and r["rate"].tolist() == [0.5, 0.5, 0.5]


def test_a_contender_that_dies_is_named_and_nothing_is_left_running(data_file):
    dead = turns.Contender("broken", [sys.executable, "-c", "import sys; sys.exit('no such DB')"])
    with pytest.raises(RuntimeError, match=r"broken ended during the measurement \(exit 1\): no such DB"):
        turns.measure([reader("plain", data_file), dead], sessions=1, rounds=1, slice_s=0.1,
                           progress=False)
    # the healthy reader was killed and reaped with it
    assert not [c for c in os.listdir("/proc") if c.isdigit()
                and _cmdline(c).startswith(sys.executable) and str(data_file) in _cmdline(c)]


def test_a_contender_that_never_reads_times_out():
    idle = turns.Contender("idle", [sys.executable, "-c", "import time; time.sleep(60)"])
    kids = turns._Children([idle], None)
    try:
        with pytest.raises(RuntimeError, match=r"idle did not start reading within 0.5 s"):
            kids.wait_reading(timeout=0.5, step=0.1)
    finally:
        kids.close()
    assert kids.procs["idle"].returncode is not None


def test_bad_measurement_shape_is_one_line(data_file):
    with pytest.raises(ValueError, match=r"need at least two, with distinct names"):
        turns.measure([reader("a", data_file), reader("a", data_file)], progress=False)
    with pytest.raises(ValueError, match=r"rounds=0"):
        turns.measure([reader("a", data_file), reader("b", data_file)], rounds=0, progress=False)


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def test_read_only_opens_share_a_db(tmp_path):
    """db_bench's --readonly in rxlab: no lock, so several processes (or handles) read one DB at
    once, beside a read-write one; writes are refused; a read-only run reads what is there."""
    db, num = small_bench_db(tmp_path, num=3000)
    with rxlab.open(db, "posix", read_only=True) as a, rxlab.open(db, "default", read_only=True) as b:
        with rxlab.open(db, "posix") as writer:  # the one read-write open still gets the lock
            assert not writer.read_only
        key, value = a.scan(count=1)[0]
        assert a.read_only and a.get(key) == b.get(key) == value
        with pytest.raises(rxlab.RocksDBError, match="Not supported"):
            a.put(key, b"x")
    spec = driver.RunSpec(db=str(db), num=num, key_size=16, readonly=True, use_existing_db=True,
                          steps=["readrandom"], reads=400, statistics=False)
    s = driver.Session(spec)
    try:
        row = s.run_step({"name": "readrandom"})
    finally:
        s.close()
    assert row["ops"] == 400 and row["found"] == 400


def test_both_benchmarks_run_in_turns_on_a_small_db(tmp_path):
    """bench-backends --interleave and bench-driver --interleave end to end on a DB the size of a
    test (about 60 MB against the benchmarks' 8 MiB cache, so most reads reach the disk)."""
    small_bench_db(tmp_path, num=150_000)
    out = tmp_path / "rows.csv"
    df = bb.interleaved(tmp_path, sections=("readrandom", "multireadrandom"), threads=(1,),
                        configs=("posix", "io_uring"), sessions=1, rounds=2, slice_s=0.3, cpus_allowed=None,
                        quiet=True, out=out)
    got = df.groupby("section")["contender"].unique().map(set).to_dict()
    assert got == {"readrandom": {"default", "posix", "posix 512-aligned", "io_uring", "default again"},
                   "multireadrandom": {"default (io_uring on)", "posix", "io_uring",
                                       "default (io_uring on) again"}}, got
    assert (df["reads"] > 50).all() and df["cpu_per_read_us"].between(1, 5000).all(), df
    assert len(pd.read_csv(out)) == len(df) == (5 + 4) * 2
    # a MultiRead batch of 16 in flight at once reads faster than posix's one pread after another
    mr = df[df["section"] == "multireadrandom"].groupby("contender")["reads_per_s"].median()
    assert mr["io_uring"] > 1.2 * mr["posix"], mr
    text = bb.summarize_interleaved(df)
    assert "target posix within 3% of default on CPU per op" in text
    assert "target posix 512-aligned within 3%" in text
    assert "target io_uring at least 1.5x posix QPS" in text
    assert "target io_uring at least default (io_uring on) QPS" in text
    df = driver_check.interleaved(tmp_path, threads=(1,), sessions=1, rounds=2, slice_s=0.3,
                                  fs_uri="rxlab://posix", cpus_allowed=None, quiet=True)
    assert sorted(set(df["contender"])) == ["db_bench", driver_check.INTERLEAVE_CONTROL, "rxlab"]
    assert (df["reads"] > 50).all(), df
    if shutil.which("strace"):
        # strace attached during the warm-up: buffer_align=auto asks the device's 512 bytes, so
        # every buffer sits at a multiple of 512 in its page. An empty entry is a trace that
        # caught no read in its windows (seen once for the rxlab process, with its many threads,
        # in a whole-suite run): unknown, not another offset.
        known = set(df["buffer_offsets"].fillna("")) - {""}
        assert known and all(int(k.split()[0]) % 512 == 0 for k in known), df["buffer_offsets"]
        assert "read buffers' page offsets by session: " in driver_check.summarize_interleaved(df)
    text = driver_check.summarize_interleaved(df)
    assert "target rxlab QPS at least db_bench's" in text and "target rxlab CPU per op no higher" in text


def test_rxlab_fio_and_fio_run_in_turns(tmp_path):
    """bench-driver --interleave's fio part: real fio (--thread, so the job is stopped with the
    process) and rxlab fio on one file, both reading it in their own turns."""
    if not shutil.which("fio"):
        pytest.skip("fio is not installed")
    with pytest.raises(ValueError, match=r"ioengine='posixaio'"):
        driver_check.interleaved_fio(tmp_path, cases=(("posixaio", 1),))
    out = tmp_path / "rows.csv"
    df = driver_check.interleaved_fio(tmp_path, cases=(("sync", 1), ("io_uring", 8)), sessions=1, rounds=2,
                                      slice_s=0.3, cpus_allowed=None, quiet=True, out=out, size="64m")
    assert set(df["contender"]) == {"fio", "rxlab fio", driver_check.FIO_CONTROL}
    assert set(df["section"]) == {"fio sync qd1", "fio io_uring qd8"}
    assert (df["reads"] > 100).all() and len(pd.read_csv(out)) == len(df) == 2 * 3 * 2, df
    # each slice's reads are 8 KiB reads of the one process that ran
    assert ((df["dev_read_bytes"] / df["reads"]).between(8000, 8400)).all(), df
    assert (df["dev_writes"] >= 0).all() and (df["other_read_bytes"] >= 0).all()
    text = driver_check.summarize_interleaved(df)
    assert "target rxlab fio IOPS within 5% of fio" in text and "fio io_uring qd8" in text


def test_saved_measurements_pool_into_one(tmp_path):
    """--pool: slices saved by runs at other times add up as sessions of one measurement."""
    rows = [{"session": s, "contender": c, "round": 0, "cpu_s": 1.0, "reads": 100 if c == "a" else 80,
             "wall_s": 1.0} for s in range(2) for c in ("a", "b")]
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    pd.DataFrame(rows).to_csv(one, index=False)
    pd.DataFrame(rows).to_csv(two, index=False)
    df = turns.pooled([one, two])
    assert sorted(df["session"].unique()) == [0, 1, 1000, 1001] and set(df["source"]) == {str(one), str(two)}
    r = turns.session_ratios(df, "a", "b")
    assert len(r) == 4 and (r["rate"] == 0.8).all() and (r["cpu"] == 1.25).all()
    with pytest.raises(ValueError, match=r"nope.csv: cannot read saved slices"):
        turns.pooled([tmp_path / "nope.csv"])
    (tmp_path / "other.csv").write_text("x,y\n1,2\n")
    with pytest.raises(ValueError, match=r"other.csv: not the slices of a measurement in turns"):
        turns.pooled([tmp_path / "other.csv"])
    a, b = turns.stamped(tmp_path / "rows.csv"), tmp_path / "rows.csv"
    assert a.parent == b.parent and a.name.startswith("rows-") and a.suffix == ".csv" and a != b


def test_turns_with_other_io_on_the_device_are_flagged():
    """A turn in which the device also wrote (a writeback) or read for someone else is disturbed;
    its whole session drops out of the quiet view, and the summary says so."""
    rows = []
    for session in range(3):
        for c in ("a", "b"):
            busy = session == 1 and c == "b"
            rows.append({"session": session, "contender": c, "round": 0, "cpu_s": 1.0, "wall_s": 1.0,
                         "reads": 100 if c == "a" else (20 if busy else 90), "sleeps": 100,
                         "cpu_per_read_us": 1e4, "reads_per_s": 100.0,
                         "dev_read_bytes": 819200, "dev_writes": 5000 if busy else 3,
                         "other_read_bytes": 0})
    df = pd.DataFrame(rows)
    assert turns.disturbed(df).tolist() == [False, False, False, True, False, False]
    assert sorted(turns.quiet_sessions(df)["session"].unique()) == [0, 2]
    # reads for another process count too, above 1% of the turn's bytes
    other = df.assign(dev_writes=0, other_read_bytes=[0, 0, 0, 0, 9000, 0])
    assert turns.disturbed(other).tolist() == [False, False, False, False, True, False]
    text = turns.summarize(df, "a")
    assert "other IO on the device in 1 of 6 turns (sessions 1)" in text
    assert "quiet sessions only: CPU per read 1.111" in text
    # no quiet session at all: no quiet line, no failure
    all_busy = df.assign(dev_writes=5000)
    assert turns.session_ratios(turns.quiet_sessions(all_busy), "a", "b").empty
    assert "quiet sessions only" not in turns.summarize(all_busy, "a")
    # rows saved before these counters existed count as quiet
    assert not turns.disturbed(df.drop(columns=["dev_writes", "other_read_bytes"])).any()


# Spins on CPU in threads that end one after the other, as a readseq reader starts a thread for each pass,
# then sleeps with only its main thread left.
THREADS_THAT_END = """
import threading, time
def spin(s):
    end = time.thread_time() + s
    while time.thread_time() < end:
        pass
for _ in range(3):
    t = threading.Thread(target=spin, args=(0.15,))
    t.start()
    t.join()
print("done", flush=True)
time.sleep(60)
"""


def test_a_process_keeps_the_cpu_of_its_threads_that_ended():
    with subprocess.Popen([sys.executable, "-c", THREADS_THAT_END], stdout=subprocess.PIPE, text=True) as p:
        try:
            assert p.stdout.readline().strip() == "done"
            cpu, _ = turns.process_sched(p.pid)
            # three threads spun 0.15 s each and ended; a sum over the live threads is the main's alone
            assert cpu >= 0.45
        finally:
            p.kill()
