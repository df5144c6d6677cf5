"""The tracing study: db_bench on each backend untraced, with rxlab's counters, under perf and under strace.

Each configuration (backend, tracer) is one run of the stock release
db_bench through rxlab's plugin on a fresh DB: the fills, a flush, then the
read workloads (tracers.py says how each tracer wraps it). The protocol
runs the plan in turns (params.COMPARE, rxlab.core.turns_plan): each turn
runs every tracer of a backend once and `none` twice (the A/A pair, run
names r<turn>a for the second), backends and tracers in orders that rotate
from turn to turn, until every tracer's throughput ratio to untraced is
resolved to the target or the budget is spent. Every run is stored (steps
from db_bench's result lines; the strace summary, the counters JSON and the
log attached), so the syscall tables are read back from the store, for a
loaded study too.

Under a tracer the process that references.run_db_bench samples is the
tracer, not db_bench, so the per-step CPU columns of traced runs are left
empty (NaN); throughput (ops over wall time, and db_bench's own MB/s) is
what this study compares.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pandas as pd

from rxlab.bench import references
from rxlab.core import metrics, sysinfo
from rxlab.core.builds import active_build
from rxlab.core.store import RunWriter
from rxlab.core.study import RunContext, Study, match_runs
from rxlab.studies.tracing_overhead import figures, findings, tables
from rxlab.studies.tracing_overhead.params import (
    COMPARE,
    PUBLISHED,
    SEED_FILE,
    WORKLOADS,
    Params,
    Settings,
    applies,
)
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.tracers import (
    db_bench_flags,
    default_flags,
    fs_uri,
    perf_samples,
    slug,
    tracer_prefix,
    wrapper_script,
)

RUN_PREFIX = "tracing-"
_NAME_RE = re.compile(r"^tracing-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)(?P<copy>a?)-(?P<bslug>.+)-"
                      r"(?P<tracer>none|counters|perf|strace)$")
KEYS = ["study", "rep", "copy", "backend", "tracer", "test", "run_id"]
# The columns of db_bench's own process that a tracer hides (the sampled process is the tracer).
PROCESS_COLUMNS = ("cpu_user_s", "cpu_sys_s", "own_read_bytes", "own_write_bytes")


def environment(path: Path) -> dict:
    """sysinfo.fingerprint of `path` with the active RocksDB build's record."""
    build = active_build()
    rec = json.loads((build / "build.json").read_text()) if (build / "build.json").is_file() else {}
    return sysinfo.fingerprint(path, rocksdb_build=rec)


