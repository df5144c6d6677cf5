"""What raises io.eff: the first seed's point-query test under a ladder of configurations.

The seed's io.eff (RocksDB's storage read IOPS over fio's, sync engine, queue
depth 1, 8 KiB O_DIRECT random reads) is lower on a fast device, because
RocksDB's CPU per query weighs more against a shorter device read. This
study asks which settings give that CPU back (configs.py: the ladder and the
side configurations), and whether the model accounts for what each one
saves. It loads one DB once (`setup`: fillseq, then a compaction into one
level: the seed's readrandom2 case, one device read per query) and reads it
with one client under each configuration.

The protocol runs the configurations in turns (params.COMPARE,
rxlab.core.turns_plan): each turn runs rxlab's fio baseline first, then every
configuration once and the seed's setting twice (the A/A pair, run names
r<turn>a for the second) in an order that rotates from turn to turn, until
every configuration's io.eff ratio to the seed's is resolved to the target or
the budget is spent. io.eff of a run is against its own turn's fio.
tables.accounting puts the model (rxlab.core.model, fitted on the same rows
with the fio baseline as its device term) beside each rung: the CPU a rung
saves, the latency it predicts from that, the latency measured.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rxlab.bench import driver, fio
from rxlab.core import metrics
from rxlab.core.study import RunContext, Study, tidy_frame
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS
from rxlab.studies.io_efficiency_tuning.figures import FIGURES
from rxlab.studies.io_efficiency_tuning.findings import findings as findings_markdown
from rxlab.studies.io_efficiency_tuning.params import (
    BLOCK_BYTES,
    COMPARE,
    FIO_RAMP_S,
    KEY_SIZE,
    PUBLISHED,
    SEED_FILE,
    VALUE_SIZE,
    Params,
    Settings,
)
from rxlab.studies.io_efficiency_tuning.result import DB_TOOL, FIO_TOOL, TuningResult
from rxlab.studies.io_efficiency_tuning.tables import TABLES

__all__ = ["KEYS", "RUN_PREFIX", "IoEffTuningStudy"]

RUN_PREFIX = "ioeff-tuning-"
KEYS = ["study", "rep", "copy", "tool", "config", "test", "threads", "delay_us", "run_id"]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def _meta(ctx: RunContext, rep: int, copy: int, kind: str, config: str) -> dict:
    """What a run's spec says of its place in the study (the frame reads it back)."""
    return {"study": ctx.id, "study_scale": ctx.settings.scale, "rep": int(rep), "copy": int(copy),
            "kind": kind, "config": config}


def _copies(cat: pd.DataFrame) -> pd.Series:
    """The copy of each run: 1 for the seed's A/A second run of a turn, 0 otherwise (and for runs stored
    before turns, which had none)."""
    c = cat["spec.copy"] if "spec.copy" in cat.columns else pd.Series(0, index=cat.index)
    return pd.to_numeric(c, errors="coerce").fillna(0).astype(int)


def _run_spec(s: Settings, db, name: str, backend: str, steps: list, **over) -> driver.RunSpec:
    """The seed's DB shape (16 + 400 bytes, 8 KiB aligned blocks, no compression), one client."""
    fields = dict(db=str(db), name=name, backend=backend, steps=steps, num=s.num, key_size=KEY_SIZE,
                  value_size=VALUE_SIZE, threads=1, duration=s.duration, block_size=BLOCK_BYTES,
                  block_align=True, compression="none", cache_size=s.cache_size, scale=s.scale)
    fields.update(over)
    return driver.RunSpec(**fields)


