"""Statistics every study and benchmark shares: rotated run orders, medians over repetitions and
the bootstrap interval of a median."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from rxlab.core.study import new_study_id  # noqa: F401 - studies not yet on Study.run take their id here


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
