"""The results store: one directory per run, complete or absent.

A run is written under ``root/.tmp-<run_id>/`` and renamed to
``root/<run_id>/`` only after every file is written and fsynced, so a
directory without a leading dot is always a complete run. A failed run is
renamed to ``root/.failed-<run_id>/`` (run.json says why); a killed one
stays ``.tmp-*``. The catalog reads only complete runs, so neither can leak
half a measurement into a figure, and nothing ever writes into an existing
run's directory, so a crash cannot damage earlier runs.

Each step is also written as its own small Parquet part the moment it is
added, so a crash loses at most the step in progress (``load_run`` reads the
parts of a .tmp- or .failed- directory for post-mortems).

Layout of a run::

    run.json            spec, fingerprint, status, times, counts, error
    steps.parquet       one row per step (raw columns; rxlab.core.metrics derives the rest)
    histograms.parquet  step, name, op, upper_us, count
    timeseries.parquet  step, name, then whatever the sampler recorded
    attachments/        extra files (executed notebooks, raw fio JSON, logs)
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
import os
import re
import secrets
import shutil
import traceback
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from rxlab.core import metrics
from rxlab.core.paths import REPO
from rxlab.core.rundir import CorruptRun, RunNotFound, SkippedRunsWarning, read_meta, read_table, run_summary

# the errors and readers of one run directory are part of the store's API (rxlab.core.rundir holds them)
__all__ = ["CorruptRun", "Run", "RunNotFound", "RunWriter", "SkippedRunsWarning", "catalog", "default_root",
           "is_complete", "list_runs", "load_run", "new_run_id", "read_meta", "read_table", "run_metadata",
           "run_summary", "seed_view"]

FORMAT_VERSION = 1
TMP_PREFIX = ".tmp-"
FAILED_PREFIX = ".failed-"
PARTS = "parts"


def default_root() -> Path:
    """$RXLAB_RUNS, else data/runs next to the package."""
    env = os.environ.get("RXLAB_RUNS")
    if env:
        return Path(env)
    return REPO / "data" / "runs"


def _slug(name: str) -> str:
    s = re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()
    return s[:40]


def new_run_id(name: str | None = None, now: _dt.datetime | None = None) -> str:
    """UTC time (sortable) + random suffix (unique) + slug of the spec name (readable)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    rid = now.strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    slug = _slug(name) if name else ""
    return rid + ("-" + slug if slug else "")


