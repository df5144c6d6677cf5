"""Parameter sweeps over a notebook: one papermill execution per grid point.

`rxlab sweep NOTEBOOK -p NAME=V1,V2 [-p ...]` (or the old `-p NAME V1 V2`) takes the cartesian
product of the values and executes the notebook once per point, each with its own
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

__all__ = ["default_sweep_dir", "grid", "parse_params", "parse_value", "point_dir", "run_point",
           "split_values", "summary", "sweep"]


def parse_value(text: str):
    """A command-line value as papermill's -y would read it (YAML: 1, 2.5, true, [1, 2], posix); None too."""

    if text in ("None", "none", "null", "~"):
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def split_values(text: str) -> list[str]:
    """`1,2,[3, 4],'a,b'` as its values: split at the commas outside brackets, braces and quotes."""
    out, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return out


def parse_params(groups: Sequence[Sequence[str]]) -> tuple[dict[str, list], list[str]]:
    """The grid of `-p` options, each a list of the words after one -p: `NAME=V1,V2` (values added to the
    name's, so `-p NAME=V` may repeat), or the old form `NAME V1 V2 ...`. Returns the grid and the
    first old-form group (empty: none), for a note."""
    params: dict[str, list] = {}
    old: list[str] = []
    for group in groups:
        head = group[0]
        if "=" in head:
            if len(group) > 1:
                raise ValueError(f"-p {' '.join(group)}: one NAME=V1,V2 per -p (values comma-separated)")
            name, _, text = head.partition("=")
            values = split_values(text)
            if not name.strip() or any(v == "" for v in values):
                raise ValueError(f"-p {head}: expected NAME=V1,V2 with no empty value, e.g. -p threads=1,2")
            params.setdefault(name.strip(), []).extend(parse_value(v) for v in values)
            continue
        if len(group) < 2:
            raise ValueError(f"-p {head}: expected NAME=V1,V2, e.g. -p {head}=1,2")
        if head in params:
            raise ValueError(f"-p {head}: given twice; list all its values after one -p")
        old = old or list(group)
        params[head] = [parse_value(v) for v in group[1:]]
    return params, old


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
