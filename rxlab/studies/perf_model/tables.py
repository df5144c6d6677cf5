"""The performance-model study's tables: the seed's model, where a query's time goes, both fits, the
comparison, held-out errors, the measurements' noise, and the placement and device-load medians."""
from __future__ import annotations

import pandas as pd

from rxlab.core import model
from rxlab.studies.perf_model import analysis, device_load, placement
from rxlab.studies.perf_model.result import PerfModelResult

CONFIG = ["threads", "delay_us", "block_align", "test"]


def seed_model_table(result: PerfModelResult) -> pd.DataFrame:
    """The seed's model as printed and on its tables' unrounded values (model.seed_model_table)."""
    return model.seed_model_table()


def seed_gap(result: PerfModelResult) -> pd.DataFrame:
    """Where the time of a query goes in the seed's own rows (model.latency_gap of its tables)."""
    return model.latency_gap(model.published_frame())


def rows_table(result: PerfModelResult) -> pd.DataFrame:
    """How many model rows each tool, client count and delay gave."""
    return result.rows.groupby(["tool", "threads", "delay_us"]).size().rename("rows").to_frame()


def gap_table(result: PerfModelResult) -> pd.DataFrame:
    """model.latency_gap of this machine's rows, medians per configuration."""
    return model.latency_gap(result.rows).groupby(CONFIG).median(numeric_only=True)


def fit_published(result: PerfModelResult) -> pd.DataFrame:
    """The fitted model's terms on the seed's tables."""
    return result.comparison.fits["published"].summary()


def fit_local(result: PerfModelResult) -> pd.DataFrame:
    """The fitted model's terms and the measured components on this machine's rows."""
    return result.comparison.fits["local"].summary()


def unaligned_table(result: PerfModelResult) -> pd.DataFrame:
    """What reads without block_align cost, fio's and RocksDB's (analysis.unaligned_cost)."""
    return analysis.unaligned_cost(result.ioeff)


def comparison_table(result: PerfModelResult) -> pd.DataFrame:
    """Each model on each source, per RocksDB row: IOPS measured, predicted, error %."""
    return result.comparison.table


def comparison_summary(result: PerfModelResult) -> pd.DataFrame:
    """Per source and model: rows, max and median |error| %, the share within 3%."""
    return result.comparison.summary


def held_out_table(result: PerfModelResult) -> pd.DataFrame:
    """The fitted models predicting rows they were not fitted on, per split (analysis.held_out)."""
    return result.held_out[1]


def repeatability_table(result: PerfModelResult) -> pd.DataFrame:
    """Per configuration: the repetitions' spread and the floor it puts under any model's error."""
    return result.repeat


def agreement_table(result: PerfModelResult) -> pd.DataFrame:
    """The same configurations' medians in an earlier study of the same parameters (empty without one)."""
    return result.agreement if result.agreement is not None else pd.DataFrame()


def steal_table(result: PerfModelResult) -> pd.DataFrame:
    """How the runs moved with the host's steal (analysis.steal_effect), and the fitted steal_factor."""
    if result.steal is None:
        return pd.DataFrame()
    fit = fit_local(result).set_index("component")
    fitted = fit.loc[["steal_factor"], ["value", "stderr", "how", "note"]]
    return pd.concat([result.steal.to_frame("value"), fitted])


def steal_change(result: PerfModelResult) -> pd.DataFrame:
    """The held-out splits with and without the steal term (negative change: the term's gain)."""
    if result.held_out_without_steal is None:
        return pd.DataFrame()
    return analysis.held_out_change(result.held_out[1], result.held_out_without_steal)


def iostat_fit(result: PerfModelResult) -> pd.DataFrame:
    """The terms of the model given each run's own disk latency (device="iostat")."""
    return result.iostat_fit.summary().head(len(model.PARAMS))


def iostat_gap(result: PerfModelResult) -> pd.DataFrame:
    """Per client count, undelayed: iostat's read latency under RocksDB and under fio, the excess."""
    g = result.gap
    return g[g["delay_us"] == 0].groupby(["threads", "block_align"])[
        ["io.lat", "fio_io.lat", "io_lat_excess_us", "unexplained_us"]].median()


def placement_table(result: PerfModelResult) -> pd.DataFrame:
    """Where the clients run: fio's latency per read by configuration (placement.summary)."""
    return placement.summary(result.placement_runs) if len(result.placement_runs) else pd.DataFrame()


def device_load_table(result: PerfModelResult) -> pd.DataFrame:
    """The disk under the vCPUs' load: iostat's latency per setting (device_load.summary)."""
    return device_load.summary(result.device_load_runs) if len(result.device_load_runs) else pd.DataFrame()


def sensitivity_points(result: PerfModelResult) -> pd.DataFrame:
    """The measured io.eff points of the sensitivity figures, and the seed's."""
    return result.sensitivity[1]


TABLES = {
    "seed_model": seed_model_table,
    "seed_gap": seed_gap,
    "rows": rows_table,
    "gap": gap_table,
    "fit_published": fit_published,
    "fit_local": fit_local,
    "unaligned_cost": unaligned_table,
    "comparison": comparison_table,
    "comparison_summary": comparison_summary,
    "held_out": held_out_table,
    "repeatability": repeatability_table,
    "agreement": agreement_table,
    "steal": steal_table,
    "steal_change": steal_change,
    "iostat_fit": iostat_fit,
    "iostat_gap": iostat_gap,
    "placement": placement_table,
    "device_load": device_load_table,
    "sensitivity_points": sensitivity_points,
}