def _utc_iso(t: _dt.datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _json_default(o):
    if isinstance(o, Path):
        return str(o)
    if dataclasses.is_dataclass(o) and not isinstance(o, type):
        return dataclasses.asdict(o)
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if isinstance(o, (set, frozenset)):
        return sorted(o)
    return str(o)


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".new")
    with open(tmp, "w") as fh:
        json.dump(obj, fh, indent=1, default=_json_default)
        fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def flatten(d: Mapping, prefix: str = "", sep: str = ".") -> dict:
    """Nested dicts -> dotted keys; lists stay values (Parquet list columns)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{sep}{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, key, sep))
        else:
            out[key] = v
    return out


def _table(rows: list[dict]) -> pa.Table:
    """Rows of heterogeneous dicts -> an Arrow table that always writes.

    Numbers stay numbers; a column mixing strings with other types becomes
    strings (an honest record beats a write that fails at the end of a run).
    """
    df = pd.DataFrame(rows)
    for c in df.columns:
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
            if len(kinds) > 1 and kinds <= {int, float, bool}:
                df[c] = pd.to_numeric(df[c].map(lambda v: v if v is not None else float("nan")),
                                      errors="coerce").astype("float64")
            elif len(kinds) > 1:
                df[c] = df[c].map(lambda v: None if v is None else (v if isinstance(v, str) else
                                                                    json.dumps(v, default=str)))
            elif kinds and kinds <= {dict}:
                df[c] = df[c].map(lambda v: None if v is None else json.dumps(v, default=str))
    return pa.Table.from_pandas(df, preserve_index=False)


def _write_parquet(path: Path, rows: list[dict]) -> None:
    pq.write_table(_table(rows), path)
    _fsync_file(path)


class RunWriter:
    """Write one run; complete on a clean exit, .failed- on an exception.

    with RunWriter(root, spec, fingerprint) as run:
        run.add_step(row)              # raw columns, see rxlab.core.metrics
        run.add_histogram(i, "read", [(upper_us, count), ...])
        run.add_timeseries(i, [{"t_s": 1.0, "iops": ...}, ...])
        run.attach("fio.json")
    run.path  # root/<run_id>

    A step row may carry ``histograms`` ({op: buckets}) and ``timeseries``
    (list of dicts): they go to their own tables, not into steps.parquet.
    Nested dicts in a row are flattened to dotted column names.
    """

    def __init__(self, root: str | os.PathLike | None, spec: dict, fingerprint: dict):
        self.root = Path(root) if root is not None else default_root()
        self.spec = dict(spec)
        self.fingerprint = dict(fingerprint)
        self.run_id = new_run_id(self.spec.get("name"))
        self.tmp = self.root / (TMP_PREFIX + self.run_id)
        self.path = self.root / self.run_id
        self.steps: list[dict] = []
        self.hist_rows: list[dict] = []
        self.ts_rows: list[dict] = []
        self.attachments: list[str] = []
        self._parts = 0
        self._started: _dt.datetime | None = None
        self._open = False

    # -- lifecycle
    def __enter__(self) -> RunWriter:
        json.dumps(self.spec, default=_json_default)
        self.root.mkdir(parents=True, exist_ok=True)
        self.tmp.mkdir()
        (self.tmp / PARTS).mkdir()
        self._started = _dt.datetime.now(_dt.timezone.utc)
        self._open = True
        _write_json(self.tmp / "run.json", self._meta("running"))
        _fsync_dir(self.root)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._open = False
        if exc_type is None:
            try:
                self._finish("complete", None)
            except Exception as e:  # could not write the results: the run failed after all
                self._fail(type(e), e, e.__traceback__)
                raise
            os.rename(self.tmp, self.path)
            _fsync_dir(self.root)
            return False
        self._fail(exc_type, exc, tb)
        return False  # propagate

    def _fail(self, exc_type, exc, tb) -> None:
        error = {"type": exc_type.__name__, "message": str(exc),
                 "traceback": "".join(traceback.format_exception(exc_type, exc, tb))}
        self.path = self.root / (FAILED_PREFIX + self.run_id)
        try:
            self._finish("failed", error)
            os.rename(self.tmp, self.path)
            _fsync_dir(self.root)
        except Exception:  # keep the original exception; the .tmp- dir stays for inspection
            self.path = self.tmp

    def _meta(self, status: str, error: dict | None = None) -> dict:
        now = _dt.datetime.now(_dt.timezone.utc)
        assert self._started is not None
        meta = {
            "format": FORMAT_VERSION, "run_id": self.run_id, "status": status,
            "started_utc": _utc_iso(self._started),
            "ended_utc": None if status == "running" else _utc_iso(now),
            "duration_s": None if status == "running" else (now - self._started).total_seconds(),
            "steps": len(self.steps), "histogram_rows": len(self.hist_rows),
            "timeseries_rows": len(self.ts_rows), "attachments": list(self.attachments),
            "spec": self.spec, "fingerprint": self.fingerprint,
        }
        if error is not None:
            meta["error"] = error
        return meta

    def _finish(self, status: str, error: dict | None) -> None:
        for fname, rows in (("steps.parquet", self.steps), ("histograms.parquet", self.hist_rows),
                            ("timeseries.parquet", self.ts_rows)):
            if rows or fname == "steps.parquet":
                _write_parquet(self.tmp / fname, rows)
        # run.json last: its status is the commit record inside the directory
        _write_json(self.tmp / "run.json", self._meta(status, error))
        shutil.rmtree(self.tmp / PARTS, ignore_errors=True)
        _fsync_dir(self.tmp)

    def _check_open(self) -> None:
        if not self._open:
            raise RuntimeError("RunWriter is not open: use it as a context manager")

    def _part(self, kind: str, rows: list[dict]) -> None:
        path = self.tmp / PARTS / f"{self._parts:06d}-{kind}.parquet"
        self._parts += 1
        tmp = path.with_name(path.name + ".new")
        _write_parquet(tmp, rows)
        os.replace(tmp, path)

    # -- content
    def _step_index(self, step: int | str) -> tuple[int, str]:
        if isinstance(step, int):
            name = self.steps[step]["name"] if 0 <= step < len(self.steps) else ""
            return step, str(name)
        for i in range(len(self.steps) - 1, -1, -1):
            if self.steps[i].get("name") == step:
                return i, step
        return len(self.steps), step  # the step in progress, added next

    def add_step(self, row: Mapping) -> int:
        """Record one step; returns its index. ``name`` is required."""
        self._check_open()
        row = dict(row)
        if "name" not in row:
            raise ValueError("a step row needs a 'name' (the workload, e.g. 'readrandom')")
        hists = row.pop("histograms", None) or {}
        if not isinstance(hists, Mapping):
            hists = {"op": hists}
        series = row.pop("timeseries", None) or []
        idx = len(self.steps)
        flat = {"step": idx}
        flat.update((k, v) for k, v in flatten(row).items() if k != "step")
        self.steps.append(flat)
        self._part("step", [flat])
        for op, buckets in hists.items():
            self.add_histogram(idx, op, buckets)
        if series:
            self.add_timeseries(idx, series)
        return idx

    def add_histogram(self, step: int | str, op: str, buckets: Iterable) -> None:
        """A latency histogram as (upper_us, count) buckets, empty buckets optional."""
        self._check_open()
        idx, name = self._step_index(step)
        rows = [{"step": idx, "name": name, "op": str(op), "upper_us": float(u), "count": int(c)}
                for u, c in buckets]
        if rows:
            self.hist_rows.extend(rows)
            self._part("hist", rows)

    def add_timeseries(self, step: int | str, rows: Iterable[Mapping]) -> None:
        self._check_open()
        idx, name = self._step_index(step)
        out = [{"step": idx, "name": name, **flatten(r)} for r in rows]
        if out:
            self.ts_rows.extend(out)
            self._part("ts", out)

    def attach(self, path: str | os.PathLike, name: str | None = None) -> Path:
        """Copy a file (or directory) into attachments/; returns the copy's path."""
        self._check_open()
        src = Path(path)
        dest_dir = self.tmp / "attachments"
        dest_dir.mkdir(exist_ok=True)
        dest = dest_dir / (name or src.name)
        if dest.exists():
            raise FileExistsError(f"attachment {dest.name!r} already in the run")
        if src.is_dir():
            shutil.copytree(src, dest)
        else:
            shutil.copy2(src, dest)
            _fsync_file(dest)
        self.attachments.append(dest.name)
        return self.path / "attachments" / dest.name


