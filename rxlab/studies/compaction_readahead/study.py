"""The readahead study: load a DB once, then overwrite a cold copy of it per setting, memory-limited.

`setup` loads the DB every setting starts from (fillseq, flush, wait for
compaction; stored as a run named readahead-<study>-load). Each row of the
plan (a repetition and a compaction_readahead_size, rotated per
repetition) copies that DB, evicts the copy from the page cache
(drop_caches, or fadvise DONTNEED on its files) and runs overwrite in a
child process in its own memory cgroup (overwrite.py, child.py). Every run
is stored; the study's frame is the overwrite steps.
"""
from __future__ import annotations

import re

import pandas as pd

from rxlab.core import stats
from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.compaction_readahead import figures, findings, tables
from rxlab.studies.compaction_readahead.columns import DERIVED, derived
from rxlab.studies.compaction_readahead.overwrite import copy_db, evict, load_db, run_child, run_spec
from rxlab.studies.compaction_readahead.params import PUBLISHED, SEED_FILE, Params, Settings, size_label
from rxlab.studies.compaction_readahead.result import ReadaheadResult

RUN_PREFIX = "readahead-"
_NAME_RE = re.compile(r"^readahead-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)-crs(?P<crs>\d+)$")
KEYS = ["study", "rep", "readahead", "setting", "run_id"]


class ReadaheadStudy(Study, name="compaction_readahead", notebook="60_compaction_readahead", seed=SEED_FILE,
                            published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                            result=ReadaheadResult, tables=tables.TABLES, figures=figures.FIGURES):
    """Overwrite per compaction_readahead_size with buffered IO under a memory limit."""

    def plan(self, params: Params) -> pd.DataFrame:
        """The overwrite runs in execution order: rep, compaction_readahead_size (rotated per repetition)."""
        rows = [{"rep": rep, "readahead": ra, "setting": size_label(ra)}
                for rep in range(params.settings().repeats)
                for ra in stats.rotate(params.compaction_readahead_size, rep)]
        return pd.DataFrame(rows, columns=["rep", "readahead", "setting"])

    def setup(self, ctx: RunContext) -> None:
        base, ctx.state["db"] = ctx.path("readahead-base"), ctx.path("readahead-db")
        ctx.state["base"] = base
        ctx.state["load"] = load_db(ctx.params, ctx.settings, base, ctx.run_name("load"), ctx.root)

    def describe(self, row) -> str:
        return f"rep {row.rep} compaction_readahead_size={row.setting}"

    def run_one(self, ctx: RunContext, row):
        p: Params = ctx.params
        s: Settings = ctx.settings
        db = ctx.state["db"]
        copy_db(ctx.state["base"], db)
        how = evict(db, s.drop_caches)
        spec = run_spec(p, s, db, name=ctx.run_name(f"r{row.rep}", f"crs{row.readahead}"),
                        steps=[{"name": "overwrite", "duration": s.duration}], readahead=int(row.readahead),
                        existing=True, seed=1000 * (row.rep + 1))
        meta = {"study": ctx.id, "rep": int(row.rep), "readahead": int(row.readahead), "evicted": how,
                "memory_limit": s.memory_limit, "max_sectors_kb": s.device.max_sectors_kb,
                "max_hw_sectors_kb": s.device.max_hw_sectors_kb, "read_ahead_kb": s.read_ahead_kb,
                "load_run": ctx.state["load"].name}
        return run_child(spec, ctx.root, meta=meta, limit=s.memory_limit, support=s.cgroup, work=ctx.work)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per overwrite step of the catalog's readahead-<study>-r<rep>-crs<bytes> runs, keys
        first (the load run and runs of other studies dropped)."""
        cat, m = match_runs(cat, _NAME_RE,
                            lambda c, _: c.get("benchmark", c["name"]).astype(str) == "overwrite")
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, *DERIVED])
        crs = m["crs"].astype(int)
        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int), "readahead": crs,
                             "setting": crs.map(size_label)}, index=cat.index)
        return tidy_frame(keys, cat, derived(cat), first=KEYS, sort=["study", "rep", "readahead"])

    def complete(self, frame: pd.DataFrame) -> bool:
        """Every repetition ran the same settings (a study stored before manifests has no other mark)."""
        per_rep = frame.groupby("rep")["readahead"].apply(frozenset)
        return bool(len(per_rep)) and per_rep.nunique() == 1

    def findings(self, result: ReadaheadResult) -> str:
        return findings.findings(result)

    def live_table(self, result: ReadaheadResult) -> pd.DataFrame:
        cols = ["rep", "setting", "qps", "rmbps", "reqsz", "cache.hit", "stall.pct"]
        return result.frame[[c for c in cols if c in result.frame.columns]].tail(12)
