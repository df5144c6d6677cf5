"""A tuning study's result: its tidy frame, the configurations it holds, its read rows against fio."""
from __future__ import annotations

import pandas as pd

from rxlab.core import metrics
from rxlab.core.study import StudyResult
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS

__all__ = ["DB_TOOL", "FIO_TOOL", "TuningResult", "read_rows"]

FIO_TOOL, DB_TOOL = "rxlab-fio", "rocksdb"


class TuningResult(StudyResult):
    """frame: one row per fio run (its total) and per read run: study, rep (the turn), copy (1: the
    seed's A/A second run), tool, config, test, threads, delay_us, run_id, raw columns, the seeds'
    columns, and host_cpuPer."""

    @property
    def configs(self) -> list[str]:
        """The configurations read, the ladder's order then the side ones."""
        have = set(self.frame.loc[self.frame["tool"] == DB_TOOL, "config"])
        return [c for c in CONFIGS if c in have]


def read_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The read runs of a frame with io.eff, us.inc and cpu.inc against their own turn's fio
    (rxlab.core.metrics.efficiency), and reads per query. A turn without its fio is an error: its
    io.eff would have no denominator."""
    fio, db = frame[frame["tool"] == FIO_TOOL], frame[frame["tool"] == DB_TOOL]
    if db.empty:
        return db.assign(**dict.fromkeys((*metrics.EFFICIENCY_COLUMNS, "reads_per_query"), float("nan")))
    parts = []
    for (study, rep), g in db.groupby(["study", "rep"]):
        b = fio[(fio["study"] == study) & (fio["rep"] == rep)]
        if b.empty:
            raise ValueError(f"study {study}: turn {rep} has no fio baseline")
        # the turn's first fio (a resumed turn may hold a second)
        base = b.sort_values("run_id").iloc[[0]][["iops", "usPer", "cpuPer"]]
        eff = metrics.efficiency(g[["qps", "iops", "usPer", "cpuPer"]], base)
        parts.append(g.assign(**{c: eff[c] for c in metrics.EFFICIENCY_COLUMNS}))
    out = pd.concat(parts).sort_index()
    out["reads_per_query"] = out["iops"] / out["qps"]
    return out
