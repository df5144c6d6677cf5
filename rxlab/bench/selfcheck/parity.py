"""The parity matrix (`rxlab selfcheck parity`): every workload on every engine against RocksDB's own
file system.

Cells are (workload, engine, threads, condition, direct IO, sync); each is the ratio of the
engine to `default` on throughput and on CPU per op, with a 95% interval, measured in turns
with an A/A control (rxlab.core.resolution: `default` twice per turn, every contender once,
the order rotated and reversed from turn to turn).

Why whole short runs, not SIGSTOP slices (rxlab.bench.turns), for every row: most rows write,
and a writer's cost is not steady over a run (memtable fills, flushes, compactions come in
bursts of seconds), so slices of a second compare different phases of two writers; a whole run
from an empty DB is the same work for every contender. Each turn's runs follow each other within
seconds, so the machine's drift over minutes cancels in the per-turn ratio, and the A/A ratio
shows what "equal" looks like in the same turns. The readers get the same method so that every
row's interval means the same thing.

Why the release db_bench through the plugin, not rxlab's driver: `default` is then RocksDB's own
file system in RocksDB's own tool, and every column is the same binary, the same process layout
and the same options, with only --fs_uri changed. The plugin is preloaded for `default` too, so
the processes differ in nothing else.

CPU per op is all threads of the process (utime + stime in /proc/PID/stat, read when db_bench
prints the measured benchmark's result), over the ops of that benchmark.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

import pandas as pd

from rxlab.bench.neighbour import Spinner, busy_cpu
from rxlab.bench.references import flag_list, parse_db_bench, plugin_path
from rxlab.bench.selfcheck.parity_rows import COMMON, NAMES, Row, rows
from rxlab.core import engines, resolution, sysinfo
from rxlab.core.builds import active_build

BASE = "default"
CONDITIONS = ("quiet", "busy")
METRICS = {"qps": "throughput", "cpu_per_op_us": "CPU per op"}
KEYS = ["workload", "threads", "condition", "direct", "sync"]


def columns(names: Iterable[str] | None = None) -> dict[str, str]:
    """Column name -> backend: `default`, then each engine of the registry (or of `names`), plain and,
    as `<engine>+best`, with its best options (rxlab.core.engines.best) where it has them."""
    known = engines.names()
    chosen = list(names) if names else known
    bad = [n for n in chosen if n not in known]
    if bad:
        raise ValueError(f"--engines {','.join(bad)}: engines are {', '.join(known)}")
    out = {BASE: BASE}
    for n in chosen:
        out[n] = n
        if (b := engines.best(n)) is not None:
            out[f"{n}+best"] = b
    return out


@dataclass
class Settings:
    """What the matrix runs (checked in `check`)."""

    workloads: tuple[str, ...] = ("fillseq", "fillrandom", "readrandom")
    engines: tuple[str, ...] = ()        # () = every engine of the registry
    threads: tuple[int, ...] = (1, 2)
    conditions: tuple[str, ...] = ("quiet",)
    direct: tuple[bool, ...] = (True,)
    sync: tuple[bool, ...] = (False,)
    target: float = resolution.DEFAULT_TARGET_PCT
    budget_s: float = 600.0
    num: int = 400_000                   # keys written by every fill (the fillseq size)
    duration: int = 5                    # seconds of each timed row's measured benchmark (db_bench's int)
    min_turns: int = resolution.AB_MIN_TURNS   # as rxlab ab: its cells' turns take seconds
    busy_cpu: int | None = None          # None: rxlab.bench.neighbour.busy_cpu()
    workdir: Path | None = None          # the runs' DBs (default: <out>/db)
    cols: dict[str, str] = field(default_factory=dict)

    def check(self) -> Settings:
        bad = [w for w in self.workloads if w not in NAMES]
        if bad or not self.workloads:
            raise ValueError(f"--workloads {','.join(bad) or repr('')}: workloads are {', '.join(NAMES)}")
        if not self.threads or any(not isinstance(t, int) or t < 1 for t in self.threads):
            raise ValueError(f"--threads {','.join(map(str, self.threads))}: expected integers >= 1, "
                             "e.g. 1,2")
        bad = [c for c in self.conditions if c not in CONDITIONS]
        if bad or not self.conditions:
            raise ValueError(f"--condition {','.join(bad)}: conditions are quiet, busy or both")
        if not (0 < self.target < 100):
            raise ValueError(f"--target {self.target:g}: expected a half-width in percent, 0 < target < 100")
        if not (self.budget_s > 0):
            raise ValueError(f"--budget {self.budget_s}: expected a positive time such as 90s, 10m, 1.5h")
        if self.num < 100:
            raise ValueError(f"--num {self.num}: expected at least 100 keys")
        if not (isinstance(self.duration, int) and self.duration >= 1):
            raise ValueError(f"--duration {self.duration}: expected a whole number of seconds >= 1")
        if not self.cols:  # a caller may add columns of its own (tests: a configuration that fails)
            self.cols = columns(self.engines)
        return self

    def groups(self) -> list[dict]:
        """One dict per group of cells measured together (the keys of KEYS), in the matrix's order."""
        return [dict(zip(KEYS, k, strict=True)) for k in
                product(self.workloads, self.threads, self.conditions, self.direct, self.sync)]