class TracingStudy(Study, name="tracing_overhead", notebook="50_tracing_overhead", seed=SEED_FILE,
                          published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params, result=TracingResult,
                          tables=tables.TABLES, figures=figures.FIGURES, compare=COMPARE):
    """What tracing costs db_bench (none, rxlab's counters, perf, strace) and strace's syscall counts."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's runs: backend, tracer (every pair but counters on default). The protocol orders
        them per turn (backends rotate, and within each the tracers with `none` twice) and adds rep (the
        turn) and copy."""
        rows = [{"backend": b, "tracer": t} for b in params.backends for t in params.tracers if applies(b, t)]
        return pd.DataFrame(rows, columns=["backend", "tracer"])

    def setup(self, ctx: RunContext) -> None:
        # one fingerprint for every run: taking it runs tools (fio --version, ...) that need not repeat
        ctx.state["fingerprint"] = environment(ctx.work)

    def describe(self, row) -> str:
        return f"turn {row.rep} {row.backend} {row.tracer}{' (A/A)' if row.copy else ''}"

    def run_one(self, ctx: RunContext, row) -> Path:
        """One db_bench run of a configuration on a fresh DB, stored with its tracer's output attached."""
        p: Params = ctx.params
        s: Settings = ctx.settings
        rep, copy, backend, tracer = int(row.rep), int(row.copy), row.backend, row.tracer
        turn = f"r{rep}{'a' if copy else ''}"   # the A/A copy of `none` runs under its own name
        cdir = ctx.path(f"{slug(backend)}-{tracer}-{turn}")
        cdir.mkdir(parents=True)
        db, cpath, log = cdir / "db", cdir / "counters.json", cdir / "db_bench.log"
        trace_out = cdir / ("strace.txt" if tracer == "strace" else "perf.data")
        uri = fs_uri(backend, tracer, cpath)
        flags = db_bench_flags(p, s, db, rep)   # a seed per turn: a turn's runs differ in configuration only
        if uri is not None:
            flags["fs_uri"] = uri
        else:
            flags.update(default_flags(backend))
        preload = str(references.plugin_path()) if uri is not None else None
        db_bench = references.db_bench_path()
        prefix = tracer_prefix(tracer, trace_out, s.perf_freq)
        env: dict[str, str] = {}
        program = db_bench
        if prefix:
            program = wrapper_script(cdir / "run.sh", prefix, db_bench, preload)
        elif preload:
            env["LD_PRELOAD"] = preload
        spec = {"name": ctx.run_name(turn, slug(backend), tracer), "tool": "db_bench", "study": ctx.id,
                "rep": rep, "copy": copy, "backend": backend, "tracer": tracer, "fs_uri": uri,
                "scale": s.scale, "num": s.num, "reads": s.reads, "cache_size": s.cache_size,
                "perf_freq": s.perf_freq if tracer == "perf" else None,
                "tracer_command": shlex.join(prefix) if prefix else "", "flags": flags, "preload": preload}
        try:
            with RunWriter(ctx.root, spec, ctx.state["fingerprint"]) as w:
                rows = references.run_db_bench(program, flags, env=env, background_s=s.background_s,
                                               log_path=log, timeout=3600)
                for r in rows:
                    r.update({"backend": backend, "tracer": tracer, "rep": rep, "copy": copy})
                    if prefix:
                        for k in PROCESS_COLUMNS:
                            r[k] = float("nan")
                        r["cpu_source"] = "none: the sampled process was the tracer"
                    w.add_step(r)
                w.attach(log)
                if tracer == "strace":
                    w.attach(trace_out)
                if cpath.is_file():
                    w.attach(cpath)
                elif tracer in ("counters", "strace") and uri is not None:
                    raise RuntimeError(f"the plugin wrote no counters file at {cpath}")
                if tracer == "perf":
                    info = {"samples": perf_samples(log.read_text()),
                            "perf_data_bytes": trace_out.stat().st_size if trace_out.is_file() else None,
                            "event": "cpu-clock", "freq_hz": s.perf_freq}
                    (cdir / "perf.json").write_text(json.dumps(info) + "\n")
                    w.attach(cdir / "perf.json")
        finally:
            shutil.rmtree(cdir, ignore_errors=True)  # a DB per run: do not keep it until the study ends
        return w.path

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per db_bench step of the study's runs: keys (rep the turn, copy 1 for the A/A second
        run of `none`), qps (rxlab.core.metrics), db_bench's MB/s."""
        cat, m = match_runs(cat, _NAME_RE)
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, "qps", "mb_per_s"])
        derived = metrics.seed_columns(cat)
        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int),
                             "copy": (m["copy"] == "a").astype(int), "backend": cat["spec.backend"],
                             "tracer": m["tracer"], "test": derived["test"], "run_id": cat["run_id"]},
                            index=cat.index)
        raw = cat.drop(columns=[c for c in (*derived.columns, "backend", "tracer", "rep", "copy", "run_id")
                                if c in cat.columns])
        out = pd.concat([keys, derived.drop(columns=["test"]), raw], axis=1)
        return out.sort_values(["study", "rep"], kind="stable").reset_index(drop=True)  # execution order

    def complete(self, frame: pd.DataFrame) -> bool:
        """Every run has a workload step (a run that died before its first result line has none)."""
        runs = frame.groupby("run_id")["test"].apply(lambda t: bool(set(t) & set(WORKLOADS)))
        return bool(len(runs)) and bool(runs.all())

    def findings(self, result: TracingResult) -> str:
        return findings.findings(result)

    def live_table(self, result: TracingResult) -> pd.DataFrame:
        f = result.frame
        return f[f["test"].isin(WORKLOADS)][["rep", "copy", "backend", "tracer", "test", "qps",
                                             "mb_per_s"]].tail(12)
