"""An async IO study's result: its tidy frame of read steps, and the DB its build run left."""
from __future__ import annotations

import json
from functools import cached_property

import pandas as pd

from rxlab.core import store
from rxlab.core.study import StudyResult

__all__ = ["STRUCTURE_FILE", "AsyncIOResult"]

STRUCTURE_FILE = "db_structure.json"   # the build run's attachment: level, file, size_bytes per SST
STRUCTURE_COLUMNS = ["level", "file", "size_bytes"]


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