def cell_flags(row: Row, g: dict, s: Settings, db: Path) -> dict:
    """db_bench's flags for one run of a group's row (the fs_uri is added per column)."""
    flags = {**COMMON, **row.flags, "db": str(db), "benchmarks": ",".join(row.chain), "num": s.num,
             "threads": g["threads"], "use_direct_reads": str(g["direct"]).lower(),
             "use_direct_io_for_flush_and_compaction": str(g["direct"]).lower(),
             "sync": str(g["sync"]).lower()}
    if row.reads_loaded:
        # read-only (no lock) on the shared DB; open_files above its file count, since with -1 a
        # read-only open of a DB in one level gives CompactedDBImpl, whose Get is not DBImpl's
        flags.update(use_existing_db=1, readonly=1, open_files=1000)
    if row.prepare:
        flags["use_existing_db"] = 1  # loaded by the row's own first process (prepare_flags)
    if not row.timed and not row.reads_loaded and g["threads"] > 1:
        # db_bench's writers each write --writes keys (default --num): split `num` over the threads,
        # so that every thread count does the same work and the rows' throughputs scale comparably
        flags["writes"] = math.ceil(s.num / g["threads"])
    if row.timed:
        flags.update(duration=s.duration)
        if row.reads_loaded or row.name == "readwhilewriting":
            flags["reads"] = 10 ** 9  # the duration ends it
    elif row.name == "readseq":
        flags["reads"] = s.num  # one pass over every key
    return flags


def prepare_flags(row: Row, flags: dict) -> dict:
    """The flags of a row's first process (its `prepare` benchmarks on an empty DB, untimed)."""
    out = {k: v for k, v in flags.items() if k not in ("duration", "reads", "use_existing_db")}
    return {**out, "benchmarks": ",".join(row.prepare)}


def _db_bench() -> Path:
    p = active_build() / "bin" / "db_bench"
    if not p.is_file():
        raise FileNotFoundError(f"db_bench not found at {p}: run `make ext` (it builds the release db_bench)")
    return p


@dataclass
class Run:
    """One db_bench run's measured benchmark: ops, wall seconds, CPU seconds of every thread."""

    ops: int
    wall_s: float
    cpu_s: float
    command: str

    @property
    def qps(self) -> float:
        return self.ops / self.wall_s if self.wall_s > 0 else math.nan

    @property
    def cpu_per_op_us(self) -> float:
        return 1e6 * self.cpu_s / self.ops if self.ops > 0 else math.nan


