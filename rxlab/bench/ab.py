"""Two configurations of RocksDB compared on this machine: what `rxlab ab A B` measures, turn by turn.

A side is a backend or URI (`posix`, `rxlab://io_uring?registered_files=1`,
`default`), RocksDB options (`opts:block_size=16384;cache_size=...` in
RocksDB's syntax, on the default backend), a build (`build:9.11.2-clang16`,
its compiled rxlab module selected with RXLAB_BUILD) or a version
(`9.11.2`: its gcc build). `parse_side` turns the words into a `Side`, one
line when they are not one.

Reads (readrandom, readseq, multireadrandom, seekrandom) are measured in
turns of processes (rxlab.bench.turns): each turn is one session of fresh
reader processes, A, B and A again (the A/A control), all reading the
prepared DB read-only, all but one stopped, in slices; a side's value in a
turn is its device reads per second over the session (for readers of one DB
layout, reads per query are equal, so the ratio is the QPS ratio; sides whose
options change the files read their own DB, and the CPU per read is kept
beside). With O_DIRECT off (`direct=False`) the page cache holds the DB and
serves the reads, so there are no device reads to count: a side's value is
then its operations per second, which its workers count in a progress file,
and the CPU beside it is per operation. Writes (fillseq, fillrandom) run one
after another in fresh processes, A, B and A again in the turn's order, each
a fresh DB; a side's value is its operations per second. The rows that need
a DB in a state first (overwrite, flush, compact) run the same way, each
process bringing its fresh DB to that state before the measured step
(`PREPARED`): for flush and compact the value is the step's speed (one over
its seconds), for overwrite its operations per second. The timed rows (readwhilewriting, mixgraph: their
step runs for as long as it is let) are measured in turns of processes as
the reads are (`timed_session`): each process brings a DB of its own to the
row's state, then runs the step until killed, its workers counting their
operations (readwhilewriting: the readers') in a progress file read between
slices; a side's value is its operations per second over its slices.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rxlab.bench import driver, timed, turns
from rxlab.core import builds, sysinfo
from rxlab.core import params as checks
from rxlab.core.pagecache import page_in

__all__ = ["PREPARED", "READS", "READ_SPEC", "TIMED", "WRITES", "Prepared", "Side", "measure_words",
           "parse_side", "prepare", "read_session", "read_spec", "timed_session", "write_run", "write_step"]

READS = ("readrandom", "readseq", "multireadrandom", "seekrandom")


@dataclass(frozen=True)
class Prepared:
    """A row whose measured step needs the DB in a state: the steps that bring a fresh DB there in the
    same process (not measured), the spec's fields and RocksDB options it needs, and whether the step runs
    for the run's duration."""

    steps: tuple[str, ...]
    spec: Mapping = field(default_factory=dict)
    options: str = ""
    timed: bool = False


# The parity matrix's states (rxlab.bench.selfcheck.parity_rows), on rxlab's driver. A mixed row starts
# on a settled DB: right after a fill its compactions are still merging L0 files, and a read's cost
# depends on how many are left when it runs (docs/findings/2026-11-28-readrandom-spread.md).
PREPARED = {
    # over keys that are there: on an empty DB overwrite is fillrandom
    "overwrite": Prepared(("fillseq", "waitforcompaction")),
    # every key in one memtable, then one flush: the flush's own time and CPU
    "flush": Prepared(("fillrandom",), {"write_buffer_size": 1 << 30},
                      "max_write_buffer_number=2;disable_auto_compactions=true"),
    # the fill's L0 files all left for the one measured compaction
    "compact": Prepared(("fillrandom",), options="disable_auto_compactions=true"),
    "readwhilewriting": Prepared(("fillseq", "waitforcompaction"), timed=True),
    # the lab report's ZippyDB command (rxlab.bench.driver.zippydb_options)
    "mixgraph": Prepared(("fillrandom", "waitforcompaction"), timed=True),
}
WRITES = ("fillseq", "fillrandom", *PREPARED)
TIMED = tuple(w for w, p in PREPARED.items() if p.timed)   # measured in turns of processes (timed_session)
CONTROL = timed.AGAIN   # the A/A control: A's second process