# ------------------------------------------------------------------ reading


@dataclasses.dataclass
class Run:
    run_id: str
    path: Path
    status: str
    meta: dict
    spec: dict
    fingerprint: dict
    steps: pd.DataFrame
    histograms: pd.DataFrame
    timeseries: pd.DataFrame

    @property
    def attachments(self) -> list[Path]:
        d = self.path / "attachments"
        return sorted(d.iterdir()) if d.is_dir() else []


def _read_meta(path: Path) -> dict | None:
    try:
        return read_meta(path)
    except CorruptRun:
        return None


def is_complete(path: Path) -> bool:
    """A directory the catalog accepts: no dot prefix, run.json says complete, steps present."""
    if path.name.startswith(".") or not path.is_dir():
        return False
    meta = _read_meta(path)
    return bool(meta) and meta.get("status") == "complete" and (path / "steps.parquet").is_file()


def _resolve(run, root: Path) -> Path:
    """A run id, unique id prefix, or path -> its directory."""
    p = Path(run)
    if p.is_dir() and (p / "run.json").exists():
        return p
    cand = root / str(run)
    if cand.is_dir():
        return cand
    for prefix in (TMP_PREFIX, FAILED_PREFIX):
        if (root / (prefix + str(run))).is_dir():
            return root / (prefix + str(run))
    matches = [d for d in root.iterdir() if d.name.startswith(str(run)) and is_complete(d)] \
        if root.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise RunNotFound(f"run {str(run)!r} is ambiguous in {root}: "
                          + ", ".join(sorted(m.name for m in matches)))
    raise RunNotFound(f"no run {str(run)!r} in {root} (`rxlab runs --all` lists them)")


def _read_parquet(path: Path) -> pd.DataFrame:
    return read_table(path.parent, path.name)


def _read_parts(path: Path, kind: str) -> pd.DataFrame:
    files = sorted((path / PARTS).glob(f"*-{kind}.parquet")) if (path / PARTS).is_dir() else []
    frames = [read_table(f.parent, f.name) for f in files]
    frames = [f for f in frames if not f.empty]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _meta_or_parts(path: Path) -> dict:
    """run.json, or {} for a run directory that has only its step parts (a run killed at its start)."""
    if not (path / "run.json").exists() and (path / PARTS).is_dir():
        return {}
    return read_meta(path)


