"""The IO-efficiency study: fio's baseline and the seed's db_bench sequence, in turns, every run stored.

The protocol runs it in turns (params.COMPARE, rxlab.core.turns_plan): each
turn runs, for each delay and thread count, the seed's sequence once per
block_align setting and the main setting's (on) twice, the A/A pair (run
names r<turn>a for the second), in orders that rotate from turn to turn;
rxlab's fio baseline (sync, qd1, numjobs = threads) runs right before the
main setting's first sequence, so every turn has its own io.eff denominator.
Turns stop when block_align's QPS ratios are resolved to the target or the
budget is spent. Undelayed, fio also runs placed away from the interrupt's
CPU and (where block_align off is studied) reading unaligned blocks: once per
thread count, before the turns (`setup`), for the performance model.
"""
from __future__ import annotations

import os
import re

import pandas as pd

from rxlab.bench import driver, fio
from rxlab.bench.ioeff.db import sequence
from rxlab.bench.ioeff.matching import configuration, matching, same_as
from rxlab.bench.irq import busiest_irq_cpu
from rxlab.core import metrics
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.io_efficiency import figures, tables
from rxlab.studies.io_efficiency import findings as findings_
from rxlab.studies.io_efficiency.params import (
    BLOCK_BYTES,
    COMPARE,
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
    SETTING,
    UNALIGNED_ALIGN,
    UNALIGNED_BS,
    Params,
    Settings,
    main_setting,
    strip_delay,
    with_delay,
)
from rxlab.studies.io_efficiency.result import KEYS, IoEfficiencyResult

__all__ = ["IoEfficiencyStudy", "away_cpu", "configuration", "matching", "same_as", "sequence"]

# r<turn>, `a` for the A/A copy (the main setting's second sequence of a turn); studies stored before turns
# have no copies
_NAME_RE = re.compile(r"^ioeff-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)(?P<copy>a?)-t(?P<threads>\d+)"
                      r"-d(?P<delay>\d+)-(?P<kind>fio|fioaway|fio512|ba0|ba1)$")
PLAN_COLUMNS = ["delay_us", "threads", "setting", "block_align", "fio_first"]
# after the method's keys: the A/A copy, the configuration compared, the seed test a comparison is keyed by
FRAME_KEYS = [*KEYS, "copy", "setting", "seed_test"]


def away_cpu(path) -> int | None:
    """A CPU this process may use other than the one that takes the interrupts of the disk
    holding `path` (None: one CPU only, or the interrupts cannot be found)."""
    irq = busiest_irq_cpu(path)
    others = sorted(c for c in os.sched_getaffinity(0) if c != irq)
    return others[0] if irq is not None and others else None


def _run_name(ctx: RunContext, rep: int, copy: int, threads: int, delay_us: int, kind: str) -> str:
    """ioeff-<study>-r<rep>[a]-t<threads>-d<delay>-<kind>: what `frame` parses back (_NAME_RE)."""
    return ctx.run_name(f"r{rep}{'a' if copy else ''}", f"t{threads}", f"d{delay_us}", kind)


def _fio_totals(cat: pd.DataFrame, names: pd.DataFrame):
    """fio runs: the total row only (per-job rows stay in the store)."""
    if "job" not in cat.columns:
        return True
    return ~names["kind"].isin(list(FIO_KINDS.values())) | (cat["job"].astype(str) == "total")


def _runs_fio(row) -> bool:
    """fio's baseline runs once a turn per delay and thread count: right before the base's first sequence
    (its A/A copy has none), so that its position in the turn moves with the base's."""
    return bool(row.fio_first) and not row.copy