# The DB both sides read (driver.RunSpec's defaults are the seeds': 8 KiB blocks, block_align, O_DIRECT,
# 8 MiB cache, bloom 10); max_open_files as selfcheck's readers: OpenForReadOnly of a one-level DB with
# -1 gives a CompactedDBImpl, whose Get is not the one readrandom measures elsewhere.
READ_OPTIONS = "max_open_files=1000"
# The readers' own fields, the parity matrix's rows (rxlab.bench.selfcheck.parity_rows): its MultiGet batch.
READ_SPEC: dict[str, dict] = {
    "multireadrandom": {"batch_size": driver.MULTIGET_BATCH, "multiread_batched": True}}


@dataclass(frozen=True)
class Side:
    """One side of a comparison: what the words said, and how a process runs it."""

    text: str
    kind: str                 # backend, opts, build, version
    backend: str = "default"
    options: str = ""         # RocksDB options (RocksDB's syntax)
    build: str | None = None  # a build key: the child imports that build's module
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.text


_OPT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*=[^;=]+(;[A-Za-z_][A-Za-z0-9_.]*=[^;=]+)*;?$")


def parse_side(text: str, name: str = "A") -> Side:
    """A side from its words (see the module's docstring); a ValueError of one line otherwise."""
    t = str(text).strip()
    if t.startswith("opts:"):
        opts = t.removeprefix("opts:").strip()
        if not _OPT_RE.match(opts):
            raise ValueError(f"{name}={text!r}: expected opts:NAME=VALUE[;NAME=VALUE...] in RocksDB's option "
                             "syntax, e.g. opts:block_size=16384")
        return Side(t, "opts", options=opts)
    if t.startswith("build:") or re.fullmatch(r"\d+\.\d+\.\d+", t):
        key = t.removeprefix("build:").strip()
        if re.fullmatch(r"\d+\.\d+\.\d+", key):
            key = builds.build_key(key)
        try:
            rec = builds.get_build(key)
        except builds.BuildError as e:
            raise ValueError(f"{name}={text!r}: {e}; make it with `rxlab build-rocksdb`") from None
        # the installed module's build needs no module of its own (rxlab.core.builds.select_core)
        installed = Path(rec["path"]) == builds.installed_build()
        if builds.module_record(key) is None and not installed:
            raise ValueError(f"{name}={text!r}: no rxlab module compiled for build {key}; make it with "
                             f"`rxlab build-module {key}`")
        return Side(t, "build", build=key, env={builds.BUILD_ENV: key})
    try:
        uri = checks.backend(t, name=name)
    except ValueError as e:
        raise ValueError(f"{e}; or opts:NAME=VALUE, build:KEY, a version such as 9.10.0") from None
    return Side(t, "backend", backend=uri)


def _spec(side: Side, db: Path, num: int, threads: int, *, direct: bool = True, **kw) -> driver.RunSpec:
    opts = ";".join(o for o in (READ_OPTIONS if kw.get("readonly") else "", side.options) if o)
    return driver.RunSpec(db=str(db), name=kw.pop("name", "ab"), backend=side.backend, num=num,
                          threads=threads, options=opts, statistics=False, use_direct_reads=direct,
                          use_direct_io_for_flush_and_compaction=direct, **kw)


def db_for(side: Side) -> str:
    """The name of the DB a side reads: one DB for sides that differ only in backend or build, one of
    its own for a side whose options may change the files."""
    return "db-" + re.sub(r"[^A-Za-z0-9]+", "_", side.options)[:40] if side.options else "db"


