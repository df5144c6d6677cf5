"""The performance model's input rows from IO-efficiency studies, and its errors per configuration.

perf_model fits the seed's model and rxlab's on these rows; io_efficiency_tuning
judges its configurations by `config_errors` on medians, as perf_model does.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rxlab.bench.ioeff.baseline import DB_COLUMNS
from rxlab.bench.ioeff.names import DB_TOOL, FIO_KINDS, FIO_TOOL, FIO_UNALIGNED_TOOL, KEYS, SEED_TESTS
from rxlab.bench.ioeff.result import IoEfficiencyResult
from rxlab.core import model

__all__ = ["HELD_OUT_CONFIG", "config_errors", "model_rows"]


def model_rows(*results: IoEfficiencyResult | None, unaligned: bool = False) -> pd.DataFrame:
    """rxlab.core.model's input from studies: the fio baselines and the seed's read tests.

    Columns: study, rep, tool, backend, threads, delay_us, block_align,
    bloom (readrandom and readrandom2 have bloom filters, readrandom3 not),
    test, run_id, the seeds' columns, runqPer and awayShare where measured, and
    `baseline` (False for the fio runs placed away from the interrupt's CPU,
    which inform the model's remote_us but are no io.eff denominator).
    unaligned=True keeps fio's unaligned runs too (baseline False), so that they
    set the model's size penalty; off by default because on these VMs their
    cost per KiB is several times what RocksDB's reads without block_align pay
    (`unaligned_cost`), and with them the block_align-off rows are predicted worse
    (docs/findings/2026-11-26-perf_model.md).
    """
    parts = []
    for r in results:
        if r is None:
            continue
        f = r.frame
        fio_tools = [t for t in FIO_KINDS if unaligned or t != FIO_UNALIGNED_TOOL]
        keep = f["tool"].isin(fio_tools) | ((f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS))
        # studies stored before the wait for a CPU (or where the readers woke) was measured lack it
        extra = [c for c in (model.RUNQ, model.AWAY, model.STEAL) if c in f.columns]
        parts.append(f.loc[keep, [*KEYS, *[c for c in DB_COLUMNS if c != "test"], *extra]])
    if not parts:
        raise ValueError("no study to take model rows from")
    out = pd.concat(parts, ignore_index=True)
    out["bloom"] = out["test"].map(model.SEED_BLOOM).astype(object).where(out["tool"] == DB_TOOL, False)
    out["bloom"] = out["bloom"].astype(bool)
    out["baseline"] = ~out["tool"].isin([t for t in FIO_KINDS if t != FIO_TOOL])
    return out


HELD_OUT_CONFIG = ("test", "block_align", "threads", "delay_us")


def config_errors(pred: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per configuration, the median over its repetitions of measured and predicted IOPS and the error.

    The studies judge every figure on medians of repetitions; a single
    repetition carries the host's drift (fio's device latency moves by
    several percent from one repetition to the next on these VMs:
    docs/findings/2026-11-26-perf_model.md), which no model of the
    configuration can predict. `by`: the columns that name a configuration
    (default: those of HELD_OUT_CONFIG present). Columns: iops, fitted_iops,
    seed_iops, n and fitted_err_pct / seed_err_pct (median predicted /
    median measured - 1).
    """
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in pred.columns]
    if not by:
        raise ValueError(f"config_errors: none of the columns {list(HELD_OUT_CONFIG if by is None else by)} "
                         "is in the predictions")
    g = pred.groupby(by, dropna=False).agg(iops=("iops", "median"), fitted_iops=("iops_pred", "median"),
                                           seed_iops=("seed_iops_pred", "median"), n=("iops", "size"))
    g["fitted_err_pct"] = (g["fitted_iops"] / g["iops"] - 1.0) * 100.0
    g["seed_err_pct"] = (g["seed_iops"] / g["iops"] - 1.0) * 100.0
    return g.reset_index()
