"""The async IO study: one DB compacted into one SST file, read by MultiGet, a Get loop and scans on each
backend and emulated device latency, every step's reads checked for overlap by the counters.

`setup` runs the build once (fillseq, flush, compact; a run of its own, the
SST files it left attached to it). The plan is one turn: every (backend,
delay) configuration, each a run of the read steps of `step_plan`. The
protocol runs it in turns (params.COMPARE, rxlab.core.turns_plan): each turn
runs every backend of a delay once and the delay's base twice (the A/A pair,
run names r<turn>a for the second), in orders that rotate from turn to turn,
until every backend's MB/s ratio to the base is resolved to the target, step
by step, or the budget is spent. A read run opens the DB itself, resets the
backend's counters before each step (so fs.max_inflight is that step's) and
records the step's options and its overlap verdict (overlap.py) in the
stored row.
"""
from __future__ import annotations

import json
import re
import sys

import numpy as np
import pandas as pd

from rxlab.bench import driver
from rxlab.core import metrics, store, sysinfo
from rxlab.core.builds import active_build
from rxlab.core.study import RunContext, Study, tidy_frame
from rxlab.studies.async_io.figures import FIGURES
from rxlab.studies.async_io.findings import findings as findings_markdown
from rxlab.studies.async_io.overlap import step_annotations
from rxlab.studies.async_io.params import (
    BLOCK_BYTES,
    BLOOM_BITS,
    COMPARE,
    GET_LOOP,
    KEY_SIZE,
    KIND,
    MIB,
    MULTIGET,
    MULTIGET_ASYNC,
    ONE_FILE,
    PUBLISHED,
    SCAN_ASYNC,
    SCAN_SYNC,
    SEED_BATCH,
    SEED_FILE,
    VALUE_SIZE,
    Params,
    Settings,
    step_name,
    with_delay,
)
from rxlab.studies.async_io.result import STRUCTURE_FILE, AsyncIOResult
from rxlab.studies.async_io.tables import TABLES

__all__ = ["KEYS", "RUN_PREFIX", "AsyncIOStudy", "parse_sstables", "step_plan"]

RUN_PREFIX = "asyncio-"
KEYS = ["study", "rep", "copy", "backend", "delay_us", "test", "step", "kind", "batch_size", "async_io",
        "run_id", "build_run"]
READ_STEPS = ("readrandom", "multireadrandom", "seekrandom")
BUILD_STEPS = [{"name": "fillseq", "threads": 1, "disable_wal": True}, {"name": "flush"}, {"name": "compact"}]


def step_plan(s: Settings) -> list[dict]:
    """The read steps of one configuration, in order, with their db_bench options.

    readrandom (the loop of Get), multireadrandom at each batch size
    (multiread_batched, the page's stride ratio), multireadrandom at the page's
    batch size with async_io and optimize_multiget_for_io (the page's
    multi-level flags; no effect without coroutines), seekrandom with
    async_io off and on.
    """
    mg = {"name": "multireadrandom", "multiread_batched": True, "multiread_stride": s.multiread_stride}
    steps = [{"name": "readrandom", "label": GET_LOOP, "batch_size": 1}]
    steps += [{**mg, "label": MULTIGET, "batch_size": b, "async_io": False} for b in s.batch_sizes]
    steps.append({**mg, "label": MULTIGET_ASYNC, "batch_size": SEED_BATCH, "async_io": True,
                  "optimize_multiget_for_io": True})
    steps += [{"name": "seekrandom", "label": lab, "seek_nexts": s.seek_nexts, "async_io": a}
              for lab, a in ((SCAN_SYNC, False), (SCAN_ASYNC, True))]
    return steps


_SST_RE = re.compile(r"^\s*(\d+):(\d+)\[")
_LEVEL_RE = re.compile(r"^--- level (\d+) ---")


