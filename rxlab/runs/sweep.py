"""Parameter sweeps over a notebook: one papermill execution per grid point.

`rxlab sweep NOTEBOOK -p NAME V1 V2 ... [-p ...]` takes the cartesian product
of the values and executes the notebook once per point, each with its own
directory under the sweep directory (default data/sweeps/<notebook>/):

    <point>/notebook.ipynb   the executed notebook (kept when it fails: the failing cell is marked)
    <point>/figures/         the figures of this point (figures/ is left to `rxlab report`)
    <point>/status.json      parameters, ok | failed, the error's line, seconds, the runs it stored
    summary.csv              one row per point, rewritten after every point

A failing point is recorded and the sweep goes on. A rerun skips the points
whose status is ok with the same parameters (`force=True` reruns them), so an
interrupted sweep resumes where it stopped. `run_point` is the unit of work
that a distributed executor ships to a worker.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import yaml
from tqdm import tqdm

from rxlab.runs.notebooks import REPO, Outcome, resolve_notebook, run_notebook

__all__ = ["grid", "parse_value", "point_dir", "run_point", "sweep", "summary", "default_sweep_dir"]


def parse_value(text: str):
    """A command-line value as papermill's -y would read it (YAML: 1, 2.5, true, [1, 2], posix); None too."""

    if text in ("None", "none", "null", "~"):
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def grid(params: Mapping[str, Sequence]) -> list[dict]:
    """The cartesian product of the values, in the order given (the last name varies fastest)."""
    for name, values in params.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(name)):
            raise ValueError(f"parameter name {name!r}: expected a Python identifier")
        if not isinstance(values, (list, tuple)) or not values:
            raise ValueError(f"{name}={values!r}: expected at least one value")
    names = list(params)
    return [dict(zip(names, combo)) for combo in itertools.product(*(params[n] for n in names))]


def _slug(point: Mapping) -> str:
    text = ",".join(f"{k}={json.dumps(v, sort_keys=True)}" for k, v in point.items())
    slug = re.sub(r"[^A-Za-z0-9=,._-]+", "-", text).strip("-")
    if len(slug) > 80 or slug != text:  # keep names short and unambiguous: add a digest of the exact text
        slug = slug[:64].rstrip("-,") + "-" + hashlib.sha1(text.encode()).hexdigest()[:8]
    return slug or "default"


def default_sweep_dir(notebook: str | Path) -> Path:
    return REPO / "data" / "sweeps" / resolve_notebook(notebook).stem


def point_dir(sweep_dir: str | Path, point: Mapping) -> Path:
    return Path(sweep_dir) / _slug(point)


def _read_status(d: Path) -> dict | None:
    try:
        return json.loads((d / "status.json").read_text())
    except (OSError, ValueError):
        return None


def _write_status(d: Path, status: dict) -> None:
    tmp = d / ".status.json.tmp"
    tmp.write_text(json.dumps(status, indent=1, default=str) + "\n")
    os.replace(tmp, d / "status.json")  # a reader sees the old status or the new one, never half


def run_point(notebook: str | Path, point: Mapping, sweep_dir: str | Path, *, runs_root: str | Path | None = None,
              timeout_s: float | None = None, host: str | None = None) -> dict:
    """Execute one grid point and record its status; returns the status (a plain dict)."""

    d = point_dir(sweep_dir, point)
    d.mkdir(parents=True, exist_ok=True)
    out: Outcome = run_notebook(notebook, d / "notebook.ipynb", dict(point), runs_root=runs_root,
                                figures_dir=d / "figures", timeout_s=timeout_s)
    status = {"point": _slug(point), **out.to_dict(), "host": host or socket.gethostname()}
    _write_status(d, status)
    return status


def check_names(notebook: Path, params: Mapping) -> None:
    """Refuse a parameter the notebook's parameters cell does not define (papermill would only warn)."""
    import papermill  # noqa: PLC0415 - papermill loads jupyter's kernel machinery: about a second

    known = list(papermill.inspect_notebook(str(notebook)))
    for name in params:
        if name not in known:
            raise ValueError(f"parameter {name!r}: {notebook.stem} has {', '.join(known) or 'no parameters'}")


def summary(statuses: Sequence[Mapping]) -> pd.DataFrame:
    """One row per point: its parameters, status, seconds, runs stored and the error."""
    rows = []
    for s in statuses:
        rows.append({**{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in s["parameters"].items()},
                     "status": s["status"], "seconds": round(float(s.get("seconds", 0.0)), 1),
                     "runs": len(s.get("runs", [])), "host": s.get("host", ""), "error": s.get("error", ""),
                     "skipped": bool(s.get("skipped", False))})
    return pd.DataFrame(rows)


def sweep(notebook: str | Path, params: Mapping[str, Sequence], *, sweep_dir: str | Path | None = None,
          force: bool = False, runs_root: str | Path | None = None, timeout_s: float | None = None,
          progress: bool = True) -> pd.DataFrame:
    """Run the grid in-process, point after point; returns the summary (also written as summary.csv)."""

    path = resolve_notebook(notebook)
    check_names(path, params)
    points = grid(params)
    sdir = Path(sweep_dir) if sweep_dir is not None else default_sweep_dir(path)
    sdir.mkdir(parents=True, exist_ok=True)
    statuses = []
    bar = tqdm(points, desc=f"sweep {path.stem}", unit="point", disable=not progress)
    for point in bar:
        bar.set_postfix_str(_slug(point)[:40])
        old = _read_status(point_dir(sdir, point))
        if not force and old and old.get("status") == "ok" and old.get("parameters") == dict(point):
            statuses.append({**old, "skipped": True})
        else:
            statuses.append(run_point(path, point, sdir, runs_root=runs_root, timeout_s=timeout_s))
        summary(statuses).to_csv(sdir / "summary.csv", index=False)
    return summary(statuses)
