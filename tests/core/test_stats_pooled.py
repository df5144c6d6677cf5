"""Several studies of one comparison pooled (rxlab.core.stats.pooled_ratio): on simulated studies whose
true ratio moves from study to study, the pooled interval holds the mean ratio about 95% of the time,
where one study's interval, or the studies' intervals merely combined, would not."""
import math

import numpy as np
import pytest

from rxlab.core.stats import _t_quantile, pooled_ratio, ratio_interval

TRUTH = 1.02


def _studies(rng, k: int, turns: int, sigma: float, tau: float):
    """k studies of `turns` per-turn log ratios each: noise `sigma` per turn, and a shift per study drawn
    with sd `tau` (what a study cannot see from inside). Each as ratio_interval gives it."""
    out = []
    for _ in range(k):
        shift = rng.normal(0, tau)
        out.append((*ratio_interval(math.log(TRUTH) + shift + rng.normal(0, sigma, turns))[:3], turns))
    return [list(c) for c in zip(*out, strict=True)]


def _inverse_variance(ratios, los, his, turns):
    """The studies combined as if nothing moved between them (the interval pooled_ratio must not be)."""
    x = np.log(ratios)
    se = np.log(np.array(his) / np.array(los)) / (2 * np.array([_t_quantile(n - 1, 0.95) for n in turns]))
    w = 1 / se**2
    mu, s = (w * x).sum() / w.sum(), math.sqrt(1 / w.sum())
    return math.exp(mu - 1.96 * s), math.exp(mu + 1.96 * s)


def _coverage(k, tau, streams=2000, seed=5):
    rng = np.random.default_rng(seed)
    pooled = one = combined = 0
    ps = []
    for _ in range(streams):
        r, lo, hi, n = _studies(rng, k, turns=25, sigma=0.06, tau=tau)
        p = pooled_ratio(r, lo, hi, n)
        pooled += p["lo"] <= TRUTH <= p["hi"]
        one += lo[0] <= TRUTH <= hi[0]
        a, b = _inverse_variance(r, lo, hi, n)
        combined += a <= TRUTH <= b
        ps.append(p["p"])
    return pooled / streams, one / streams, combined / streams, np.array(ps)


def test_the_pooled_interval_holds_the_mean_ratio_when_studies_move():
    """A shift of 2% per study against turns that resolve each study to about +-2.5%: one study's
    interval and the combined one miss the mean ratio often; the pooled one keeps about 95%
    (2000 simulated sets of 4 studies; binomial sd of a coverage 0.5%)."""
    pooled, one, combined, ps = _coverage(k=4, tau=0.02)
    assert pooled >= 0.93, pooled                          # 0.955 here
    assert one <= 0.85 and combined <= 0.80, (one, combined)   # 0.75 and 0.66 here
    assert (ps < 0.05).mean() >= 0.5                       # Cochran's test sees the shift in most sets


def test_studies_that_agree_keep_their_coverage_and_the_test_rarely_fires():
    pooled, one, combined, ps = _coverage(k=4, tau=0.0, seed=6)
    assert pooled >= 0.93 and one >= 0.93 and combined >= 0.93, (pooled, one, combined)
    assert 0.02 <= (ps < 0.05).mean() <= 0.09, (ps < 0.05).mean()


def test_the_spread_between_studies_is_estimated():
    rng = np.random.default_rng(7)
    spread = [pooled_ratio(*_studies(rng, 12, 25, 0.06, 0.03))["between_pct"] for _ in range(300)]
    assert 2.0 <= float(np.median(spread)) <= 3.6, np.median(spread)       # tau of 3%


def test_one_study_is_its_own_interval_and_bad_rows_are_left_out():
    p = pooled_ratio([1.1, math.nan, 0.9], [1.0, 0.8, 0.95], [1.2, 1.0, 0.85], [10, 10, 10])
    assert p["k"] == 1 and p["ratio"] == pytest.approx(1.1) and (p["lo"], p["hi"]) == (1.0, 1.2)
    assert math.isnan(p["between_pct"]) and math.isnan(p["p"])
    assert pooled_ratio([], [], [], [])["k"] == 0
