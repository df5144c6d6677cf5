"""Timed steps in turns of processes (rxlab.bench.timed): each process on a DB of its own, measured by the
operations its workers count, and a spec that names another build refused by the process itself."""
from __future__ import annotations

import pytest

from rxlab.bench import driver, timed


def _spec(db, **kw) -> driver.RunSpec:
    return driver.RunSpec(**{"db": str(db), "num": 20_000, "value_size": 100, "statistics": False, "seed": 3,
                             **kw})


def test_a_session_measures_each_process_by_its_operations(tmp_path):
    group = [timed.contender(name, _spec(tmp_path / name), ["fillseq"], "readwhilewriting",
                             tmp_path / f"{name}.ops") for name in ("one", "two")]
    g = timed.session(group, rounds=2, slice_s=0.2, warmup_s=0.1)
    assert list(g.index) == ["one", "two"]          # the group's order
    assert (g["ops"] > 100).all() and (g["wall_s"] > 0.3).all(), g
    assert (g["value"] == g["ops"] / g["wall_s"]).all()
    assert (g["cpu_per_op_us"] == 1e6 * g["cpu_s"] / g["ops"]).all()


def test_a_spec_that_names_another_build_is_refused_by_its_process(tmp_path):
    bad = timed.contender("other", _spec(tmp_path / "x", build="9.9.9-nosuch"), ["fillseq"],
                          "readwhilewriting", tmp_path / "x.ops")
    good = timed.contender("good", _spec(tmp_path / "y"), ["fillseq"], "readwhilewriting", tmp_path / "y.ops")
    with pytest.raises(RuntimeError, match=r"other ended during the measurement \(exit 1\): rxlab: "
                       r"build='9.9.9-nosuch': this process runs RocksDB build '.*'; start it with "
                       r"RXLAB_BUILD=9.9.9-nosuch"):
        timed.session([good, bad], rounds=1, slice_s=0.1, warmup_s=0.1)


def test_a_scan_goes_on_pass_after_pass_and_its_bytes_are_counted(tmp_path):
    """readseq ends at the last key: the process starts it over, its count going on in the same file, so a
    scan can be measured for longer than one pass; the bytes are db_bench's (key and value of each)."""
    group = [timed.contender(name, _spec(tmp_path / name, num=2_000), ["fillseq"], "readseq",
                             tmp_path / f"{name}.ops") for name in ("one", "two")]
    g = timed.session(group, rounds=2, slice_s=0.2, warmup_s=0.1)
    assert (g["ops"] > 3 * 2_000).all(), g      # several passes over the 2,000 keys in 0.4 s each
    assert (g["op_bytes"] == g["ops"] * (16 + 100)).all(), g


def test_every_process_starts_its_step_at_the_same_moment(tmp_path):
    """A start line: one process prepares 20x the keys of the other, yet both start the step only when
    both are ready (each made `.ready` before either found `.go`), and each is measured."""
    slow = timed.contender("slow", _spec(tmp_path / "slow", num=100_000), ["fillseq"], "readwhilewriting",
                           tmp_path / "slow.ops")
    fast = timed.contender("fast", _spec(tmp_path / "fast", num=5_000), ["fillseq"], "readwhilewriting",
                           tmp_path / "fast.ops")
    g = timed.session([fast, slow], rounds=1, slice_s=0.2, warmup_s=0.1)
    assert (g["ops"] > 0).all(), g
    ready = {n: (tmp_path / f"{n}.ops.start.ready").stat().st_mtime for n in ("slow", "fast")}
    go = (tmp_path / "fast.ops.start.go").stat().st_mtime
    assert go >= max(ready.values()) and (tmp_path / "slow.ops.start.go").exists()