class IoEfficiencyStudy(Study, name="io_efficiency", notebook="10_io_efficiency", seed=SEED_FILE,
                               published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                               result=IoEfficiencyResult, tables=tables.TABLES, figures=figures.FIGURES,
                               compare=COMPARE):
    """RocksDB's storage read IOPS against fio's at the same concurrency (the first seed's io.eff)."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's runs: delay_us, threads, setting, block_align, fio_first; per delay and thread count,
        the seed's sequence for each block_align setting, the main one (on when run) first: the
        base, which the protocol runs twice (copy 0 and 1) and whose first run of a turn fio's baseline
        precedes (fio_first, `run_one`). The protocol orders them per turn (groups and settings rotate)
        and adds rep (the turn) and copy."""
        main = main_setting(params.block_align)
        settings = sorted(params.block_align, key=lambda ba: ba != main)
        rows = [{"delay_us": d, "threads": t, "setting": SETTING[ba], "block_align": ba,
                 "fio_first": ba == main} for d in params.delay_us for t in params.threads for ba in settings]
        return pd.DataFrame(rows, columns=PLAN_COLUMNS)

    def setup(self, ctx: RunContext) -> None:
        """The scratch paths, and the fio runs that go beside the baselines once per study (not per turn):
        undelayed, for each thread count, fio placed away from the interrupt's CPU (FIO_AWAY_TOOL: one
        job pinned to another CPU, more jobs one per CPU) and, where block_align off is studied, reading
        unaligned blocks (FIO_UNALIGNED_TOOL). They inform the performance model (perf_model), never
        io.eff; stored as turn 0's."""
        p: Params = ctx.params
        ctx.state["db"] = ctx.path("ioeff-db")
        ctx.state["fio_file"] = ctx.path("ioeff-fio")
        tools = [FIO_AWAY_TOOL, *([FIO_UNALIGNED_TOOL] if False in p.block_align else [])]
        for t in p.threads if 0 in p.delay_us else []:
            for tool in tools:
                run = self._run_fio(ctx, tool, rep=0, threads=t, delay_us=0)
                if run is not None:
                    ctx.runs.append(run)

    def describe(self, row) -> str:
        return (f"turn {row.rep} delay {row.delay_us} threads {row.threads} {row.setting}"
                f"{' (A/A)' if row.copy else ''}{' after fio' if _runs_fio(row) else ''}")

    def run_one(self, ctx: RunContext, row):
        """fio's baseline first where this is the base's first sequence of the turn (`_runs_fio`), then
        the seed's sequence with the row's block_align setting; returns the runs."""
        p: Params = ctx.params
        s: Settings = ctx.settings
        runs = []
        if _runs_fio(row):
            runs.append(self._run_fio(ctx, FIO_TOOL, rep=row.rep, threads=row.threads, delay_us=row.delay_us))
        spec = driver.RunSpec(
            db=str(ctx.state["db"]),
            name=_run_name(ctx, row.rep, row.copy, row.threads, row.delay_us, f"ba{int(row.block_align)}"),
            backend=with_delay(p.backend, row.delay_us), steps=sequence(s), num=s.num, key_size=KEY_SIZE,
            value_size=p.value_size, threads=row.threads, duration=s.duration, block_size=BLOCK_BYTES,
            block_align=bool(row.block_align), compression="none", cache_size=s.cache_size,
            write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
            max_bytes_for_level_base=s.max_bytes_for_level_base, scale=p.scale,
            seed=1000 * row.rep + 500 * row.copy)
        runs.append(driver.run(spec, root=ctx.root, progress=False))
        return runs

    def _run_fio(self, ctx: RunContext, tool: str, *, rep: int, threads: int, delay_us: int):
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
        if tool == FIO_AWAY_TOOL:
            cpu = away_cpu(filename)
            if cpu is None:
                return None
            placed = {"cpus_allowed": str(cpu)} if threads == 1 else {"cpus_allowed_policy": "split"}
        if tool == FIO_UNALIGNED_TOOL:
            shape = {"bs": UNALIGNED_BS, "blockalign": UNALIGNED_ALIGN}
        meta = {"name": _run_name(ctx, rep, 0, threads, delay_us, FIO_KINDS[tool]),
                "tool": tool, "study": ctx.id, "rep": rep, "threads": threads,
                "delay_us": delay_us, "scale": p.scale, "study_backend": p.backend}
        return fio.run_stored(ctx.root, filename, meta, rw="randread", size=s.fio_size, direct=True,
                              ioengine="sync", iodepth=1, numjobs=threads, runtime=s.fio_runtime,
                              ramp_time=s.fio_ramp, engine_options=f"delay_us={delay_us}" if delay_us else "",
                              seed=rep + 1, **shape, **placed)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """The tidy frame of a study from catalog rows (runs named by this study; others are dropped)."""
        cat, m = match_runs(cat, _NAME_RE, _fio_totals)
        if cat.empty:
            return pd.DataFrame(columns=[*FRAME_KEYS, *metrics.SEED_COLUMNS])
        is_fio = m["kind"].isin(list(FIO_KINDS.values()))
        if "threads" in cat.columns:
            cat = cat.rename(columns={"threads": "step_threads"})
        uri = cat["backend"].astype(str) if "backend" in cat.columns else pd.Series("", index=cat.index)
        study_backend = cat["spec.study_backend"] if "spec.study_backend" in cat.columns else uri
        cat = cat.drop(columns=[c for c in ("backend", "tool", "block_align", "copy", "setting", "seed_test")
                                if c in cat.columns])
        derived = metrics.seed_columns(cat)
        block_align = m["kind"].map({"ba1": True, "ba0": False})
        keys = pd.DataFrame({
            "study": m["study"], "rep": m["rep"].astype(int),
            "tool": m["kind"].map({k: t for t, k in FIO_KINDS.items()}).fillna(DB_TOOL),
            "backend": study_backend.astype(str).where(is_fio, uri.map(strip_delay)),
            "threads": m["threads"].astype(int),
            "block_align": block_align.astype(object),
            "delay_us": m["delay"].astype(int), "backend_uri": uri,
            "copy": (m["copy"] == "a").astype(int),
            "setting": block_align.map(SETTING).astype(object).where(~is_fio, None),
            # the comparisons' key: a RocksDB row of the seed's read tests; None elsewhere (fio, the loads),
            # which the comparisons leave out (rxlab.core.resolution.compare groups by it, dropping None)
            "seed_test": derived["test"].where(~is_fio & derived["test"].isin(SEED_TESTS), None)},
            index=cat.index)
        # other studies' runs in the same store may carry columns of these names: the keys win
        return tidy_frame(keys, cat, derived, first=FRAME_KEYS,
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
        cols = [c for c in ("rep", "copy", "delay_us", "threads", "tool", "block_align", "test", "qps",
                            "iops", "cpuPer", "rx.lat") if c in f.columns]
        return f[cols].tail(12)