def run_measured(flags: dict, backend: str) -> Run:
    """db_bench with `flags` on `backend` (the plugin preloaded whatever the backend); the last
    result line's benchmark is the measured one, its CPU the process's CPU between the previous
    result line (or the start) and its own."""
    uri = engines.fs_uri(backend)
    args = flag_list({**flags, **({"fs_uri": uri} if uri else {})})
    cmd = [str(_db_bench()), *args]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL", *cmd]  # each result line as it is printed, to read the CPU then
    env = {**os.environ, "LD_PRELOAD": str(plugin_path())}
    cpu_at: list[float] = []
    lines: list[str] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as p:
        assert p.stdout is not None
        for line in p.stdout:
            lines.append(line)
            if re.match(r"^\S+\s*:\s*\S+ micros/op ", line):
                c = sysinfo.proc_pid_cpu(p.pid)  # a zombie's /proc entry stays until it is reaped
                cpu_at.append(c["user_s"] + c["sys_s"] if c else math.nan)
        err = p.stderr.read() if p.stderr else ""
        rc = p.wait()
    short = " ".join(cmd[2:] if cmd[0] == "stdbuf" else cmd)
    if rc != 0:
        tail = (err.strip() or "".join(lines).strip())[-600:].replace("\n", " | ")
        raise RuntimeError(f"db_bench on {backend} failed (exit {rc}): {_error_line(tail)}")
    results = parse_db_bench("".join(lines))
    if not results or len(results) != len(cpu_at):
        raise RuntimeError(f"db_bench on {backend} printed {len(results)} results for "
                           f"{flags['benchmarks']}: {short}")
    last = results[-1]
    cpu = cpu_at[-1] - (cpu_at[-2] if len(cpu_at) > 1 else 0.0)
    return Run(ops=int(last["ops"]), wall_s=float(last["wall_s"]), cpu_s=cpu, command=short)


def _error_line(tail: str) -> str:
    """The line of db_bench's output that says what went wrong (not its progress lines)."""
    parts = [p.strip() for p in tail.split(" | ") if p.strip() and "finished" not in p]
    bad = [p for p in parts if any(w in p.lower() for w in ("error", "corruption", "fail", "abort"))]
    return (bad or parts or [tail])[-1]


def load_shared_db(s: Settings, root: Path, log: Callable[[str], None]) -> Path:
    """The DB the pure readers share: fillseq of `num` keys, then a full compaction, on RocksDB's own
    file system; kept under `root` and reused while its marker matches the options."""
    db = root / f"loaded-{s.num}"
    marker = db / "rxlab-parity-loaded"
    want = f"num={s.num} " + " ".join(f"{k}={v}" for k, v in sorted(COMMON.items()))
    if marker.is_file() and marker.read_text() == want:
        return db
    shutil.rmtree(db, ignore_errors=True)
    db.parent.mkdir(parents=True, exist_ok=True)
    log(f"loading the readers' DB: {s.num} keys, fillseq then compact ({db})")
    run_measured({**COMMON, "db": str(db), "benchmarks": "fillseq,compact", "num": s.num,
                  "use_direct_io_for_flush_and_compaction": "true"}, BASE)
    marker.write_text(want)
    return db


def _label(g: dict) -> str:
    return (f"{g['workload']} t={g['threads']} {g['condition']} direct={'on' if g['direct'] else 'off'} "
            f"sync={'on' if g['sync'] else 'off'}")


