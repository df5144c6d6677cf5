"""The model's input rows: checked in one line naming the gap, and the columns every term reads.

`prepare` validates step rows (the seeds' columns, or raw counters converted
by rxlab.core.metrics) and fills what older or published rows lack (runqPer,
awayShare, stealPer as 0); `fio_baselines` averages the fio rows per
(threads, delay_us); `with_efficiency` sets each RocksDB row against its own
baseline (io.eff, cpu.inc, the matched fio device latency).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import metrics

_DB_REQUIRED = ("qps", "iops", "reqsz", "usPer", "cpuPer", "test")
RUNQ = "runqPer"  # us per op waiting for a CPU (rxlab.core.metrics); 0 where a row does not carry it
AWAY = "awayShare"  # share of reads woken away from the interrupt's CPU (rxlab.core.metrics); 0 where absent
STEAL = "stealPer"  # us per op of the hypervisor's steal, every vCPU (rxlab.core.metrics); 0 where absent
RUNQ_COUNTED = "_runq"  # runqPer when the model counts it (runq=True), else 0: a working column
_FIO_REQUIRED = ("iops", "usPer", "cpuPer", "rx.lat")
KEYS = ("threads", "delay_us")
CARRY = ("backend", "bloom", "block_align")


def fail(msg: str):
    """The one-line error of bad model input."""
    raise ValueError(f"model input: {msg}")


def is_fio(df: pd.DataFrame) -> pd.Series:
    """fio rows, as the model tells them: a tool name containing "fio"."""
    return df["tool"].astype(str).str.contains("fio", case=False)


def prepare(df, require_baseline: bool = True, need_fio: bool = True, runq: bool = False,
            device: str = "curve") -> pd.DataFrame:
    """Validate step rows and add the model's derived columns; fail on one line naming the gap."""
    if not isinstance(df, pd.DataFrame):
        fail(f"expected a pandas DataFrame of step rows, got {type(df).__name__}")
    if df.empty:
        fail("empty frame (no rows)")
    df = df.copy()
    if not set(metrics.SEED_COLUMNS) - {"test"} <= set(df.columns) and {"ops", "wall_s"} <= set(df.columns):
        derived = metrics.seed_columns(df)  # raw step counters: the seeds' columns come from metrics only
        for c in derived.columns:
            if c not in df.columns:
                df[c] = derived[c]
        if "test" not in df.columns and "name" in df.columns:
            df["test"] = df["name"].astype(str)
    missing = [c for c in ("tool", *KEYS) if c not in df.columns]
    if missing:
        fail(f"missing column(s) {', '.join(missing)}")
    fio_mask = is_fio(df)
    fio, db = df[fio_mask], df[~fio_mask]
    if db.empty:
        fail("no RocksDB rows (every row has a fio tool)")
    if fio.empty and need_fio:
        fail("no fio baseline rows (tool containing 'fio')")
    for part, rows, req in (("RocksDB", db, _DB_REQUIRED), ("fio", fio, _FIO_REQUIRED)):
        if rows.empty:
            continue
        missing = [c for c in req if c not in rows.columns]
        if missing:
            fail(f"missing column(s) {', '.join(missing)} for the {part} rows")
        for c in (*KEYS, *(c for c in req if c != "test")):
            v = pd.to_numeric(rows[c], errors="coerce")
            bad = v.isna() | ~np.isfinite(v.to_numpy(dtype=float))
            if bad.any():
                fail(f"column {c} is missing or not a number in {int(bad.sum())} {part} row(s) "
                      f"(first index {bad[bad].index[0]!r})")
    for c in ("qps", "cpuPer"):
        if (pd.to_numeric(db[c]) <= 0).any():
            fail(f"column {c} must be > 0 in the RocksDB rows")
    if (pd.to_numeric(df["threads"]) < 1).any():
        fail("column threads must be >= 1")
    if not fio.empty and ((pd.to_numeric(fio["rx.lat"]) - pd.to_numeric(fio["cpuPer"])) <= 0).any():
        fail("fio rows with rx.lat <= cpuPer leave no device latency (is rx.lat fio's mean latency in us?)")
    if device == "iostat":
        io_lat = pd.to_numeric(df["io.lat"], errors="coerce") if "io.lat" in df.columns else None
        bad = (pd.Series(True, index=df.index) if io_lat is None
               else io_lat.isna() | ~np.isfinite(io_lat.to_numpy(dtype=float)) | (io_lat <= 0))
        if bad.any():
            fail(f"device='iostat' needs io.lat (iostat's read latency, us) > 0 in every row; "
                  f"{int(bad.sum())} row(s) lack it (first index {bad[bad].index[0]!r}; "
                  "the seeds' fio rows do not publish it)")
    if RUNQ in df.columns and (pd.to_numeric(df[RUNQ], errors="coerce") < 0).any():
        fail(f"column {RUNQ} (us per op waiting for a CPU) must be >= 0")
    for c in {*KEYS, *_DB_REQUIRED, *_FIO_REQUIRED, "rx.lat", "io.lat"} - {"test"}:
        if c in df.columns:
            df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    if RUNQ not in df.columns and {"worker_run_delay_s", "ops"} <= set(df.columns):
        df[RUNQ] = metrics.seed_columns(df)[RUNQ]
    measured_runq = (pd.to_numeric(df[RUNQ], errors="coerce") if RUNQ in df.columns
                     else pd.Series(np.nan, index=df.index))
    df[RUNQ] = measured_runq.fillna(0.0).astype(float)
    df[RUNQ_COUNTED] = df[RUNQ] if runq else 0.0
    absent = pd.Series(np.nan, index=df.index)
    away = pd.to_numeric(df[AWAY], errors="coerce") if AWAY in df.columns else absent
    if ((away < 0) | (away > 1)).any():
        fail(f"column {AWAY} (share of reads woken away from the interrupt's CPU) must be within 0..1")
    df[AWAY] = away.fillna(0.0).astype(float)
    steal = pd.to_numeric(df[STEAL], errors="coerce") if STEAL in df.columns else absent
    if (steal < 0).any():
        fail(f"column {STEAL} (us per op of the hypervisor's steal) must be >= 0")
    df[STEAL] = steal.fillna(0.0).astype(float)
    df["_fio"] = fio_mask
    base = df["baseline"] if "baseline" in df.columns else pd.Series(True, index=df.index)
    df["_baseline"] = fio_mask & base.fillna(True).astype(bool)
    if fio_mask.any() and not df["_baseline"].any() and need_fio:
        fail("no fio baseline rows (every fio row has baseline=False)")
    if require_baseline:
        have = set(map(tuple, df.loc[df["_baseline"], list(KEYS)].to_numpy()))
        for key, n in df.loc[~fio_mask].groupby(list(KEYS)).size().items():
            if tuple(map(float, key)) not in have:
                fail(f"no fio baseline for threads={key[0]:g}, delay_us={key[1]:g} "
                      f"(needed by {n} RocksDB row(s))")
    return df