def prepare(sides: Sequence[Side], work: Path, num: int, *, direct: bool = True,
            progress: bool = False) -> dict[str, Path]:
    """Load (fillseq, flush, compact) each DB the sides read; returns side text -> DB path. With O_DIRECT
    off every file is then read once, so that the page cache holds the DB before the first turn (its
    readers would otherwise fill it during their slices, the first side's most)."""
    out: dict[str, Path] = {}
    made: dict[str, Path] = {}
    for s in sides:
        name = db_for(s)
        if name not in made:
            db = work / name
            spec = _spec(s if s.options else Side("default", "backend"), db, num, 1,
                         steps=["fillseq", "flush", "compact"], name=f"ab-load-{name}")
            driver.validate(spec)
            sess = driver.Session(spec)
            try:
                for step in driver.expand(spec.steps):
                    sess.run_step(step)
            finally:
                sess.close()
            made[name] = db
            if not direct:
                page_in(db)
        out[s.text] = made[name]
    return out


_READER = """
import json, sys
a = json.loads(sys.argv[1])
from rxlab.bench import driver
spec = driver.RunSpec(**a["spec"])
driver.validate(spec)
s = driver.Session(spec)
while True:   # until killed: readseq ends at the last key and starts over at the first (its count goes on)
    s.run_step({"name": a["workload"], "label": a["workload"], "progress_file": a["ops_path"]})
"""


def read_spec(side: Side, db: Path, num: int, threads: int, workload: str, seed: int,
              duration: int = 10**6, direct: bool = True) -> driver.RunSpec:
    """What a reader of `db` runs: `workload` read-only for `duration` seconds, the row's fields."""
    return _spec(side, db, num, threads, steps=[workload], duration=duration, readonly=True,
                 use_existing_db=True, seed=seed, direct=direct, **READ_SPEC.get(workload, {}))


def reader(name: str, side: Side, db: Path, num: int, threads: int, workload: str,
           seed: int, ops_path: Path, direct: bool = True) -> turns.Contender:
    """A process reading `db` read-only with `workload` until it is killed, its workers counting their
    operations in `ops_path` (turns.Contender: it has started when they grow)."""
    spec = read_spec(side, db, num, threads, workload, seed, direct=direct)
    ops_path.unlink(missing_ok=True)   # counted from zero, not from an earlier turn's process
    args = {"spec": spec.to_dict(), "workload": workload, "ops_path": str(ops_path)}
    return turns.Contender(name, [sys.executable, "-c", _READER, json.dumps(args, default=str)],
                           {**os.environ, **side.env} if side.env else None, ops_path=str(ops_path))


def page_start_share(offsets: str) -> float:
    """The share of traced reads whose buffer starts a page, from turns.offsets_text's '1024 (97%), 0 (3%)'
    (NaN when nothing was traced: no strace, or no 8 KiB O_DIRECT read in the window)."""
    if not offsets:
        return float("nan")
    m = re.search(r"(?:^|, )0 \((\d+)%\)", offsets)
    return int(m.group(1)) / 100 if m else 0.0