class Matrix:
    """The measurement: groups of cells, turns added round-robin over the unresolved groups until every
    cell is resolved (both metrics' half-widths <= target) or the budget would be overrun."""

    def __init__(self, s: Settings, out: Path, *, log: Callable[[str], None] | None = None,
                 on_turn: Callable[[Matrix], None] | None = None):
        self.s = s.check()
        self.out = Path(out)
        self.work = Path(s.workdir) if s.workdir else self.out / "db"
        self.log = log or (lambda m: print(m, file=sys.stderr, flush=True))
        self.on_turn = on_turn
        self.runs: list[dict] = []
        self.warmups: list[dict] = []             # runs not kept in any cell (_warm_up), stored apart
        self.turns: dict[int, int] = {}           # group index -> turns done
        self.stopped = ""
        self.t0 = time.monotonic()
        self.turn_s: list[float] = []
        # (group index, column) -> the first line of the error of a run that failed: the column leaves
        # the group and its cells say "failed" (a crash or a corruption is a finding, never dropped)
        self.failed: dict[tuple[int, str], str] = {}

    def table(self) -> pd.DataFrame:
        """Per group key, metric and column: the comparison (resolution.compare) with its interval."""
        df = pd.DataFrame(self.runs)
        if df.empty:
            return pd.DataFrame(columns=[*KEYS, "metric", *resolution.COMPARISON_COLUMNS])
        frames = []
        for metric in METRICS:
            obs = df.assign(value=df[metric])[[*KEYS, "turn", "config", "copy", "value"]]
            t = resolution.compare(obs, BASE, KEYS, target=self.s.target, min_turns=self.s.min_turns,
                                   why_unresolved=self.stopped)
            frames.append(t.assign(metric=metric))
        out = pd.concat(frames, ignore_index=True)
        groups = self.s.groups()
        for (gi, config), err in self.failed.items():
            mask = (out["config"] == config) if config != BASE else pd.Series(True, index=out.index)
            for k in KEYS:
                mask &= out[k] == groups[gi][k]
            out.loc[mask, ["resolved", "status"]] = [False, f"failed: {err}"]
            have = set(out.loc[mask, "metric"]) if config != BASE else set(METRICS)
            extra = [{**groups[gi], "metric": m, "base": BASE, "config": config,
                      "comparison": f"{config} / {BASE}",
                      "ratio": math.nan, "lo": math.nan, "hi": math.nan, "half_width": math.nan,
                      "resolved": False, "turns": 0, "status": f"failed: {err}"}
                     for m in METRICS if m not in have]
            if extra:
                out = pd.concat([out, pd.DataFrame(extra)], ignore_index=True)
        return out

    def _active(self, gi: int, table: pd.DataFrame) -> list[str]:
        """The group's contenders still unresolved on some metric (all of them before min_turns)."""
        if (gi, BASE) in self.failed:
            return []
        contenders = [c for c in self.s.cols if c != BASE and (gi, c) not in self.failed]
        if self.turns.get(gi, 0) < self.s.min_turns or table.empty:
            return contenders
        g = self.s.groups()[gi]
        mine = table
        for k in KEYS:
            mine = mine[mine[k] == g[k]]
        done = set(mine.loc[mine["resolved"], "config"]) - set(mine.loc[~mine["resolved"], "config"])
        return [c for c in contenders if c not in done]

    def run(self) -> pd.DataFrame:
        s = self.s
        rows_ = rows()
        groups = s.groups()
        self.out.mkdir(parents=True, exist_ok=True)
        shared = None
        if any(rows_[g["workload"]].reads_loaded for g in groups):
            shared = load_shared_db(s, self.work, self.log)
        self.t0 = time.monotonic()
        cpu = s.busy_cpu if s.busy_cpu is not None else busy_cpu()
        busy = any(g["condition"] == "busy" for g in groups)   # a quiet matrix has no neighbour to place
        self.log(f"parity: {len(groups)} groups x {len(s.cols)} columns + A/A; target +-{s.target:g}%, "
                 f"budget {s.budget_s:g} s" + (f"; busy neighbour on CPU {cpu}" if busy else ""))
        try:
            while True:
                table = self.table()
                pending = [(gi, a) for gi in range(len(groups)) if (a := self._active(gi, table))]
                if not pending:
                    break
                for gi, active in pending:
                    elapsed = time.monotonic() - self.t0
                    if self.turn_s and elapsed + sum(self.turn_s[-3:]) / len(self.turn_s[-3:]) > s.budget_s:
                        self.stopped = "budget"
                        return self.table()
                    self._turn(gi, groups[gi], rows_[groups[gi]["workload"]], active, shared, cpu)
        except KeyboardInterrupt:
            self.stopped = "interrupted"
            self.log("interrupted: keeping the turns measured so far")
        return self.table()

    def _record(self, g: dict, config: str, r: Run) -> dict:
        """One run as runs.csv and warmups.csv store it."""
        return {**g, "config": config, "backend": self.s.cols[config], "ops": r.ops, "wall_s": r.wall_s,
                "cpu_s": r.cpu_s, "qps": r.qps, "cpu_per_op_us": r.cpu_per_op_us, "command": r.command}

    def _warm_up(self, g: dict, row: Row, shared: Path) -> None:
        """One run of the base before a reading group's first turn, kept out of every cell. The first
        run to read the shared DB with a workload's pattern can read it cold (the host's cache under the
        virtio disk), and it is always the base's first copy (turn_order): one such run pulls every
        ratio of the group's first turn the same way and widens all its intervals
        (docs/findings/2026-11-29-parity-2threads.md)."""
        flags = cell_flags(row, g, self.s, shared)
        flags["seed"] = 999
        try:
            r = run_measured(flags, self.s.cols[BASE])
        except RuntimeError as e:   # the base's first turn fails the same way and says so in its cells
            self.log(f"warm-up failed: {_label(g)}: {str(e).splitlines()[0][-300:]}")
            return
        self.warmups.append(self._record(g, BASE, r))
        self.log(f"[{time.monotonic() - self.t0:6.0f}s] {_label(g)} warm-up ({BASE}, not kept): "
                 f"{r.qps:.0f}/s {r.cpu_per_op_us:.1f}us")

    def _turn(self, gi: int, g: dict, row: Row, active: Sequence[str], shared: Path | None, cpu: int) -> None:
        turn = self.turns.get(gi, 0)
        t_start = time.monotonic()
        order = resolution.turn_order(BASE, list(active), turn)
        with Spinner(cpu if g["condition"] == "busy" else None):
            if turn == 0 and row.reads_loaded and shared is not None:
                self._warm_up(g, row, shared)
            for i, (config, copy) in enumerate(order):
                db = shared if row.reads_loaded else self.out / "db-run"
                if not row.reads_loaded:
                    shutil.rmtree(db, ignore_errors=True)
                flags = cell_flags(row, g, self.s, db)
                # other keys every run: no reader finds blocks that another one's run left in a cache
                flags["seed"] = 1000 + 100 * turn + i
                try:
                    if row.prepare:
                        run_measured(prepare_flags(row, flags), self.s.cols[config])
                    r = run_measured(flags, self.s.cols[config])
                except RuntimeError as e:
                    self.failed[(gi, config)] = str(e).splitlines()[0][-300:]
                    self.log(f"FAILED: {_label(g)} turn {turn + 1} {config}: {self.failed[(gi, config)]}")
                    if config == BASE:
                        break
                    continue
                finally:
                    if not row.reads_loaded:
                        shutil.rmtree(db, ignore_errors=True)
                self.runs.append({**self._record(g, config, r), "turn": turn, "copy": copy})
        self.turns[gi] = turn + 1
        self.turn_s.append(time.monotonic() - t_start)
        mine = [x for x in self.runs if x["turn"] == turn and all(x[k] == g[k] for k in KEYS)]
        cells = "  ".join(f"{x['config']}{'#2' if x['copy'] else ''} {x['qps']:.0f}/s "
                          f"{x['cpu_per_op_us']:.1f}us" for x in mine)
        self.log(f"[{time.monotonic() - self.t0:6.0f}s] {_label(g)} turn {turn + 1}: {cells}")
        if self.on_turn is not None:
            self.on_turn(self)
