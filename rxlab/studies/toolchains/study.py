"""The toolchain study: RocksDB builds as an experiment variable (the gcc-vs-clang post).

The post (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang") compiles RocksDB three ways (gcc, clang, clang+LTO), runs
db_bench's fillseq, readwhilewriting, fwdrangewhilewriting,
revrangewhilewriting and overwrite with the database cached by RocksDB and a
rate-limited writer beside the *whilewriting readers, and reports the
relative QPS (QPS of a build / QPS of a base build). Here: the builds of
rxlab.core.builds (`rxlab build-rocksdb`), each repetition running every
build once, each run a fresh DB in a child process of its own on that build
(child.py: a process can load only one RocksDB), every run stored with the
build it ran on. QPS comes from rxlab.core.metrics.seed_columns.

This module is also the child's entry point:
`python -m rxlab.studies.toolchains.study child KEY SPEC` (see child.py).
"""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pandas as pd

from rxlab.core import builds, metrics, stats
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.toolchains import child, figures, findings, tables
from rxlab.studies.toolchains.params import (
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
_NAME_RE = re.compile(r"^toolchains-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-(?P<build>.+)-r(?P<rep>\d+)$")
KEYS = ["study", "rep", "build", "toolchain", "version", "base", "test", "run_id"]


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
    return {"db": db, "name": name, "backend": "posix", "steps": steps, "num": s.num, "key_size": KEY_SIZE,
            "value_size": s.value_size, "threads": s.threads, "duration": s.duration,
            "cache_size": s.cache_size, "write_rate_limit": s.write_rate_limit, "use_direct_reads": True,
            "use_direct_io_for_flush_and_compaction": True, "seed": seed, "scale": s.scale, "build": build}


def _module_state(key: str) -> str:
    if Path(builds.get_build(key)["path"]) == builds.installed_build():
        return "installed"
    return "compiled" if builds.module_current(key) else "to compile"


class ToolchainsStudy(Study, name="toolchains", notebook="70_toolchains", seed=SEED_FILE,
                             published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                             result=ToolchainsResult, tables=tables.TABLES, figures=figures.FIGURES):
    """RocksDB built with gcc, clang and clang+LTO: relative QPS of the post's tests."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One row per child process, in run order: each repetition runs every build, the order
        rotated by one each repetition so that drift of the machine hits every build alike."""
        s = params.settings()
        rows = []
        for rep in range(s.repeats):
            for b in stats.rotate(s.builds, rep):
                rec = builds.get_build(b)
                rows.append({"rep": rep, "build": b, "toolchain": rec["toolchain"], "version": rec["version"],
                             "module": _module_state(b)})
        return pd.DataFrame(rows, columns=["rep", "build", "toolchain", "version", "module"])

    def setup(self, ctx: RunContext) -> None:
        """Compile every build's module first, not between measurements."""
        for b in ctx.settings.builds:
            builds.ensure_module(b)

    def describe(self, row) -> str:
        return f"rep {row.rep} {row.build}"

    def run_one(self, ctx: RunContext, row) -> Path:
        s: Settings = ctx.settings
        db = ctx.path(f"db-{row.build}-r{row.rep}")
        name = ctx.run_name(row.build, f"r{row.rep}")
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

        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int), "build": cat["rocksdb_build"],
                             "toolchain": spec("toolchain"), "version": spec("version"), "base": spec("base"),
                             "test": cat["name"].map(TEST_OF), "run_id": cat["run_id"]}, index=cat.index)
        return tidy_frame(keys, cat, metrics.seed_columns(cat).drop(columns="test"),
                          sort=["study", "rep", "run_id", "step_index"])

    def complete(self, frame: pd.DataFrame) -> bool:
        """Every build ran the same tests in every repetition, the base build among them."""
        if frame.empty or not frame["build"].isin(frame["base"]).any():
            return False
        return frame.groupby(["rep", "build"])["test"].apply(frozenset).nunique() == 1

    def findings(self, result: ToolchainsResult) -> str:
        return findings.findings(result)

    def live_table(self, result: ToolchainsResult) -> pd.DataFrame:
        return result.frame[["rep", "build", "test", "qps", "cpuPer"]].tail(12)


if __name__ == "__main__":
    sys.exit(child.main())
