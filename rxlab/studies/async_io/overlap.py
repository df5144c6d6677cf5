"""Did a step's reads overlap? The verdict each stored read step carries, from the backend's counters.

A step never says its reads overlapped unless the counters show it: reads in
flight at once for MultiRead, ReadAsync submissions reaped by Poll for
scans. RocksDB's own file system has no rxlab counters, so there the answer
is often "unknown".
"""
from __future__ import annotations

import numpy as np

from rxlab.studies.async_io.params import MULTIGET, MULTIGET_ASYNC, SCAN_ASYNC, SCAN_SYNC, engine

__all__ = ["STEP_OPTIONS", "overlap", "step_annotations"]

# The step options recorded in every stored read step (the tables group by them).
STEP_OPTIONS = ("batch_size", "async_io", "seek_nexts", "multiread_stride", "optimize_multiget_for_io",
                "multiread_batched")


def _number(row: dict, key: str) -> float:
    v = row.get(key)
    try:
        return 0.0 if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)
    except (TypeError, ValueError):
        return 0.0


def _default_scan_overlap(row: dict) -> tuple[str, str]:
    """RocksDB's own file system: its ticker says whether ReadAsync was used, not how many were in flight."""
    t = _number(row, "ticker.rocksdb.read.async.micros")
    if t > 0:
        return "unknown", f"ReadAsync used (READ_ASYNC_MICROS {t:.0f} us); in-flight reads not counted"
    return "no", "ReadAsync not used (READ_ASYNC_MICROS 0): synchronous fallback"


def _scan_overlap(row: dict, eng: str) -> tuple[str, str]:
    if not row.get("async_io"):
        return "no", "async_io off: synchronous prefetch"
    if eng.startswith("default"):
        return _default_scan_overlap(row)
    ra, done, polls = (_number(row, k) for k in ("fs.read_async", "fs.async_completed", "fs.polls"))
    if ra == 0:
        return "no", "no ReadAsync reached the file system"
    if eng == "posix":
        return "no", f"{ra:.0f} ReadAsync served inline by posix (synchronous engine)"
    if done > 0 and polls > 0:
        return "yes", f"{ra:.0f} ReadAsync submitted without waiting, {polls:.0f} Poll calls reaped them"
    return "no", f"{ra:.0f} ReadAsync but no completion reaped by Poll"


def _multiget_overlap(row: dict, eng: str) -> tuple[str, str]:
    if eng.startswith("default"):
        return "unknown", "RocksDB's file system: reads in flight not counted"
    mi, mr, reqs = (_number(row, k) for k in ("fs.max_inflight", "fs.multireads", "fs.multiread_reqs"))
    if mi > 1:
        return "yes", f"up to {mi:.0f} reads in flight in {mr:.0f} MultiRead calls ({reqs:.0f} reads)"
    return "no", f"one read in flight at a time ({mr:.0f} MultiRead calls, {reqs:.0f} reads)"


def overlap(row: dict, backend: str) -> tuple[str, str]:
    """Did this step's reads overlap, by the counters? ("yes" | "no" | "unknown", the evidence).

    MultiGet: yes when the backend had more than one read in flight at once
    (fs.max_inflight, reset before the step). Scans with async_io: yes when
    ReadAsync submissions went to an asynchronous engine and were reaped by
    Poll (fs.read_async, fs.async_completed); posix serves ReadAsync inline,
    which is no overlap. RocksDB's own file system has no rxlab counters: its
    READ_ASYNC_MICROS ticker says whether ReadAsync was used at all, and
    nothing says how many reads were in flight (unknown).
    """
    eng = engine(backend)
    name = str(row.get("name", ""))
    if name in (SCAN_SYNC, SCAN_ASYNC) or row.get("benchmark") == "seekrandom":
        return _scan_overlap(row, eng)
    if name in (MULTIGET, MULTIGET_ASYNC) or row.get("benchmark") == "multireadrandom":
        return _multiget_overlap(row, eng)
    if eng.startswith("default"):
        return "no", "one Get at a time"
    mi = _number(row, "fs.max_inflight")
    return ("yes" if mi > 1 else "no"), f"max {mi:.0f} read(s) in flight"


def step_annotations(step: dict, row: dict, backend: str) -> dict:
    """The step's options and its overlap verdict, recorded in the stored row."""
    out = {k: step.get(k) for k in STEP_OPTIONS if k in step}
    out["overlap"], out["overlap_evidence"] = overlap({**row, **out}, backend)
    return out
