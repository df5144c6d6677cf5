"""The tuning study's tables: io.eff per configuration, its ratios to the seed's setting measured in turns,
the model's accounting per rung, held-out errors."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from rxlab.bench.ioeff.model_rows import config_errors
from rxlab.core import model, stats
from rxlab.core.turns_plan import result_comparisons
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS, LADDER
from rxlab.studies.io_efficiency_tuning.params import COMPARE
from rxlab.studies.io_efficiency_tuning.result import DB_TOOL, FIO_TOOL, TuningResult, read_rows

__all__ = ["COLUMNS", "TABLES", "accounting", "comparison_table", "config_table", "efficiency_rows",
           "fit_model", "held_out", "held_out_by_config", "model_rows", "paired_noise", "predicted_rows"]

COLUMNS = ("qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "io.eff", "us.inc",
           "cpu.inc", "host_cpuPer", "reads_per_query")


def efficiency_rows(result: TuningResult) -> pd.DataFrame:
    """Every read run with io.eff, us.inc and cpu.inc against its own turn's fio
    (rxlab.core.metrics.efficiency), and reads per query (result.read_rows)."""
    return read_rows(result.frame)


def comparison_table(result: TuningResult) -> pd.DataFrame:
    """Every configuration's io.eff over the seed's setting's with its 95% interval over the turns
    (resolved or not, and why), then the seed's A/A row: rxlab.core.turns_plan's comparisons of the
    read runs."""
    return result_comparisons(dataclasses.replace(result, frame=efficiency_rows(result)), COMPARE)


def config_table(result: TuningResult) -> pd.DataFrame:
    """Per configuration (the ladder's order, then the side ones): medians over its runs (the seed's
    setting runs twice a turn), io.eff's range, and fio's medians as the first row."""
    r = efficiency_rows(result)
    med = stats.medians(r, ["config"], COLUMNS, sort=False)
    rng = r.groupby("config")["io.eff"].agg(["min", "max"]).rename(
        columns={"min": "io.eff_min", "max": "io.eff_max"})
    med = med.merge(rng, left_on="config", right_index=True)
    med["rung"] = med["config"].map(lambda c: "ladder" if CONFIGS[c].on_ladder else "side")
    med["change"] = med["config"].map(lambda c: CONFIGS[c].change)
    med["busy_polls"] = med["config"].map(lambda c: CONFIGS[c].busy_polls)
    med["_o"] = med["config"].map(list(CONFIGS).index)
    fio = result.frame[result.frame["tool"] == FIO_TOOL]
    fmed = stats.medians(fio.assign(config="fio sync qd1"), ["config"], ["iops", "usPer", "syPer", "cpuPer",
                                                                          "rx.lat", "io.lat", "host_cpuPer"])
    fmed["rung"], fmed["change"], fmed["_o"] = "baseline", "fio's sync engine, qd 1: the denominator", -1
    out = pd.concat([fmed, med]).sort_values("_o").drop(columns="_o").set_index("config")
    return out[["rung", "n", *(c for c in COLUMNS if c in out.columns), "io.eff_min", "io.eff_max",
                "busy_polls", "change"]]


def model_rows(result: TuningResult) -> pd.DataFrame:
    """fio and read rows in rxlab.core.model's input form (the configuration as `backend`).

    Busy-polling configurations are left out: their process CPU is mostly a
    polling thread's, beside the query rather than in its path, which the
    model's additive latency (CPU + device + wait) does not describe.
    """
    f = result.frame
    f = f[(f["tool"] == FIO_TOOL) | ~f["config"].map(lambda c: CONFIGS[c].busy_polls if c in CONFIGS
                                                       else False)].copy()
    f["backend"] = np.where(f["tool"] == FIO_TOOL, "fio", f["config"])
    return f


def fit_model(result: TuningResult) -> model.ModelFit:
    """The model fitted on every configuration it describes, fio's latency as the device term."""
    return model.fit(model_rows(result), device="baseline")


def predicted_rows(result: TuningResult) -> pd.DataFrame:
    """efficiency_rows of the configurations the model describes, with its predicted latency and io.eff
    beside the measured latency (lat_pred_us, io.eff_pred, lat_meas_us)."""
    pred = fit_model(result).predict(model_rows(result))
    r = efficiency_rows(result).loc[pred.index]
    return r.assign(lat_pred_us=pred["lat_pred_us"], **{"io.eff_pred": pred["io.eff_pred"]},
                    lat_meas_us=pred["lat_meas_us"])


