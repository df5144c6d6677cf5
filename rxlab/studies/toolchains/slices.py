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
workers count their operations in a progress file (the driver's
`progress_file`), read between slices: a test on a DB that RocksDB has cached
reads no device, so the device's count that `rxlab ab` uses would see nothing.

A build's value in a turn is its operations over the wall time of its slices,
and its CPU is the process's (the writer and RocksDB's background threads
included, as a whole run's).

fillseq stays a whole run: it ends when its keys are written, so it cannot
run until killed without becoming another test.
"""
from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from rxlab.bench import turns
from rxlab.studies.toolchains import child
from rxlab.studies.toolchains.params import STEP_OF

__all__ = ["SLICED", "contender", "session"]

# The tests that run for a duration (the post's *whilewriting readers and overwrite): these can run until
# killed, so a turn measures them in slices.
SLICED = ("readww", "fwdrangeww", "revrangeww", "overwrite")
FOREVER_S = 10**6     # a test step's duration: longer than any session, the process is killed at its end

_CONTENDER = """
import json, sys
a = json.loads(sys.argv[1])
from rxlab.bench import driver
from rxlab.studies.toolchains import child
wrong = child.module_mismatch(a["build"])
if wrong:
    sys.exit("rxlab: " + wrong)
spec = driver.RunSpec.from_dict(a["spec"])
driver.validate(spec)
s = driver.Session(spec)
for step in driver.expand(spec.steps):   # the DB brought to the test's state: not measured
    s.run_step(step)
for step in driver.expand([a["test"]]):   # until killed: its workers count their operations in ops_path
    s.run_step({**step, "progress_file": a["ops_path"], "duration": a["duration"]})
sys.exit("rxlab: the test ended before the measurement did")
"""


def contender(name: str, key: str, spec: dict, test: str, ops_path: Path) -> turns.Contender:
    """A process on build `key` that runs `spec`'s steps (the state before `test`), then `test` until it is
    killed, counting its operations in `ops_path`."""
    args = {"build": key, "spec": spec, "test": STEP_OF[test], "ops_path": str(ops_path),
            "duration": FOREVER_S}
    return turns.Contender(name, [sys.executable, "-c", _CONTENDER, json.dumps(args)], child.build_env(key),
                           ops_path=str(ops_path))


def session(rows: pd.DataFrame, test: str, spec_of, work: Path, *, rounds: int, slice_s: float,
            warmup_s: float) -> list[dict]:
    """One test of one turn: a session of a process per row (`rows`: build, copy, in the turn's order),
    `spec_of(row, db)` the driver spec that brings a fresh DB at `db` to the test's state. Returns per
    row: build, copy, ops, wall_s, cpu_s (summed over its slices)."""
    names, group = {}, []
    work.mkdir(parents=True, exist_ok=True)
    try:
        for r in rows.itertuples(index=False):
            name = f"{r.build}{' again' if r.copy else ''}"
            names[name] = (r.build, int(r.copy))
            tag = f"{r.build}-{r.copy}"
            group.append(contender(name, r.build, spec_of(r, work / f"db-{tag}"), test,
                                   work / f"ops-{tag}"))
        df = turns.measure(group, sessions=1, rounds=rounds, slice_s=slice_s, warmup_s=warmup_s,
                           progress=False)
    finally:
        shutil.rmtree(work, ignore_errors=True)   # the DBs: free the disk for the next test
    g = df.groupby("contender")[["ops", "wall_s", "cpu_s"]].sum()
    return [{"build": names[n][0], "copy": names[n][1], "ops": int(g.loc[n, "ops"]),
             "wall_s": float(g.loc[n, "wall_s"]), "cpu_s": float(g.loc[n, "cpu_s"])} for n in names]


def sliced(tests: Sequence[str]) -> list[str]:
    """The tests of `tests` that a turn measures in slices."""
    return [t for t in tests if t in SLICED]
