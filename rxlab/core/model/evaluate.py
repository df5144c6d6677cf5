"""Using a fitted model: held-out evaluation (`evaluate`), where a query's time goes (`latency_gap`) and
io.eff against device latency and RocksDB CPU, the seed's two bullets (`sensitivity`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rxlab.core.model.fit import ModelFit, fit, runq_for
from rxlab.core.model.rows import (
    AWAY,
    CARRY,
    RUNQ,
    RUNQ_COUNTED,
    fail,
    fio_baselines,
    prepare,
    with_efficiency,
)
from rxlab.core.model.seed import DEFAULT_BS_KIB, seed_fio, seed_model
from rxlab.core.model.terms import DEVICES, NEUTRAL, query_latency


@dataclass
class Evaluation:
    """Held-out predictions: rows (per RocksDB row not fitted on), summary (max/median |error|), fit."""

    rows: pd.DataFrame
    summary: pd.DataFrame
    fit: ModelFit


def _seed_prediction(rows: pd.DataFrame) -> pd.Series:
    """The seed's model on a row: threads * 1e6 / (fio lat - fio cpuPer + fio cpuPer + cpu.inc).
    The seed's device term is all of fio's non-CPU time, its wait for a CPU included."""
    seed_device = (rows["fio_device_us"] + rows["fio_runqPer"]).to_numpy(float)
    return pd.Series(seed_model(rows["cpu.inc"].to_numpy(float), seed_device,
                                rows["fio_cpuPer"].to_numpy(float), rows["threads"].to_numpy(float)),
                     index=rows.index)


def evaluate(df: pd.DataFrame, fit_on, **fit_kwargs) -> Evaluation:
    """Fit on the RocksDB rows selected by `fit_on` and predict the others.

    fit_on: a boolean mask aligned with `df` (array or Series). fio rows are
    baselines, measured beside every configuration, so they are always in
    the fit whatever the mask says. rows holds, per held-out RocksDB row,
    measured and predicted qps and iops with error %, and the seed's own
    model (`seed_iops_pred`, `seed_err_iops_pct`: predicted IOPS against
    measured iops, as the seed compares). summary: for each model the
    number of rows and the max and median absolute error %.
    """
    device = fit_kwargs.get("device", "curve")
    if device not in DEVICES:
        raise ValueError(f"device={device!r}: choose one of {', '.join(map(repr, DEVICES))}")
    d = prepare(df, runq=runq_for(device, fit_kwargs.get("runq")), device=device)
    if isinstance(fit_on, pd.Series):
        mask = fit_on.reindex(d.index).fillna(False).astype(bool)
    else:
        arr = np.asarray(fit_on, dtype=bool)
        if arr.shape != (len(d),):
            fail(f"fit_on has {arr.size} entries for {len(d)} rows")
        mask = pd.Series(arr, index=d.index)
    train = d[d["_fio"] | mask].drop(columns="_fio")
    test = d[~d["_fio"] & ~mask]
    if test.empty:
        fail("fit_on selects every RocksDB row: nothing is held out")
    if not (~train["tool"].astype(str).str.contains("fio", case=False)).any():
        fail("fit_on selects no RocksDB row to fit on")
    f = fit(train, **fit_kwargs)
    pred = f.predict(pd.concat([test, d[d["_fio"]]]).drop(columns="_fio"))
    rows = with_efficiency(d, fio_baselines(d)).loc[test.index]  # the seed's model adds fio_runqPer back
    pred["seed_iops_pred"] = _seed_prediction(rows)
    pred["seed_err_iops_pct"] = (pred["seed_iops_pred"] / pred["iops"] - 1.0) * 100.0
    summ = []
    for model, col in (("fitted (qps)", "err_qps_pct"), ("fitted (iops)", "err_iops_pct"),
                       ("seed (iops)", "seed_err_iops_pct")):
        a = pred[col].abs()
        summ.append({"model": model, "rows": int(a.size), "max_abs_err_pct": float(a.max()),
                     "median_abs_err_pct": float(a.median())})
    return Evaluation(rows=pred, summary=pd.DataFrame(summ), fit=f)


# --------------------------------------------------------------------------- diagnostics, sensitivity

def latency_gap(df: pd.DataFrame, runq: bool = False) -> pd.DataFrame:
    """Where the time of a query goes, per RocksDB row, from measured columns only.

    Columns: lat_meas_us (threads * 1e6 / qps), rx.lat, io.lat, the gap
    rx.lat - io.lat (the seed's "~20 us"), cpuPer, runqPer (the wait for a
    CPU; 0 where not measured), reads_per_query, the fio device latency
    (lat - cpuPer), and `unexplained_us` = lat_meas - (cpuPer +
    reads_per_query * fio device): what the seed's model misses and the
    fitted wait term absorbs (about 10 us in every seed row). runq=True
    counts runqPer as explained, in RocksDB's latency and out of fio's device.
    fio_io.lat is iostat's read latency under the matched fio baseline and
    `io_lat_excess_us` = io.lat - fio_io.lat: how much slower the disk
    itself was under RocksDB's reads (NaN where fio's io.lat is unknown).
    awayShare and fio_awayShare: the share of reads whose reader was woken away from the
    interrupt's CPU, in the row and in its fio baseline (0 where not measured).
    """
    d = prepare(df, runq=runq)
    rows = with_efficiency(d, fio_baselines(d))
    keep = [c for c in ("test", "threads", "delay_us", *CARRY) if c in rows.columns]
    out = rows[keep].copy()
    out["lat_meas_us"] = rows["lat_meas_us"]
    for c in ("rx.lat", "io.lat", "cpuPer"):
        out[c] = pd.to_numeric(rows[c]) if c in rows.columns else np.nan
    out["rx_minus_io_us"] = out["rx.lat"] - out["io.lat"]
    out[RUNQ] = rows[RUNQ]
    out["reads_per_query"] = rows["reads_per_query"]
    out["fio_device_us"] = rows["fio_device_us"]
    out["fio_io.lat"] = pd.to_numeric(rows["fio_io_lat"])
    out["io_lat_excess_us"] = out["io.lat"] - out["fio_io.lat"]
    out[AWAY] = rows[AWAY]
    out["fio_awayShare"] = rows["fio_awayShare"]
    explained = out["cpuPer"] + rows[RUNQ_COUNTED] + out["reads_per_query"] * out["fio_device_us"]
    out["unexplained_us"] = out["lat_meas_us"] - explained
    return out


def sensitivity(params=None, device_latency_us=None, cpu_per_query_us=(6.534, 8.330, 10.0),
                *, threads: int = 1, libc_kernel_us: float | None = None, reads_per_query: float = 1.0,
                reqsz_kib: float | None = None) -> pd.DataFrame:
    """io.eff as a function of device latency and of RocksDB CPU per query (the seed's two bullets).

    params: a ModelFit, a mapping of PARAMS values, or None (the seed's model
    only). device_latency_us: the device term (us per read, non-CPU);
    cpu_per_query_us: RocksDB CPU per query above fio's (cpu.inc). fio's own
    latency is libc_kernel_us + device, so io.eff = RocksDB iops / fio iops
    = reads_per_query * (libc_kernel + device) / latency per query. For the
    seed's model (one read per query, nothing else) that is (libc_kernel +
    device) / (libc_kernel + cpu + device). libc_kernel_us defaults to the
    fitted fio cpuPer at `threads` (the seed's 10.916 without a fit).
    Defaults: device latency 20 to 400 us (a fast virtual disk's tens of us to twice the
    seed's 91 and beyond), CPU the seed's 6.534 and 8.330 us and 10 us.
    The fitted curves are for a quiet host: no steal (stealPer 0) and every read
    woken on the interrupt's CPU (awayShare 0); measured rows carry their own.
    Returns a tidy frame, one row per (model, device latency, cpu):
    model, threads, device_latency_us, cpu_per_query_us, libc_kernel_us,
    reads_per_query, lat_us, iops, fio_iops, io.eff.
    """
    if device_latency_us is None:
        device_latency_us = np.linspace(20.0, 400.0, 39)
    dev, cpu = np.meshgrid(np.atleast_1d(np.asarray(device_latency_us, float)),
                           np.atleast_1d(np.asarray(cpu_per_query_us, float)), indexing="ij")
    dev, cpu = dev.ravel(), cpu.ravel()
    bs = DEFAULT_BS_KIB
    if isinstance(params, ModelFit):
        bs = params.bs_kib
        if libc_kernel_us is None:
            b = params.baselines.reset_index()
            at = b[b["threads"] == threads]
            libc_kernel_us = float((at if len(at) else b)["cpuPer"].mean())
        p = dict(params.params)
    elif params is not None:
        p = {**NEUTRAL, "wait_us": 0.0, **dict(params)}
    if libc_kernel_us is None:
        libc_kernel_us = float(seed_fio(1)["cpuPer"])
    reqsz = bs if reqsz_kib is None else reqsz_kib
    models = [("seed", None)] + ([("fitted", p)] if params is not None else [])
    out = []
    for name, q in models:
        if q is None:
            r = 1.0
            lat = libc_kernel_us + cpu + dev
        else:
            r = reads_per_query
            lat = query_latency(q, libc_kernel_us + cpu, r, reqsz, threads, delay=0.0, bs_kib=bs, device=dev)
        fio_iops = threads * 1e6 / (libc_kernel_us + dev)
        iops = r * threads * 1e6 / lat
        out.append(pd.DataFrame({"model": name, "threads": threads, "device_latency_us": dev,
                                 "cpu_per_query_us": cpu, "libc_kernel_us": libc_kernel_us,
                                 "reads_per_query": r, "lat_us": lat, "iops": iops, "fio_iops": fio_iops,
                                 "io.eff": iops / fio_iops}))
    return pd.concat(out, ignore_index=True)
