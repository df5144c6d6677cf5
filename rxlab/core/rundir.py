"""One run directory read back: what is wrong with it when it cannot be read, and what it was.

The store (rxlab.core.store) writes and lists runs; these are the pieces
that read one run's files and say, in one line, why a damaged one cannot be
read (an empty directory, a corrupt run.json, an unreadable steps.parquet),
and the summary that tells one run from another (backend, benchmarks,
threads, qps, wall time).
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rxlab.core import metrics

__all__ = ["CorruptRun", "RunNotFound", "SkippedRunsWarning", "read_meta", "read_table", "run_summary"]


class RunNotFound(KeyError):
    """No run of that id, id prefix or path in the store (a KeyError whose text has no quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "run not found"


class CorruptRun(ValueError):
    """A run directory that cannot be read: empty, or its run.json or steps.parquet damaged.

    The message names the run and what is wrong with it, in one line.
    """


class SkippedRunsWarning(UserWarning):
    """The catalog or the run list left out runs it could not read (their reasons are in the warning)."""


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def read_meta(path: Path) -> dict:
    """A run directory's run.json; CorruptRun says which of missing, empty, unreadable or not JSON."""
    path = Path(path)
    f = path / "run.json"
    if not f.exists():
        if path.is_dir() and not any(path.iterdir()):
            raise CorruptRun(f"run {path.name}: an empty directory, not a run (no run.json, no steps)")
        raise CorruptRun(f"run {path.name}: no run.json (not a run directory, or one whose start was lost)")
    try:
        text = f.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise CorruptRun(f"run {path.name}: run.json is unreadable ({_first_line(e)})") from None
    if not text.strip():
        raise CorruptRun(f"run {path.name}: run.json is corrupt (empty)")
    try:
        meta = json.loads(text)
    except ValueError as e:
        raise CorruptRun(f"run {path.name}: run.json is corrupt (not JSON: {_first_line(e)})") from None
    if not isinstance(meta, dict):
        raise CorruptRun(f"run {path.name}: run.json is corrupt "
                         f"(a JSON {type(meta).__name__}, not an object)")
    return meta


def read_table(path: Path, fname: str) -> pd.DataFrame:
    """One of a run's Parquet tables (empty when absent); CorruptRun when the file cannot be read."""
    f = Path(path) / fname
    if not f.is_file():
        return pd.DataFrame()
    try:
        return pq.read_table(f).to_pandas()
    except (OSError, pa.ArrowException) as e:
        raise CorruptRun(f"run {Path(path).name}: {fname} is unreadable ({_first_line(e)})") from None


# Steps that prepare a DB rather than measure it: a run's summary qps is its last other step's.
_PREPARING = frozenset({"flush", "compact", "compact0", "waitforcompaction"})


def run_summary(meta: Mapping, steps: pd.DataFrame) -> dict:
    """What tells one run from another: backend, benchmarks, threads, qps and wall time.

    qps is the last measuring step's (not flush, compact or waitforcompaction;
    for fio, the total row's IOs per second); wall_s is the time measured: the
    steps' wall time summed (fio: the total row's), else the run's duration.
    """
    spec = meta.get("spec") or {}
    out = {"backend": metrics.backend_label(spec.get("backend", spec.get("fs_uri"))), "benchmarks": None,
           "threads": None, "qps": float("nan"), "wall_s": meta.get("duration_s")}
    measured = steps
    if steps is None or steps.empty:
        return out
    rows = steps
    if "job" in steps.columns and (steps["job"].astype(str) == "total").any():  # fio: one row per job
        rows = measured = steps[steps["job"].astype(str) == "total"]
        out["threads"] = spec.get("numjobs", len(steps) - 1)
        bs = spec.get("bs") or (rows["bs"].iloc[-1] if "bs" in rows.columns else None)
        out["benchmarks"] = " ".join(str(x) for x in (spec.get("tool"), spec.get("rw", "randread"), bs,
                                                      f"qd{spec.get('iodepth', 1)}") if x)
    else:
        names = steps["name"].astype(str).tolist() if "name" in steps.columns else []
        out["benchmarks"] = ",".join(names)
        if "threads" in steps.columns:
            t = pd.to_numeric(steps["threads"], errors="coerce").max()
            out["threads"] = None if pd.isna(t) else int(t)
        kind = steps["benchmark"] if "benchmark" in steps.columns else steps.get("name")
        if kind is not None:
            measuring = ~kind.astype(str).isin(_PREPARING)
            rows = steps[measuring] if measuring.any() else steps
    last = rows.iloc[-1]
    ops, wall = metrics.column(rows, "ops").iloc[-1], metrics.column(rows, "wall_s").iloc[-1]
    out["qps"] = ops / wall if pd.notna(wall) and wall > 0 else float("nan")
    wall_s = metrics.column(measured, "wall_s")
    if wall_s.notna().any():
        out["wall_s"] = float(wall_s.sum())
    if out["backend"] is None and "backend" in last.index:
        out["backend"] = metrics.backend_label(last["backend"])
    return out
