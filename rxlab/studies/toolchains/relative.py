"""Relative QPS measured in turns: each build against the base build, or against gcc of its own version.

The post's number is the relative QPS (QPS of a build / QPS of a base build)
per test; its main worry is variance. The study runs in turns (params.COMPARE,
rxlab.core.turns_plan): each turn runs every build once and the base twice,
so every ratio is paired within a turn (the machine's drift between turns
cancels) and carries a 95% interval over the turns (Student's t on the
per-turn log ratios, rxlab.core.resolution); the base's second run over its
first, the A/A row, is what "equal" looks like on this machine. A ratio whose
interval did not reach the target is unresolved and says why (`status`).

The study's own comparisons are the protocol's table (result.comparisons).
This module adds the post's comparison, each build against the gcc build of
its own RocksDB version, from the same turns, and a summary per version.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import resolution
from rxlab.core.resolution import AA, DEFAULT_TARGET_PCT, MIN_TURNS
from rxlab.core.turns_plan import observations
from rxlab.studies.toolchains.params import COMPARE, TESTS

TOOLCHAIN_ORDER = ("gcc", "clang", "clang+LTO")
BY_VERSION_COLUMNS = ["version", "test", *resolution.COMPARISON_COLUMNS, "toolchain"]
SUMMARY_COLUMNS = ["version", "toolchain", "build", "base", "mean_pct", "tests", "resolved", "faster",
                   "slower"]


def build_labels(frame: pd.DataFrame) -> pd.DataFrame:
    """Each build's toolchain and version (as the runs recorded them), indexed by build."""
    if frame.empty:
        return pd.DataFrame(columns=["toolchain", "version"], index=pd.Index([], name="build"))
    return frame.drop_duplicates("build").set_index("build")[["toolchain", "version"]].astype(str)


def with_labels(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """A comparison table with each row's toolchain and version (the A/A row: its base's)."""
    labels = build_labels(frame)
    build = table["config"].where(table["config"] != AA, table["base"])
    return table.assign(toolchain=build.map(labels["toolchain"]), version=build.map(labels["version"]))


def by_version(frame: pd.DataFrame, comparisons: pd.DataFrame, toolchain: str = "gcc", *,
               target: float = DEFAULT_TARGET_PCT, min_turns: int = MIN_TURNS,
               stopped: str = "") -> pd.DataFrame:
    """The post's comparison: each build against the `toolchain` build of its own RocksDB version, per test,
    paired within turns as the study's own comparisons are (`comparisons`: the study's table, whose A/A
    rows, the base build against itself, are set beside every version's). Versions without a build of
    that toolchain are left out: nothing in them is comparable."""
    if frame.empty:
        return pd.DataFrame(columns=BY_VERSION_COLUMNS)
    obs = observations(frame, COMPARE).assign(version=frame["version"].astype(str))
    labels = build_labels(frame)
    bases = {}
    for v in sorted(set(labels["version"])):
        base = labels.index[(labels["version"] == v) & (labels["toolchain"] == toolchain)]
        if len(base) == 1:
            bases[v] = str(base[0])
    obs = obs[obs["version"].isin(list(bases))]
    if obs.empty:
        return pd.DataFrame(columns=BY_VERSION_COLUMNS)
    t = resolution.compare(obs, lambda kd: bases[kd["version"]], ["version", "test"], target=target,
                           min_turns=min_turns, why_unresolved=stopped)
    aa = comparisons[comparisons["config"] == AA]    # labelled with the base's toolchain already
    parts = [with_labels(t[t["config"] != AA], frame), *(aa.assign(version=v) for v in bases)]
    out = pd.concat([p for p in parts if len(p)], ignore_index=True)
    out["version"] = out["version"].astype(str)
    rank = out["test"].map({x: i for i, x in enumerate(TESTS)})
    return out.assign(_r=rank, _aa=out["config"] == AA).sort_values(["version", "_r", "_aa"], kind="stable") \
        .drop(columns=["_r", "_aa"]).reset_index(drop=True)[BY_VERSION_COLUMNS]


def by_version_summary(rel_v: pd.DataFrame) -> pd.DataFrame:
    """Per version and toolchain against that version's gcc build: the mean relative QPS over tests (in
    percent), how many tests' ratios are resolved, and of those how many lie wholly above or below 1 (the
    unresolved are not to be read as differences)."""
    t = rel_v[(rel_v["config"] != AA) & (rel_v["config"] != rel_v["base"])] if len(rel_v) else rel_v
    if t.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    ok = t["resolved"].astype(bool)
    t = t.assign(pct=100 * (t["ratio"] - 1), ok=ok, up=ok & (t["lo"] > 1), down=ok & (t["hi"] < 1))
    g = t.rename(columns={"config": "build"}).groupby(["version", "toolchain", "build", "base"], sort=False)
    out = pd.DataFrame({"mean_pct": g["pct"].mean(), "tests": g.size(), "resolved": g["ok"].sum(),
                        "faster": g["up"].sum(), "slower": g["down"].sum()}).reset_index()
    order = out["toolchain"].map({x: i for i, x in enumerate(TOOLCHAIN_ORDER)}).fillna(len(TOOLCHAIN_ORDER))
    out = out.assign(_order=order).sort_values(["version", "_order"]).drop(columns="_order")
    return out.astype({c: int for c in ("tests", "resolved", "faster", "slower")}).reset_index(drop=True)[
        SUMMARY_COLUMNS]


def qps_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Absolute QPS per build and test over every run (the base's A/A copy among them): runs, mean, cv %.
    Not a comparison: the ratios, and whether they are resolved, are the comparison tables'."""
    cols = ["build", "toolchain", "version", "test", "runs", "qps", "cv_pct"]
    if frame.empty:
        return pd.DataFrame(columns=cols)
    g = frame.groupby(["build", "test"], sort=False)["qps"]
    out = pd.DataFrame({"runs": g.count(), "qps": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    out["cv_pct"] = np.where(out["runs"] > 1, 100 * out["sd"] / out["qps"], np.nan)
    out = out.join(build_labels(frame), on="build")
    rank = out["test"].map({x: i for i, x in enumerate(TESTS)})
    return out.assign(_r=rank).sort_values(["_r", "build"], kind="stable").reset_index(drop=True)[cols]
