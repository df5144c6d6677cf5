"""The toolchain study: RocksDB builds as an experiment variable (the gcc-vs-clang post).

The post (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang") compiles RocksDB three ways (gcc, clang, clang+LTO), runs
db_bench's fillseq, readwhilewriting, fwdrangewhilewriting,
revrangewhilewriting and overwrite with the database cached by RocksDB and a
rate-limited writer beside the *whilewriting readers, and reports the
relative QPS (QPS of a build / QPS of a base build). Here: the builds of
rxlab.core.builds (`rxlab build-rocksdb`), each run a fresh DB in a child
process of its own on that build (child.py: a process can load only one
RocksDB), every run stored with the build it ran on. QPS comes from
rxlab.core.metrics.seed_columns. The protocol runs the builds in turns
(params.COMPARE, rxlab.core.turns_plan): each turn runs every build once and
the base build twice (the A/A pair, run names r<turn>a for the second), in
orders that rotate from turn to turn, until every build's QPS ratio to the
base is resolved to the target or the budget is spent.

This module is also the child's entry point:
`python -m rxlab.studies.toolchains.study child KEY SPEC` (see child.py).
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd

from rxlab.core import builds, metrics
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.toolchains import child, figures, findings, tables
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
                      r"-r(?P<rep>\d+)(?P<copy>a?)$")
KEYS = ["study", "rep", "copy", "build", "toolchain", "version", "base", "test", "run_id"]


def spec_for(s: Settings, db: str, name: str, seed: int, build: str | None = None) -> dict:
    """The driver spec of one child: the post's steps, the DB cached by RocksDB."""
    steps: list = []
    for t in s.tests:
        if t == "fillseq":
            steps.append("fillseq")
            # warm the block cache: the post's DB is cached by RocksDB
            steps.append({"name": "readseq", "label": "warmup", "ops": s.num})
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

    def run_one(self, ctx: RunContext, row) -> Path:
        s: Settings = ctx.settings
        turn = f"r{row.rep}{'a' if row.copy else ''}"    # the base's A/A second run: r<turn>a
        db = ctx.path(f"db-{row.build}-{turn}")
        name = ctx.run_name(row.build, turn)
        spec = spec_for(s, str(db), name, seed=1000 * row.rep, build=row.build)
        run = child.run_child(row.build, spec, ctx.root,
                              meta={"toolchain": row.toolchain, "version": row.version, "base": s.base})
        shutil.rmtree(db, ignore_errors=True)   # each run loads a DB of its own: free the disk for the next
        return run

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
        return tidy_frame(keys, cat, metrics.seed_columns(cat).drop(columns="test"),
                          sort=["study", "rep", "run_id", "step_index"])

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
