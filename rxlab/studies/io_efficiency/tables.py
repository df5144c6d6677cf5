"""The seed's tables in its column names (medians over every run of the turns, the published rows beside),
and the study's comparisons with their intervals.

Columns come from rxlab.core.metrics only (seed_columns, efficiency): nothing
here computes qps, iops, io.eff or the CPU per operation itself. The
comparisons come from rxlab.core.turns_plan (ratios to a base per turn, 95%
t-intervals, rxlab.core.resolution).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rxlab.bench.ioeff.baseline import DB_COLUMNS, background_io
from rxlab.core import metrics, published, stats
from rxlab.core.resolution import AA
from rxlab.core.turns_plan import result_comparisons
from rxlab.studies.io_efficiency.params import (
    COMPARE,
    DB_TOOL,
    FIO,
    FIO_TOOL,
    IOEFF_COMPARE,
    SEED_TESTS,
    SETTING,
    main_setting,
)
from rxlab.studies.io_efficiency.result import KEYS, IoEfficiencyResult

# Column sets of the seed's tables.
FIO_COLUMNS = ("iops", "usPer", "syPer", "cpuPer", "lat.us", "numjobs")
EFF_COLUMNS = (*metrics.EFFICIENCY_COLUMNS, "test")
DB_TABLE_COLUMNS = (*DB_COLUMNS, "users", "source", "n", "backend")
NUMERIC = (*(c for c in metrics.SEED_COLUMNS if c != "test"), *metrics.EFFICIENCY_COLUMNS)


def users_label(n) -> str:
    """"1 user", "2 users": the seed's table titles."""
    return f"{int(n)} user" + ("" if int(n) == 1 else "s")


def published_users(threads: int) -> int:
    """The seed's table to put beside a local one: 1 user for 1, its 6 users for any other count."""
    return 1 if threads == 1 else 6


def main_block_align(result: IoEfficiencyResult) -> bool:
    """The block_align setting of the per-client tables: on when it was run (the seed's main tables)."""
    return main_setting(result.block_align)


def seed_rows(result: IoEfficiencyResult, delay_us: int | None = 0) -> pd.DataFrame:
    """The seed's read tests, one row per run and test, with io.eff, us.inc and cpu.inc.

    Each row is measured against the fio baseline of its own repetition,
    thread count and delay (the run just before it), through
    rxlab.core.metrics.efficiency. delay_us None keeps every delay.
    """
    f = result.frame
    if delay_us is not None:
        f = f[f["delay_us"] == delay_us]
    db = f[(f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS)]
    fio = f[f["tool"] == FIO_TOOL]
    if db.empty:
        raise ValueError(f"study {result.study}: no readrandom rows at delay_us={delay_us}")
    parts = []
    for (rep, t, d), g in db.groupby(["rep", "threads", "delay_us"], sort=True):
        b = fio[(fio["rep"] == rep) & (fio["threads"] == t) & (fio["delay_us"] == d)]
        if b.empty:
            raise ValueError(f"study {result.study}: no fio baseline for rep={rep}, threads={t}, "
                             f"delay_us={d}")
        eff = metrics.efficiency(g.drop(columns=[c for c in NUMERIC if c in g.columns]), b.iloc[[0]])
        keys = g[[c for c in KEYS if c != "test"]]
        parts.append(pd.concat([keys, eff[[*DB_COLUMNS, *metrics.EFFICIENCY_COLUMNS]]], axis=1))
    return pd.concat(parts).sort_index()


def fio_rows(result: IoEfficiencyResult, delay_us: int | None = 0) -> pd.DataFrame:
    """The fio baseline rows (not the placed or unaligned runs), at one delay (None: every delay)."""
    f = result.frame
    f = f[f["tool"] == FIO_TOOL]
    return f if delay_us is None else f[f["delay_us"] == delay_us]