class IoEffTuningStudy(Study, name="io_efficiency_tuning", notebook="15_raising_io_efficiency",
                              seed=SEED_FILE, published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                              result=TuningResult, tables=TABLES, figures=FIGURES, compare=COMPARE):
    """What raises RocksDB's io.eff: a ladder of configurations against fio, one client."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's reads: a row per configuration, the ladder's order. The protocol orders them per
        turn (rotated, the seed's setting twice) and adds rep (the turn) and copy; `run_one` runs the
        turn's fio before its first read."""
        return pd.DataFrame({"config": list(params.configs)}, columns=["config"])

    def setup(self, ctx: RunContext) -> None:
        """What every turn reads, made once: the DB (a stored run of its own) and fio's file."""
        s: Settings = ctx.settings
        ctx.state["db"] = ctx.path("tuning-db")
        ctx.state["fio_file"] = ctx.path("tuning-fio")
        ctx.state["fio_turns"] = set()
        fio.layout(ctx.state["fio_file"], s.fio_size)   # written now, not in the first turn's time
        # the seed's readrandom2 case: one level after a full compaction
        name = ctx.run_name("load")
        spec = _run_spec(s, ctx.state["db"], name, "posix",
                         [{"name": "fillseq", "disable_wal": True}, "flush", "compact"], seed=0)
        ctx.runs.append(driver.run(spec, root=ctx.root, progress=False,
                                   meta={**_meta(ctx, -1, 0, "load", ""), "tool": DB_TOOL}))

    def describe(self, row) -> str:
        return f"turn {row.rep} {row.config}{' (A/A)' if row.copy else ''}"

    def _fio(self, ctx: RunContext, rep: int):
        """The turn's baseline: fio's sync engine at queue depth 1 on the study's file."""
        s: Settings = ctx.settings
        meta = {**_meta(ctx, rep, 0, "fio", ""), "name": ctx.run_name(f"r{rep}", "fio"),
                "tool": FIO_TOOL, "scale": s.scale}
        run = fio.run_stored(ctx.root, ctx.state["fio_file"], meta, rw="randread", bs=BLOCK_BYTES,
                             size=s.fio_size, direct=True, ioengine="sync", iodepth=1, numjobs=1,
                             runtime=s.duration, ramp_time=FIO_RAMP_S, seed=rep + 1)
        ctx.state["fio_turns"].add(rep)
        return run

    def run_one(self, ctx: RunContext, row):
        """A read of the DB under the row's configuration, after the turn's fio when it is the turn's
        first (io.eff of every read of a turn is against that fio)."""
        s: Settings = ctx.settings
        rep, copy = int(row.rep), int(row.copy)
        runs = [] if rep in ctx.state["fio_turns"] else [self._fio(ctx, rep)]
        c = CONFIGS[row.config]
        name = ctx.run_name(f"r{rep}{'a' if copy else ''}", _slug(row.config))
        # every read of a turn reads the same keys (the A/A copy too)
        spec = _run_spec(s, ctx.state["db"], name, c.backend, [{"name": "readrandom", **c.step}],
                         use_existing_db=True, seed=1000 * (rep + 1), **c.spec)
        meta = {**_meta(ctx, rep, copy, "read", row.config), "tool": DB_TOOL}
        return [*runs, driver.run(spec, root=ctx.root, progress=False, meta=meta)]

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """The study's rows from catalog rows: fio's total and each readrandom (other runs are dropped)."""
        if cat.empty or "spec.kind" not in cat.columns or "run_name" not in cat.columns:
            return pd.DataFrame(columns=KEYS)
        cat = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)
                  & cat["spec.kind"].isin(["fio", "read"])].copy()
        if "job" in cat.columns:
            cat = cat[(cat["spec.kind"] != "fio") | (cat["job"].astype(str) == "total")]
        cat = cat[(cat["spec.kind"] == "fio") | (cat["name"] == "readrandom")]
        if cat.empty:
            return pd.DataFrame(columns=KEYS)
        is_fio = cat["spec.kind"] == "fio"
        keys = pd.DataFrame({
            "study": cat["spec.study"].astype(str), "rep": pd.to_numeric(cat["spec.rep"]).astype(int),
            "copy": _copies(cat), "tool": np.where(is_fio, FIO_TOOL, DB_TOOL),
            "config": np.where(is_fio, "", cat["spec.config"].astype(str)),
            "test": np.where(is_fio, "fio-sync", "readrandom2"), "threads": 1, "delay_us": 0,
            "backend": cat["backend"].astype(str)}, index=cat.index)
        derived = metrics.seed_columns(cat).drop(columns="test")  # the keys name the test
        out = tidy_frame(keys, cat, derived, first=KEYS)
        # the whole machine's busy CPU per query: what a busy-polling configuration really costs
        out["host_cpuPer"] = pd.to_numeric(out["system_cpu.busy"]) * 1e6 / pd.to_numeric(out["ops"])
        if "lat_mean_us" in out.columns:
            out.loc[is_fio.to_numpy(), "rx.lat"] = pd.to_numeric(out.loc[is_fio.to_numpy(), "lat_mean_us"])
        return out

    def complete(self, frame: pd.DataFrame) -> bool:
        """A fio baseline and the seed configuration, the least every table compares."""
        return bool(len(frame) and (frame["tool"] == FIO_TOOL).any() and (frame["config"] == "seed").any())

    def findings(self, result: TuningResult) -> str:
        return findings_markdown(result)

    def live_table(self, result: TuningResult) -> pd.DataFrame:
        f = result.frame
        cols = ("rep", "copy", "tool", "config", "qps", "iops", "cpuPer", "rx.lat")
        return f[[c for c in cols if c in f.columns]].tail(12)
