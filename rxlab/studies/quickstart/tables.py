"""The start-here study's tables: the engines, a run's steps in the seeds' columns, its latency histogram."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rxlab.core import engines as backends
from rxlab.core import metrics, store
from rxlab.core.study import StudyResult

PERCENTILES = tuple(metrics.percentile_column(p) for p in metrics.PERCENTILES[:5])
PREPARING = ("fillseq", "flush")  # the load before the measured step


def engines_table() -> pd.DataFrame:
    """Every backend (default and rxlab's engines) with its URI options and their defaults."""
    rows = [
        {
            "engine": e["name"],
            "what": e["help"],
            "options": ", ".join(f"{k}={v[0]}" for k, v in e["options"].items()),
        }
        for e in backends.engines()
    ]
    return pd.DataFrame(rows).set_index("engine")


def look(run_dir: str | Path) -> pd.DataFrame:
    """A stored run's steps in the seeds' columns (rxlab.core.metrics) with the latency percentiles."""
    steps = store.load_run(run_dir).steps
    return _steps(steps).set_index("name")


def _steps(steps: pd.DataFrame) -> pd.DataFrame:
    cols = ["name", "ops", "wall_s", *PERCENTILES]
    seed = metrics.seed_columns(steps)
    return pd.concat(
        [
            steps[[c for c in cols if c in steps]].reset_index(drop=True),
            seed.drop(columns=["test"], errors="ignore")[list(metrics.SEED_COLUMNS[:-1])].reset_index(
                drop=True
            ),
        ],
        axis=1,
    )


def steps_table(result: StudyResult) -> pd.DataFrame:
    """Per run and step: ops, wall time, percentiles and the seeds' columns (qps, iops, ..., io.lat)."""
    f = result.frame
    if f.empty:
        return pd.DataFrame()
    keys = f[["backend", "workload", "threads", "run_id"]].reset_index(drop=True)
    raw = f.reset_index(drop=True)
    cols = ["name", "ops", "wall_s", *PERCENTILES, *metrics.SEED_COLUMNS[:-1]]
    return pd.concat([keys, raw[[c for c in cols if c in raw.columns]]], axis=1)


def histogram(run_dir: str | Path, step: str | None = None) -> pd.DataFrame:
    """The latency histogram of a run's measured step (the last one that is not the load), one row per
    bucket: step, op, upper_us, count, share (of the step's operations) and cumulative share."""
    run = store.load_run(run_dir)
    h = run.histograms
    if h.empty:
        return pd.DataFrame(columns=["step", "op", "upper_us", "count", "share", "cumulative"])
    names = [n for n in h["name"].astype(str).unique() if n not in PREPARING] or list(h["name"].unique())
    name = step if step is not None else names[-1]
    if name not in set(h["name"].astype(str)):
        raise ValueError(
            f"step {name!r}: the run's histograms are of {', '.join(map(str, h['name'].unique()))}"
        )
    sel = h[h["name"].astype(str) == name]
    op = sel["op"].value_counts().index[0]  # the step's main operation (get, seek, multiget, ...)
    sel = sel[sel["op"] == op].sort_values("upper_us")
    total = sel["count"].sum()
    out = pd.DataFrame(
        {"step": name, "op": op, "upper_us": sel["upper_us"].to_numpy(), "count": sel["count"].to_numpy()}
    )
    out["share"] = out["count"] / total if total else 0.0
    out["cumulative"] = out["share"].cumsum()
    return out


def histogram_table(result: StudyResult) -> pd.DataFrame:
    """The measured step's latency histogram of every run of the study (with its backend)."""
    parts = []
    for run in result.runs:
        h = histogram(run)
        rid = Path(run).name
        row = result.frame[result.frame["run_id"] == rid]
        parts.append(h.assign(run_id=rid, backend=row["backend"].iloc[0] if len(row) else None))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


TABLES = {"steps": steps_table, "histogram": histogram_table}
