"""Statistics every study and benchmark shares: rotated run orders, medians over repetitions, the
bootstrap interval of a median, the t-interval of a ratio from paired log ratios, and the pooled ratio
of several studies of one comparison with the spread between them."""
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


def pooled_ratio(ratios: Sequence[float], los: Sequence[float], his: Sequence[float], turns: Sequence[int],
                 level: float = 0.95) -> dict:
    """Studies of one comparison pooled, each given as `ratio_interval` gave it (ratio, lo, hi over `turns`
    turns). A study's interval covers what moves from turn to turn inside it; what moves from one study
    to the next (a freshly loaded DB, the host an hour later) it cannot see. So the studies are pooled
    with a random effect: the between-study variance tau^2 on the log ratios by DerSimonian and Laird's
    moment estimate, the interval by Hartung and Knapp's variance with Student's t on k - 1 degrees of
    freedom, never narrower than the inverse-variance interval of the same weights: at least 95% from 2
    studies on, more than needed when the studies agree (the simulation: docs/methods/resolution.md;
    tests/core/test_stats_pooled.py). Returns ratio, lo, hi,
    half_width (%), between_pct (the spread between studies, exp(tau) - 1 in %), q and p (Cochran's
    test that the studies agree within their intervals), k. One study: its own interval, no spread."""
    r, lo, hi, n = (np.asarray(v, dtype=float) for v in (ratios, los, his, turns))
    ok = np.isfinite(r) & np.isfinite(lo) & np.isfinite(hi) & (r > 0) & (lo > 0) & (hi > lo) & (n >= 2)
    r, lo, hi, n = r[ok], lo[ok], hi[ok], n[ok]
    k = len(r)
    nan = {"ratio": math.nan, "lo": math.nan, "hi": math.nan, "half_width": math.nan,
           "between_pct": math.nan, "q": math.nan, "p": math.nan, "k": k}
    if k == 0:
        return nan
    x = np.log(r)
    # each study's standard error back from its t-interval: log(hi / lo) = 2 t(n - 1) se
    se = np.log(hi / lo) / (2 * np.array([_t_quantile(int(m) - 1, level) for m in n]))
    if k == 1:
        return {**nan, "ratio": float(r[0]), "lo": float(lo[0]), "hi": float(hi[0]),
                "half_width": 100 * math.expm1(float(np.log(hi[0] / r[0])))}
    w = 1 / se**2
    fixed = float((w * x).sum() / w.sum())
    q = float((w * (x - fixed) ** 2).sum())
    tau2 = max(0.0, (q - (k - 1)) / float(w.sum() - (w**2).sum() / w.sum()))
    ws = 1 / (se**2 + tau2)
    mu = float((ws * x).sum() / ws.sum())
    # never narrower than the inverse-variance interval: Hartung and Knapp's variance comes from how much
    # the studies differ, so a few that agree closely by chance would pool narrower than any of them
    var = max(float((ws * (x - mu) ** 2).sum()) / ((k - 1) * float(ws.sum())), 1 / float(ws.sum()))
    half = _t_quantile(k - 1, level) * math.sqrt(var)
    from scipy import stats as sps  # noqa: PLC0415 - scipy's import costs; only a pooling needs it

    return {"ratio": math.exp(mu), "lo": math.exp(mu - half), "hi": math.exp(mu + half),
            "half_width": 100 * math.expm1(half), "between_pct": 100 * math.expm1(math.sqrt(tau2)), "q": q,
            "p": float(sps.chi2.sf(q, k - 1)), "k": k}


@functools.lru_cache(maxsize=1024)
def _t_quantile(df: int, level: float) -> float:
    """Student's t quantile of a two-sided `level` interval (cached: the rule asks after every turn)."""
    from scipy import stats as sps  # noqa: PLC0415 - scipy's import costs; only a ratio interval needs it

    return float(sps.t.ppf(0.5 + level / 2, df))
