"""The start-here study: one backend, one workload, one stored run, and a look at it.

notebooks/00_start_here.ipynb is for a first session in JupyterLab: open a
database on one of rxlab's backends and use it, run db_bench's fillseq,
flush and a read workload through the driver (stored like every run, under
one study id), read the run back, and try other backends and options from
the "try it" panel (tryit.py).
"""

from __future__ import annotations

import re

import pandas as pd

from rxlab.bench import driver
from rxlab.core import metrics
from rxlab.core.study import RunContext, Study, StudyResult, match_runs, tidy_frame
from rxlab.studies.quickstart import tables
from rxlab.studies.quickstart.params import Params

__all__ = ["KEYS", "RUN_PREFIX", "STUDY", "QuickstartStudy"]

RUN_PREFIX = "start-"
_NAME_RE = re.compile(r"^start-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-(?P<workload>[a-z]+)$")
KEYS = ["study", "backend", "workload", "threads", "test", "run_id"]


class QuickstartStudy(Study, name="quickstart", notebook="00_start_here", run_prefix=RUN_PREFIX,
                             params=Params, tables=tables.TABLES, figures={}, work_prefix="rxlab-start-"):
    """Start here: one backend, the load and one read workload, stored and read back."""

    def plan(self, params: Params) -> pd.DataFrame:
        return pd.DataFrame(
            [{"backend": params.backend, "workload": params.workload, "threads": params.threads}]
        )

    def describe(self, row) -> str:
        return f"{row.backend} {row.workload} x{row.threads}"

    def run_one(self, ctx: RunContext, row):
        spec = ctx.params.spec(ctx.path("db"), name=ctx.run_name(row.workload))
        return driver.run(spec, root=ctx.root, progress=ctx.progress)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """The tidy frame (one row per step) of this study's runs in catalog rows (others dropped)."""
        cat, m = match_runs(cat, _NAME_RE)
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, *metrics.SEED_COLUMNS])
        threads = pd.to_numeric(cat.get("spec.threads", cat.get("threads")), errors="coerce")
        keys = pd.DataFrame(
            {
                "study": m["study"],
                "backend": cat["backend"].astype(str),
                "workload": m["workload"],
                "threads": threads.astype("Int64"),
            },
            index=cat.index,
        )
        return tidy_frame(keys, cat, metrics.seed_columns(cat), first=KEYS, sort=["study", "run_id", "step"])

    def complete(self, f: pd.DataFrame) -> bool:
        """Every run has its measured step (the workload its name says)."""
        return not f.empty and bool((f["test"] == f["workload"]).groupby(f["run_id"]).any().all())

    def live_table(self, result: StudyResult) -> pd.DataFrame:
        f = result.frame
        return f[
            [
                c
                for c in ("run_id", "test", "backend", "threads", "qps", "iops", "cpuPer", "rx.lat", "io.lat")
                if c in f.columns
            ]
        ].tail(12)

    def findings(self, result: StudyResult) -> str:
        f = result.frame
        lines = []
        for _, r in f[f["test"] == f["workload"]].iterrows():
            p99 = r.get(metrics.percentile_column(99.0))
            lines.append(
                f"- {r['workload']} on {r['backend']} with {r['threads']} thread(s): {r['qps']:,.0f} "
                f"ops/s, {r['rx.lat']:.1f} us mean latency (p99 {p99:.0f} us), {r['cpuPer']:.1f} us "
                f"CPU per op, {r['iops']:,.0f} device reads/s"
            )
        return "\n".join(lines)


STUDY = QuickstartStudy()
