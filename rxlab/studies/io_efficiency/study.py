"""The IO-efficiency study: fio's baseline and the seed's db_bench sequence, alternated, every run stored.

For each repetition, delay and thread count, rxlab's fio baseline (sync,
qd1, numjobs = threads) runs first, then the seed's sequence for each
block_align setting; undelayed, fio also runs placed away from the
interrupt's CPU and (where block_align off is studied) reading unaligned
blocks beside its baseline. The order rotates from one repetition to the
next, so drift of the machine hits fio and RocksDB alike.
"""
from __future__ import annotations

import os
import re

import pandas as pd

from rxlab.bench import driver, fio
from rxlab.bench.ioeff.db import sequence
from rxlab.bench.ioeff.matching import configuration, matching, same_as
from rxlab.bench.irq import busiest_irq_cpu
from rxlab.core import metrics, stats
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.io_efficiency import figures, tables
from rxlab.studies.io_efficiency import findings as findings_
from rxlab.studies.io_efficiency.params import (
    BLOCK_BYTES,
    DB_TOOL,
    FIO_AWAY_TOOL,
    FIO_KINDS,
    FIO_TOOL,
    FIO_UNALIGNED_TOOL,
    KEY_SIZE,
    PUBLISHED,
    RUN_PREFIX,
    SEED_FILE,
    SEED_TESTS,
    UNALIGNED_ALIGN,
    UNALIGNED_BS,
    Params,
    Settings,
    strip_delay,
    with_delay,
)
from rxlab.studies.io_efficiency.result import KEYS, IoEfficiencyResult

__all__ = ["IoEfficiencyStudy", "away_cpu", "configuration", "matching", "same_as", "sequence"]

_NAME_RE = re.compile(r"^ioeff-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)-t(?P<threads>\d+)"
                      r"-d(?P<delay>\d+)-(?P<kind>fio|fioaway|fio512|ba0|ba1)$")
PLAN_COLUMNS = ["rep", "delay_us", "threads", "tool", "block_align"]


def away_cpu(path) -> int | None:
    """A CPU this process may use other than the one that takes the interrupts of the disk
    holding `path` (None: one CPU only, or the interrupts cannot be found)."""
    irq = busiest_irq_cpu(path)
    others = sorted(c for c in os.sched_getaffinity(0) if c != irq)
    return others[0] if irq is not None and others else None


def _run_name(ctx: RunContext, row, kind: str) -> str:
    """ioeff-<study>-r<rep>-t<threads>-d<delay>-<kind>: what `frame` parses back (_NAME_RE)."""
    return ctx.run_name(f"r{row.rep}", f"t{row.threads}", f"d{row.delay_us}", kind)


def _fio_totals(cat: pd.DataFrame, names: pd.DataFrame):
    """fio runs: the total row only (per-job rows stay in the store)."""
    if "job" not in cat.columns:
        return True
    return ~names["kind"].isin(list(FIO_KINDS.values())) | (cat["job"].astype(str) == "total")


