"""The backends study: the lab report's workloads on each backend, on this disk and on emulated SSDs.

The protocol runs the study in turns (params.COMPARE, rxlab.core.turns_plan):
each turn runs every backend of a case once and the case's base twice (the
A/A pair, run names r<turn>a for the second), in orders that rotate from turn
to turn, until every backend's MB/s ratio to the base is resolved to the
target or the budget is spent. In a turn each test of a case runs on every
backend at once, in slices (slices.py), stored as a run per backend named
...-<case>-sliced-<test>-b<i>: the throughput. The first `whole_turns` turns
also run, for each device case and backend, the sequence
driver.SEQUENCES["lab_report"] split where db_bench would start a fresh
database (every fill benchmark), each part stored as a run: the latency
percentiles, which slices do not give. With sliced=False every turn runs the
whole sequences only, and the throughput is theirs.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pandas as pd

from rxlab.bench import driver
from rxlab.core import engines, metrics, store, sysinfo
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.backends import figures, findings, slices, tables
from rxlab.studies.backends.params import (
    BLOCK_SIZE,
    CLUSTER_TESTS,
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
                      r"-(?:(?P<part>fillseq|fillrandom)|sliced-(?P<sliced>[a-z]+))-b(?P<b>\d+)$")
KEYS = ["study", "rep", "copy", "case", "delay_us", "jitter_us", "backend", "backend_uri", "part", "method",
        "test", "run_id"]
# What the whole runs of a study measured in slices no longer give: the throughput and CPU per op (the
# slices' are measured with every backend of a case at once); their latency stays.
THROUGHPUT_COLUMNS = ("mbps", "qps", "cpuPer", "usPer", "syPer")


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
        if ctx.settings.sliced:
            # the DB every backend's reads start from in slices: loaded once, by the first backend
            ctx.state["loaded"] = ctx.path("lab-loaded")
            slices.load(self._spec(ctx, ctx.params.backends[0], ctx.state["loaded"], ctx.run_name("load"),
                                   seed=1))

    def describe(self, row) -> str:
        return f"{row.case} {row.backend}{' (A/A)' if row.copy else ''} {row.part}"

    def _spec(self, ctx: RunContext, backend_uri: str, db, name: str, seed: int, **kw) -> driver.RunSpec:
        """The report's options (§5.2.1 and db_bench's defaults) for one process on `db`."""
        s: Settings = ctx.settings
        return driver.RunSpec(
            db=str(db), name=name, backend=backend_uri, num=s.num,
            key_size=KEY_SIZE, value_size=VALUE_SIZE, threads=s.threads, duration=s.duration,
            block_size=BLOCK_SIZE, block_align=False, compression=COMPRESSION, cache_size=s.cache_size,
            bloom_bits=0, use_direct_reads=True, use_direct_io_for_flush_and_compaction=True,
            write_buffer_size=WRITE_BUFFER, scale=ctx.params.scale, seed=seed, **kw)

    def run_turn(self, ctx: RunContext, rows: pd.DataFrame) -> list[Path]:
        """One turn (`rows`: every case's backends, each case's base twice, in the turn's order): the whole
        runs of each backend while the turn is among the first `whole_turns`, then each case's tests on
        every backend at once, in slices (not sliced: the whole runs of every row, every turn)."""
        s: Settings = ctx.settings
        turn = int(rows["rep"].iloc[0])
        if not s.sliced:
            return [self.run_one(ctx, row) for row in rows.itertuples(index=False)]
        runs = []
        if turn < s.whole_turns:
            # for the latency: each backend once (the slices have the A/A pair), not repeated by later turns
            t0 = time.monotonic()
            runs += [self.run_one(ctx, row) for row in rows[rows["copy"] == 0].itertuples(index=False)]
            if turn + 1 == s.whole_turns:
                ctx.state["turn_once_s"] = time.monotonic() - t0
        p: Params = ctx.params
        for case in dict.fromkeys(rows["case"]):
            who = rows[rows["case"] == case].drop_duplicates(["backend", "copy"])[["backend", "copy"]]
            tests = (*LOCAL_TESTS, ZIPPY_TEST) if not p.case(case).delay_us else CLUSTER_TESTS
            for test in slices.tests_of(tests):
                def spec_of(r, db, test=test, case=case):
                    name = ctx.run_name(f"r{turn}{'a' if r.copy else ''}", case, f"sliced-{test}",
                                        f"b{p.backends.index(r.backend)}")
                    uri = with_case(r.backend, p.case(case))
                    seed = slices.seed(test, turn, p.backends.index(r.backend), r.copy)
                    if not slices.uses_load(test):
                        return self._spec(ctx, uri, db, name, seed, steps=[test])
                    if test == "mixgraph":   # it writes: a copy of its own
                        return self._spec(ctx, uri, slices.copy_db(ctx.state["loaded"], db), name, seed,
                                          steps=[test], use_existing_db=True)
                    return self._spec(ctx, uri, ctx.state["loaded"], name, seed, steps=[test],
                                      use_existing_db=True, readonly=True)
                got = slices.session(who, test, spec_of, ctx.path(f"slices-r{turn}-{case}-{test}"),
                                     rounds=s.rounds, slice_s=s.slice_s, warmup_s=s.warmup_s)
                runs += [self._store(ctx, turn, case, test, g) for g in got]
        return runs

    def run_one(self, ctx: RunContext, row):
        """A whole run of one part of the report's sequence (a fill and what follows it) on one backend."""
        p: Params = ctx.params
        spec = self._spec(ctx, with_case(row.backend, p.case(row.case)), ctx.state["db"],
                          ctx.run_name(f"r{row.rep}{'a' if row.copy else ''}", row.case, row.part,
                                       f"b{p.backends.index(row.backend)}"),
                          seed=1000 * row.rep + 500 * row.copy, steps=ctx.state["parts"][row.part])
        return driver.run(spec, root=ctx.root, progress=False)

    def _store(self, ctx: RunContext, turn: int, case: str, test: str, got: dict) -> Path:
        """One backend's share of a test measured in slices, as a run: the bytes its operations moved and
        the operations over its slices' wall time, and the process's CPU over them (every thread)."""
        s: Settings = ctx.settings
        p: Params = ctx.params
        b = got["backend"]
        name = ctx.run_name(f"r{turn}{'a' if got['copy'] else ''}", case, f"sliced-{test}",
                            f"b{p.backends.index(b)}")
        spec = {"name": name, "backend": with_case(b, p.case(case)), "test": test, "method": "slices",
                "rounds": s.rounds, "slice_s": s.slice_s, "warmup_s": s.warmup_s, "num": s.num,
                "key_size": KEY_SIZE, "value_size": VALUE_SIZE, "threads": s.threads, "scale": s.scale,
                "step": slices.step_of(test, s.num)}
        fp = sysinfo.fingerprint(ctx.work)
        ops, wall, cpu = got["ops"], got["wall_s"], got["cpu_s"]
        with store.RunWriter(ctx.root, spec, fp) as w:
            w.add_step({"name": test, "benchmark": test, "threads": s.threads, "ops": ops,
                        "bytes": got["bytes"], "wall_s": wall, "cpu_s": cpu,
                        "cpu_per_op_us": 1e6 * cpu / ops if ops else None, "method": "slices"})
        return w.path

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """The tidy frame of a study from catalog rows (runs named by this study; others dropped)."""
        cat, m = match_runs(cat, _NAME_RE)
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, *metrics.SEED_COLUMNS, "mbps"])
        uri = cat["backend"].astype(str)
        opts = uri.map(engines.options)
        delay = pd.to_numeric(opts.str.get("delay_us"), errors="coerce").fillna(0).astype(int)
        jitter = pd.to_numeric(opts.str.get("jitter_us"), errors="coerce").fillna(0).astype(int)
        sliced = m["sliced"].notna()
        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int),
                             "copy": (m["copy"] == "a").astype(int), "case": m["case"],
                             "delay_us": delay, "jitter_us": jitter, "backend": uri.map(strip_case),
                             "backend_uri": uri, "part": m["part"].where(~sliced, "slices"),
                             "method": sliced.map({True: "slices", False: "whole"})}, index=cat.index)
        f = tidy_frame(keys, cat, metrics.seed_columns(cat), first=KEYS, drop=["backend"],
                       sort=["study", "rep", "run_id", "step"])
        f = f[f["test"] != "waitforcompaction"].reset_index(drop=True)  # a wait, not a measurement
        if "cpu_per_op_us" in f.columns:   # a sliced test's CPU is the process's, not user and system apart
            f["cpuPer"] = f["cpuPer"].fillna(pd.to_numeric(f["cpu_per_op_us"], errors="coerce"))
        # measured in slices, the throughput is theirs; the whole runs keep their latency
        if (f["method"] == "slices").any():
            f.loc[f["method"] == "whole", [c for c in THROUGHPUT_COLUMNS if c in f.columns]] = float("nan")
        return f

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
