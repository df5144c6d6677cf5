"""Verdicts (a test that fails on the control is RocksDB's own), the table, and stored runs."""
from __future__ import annotations

import csv
import datetime as _dt
import json
import os
import secrets
import shutil
from collections import defaultdict
from pathlib import Path

from rxlab.bench.conformance.suites import CONTROL
from rxlab.core import builds


def classify(rows: list[dict]) -> list[dict]:
    """Mark each engine failure that the control shares as RocksDB's own ("rocksdb": True)."""
    control_failed = {(r["suite"], r["key"]) for r in rows
                      if r["config"] == CONTROL and r["status"] == "failed"}
    for r in rows:
        r["rocksdb"] = r["status"] == "failed" and (r["suite"], r["key"]) in control_failed
    return rows


def counts(rows: list[dict]) -> dict[tuple[str, str], dict[str, int]]:
    """(suite, config) -> passed, failed (not RocksDB's own), rocksdb (failed on the control too), skipped."""
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "rocksdb": 0,
                                                                       "skipped": 0})
    for r in rows:
        c = out[(r["suite"], r["config"])]
        if r["status"] == "failed":
            c["rocksdb" if r["rocksdb"] and r["config"] != CONTROL else "failed"] += 1
        else:
            c[r["status"]] += 1
    return out


def engine_failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["config"] != CONTROL and r["status"] == "failed" and not r["rocksdb"]]


def format_table(rows: list[dict], seconds: dict[tuple[str, str], float] | None = None) -> str:
    """suite x configuration: passed/failed/skipped (+N: failures the control shares, not counted)."""
    suites = list(dict.fromkeys(r["suite"] for r in rows))
    configs = [CONTROL] + [c for c in dict.fromkeys(r["config"] for r in rows) if c != CONTROL]
    cnt = counts(rows)
    cells = {}
    for s in suites:
        for c in configs:
            if (s, c) not in cnt:
                cells[s, c] = "-"
                continue
            k = cnt[(s, c)]
            cell = f"{k['passed']}/{k['failed']}/{k['skipped']}"
            if k["rocksdb"]:
                cell += f" +{k['rocksdb']}"
            if seconds and (s, c) in seconds:
                cell += f" {seconds[(s, c)]:.0f}s"
            cells[s, c] = cell
    w0 = max([len("suite")] + [len(s) for s in suites])
    ws = {c: max([len(c)] + [len(cells[s, c]) for s in suites]) for c in configs}
    lines = [f"{'suite':{w0}}  " + "  ".join(f"{c:{ws[c]}}" for c in configs)]
    for s in suites:
        lines.append(f"{s:{w0}}  " + "  ".join(f"{cells[s, c]:{ws[c]}}" for c in configs))
    lines.append("cells: passed/failed/skipped; +N: failed on the control too (RocksDB's own failures here, "
                 "not counted against the engine)" + ("; s: seconds of test processes" if seconds else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------- storage


def default_root() -> Path:
    """$RXLAB_CONFORMANCE, else data/conformance in the repository."""
    env = os.environ.get("RXLAB_CONFORMANCE")
    return Path(env) if env else builds.REPO / "data" / "conformance"


def store(rows: list[dict], summary: dict, root: Path, logs: dict[str, Path] | None = None) -> Path:
    """results.csv, summary.json and logs/ under root/.tmp-<id>, renamed to root/<id> when complete."""
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    tmp = root / f".tmp-{run_id}"
    tmp.mkdir(parents=True)
    fields = ["suite", "config", "test", "status", "rocksdb", "seconds", "message"]
    with open(tmp / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "seconds": round(r["seconds"], 3)})
    (tmp / "summary.json").write_text(json.dumps({**summary, "run_id": run_id}, indent=1) + "\n")
    for name, src in (logs or {}).items():
        (tmp / "logs").mkdir(exist_ok=True)
        if src.is_file():
            shutil.copyfile(src, tmp / "logs" / name)
    for p in (tmp / "results.csv", tmp / "summary.json"):
        with open(p, "rb") as fh:
            os.fsync(fh.fileno())
    final = root / run_id
    tmp.rename(final)
    return final


def load(run: str | Path | None = None, root: Path | None = None) -> tuple[list[dict], dict]:
    """(rows, summary) of a stored run: a path, a run id, or the latest one."""
    root = root or default_root()
    if run is None:
        done = sorted(p for p in root.glob("*") if p.is_dir() and not p.name.startswith("."))
        if not done:
            raise FileNotFoundError(f"no conformance run in {root}: run `rxlab conformance`")
        path = done[-1]
    else:
        path = Path(run) if Path(run).is_dir() else root / str(run)
    with open(path / "results.csv", newline="") as f:
        rows = [{**r, "seconds": float(r["seconds"]), "rocksdb": r["rocksdb"] == "True"}
                for r in csv.DictReader(f)]
    return rows, json.loads((path / "summary.json").read_text())


def _seconds_by_cell(summary: dict) -> dict[tuple[str, str], float]:
    return {tuple(k.split("|", 1)): v for k, v in summary.get("unit_seconds", {}).items()}


def report(rows: list[dict], summary: dict, path: Path | None = None, max_lines: int = 40) -> str:
    """The table, then the engine failures and RocksDB's own failures, by test."""
    out = [format_table(rows, _seconds_by_cell(summary))]
    bad = engine_failures(rows)
    if bad:
        out.append(f"\n{len(bad)} engine failure(s) (the control passed these):")
        out += [f"  {r['config']:10} {r['suite']}: {r['test']}  {r['message']}" for r in bad[:max_lines]]
        if len(bad) > max_lines:
            out.append(f"  ... and {len(bad) - max_lines} more (results.csv)")
    own = [r for r in rows if r["config"] == CONTROL and r["status"] == "failed"]
    if own:
        out.append("\nRocksDB's own failures here (failed on the control, its own file system):")
        out += [f"  {r['suite']}: {r['test']}  {r['message']}" for r in own[:max_lines]]
    for s, why in summary.get("left_out", {}).items():
        out.append(f"left out of {s} (--full runs them): {why}")
    for e in summary.get("errors", []):
        out.append(f"error: {e}")
    if path:
        out.append(f"\nresults: {path}")
    return "\n".join(out)