def accounting(result: TuningResult) -> pd.DataFrame:
    """Each ladder rung against the one before, in microseconds per query and in io.eff.

    Means over the turns (not medians), so that the parts add up: the
    user and system CPU saved sum to the CPU saved, which the model turns
    into the predicted latency saved.

    saved_user_us / saved_sys_us: CPU per query given back;
    saved_pred_us: the latency the model predicts saved (the CPU saved plus
    any change of reads per query times the device term); saved_meas_us: the
    latency per query measured saved (1e6 / qps); unexplained_us: measured
    minus predicted; noise_us: two standard errors of the per-turn
    differences of measured latency (a saving smaller than it is not
    resolved). io.eff and the model's io.eff (fitted on every rung, fio as
    the device term) after the rung.
    """
    r = predicted_rows(result)
    cols = ["usPer", "syPer", "cpuPer", "reads_per_query", "lat_pred_us", "lat_meas_us", "io.eff",
            "io.eff_pred"]
    mean = r.groupby("config", sort=False)[cols].mean()
    # per turn: the rungs of one turn ran minutes apart, so their difference cancels the machine's
    # slower drift (the noise of a saving is that of these paired differences)
    lat = r.pivot_table(index="rep", columns="config", values="lat_meas_us", aggfunc="mean")
    out, prev = [], None
    for c in (x.name for x in LADDER):
        if c not in mean.index:
            continue
        m = mean.loc[c]
        row = {"rung": c, "change": CONFIGS[c].change, "cpuPer": m["cpuPer"], "lat_meas_us": m["lat_meas_us"],
               "lat_pred_us": m["lat_pred_us"], "io.eff": m["io.eff"], "io.eff_pred": m["io.eff_pred"]}
        if prev is not None:
            row.update(saved_user_us=prev["usPer"] - m["usPer"], saved_sys_us=prev["syPer"] - m["syPer"],
                       saved_pred_us=prev["lat_pred_us"] - m["lat_pred_us"],
                       saved_meas_us=prev["lat_meas_us"] - m["lat_meas_us"])
            row["unexplained_us"] = row["saved_meas_us"] - row["saved_pred_us"]
            row["noise_us"] = paired_noise(lat[prev.name] - lat[c])
        out.append(row)
        prev = m
    cols = ["rung", "saved_user_us", "saved_sys_us", "saved_pred_us", "saved_meas_us", "unexplained_us",
            "noise_us", "cpuPer", "lat_pred_us", "lat_meas_us", "io.eff_pred", "io.eff", "change"]
    return pd.DataFrame(out).reindex(columns=cols).set_index("rung")


def paired_noise(differences: pd.Series) -> float:
    """Two standard errors of the mean of paired differences (NaN with fewer than two): a saving
    smaller than it is not resolved."""
    d = differences.dropna()
    return 2.0 * float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else np.nan


def held_out(result: TuningResult) -> pd.DataFrame:
    """The model fitted on the seed configuration alone predicts every other one (their CPU per
    query and reads per query measured, the rest from the fit): error of predicted IOPS, per run,
    and the seed's own model (latency = fio latency + cpu.inc) beside it. Busy-polling
    configurations are not predicted (see model_rows)."""
    d = model_rows(result)
    ev = model.evaluate(d, (d["tool"] == DB_TOOL) & (d["config"] == "seed"), device="baseline")
    out = ev.rows.copy()
    out["config"] = out["backend"]
    keep = [c for c in ("config", "iops", "iops_pred", "err_iops_pct", "seed_iops_pred", "seed_err_iops_pct")
            if c in out.columns]
    return out[keep]


def held_out_by_config(result: TuningResult) -> pd.DataFrame:
    """held_out's predictions on each configuration's median over its runs
    (rxlab.bench.ioeff.model_rows.config_errors): the targets are judged on medians, and one
    turn carries the host's drift."""
    return config_errors(held_out(result), by=["config"]).set_index("config")


TABLES = {
    "configs": config_table,
    "comparisons": comparison_table,
    "accounting": accounting,
    "held_out": held_out,
    "held_out_by_config": held_out_by_config,
}
