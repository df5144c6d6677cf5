"""The report's throughput measured on every backend of a case at once, processes in turns (bench.turns).

Whole runs one after another put minutes between the backends a turn
compares, and this VM's speed moves by 10-30% in that time: four turns of
whole runs left the local comparisons at +-6-35% (figures/index.md of
2026-12-06). Here each test of a case runs on every backend at once, one
process each (the case's base twice: the A/A pair), all stopped but one, in
slices in an order that rotates from round to round (rxlab.bench.timed), so
neighbouring slices share the host's state.

What each process runs:

- a fill (fillseq, fillrandom) writes a fresh DB from empty until it is
  killed, as the whole run's fill does, one writer; fillseq's keys run on
  past the study's `num` so that they stay in order;
- readrandom and readseq read the study's DB (`load`: fillrandom, then its
  compactions waited for, the state the whole run's reads start from),
  opened read-only, other keys for each process; readseq starts over at the
  first key at the last;
- mixgraph (writes among its reads) runs on a copy of that DB of its own
  (`copy_db`: the table files hard-linked, the rest copied).

The fills and mixgraph draw the same keys, values and scan lengths in every
process of a session, the readers of the shared DB keys of their own (`seed`).

A process's MB/s is the bytes its operations moved (db_bench's count: a
readrandom that finds no key moves none) over the wall time of its slices;
its CPU per operation is the process's (RocksDB's flush and compaction
threads, an engine's, included).
"""
from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from rxlab.bench import driver, timed

__all__ = ["FILL_KEYS", "copy_db", "load", "seed", "session", "step_of", "tests_of", "uses_load"]

# fillseq's keys in slices: this many times the study's num, so that a process writes in key order however
# far it gets (the whole run writes num keys and stops)
FILL_KEYS = 10


def step_of(test: str, num: int) -> dict:
    """The driver step a process runs for `test` until it is killed."""
    if test == "fillseq":
        return {"name": "fillseq", "threads": 1, "num": FILL_KEYS * num}
    if test == "fillrandom":
        return {"name": "fillrandom", "threads": 1}
    if test == "mixgraph":
        return {"name": "mixgraph", **driver.zippydb_options()}
    return {"name": test}


def seed(test: str, turn: int, index: int, copy: int) -> int:
    """The seed of a process. The fills and mixgraph draw the same keys, values and scan lengths in every
    process of a session (other ones each turn): a mixgraph's MB/s is mostly its scans' bytes, whose
    lengths come from a heavy-tailed draw, so processes with draws of their own differ by 2x in bytes per
    operation whatever their backend. The readers of the shared DB draw keys of their own (`index`: the
    backend's, `copy`: the A/A copy): readers of the same blocks one after another might find them in a
    cache under the virtual disk that the first one warmed."""
    if uses_load(test) and test != "mixgraph":
        return 1000 * turn + 500 * copy + 10 * index
    return 1000 * turn


def uses_load(test: str) -> bool:
    """Whether `test` starts from the loaded DB (the reads), not from empty (the fills)."""
    return test not in driver.FILL_STEPS


def load(spec: driver.RunSpec) -> None:
    """Bring `spec`'s DB to the state the whole run's reads start from: fillrandom, then its compactions
    waited for (in this process; not measured)."""
    driver.validate(spec)
    sess = driver.Session(spec)
    try:
        for step in driver.expand([{"name": "fillrandom", "threads": 1}, {"name": "waitforcompaction"}]):
            sess.run_step(step)
    finally:
        sess.close()


def copy_db(src: Path, dst: Path) -> Path:
    """A DB of its own at `dst` with `src`'s contents: table and blob files hard-linked (RocksDB never
    changes one in place, and deleting one drops only its link), every other file copied (the MANIFEST,
    the WAL and CURRENT are rewritten), LOCK left out (each DB takes its own)."""
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.name == "LOCK" or not f.is_file():
            continue
        if f.suffix in (".sst", ".blob"):
            (dst / f.name).hardlink_to(f)
        else:
            shutil.copy2(f, dst / f.name)
    return dst


def session(rows: pd.DataFrame, test: str, spec_of: Callable[[object, Path], driver.RunSpec], work: Path, *,
            rounds: int, slice_s: float, warmup_s: float) -> list[dict]:
    """One test of one case in a turn: a session of a process per row (`rows`: backend, copy, in the turn's
    order); `spec_of(row, db)` is the row's driver spec for a DB at `db` (the loaded DB's path for a read
    that opens it read-only). Returns per row: backend, copy, ops, bytes, wall_s, cpu_s (summed over its
    slices)."""
    def contender_of(r, name: str, i: int):
        spec = spec_of(r, work / f"db-{i}")
        return timed.contender(name, spec, [], step_of(test, spec.num), work / f"ops-{i}")
    return timed.rows_session(rows, "backend", contender_of, work, rounds=rounds, slice_s=slice_s,
                              warmup_s=warmup_s)


def tests_of(case_tests: Sequence[str]) -> list[str]:
    """The tests in the order a turn measures them: the fills first, mixgraph (which writes) last."""
    order = ["fillseq", "fillrandom", "readrandom", "readseq", "mixgraph"]
    return sorted(case_tests, key=lambda t: order.index(t) if t in order else len(order))
