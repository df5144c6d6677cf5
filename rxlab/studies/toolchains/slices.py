"""The post's timed tests measured on every build at once: processes in turns (rxlab.bench.turns).

Whole runs one after another put minutes between the builds a turn compares,
and this VM's speed moves by 10-30% in that time: 12 minutes of such turns
resolved the toolchain ratios to +-4-21% (docs/findings/2026-12-07-toolchains-default.md).
Here one test of a turn runs on every build at once, one process each (the
base twice: the A/A pair), all stopped but one, in slices of `slice_s`
seconds in an order that rotates from round to round, so neighbouring slices
share the host's state. Each process first brings a DB of its own to the
test's state as a whole run does (fillseq, then the readseq that warms
RocksDB's cache; not measured), then runs the test until it is killed. Its
workers count their operations in a progress file, read between slices
(rxlab.bench.timed): a test on a DB that RocksDB has cached reads no device,
so the device's count that `rxlab ab`'s reads use would see nothing.

A build's value in a turn is its operations over the wall time of its slices,
and its CPU is the process's (the writer and RocksDB's background threads
included, as a whole run's).

fillseq stays a whole run: it ends when its keys are written, so it cannot
run until killed without becoming another test.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rxlab.bench import timed, turns
from rxlab.studies.toolchains import child
from rxlab.studies.toolchains.params import STEP_OF

__all__ = ["SLICED", "contender", "session", "sliced"]

# The tests that run for a duration (the post's *whilewriting readers and overwrite): these can run until
# killed, so a turn measures them in slices.
SLICED = ("readww", "fwdrangeww", "revrangeww", "overwrite")


def contender(name: str, key: str, spec: dict, test: str, ops_path: Path) -> turns.Contender:
    """A process on build `key` that runs `spec`'s steps (the state before `test`), then `test` until it is
    killed, counting its operations in `ops_path` (the spec names the build: a process on another refuses)."""
    return timed.contender(name, spec, spec["steps"], STEP_OF[test], ops_path, child.build_env(key))


def session(rows: pd.DataFrame, test: str, spec_of, work: Path, *, rounds: int, slice_s: float,
            warmup_s: float) -> list[dict]:
    """One test of one turn: a session of a process per row (`rows`: build, copy, in the turn's order),
    `spec_of(row, db)` the driver spec that brings a fresh DB at `db` to the test's state. Returns per
    row: build, copy, ops, bytes, wall_s, cpu_s (summed over its slices)."""
    def contender_of(r, name: str, i: int):
        tag = f"{r.build}-{r.copy}"
        return contender(name, r.build, spec_of(r, work / f"db-{tag}"), test, work / f"ops-{tag}")
    return timed.rows_session(rows, "build", contender_of, work, rounds=rounds, slice_s=slice_s,
                              warmup_s=warmup_s)


def sliced(tests: Sequence[str]) -> list[str]:
    """The tests of `tests` that a turn measures in slices."""
    return [t for t in tests if t in SLICED]
