"""Fitting the model: least squares on the fio and RocksDB rows together, holding what the rows cannot
identify, with Jacobian and bootstrap standard errors (`fit`, `ModelFit`)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from rxlab.core.model.rows import (
    AWAY,
    CARRY,
    KEYS,
    RUNQ,
    RUNQ_COUNTED,
    STEAL,
    fio_baselines,
    prepare,
    with_efficiency,
)
from rxlab.core.model.seed import DEFAULT_BS_KIB
from rxlab.core.model.terms import (
    DEVICES,
    NEUTRAL,
    PARAMS,
    device_latency,
    query_latency,
    remote_cost,
)

_CURVE_ONLY = ("dev_1_us", "dev_per_thread_us")
_IOSTAT_ONLY = ("overlap_us", "overlap_per_thread_us")
# remote_us is fitted only where the rows' awayShare spans at least this much (e.g. a fio run
# pinned away from the interrupt's CPU beside the baseline's, which stays on it).
AWAY_SPREAD = 0.3
# The size penalty is fitted only where reqsz spans at least this many KiB (block_align off, or
# fio reading bs=8704 at 512-byte offsets beside the baseline).
SIZE_SPREAD_KIB = 0.1
# steal_factor is fitted only where the rows' stealPer spans at least this many us per op.
STEAL_SPREAD_US = 2.0


@dataclass
class ModelFit:
    """A fitted model: parameters with standard errors, and what it was fitted on.

    params: every parameter (fitted or held); rms_rel: root mean square of
    the RocksDB rows' relative latency misses; stderr: from the Jacobian
    (s^2 (J'J)^-1, NaN for held parameters or without residual degrees of
    freedom); stderr_boot: bootstrap standard deviation when asked for;
    free / held: which parameters the data identified, and why the others
    were held (held maps name -> reason); components: per configuration
    (backend, test, block_align, threads, delay_us) the measured components
    (RocksDB CPU per query cpu.inc, reads per query, reqsz) with standard
    errors of the mean; baselines: the fio rows per (threads, delay_us).
    """

    params: pd.Series
    stderr: pd.Series
    free: list[str]
    held: dict[str, str]
    components: pd.DataFrame
    baselines: pd.DataFrame
    n_fio: int
    n_db: int
    rms_rel: float
    bs_kib: float = DEFAULT_BS_KIB
    device: str = "curve"
    stderr_boot: pd.Series | None = None
    cov: pd.DataFrame | None = field(default=None, repr=False)
    runq: bool = False

    def predict(self, df: pd.DataFrame) -> pd.DataFrame:
        """Predicted latency, qps, iops and io.eff for the RocksDB rows of `df` (same index).

        Uses each row's measured cpuPer, reads per query and reqsz (the
        work a query does) and the fitted terms. Needs the fio baseline of
        each row's (threads, delay_us) in `df` or in the fitted data (for
        io.eff and device="baseline"). Measured qps/iops and error % come
        along where the row has them.
        """
        d = prepare(df, require_baseline=False, need_fio=False, runq=self.runq, device=self.device)
        base = fio_baselines(d) if d["_baseline"].any() else self.baselines
        base = pd.concat([base, self.baselines[~self.baselines.index.isin(base.index)]])
        rows = with_efficiency(d, base)
        p = self.params
        dev = rows["fio_device_us"] if self.device == "baseline" else None
        io_lat = rows["io.lat"] if self.device == "iostat" else None
        lat = query_latency(p, rows["cpuPer"] + rows[RUNQ_COUNTED], rows["reads_per_query"], rows["reqsz"],
                       rows["threads"], delay=rows["delay_us"], bs_kib=self.bs_kib, device=dev, io_lat=io_lat,
                       away=rows[AWAY], device_away=rows["fio_awayShare"], steal=rows[STEAL],
                       device_steal=rows["fio_stealPer"])
        keep = [c for c in ("test", "threads", "delay_us", *CARRY) if c in rows.columns]
        out = rows[keep].copy()
        out["cpuPer"] = rows["cpuPer"]
        out[RUNQ] = rows[RUNQ]
        out["reads_per_query"] = rows["reads_per_query"]
        out[AWAY] = rows[AWAY]
        out["remote_wake_us"] = rows["reads_per_query"] * rows[AWAY] * remote_cost(p, rows["threads"])
        out[STEAL] = rows[STEAL]
        out["steal_us"] = p["steal_factor"] * rows[STEAL]
        out["device_us"] = (device_latency(p, rows["threads"], rows["delay_us"], io_lat) if dev is None
                            else dev)
        out["lat_pred_us"] = lat
        out["qps_pred"] = rows["threads"] * 1e6 / lat
        out["iops_pred"] = out["qps_pred"] * rows["reads_per_query"]
        out["io.eff_pred"] = out["iops_pred"] / rows["fio_iops"]
        out["lat_meas_us"] = rows["lat_meas_us"]
        out["qps"] = pd.to_numeric(rows["qps"])
        out["iops"] = pd.to_numeric(rows["iops"])
        out["io.eff"] = rows["io.eff"]
        out["err_qps_pct"] = (out["qps_pred"] / out["qps"] - 1.0) * 100.0
        out["err_iops_pct"] = (out["iops_pred"] / out["iops"] - 1.0) * 100.0
        return out

    def summary(self) -> pd.DataFrame:
        """One row per component: value, stderr (Jacobian and bootstrap), unit, how it was obtained."""
        rows = []
        for name, unit in PARAMS.items():
            how = "fitted" if name in self.free else "held"
            rows.append({"component": name, "group": "", "value": self.params[name],
                         "stderr": self.stderr[name],
                         "stderr_boot": np.nan if self.stderr_boot is None else self.stderr_boot[name],
                         "unit": unit, "how": how, "note": self.held.get(name, "")})
        for _, c in self.components.iterrows():
            group = " ".join(f"{k}={c[k]:g}" if isinstance(c[k], float) else f"{k}={c[k]}"
                             for k in _CONFIG if k in c.index)
            for comp, unit in (("cpu_inc_us", "us per query (cpuPer - fio cpuPer)"),
                               ("reads_per_query", "device reads per query (iops / qps)"),
                               ("reqsz_kib", "KiB per device read")):
                rows.append({"component": comp, "group": group, "value": c[comp],
                             "stderr": c[f"{comp}_se"], "stderr_boot": np.nan, "unit": unit,
                             "how": "measured", "note": f"mean of {int(c['n'])} rows"})
        return pd.DataFrame(rows)


_CONFIG = ("backend", "test", "block_align", "threads", "delay_us")


def _components(rows: pd.DataFrame) -> pd.DataFrame:
    """Per configuration (backend, test, block_align, threads, delay_us: those present) mean and
    standard error of the measured components. Per configuration, not per test: cpu.inc grows
    with clients (the seed: 8.330 at one, 9.914 at six) and delay_us adds spin CPU."""
    by = [k for k in _CONFIG if k in rows.columns]
    r = rows.assign(cpu_inc_us=rows["cpu.inc"], reqsz_kib=pd.to_numeric(rows["reqsz"]))
    g = r.groupby(by, dropna=False)[["cpu_inc_us", "reads_per_query", "reqsz_kib"]]
    mean, sd, n = g.mean(), g.std(ddof=1), g.size()
    out = mean.copy()
    for c in mean.columns:
        out[f"{c}_se"] = sd[c] / np.sqrt(n)
    out["n"] = n
    return out.reset_index()


def _identifiable(fio: pd.DataFrame, db: pd.DataFrame,
                  device: str = "curve") -> tuple[list[str], dict[str, str]]:
    """Which parameters these rows can identify; the others with the reason they are held."""
    held = {}
    unused = _CURVE_ONLY if device == "iostat" else _IOSTAT_ONLY
    why = ("device='iostat': each row's own io.lat is its device term" if device == "iostat"
           else "used with device='iostat' only")
    held.update({q: why for q in unused})
    per_thread = "overlap_per_thread_us" if device == "iostat" else "dev_per_thread_us"
    if fio["threads"].nunique() < 2 and db["threads"].nunique() < 2:
        held[per_thread] = "one thread count: concurrency not varied"
    if not ((fio["delay_us"] > 0).any() or (db["delay_us"] > 0).any()):
        held["delay_offset_us"] = "no delay_us rows"
    sizes = pd.concat([pd.DataFrame({"reqsz": _fio_reqsz(fio), "threads": fio["threads"]}),
                       pd.DataFrame({"reqsz": pd.to_numeric(db["reqsz"]), "threads": db["threads"]})])
    size_spread = sizes.groupby("threads")["reqsz"].agg(lambda r: r.max() - r.min())
    if sizes["reqsz"].max() - sizes["reqsz"].min() < SIZE_SPREAD_KIB:
        held["size_penalty_us_per_kib"] = f"reqsz does not vary (< {SIZE_SPREAD_KIB:g} KiB)"
    if (size_spread >= SIZE_SPREAD_KIB).sum() < 2:
        held["size_penalty_per_thread_us_per_kib"] = (f"reqsz spans {SIZE_SPREAD_KIB:g} KiB or more at fewer "
                                                      "than two client counts")
    if db["threads"].nunique() < 2:
        held["wait_per_thread_us"] = "RocksDB rows at one thread count"
    rows = pd.concat([fio[[AWAY, "threads"]], db[[AWAY, "threads"]]])
    spread = rows.groupby("threads")[AWAY].agg(lambda a: a.max() - a.min())
    if spread.max() < AWAY_SPREAD:
        held["remote_us"] = (f"awayShare spans less than {AWAY_SPREAD:g} (no run with its reads woken "
                             "away from the interrupt's CPU)")
    if (spread >= AWAY_SPREAD).sum() < 2:
        held["remote_per_thread_us"] = (f"awayShare spans {AWAY_SPREAD:g} or more at fewer than two client "
                                        "counts")
    steal = pd.concat([fio[STEAL], db[STEAL]])
    if steal.max() - steal.min() < STEAL_SPREAD_US:
        held["steal_factor"] = (f"stealPer spans less than {STEAL_SPREAD_US:g} us per op "
                                "(the host left the VM alone)")
    return [p for p in PARAMS if p not in held], held


def _fio_reqsz(fio: pd.DataFrame, bs_kib: float = DEFAULT_BS_KIB) -> pd.Series:
    """KiB per read of fio rows: their measured reqsz, else bs (the published rows, older runs)."""
    rq = pd.to_numeric(fio["reqsz"], errors="coerce") if "reqsz" in fio.columns else None
    return (rq if rq is not None else pd.Series(np.nan, index=fio.index)).fillna(bs_kib).astype(float)


def _solve(fio, db, free, fixed, *, bs_kib, device, x0, weights=(1.0, 1.0)):
    """least_squares over the free parameters.

    Residuals are relative (a 1% miss at 40 us counts as at 400 us): fio rows
    (predicted / observed device latency - 1) then RocksDB rows (predicted /
    measured latency per query - 1), each kind multiplied by its weight.
    """
    t_f, d_f = fio["threads"].to_numpy(float), fio["delay_us"].to_numpy(float)
    dev_obs = (fio["rx.lat"] - fio["cpuPer"] - fio[RUNQ_COUNTED]).to_numpy(float)
    cols = {c: db[c].to_numpy(float) for c in ("cpuPer", RUNQ_COUNTED, "reads_per_query", "threads",
                                                 "delay_us", "lat_meas_us", "fio_device_us", AWAY,
                                                 "fio_awayShare", STEAL, "fio_stealPer")}
    away_f = fio[AWAY].to_numpy(float)
    steal_f = fio[STEAL].to_numpy(float)
    excess_f = _fio_reqsz(fio, bs_kib).to_numpy(float) - bs_kib
    reqsz = pd.to_numeric(db["reqsz"]).to_numpy(float)
    dev_override = cols["fio_device_us"] if device == "baseline" else None
    iostat = device == "iostat"
    io_f = fio["io.lat"].to_numpy(float) if iostat else None
    io_d = db["io.lat"].to_numpy(float) if iostat else None
    w_fio, w_db = weights

    def unpack(x):
        p = dict(fixed)
        p.update(zip(free, x, strict=True))
        return p

    def resid(x):
        p = unpack(x)
        dev_pred = device_latency(p, t_f, d_f, io_f, away_f, excess_f) + p["steal_factor"] * steal_f
        r_f = dev_pred / dev_obs - 1.0
        lat = query_latency(p, cols["cpuPer"] + cols[RUNQ_COUNTED], cols["reads_per_query"], reqsz,
                       cols["threads"], delay=cols["delay_us"], bs_kib=bs_kib, device=dev_override,
                       io_lat=io_d, away=cols[AWAY], device_away=cols["fio_awayShare"], steal=cols[STEAL],
                       device_steal=cols["fio_stealPer"])
        return np.concatenate([w_fio * r_f, w_db * (lat / cols["lat_meas_us"] - 1.0)])

    res = least_squares(resid, np.asarray(x0, float), x_scale="jac", method="trf")
    return res, unpack(res.x)


def _initial(fio: pd.DataFrame, device: str = "curve") -> dict[str, float]:
    """Starting values from the fio baseline rows (lowest-delay rows: a line in threads)."""
    base = fio[fio["_baseline"]] if "_baseline" in fio.columns else fio
    undelayed = base[base["delay_us"] == base["delay_us"].min()]
    dev = (undelayed["rx.lat"] - undelayed["cpuPer"] - undelayed[RUNQ_COUNTED]).to_numpy(float)
    t = undelayed["threads"].to_numpy(float)

    def line(y):
        if np.unique(t).size >= 2:
            slope, icpt = np.polyfit(t - 1.0, y, 1)
            return float(icpt), float(slope)
        return float(y.mean()), 0.0

    dev_1, dev_slope = line(dev)
    ovl_1, ovl_slope = line(undelayed["io.lat"].to_numpy(float) - dev) if device == "iostat" else (0.0, 0.0)
    return {"dev_1_us": dev_1, "dev_per_thread_us": dev_slope, "delay_offset_us": 30.0,
            "size_penalty_us_per_kib": 0.0, "size_penalty_per_thread_us_per_kib": 0.0, "wait_us": 0.0,
            "wait_per_thread_us": 0.0,
            "overlap_us": ovl_1, "overlap_per_thread_us": ovl_slope, "remote_us": 0.0,
            "remote_per_thread_us": 0.0, "steal_factor": 0.0}


def _fit_free(fio, db, free, held, start, *, bs_kib, device, weights):
    """Fit, holding any parameter the Jacobian shows the rows cannot pin down."""
    free, held = list(free), dict(held)
    while True:
        fixed = {p: (NEUTRAL[p] if p in held else start[p]) for p in PARAMS}
        res, p = _solve(fio, db, free, fixed, bs_kib=bs_kib, device=device, x0=[start[q] for q in free],
                        weights=weights)
        if not free:
            return res, p, free, held
        J = res.jac
        scale = np.linalg.norm(J, axis=0)
        if (scale == 0).any():
            worst = free[int(np.argmin(scale))]
        else:
            _, sv, vt = np.linalg.svd(J / scale, full_matrices=False)
            if sv[-1] > 1e-6 * sv[0]:
                return res, p, free, held
            # the parameter that dominates the direction of the smallest singular value
            worst = free[int(np.argmax(np.abs(vt[-1])))]
        held[worst] = "not identified by these rows (Jacobian rank deficient)"
        free = [q for q in free if q != worst]


def _kind_weights(fun: np.ndarray, n_fio: int, weights) -> tuple[float, float]:
    """1 / scatter of each kind of row, so neither the fio rows nor the RocksDB rows set the
    noise level of the other (their relative scatter differs: fio's device term is a difference).
    A kind with fewer than 3 rows, or none left over, takes the pooled scatter."""
    raw = np.concatenate([fun[:n_fio] / weights[0], fun[n_fio:] / weights[1]])
    pooled = float(np.sqrt(np.mean(raw ** 2))) or 1.0
    out = []
    for part in (raw[:n_fio], raw[n_fio:]):
        s = float(np.sqrt(np.mean(part ** 2))) if part.size >= 3 else 0.0
        out.append(1.0 / (s if s > 0.05 * pooled else pooled))
    return out[0], out[1]


def _fit_rows(fio, db, bs_kib, device):
    """Two passes: unweighted, then each kind of row weighted by its own scatter (feasible GLS)."""
    free, held = _identifiable(fio, db, device)
    start = _initial(fio, device)  # with device="baseline" only the fio rows inform the device curve
    weights = (1.0, 1.0)
    res, p, free, held = _fit_free(fio, db, free, held, start, bs_kib=bs_kib, device=device, weights=weights)
    weights = _kind_weights(res.fun, len(fio), weights)
    res, p, free, held = _fit_free(fio, db, free, held, {**start, **p}, bs_kib=bs_kib, device=device,
                                   weights=weights)
    return res, p, free, held, weights


def _resample(rows: pd.DataFrame, rng) -> pd.DataFrame:
    """Rows drawn with replacement within each (threads, delay_us) cell: the design is kept."""
    idx = [rng.choice(g.index.to_numpy(), len(g)) for _, g in rows.groupby(list(KEYS))]
    return rows.loc[np.concatenate(idx)]


def runq_for(device: str, runq: bool | None) -> bool:
    """runq=None: counted with device="iostat" (its wait for a CPU is outside iostat's window and
    differs between fio and RocksDB at two clients), not otherwise (rxlab.core.model's notes)."""
    return device == "iostat" if runq is None else bool(runq)


def fit(df: pd.DataFrame, *, bs_kib: float = DEFAULT_BS_KIB, device: str = "curve",
        n_boot: int = 0, random_state: int = 0, runq: bool | None = None) -> ModelFit:
    """Fit the model to step rows (RocksDB and fio baseline rows in one frame).

    device="curve" (default) predicts with the fitted device(threads, delay)
    curve, one model for all rows; device="baseline" uses each row's
    matching fio lat - cpuPer instead (the curve is still fitted and
    reported), for a device whose concurrency curve is not a line.
    device="iostat" takes each row's own io.lat (iostat's read latency,
    fio and RocksDB rows alike) less a fitted overlap (the reader's CPU
    inside iostat's window, a line in threads) as its device term: not a
    prediction from fio's device, but the test that nothing besides CPU,
    the wait for a CPU and the device's own latency is left in a query.
    Standard errors: s^2 (J'J)^-1 at the solution, J and s from the weighted
    relative residuals. n_boot > 0 adds bootstrap standard errors (rows
    resampled within each (threads, delay_us) cell, fio and RocksDB rows
    apart, refitted with the same free parameters and weights); with one
    row per cell they say nothing, so measure repetitions.
    runq=True counts each row's measured wait for a CPU (runqPer) beside its
    cpuPer, and takes it out of fio's device term (see rxlab.core.model's notes
    for why it is off by default); None: on with device="iostat" only.
    """
    if device not in DEVICES:
        raise ValueError(f"device={device!r}: choose one of {', '.join(map(repr, DEVICES))}")
    runq = runq_for(device, runq)
    d = prepare(df, runq=runq, device=device)
    base = fio_baselines(d)
    fio, db = d[d["_fio"]], with_efficiency(d, base)
    res, p, free, held, weights = _fit_rows(fio, db, bs_kib, device)
    n, k = res.fun.size, len(free)
    stderr = pd.Series(np.nan, index=list(PARAMS))
    cov = None
    if n > k and k:
        s2 = float(res.fun @ res.fun) / (n - k)
        c = np.linalg.pinv(res.jac.T @ res.jac) * s2
        stderr[free] = np.sqrt(np.diag(c))
        cov = pd.DataFrame(c, index=free, columns=free)
    boot = None
    if n_boot > 0:
        rng = np.random.default_rng(random_state)
        fixed = {q: p[q] for q in PARAMS}
        draws = [[pb[q] for q in PARAMS] for pb in
                 (_solve(_resample(fio, rng), _resample(db, rng), free, fixed, bs_kib=bs_kib, device=device,
                         x0=[p[q] for q in free], weights=weights)[1] for _ in range(n_boot))]
        boot = pd.Series(np.std(np.array(draws), axis=0, ddof=1), index=list(PARAMS))
        boot[[q for q in PARAMS if q not in free]] = np.nan
    raw = np.concatenate([res.fun[:len(fio)] / weights[0], res.fun[len(fio):] / weights[1]])
    return ModelFit(params=pd.Series(p)[list(PARAMS)], stderr=stderr, free=free, held=held,
                    components=_components(db), baselines=base, n_fio=len(fio), n_db=len(db),
                    rms_rel=float(np.sqrt(np.mean(raw[len(fio):] ** 2))), bs_kib=bs_kib, device=device,
                    stderr_boot=boot, cov=cov, runq=runq)