def parse_sstables(text: str) -> pd.DataFrame:
    """RocksDB's "rocksdb.sstables" property -> level, file, size_bytes per SST file."""
    rows, level = [], None
    for line in (text or "").splitlines():
        m = _LEVEL_RE.match(line)
        if m:
            level = int(m.group(1))
            continue
        m = _SST_RE.match(line)
        if m and level is not None:
            rows.append({"level": level, "file": f"{int(m.group(1)):06d}.sst", "size_bytes": int(m.group(2))})
    return pd.DataFrame(rows, columns=["level", "file", "size_bytes"])


def _run_spec(s: Settings, db, *, name: str, backend: str, steps: list, seed: int) -> driver.RunSpec:
    """The page's DB (32 + 512 bytes, 8 KiB blocks, bloom 10) in one SST file: a batch lands in one file.
    No block_align: it would disable RocksDB's auto readahead, which async prefetch works through."""
    return driver.RunSpec(
        db=str(db), name=name, backend=backend, steps=steps, num=s.num, key_size=KEY_SIZE,
        value_size=VALUE_SIZE, threads=s.threads, duration=s.duration, block_size=BLOCK_BYTES,
        block_align=False, compression="none", cache_size=s.cache_size, bloom_bits=BLOOM_BITS,
        write_buffer_size=64 * MIB, target_file_size_base=ONE_FILE, max_bytes_for_level_base=ONE_FILE,
        use_existing_db=steps[0]["name"] != "fillseq", scale=s.scale, seed=seed)


def run_steps(spec: driver.RunSpec, meta: dict, root, structure_file=None):
    """Open a session, run the steps (counters reset before each), store the run; returns its path.

    driver.run does not fit: the verdict needs each step's counters alone and the step's row, and the
    build run attaches the SST files it left (written to `structure_file` first)."""
    driver.validate(spec)
    build = active_build()
    rec = (build / "build.json").read_text() if (build / "build.json").is_file() else "{}"
    fp = sysinfo.fingerprint(spec.db, rocksdb_build=json.loads(rec))
    sess = driver.Session(spec)
    try:
        with store.RunWriter(root, {**spec.to_dict(), **meta}, fp) as w:
            for st in spec.steps:
                sess.db.reset_counters()  # fs.max_inflight is then this step's
                row = sess.run_step(st)
                if st["name"] in READ_STEPS:
                    row.update(step_annotations(st, row, spec.backend))
                w.add_step(row)
            if structure_file is not None:
                sst = parse_sstables(sess.db.property("rocksdb.sstables") or "")
                structure_file.write_text(sst.to_json(orient="records"))
                w.attach(structure_file, STRUCTURE_FILE)
    finally:
        sess.close()
    return w.path


