"""Timed steps measured in turns of processes: each brings a DB of its own to a state, then runs the step.

A step that runs for as long as it is let (readwhilewriting, mixgraph, a fill or
overwrite with a duration; readseq, pass after pass) can be compared like the
reads of rxlab.bench.turns: every
configuration at once, one process each, all stopped but one, in slices, so
that neighbouring slices share the host's state. Each process first runs its
`prepare` steps on a fresh DB (not measured: the state the step starts from),
then the step until it is killed, its workers counting their operations in a
progress file (the driver's `progress_file`) that the parent reads between
slices. Every process starts the step at the same moment, when all have
prepared (a start line, turns.Contender): a fill's DB grows as it runs, so a
process that started a second earlier would be measured on a larger DB. A
process's value is its operations over the wall time of its slices; its CPU
is the process's (every thread: a writer's, RocksDB's flush and compaction
threads', an engine's).

Used by `rxlab ab`'s timed rows (rxlab.bench.ab) and the toolchain study's
timed tests (every build at once).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from rxlab.bench import driver, turns

__all__ = ["AGAIN", "FOREVER_S", "contender", "rows_session", "session"]

FOREVER_S = 10**6   # the step's duration: longer than any session, the process is killed at its end
AGAIN = " again"    # the name of the base's second process in a session: the A/A control

_SCRIPT = """
import json, os, pathlib, sys, time
a = json.loads(sys.argv[1])
from rxlab.bench import driver
try:
    spec = driver.RunSpec.from_dict(a["spec"])
    driver.validate(spec)    # a spec that names a build refuses a process on another one
except ValueError as e:
    sys.exit(f"rxlab: {e}")
s = driver.Session(spec)
for step in driver.expand(a["prepare"]):   # the DB brought to the step's state: not measured
    s.run_step(step)
pathlib.Path(a["ops_path"]).unlink(missing_ok=True)   # counted from zero, not from an earlier process
pathlib.Path(a["start_line"] + ".ready").touch()       # every process starts the step at the same moment
while not os.path.exists(a["start_line"] + ".go"):
    time.sleep(0.002)
while True:   # until killed, counting its operations in ops_path
    for step in driver.expand([a["step"]]):
        s.run_step({**step, "progress_file": a["ops_path"], "duration": a["duration"]})
    if a["step_name"] not in driver.PASS_STEPS:
        sys.exit("rxlab: the step ended before the measurement did")
    # a scan ends at the last key: the next pass continues the count (the file keeps it)
"""


def contender(name: str, spec: driver.RunSpec | Mapping, prepare: Sequence, step: str | Mapping,
              ops_path: str | os.PathLike, env: Mapping[str, str] | None = None) -> turns.Contender:
    """A process that opens `spec`'s DB, runs the `prepare` steps, then `step` until it is killed,
    counting the step's operations in `ops_path` (driver step names or dicts; `env`: its whole
    environment, None for this process's). A scan (driver.PASS_STEPS) starts over at the first key when
    it reaches the last."""
    d = spec.to_dict() if isinstance(spec, driver.RunSpec) else dict(spec)
    step_name = step if isinstance(step, str) else step["name"]
    start = f"{ops_path}.start"
    for p in (f"{start}.ready", f"{start}.go"):
        Path(p).unlink(missing_ok=True)
    args = {"spec": d, "prepare": list(prepare), "step": step, "step_name": step_name,
            "ops_path": str(ops_path), "start_line": start, "duration": FOREVER_S}
    return turns.Contender(name, [sys.executable, "-c", _SCRIPT, json.dumps(args, default=str)],
                           dict(env) if env is not None else None, ops_path=str(ops_path), start_line=start)


def session(group: Sequence[turns.Contender], *, rounds: int, slice_s: float, warmup_s: float,
            progress: bool = False) -> pd.DataFrame:
    """One session of `group`, in slices; per contender (the index, in `group`'s order): ops, op_bytes
    (the bytes its operations moved, as db_bench counts them), wall_s and cpu_s summed over its slices,
    and value (operations per second) and cpu_per_op_us."""
    df = turns.measure(list(group), sessions=1, rounds=rounds, slice_s=slice_s, warmup_s=warmup_s,
                       progress=progress)
    g = df.groupby("contender")[["ops", "op_bytes", "wall_s", "cpu_s"]].sum().reindex([c.name for c in group])
    g["value"] = (g["ops"] / g["wall_s"]).where(g["wall_s"] > 0, 0.0)
    g["cpu_per_op_us"] = (1e6 * g["cpu_s"] / g["ops"]).where(g["ops"] > 0)
    return g


def rows_session(rows: pd.DataFrame, key: str, contender_of: Callable[[object, str, int], turns.Contender],
                 work: Path, *, rounds: int, slice_s: float, warmup_s: float) -> list[dict]:
    """One session of a process per row of `rows` (columns `key` and copy, in the turn's order): the row's
    process is `contender_of(row, name, index)`, named by its `key` and, for the base's second copy, AGAIN.
    `work` holds the processes' DBs and progress files and is removed at the end (a study's next session
    needs the disk). Returns per row: `key`, copy, ops, bytes, wall_s, cpu_s (summed over its slices)."""
    names, group = {}, []
    work.mkdir(parents=True, exist_ok=True)
    try:
        for i, r in enumerate(rows.itertuples(index=False)):
            name = f"{getattr(r, key)}{AGAIN if r.copy else ''}"
            names[name] = (getattr(r, key), int(r.copy))
            group.append(contender_of(r, name, i))
        g = session(group, rounds=rounds, slice_s=slice_s, warmup_s=warmup_s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [{key: k, "copy": c, "ops": int(g.loc[n, "ops"]), "bytes": int(g.loc[n, "op_bytes"]),
             "wall_s": float(g.loc[n, "wall_s"]), "cpu_s": float(g.loc[n, "cpu_s"])}
            for n, (k, c) in names.items()]
