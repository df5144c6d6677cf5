"""`rxlab ab`'s write rows that bring their DB to a state first (rxlab.bench.ab.PREPARED): each run
measures only its step, on the state the row defines, in a process of its own."""
from __future__ import annotations

import pytest

from rxlab.bench import ab, driver

POSIX = ab.parse_side("posix")
VALUE = 400  # driver.RunSpec's value_size
# fillrandom draws its num keys with repeats: about 1 - 1/e of them are distinct
DISTINCT = 0.6


def _run(tmp_path, workload: str, num: int, **kw) -> dict:
    return ab.write_run(POSIX, tmp_path / "db", num=num, threads=1, workload=workload, seed=1, **kw)


def test_flush_writes_the_whole_fill_in_its_one_step(tmp_path):
    """200,000 writes of 400 B are 80 MB, more than the driver's 64 MiB write buffer: only the row's
    1 GiB memtable keeps the fill in memory, so that the measured flush writes all of it (its distinct
    keys; with a 64 MiB buffer the fill would have flushed most of them itself)."""
    num = 200_000
    r = _run(tmp_path, "flush", num)
    assert r["ops"] == 1 and r["value"] == pytest.approx(1 / r["wall_s"])
    assert r["write_bytes"] >= DISTINCT * num * VALUE, r


def test_overwrite_writes_over_the_keys_a_fill_left(tmp_path):
    """The fill (untimed) then `num` overwrites: the step's operations are the overwrites alone."""
    num = 50_000
    r = _run(tmp_path, "overwrite", num)
    assert r["ops"] == num and r["value"] == pytest.approx(num / r["wall_s"]), r


def test_compact_rewrites_the_fill(tmp_path):
    num = 100_000
    r = _run(tmp_path, "compact", num)
    assert r["ops"] == 1 and r["write_bytes"] >= DISTINCT * num * VALUE, r
    assert r["cpu_per_op_us"] == pytest.approx(1e6 * r["cpu_s"])


@pytest.mark.parametrize("workload", ["readwhilewriting", "mixgraph"])
def test_mixed_rows_run_for_the_duration_on_a_loaded_db(tmp_path, workload):
    r = _run(tmp_path, workload, 50_000, duration_s=1.0)
    # the step ran for its duration (not for `num` operations), and read a DB that holds keys
    assert 0.8 <= r["wall_s"] <= 5, r
    assert r["ops"] > 1000 and r["value"] == pytest.approx(r["ops"] / r["wall_s"])


@pytest.mark.parametrize("workload", ab.TIMED)
def test_a_timed_row_runs_on_both_sides_at_once_counting_its_operations(tmp_path, workload):
    """A turn of a timed row: A, B and A again, each a process on a fresh DB of its own brought to the row's
    state, measured in slices by the operations its workers count; their DBs are gone afterwards."""
    rows = ab.timed_session(POSIX, ab.parse_side("default"), tmp_path / "t", num=20_000, threads=1,
                            workload=workload, turn=1, rounds=2, slice_s=0.2, warmup_s=0.1)
    assert [(r["config"], r["copy"]) for r in rows] == [("posix", 0), ("default", 0), ("posix", 1)]
    for r in rows:
        # each side ran two slices of 0.2 s, and its value is its operations over them
        assert r["wall_s"] == pytest.approx(0.4, abs=0.2) and r["ops"] > 100, r
        assert r["value"] == pytest.approx(r["ops"] / r["wall_s"]) and r["cpu_per_op_us"] > 0
    assert not (tmp_path / "t").exists()
    assert set(ab.TIMED) == {"readwhilewriting", "mixgraph"}


def test_every_row_says_what_it_measures():
    assert set(ab.PREPARED) < set(ab.WRITES)
    words = {w: ab.measure_words(w) for w in (*ab.READS, *ab.WRITES)}
    assert words["flush"][0].startswith("the flush's speed")
    assert words["readrandom"][0] == "device reads per second"
    assert all(v and c for v, c in words.values())


def test_a_multiget_reader_keeps_its_batch_in_flight(tmp_path):
    """The multireadrandom row is the matrix's: MultiGets of 16 keys, which an asynchronous engine
    keeps in flight together (with a batch of one it was readrandom through another call)."""
    uring = ab.parse_side("io_uring")
    num = 200_000   # 80 MB of values against the 8 MiB block cache: most of a batch's keys are read
    db = ab.prepare([uring], tmp_path, num)[uring.text]
    spec = ab.read_spec(uring, db, num, 1, "multireadrandom", seed=1, duration=1)
    assert spec.batch_size == 16 and spec.multiread_batched
    s = driver.Session(spec)
    try:
        row = s.run_step({"name": "multireadrandom", "label": "multireadrandom"})
    finally:
        s.close()
    assert row["fs.multireads"] > 0 and row["fs.multiread_reqs"] >= 4 * row["fs.multireads"], row
    assert row["fs.max_inflight"] >= 8, row
