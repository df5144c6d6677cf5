"""An async IO study's result: its tidy frame of read steps, the DB its build run left, and what its turns
compared (computed once: every table, figure and finding reads them)."""
from __future__ import annotations

import dataclasses
import json
from functools import cached_property

import pandas as pd

from rxlab.core import store
from rxlab.core.study import StudyResult
from rxlab.core.turns_plan import Compare, result_comparisons
from rxlab.studies.async_io.params import COMPARE, EFFECTS

__all__ = ["STRUCTURE_FILE", "AsyncIOResult"]

STRUCTURE_FILE = "db_structure.json"   # the build run's attachment: level, file, size_bytes per SST
STRUCTURE_COLUMNS = ["level", "file", "size_bytes"]
EFFECT_COLUMNS = ["delay_us", "backend", "effect", "base", "config", "comparison", "ratio", "lo", "hi",
                  "half_width", "resolved", "turns", "status"]


class AsyncIOResult(StudyResult):
    """Frame keys: study, rep (the turn), copy (1: the base's A/A second run), backend (without the delay),
    delay_us, test, step (params.step_name), kind, batch_size, async_io, run_id, build_run (the run that
    loaded the DB); then the step's raw columns, the seeds' columns, db_bench's micros/op and MB/s, the
    overlap verdict."""

    @property
    def backends(self) -> list[str]:
        """The backends in the order they were given."""
        return list(dict.fromkeys(self.frame["backend"]))

    @property
    def delays(self) -> list[int]:
        return sorted(int(d) for d in self.frame["delay_us"].unique())

    @property
    def threads(self) -> int:
        """Client threads of the read steps."""
        return int(pd.to_numeric(self.frame["threads"]).iloc[0]) if len(self.frame) else 1

    @cached_property
    def structure(self) -> pd.DataFrame:
        """The DB's SST files (level, file, size_bytes), as its build run recorded them after compacting."""
        empty = pd.DataFrame(columns=STRUCTURE_COLUMNS)
        ids = self.frame["build_run"].dropna().unique() if "build_run" in self.frame.columns else []
        if not len(ids):
            return empty
        att = [p for p in store.load_run(ids[0], self.root).attachments if p.name == STRUCTURE_FILE]
        if not att:
            return empty
        return pd.DataFrame(json.loads(att[0].read_text()), columns=STRUCTURE_COLUMNS)

    @cached_property
    def comparisons(self) -> pd.DataFrame:
        """Per delay and read step, each backend's MB/s ratio to the delay's base with its 95% interval over
        turns, and the base's A/A row (params.COMPARE, rxlab.core.turns_plan)."""
        return result_comparisons(self, COMPARE)

    @cached_property
    def effects(self) -> pd.DataFrame:
        """Within each backend and delay, each effect's step over its base step (params.EFFECTS), paired by
        turn as the comparisons are, with the base backend's A/A row."""
        f = self.frame
        out = []
        for effect, (base, test) in EFFECTS.items():
            sel = f[(f["step"] == base) | (f["test"] == test)]
            if not (sel["step"] == base).any() or sel["step"].nunique() < 2:
                continue
            # the base step first: where a backend ran twice a turn, the first step of its copy 1 is the base
            sel = sel.sort_values("step", key=lambda s, b=base: s != b, kind="stable")
            cmp = Compare(config="step", metric=COMPARE.metric, base=base, groups=("delay_us", "backend"),
                          turn=COMPARE.turn, copy=COMPARE.copy)
            out.append(result_comparisons(dataclasses.replace(self, frame=sel), cmp).assign(effect=effect))
        return pd.concat(out, ignore_index=True)[EFFECT_COLUMNS] if out else pd.DataFrame(columns=EFFECT_COLUMNS)
