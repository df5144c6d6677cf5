"""A run's steps as `rxlab bench` and `rxlab show` print them: db_bench's result lines, then the seeds'
columns (or JSON), and what tells the run apart from others."""
from __future__ import annotations

import json
import math

import pandas as pd

from rxlab.core import metrics

# The start of rxlab.bench.driver.no_block_device_note: a DB without a block device (tmpfs) has no
# iops, reqsz or io.lat.
NO_DEVICE = "no block device under"


def _isnan(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _int(v, default: int) -> int:
    return default if _isnan(v) else int(v)


def step_records(df: pd.DataFrame) -> list[dict]:
    """One JSON-ready dict per step: name, benchmark, threads, ops, found, wall_s, the seeds' columns,
    the latency percentiles and the step's notes."""
    seed = metrics.seed_columns(df)
    # fio's rows are one per job and a total: named so (a driver row's `job` is a helper-script job)
    fio_jobs = "job" in df.columns and (df["job"].astype(str) == "total").any()
    rows = []
    for i, r in df.reset_index(drop=True).iterrows():
        name = r["name"]
        if fio_jobs:
            name = f"{name} total" if str(r["job"]) == "total" else f"{name} job {r['job']}"
        d = {"name": name, "benchmark": r.get("benchmark"), "threads": _int(r.get("threads"), 1),
             "ops": _int(r["ops"], 0), "found": _int(r.get("found"), 0), "wall_s": float(r["wall_s"])}
        for c in metrics.SEED_COLUMNS[:-1]:
            v = seed[c].iloc[i]
            d[c] = None if pd.isna(v) else float(v)
        for c in metrics.PERCENTILE_COLUMNS:
            if c in df and not _isnan(r.get(c)):
                d[c] = float(r[c])
        if r.get("notes"):
            d["notes"] = r["notes"]
        rows.append(d)
    return rows


def print_steps(df: pd.DataFrame, as_json: bool, quiet: bool) -> None:
    """db_bench-like result lines, then the seeds' columns; or the steps as JSON alone."""
    rows = step_records(df)
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    device_notes = set()
    for d in rows:
        per_thread_us = d["wall_s"] * 1e6 * d["threads"] / d["ops"] if d["ops"] else 0.0
        qps = d["ops"] / d["wall_s"] if d["wall_s"] else 0.0
        found = f"  ({d['found']} of {d['ops']} found)" if d["found"] else ""
        print(f"{d['name']:<14}: {per_thread_us:11.3f} micros/op {qps:.0f} ops/sec {d['wall_s']:.3f} seconds "
              f"{d['ops']} operations; {d['threads']} thread{'s' if d['threads'] > 1 else ''};{found}")
        notes = [n for n in str(d.get("notes") or "").split(" | ") if n]
        device_notes.update(n for n in notes if n.startswith(NO_DEVICE))  # said once, below
        for n in notes:
            if not n.startswith(NO_DEVICE):
                print(f"{'':14}  note: {n}")
    if not quiet:
        seed = metrics.seed_columns(df).reset_index(drop=True)
        print()
        print(seed.assign(test=df["name"].to_numpy())[list(metrics.SEED_COLUMNS)].round(3)
              .to_string(index=False, na_rep="n/a"))
    for n in sorted(device_notes):
        print(f"note: {n}" + ("" if quiet else " (n/a above)"))


def summary_line(s: dict) -> str:
    """backend, benchmarks, threads, qps and wall time of a run (rxlab.core.store.run_summary)."""
    qps = "n/a" if _isnan(s.get("qps")) else f"{s['qps']:.0f}"
    wall = "n/a" if _isnan(s.get("wall_s")) else f"{s['wall_s']:.1f} s"
    return (f"backend {s.get('backend') or 'n/a'}  benchmarks {s.get('benchmarks') or 'n/a'}  "
            f"threads {s.get('threads') or 'n/a'}  qps {qps}  wall {wall}")
