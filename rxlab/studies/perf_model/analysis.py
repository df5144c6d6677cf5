"""The performance model against this machine's runs: the analysis of notebook 20.

The IO-efficiency study (notebook 10) stores fio's baseline and RocksDB's
read tests per repetition, thread count and delay; the model's rows come from
those runs (`model_rows`, rxlab.bench.ioeff); this module fits the seed's model and rxlab's
(`compare_models`), tests the fit on rows it was not fitted on (`held_out`,
judged per configuration by `config_errors`), measures how well the runs
repeat (`repeatability`, `agreement`, `steal_effect`) and computes the
seed's two sensitivity bullets from either model (`sensitivity_data`).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rxlab.bench.ioeff.model_rows import HELD_OUT_CONFIG, config_errors, model_rows
from rxlab.bench.ioeff.names import BLOCK_BYTES, DB_TOOL, FIO_TOOL, FIO_UNALIGNED_TOOL, SEED_TESTS
from rxlab.bench.ioeff.result import IoEfficiencyResult
from rxlab.core import metrics, model, published


def unaligned_cost(*results: IoEfficiencyResult | None) -> pd.DataFrame:
    """What reads without block_align cost, in fio and in RocksDB, per client count (undelayed).

    fio: its unaligned run (bs=8704 at 512-byte offsets) against its baseline (8 KiB aligned),
    medians over repetitions; RocksDB: block_align off against on, medians over the seed's
    three tests and the repetitions. Columns per threads and tool: reqsz_excess_kib (KiB per
    read above 8), lat_us and io_lat_us (extra latency per read: fio's lat, RocksDB's latency
    per query / reads per query; iostat's io.lat) and io_lat_us_per_kib. Empty without the
    unaligned runs or without both block_align settings.
    """
    rows = model_rows(*results, unaligned=True)
    rows = rows[rows["delay_us"] == 0].copy()
    rows["lat"] = pd.to_numeric(rows["rx.lat"])
    db = rows["tool"] == DB_TOOL
    rows.loc[db, "lat"] = rows.loc[db, "threads"] * 1e6 / pd.to_numeric(rows.loc[db, "iops"])  # per read
    cols = ["reqsz", "lat", "io.lat"]
    out = []
    for t in sorted(rows["threads"].unique()):
        at = rows[rows["threads"] == t]
        at_db = at[at["tool"] == DB_TOOL]
        aligned = at_db["block_align"].astype(bool)
        pairs = [("fio", at[at["tool"] == FIO_UNALIGNED_TOOL], at[at["tool"] == FIO_TOOL]),
                 ("rocksdb", at_db[~aligned], at_db[aligned])]
        for tool, off, on in pairs:
            if off.empty or on.empty:
                continue
            d = off[cols].apply(pd.to_numeric).median() - on[cols].apply(pd.to_numeric).median()
            excess = float(pd.to_numeric(off["reqsz"]).median()) - BLOCK_BYTES / 1024
            out.append({"threads": int(t), "tool": tool, "reqsz_excess_kib": excess, "lat_us": d["lat"],
                        "io_lat_us": d["io.lat"],
                        "io_lat_us_per_kib": d["io.lat"] / excess if excess > 0.05 else np.nan})
    return pd.DataFrame(out, columns=["threads", "tool", "reqsz_excess_kib", "lat_us", "io_lat_us",
                                      "io_lat_us_per_kib"])


def _fio_mask(rows: pd.DataFrame) -> pd.Series:
    """fio rows, as rxlab.core.model tells them: a tool name containing "fio"."""
    return rows["tool"].astype(str).str.contains("fio", case=False)


def _baseline_mask(rows: pd.DataFrame) -> pd.Series:
    """fio rows that are io.eff's denominator (not the placed or unaligned runs beside them)."""
    base = rows["baseline"].fillna(True).astype(bool) if "baseline" in rows.columns else True
    return _fio_mask(rows) & base


def _seed_predictions(rows: pd.DataFrame) -> pd.DataFrame:
    """The seed's model on each RocksDB row: device = fio lat - fio cpuPer, libc+kernel = fio cpuPer,
    RocksDB = cpu.inc (rxlab.core.metrics.efficiency against the mean fio row of its threads and delay)."""
    is_fio = _fio_mask(rows)
    fio, db = rows[_baseline_mask(rows)], rows[~is_fio]
    base = fio.groupby(["threads", "delay_us"])[["iops", "usPer", "cpuPer", "rx.lat"]].mean()
    parts = []
    for key, g in db.groupby(["threads", "delay_us"]):
        if key not in base.index:
            raise ValueError(f"no fio baseline for threads={key[0]}, delay_us={key[1]}")
        b = base.loc[key]
        e = metrics.efficiency(g[["qps", "iops", "usPer", "cpuPer"]],
                               {"iops": b["iops"], "usPer": b["usPer"], "cpuPer": b["cpuPer"]})
        pred = model.seed_model(e["cpu.inc"].to_numpy(float), float(b["rx.lat"] - b["cpuPer"]),
                                float(b["cpuPer"]), float(key[0]))
        parts.append(pd.DataFrame({"seed_iops_pred": pred, "cpu.inc": e["cpu.inc"], "io.eff": e["io.eff"]},
                                  index=g.index))
    return pd.concat(parts).loc[db.index]


@dataclass
class Comparison:
    """The seed's model and the fitted model on published and local rows.

    table: one row per RocksDB row (source, test, threads, block_align,
    delay_us, measured iops, both predictions and their errors in %);
    summary: per source and model, rows and max / median |error| %; fits:
    the ModelFit per source.
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    fits: dict


def compare_models(local: pd.DataFrame, published_rows: pd.DataFrame | None = None,
                   n_boot: int | str = "auto") -> Comparison:
    """Fit rxlab.core.model on each source (the seed's tables, this machine's runs), predict its rows,
    and put the seed's own model beside (IOPS predicted against iops measured, as the seed compares).

    n_boot: bootstrap draws for the standard errors; "auto" draws 200 when
    the local rows repeat each configuration at least 3 times (with fewer, a
    bootstrap says nothing) and none otherwise.
    """
    if n_boot == "auto":
        reps = local[~_fio_mask(local)].groupby(["threads", "delay_us", "block_align", "test"]).size()
        n_boot = 200 if len(reps) and reps.min() >= 3 else 0
    sources = {"published": model.published_frame() if published_rows is None else published_rows,
               "local": local}
    tables, fits = [], {}
    for src, frame in sources.items():
        rows = frame.reset_index(drop=True)
        f = model.fit(rows, n_boot=int(n_boot) if src == "local" else 0)
        fits[src] = f
        pred = f.predict(rows)
        seed = _seed_predictions(rows)
        t = pd.DataFrame({"source": src, "test": pred["test"], "threads": pred["threads"],
                          "block_align": pred.get("block_align", np.nan),
                          "delay_us": pred["delay_us"], "iops": pred["iops"],
                          "seed_iops_pred": seed["seed_iops_pred"],
                          "seed_err_pct": (seed["seed_iops_pred"] / pred["iops"] - 1.0) * 100.0,
                          "fitted_iops_pred": pred["iops_pred"], "fitted_err_pct": pred["err_iops_pct"],
                          "qps": pred["qps"], "fitted_qps_pred": pred["qps_pred"],
                          "fitted_err_qps_pct": pred["err_qps_pct"]})
        tables.append(t)
    table = pd.concat(tables, ignore_index=True)
    return Comparison(table=table, summary=error_summary(table), fits=fits)


def error_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per source and model: rows, max and median |error| % and the share within 3%."""
    out = []
    for src, g in table.groupby("source", sort=False):
        for name, col in (("seed", "seed_err_pct"), ("fitted", "fitted_err_pct")):
            a = pd.to_numeric(g[col]).abs()
            out.append({"source": src, "model": name, "rows": int(a.size), "max_abs_err_pct": a.max(),
                        "median_abs_err_pct": a.median(), "within_3pct": float((a <= 3.0).mean())})
    return pd.DataFrame(out)


# The held-out models: rxlab.core.model's device option -> the name in held_out's summary.
HELD_OUT_MODELS = {"curve": "fitted", "iostat": "fitted, iostat device"}


def held_out(rows: pd.DataFrame,
             devices: Sequence[str] = tuple(HELD_OUT_MODELS)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rxlab.core.model.evaluate over the splits these rows allow; returns (rows, summary).

    Splits: each test left out in turn (fit on the other two); block_align
    off predicted from on; the larger thread counts from the smallest; the
    delayed rows from the undelayed. devices: the fitted models to hold out,
    rxlab.core.model's `device` option: "curve" predicts from fio's device
    ("fitted"), "iostat" takes each run's own io.lat ("fitted, iostat
    device"; the seed's model is reported once, beside the first). The rows
    carry the option in `device`. A split that cannot be fitted is
    reported in the summary's `note` instead of failing the notebook.
    `config_floor_pct` is the median over the held-out configurations of
    `repeatability`'s floor: what a model that knew each one's true rate
    would still miss its median by (NaN with one repetition). The errors can
    be smaller: the held-out rows ran in the same repetitions as the rows the
    model was fitted on, and share their drift.
    """
    bad = [d for d in devices if d not in HELD_OUT_MODELS]
    if bad or not devices:
        raise ValueError(f"held_out devices={list(devices)!r}: choose from {', '.join(HELD_OUT_MODELS)}")
    is_db = ~_fio_mask(rows)
    splits = [(f"{t} held out", is_db & (rows["test"] != t)) for t in SEED_TESTS]
    if rows.loc[is_db, "block_align"].nunique() > 1:
        splits.append(("block_align off from on", is_db & (rows["block_align"] == True)))  # noqa: E712
    th = sorted(rows.loc[is_db, "threads"].unique())
    if len(th) > 1:
        splits.append((f"threads > {th[0]} from {th[0]}", is_db & (rows["threads"] == th[0])))
    if (rows.loc[is_db, "delay_us"] > 0).any() and (rows.loc[is_db, "delay_us"] == 0).any():
        splits.append(("delayed from undelayed", is_db & (rows["delay_us"] == 0)))
    all_rows, summ = [], []
    for device, (name, mask) in ((d, sp) for d in devices for sp in splits):
        try:
            ev = model.evaluate(rows, fit_on=mask.to_numpy(), device=device)
        except ValueError as e:
            summ.append({"split": name, "model": HELD_OUT_MODELS[device], "rows": 0,
                         "max_abs_err_pct": np.nan,
                         "median_abs_err_pct": np.nan, "configs": 0, "config_max_abs_err_pct": np.nan,
                         "config_median_abs_err_pct": np.nan, "config_floor_pct": np.nan, "note": str(e)})
            continue
        all_rows.append(ev.rows.assign(split=name, device=device))
        per_config = config_errors(ev.rows)
        floor = float(repeatability(ev.rows)["floor_pct"].median())
        for _, s in ev.summary.iterrows():
            if s["model"] == "fitted (qps)" or (s["model"] == "seed (iops)" and device != devices[0]):
                continue
            m = s["model"].removesuffix(" (iops)")
            c = per_config[f"{m}_err_pct"].abs()
            summ.append({"split": name, "model": HELD_OUT_MODELS[device] if m == "fitted" else m,
                         "rows": s["rows"],
                         "max_abs_err_pct": s["max_abs_err_pct"],
                         "median_abs_err_pct": s["median_abs_err_pct"],
                         "configs": len(c), "config_max_abs_err_pct": c.max(),
                         "config_median_abs_err_pct": c.median(), "config_floor_pct": floor, "note": ""})
    out_rows = pd.concat(all_rows, ignore_index=True) if all_rows else pd.DataFrame()
    return out_rows, pd.DataFrame(summ, columns=["split", "model", "rows", "max_abs_err_pct",
                                                 "median_abs_err_pct", "configs", "config_max_abs_err_pct",
                                                 "config_median_abs_err_pct", "config_floor_pct", "note"])


@functools.cache
def _median_abs_normal(n: int) -> float:
    """E|median of n standard normal draws| (a fixed-seed simulation: the same number every time)."""
    rng = np.random.default_rng(12345)
    return float(np.mean(np.abs(np.median(rng.standard_normal((200_000, max(int(n), 1))), axis=1))))


def repeatability(rows: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """How far a configuration's median over its repetitions can be from its own true rate.

    Per configuration of the RocksDB rows (`by`, default HELD_OUT_CONFIG): n repetitions, the
    median qps, `spread_pct` ((max - min) / median), `sd_pct` (their standard deviation in % of the
    median) and `floor_pct`: E|median of n - mean| for normal draws of that spread, that is what a
    model that knew each configuration's true rate would still miss the median by, on average.
    With n=3 the spread is itself rough: read the floor as a scale, not a bound.
    """
    db = rows[~_fio_mask(rows)] if "tool" in rows.columns else rows
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in db.columns]
    if not by or db.empty:
        raise ValueError("repeatability: needs RocksDB rows with qps and configuration columns "
                         f"({', '.join(HELD_OUT_CONFIG)})")
    qps = pd.to_numeric(db["qps"])
    g = qps.groupby([db[c] for c in by], dropna=False)
    out = pd.DataFrame({"n": g.size(), "qps": g.median(), "qps_min": g.min(), "qps_max": g.max(),
                        "sd": g.std(ddof=1)})
    out["spread_pct"] = (out["qps_max"] - out["qps_min"]) / out["qps"] * 100.0
    out["sd_pct"] = out.pop("sd") / out["qps"] * 100.0
    out["floor_pct"] = [sd * _median_abs_normal(n) if n > 1 else np.nan
                        for sd, n in zip(out["sd_pct"], out["n"], strict=True)]
    return out.reset_index()


def agreement(a: pd.DataFrame, b: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """The same configurations in two studies (model_rows of each): median qps in each and
    `diff_pct` = b / a - 1. On one machine, a day apart or an hour, this is the A/A difference that
    any model fitted on one study and judged on the other's medians carries."""
    ra, rb = repeatability(a, by), repeatability(b, by)
    keys = [c for c in ra.columns if c in (HELD_OUT_CONFIG if by is None else by)]
    m = ra[[*keys, "n", "qps"]].merge(rb[[*keys, "n", "qps"]], on=keys, suffixes=("_a", "_b"))
    if m.empty:
        raise ValueError("agreement: the two studies share no configuration")
    m["diff_pct"] = (m["qps_b"] / m["qps_a"] - 1.0) * 100.0
    return m


def steal_effect(rows: pd.DataFrame, by: Sequence[str] | None = None) -> pd.Series:
    """How much of the repetitions' spread the hypervisor's steal accounts for.

    Over the RocksDB rows, within each configuration (`by`, default HELD_OUT_CONFIG), log qps and
    cpuPer regressed on stealPer (each centred on its configuration's mean, one pooled slope):
    `qps_pct_per_10us` (% of qps per 10 us of steal per query), `cpu_us_per_us` (us of cpuPer per us
    of steal), `r2` (the share of the within-configuration variance of log qps that steal
    explains), and the rows' stealPer (`steal_median_us`, `steal_max_us`) and `rows`. Where steal
    does not vary within any configuration (one repetition each, as at smoke scale) the slopes and
    r2 are NaN: there is nothing to regress.
    """
    db = rows[~_fio_mask(rows)] if "tool" in rows.columns else rows
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in db.columns]
    steal = db[model.STEAL] if model.STEAL in db.columns else pd.Series(dtype=float)
    measured = pd.to_numeric(steal, errors="coerce").notna().sum()
    if not by or measured < 3:
        raise ValueError(f"steal_effect: needs RocksDB rows with {model.STEAL} and configuration columns "
                         f"({', '.join(HELD_OUT_CONFIG)})")
    d = db.assign(_lq=np.log(pd.to_numeric(db["qps"])), _s=pd.to_numeric(db[model.STEAL]),
                  _c=pd.to_numeric(db["cpuPer"])).dropna(subset=["_lq", "_s", "_c"])
    g = d.groupby(by, dropna=False)
    x, lq, cpu = (d[c] - g[c].transform("mean") for c in ("_s", "_lq", "_c"))
    sxx, syy = float((x * x).sum()), float((lq * lq).sum())
    b_q, b_c = (float((x * lq).sum()) / sxx, float((x * cpu).sum()) / sxx) if sxx > 0 else (np.nan, np.nan)
    return pd.Series({"rows": len(d), "steal_median_us": float(d["_s"].median()),
                      "steal_max_us": float(d["_s"].max()),
                      "qps_pct_per_10us": (np.exp(10.0 * b_q) - 1.0) * 100.0, "cpu_us_per_us": b_c,
                      "r2": b_q * b_q * sxx / syy if sxx > 0 and syy > 0 else np.nan})


def held_out_change(with_term: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    """Two `held_out` summaries side by side (the same rows with and without a term's column, say
    stealPer): per split and model, the median and worst configuration's error in each, and the
    change (with - without, percentage points; negative is better)."""
    keys = ["split", "model"]
    cols = ["config_median_abs_err_pct", "config_max_abs_err_pct"]
    m = with_term[keys + cols].merge(without[keys + cols], on=keys, suffixes=("", "_without"))
    if m.empty:
        raise ValueError("held_out_change: the two summaries share no split and model")
    for c in cols:
        m[c.replace("_abs_err_pct", "_change_pp")] = m[c] - m[f"{c}_without"]
    return m


SEED_DEVICE_UNROUNDED_US = 101.61 - 10.916   # fio lat - cpuPer at one job, the seed's device term


def sensitivity_data(fit: model.ModelFit, rows: pd.DataFrame, threads: int | None = None
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Model curves and measured points for the seed's two bullets; returns (curves, points).

    curves: rxlab.core.model.sensitivity for the seed's model and the fitted one,
    with `panel` "device" (io.eff against device latency, one line per local
    cpu.inc of readrandom and readrandom3) and "cpu" (io.eff against RocksDB
    CPU per query, at this machine's device latency and the seed's 90.7 us).
    libc+kernel is fio's cpuPer here, reads per query and reqsz the local
    medians (undelayed rows at `threads`, by default the smallest client count).
    points: measured io.eff (medians over repetitions) with x = the fio device
    latency (lat - cpuPer) at each delay_us ("device") or cpu.inc ("cpu"),
    local and the seed's one-user rows.
    """
    if threads is None:  # the smallest client count with undelayed fio rows
        fio0 = rows[_baseline_mask(rows) & (rows["delay_us"] == 0)]
        threads = int(fio0["threads"].min()) if len(fio0) else 1
    base = rows[_baseline_mask(rows) & (rows["threads"] == threads)]
    base0 = base[base["delay_us"] == 0]
    if base0.empty:
        raise ValueError(f"no undelayed fio rows at threads={threads}")
    libc = float(pd.to_numeric(base0["cpuPer"]).median())
    dev0 = float((pd.to_numeric(base0["rx.lat"]) - pd.to_numeric(base0["cpuPer"])).median())
    pred = _seed_predictions(rows)
    db = rows.loc[pred.index].assign(**{"cpu.inc": pred["cpu.inc"], "io.eff": pred["io.eff"]})
    db = db[db["threads"] == threads]
    db0 = db[db["delay_us"] == 0]
    main = db0[db0["block_align"] == True] if (db0["block_align"] == True).any() else db0  # noqa: E712
    rpq = float((pd.to_numeric(main["iops"]) / pd.to_numeric(main["qps"])).median())
    reqsz = float(pd.to_numeric(main["reqsz"]).median())
    cpus = sorted({round(float(main.loc[main["test"] == t, "cpu.inc"].median()), 1)
                   for t in ("readrandom", "readrandom3") if (main["test"] == t).any()})
    kw = {"threads": threads, "libc_kernel_us": libc, "reads_per_query": rpq, "reqsz_kib": reqsz}
    dev_grid = np.linspace(5.0, 400.0, 80)
    c1 = model.sensitivity(fit, device_latency_us=dev_grid, cpu_per_query_us=cpus, **kw)
    c1 = c1.assign(panel="device")
    devices = sorted({round(dev0, 1), round(SEED_DEVICE_UNROUNDED_US, 1)})
    c2 = model.sensitivity(fit, device_latency_us=devices, cpu_per_query_us=np.linspace(0.0, 40.0, 81), **kw)
    c2 = c2.assign(panel="cpu")
    curves = pd.concat([c1, c2], ignore_index=True)

    pts = []
    fio_dev = base.assign(device_us=pd.to_numeric(base["rx.lat"]) - pd.to_numeric(base["cpuPer"]))
    fdev = fio_dev.groupby("delay_us")["device_us"].median()
    main_all = db[db["block_align"] == True] if (db["block_align"] == True).any() else db  # noqa: E712
    for (d, t), g in main_all.groupby(["delay_us", "test"]):
        if d in fdev.index:
            pts.append({"panel": "device", "source": "local", "test": t, "delay_us": d, "x": fdev[d],
                        "y": g["io.eff"].median(), "n": len(g)})
    for (t, ba), g in db0.groupby(["test", "block_align"]):
        pts.append({"panel": "cpu", "source": "local", "test": t, "delay_us": 0, "block_align": ba,
                    "x": g["cpu.inc"].median(), "y": g["io.eff"].median(), "n": len(g)})
    pe = published.load("ioeff_efficiency")
    for _, r in pe[pe["users"] == 1].iterrows():
        pts.append({"panel": "device", "source": "published", "test": r["test"], "delay_us": 0,
                    "x": SEED_DEVICE_UNROUNDED_US, "y": r["io.eff"], "n": 1})
        pts.append({"panel": "cpu", "source": "published", "test": r["test"], "delay_us": 0,
                    "block_align": True, "x": r["cpu.inc"], "y": r["io.eff"], "n": 1})
    points = pd.DataFrame(pts, columns=["panel", "source", "test", "delay_us", "block_align", "x", "y", "n"])
    return curves, points

