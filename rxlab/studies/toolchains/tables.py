"""The toolchain study's tables: the comparisons measured in turns, per version, the post's numbers beside."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.studies.toolchains.params import TESTS
from rxlab.studies.toolchains.relative import by_version_summary, qps_summary
from rxlab.studies.toolchains.result import ToolchainsResult, both_sides

POST_VERSION = "10.8"   # the RocksDB version the post's builds are of


def published_relative() -> pd.DataFrame:
    """The post's relative QPS of clang and clang+LTO against gcc (RocksDB 10.8), per server and test.

    "~N% more" -> 1 + N/100, "less" -> 1 - N/100, "similar" -> 1.0 (flagged).
    """
    pub = published.load("gccclang_relative_qps")
    pub = pub[pub["test"].isin(TESTS) & (pub["rocksdb_version"] != "most versions")].copy()
    sign = pub["direction"].map({"more": 1.0, "less": -1.0, "similar": 0.0})
    pub["rel"] = 1.0 + sign * pub["pct"].fillna(0.0) / 100.0
    pub["similar"] = pub["direction"] == "similar"
    pub = pub.rename(columns={"compiler": "toolchain", "baseline": "base"})
    cols = ["server", "test", "toolchain", "base", "rel", "similar", "direction", "pct"]
    return pub[cols].reset_index(drop=True)


def side_by_side(cmp: pd.DataFrame, pub: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per test: each comparison here (a build over the base, and the base's A/A) with its 95% interval and
    whether it is resolved, the post's ratios per toolchain and server beside."""
    pub = published_relative() if pub is None else pub
    out = pd.DataFrame(index=pd.Index(list(TESTS), name="test"))
    for name, grp in cmp.groupby("comparison", sort=False):
        g = grp.set_index("test").reindex(out.index)
        out[f"{name} ratio"] = g["ratio"].round(3)
        out[f"{name} 95% CI"] = [f"{lo:.3f}..{hi:.3f}" if np.isfinite(lo) else "no interval yet"
                                 for lo, hi in zip(g["lo"], g["hi"], strict=True)]
        out[f"{name} status"] = g["status"]
    for (tc, srv), g in pub.groupby(["toolchain", "server"], sort=False):
        out[f"post {tc}/gcc {srv}"] = g.set_index("test")["rel"].reindex(out.index)
    return out.loc[[t for t in TESTS if t in set(cmp["test"])]]


def comparison_table(result: ToolchainsResult) -> pd.DataFrame:
    """Each build's QPS over the base build's per test: ratio, 95% interval, half-width (%), resolved, turns,
    status; the base's A/A row per test."""
    both_sides(result)
    return result.comparisons


def qps_table(result: ToolchainsResult) -> pd.DataFrame:
    """Absolute QPS per build and test over every run: runs, mean, cv (not a comparison)."""
    both_sides(result)
    return qps_summary(result.frame)


def post_table(result: ToolchainsResult) -> pd.DataFrame:
    """The ratios here (resolved or not) beside the post's, per test."""
    both_sides(result)
    return side_by_side(result.comparisons)


def by_version_table(result: ToolchainsResult) -> pd.DataFrame:
    """Per version and toolchain against that version's gcc build: mean over tests, tests resolved, and of
    those the ones faster or slower."""
    both_sides(result)
    return by_version_summary(result.by_version)


def relative_by_version_table(result: ToolchainsResult) -> pd.DataFrame:
    """Every build against the gcc build of its version, per test (the rows of by_version), with the A/A."""
    both_sides(result)
    return result.by_version


def published_table(result: ToolchainsResult) -> pd.DataFrame:
    """The post's relative QPS per server, test and toolchain (the same for every result)."""
    return published_relative()


TABLES = {
    "comparisons": comparison_table,
    "qps": qps_table,
    "post": post_table,
    "by_version": by_version_table,
    "relative_by_version": relative_by_version_table,
    "published": published_table,
}
