"""The toolchain study's tables: relative QPS here, per version, and the post's numbers beside them."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.studies.toolchains.params import TESTS
from rxlab.studies.toolchains.relative import by_version_summary
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


def side_by_side(rel: pd.DataFrame, pub: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per test: each local build's relative QPS (with its interval), the post's per toolchain and server."""
    pub = published_relative() if pub is None else pub
    out = pd.DataFrame(index=pd.Index(list(TESTS), name="test"))
    for b, grp in rel.groupby("build", sort=False):
        g = grp.set_index("test")
        out[f"{b} rel"] = g["rel"].round(3)
        lo_hi = zip(g["lo"].reindex(out.index), g["hi"].reindex(out.index), strict=True)
        out[f"{b} 95% CI"] = [f"{lo:.3f}..{hi:.3f}" if np.isfinite(lo) else "n<2" for lo, hi in lo_hi]
        out[f"{b} cv %"] = g["cv_pct"].round(1)
    for (tc, srv), g in pub.groupby(["toolchain", "server"], sort=False):
        out[f"post {tc}/gcc {srv}"] = g.set_index("test")["rel"].reindex(out.index)
    return out.loc[[t for t in TESTS if t in set(rel["test"])]]


def relative_table(result: ToolchainsResult) -> pd.DataFrame:
    """Mean QPS per build and test, its cv, and the QPS relative to the base build with its interval."""
    both_sides(result)
    return result.relative


def post_table(result: ToolchainsResult) -> pd.DataFrame:
    """The relative QPS here beside the post's, per test."""
    both_sides(result)
    return side_by_side(result.relative)


def by_version_table(result: ToolchainsResult) -> pd.DataFrame:
    """Per version and toolchain against that version's gcc build: mean over tests, tests beyond noise."""
    both_sides(result)
    return by_version_summary(result.by_version)


def relative_by_version_table(result: ToolchainsResult) -> pd.DataFrame:
    """Every build against the gcc build of its version, per test (the rows of by_version)."""
    both_sides(result)
    return result.by_version


def published_table(result: ToolchainsResult) -> pd.DataFrame:
    """The post's relative QPS per server, test and toolchain (the same for every result)."""
    return published_relative()


TABLES = {
    "relative": relative_table,
    "post": post_table,
    "by_version": by_version_table,
    "relative_by_version": relative_by_version_table,
    "published": published_table,
}
