"""fio's baseline beside RocksDB's reads: the seed's columns, and whether the device was quiet.

The device's counters (/proc/diskstats, as iostat's in the seed) are
device-wide: `background_io` compares the reads the measured program issued
with those the device served, and `background_lines` says so in findings.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.bench.ioeff.names import DB_TOOL, FIO_TOOL, SEED_TESTS
from rxlab.bench.ioeff.result import IoEfficiencyResult
from rxlab.core import metrics

__all__ = ["BACKGROUND_LIMIT_PCT", "DB_COLUMNS", "background_io", "background_lines", "value_range"]

DB_COLUMNS = metrics.SEED_COLUMNS      # qps iops reqsz usPer syPer cpuPer rx.lat io.lat test
# More reads served by the device than the measured program issued, in %, above which the device-wide
# counters (iops, io.eff, reqsz, io.lat) are said to include another process's IO.
BACKGROUND_LIMIT_PCT = 5.0


def background_io(*results: IoEfficiencyResult | None) -> pd.DataFrame:
    """Reads issued by the measured program against reads served by the device, per run.

    fio rows: the reads fio issued per second (its qps); RocksDB rows (the
    seed's read tests, rxlab engines only): the reads the backend counted
    in-process (fs.reads) per second. device_reads_per_s is iops, from
    /proc/diskstats. The device counters are device-wide, as iostat's are in
    the seed: another process reading the same disk during a run is counted
    as the run's, and excess_pct > 0 says by how much. (RocksDB's block cache
    hits make its own reads slightly fewer than its queries; the backend's
    counter sees exactly what reached the file system.)
    """
    parts = []
    for r in results:
        if r is None:
            continue
        f = r.frame
        fio = f[f["tool"] == FIO_TOOL]
        db = f[(f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS)]
        own_db = (pd.to_numeric(db["fs.reads"]) if "fs.reads" in db.columns
                  else pd.Series(np.nan, index=db.index)) / pd.to_numeric(db["wall_s"])
        for rows, own in ((fio, pd.to_numeric(fio["qps"])), (db, own_db)):
            out = rows[["study", "rep", "tool", "threads", "block_align", "delay_us", "test"]].copy()
            out["own_reads_per_s"] = own
            out["device_reads_per_s"] = pd.to_numeric(rows["iops"])
            parts.append(out)
    out = pd.concat(parts, ignore_index=True)
    out["excess_pct"] = (out["device_reads_per_s"] / out["own_reads_per_s"] - 1.0) * 100.0
    return out


def value_range(s: pd.Series, fmt: str) -> str:
    """"lo to hi" (or one value) of a column, formatted; "n/a" when it holds no number."""
    s = pd.to_numeric(s, errors="coerce").dropna()
    if s.empty:
        return "n/a"
    lo, hi = format(s.min(), fmt), format(s.max(), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def background_lines(background: pd.DataFrame | None) -> list[str]:
    """A caution when the device served more reads than the measured program issued, else that it
    was quiet ([] without the check's numbers)."""
    if background is None or background["excess_pct"].isna().all():
        return []
    worst = float(background["excess_pct"].max())
    if worst > BACKGROUND_LIMIT_PCT:
        return [f"- **Caution**: during these runs the device served up to {worst:.0f}% more reads than the "
                "measured program issued (`background_io`): another process was using this disk. iops, "
                "io.eff, reqsz and io.lat come from device-wide counters (as iostat's do in the seed) and "
                "include that IO; rerun on a quiet machine before drawing conclusions from them."]
    return [f"- The device was quiet: it served at most {max(worst, 0):.1f}% more reads than the measured "
            "program issued."]