def load_run(run, root: str | os.PathLike | None = None) -> Run:
    """Any run by id, id prefix or path, complete or not (parts are read for a .tmp- dir).

    RunNotFound (a KeyError) when there is no such run; CorruptRun (a ValueError) when the
    directory is empty or its run.json or a table cannot be read, with what is wrong.
    """
    root = Path(root) if root is not None else default_root()
    path = _resolve(run, root)
    meta = _meta_or_parts(path)
    tables = {}
    for kind, fname in (("step", "steps.parquet"), ("hist", "histograms.parquet"),
                        ("ts", "timeseries.parquet")):
        f = path / fname
        tables[kind] = _read_parquet(f) if f.is_file() else _read_parts(path, kind)
    run_id = meta.get("run_id") or path.name.removeprefix(TMP_PREFIX).removeprefix(FAILED_PREFIX)
    status = meta.get("status", "unknown")
    if path.name.startswith(TMP_PREFIX):
        status = "incomplete"  # a .tmp- directory was never finished, whatever run.json said
    return Run(run_id=run_id, path=path, status=status, meta=meta, spec=meta.get("spec", {}),
               fingerprint=meta.get("fingerprint", {}), steps=tables["step"],
               histograms=tables["hist"], timeseries=tables["ts"])


def _scalar_items(d: Mapping, prefix: str) -> dict:
    out = {}
    for k, v in flatten(d, prefix).items():
        out[k] = json.dumps(v, default=str) if isinstance(v, (list, tuple)) else v
    return out


def run_metadata(meta: dict) -> dict:
    """The columns a catalog row carries about its run: short names first, then spec.*."""
    spec = meta.get("spec") or {}
    fp = meta.get("fingerprint") or {}
    dev = fp.get("device") or {}
    build = fp.get("rocksdb_build") or {}
    cols = {
        "run_name": spec.get("name"),
        "started_utc": meta.get("started_utc"),
        "host": fp.get("host_id") or fp.get("hostname"),
        "kernel": fp.get("kernel"),
        "cpu_model": fp.get("cpu_model"),
        "cores": fp.get("cores"),
        "backend": metrics.backend_label(spec.get("backend", spec.get("fs_uri"))),
        "device": dev.get("disk"),
        "device_model": dev.get("model"),
        "fstype": dev.get("fstype"),
        "scheduler": dev.get("scheduler"),
        "rocksdb_version": build.get("version"),
        "rocksdb_build": build.get("key"),
        "rxlab_version": fp.get("rxlab_version"),
        "git_commit": fp.get("git_commit"),
        "git_dirty": fp.get("git_dirty"),      # measured from a working tree that differed from the commit
    }
    cols.update(_scalar_items({k: v for k, v in spec.items() if k != "steps"}, "spec"))
    return cols


def _scan(root: Path) -> tuple[list[tuple[dict, Path]], list[str]]:
    """The complete runs under root as (run.json, directory), and why each other non-dot directory
    is not one. Dot directories (.tmp-, .failed-, .studies) are not runs the catalog reads."""
    good, bad = [], []
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if d.name.startswith(".") or not d.is_dir():
            continue
        try:
            meta = read_meta(d)
        except CorruptRun as e:
            bad.append(str(e))
            continue
        if meta.get("status") != "complete":
            bad.append(f"run {d.name}: status {meta.get('status')!r} in a complete run's place")
        elif not (d / "steps.parquet").is_file():
            bad.append(f"run {d.name}: no steps.parquet")
        else:
            good.append((meta, d))
    return good, bad


def _report_skipped(skipped: list[str], what: str) -> None:
    if skipped:
        more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
        warnings.warn(f"{what}: skipped {len(skipped)} unreadable run(s): {skipped[0]}{more}",
                      SkippedRunsWarning, stacklevel=3)


