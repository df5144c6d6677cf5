"""Relative QPS with confidence intervals: each build against a base build, or against gcc of its version.

The post's number is the relative QPS (QPS of a build / QPS of a base build)
per test; its main worry is variance. So every ratio here carries a 95%
interval, and the base build against itself gives the noise floor: with one
build the comparison is 1.00 by construction and the interval is the
run-to-run noise, the smallest difference this machine can resolve.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from rxlab.studies.toolchains.params import TESTS

TOOLCHAIN_ORDER = ("gcc", "clang", "clang+LTO")
COLUMNS = ["build", "toolchain", "version", "test", "n", "qps", "cv_pct", "rel", "lo", "hi", "pct", "method"]


def relative_qps(df: pd.DataFrame, base: str, level: float = 0.95, paired: bool = True) -> pd.DataFrame:
    """Mean QPS per build and test relative to `base`, with a `level` confidence interval.

    `df`: one row per build, test and repetition (build, test, qps, toolchain,
    version, and `rep` for pairing). Unpaired: rel = mean_b / mean_base; its
    standard error by the delta method, rel * sqrt(se_b^2 / mean_b^2 +
    se_base^2 / mean_base^2), and Student's t with Welch-Satterthwaite degrees
    of freedom. Paired (when `paired` and both builds ran in the same
    repetitions): the repetitions ran back to back, so the ratio within each
    repetition cancels the machine's slow drift; rel is the geometric mean of
    those ratios and the interval Student's t on their logs (`method` says
    which). The base against itself is 1 with the unpaired interval from its
    own spread counted twice (as if a second base build had the same noise):
    the noise floor of single runs. n < 2: no interval.
    """

    def paired_row(b: str, test: str):
        if not paired or "rep" not in df.columns or b == base:
            return None
        x = df[(df["build"] == b) & (df["test"] == test)].groupby("rep")["qps"].mean()
        y = df[(df["build"] == base) & (df["test"] == test)].groupby("rep")["qps"].mean()
        reps = x.index.intersection(y.index)
        if len(reps) < 2 or len(reps) != len(x) or len(reps) != len(y):
            return None
        lr = np.log(x[reps].to_numpy() / y[reps].to_numpy())
        m, se = lr.mean(), lr.std(ddof=1) / np.sqrt(len(lr))
        tq = stats.t.ppf(0.5 + level / 2, len(lr) - 1)
        return float(np.exp(m)), float(np.exp(m - tq * se)), float(np.exp(m + tq * se))

    g = df.groupby(["build", "test"])["qps"]
    agg = pd.DataFrame({"n": g.count(), "qps": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    rows = []
    for _, r in agg.iterrows():
        b = agg[(agg["build"] == base) & (agg["test"] == r["test"])]
        if b.empty:
            continue
        b = b.iloc[0]
        rel = r["qps"] / b["qps"]
        va = r["sd"] ** 2 / r["n"] if r["n"] > 1 else np.nan
        vb = b["sd"] ** 2 / b["n"] if b["n"] > 1 else np.nan
        rel_se = rel * np.sqrt(va / r["qps"] ** 2 + vb / b["qps"] ** 2)
        dfree = (va + vb) ** 2 / (va ** 2 / (r["n"] - 1) + vb ** 2 / (b["n"] - 1)) if va + vb > 0 else np.inf
        tq = stats.t.ppf(0.5 + level / 2, dfree) if np.isfinite(rel_se) else np.nan
        lo, hi, method = rel - tq * rel_se, rel + tq * rel_se, "unpaired"
        pr = paired_row(r["build"], r["test"])
        if pr is not None:
            (rel, lo, hi), method = pr, "paired"
        rows.append({"build": r["build"], "test": r["test"], "n": int(r["n"]), "qps": r["qps"],
                     "cv_pct": 100 * r["sd"] / r["qps"] if r["n"] > 1 else np.nan,
                     "rel": rel, "lo": lo, "hi": hi, "pct": 100 * (rel - 1), "method": method})
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=COLUMNS)
    meta = df.drop_duplicates("build").set_index("build")[["toolchain", "version"]]
    out = out.join(meta, on="build")
    out["test"] = pd.Categorical(out["test"], categories=list(TESTS), ordered=True)
    out = out.sort_values(["test", "build"]).reset_index(drop=True)
    out["test"] = out["test"].astype(str)
    return out[COLUMNS]


def relative_by_version(df: pd.DataFrame, toolchain: str = "gcc", level: float = 0.95,
                        paired: bool = True) -> pd.DataFrame:
    """The post's comparison: each build against the `toolchain` build of its own RocksDB version.

    relative_qps per version (paired within repetitions, as there), with a
    `base` column naming each row's base build. Versions without a build of
    that toolchain are left out, since nothing in them is comparable.
    """
    parts = []
    for _, g in df.groupby("version", sort=True):
        base = g.loc[g["toolchain"] == toolchain, "build"].unique()
        if len(base) != 1:
            continue
        r = relative_qps(g, str(base[0]), level=level, paired=paired)
        parts.append(r.assign(base=str(base[0])))
    if not parts:
        return pd.DataFrame(columns=[*COLUMNS, "base"])
    return pd.concat(parts, ignore_index=True)


def by_version_summary(rel_v: pd.DataFrame) -> pd.DataFrame:
    """Per version and toolchain: the mean relative QPS over tests, and how many tests' intervals lie
    wholly above or below 1 (the rest are within noise)."""
    cols = ["version", "toolchain", "build", "base", "mean_pct", "tests", "faster", "slower"]
    if rel_v.empty:
        return pd.DataFrame(columns=cols)
    g = rel_v.groupby(["version", "toolchain", "build", "base"], sort=False)
    out = pd.DataFrame({
        "mean_pct": g["pct"].mean(), "tests": g.size(),
        "faster": g.apply(lambda x: int((x["lo"] > 1).sum()), include_groups=False),
        "slower": g.apply(lambda x: int((x["hi"] < 1).sum()), include_groups=False)}).reset_index()
    order = out["toolchain"].map({t: i for i, t in enumerate(TOOLCHAIN_ORDER)}).fillna(len(TOOLCHAIN_ORDER))
    return out.assign(_order=order).sort_values(["version", "_order"]).drop(columns="_order") \
        .reset_index(drop=True)[cols]