class IoEfficiencyStudy(Study, name="io_efficiency", notebook="10_io_efficiency", seed=SEED_FILE,
                               published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                               result=IoEfficiencyResult, tables=tables.TABLES, figures=figures.FIGURES):
    """RocksDB's storage read IOPS against fio's at the same concurrency (the first seed's io.eff)."""

    def plan(self, params: Params) -> pd.DataFrame:
        """The runs of a study in execution order: rep, delay_us, threads, tool, block_align.

        For each repetition, delay and thread count: fio first, then the seed's
        sequence for each block_align setting. Each repetition rotates the order
        of the delays, thread counts and block_align settings, so no configuration
        always runs first (after a cold start) or last. Undelayed, fio also runs
        placed away from the interrupt's CPU (FIO_AWAY_TOOL: one job pinned to
        another CPU, more jobs one per CPU), right after the baseline, and where
        block_align off is studied, reading unaligned blocks (FIO_UNALIGNED_TOOL).
        """
        rows = []
        for rep in range(params.settings().repeats):
            for d in stats.rotate(params.delay_us, rep):
                for t in stats.rotate(params.threads, rep):
                    at = {"rep": rep, "delay_us": d, "threads": t}
                    rows.append({**at, "tool": FIO_TOOL, "block_align": None})
                    if d == 0:
                        rows.append({**at, "tool": FIO_AWAY_TOOL, "block_align": None})
                        if False in params.block_align:
                            rows.append({**at, "tool": FIO_UNALIGNED_TOOL, "block_align": None})
                    for ba in stats.rotate(params.block_align, rep):
                        rows.append({**at, "tool": DB_TOOL, "block_align": ba})
        return pd.DataFrame(rows, columns=PLAN_COLUMNS)

    def setup(self, ctx: RunContext) -> None:
        ctx.state["db"] = ctx.path("ioeff-db")
        ctx.state["fio_file"] = ctx.path("ioeff-fio")

    def describe(self, row) -> str:
        what = {FIO_TOOL: "fio", FIO_AWAY_TOOL: "fio away",
                FIO_UNALIGNED_TOOL: "fio unaligned"}.get(row.tool, f"block_align={row.block_align}")
        return f"rep {row.rep} delay {row.delay_us} threads {row.threads} {what}"

    def run_one(self, ctx: RunContext, row):
        if row.tool in FIO_KINDS:
            return self._run_fio(ctx, row)
        p: Params = ctx.params
        s: Settings = ctx.settings
        spec = driver.RunSpec(
            db=str(ctx.state["db"]), name=_run_name(ctx, row, f"ba{int(row.block_align)}"),
            backend=with_delay(p.backend, row.delay_us), steps=sequence(s), num=s.num, key_size=KEY_SIZE,
            value_size=p.value_size, threads=row.threads, duration=s.duration, block_size=BLOCK_BYTES,
            block_align=bool(row.block_align), compression="none", cache_size=s.cache_size,
            write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
            max_bytes_for_level_base=s.max_bytes_for_level_base, scale=p.scale, seed=1000 * row.rep)
        return driver.run(spec, root=ctx.root, progress=False)

    def _run_fio(self, ctx: RunContext, row):
        """rxlab fio (sync, qd1, numjobs=threads) on the study's file, stored as a run of its own.

        FIO_AWAY_TOOL: one job pinned to a CPU other than the interrupt's, more jobs pinned one
        per CPU (skipped, None, when it cannot be placed: one CPU, or the interrupt's CPU is
        unknown); FIO_UNALIGNED_TOOL: unaligned blocks of bs=8704 at 512-byte offsets, placed as
        the baseline.
        """
        p: Params = ctx.params
        s: Settings = ctx.settings
        filename = ctx.state["fio_file"]
        placed, shape = {}, {"bs": BLOCK_BYTES}
        if row.tool == FIO_AWAY_TOOL:
            cpu = away_cpu(filename)
            if cpu is None:
                return None
            placed = {"cpus_allowed": str(cpu)} if row.threads == 1 else {"cpus_allowed_policy": "split"}
        if row.tool == FIO_UNALIGNED_TOOL:
            shape = {"bs": UNALIGNED_BS, "blockalign": UNALIGNED_ALIGN}
        meta = {"name": _run_name(ctx, row, FIO_KINDS[row.tool]),
                "tool": row.tool, "study": ctx.id, "rep": row.rep, "threads": row.threads,
                "delay_us": row.delay_us, "scale": p.scale, "study_backend": p.backend}
        return fio.run_stored(ctx.root, filename, meta, rw="randread", size=s.fio_size, direct=True,
                              ioengine="sync", iodepth=1, numjobs=row.threads, runtime=s.fio_runtime,
                              ramp_time=s.fio_ramp,
                              engine_options=f"delay_us={row.delay_us}" if row.delay_us else "",
                              seed=row.rep + 1, **shape, **placed)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """The tidy frame of a study from catalog rows (runs named by this study; others are dropped)."""
        cat, m = match_runs(cat, _NAME_RE, _fio_totals)
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, *metrics.SEED_COLUMNS])
        is_fio = m["kind"].isin(list(FIO_KINDS.values()))
        if "threads" in cat.columns:
            cat = cat.rename(columns={"threads": "step_threads"})
        uri = cat["backend"].astype(str) if "backend" in cat.columns else pd.Series("", index=cat.index)
        study_backend = cat["spec.study_backend"] if "spec.study_backend" in cat.columns else uri
        cat = cat.drop(columns=[c for c in ("backend", "tool", "block_align") if c in cat.columns])
        keys = pd.DataFrame({
            "study": m["study"], "rep": m["rep"].astype(int),
            "tool": m["kind"].map({k: t for t, k in FIO_KINDS.items()}).fillna(DB_TOOL),
            "backend": study_backend.astype(str).where(is_fio, uri.map(strip_delay)),
            "threads": m["threads"].astype(int),
            "block_align": m["kind"].map({"ba1": True, "ba0": False}).astype(object),
            "delay_us": m["delay"].astype(int), "backend_uri": uri}, index=cat.index)
        # other studies' runs in the same store may carry columns of these names: the keys win
        return tidy_frame(keys, cat, metrics.seed_columns(cat), first=KEYS,
                          sort=["study", "rep", "delay_us", "threads", "run_id", "step"])

    def complete(self, frame: pd.DataFrame) -> bool:
        """Every RocksDB configuration has its fio baseline and the seed's three read tests."""
        db = frame[frame["tool"] == DB_TOOL]
        fio_ = frame[frame["tool"] == FIO_TOOL]
        if db.empty or fio_.empty:
            return False
        have = set(map(tuple, fio_[["rep", "threads", "delay_us"]].to_numpy().tolist()))
        need = set(map(tuple, db[["rep", "threads", "delay_us"]].to_numpy().tolist()))
        if not need <= have:
            return False
        tests = db[db["test"].isin(SEED_TESTS)].groupby("run_id")["test"].nunique()
        return bool(len(tests) == db["run_id"].nunique() and (tests == len(SEED_TESTS)).all())

    def findings(self, result: IoEfficiencyResult) -> str:
        return findings_.findings(result)

    def live_table(self, result: IoEfficiencyResult) -> pd.DataFrame:
        f = result.frame
        f = f[(f["tool"] != DB_TOOL) | f["test"].isin(SEED_TESTS)]
        cols = [c for c in ("rep", "delay_us", "threads", "tool", "block_align", "test", "qps", "iops",
                            "cpuPer", "rx.lat") if c in f.columns]
        return f[cols].tail(12)