def catalog(root: str | os.PathLike | None = None, runs: Iterable | None = None) -> pd.DataFrame:
    """Steps of every complete run (or of the given ids/paths) as one tidy DataFrame.

    One row per step: run_id, the step's own columns, then the run's
    metadata (host, kernel, backend, device, ..., spec.*). `backend` is one
    label per engine (rxlab.core.metrics.backend_label). Incomplete and
    failed runs are skipped when listing; naming one explicitly is an error,
    because a catalog is what figures are drawn from.

    A run that cannot be read (an empty directory, a corrupt run.json or
    steps.parquet) never blocks the others: it is left out, named in a
    SkippedRunsWarning and in ``df.attrs["skipped"]``. Named explicitly, it
    raises CorruptRun. The seeds' columns (qps, iops, ...) are
    ``seed_view(catalog())``.
    """
    root = Path(root) if root is not None else default_root()
    skipped: list[str] = []
    if runs is None:
        found, skipped = _scan(root)
        # run ids sort by second; within a second, by start time
        found.sort(key=lambda md: (md[0].get("started_utc") or "", md[1].name))
    else:
        found = []
        for r in runs:
            d = _resolve(r, root)
            meta = read_meta(d)
            if not is_complete(d):
                raise ValueError(f"run {d.name} is not complete (status: {meta.get('status')}); "
                                 "use load_run() to inspect it")
            found.append((meta, d))
    frames = []
    for meta, d in found:
        try:
            steps = read_table(d, "steps.parquet")
        except CorruptRun as e:
            if runs is not None:
                raise
            skipped.append(str(e))
            continue
        if steps.empty:
            continue
        md = run_metadata(meta)
        steps.insert(0, "run_id", meta.get("run_id", d.name))
        extra = pd.DataFrame({k: [v] * len(steps) for k, v in md.items() if k not in steps.columns},
                             index=steps.index)
        frames.append(pd.concat([steps, extra], axis=1))
    _report_skipped(skipped, "catalog")
    if not frames:
        out = pd.DataFrame({"run_id": pd.Series(dtype="object")})
    else:
        out = pd.concat(frames, ignore_index=True, sort=False)
        if "backend" in out.columns:
            out["backend"] = out["backend"].map(metrics.backend_label)
    out.attrs["skipped"] = skipped
    return out


LIST_COLUMNS = ["run_id", "status", "started_utc", "backend", "benchmarks", "threads", "qps", "wall_s",
                "steps", "name", "path"]


def list_runs(root: str | os.PathLike | None = None, include_incomplete: bool = False) -> pd.DataFrame:
    """One row per run directory: id, status, start, then what tells runs apart (run_summary), path.

    Failed (.failed-) and killed (.tmp-) runs only with include_incomplete. A
    directory that cannot be read is left out and named in
    ``df.attrs["skipped"]`` (and a SkippedRunsWarning), never an error.
    """
    root = Path(root) if root is not None else default_root()
    rows, skipped = [], []
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if not d.is_dir():
            continue
        dotted = d.name.startswith(".")
        if dotted and not (include_incomplete and d.name.startswith((TMP_PREFIX, FAILED_PREFIX))):
            continue  # .tmp-/.failed- when asked; .studies and the like never
        try:
            meta = _meta_or_parts(d)
            status = "incomplete" if d.name.startswith(TMP_PREFIX) else meta.get("status", "unknown")
            complete = not dotted and status == "complete" and (d / "steps.parquet").is_file()
            if not dotted and not complete:
                raise CorruptRun(f"run {d.name}: status {status!r} and "
                                 f"{'a' if (d / 'steps.parquet').is_file() else 'no'} steps.parquet")
            f = d / "steps.parquet"
            steps = read_table(d, f.name) if f.is_file() else _read_parts(d, "step")
        except CorruptRun as e:
            skipped.append(str(e))
            continue
        rid = meta.get("run_id", d.name.removeprefix(TMP_PREFIX).removeprefix(FAILED_PREFIX))
        rows.append({"run_id": rid,
                     "status": status, "started_utc": meta.get("started_utc"), **run_summary(meta, steps),
                     "steps": meta.get("steps", len(steps)), "name": (meta.get("spec") or {}).get("name"),
                     "path": str(d)})
    _report_skipped(skipped, "runs")
    out = pd.DataFrame(rows, columns=LIST_COLUMNS)
    out.attrs["skipped"] = skipped
    return out


ID_COLUMNS = ("run_id", "step", "run_name", "host", "backend", "threads")


def seed_view(df: pd.DataFrame, baseline=None) -> pd.DataFrame:
    """The catalog in the seeds' column names (and io.eff/us.inc/cpu.inc given a fio baseline row)."""
    ids = df[[c for c in ID_COLUMNS if c in df.columns]]
    derived = metrics.seed_columns(df) if baseline is None else metrics.efficiency(df, baseline)
    return pd.concat([ids, derived], axis=1)
