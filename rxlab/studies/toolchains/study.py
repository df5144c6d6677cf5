"""The toolchain study: RocksDB builds as an experiment variable (the gcc-vs-clang post).

The post (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang") compiles RocksDB three ways (gcc, clang, clang+LTO), runs
db_bench's fillseq, readwhilewriting, fwdrangewhilewriting,
revrangewhilewriting and overwrite with the database cached by RocksDB and a
rate-limited writer beside the *whilewriting readers, and reports the
relative QPS (QPS of a build / QPS of a base build). Here: the builds of
rxlab.core.builds (`rxlab build-rocksdb`), each in processes of its own
(child.py: a process can load only one RocksDB), every measurement stored
with the build it ran on. The protocol runs the builds in turns
(params.COMPARE, rxlab.core.turns_plan): each turn runs every build once and
the base build twice (the A/A pair, run names r<turn>a for the second), in
orders that rotate from turn to turn, until every build's QPS ratio to the
base is resolved to the target or the budget is spent. In a turn, fillseq is
a whole run of each build, one after another, its QPS from
rxlab.core.metrics.seed_columns; each timed test (the *whilewriting readers,
overwrite) runs on every build at once, in slices (slices.py), and is stored
as a run per build named r<turn>[a]-<test>.

This module is also the child's entry point:
`python -m rxlab.studies.toolchains.study child KEY SPEC` (see child.py).
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd

from rxlab.bench import driver
from rxlab.core import builds, metrics, store, sysinfo
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.toolchains import child, figures, findings, slices, tables
from rxlab.studies.toolchains.params import (
    COMPARE,
    KEY_SIZE,
    PUBLISHED,
    SEED_FILE,
    STEP_OF,
    TEST_OF,
    Params,
    Settings,
)
from rxlab.studies.toolchains.result import ToolchainsResult

RUN_PREFIX = "toolchains-"
_NAME_RE = re.compile(r"^toolchains-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-(?P<build>.+)"
                      r"-r(?P<rep>\d+)(?P<copy>a?)(?:-(?P<sliced>[a-z]+))?$")
KEYS = ["study", "rep", "copy", "build", "toolchain", "version", "base", "test", "run_id"]


def spec_for(s: Settings, db: str, name: str, seed: int, build: str | None = None,
             tests: tuple | list | None = None) -> dict:
    """The driver spec of one child: the post's steps (`tests`, default the settings'), the DB cached by
    RocksDB."""
    tests = s.tests if tests is None else tests
    steps: list = []
    for i, t in enumerate(tests):
        if t == "fillseq":
            steps.append("fillseq")
            if i + 1 < len(tests):
                steps.append(_warmup(s))
        elif t == "overwrite":
            steps.append({"name": "overwrite", "duration": s.duration})
        else:
            steps.append(STEP_OF[t])
    # RocksDB's own file system, as the post's db_bench: rxlab's engine is compiled once, by this
    # machine's compiler, whatever the build, so it would add the same cost to every side of the comparison
    return {"db": db, "name": name, "backend": "default", "steps": steps, "num": s.num, "key_size": KEY_SIZE,
            "value_size": s.value_size, "threads": s.threads, "duration": s.duration,
            "cache_size": s.cache_size, "write_rate_limit": s.write_rate_limit, "use_direct_reads": True,
            "use_direct_io_for_flush_and_compaction": True, "seed": seed, "scale": s.scale, "build": build}


def _warmup(s: Settings) -> dict:
    """The readseq that warms the block cache for the tests after fillseq (the post's DB is cached by
    RocksDB)."""
    return {"name": "readseq", "label": "warmup", "ops": s.num}


def prepare_spec(s: Settings, db: str, name: str, seed: int, build: str) -> dict:
    """What a process runs before a timed test measured in slices: the state a whole run has after fillseq."""
    sp = spec_for(s, db, name, seed, build, tests=("fillseq",))
    sp["steps"].append(_warmup(s))
    return sp


def whole_tests(s: Settings) -> list[str]:
    """The tests a turn runs as a whole run of each build."""
    return [t for t in s.tests if not (s.sliced and t in slices.SLICED)]


def _module_state(key: str) -> str:
    if Path(builds.get_build(key)["path"]) == builds.installed_build():
        return "installed"
    return "compiled" if builds.module_current(key) else "to compile"


class ToolchainsStudy(Study, name="toolchains", notebook="70_toolchains", seed=SEED_FILE,
                             published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                             result=ToolchainsResult, tables=tables.TABLES, figures=figures.FIGURES,
                             compare=COMPARE):
    """RocksDB built with gcc, clang and clang+LTO: relative QPS of the post's tests."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's child processes: a row per build, the base first (the protocol's base: it runs twice a
        turn). The protocol orders them per turn (rotated, reversed every other turn) and adds rep (the
        turn) and copy."""
        s = params.settings()
        rows = []
        for b in s.builds:
            rec = builds.get_build(b)
            rows.append({"build": b, "toolchain": rec["toolchain"], "version": rec["version"],
                         "module": _module_state(b)})
        return pd.DataFrame(rows, columns=["build", "toolchain", "version", "module"])

    def setup(self, ctx: RunContext) -> None:
        """Compile every build's module first, not between measurements."""
        for b in ctx.settings.builds:
            builds.ensure_module(b)

    def describe(self, row) -> str:
        return f"{row.build}{' (A/A)' if row.copy else ''}"

    def run_turn(self, ctx: RunContext, rows: pd.DataFrame) -> list[Path]:
        """One turn (`rows`: every build, the base twice, in the turn's order): the whole runs of the tests
        that are not timed, one build after another, then each timed test on every build at once, in
        slices."""
        s: Settings = ctx.settings
        runs = [self.run_one(ctx, row) for row in rows.itertuples(index=False)] if whole_tests(s) else []
        turn = int(rows["rep"].iloc[0])
        meta = {r.build: {"toolchain": r.toolchain, "version": r.version} for r in rows.itertuples()}
        for test in slices.sliced(s.tests) if s.sliced else ():
            def spec_of(r, db, test=test):
                return prepare_spec(s, str(db), ctx.run_name(r.build, f"r{turn}-{test}"),
                                    seed=1000 * turn + 10 * r.copy, build=r.build)
            got = slices.session(rows, test, spec_of, ctx.path(f"slices-r{turn}-{test}"), rounds=s.rounds,
                                 slice_s=s.slice_s, warmup_s=s.warmup_s)
            runs += [self._store(ctx, turn, test, g, meta[g["build"]]) for g in got]
        return runs

    def run_one(self, ctx: RunContext, row) -> Path:
        """A whole run of the tests that are not measured in slices (fillseq; every test when not
        `sliced`), on one build."""
        s: Settings = ctx.settings
        turn = f"r{row.rep}{'a' if row.copy else ''}"    # the base's A/A second run: r<turn>a
        db = ctx.path(f"db-{row.build}-{turn}")
        name = ctx.run_name(row.build, turn)
        spec = spec_for(s, str(db), name, seed=1000 * row.rep, build=row.build, tests=whole_tests(s))
        run = child.run_child(row.build, spec, ctx.root,
                              meta={"toolchain": row.toolchain, "version": row.version, "base": s.base})
        shutil.rmtree(db, ignore_errors=True)   # each run loads a DB of its own: free the disk for the next
        return run

    def _store(self, ctx: RunContext, turn: int, test: str, got: dict, meta: dict) -> Path:
        """One build's share of a sliced test as a run: its operations over its slices' wall time, and the
        process's CPU over them (every thread: the writer's and RocksDB's background threads')."""
        s: Settings = ctx.settings
        key = got["build"]
        step = driver.expand([STEP_OF[test]])[0]
        name = ctx.run_name(key, f"r{turn}{'a' if got['copy'] else ''}-{test}")
        spec = {"name": name, "backend": "default", "build": key, **meta, "base": s.base, "test": test,
                "method": "slices", "rounds": s.rounds, "slice_s": s.slice_s, "warmup_s": s.warmup_s,
                "num": s.num, "value_size": s.value_size, "threads": s.threads,
                "write_rate_limit": s.write_rate_limit, "scale": s.scale}
        fp = sysinfo.fingerprint(ctx.work, rocksdb_build=builds.get_build(key))
        ops, wall, cpu = got["ops"], got["wall_s"], got["cpu_s"]
        with store.RunWriter(ctx.root, spec, fp) as w:
            w.add_step({"name": STEP_OF[test], "benchmark": step["name"], "job": step.get("job"),
                        "threads": s.threads, "ops": ops, "wall_s": wall, "cpu_s": cpu,
                        "cpu_per_op_us": 1e6 * cpu / ops if ops else None, "method": "slices"})
        return w.path

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per run and test (the warm-up left out): the study's keys, the step's raw columns,
        the seeds' columns. Runs of other studies are dropped."""
        cat, m = match_runs(cat, _NAME_RE, lambda c, _: c["name"].isin(list(STEP_OF.values())))
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, "qps"])
        def spec(k):   # the labels the study stored with each run (child.run_child's meta)
            return cat[f"spec.{k}"] if f"spec.{k}" in cat.columns else pd.Series(None, index=cat.index)

        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int),
                             "copy": (m["copy"] == "a").astype(int), "build": cat["rocksdb_build"],
                             "toolchain": spec("toolchain"), "version": spec("version"), "base": spec("base"),
                             "test": cat["name"].map(TEST_OF), "run_id": cat["run_id"]}, index=cat.index)
        out = tidy_frame(keys, cat, metrics.seed_columns(cat).drop(columns="test"),
                         sort=["study", "rep", "run_id", "step_index"])
        if "cpu_per_op_us" in out.columns:   # a sliced test's CPU is the process's, not user and system apart
            out["cpuPer"] = out["cpuPer"].fillna(out["cpu_per_op_us"])
        return out

    def complete(self, frame: pd.DataFrame) -> bool:
        """Every run (a build in a turn, the base twice) ran the same tests, the base build among them (a
        build resolved early runs in fewer turns)."""
        if frame.empty or not frame["build"].isin(frame["base"]).any():
            return False
        return frame.groupby(["rep", "copy", "build"])["test"].apply(frozenset).nunique() == 1

    def findings(self, result: ToolchainsResult) -> str:
        return findings.findings(result)

    def live_table(self, result: ToolchainsResult) -> pd.DataFrame:
        return result.frame[["rep", "copy", "build", "test", "qps", "cpuPer"]].tail(12)


if __name__ == "__main__":
    sys.exit(child.main())