def fio_baselines(df: pd.DataFrame) -> pd.DataFrame:
    """Mean fio baseline row per (threads, delay_us): iops, usPer, cpuPer, runqPer, awayShare, lat
    and device = lat - cpuPer - runqPer (what is neither on nor waiting for a CPU). Rows with
    baseline=False (a run pinned away from the interrupt's CPU) inform the fit, not the baseline."""
    fio = df[df["_baseline"]]
    cols = ["iops", "usPer", "cpuPer", RUNQ_COUNTED, AWAY, STEAL, "rx.lat",
            *(["io.lat"] if "io.lat" in fio.columns else [])]
    b = fio.groupby(list(KEYS))[cols].mean()
    b["device_us"] = b["rx.lat"] - b["cpuPer"] - b[RUNQ_COUNTED]
    return b


def with_efficiency(df: pd.DataFrame, base: pd.DataFrame) -> pd.DataFrame:
    """RocksDB rows with io.eff / us.inc / cpu.inc from rxlab.core.metrics against their own baseline,
    plus reads_per_query, the matched fio device latency and the measured latency per query."""
    db = df[~df["_fio"]]
    parts = []
    for raw_key, rows in db.groupby(list(KEYS)):
        key = tuple(map(float, raw_key))
        if key not in base.index:
            fail(f"no fio baseline for threads={key[0]:g}, delay_us={key[1]:g} (needed by {len(rows)} rows)")
        b = base.loc[key]
        e = metrics.efficiency(rows[["qps", "iops", "usPer", "cpuPer"]],
                               {"iops": b["iops"], "usPer": b["usPer"], "cpuPer": b["cpuPer"]})
        kept = rows.drop(columns=[c for c in metrics.EFFICIENCY_COLUMNS if c in rows.columns])
        parts.append(kept.assign(**{c: e[c] for c in metrics.EFFICIENCY_COLUMNS},
                                 fio_device_us=b["device_us"], fio_cpuPer=b["cpuPer"],
                                 fio_runqPer=b[RUNQ_COUNTED], fio_awayShare=b[AWAY],
                                 fio_stealPer=b[STEAL],
                                 fio_io_lat=b.get("io.lat", np.nan),
                                 fio_iops=b["iops"]))
    out = pd.concat(parts).loc[db.index]
    if "reads_per_query" not in out.columns:
        out["reads_per_query"] = pd.to_numeric(out["iops"]) / pd.to_numeric(out["qps"])
    out["lat_meas_us"] = out["threads"] * 1e6 / pd.to_numeric(out["qps"])
    return out