def seed_tables(result: IoEfficiencyResult, delay_us: int = 0) -> dict[str, pd.DataFrame]:
    """The seed's tables, local medians over the repetitions with the published rows beside.

    Keys (the seed's table titles) and columns:

    * "fio": iops usPer syPer cpuPer lat.us numjobs source
    * "db_bench N user(s)" for each thread count (the main block_align
      setting, on when run): qps iops reqsz usPer syPer cpuPer rx.lat io.lat
      test users source
    * "io.eff N user(s)": io.eff us.inc cpu.inc test users source
    * with both block_align settings, at the smallest thread count:
      "block_align disabled", "block_align enabled" (the db_bench columns)
      and "block_align effect": test qps_on qps_off qps_change_pct reqsz_on
      reqsz_off users source

    source is "local" or "published"; local rows carry `n` (repetitions)
    and `backend`. Published rows beside a local N-user table are the seed's
    1-user table for one client and its 6-user table for more (the seed has
    no other counts; `users` says which). The seed does not state the users
    of its block_align tables (users empty there; they equal its 1-user table).
    """
    rows = seed_rows(result, delay_us)
    med = stats.medians(rows, ["threads", "block_align", "test"], NUMERIC)
    med["backend"] = result.backend
    pub_db = published.load("ioeff_db_bench")
    pub_eff = published.load("ioeff_efficiency")
    pub_fio = published.load("ioeff_fio")
    out: dict[str, pd.DataFrame] = {}

    fio = stats.medians(fio_rows(result, delay_us), ["threads"],
                        ["iops", "usPer", "syPer", "cpuPer", "rx.lat"])
    fio = fio.rename(columns={"rx.lat": "lat.us"}).assign(numjobs=lambda d: d["threads"], source="local",
                                                          backend="rxlab-fio sync")
    pf = pub_fio.assign(source="published", n=np.nan, backend="fio sync")
    out["fio"] = _stack(fio, pf, [*FIO_COLUMNS, "source", "n", "backend"])

    main = main_block_align(result)
    for t in result.threads:
        loc = med[(med["threads"] == t) & (med["block_align"] == main)].assign(users=t, source="local")
        pu = published_users(t)
        pdb = pub_db[pub_db["table"] == f"db_bench {users_label(pu)}"].assign(source="published", n=np.nan,
                                                                               backend="default")
        out[f"db_bench {users_label(t)}"] = _stack(loc, pdb, DB_TABLE_COLUMNS)
        pe = pub_eff[pub_eff["table"] == f"io.eff {users_label(pu)}"].assign(source="published", n=np.nan,
                                                                              backend="default")
        out[f"io.eff {users_label(t)}"] = _stack(loc, pe, [*EFF_COLUMNS, "users", "source", "n", "backend"])

    if len(result.block_align) >= 2:
        t0 = min(result.threads)
        for ba, title in ((False, "block_align disabled"), (True, "block_align enabled")):
            loc = med[(med["threads"] == t0) & (med["block_align"] == ba)].assign(users=t0, source="local")
            pdb = pub_db[pub_db["table"] == title].assign(source="published", n=np.nan, backend="default")
            out[title] = _stack(loc, pdb, DB_TABLE_COLUMNS)
        out["block_align effect"] = _block_align_effect(out["block_align enabled"],
                                                        out["block_align disabled"])
    return out