def read_session(a: Side, b: Side, dbs: Mapping[str, Path], *, num: int, threads: int, workload: str,
                 turn: int, rounds: int, slice_s: float, warmup_s: float, cpus: set[int] | None = None,
                 direct: bool = True, placement: bool = False, progress: bool = False) -> list[dict]:
    """One turn of reads: a session of A, B and A again (fresh processes, other keys each turn); rows of
    config, copy, value, reads, ops, wall_s and the CPU beside the value. With O_DIRECT the value is the
    side's pooled device reads per second, its CPU per device read beside (cpu_per_read_us), and the
    device's time per read (device_us_per_read, the block layer's await) and bytes per read; without,
    its operations per second and CPU per operation (cpu_per_op_us). `placement`: where each process's
    8 KiB O_DIRECT read buffers fall in their pages (turns.measure's strace during the warm-up), as
    buffer_offsets and page_start_share (the share of traced reads whose buffer starts a page: two pages,
    not three)."""
    seed = 1000 * (turn + 1)
    db = dbs[a.text]
    ops = {who: db.with_name(f"{db.name}.{i}.ops") for i, who in enumerate(("A", "B", "A" + CONTROL))}
    group = [reader("A", a, dbs[a.text], num, threads, workload, seed, ops["A"], direct),
             reader("B", b, dbs[b.text], num, threads, workload, seed + 100, ops["B"], direct),
             reader("A" + CONTROL, a, dbs[a.text], num, threads, workload, seed + 200, ops["A" + CONTROL],
                    direct)]
    k = turn % len(group)           # who starts first moves from turn to turn
    disk = sysinfo.device_for_path(dbs[a.text]).disk
    try:
        df = turns.measure(group[k:] + group[:k], sessions=1, rounds=rounds, slice_s=slice_s,
                           warmup_s=warmup_s, disk=disk, cpus=cpus, progress=progress, placement=placement)
    finally:
        for p in ops.values():
            p.unlink(missing_ok=True)
    dev = [c for c in ("dev_read_bytes", "dev_read_ms") if c in df.columns] if direct else []
    g = df.groupby("contender")[["cpu_s", "reads", "ops", "wall_s", *dev]].sum()
    which = {"A": (a.text, 0), "B": (b.text, 0), "A" + CONTROL: (a.text, 1)}
    rows = []
    for who, (config, copy) in which.items():
        r = g.loc[who]
        count, cpu = (r["reads"], "cpu_per_read_us") if direct else (r["ops"], "cpu_per_op_us")
        rows.append({"config": config, "copy": copy, "value": count / r["wall_s"] if r["wall_s"] else 0.0,
                     cpu: 1e6 * r["cpu_s"] / count if count else float("nan"),
                     "reads": int(r["reads"]), "ops": int(r["ops"]), "wall_s": float(r["wall_s"])})
        if dev and r["reads"]:
            # where a read's time goes: the device's (its await) and the size the device was asked
            rows[-1].update(device_us_per_read=1e3 * r["dev_read_ms"] / r["reads"],
                            bytes_per_read=r["dev_read_bytes"] / r["reads"])
        if placement and "buffer_offsets" in df.columns:
            text = str(df.loc[df["contender"] == who, "buffer_offsets"].iloc[0] or "")
            rows[-1].update(buffer_offsets=text, page_start_share=page_start_share(text))
    return rows


_WRITER = """
import json, sys
a = json.loads(sys.argv[1])
from rxlab.bench import driver
spec = driver.RunSpec(**a["spec"])
driver.validate(spec)
s = driver.Session(spec)
try:
    for name in a["prepare"]:   # the DB's state before the measured step: not measured
        s.run_step({"name": name, "label": name})
    row = s.run_step({**a["step"], "label": a["workload"]})
finally:
    s.close()
# the process's CPU over the step, every thread of it (RocksDB's flush and compaction threads, an engine's)
# and the bytes it wrote to storage (/proc/self/io: O_DIRECT and written-back pages, not the page cache's)
print("RXLAB-AB " + json.dumps({"ops": row["ops"], "wall_s": row["wall_s"],
                                "cpu_s": row["cpu_user_s"] + row["cpu_sys_s"],
                                "write_bytes": row.get("own_write_bytes")}))
"""


def timed_contender(name: str, side: Side, db: Path, *, num: int, threads: int, workload: str,
                    seed: int, direct: bool = True) -> turns.Contender:
    """A process that brings a fresh DB at `db` to a timed row's state, then runs its step until killed,
    counting the step's operations in `<db>.ops` (rxlab.bench.timed)."""
    shutil.rmtree(db, ignore_errors=True)
    prep = PREPARED[workload]
    spec = _spec(replace(side, options=";".join(o for o in (prep.options, side.options) if o)), db, num,
                 threads, steps=[*prep.steps, workload], seed=seed, direct=direct, **prep.spec)
    return timed.contender(name, spec, prep.steps, {**write_step(workload), "label": workload},
                           db.with_name(db.name + ".ops"), {**os.environ, **side.env} if side.env else None)


