"""A tuning study's result: its tidy frame and the configurations it holds."""
from __future__ import annotations

from rxlab.core.study import StudyResult
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS

__all__ = ["DB_TOOL", "FIO_TOOL", "TuningResult"]

FIO_TOOL, DB_TOOL = "rxlab-fio", "rocksdb"


class TuningResult(StudyResult):
    """frame: one row per fio run (its total) and per read run: study, rep, tool, config, test,
    threads, delay_us, run_id, raw columns, the seeds' columns, and host_cpuPer."""

    @property
    def configs(self) -> list[str]:
        """The configurations read, the ladder's order then the side ones."""
        have = set(self.frame.loc[self.frame["tool"] == DB_TOOL, "config"])
        return [c for c in CONFIGS if c in have]
