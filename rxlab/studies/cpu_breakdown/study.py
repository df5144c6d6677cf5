"""Where RocksDB's CPU goes in a point query: the flamegraph table of the gcc/clang post, measured here.

The seed (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang", section *Flamegraphs*) summarises flamegraphs of readrandom,
readrandom2 and readrandom3 (the IO-efficiency seed's tests) as the
percentage of samples in nine parts of the call stack. This study produces
that table from fresh samples: one stored run of the IO-efficiency sequence
(`rxlab.bench.ioeff.db.sequence`, its scale presets) in which each seed test runs
`repeats` times as a pair of steps: a profiled step (perf sampling,
PerfContext off as db_bench's default; recording.py) and a timed step (no
sampling, PerfContext level 5), so that the samples can be checked against
the timers RocksDB keeps for the same code (tables.crosscheck). The stacks
are classified by rules.py.

The protocol's rows are the run's steps: `setup` opens the DB and the run,
`run_one` runs one step, and the last row completes the run and returns it
(a failing step stores the run as failed and closes the DB).

What the local build gives (checked by `perf.symbol_report` and the tests): the
RocksDB library is a Release build with its full symbol table (not stripped)
and no DWARF debug information, compiled with frame pointers
(-fno-omit-frame-pointer, RocksDB's CMake default outside Debug) but with
-momit-leaf-frame-pointer, and libc and rxlab's extension have no frame
pointers. Frame-pointer stacks therefore lose the caller of every leaf
function and stop at the first libc or extension frame (the kernel's read
path then has no RocksDB caller); DWARF unwinding (`--call-graph dwarf`) gives
whole stacks and is the default. Without debug information there are no
inlined frames: code inlined into a caller counts as the caller's.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from rxlab.bench import driver, perf
from rxlab.bench.ioeff.db import Settings as IoEfficiencySettings
from rxlab.bench.ioeff.db import sequence
from rxlab.core import metrics
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.cpu_breakdown import figures, findings, tables
from rxlab.studies.cpu_breakdown.params import (
    BLOCK_BYTES,
    KEY_SIZE,
    PROFILE,
    PROFILE_PERF_LEVEL,
    PUBLISHED,
    SEED_FILE,
    TESTS,
    TIMER_PERF_LEVEL,
    TIMERS,
    Params,
)
from rxlab.studies.cpu_breakdown.recording import ProfiledRun, run_meta
from rxlab.studies.cpu_breakdown.result import CpuResult

RUN_PREFIX = "cpu-"
STUDY_TAG = "cpu_breakdown"      # the stored spec's `study`
_NAME_RE = re.compile(r"^cpu-(?P<study>\d{8}T\d{6}[0-9a-f]{4})$")
PLAN_COLUMNS = ["step_index", "step", "benchmark", "mode", "rep", "threads"]


def steps(settings: IoEfficiencySettings) -> list[dict]:
    """The IO-efficiency sequence, each seed test run `repeats` times as a profiled step
    (PerfContext off, as db_bench by default) followed by a timed step (PerfContext level 5)."""
    out: list[dict] = []
    for s in driver.expand(sequence(settings)):
        if s.get("name") == "readrandom" and s.get("label") in TESTS:
            for rep in range(settings.repeats):
                out.append({**s, "cpu_mode": PROFILE, "cpu_rep": rep, "perf_level": PROFILE_PERF_LEVEL})
                out.append({**s, "cpu_mode": TIMERS, "cpu_rep": rep, "perf_level": TIMER_PERF_LEVEL})
        else:
            out.append(s)
    return out


class CpuBreakdownStudy(Study, name="cpu_breakdown", notebook="80_cpu_breakdown", seed=SEED_FILE,
                               published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params, result=CpuResult,
                               tables=tables.TABLES, figures=figures.FIGURES):
    """Where RocksDB's CPU goes in an IO-bound point query: perf samples by part of the call stack."""

    def plan(self, params: Params) -> pd.DataFrame:
        """The steps of the study's one run, in order: index, label, benchmark, mode, repetition, threads."""
        rows = []
        for i, s in enumerate(steps(params.settings())):
            if "reopen" in s:
                rows.append({"step_index": i, "step": "reopen", "benchmark": "",
                             "mode": f"reopen {s['reopen']}", "rep": None, "threads": None})
            else:
                rows.append({"step_index": i, "step": s.get("label", s["name"]), "benchmark": s["name"],
                             "mode": s.get("cpu_mode", ""), "rep": s.get("cpu_rep"),
                             "threads": s.get("threads", params.threads)})
        return pd.DataFrame(rows, columns=PLAN_COLUMNS).astype({"rep": "Int64", "threads": "Int64"})

    def setup(self, ctx: RunContext) -> None:
        """Open the DB and the run (perf must sample cpu-clock here)."""
        p: Params = ctx.params
        s: IoEfficiencySettings = ctx.settings
        support = perf.perf_support()
        if support.path is None or not support.cpu_clock:
            raise RuntimeError("perf with the cpu-clock event is needed: " + support.hardware_detail)
        ctx.state["steps"] = steps(s)
        spec = driver.RunSpec(
            db=str(ctx.path("db")), name=ctx.run_name(), backend=p.backend, steps=ctx.state["steps"],
            num=s.num, key_size=KEY_SIZE, value_size=p.value_size, threads=p.threads, duration=s.duration,
            block_size=BLOCK_BYTES, block_align=True, compression="none", cache_size=s.cache_size,
            write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
            max_bytes_for_level_base=s.max_bytes_for_level_base, perf_level=PROFILE_PERF_LEVEL, scale=p.scale)
        meta = run_meta(support, study=STUDY_TAG, call_graph=p.call_graph, frequency=p.frequency,
                        repeats=s.repeats)
        ctx.state["run"] = ProfiledRun(spec, ctx.root, meta, call_graph=p.call_graph, frequency=p.frequency)

    def describe(self, row) -> str:
        return f"{row.step} {row.mode} r{row.rep}" if row.mode in (PROFILE, TIMERS) else str(row.step)

    def run_one(self, ctx: RunContext, row) -> Path | None:
        """One step of the run; after the last one, the run is complete and returned."""
        run: ProfiledRun = ctx.state["run"]
        run.step(row.step_index, ctx.state["steps"][row.step_index])
        return run.finish() if row.step_index == len(ctx.state["steps"]) - 1 else None

    def teardown(self, ctx: RunContext, error: BaseException | None) -> None:
        """A study that stopped early (a failed step, Ctrl-C during or between steps): the run is
        stored as failed and the DB closed (after `finish` this closes nothing)."""
        run = ctx.state.get("run")
        if run is not None and error is not None:
            run.abort(error)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per step of the study's run: study, test (the step's label), the step's raw columns and
        the run's metadata, the seeds' columns. Runs of other studies are dropped."""
        if "spec.study" not in cat.columns:
            return pd.DataFrame(columns=["study", "test"])
        cat, m = match_runs(cat, _NAME_RE, lambda c, _: c["spec.study"] == STUDY_TAG)
        if cat.empty:
            return pd.DataFrame(columns=["study", "test"])
        keys = pd.DataFrame({"study": m["study"], "test": cat["name"].astype(str)}, index=cat.index)
        return tidy_frame(keys, cat, metrics.seed_columns(cat).drop(columns="test"),
                          sort=["study", "step_index"])

    def complete(self, frame: pd.DataFrame) -> bool:
        """Every seed test has a profiled and a timed step."""
        if frame.empty or "cpu.mode" not in frame.columns:
            return False
        have = frame.groupby("cpu.mode")["test"].apply(set)
        return all(set(TESTS) <= have.get(mode, set()) for mode in (PROFILE, TIMERS))

    def findings(self, result: CpuResult) -> str:
        return findings.findings(result)

    def live_table(self, result: CpuResult) -> pd.DataFrame:
        cols = ["test", "cpu.mode", "cpu.rep", "qps", "cpuPer", "cpu.reader_samples"]
        return result.frame[[c for c in cols if c in result.frame.columns]].tail(12)