def _stack(local: pd.DataFrame, pub: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """Local rows then published rows, the given columns (absent ones empty)."""
    parts = []
    for frame in (local, pub):
        d = frame.reset_index(drop=True).copy()
        for c in cols:
            if c not in d.columns:
                d[c] = np.nan
        parts.append(d[list(cols)].astype(object))
    out = pd.concat(parts, ignore_index=True)
    for c in cols:
        if c in NUMERIC or c in FIO_COLUMNS or c in ("n", "users"):
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        else:
            out[c] = out[c].astype(str).where(out[c].notna(), "")
    return out


def _block_align_effect(on: pd.DataFrame, off: pd.DataFrame) -> pd.DataFrame:
    """Per test and source: QPS with and without block_align, the change in %, reqsz both ways."""
    m = on.merge(off, on=["source", "test"], suffixes=("_on", "_off"))
    out = pd.DataFrame({
        "test": m["test"], "qps_on": m["qps_on"], "qps_off": m["qps_off"],
        "qps_change_pct": (m["qps_on"] / m["qps_off"] - 1.0) * 100.0,
        "reqsz_on": m["reqsz_on"], "reqsz_off": m["reqsz_off"], "users": m["users_on"],
        "source": m["source"]})
    order = out["source"].map({"local": 0, "published": 1})
    return out.assign(_o=order).sort_values(["_o", "test"]).drop(columns="_o").reset_index(drop=True)


# How the seed prints each column (decimals); everything else is left alone.
SEED_DECIMALS = {"qps": 0, "iops": 0, "reqsz": 1, "usPer": 3, "syPer": 3, "cpuPer": 3, "rx.lat": 2,
                 "io.lat": 0, "lat.us": 2, "io.eff": 3, "us.inc": 3, "cpu.inc": 3, "qps_on": 0, "qps_off": 0,
                 "qps_change_pct": 1, "reqsz_on": 1, "reqsz_off": 1, "numjobs": 0, "users": 0, "n": 0}


def round_like_seed(df: pd.DataFrame) -> pd.DataFrame:
    """A copy rounded as the seed prints its tables (qps 0 decimals, usPer 3, ...), for display."""
    out = df.copy()
    for c, d in SEED_DECIMALS.items():
        if c in out.columns:
            out[c] = pd.to_numeric(out[c], errors="coerce").round(d)
            if d == 0 and out[c].notna().all():
                out[c] = out[c].astype(int)
    return out


# --------------------------------------------------------------------------- comparisons, in turns

COMPARISON_KEYS = ["delay_us", "threads", "test", "metric"]


def _base_first(result: IoEfficiencyResult) -> IoEfficiencyResult:
    """The result with the main setting's rows first: a study stored before turns has no A/A copy to
    tell its base by, and the protocol then takes each group's first configuration."""
    f = result.frame
    order = (f["setting"] != SETTING[main_block_align(result)]).astype(int)
    return dataclasses.replace(result, frame=f.assign(_o=order).sort_values("_o", kind="stable")
                               .drop(columns="_o"))


def _tidy(t: pd.DataFrame, metric: str) -> pd.DataFrame:
    """A comparison table keyed as the study's: `test` for the seed test, the metric compared, rows in
    the groups' and the seed's test order."""
    t = t.rename(columns={"seed_test": "test"}).assign(metric=metric)
    t = t[[*COMPARISON_KEYS, *[c for c in t.columns if c not in COMPARISON_KEYS]]]
    order = t["test"].map({x: i for i, x in enumerate(SEED_TESTS)})
    return (t.assign(_o=order).sort_values(["delay_us", "threads", "_o"], kind="stable")
            .drop(columns="_o").reset_index(drop=True))


def block_align_comparisons(result: IoEfficiencyResult) -> pd.DataFrame:
    """What the turns resolve (params.COMPARE): per delay, client count and seed test, each block_align
    setting's QPS over the main one's, with its 95% interval over the turns, and the main setting's A/A
    row (its second run of a turn over its first); `status` says why a ratio is unresolved."""
    return _tidy(result_comparisons(_base_first(result), COMPARE), COMPARE.metric)


def io_eff_comparisons(result: IoEfficiencyResult) -> pd.DataFrame:
    """io.eff with its interval (params.IOEFF_COMPARE): per delay, client count and seed test, each
    block_align setting's device read IOPS over fio's baseline of the same turn (the main setting's two
    runs by their geometric mean), 95% t-interval on the per-turn log ratios as every comparison's;
    then the main setting's A/A row on device read IOPS: how far two runs of the same configuration
    are apart here. The target and why the turns stopped are the protocol's."""
    f = _base_first(result).frame
    db = f[f["seed_test"].notna()].assign(copy=0)     # both runs of the base: one configuration here
    fio = f[f["tool"] == FIO_TOOL]
    base = [fio.assign(seed_test=t, setting=FIO) for t in SEED_TESTS]     # fio's run, under each test
    ratios = result_comparisons(dataclasses.replace(result, frame=pd.concat([db, *base])), IOEFF_COMPARE)
    aa = result_comparisons(_base_first(result), dataclasses.replace(COMPARE, metric=IOEFF_COMPARE.metric))
    return _tidy(pd.concat([ratios, aa[aa["config"] == AA]], ignore_index=True), IOEFF_COMPARE.metric)


def comparison_table(result: IoEfficiencyResult) -> pd.DataFrame:
    """Every comparison the study reports, with its 95% interval over the turns: block_align's (QPS ratio
    to the main setting; metric qps) and io.eff (device read IOPS over fio's; metric iops), each with
    its A/A row. Columns: delay_us, threads, test, metric, then rxlab.core.resolution's (base, config,
    comparison, ratio, lo, hi, half_width, resolved, turns, status)."""
    return pd.concat([block_align_comparisons(result), io_eff_comparisons(result)], ignore_index=True)


# --------------------------------------------------------------------------- the study's tables

def _titled(result: IoEfficiencyResult, titles) -> pd.DataFrame:
    """The seed tables whose title `titles(title)` accepts, stacked, the title as a first column `table`."""
    parts = [t.assign(table=name)[["table", *t.columns]] for name, t in seed_tables(result).items()
             if titles(name)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def fio_table(result: IoEfficiencyResult) -> pd.DataFrame:
    """The seed's fio table: IOPS, CPU per read and latency per numjobs, local and published."""
    return seed_tables(result)["fio"]


def db_bench_table(result: IoEfficiencyResult) -> pd.DataFrame:
    """The seed's db_bench tables, one per client count (`table`), the seed's rows beside each."""
    return _titled(result, lambda name: name.startswith("db_bench "))


def io_eff_table(result: IoEfficiencyResult) -> pd.DataFrame:
    """The seed's io.eff tables (io.eff, us.inc, cpu.inc), one per client count (`table`)."""
    return _titled(result, lambda name: name.startswith("io.eff "))


def block_align_table(result: IoEfficiencyResult) -> pd.DataFrame:
    """The seed's block_align disabled and enabled tables (empty with one block_align setting)."""
    return _titled(result, lambda name: name in ("block_align disabled", "block_align enabled"))


def block_align_effect_table(result: IoEfficiencyResult) -> pd.DataFrame:
    """QPS with and without block_align and the change, reqsz both ways (empty with one setting)."""
    return seed_tables(result).get("block_align effect", pd.DataFrame())


TABLES = {
    "fio": fio_table,
    "db_bench": db_bench_table,
    "io_eff": io_eff_table,
    "block_align": block_align_table,
    "block_align_effect": block_align_effect_table,
    "background_io": background_io,
    "comparisons": comparison_table,
}