def timed_session(a: Side, b: Side, work: Path, *, num: int, threads: int, workload: str, turn: int,
                  rounds: int, slice_s: float, warmup_s: float, direct: bool = True,
                  progress: bool = False) -> list[dict]:
    """One turn of a timed row: a session of A, B and A again, each a fresh process on a fresh DB of its own
    in `work` brought to the row's state, measured in slices; rows of config, copy, value (operations per
    second over its slices), cpu_per_op_us (the process's CPU, every thread), ops, wall_s."""
    seed = 1000 * (turn + 1)
    work.mkdir(parents=True, exist_ok=True)
    which = {"A": (a.text, 0), "B": (b.text, 0), "A" + CONTROL: (a.text, 1)}
    side = {"A": a, "B": b, "A" + CONTROL: a}
    group = [timed_contender(who, side[who], work / f"db-{i}", num=num, threads=threads, workload=workload,
                             seed=seed + 100 * i, direct=direct) for i, who in enumerate(which)]
    k = turn % len(group)           # who starts first moves from turn to turn
    try:
        g = timed.session(group[k:] + group[:k], rounds=rounds, slice_s=slice_s, warmup_s=warmup_s,
                          progress=progress)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [{"config": config, "copy": copy, "value": float(g.loc[who, "value"]),
             "cpu_per_op_us": float(g.loc[who, "cpu_per_op_us"]), "ops": int(g.loc[who, "ops"]),
             "wall_s": float(g.loc[who, "wall_s"])} for who, (config, copy) in which.items()]


def measure_words(workload: str, direct: bool = True) -> tuple[str, str]:
    """What a row's value and its CPU beside it are, in words (`rxlab ab`'s lines)."""
    if workload in READS:
        if not direct:
            return "operations per second (reads from the page cache)", "CPU per operation"
        return "device reads per second", "CPU per device read"
    if workload in ("flush", "compact"):
        return f"the {workload}'s speed (1 / its seconds)", f"CPU of the {workload}"
    if workload == "readwhilewriting":
        return "reads per second, the writer beside them", "CPU per read, the writer's included"
    return "operations per second", "CPU per operation"


def write_step(workload: str) -> dict:
    """The measured step of a write row (the ZippyDB options on mixgraph)."""
    return {"name": workload, **(driver.zippydb_options() if workload == "mixgraph" else {})}


def write_run(side: Side, db: Path, *, num: int, threads: int, workload: str, seed: int,
              duration_s: float = 5.0, timeout: float = 3600, direct: bool = True) -> dict:
    """One run of a write row on a fresh DB at `db` in its own process (a PREPARED row brings the DB to
    its state first); {ops, wall_s, cpu_s, write_bytes, value, cpu_per_op_us} of the measured step (cpu_s: the
    process's, all its threads; write_bytes: what the process wrote to storage over the step, None where
    /proc/self/io is not readable). duration_s: how long a timed row's step runs; direct: O_DIRECT reads,
    flush and compaction."""
    shutil.rmtree(db, ignore_errors=True)
    prep = PREPARED.get(workload, Prepared(()))
    kw = dict(prep.spec)
    if prep.timed:
        kw["duration"] = duration_s
    spec = _spec(replace(side, options=";".join(o for o in (prep.options, side.options) if o)), db, num,
                 threads, steps=[*prep.steps, workload], seed=seed, direct=direct, **kw)
    args = {"spec": spec.to_dict(), "workload": workload, "prepare": list(prep.steps),
            "step": write_step(workload)}
    p = subprocess.run([sys.executable, "-c", _WRITER, json.dumps(args, default=str)], capture_output=True,
                       text=True, timeout=timeout, env={**os.environ, **side.env}, check=False)
    shutil.rmtree(db, ignore_errors=True)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RXLAB-AB ")), None)
    if p.returncode != 0 or line is None:
        tail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"{side.text}: {workload} failed (exit {p.returncode}): {tail}")
    r = json.loads(line.split(" ", 1)[1])
    return {**r, "value": r["ops"] / r["wall_s"] if r["wall_s"] else 0.0,
            "cpu_per_op_us": 1e6 * r["cpu_s"] / r["ops"] if r["ops"] else float("nan")}
