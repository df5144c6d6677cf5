"""The readahead study: load a DB once, then overwrite a cold copy of it per setting, memory-limited.

`setup` loads the DB every run starts from (fillseq, flush, wait for
compaction; stored as a run named readahead-<study>-load). The plan is one
turn: a row per compaction_readahead_size. The protocol runs it in turns
(params.COMPARE, rxlab.core.turns_plan): each turn runs every setting once
and the base (the first setting) twice, the A/A pair (run names r<turn>a
for the second), in an order that moves from turn to turn, until every
setting's overwrite throughput ratio to the base is resolved to the target
or the budget is spent. Each run copies the loaded DB, evicts the copy from
the page cache (drop_caches, or fadvise DONTNEED on its files) and runs
overwrite in a child process in its own memory cgroup (overwrite.py,
child.py). Every run is stored; the study's frame is the overwrite steps.
"""
from __future__ import annotations

import re

import pandas as pd

from rxlab.core.study import RunContext, Study, match_runs, tidy_frame
from rxlab.studies.compaction_readahead import figures, findings, tables
from rxlab.studies.compaction_readahead.columns import DERIVED, derived
from rxlab.studies.compaction_readahead.overwrite import copy_db, evict, load_db, run_child, run_spec
from rxlab.studies.compaction_readahead.params import (
    COMPARE,
    PUBLISHED,
    SEED_FILE,
    Params,
    Settings,
    size_label,
)
from rxlab.studies.compaction_readahead.result import ReadaheadResult

RUN_PREFIX = "readahead-"
# r<turn>, with `a` for the base's A/A second run (a study stored before turns has none)
_NAME_RE = re.compile(r"^readahead-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)(?P<copy>a?)"
                      r"-crs(?P<crs>\d+)$")
KEYS = ["study", "rep", "copy", "readahead", "setting", "run_id"]


class ReadaheadStudy(Study, name="compaction_readahead", notebook="60_compaction_readahead", seed=SEED_FILE,
                            published=PUBLISHED, run_prefix=RUN_PREFIX, params=Params,
                            result=ReadaheadResult, tables=tables.TABLES, figures=figures.FIGURES,
                            compare=COMPARE):
    """Overwrite per compaction_readahead_size with buffered IO under a memory limit."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One turn's runs: readahead (bytes) and setting (its label), in the order given, the first the
        base. The protocol orders them per turn (the base twice) and adds rep (the turn) and copy."""
        rows = [{"readahead": ra, "setting": size_label(ra)} for ra in params.compaction_readahead_size]
        return pd.DataFrame(rows, columns=["readahead", "setting"])

    def setup(self, ctx: RunContext) -> None:
        base, ctx.state["db"] = ctx.path("readahead-base"), ctx.path("readahead-db")
        ctx.state["base"] = base
        ctx.state["load"] = load_db(ctx.params, ctx.settings, base, ctx.run_name("load"), ctx.root)

    def describe(self, row) -> str:
        return f"turn {row.rep} compaction_readahead_size={row.setting}{' (A/A)' if row.copy else ''}"

    def run_one(self, ctx: RunContext, row):
        p: Params = ctx.params
        s: Settings = ctx.settings
        db = ctx.state["db"]
        copy_db(ctx.state["base"], db)
        how = evict(db, s.drop_caches)
        # every run of a turn writes the same keys, the A/A copy too: the pair differs only in when it ran
        name = ctx.run_name(f"r{row.rep}{'a' if row.copy else ''}", f"crs{row.readahead}")
        spec = run_spec(p, s, db, name=name, steps=[{"name": "overwrite", "duration": s.duration}],
                        readahead=int(row.readahead), existing=True, seed=1000 * (row.rep + 1))
        meta = {"study": ctx.id, "rep": int(row.rep), "copy": int(row.copy), "readahead": int(row.readahead),
                "evicted": how, "memory_limit": s.memory_limit, "max_sectors_kb": s.device.max_sectors_kb,
                "max_hw_sectors_kb": s.device.max_hw_sectors_kb, "read_ahead_kb": s.read_ahead_kb,
                "load_run": ctx.state["load"].name}
        return run_child(spec, ctx.root, meta=meta, limit=s.memory_limit, support=s.cgroup, work=ctx.work)

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """One row per overwrite step of the catalog's readahead-<study>-r<turn>[a]-crs<bytes> runs, keys
        first (copy 1: the base's A/A second run; the load run and runs of other studies dropped)."""
        cat, m = match_runs(cat, _NAME_RE,
                            lambda c, _: c.get("benchmark", c["name"]).astype(str) == "overwrite")
        if cat.empty:
            return pd.DataFrame(columns=[*KEYS, *DERIVED])
        crs = m["crs"].astype(int)
        keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int),
                             "copy": (m["copy"] == "a").astype(int), "readahead": crs,
                             "setting": crs.map(size_label)}, index=cat.index)
        return tidy_frame(keys, cat, derived(cat), first=KEYS, sort=["study", "rep", "copy", "readahead"])

    def complete(self, frame: pd.DataFrame) -> bool:
        """The first turn ran every setting (later turns may leave out one already resolved; a study
        stored before manifests has no other mark)."""
        if frame.empty:
            return False
        first = frame.loc[frame["rep"] == frame["rep"].min(), "readahead"]
        return set(first) == set(frame["readahead"])

    def findings(self, result: ReadaheadResult) -> str:
        return findings.findings(result)

    def live_table(self, result: ReadaheadResult) -> pd.DataFrame:
        cols = ["rep", "copy", "setting", "qps", "rmbps", "reqsz", "cache.hit", "stall.pct"]
        return result.frame[[c for c in cols if c in result.frame.columns]].tail(12)
