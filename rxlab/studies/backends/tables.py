"""The backends study's tables: the seed's numbers beside this machine's (medians over repetitions)."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from rxlab.core import metrics, published
from rxlab.core import params as checks
from rxlab.core.turns_plan import result_comparisons
from rxlab.studies.backends.params import (
    CLUSTER_TESTS,
    COMPARE,
    ENGINES,
    LOCAL_TESTS,
    PCT_COLUMNS,
    PCT_NAMES,
    SEED_FILE,
    ZIPPY_TEST,
    engine,
)
from rxlab.studies.backends.result import BackendsResult

PUB_WORKLOAD = {"mixgraph": "mixgraph (ZippyDB)"}

_VALUE_COLS = ["mbps", "qps", "cpuPer", "rx.lat", *PCT_COLUMNS, "ops", "wall_s"]


def medians(result: BackendsResult) -> pd.DataFrame:
    """Per case, backend and test: medians over the repetitions (mbps, qps, cpuPer, rx.lat,
    percentiles), the min and max of mbps, and n (the repetitions with an MB/s: the slices' where the
    study was measured in slices, whose whole runs give the latency)."""
    f = result.frame
    cols = [c for c in _VALUE_COLS if c in f.columns]
    num = f[["case", "delay_us", "jitter_us", "backend", "test", *cols]].copy()
    for c in cols:
        num[c] = pd.to_numeric(num[c], errors="coerce").astype(float)
    g = num.groupby(["case", "delay_us", "jitter_us", "backend", "test"], sort=False)
    out = g[cols].median()
    out["mbps_min"], out["mbps_max"] = g["mbps"].min(), g["mbps"].max()
    out["n"] = g["mbps"].count()
    return out.reset_index()


def _matches(published_engine: str, backend: str) -> bool:
    """Does a published engine field (posix, posix|libaio, all, ...) cover this backend?"""
    e = engine(backend)
    if published_engine == "all":
        return e in ENGINES
    return e in str(published_engine).split("|")


def _published_for(pub: pd.DataFrame, setup: str, test: str, backend: str, **eq) -> pd.DataFrame:
    w = PUB_WORKLOAD.get(test, test)
    sel = pub[(pub["setup"] == setup) & (pub["workload"] == w)
              & pub["engine"].map(lambda e: _matches(e, backend))]
    for k, v in eq.items():
        sel = sel[sel[k] == v]
    return sel


def _pub_text(sel: pd.DataFrame) -> tuple[float, float, str, str, str]:
    """(value, value_max, qualifier, table, engine) of the first published row, NaNs when none."""
    if sel.empty:
        return np.nan, np.nan, "", "", ""
    r = sel.iloc[0]
    q = r["qualifier"] if isinstance(r["qualifier"], str) and r["qualifier"] != "nan" else ""
    vmax = float(r["value_max"]) if pd.notna(r["value_max"]) else np.nan
    return float(r["value"]), vmax, q, str(r["table"]), str(r["engine"])


def _median_rows(result: BackendsResult, case: str,
                 tests: Sequence[str]) -> Iterator[tuple[str, str, pd.Series]]:
    """(test, backend, its medians) of each test and backend measured in `case`, tests first."""
    med = medians(result)
    for t in tests:
        for b in result.backends:
            m = med[(med["case"] == case) & (med["backend"] == b) & (med["test"] == t)]
            if not m.empty:
                yield t, b, m.iloc[0]


def comparison_table(result: BackendsResult) -> pd.DataFrame:
    """Per case and test, each backend's MB/s ratio to the case's base (default on the local disk, posix
    in the emulated cases) with its 95% interval over turns, half-width (%), resolved, turns and status,
    and the base's A/A row (rxlab.core.turns_plan)."""
    return result_comparisons(result, COMPARE)


def throughput_table(result: BackendsResult, case: str = "local",
                     tests: Sequence[str] = LOCAL_TESTS) -> pd.DataFrame:
    """MB/s per test and backend in one case (medians, min..max, n), the report's number beside
    (published, published_max, qualifier, figure; empty where it states none for that backend). The
    backends' ratios with their intervals: `comparison_table`."""
    pub = published.load("lab_throughput")
    pub = pub[pub["tracing"].isna()]  # Figure 5's rows (strace, perf) are another experiment
    rows = []
    for t, b, r in _median_rows(result, case, tests):
        v, vmax, q, fig, eng = _pub_text(_published_for(pub, case, t, b))
        rows.append({"case": case, "test": t, "backend": b, "MB/s": r["mbps"], "MB/s min": r["mbps_min"],
                     "MB/s max": r["mbps_max"], "qps": r["qps"], "cpuPer": r["cpuPer"], "n": int(r["n"]),
                     "published MB/s": v, "published max": vmax, "qualifier": q, "published for": eng,
                     "figure": fig})
    return pd.DataFrame(rows)


def latency_table(result: BackendsResult, case: str = "local",
                  tests: Sequence[str] = LOCAL_TESTS) -> pd.DataFrame:
    """Latency percentiles (us, medians over repetitions) per test and backend, one row per percentile,
    the report's number beside where it states one."""
    pub = published.load("lab_latency")
    rows = []
    for t, b, r in _median_rows(result, case, tests):
        for name, col in zip(PCT_NAMES, PCT_COLUMNS, strict=True):
            sel = _published_for(pub, case, t, b)
            sel = sel[sel["statistic"].map(lambda s, n=name: n in str(s).split(".."))]
            v, vmax, q, fig, eng = _pub_text(sel)
            rows.append({"case": case, "test": t, "backend": b, "percentile": name,
                         "us": r[col], "published us": v, "published max": vmax, "qualifier": q,
                         "published for": eng, "figure": fig})
    return pd.DataFrame(rows)


