"""An IO-efficiency study's result: its tidy frame, and the configurations it holds (the studies that
build on the seed's runs read them as this)."""
from __future__ import annotations

from rxlab.bench.ioeff.names import DB_TOOL, KEYS
from rxlab.core.study import StudyResult

__all__ = ["KEYS", "IoEfficiencyResult"]


class IoEfficiencyResult(StudyResult):
    """A study's runs (fio and RocksDB) and one tidy frame of their rows.

    frame: one row per RocksDB step and one per fio run (fio's total row),
    keyed by KEYS: study, rep, tool (rocksdb | rxlab-fio | rxlab-fio-away |
    rxlab-fio-unaligned), backend (without its delay), threads (the
    configuration's client count; fill steps ran with one, see
    `step_threads`), block_align (None for fio), delay_us, test (the step's
    name: the seed's test names, fio-sync for fio), run_id; then
    backend_uri, the raw step columns and the seeds' columns from
    rxlab.core.metrics.seed_columns.
    """

    @property
    def backend(self) -> str:
        b = self.frame["backend"].dropna().unique()
        return str(b[0]) if len(b) else ""

    @property
    def threads(self) -> list[int]:
        return sorted(int(t) for t in self.frame["threads"].unique())

    @property
    def block_align(self) -> list[bool]:
        """The block_align settings run, on first."""
        ba = self.frame.loc[self.frame["tool"] == DB_TOOL, "block_align"].dropna().unique()
        return sorted((bool(b) for b in ba), reverse=True)

    @property
    def delays(self) -> list[int]:
        return sorted(int(d) for d in self.frame["delay_us"].unique())

    @property
    def repeats(self) -> int:
        return int(self.frame["rep"].nunique())
