"""The readahead study's tables: the comparisons in turns, the runs turn by turn, medians per setting, the
seed's best and worst beside ours, the device."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.core.metrics import column
from rxlab.core.resolution import AA
from rxlab.core.turns_plan import result_comparisons
from rxlab.studies.compaction_readahead.columns import DERIVED, READ_MBPS
from rxlab.studies.compaction_readahead.params import COMPARE, KIB, MIB, seed_devices, size_label
from rxlab.studies.compaction_readahead.result import ReadaheadResult

SUMMARY_COLUMNS = ("setting", "readahead_kb", "qps", READ_MBPS, "reqsz", "iops", "cache.hit", "own_rmbps",
                   "fs_rmbps", "compact_rmbps", "stall.pct", "wmbps", "cgroup.peak_mib", "cgroup.cache_mib",
                   "max_sectors_kb", "above_max_sectors", "n")
# the seed's three graphs: its metric name -> our column
SEED_METRICS = {"throughput": "qps", "read MB/s (iostat)": READ_MBPS, "rareq-sz (iostat)": "reqsz"}
PER_TURN_COLUMNS = ("rep", "copy", "setting", "readahead_kb", "qps", READ_MBPS, "reqsz", "iops", "cache.hit",
                    "fs_rmbps", "compact_rmbps", "stall.pct")


def comparison_table(result: ReadaheadResult) -> pd.DataFrame:
    """Each setting's overwrite throughput (qps) over the base's (the first setting, 0 by default) with its
    95% interval over the turns, half-width (%), resolved, turns and status, and the base's A/A row
    (rxlab.core.turns_plan)."""
    return result_comparisons(result, COMPARE)


def comparisons_resolved(result: ReadaheadResult) -> str:
    """'k of n ratios to <base> resolved': what the turns say about the throughput ranking."""
    c = comparison_table(result)
    cmp = c[c["config"] != AA]
    if cmp.empty:
        return "no comparison (one setting)"
    return f"{int(cmp['resolved'].astype(bool).sum())} of {len(cmp)} ratios to {cmp['base'].iloc[0]} resolved"


def per_turn(result: ReadaheadResult) -> pd.DataFrame:
    """Every run, turn by turn (rep; copy 1: the base's A/A second run), in the order of the settings: the
    throughput the comparisons use and the read side the seed also shows (rmbps, reqsz, iops: the device;
    cache.hit; fs_rmbps and compact_rmbps: RocksDB's reads; stall.pct). Only qps is compared in turns: the
    others are the values of each turn, to be read turn against turn."""
    f = result.frame.assign(readahead_kb=result.frame["readahead"] / KIB)
    f = f.sort_values(["rep", "readahead", "copy"], kind="stable")
    return f[[c for c in PER_TURN_COLUMNS if c in f.columns]].reset_index(drop=True)


def summary(result: ReadaheadResult) -> pd.DataFrame:
    """Medians over the turns (the base's two runs a turn both counted, `n` the runs), one row per setting,
    in the seed's terms. Differences between settings are the comparisons' (comparison_table), with their
    intervals; a median alone does not resolve one.

    readahead_kb: compaction_readahead_size in KiB; qps: overwrite
    throughput; rmbps, reqsz, iops: the device (iostat's rMB/s, rareq-sz,
    r/s); cache.hit: the page-cache hit ratio; own_rmbps: the process's own
    storage reads; fs_rmbps: what RocksDB read through the file system;
    compact_rmbps: compaction's reads; stall.pct: write stalls; cgroup.peak_mib
    and cgroup.cache_mib: the cgroup's peak usage and page cache at the end;
    above_max_sectors: the setting exceeds the device's max_sectors_kb.
    """
    f = result.frame
    msk = result.max_sectors_kb
    g = f.assign(**{"cgroup.peak_mib": column(f, "cgroup.peak") / MIB,
                    "cgroup.cache_mib": (column(f, "cgroup.cache") if "cgroup.cache" in f.columns
                                         else column(f, "cgroup.file")) / MIB})
    cols = [c for c in (*DERIVED, "cgroup.peak_mib", "cgroup.cache_mib") if c in g.columns]
    num = g[["readahead", *cols]].apply(pd.to_numeric, errors="coerce")
    med = num.groupby("readahead", sort=True)[cols].median()
    med["n"] = num.groupby("readahead").size()
    med = med.reset_index()
    med["setting"] = med["readahead"].map(size_label)
    med["readahead_kb"] = med["readahead"] / KIB
    med["max_sectors_kb"] = msk
    med["above_max_sectors"] = med["readahead_kb"] > msk if msk else np.nan
    return med[[c for c in SUMMARY_COLUMNS if c in med.columns]]


def findings_table(result: ReadaheadResult) -> pd.DataFrame:
    """Per metric of the seed's three graphs: the best and worst setting here and in the seed.

    The seed names the best and worst of its three explicit settings (it
    states no numbers); local best and worst are over the settings run here,
    by the medians of `summary`, with the spread of the medians in % of the best.
    `in turns`: for throughput, how many of its ratios to the base the turns
    resolved (the ranking stands only where they did); the read side is not
    compared in turns.
    """
    pub = published.load("readahead_findings")
    s = summary(result)
    rows = []
    resolved = comparisons_resolved(result)
    for metric, col in SEED_METRICS.items():
        p = pub[pub["metric"] == metric]
        v = s.set_index("setting")[col].dropna()
        best = v.idxmax() if len(v) else ""
        worst = v.idxmin() if len(v) else ""
        spread = (v.max() - v.min()) / v.max() * 100 if len(v) and v.max() else np.nan
        rows.append({"metric": metric, "column": col, "best here": best, "worst here": worst,
                     "best/worst gap %": spread,
                     "best in seed": str(p["best"].iloc[0]).removeprefix("compaction_readahead_size=")
                     if len(p) else "",
                     "worst in seed": (str(p["worst"].iloc[0]).removeprefix("compaction_readahead_size=")
                                       if len(p) and str(p["worst"].iloc[0]) not in ("", "nan") else ""),
                     "in turns": resolved if col == COMPARE.metric else "not compared (per_turn table)"})
    return pd.DataFrame(rows)


def device_table(result: ReadaheadResult) -> pd.DataFrame:
    """The device that held the DB (from the runs) beside the seed's (max_sectors_kb of md2 and its SSDs)."""
    f = result.frame.iloc[0]

    def get(k):
        v = f.get(k)
        return None if v is None or (isinstance(v, float) and np.isnan(v)) else v

    here = {"device": f"{get('device')} (here)", "max_sectors_kb": get("spec.max_sectors_kb"),
            "max_hw_sectors_kb": get("spec.max_hw_sectors_kb"), "read_ahead_kb": get("spec.read_ahead_kb"),
            "scheduler": get("scheduler") or "", "source": "local"}
    return pd.concat([pd.DataFrame([here]), seed_devices()], ignore_index=True)


TABLES = {
    "comparisons": comparison_table,
    "per_turn": per_turn,
    "summary": summary,
    "findings": findings_table,
    "device": device_table,
}