def latency_pivot(result: BackendsResult, case: str = "local", tests: Sequence[str] = LOCAL_TESTS,
                  engines_only: bool = False) -> pd.DataFrame:
    """latency_table as one row per test and backend: the local percentiles (us) as columns, and
    `report` listing what the report states for that backend ("p99.9 13.42; p50 1.63")."""
    lat = latency_table(result, case, tests)
    if engines_only:
        lat = lat[lat["backend"].map(lambda b: not checks.is_default(b))]
    wide = lat.pivot_table(index=["test", "backend"], columns="percentile", values="us", sort=False)
    wide = wide.reindex(columns=list(PCT_NAMES))
    wide.columns = [f"{c} us" for c in wide.columns]

    def one(r) -> str:
        q = f"{r['qualifier']} " if r["qualifier"] else ""
        hi = f"-{r['published max']:g}" if np.isfinite(r["published max"]) else ""
        return f"{r['percentile']} {q}{r['published us']:g}{hi}"

    def said(g):
        return "; ".join(one(r) for _, r in g[g["published us"].notna()].iterrows())

    wide["report"] = lat.groupby(["test", "backend"], sort=False)[lat.columns.tolist()].apply(said)
    return wide.reset_index()


def zippydb_table(result: BackendsResult, case: str = "local") -> pd.DataFrame:
    """mixgraph (ZippyDB) per backend: MB/s, qps, mean Get latency (rx.lat) and p99, the report's beside."""
    pt, pl = published.load("lab_throughput"), published.load("lab_latency")
    rows = []
    for _, b, r in _median_rows(result, case, [ZIPPY_TEST]):
        v, _, q, fig, eng = _pub_text(_published_for(pt, case, ZIPPY_TEST, b))
        lv, _, lq, _, _ = _pub_text(_published_for(pl, case, ZIPPY_TEST, b, statistic="latency"))
        rows.append({"case": case, "backend": b, "MB/s": r["mbps"], "qps": r["qps"], "rx.lat": r["rx.lat"],
                     "p99 us": r[metrics.percentile_column(99.0)], "n": int(r["n"]), "published MB/s": v,
                     "published latency us": lv, "qualifier": " / ".join(x for x in (q, lq) if x),
                     "published for": eng, "figure": fig})
    return pd.DataFrame(rows)


def emulated_table(result: BackendsResult) -> pd.DataFrame:
    """MB/s of the report's cluster workloads in every case (engines only), the report's beside."""
    parts_ = [throughput_table(result, c, CLUSTER_TESTS) for c in result.cases]
    t = pd.concat([p for p in parts_ if len(p)], ignore_index=True)
    return t[t["backend"].map(lambda b: not checks.is_default(b))].reset_index(drop=True)


def change_table(result: BackendsResult, base: str = "virtual", other: str = "remote") -> pd.DataFrame:
    """Throughput change from `base` to `other` (%) per cluster workload and engine, with the change
    from local to `other`, and the report's Figure 11 beside (direction, %)."""
    med = medians(result)
    pub = published.load("lab_throughput_change")
    rows = []
    for t in CLUSTER_TESTS:
        for b in result.backends:
            if checks.is_default(b):
                continue
            get = {c: med[(med["case"] == c) & (med["backend"] == b) & (med["test"] == t)]["mbps"]
                   for c in ("local", base, other)}
            val = {c: float(s.iloc[0]) if len(s) else np.nan for c, s in get.items()}
            sel = pub[(pub["workload"] == t) & pub["engine"].map(lambda e, b=b: _matches(e, b))]
            p = sel.iloc[0] if len(sel) else None
            rows.append({"test": t, "backend": b, f"{base} MB/s": val[base], f"{other} MB/s": val[other],
                         f"change {base}->{other} %": (val[other] / val[base] - 1) * 100,
                         f"change local->{other} %": (val[other] / val["local"] - 1) * 100,
                         "published direction": p["direction"] if p is not None else "",
                         "published %": float(p["pct"]) if p is not None and pd.notna(p["pct"]) else np.nan,
                         "qualifier": p["qualifier"] if p is not None and isinstance(p["qualifier"], str)
                         else ""})
    return pd.DataFrame(rows)


def hardware_table(result: BackendsResult) -> pd.DataFrame:
    """The report's setups (data/published/hardware.csv) beside this machine's (the runs' fingerprint)."""
    hw = published.load("hardware")
    hw = hw[hw["source"] == SEED_FILE]
    rows = [{"setup": r["table"], "storage": r["storage"], "notes": r["notes"], "source": r["source"]}
            for _, r in hw.iterrows()]
    f = result.frame.iloc[0]

    def g(k):
        return f.get(k, "")

    rows.append({"setup": "this machine (all cases)",
                 "storage": f"{g('device_model')} ({g('device')}, {g('fstype')}, scheduler {g('scheduler')})",
                 "notes": f"{g('cpu_model')}, {g('cores')} cores, kernel {g('kernel')}, RocksDB "
                          f"{g('rocksdb_version')} ({g('rocksdb_build')})", "source": "local"})
    return pd.DataFrame(rows)


TABLES = {
    "hardware": hardware_table,
    "comparisons": comparison_table,
    "throughput": throughput_table,
    "latency": latency_pivot,
    "zippydb": zippydb_table,
    "emulated": emulated_table,
    "change": change_table,
}
