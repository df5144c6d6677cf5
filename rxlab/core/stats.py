"""Statistics every study and benchmark shares: rotated run orders, medians over repetitions, the
bootstrap interval of a median and the t-interval of a ratio from paired log ratios."""
from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd


def rotate(seq: Sequence, k: int) -> list:
    """`seq` started at its k-th item (mod its length): repetition k's order, so that drift of the
    machine hits every configuration alike."""
    seq = list(seq)
    k %= max(len(seq), 1)
    return seq[k:] + seq[:k]


def medians(rows: pd.DataFrame, by: list[str], cols: Iterable[str], sort: bool = True) -> pd.DataFrame:
    """Median of each numeric column per group, with n (the repetitions behind it)."""
    cols = [c for c in cols if c in rows.columns]
    num = rows[by + cols].copy()
    for c in cols:
        num[c] = pd.to_numeric(num[c], errors="coerce").astype(float)
    g = num.groupby(by, sort=sort, dropna=False)
    out = g[cols].median()
    out["n"] = g.size()
    return out.reset_index()


def median_interval(values, level: float = 0.95, draws: int = 4000, seed: int = 0) -> tuple[float, float]:
    """Percentile-bootstrap interval of the median: how well n noisy pairs pin it down."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) < 2:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    medians = np.median(rng.choice(x, size=(draws, len(x)), replace=True), axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(medians, [tail, 100 - tail])
    return float(lo), float(hi)


def ratio_interval(log_ratios: Iterable[float], level: float = 0.95) -> tuple[float, float, float, float]:
    """(ratio, lo, hi, half_width %) of paired log ratios (one per turn): exp of their mean, Student's t
    interval exp(mean -/+ t * se) and its larger relative side exp(t * se) - 1 in percent; NaN where
    there are fewer than two values (one gives a ratio and no interval). Why t on logs and not a
    bootstrap: rxlab/core/resolution.py's docstring; its coverage: tests/core/test_resolution.py."""
    x = np.asarray(list(log_ratios), dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return (math.nan,) * 4
    m = float(x.mean())
    if len(x) < 2:
        return math.exp(m), math.nan, math.nan, math.nan
    se = float(x.std(ddof=1)) / math.sqrt(len(x))
    t = _t_quantile(len(x) - 1, level)
    return math.exp(m), math.exp(m - t * se), math.exp(m + t * se), 100 * math.expm1(t * se)


@functools.lru_cache(maxsize=1024)
def _t_quantile(df: int, level: float) -> float:
    """Student's t quantile of a two-sided `level` interval (cached: the rule asks after every turn)."""
    from scipy import stats as sps  # noqa: PLC0415 - scipy's import costs; only a ratio interval needs it

    return float(sps.t.ppf(0.5 + level / 2, df))
