"""The backends study: the lab report's workloads on each backend, on this disk and on emulated SSDs.

Each device case and backend runs the sequence driver.SEQUENCES["lab_report"],
split where db_bench would start a fresh database (every fill benchmark);
each part is stored as a run. The protocol runs this plan in turns
(params.COMPARE, rxlab.core.turns_plan): each turn runs every backend of a
case once and the case's base twice (the A/A pair, run names r<turn>a for
the second), in orders that rotate from turn to turn, until every backend's
MB/s ratio to the base is resolved to the target or the budget is spent.
"""
from __future__ import annotations

import re

import pandas as pd

from rxlab.bench import driver
from rxlab.core import engines, metrics
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.backends import figures, findings, tables
from rxlab.studies.backends.params import (
    BLOCK_SIZE,
    COMPARE,
    COMPRESSION,
    KEY_SIZE,
    LOCAL_TESTS,
    PUBLISHED,
    SEED_FILE,
    VALUE_SIZE,
    WRITE_BUFFER,
    ZIPPY_TEST,
    Params,
    Settings,
    strip_case,
    with_case,
)
from rxlab.studies.backends.result import BackendsResult

RUN_PREFIX = "lab-"
_NAME_RE = re.compile(r"^lab-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)(?P<copy>a?)"
                      r"-(?P<case>[a-z][a-z0-9_]*)"
                      r"-(?P<part>fillseq|fillrandom)-b(?P<b>\d+)$")
KEYS = ["study", "rep", "copy", "case", "delay_us", "jitter_us", "backend", "backend_uri", "part", "test",
        "run_id"]


def parts(settings: Settings) -> list[list]:
    """driver.SEQUENCES["lab_report"] split where db_bench starts a fresh DB (each fill benchmark), with
    the per-step options: fills single-threaded, the fill's compactions waited for before the first
    read, readseq one pass (ops = num), mixgraph the ZippyDB options."""
    out: list[list] = []
    for name in driver.SEQUENCES["lab_report"]:
        if name in driver.FILL_STEPS:
            out.append([{"name": name, "threads": 1}])
            continue
        if len(out[-1]) == 1:
            # Reads start on a settled DB: right after the fill, its compactions are still merging
            # 10-20 L0 files, and without bloom filters a read's cost depends on how many are left
            # when it runs (docs/findings/2026-11-28-readrandom-spread.md).
            out[-1].append({"name": "waitforcompaction"})
        step: dict = {"name": name}
        if name == "readseq":
            step.update(duration=0, ops=settings.num)
        elif name == "mixgraph":
            step.update(driver.zippydb_options())
        out[-1].append(step)
    return out


class BackendsStudy(Study, name="backends", notebook="30_backends", seed=SEED_FILE, published=PUBLISHED,
                           run_prefix=RUN_PREFIX, params=Params, result=BackendsResult, tables=tables.TABLES,
                           figures=figures.FIGURES, compare=COMPARE):
    """The lab report's workloads on posix, libaio, io_uring and RocksDB's own file system."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's runs: case, delay_us, jitter_us, backend, part (the fill that starts it). The
        protocol orders them per turn (cases and backends rotate, the case's first backend runs twice)
        and adds rep (the turn) and copy."""
        s = params.settings()
        names = [p[0]["name"] for p in parts(s)]
        rows = []
        for c in params.device_cases:
            case = params.case(c)
            for b in params.backends if not case.delay_us else params.engines:
                for part in names:
                    rows.append({"case": c, "delay_us": case.delay_us, "jitter_us": case.jitter_us,
                                 "backend": b, "part": part})
        return pd.DataFrame(rows, columns=["case", "delay_us", "jitter_us", "backend", "part"])

    def setup(self, ctx: RunContext) -> None:
        ctx.state["db"] = ctx.path("lab-db")
        ctx.state["parts"] = {p[0]["name"]: p for p in parts(ctx.settings)}

    def describe(self, row) -> str:
        return f"{row.case} {row.backend}{' (A/A)' if row.copy else ''} {row.part}"

    def run_one(self, ctx: RunContext, row):
        p: Params = ctx.params
        s: Settings = ctx.settings
        spec = driver.RunSpec(
            db=str(ctx.state["db"]), name=ctx.run_name(f"r{row.rep}{'a' if row.copy else ''}", row.case,
                                                       row.part, f"b{p.backends.index(row.backend)}"),
            backend=with_case(row.backend, p.case(row.case)), steps=ctx.state["parts"][row.part], num=s.num,
            key_size=KEY_SIZE, value_size=VALUE_SIZE, threads=s.threads, duration=s.duration,
            block_size=BLOCK_SIZE, block_align=False, compression=COMPRESSION, cache_size=s.cache_size,
            bloom_bits=0, use_direct_reads=True, use_direct_io_for_flush_and_compaction=True,
            write_buffer_size=WRITE_BUFFER, scale=p.scale, seed=1000 * row.rep + 500 * row.copy)
        return driver.run(spec, root=ctx.root, progress=False)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """The tidy frame of a study from catalog rows (runs named by this study; others dropped)."""
        cat, m = match_runs(cat, _NAME_RE)
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, *metrics.SEED_COLUMNS, "mbps"])
        uri = cat["backend"].astype(str)
        opts = uri.map(engines.options)
        delay = pd.to_numeric(opts.str.get("delay_us"), errors="coerce").fillna(0).astype(int)
        jitter = pd.to_numeric(opts.str.get("jitter_us"), errors="coerce").fillna(0).astype(int)
        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int),
                             "copy": (m["copy"] == "a").astype(int), "case": m["case"],
                             "delay_us": delay, "jitter_us": jitter, "backend": uri.map(strip_case),
                             "backend_uri": uri, "part": m["part"]}, index=cat.index)
        f = tidy_frame(keys, cat, metrics.seed_columns(cat), first=KEYS, drop=["backend"],
                       sort=["study", "rep", "run_id", "step"])
        return f[f["test"] != "waitforcompaction"].reset_index(drop=True)  # a wait, not a measurement

    def complete(self, f: pd.DataFrame) -> bool:
        """The local case has every workload for every backend and repetition."""
        loc = f[f["case"] == "local"]
        if loc.empty:
            return False
        need = {*LOCAL_TESTS, ZIPPY_TEST}
        have = loc.groupby(["rep", "backend"])["test"].apply(set)
        return bool(all(need <= t for t in have))

    def findings(self, result: BackendsResult) -> str:
        return findings.findings(result)

    def live_table(self, result: BackendsResult) -> pd.DataFrame:
        f = result.frame
        return f[["rep", "case", "backend", "test", "mbps", "qps", "rx.lat"]].tail(12)
