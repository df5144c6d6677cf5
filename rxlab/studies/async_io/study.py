"""The async IO study: one DB compacted into one SST file, read by MultiGet, a Get loop and scans on each
backend and emulated device latency, every step's reads checked for overlap by the counters.

The plan is one build run (fillseq, flush, compact; the SST files it left are
attached to it), then per repetition every (backend, delay) configuration in
an order rotated from one repetition to the next, each a run of the read
steps of `step_plan`. A read run opens the DB itself, resets the backend's
counters before each step (so fs.max_inflight is that step's) and records
the step's options and its overlap verdict (overlap.py) in the stored row.
"""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from rxlab.bench import driver
from rxlab.core import metrics, stats, store, sysinfo
from rxlab.core.builds import active_build
from rxlab.core.study import RunContext, Study, tidy_frame
from rxlab.studies.async_io.figures import FIGURES
from rxlab.studies.async_io.findings import findings as findings_markdown
from rxlab.studies.async_io.overlap import step_annotations
from rxlab.studies.async_io.params import (
    BLOCK_BYTES,
    BLOOM_BITS,
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
    with_delay,
)
from rxlab.studies.async_io.result import STRUCTURE_FILE, AsyncIOResult
from rxlab.studies.async_io.tables import TABLES

__all__ = ["KEYS", "RUN_PREFIX", "AsyncIOStudy", "parse_sstables", "step_plan"]

RUN_PREFIX = "asyncio-"
KEYS = ["study", "rep", "backend", "delay_us", "test", "kind", "batch_size", "async_io", "run_id",
        "build_run"]
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


class AsyncIOStudy(Study, name="async_io", notebook="40_async_io", seed=SEED_FILE, published=PUBLISHED,
                          run_prefix=RUN_PREFIX, params=Params, result=AsyncIOResult, tables=TABLES,
                          figures=FIGURES):
    """The RocksDB wiki's asynchronous IO: MultiGet against a Get loop, scans with async prefetch."""

    def plan(self, params: Params) -> pd.DataFrame:
        """The runs in execution order: the build, then rep x (backend, delay), rotated each repetition."""
        s = params.settings()
        rows = [{"rep": None, "backend": params.build_backend(), "delay_us": 0, "run": "build",
                 "steps": ", ".join(st["name"] for st in BUILD_STEPS)}]
        labels = ", ".join(dict.fromkeys(st["label"] for st in step_plan(s)))
        for rep in range(s.repeats):
            for b, d in stats.rotate(params.configurations(), rep):
                rows.append({"rep": rep, "backend": b, "delay_us": d, "run": "read", "steps": labels})
        return pd.DataFrame(rows).astype({"rep": "Int64"})   # the build belongs to no repetition

    def setup(self, ctx: RunContext) -> None:
        ctx.state["db"] = ctx.path("asyncio-db")

    def describe(self, row) -> str:
        return f"{row.run} {row.backend} delay {row.delay_us}"

    def run_one(self, ctx: RunContext, row):
        s: Settings = ctx.settings
        meta = {"tool": "rocksdb", "study": ctx.id, "study_scale": s.scale, "study_backend": row.backend}
        if row.run == "build":
            spec = _run_spec(s, ctx.state["db"], name=ctx.run_name("build"), backend=row.backend,
                             steps=BUILD_STEPS, seed=0)
            return run_steps(spec, {**meta, "kind": "build", "rep": -1, "delay_us": 0}, ctx.root,
                             structure_file=ctx.path(STRUCTURE_FILE))
        rep = int(row.rep)
        name = ctx.run_name(f"r{rep}", _slug(row.backend), f"d{row.delay_us}")
        spec = _run_spec(s, ctx.state["db"], name=name, backend=with_delay(row.backend, row.delay_us),
                         steps=step_plan(s), seed=1000 * (rep + 1))
        return run_steps(spec, {**meta, "kind": "read", "rep": rep, "delay_us": int(row.delay_us)}, ctx.root)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per read step of the study's runs: keys, raw columns, metrics.seed_columns (db_bench's
        micros/op and MB/s among them), us_per_call, reads_per_key; `build_run` names the run that loaded
        the DB its steps read."""
        if cat.empty or not {"spec.kind", "spec.study", "run_name"} <= set(cat.columns):
            return pd.DataFrame(columns=KEYS)
        ours = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX) & cat["spec.study"].notna()]
        builds = ours[ours["spec.kind"] == "build"].groupby("spec.study")["run_id"].first()
        cat = ours[ours["spec.kind"] == "read"].copy()
        if cat.empty:
            return pd.DataFrame(columns=KEYS)
        keys = pd.DataFrame({
            "study": cat["spec.study"].astype(str),
            "rep": pd.to_numeric(cat["spec.rep"]).astype(int),
            "backend": cat["spec.study_backend"].astype(str),
            "delay_us": pd.to_numeric(cat["spec.delay_us"]).astype(int),
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
        cols = ("rep", "backend", "delay_us", "test", "batch_size", "micros_per_op", "overlap")
        return f[[c for c in cols if c in f.columns]].tail(12)