def _slug(backend: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", backend).strip("-")


def _meta(ctx: RunContext, backend: str) -> dict:
    return {"tool": "rocksdb", "study": ctx.id, "study_scale": ctx.settings.scale, "study_backend": backend}


class AsyncIOStudy(Study, name="async_io", notebook="40_async_io", seed=SEED_FILE, published=PUBLISHED,
                          run_prefix=RUN_PREFIX, params=Params, result=AsyncIOResult, tables=TABLES,
                          figures=FIGURES, compare=COMPARE):
    """The RocksDB wiki's asynchronous IO: MultiGet against a Get loop, scans with async prefetch."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's runs: every (backend, delay) configuration, the delay's base first (the protocol
        orders them per turn, runs the base twice and adds rep, the turn, and copy). The build that loads
        the DB runs once, before the turns (`setup`)."""
        labels = ", ".join(dict.fromkeys(st["label"] for st in step_plan(params.settings())))
        rows = [{"delay_us": d, "backend": b, "steps": labels} for b, d in params.configurations()]
        return pd.DataFrame(rows, columns=["delay_us", "backend", "steps"])

    def setup(self, ctx: RunContext) -> None:
        """The DB every turn reads: fillseq, flush, compact into one SST, stored as the study's build run."""
        p: Params = ctx.params
        s: Settings = ctx.settings
        ctx.state["db"] = ctx.path("asyncio-db")
        backend = p.build_backend()
        if ctx.progress:
            print(f"rxlab async_io: loading {s.num:,} keys and compacting them into one SST ({backend})",
                  file=sys.stderr, flush=True)
        spec = _run_spec(s, ctx.state["db"], name=ctx.run_name("build"), backend=backend, steps=BUILD_STEPS,
                         seed=0)
        ctx.runs.append(run_steps(spec, {**_meta(ctx, backend), "kind": "build", "rep": -1, "delay_us": 0},
                                  ctx.root, structure_file=ctx.path(STRUCTURE_FILE)))

    def describe(self, row) -> str:
        return f"{row.backend}{' (A/A)' if row.copy else ''} delay {row.delay_us}"

    def run_one(self, ctx: RunContext, row):
        s: Settings = ctx.settings
        rep, copy = int(row.rep), int(row.copy)
        name = ctx.run_name(f"r{rep}{'a' if copy else ''}", _slug(row.backend), f"d{row.delay_us}")
        spec = _run_spec(s, ctx.state["db"], name=name, backend=with_delay(row.backend, row.delay_us),
                         steps=step_plan(s), seed=1000 * (rep + 1) + 500 * copy)
        meta = {**_meta(ctx, row.backend), "kind": "read", "rep": rep, "copy": copy, "delay_us": int(row.delay_us)}
        return run_steps(spec, meta, ctx.root)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per read step of the study's runs: keys (rep: the turn; copy: 1 for the base's A/A
        second run, 0 otherwise and in studies stored before turns; step: step_name), raw columns,
        metrics.seed_columns (db_bench's micros/op and MB/s among them), us_per_call, reads_per_key;
        `build_run` names the run that loaded the DB its steps read."""
        if cat.empty or not {"spec.kind", "spec.study", "run_name"} <= set(cat.columns):
            return pd.DataFrame(columns=KEYS)
        ours = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX) & cat["spec.study"].notna()]
        builds = ours[ours["spec.kind"] == "build"].groupby("spec.study")["run_id"].first()
        cat = ours[ours["spec.kind"] == "read"].copy()
        if cat.empty:
            return pd.DataFrame(columns=KEYS)
        copy = cat["spec.copy"] if "spec.copy" in cat.columns else pd.Series(0, index=cat.index)
        keys = pd.DataFrame({
            "study": cat["spec.study"].astype(str),
            "rep": pd.to_numeric(cat["spec.rep"]).astype(int),
            "copy": pd.to_numeric(copy, errors="coerce").fillna(0).astype(int),
            "backend": cat["spec.study_backend"].astype(str),
            "delay_us": pd.to_numeric(cat["spec.delay_us"]).astype(int),
            "step": [step_name(t, b) for t, b in zip(cat["name"], cat["batch_size"], strict=True)],
            "kind": cat["name"].map(KIND),
            "backend_uri": cat["backend"].astype(str),
            "build_run": cat["spec.study"].map(builds),
        }, index=cat.index)
        out = tidy_frame(keys, cat, metrics.seed_columns(cat), first=KEYS, drop=["backend"])
        out["mb_per_s"] = out["mbps"]  # db_bench's MB/s (rxlab.core.metrics), as is micros_per_op
        out["us_per_call"] = out["rx.lat"]  # mean latency of one API call (a MultiGet)
        out["reads_per_key"] = pd.to_numeric(out.get("fs.reads", np.nan)) / pd.to_numeric(out["ops"])
        return out

    def complete(self, frame: pd.DataFrame) -> bool:
        """Read steps and the build run that loaded their DB (for studies stored before manifests)."""
        return bool(len(frame) and frame["build_run"].notna().all())

    def findings(self, result: AsyncIOResult) -> str:
        return findings_markdown(result)

    def live_table(self, result: AsyncIOResult) -> pd.DataFrame:
        f = result.frame   # empty after the build run alone: it has no read steps
        cols = ("rep", "copy", "backend", "delay_us", "step", "mb_per_s", "micros_per_op", "overlap")
        return f[[c for c in cols if c in f.columns]].tail(12)
