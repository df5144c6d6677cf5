"""The explorer's data: the store's runs as one frame (loaded once, cached), filters, two runs compared.

Plain functions of a DataFrame (no widgets): `runs_frame` (the catalog, one
row per step, with the explorer's columns in front; kept in the process and
in the user's cache directory, so a refresh or a next session reads only the
runs stored since), `choices`, `filter_runs`, `metric_columns`,
`run_choices`, `diff_runs`, `store_summary`, and notebook 05's `Params` and
`runs_for`.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab import studies
from rxlab.core import builds, engines, metrics, store
from rxlab.core import params as checks
from rxlab.core.study import SCALES

FILTERS = ("study", "benchmark", "backend", "threads", "build", "host")
# Columns that name groups: x, hue and filters can take them.
CATEGORIES = (
    "study",
    "benchmark",
    "backend",
    "engine",
    "threads",
    "build",
    "host",
    "date",
    "scale",
    "run_id",
    "study_id",
    "kernel",
    "fstype",
    "device_model",
)
# The metrics first offered for y: the seeds' columns, then rxlab's derived ones, then the percentiles.
MAIN_METRICS = (
    *metrics.SEED_COLUMNS[:-1],
    *metrics.EXTRA_COLUMNS,
    *metrics.PERCENTILE_COLUMNS,
    "ops",
    "wall_s",
)
NO_STUDY = "(none)"
_STUDY_ID = re.compile(r"(\d{8}T\d{6}[0-9a-f]{4})")
# Steps that prepare a DB (the load, a flush, a compaction): not the measurement a comparison wants.
PREPARING = frozenset({"fillseq", "flush", "compact", "compact0", "waitforcompaction"})


# --------------------------------------------------------------------------- the data, loaded once


@dataclass
class _Cached:
    frame: pd.DataFrame
    loaded: set[str] = field(default_factory=set)  # run ids in the frame
    skipped: set[str] = field(default_factory=set)  # run directories that could not be read
    seconds: float = 0.0  # how long the last (re)load took


_CACHE: dict[Path, _Cached] = {}
# The on-disk cache's format: a new value makes every cached frame stale (its columns changed).
CACHE_VERSION = 1


def cache_dir() -> Path:
    """Where the explorer keeps each store's frame between sessions: $RXLAB_EXPLORE_CACHE, else
    explore/ in rxlab's cache ($RXLAB_CACHE, default ~/.cache/rxlab: the user's own; nothing is written
    into a store)."""
    env = os.environ.get("RXLAB_EXPLORE_CACHE")
    return Path(env) if env else builds.cache_root() / "explore"


def _cache_file(root: Path) -> Path:
    digest = hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    return cache_dir() / f"{digest}.pkl"


def _read_disk(root: Path) -> _Cached | None:
    f = _cache_file(root)
    try:
        with f.open("rb") as fh:
            d = pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None
    ok = isinstance(d, dict) and d.get("version") == CACHE_VERSION and d.get("root") == str(root.resolve())
    return _Cached(d["frame"], set(d["loaded"]), set(d.get("skipped", ()))) if ok else None


def _write_disk(root: Path, c: _Cached) -> None:
    f = _cache_file(root)
    try:
        f.parent.mkdir(parents=True, exist_ok=True)
        tmp = f.with_name(f".{f.name}.{os.getpid()}.new")
        with tmp.open("wb") as fh:
            pickle.dump(
                {
                    "version": CACHE_VERSION,
                    "root": str(root.resolve()),
                    "frame": c.frame,
                    "loaded": sorted(c.loaded),
                    "skipped": sorted(c.skipped),
                },
                fh,
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        os.replace(tmp, f)
    except OSError as e:  # a read-only home: the in-process cache still serves
        warnings.warn(
            f"explorer: could not write its cache {f} ({e.strerror or e}); the next session reads "
            "the store again",
            RuntimeWarning,
            stacklevel=3,
        )


def _study_of(run_names: pd.Series) -> tuple[pd.Series, pd.Series]:
    """The study (registry name; NO_STUDY for runs of no study) and study id of each run name."""
    prefixes = sorted(((s.run_prefix, s.name) for s in studies.every()), key=lambda p: -len(p[0]))
    names = run_names.fillna("").astype(str)
    study = pd.Series(NO_STUDY, index=names.index, dtype=object)
    for prefix, name in prefixes:
        hit = (study == NO_STUDY) & names.str.startswith(prefix)
        study[hit] = name
    sid = names.str.extract(_STUDY_ID)[0].where(study != NO_STUDY)
    return study, sid


def _engine_of(backend: str) -> str:
    try:
        return engines.engine(backend)
    except ValueError:
        return backend  # "?" (no backend recorded) or a string that is not one: shown as it is


def _explorer_columns(cat: pd.DataFrame) -> pd.DataFrame:
    """Catalog rows with the explorer's columns in front: study, study_id, benchmark, backend, engine,
    threads, build, host, date, started, scale, then the seeds' and rxlab's derived columns, then raw."""
    if cat.empty or "run_id" not in cat.columns or len(cat.columns) == 1:
        return pd.DataFrame(columns=["run_id", *FILTERS, "date"])
    study, sid = _study_of(cat.get("run_name", pd.Series("", index=cat.index)))
    started = pd.to_datetime(cat["started_utc"], utc=True, errors="coerce", format="ISO8601")
    backend = cat["backend"].fillna("?").astype(str)
    threads = pd.to_numeric(cat.get("threads", cat.get("spec.threads")), errors="coerce")
    front = pd.DataFrame(
        {
            "run_id": cat["run_id"].astype(str),
            "step": cat.get("step"),
            "study": study,
            "study_id": sid,
            "benchmark": cat.get("name", pd.Series(None, index=cat.index)).fillna("?").astype(str),
            "backend": backend,
            "engine": backend.map(_engine_of),
            "threads": threads.astype("Int64"),
            "build": cat.get("rocksdb_build", pd.Series(None, index=cat.index)).fillna("?").astype(str),
            "host": cat.get("host", pd.Series(None, index=cat.index)).fillna("?").astype(str),
            "date": started.dt.strftime("%Y-%m-%d").fillna("?"),
            "started": started,
            "scale": cat.get("spec.scale", pd.Series(None, index=cat.index)).fillna("?").astype(str),
        },
        index=cat.index,
    )
    derived = metrics.seed_columns(cat).drop(columns=["test"])
    raw = cat.drop(columns=[c for c in [*front.columns, *derived.columns, "name"] if c in cat.columns])
    out = pd.concat([front, derived, raw], axis=1)
    # text as numpy objects: selecting rows of Arrow-backed strings costs ~5 ms per column (a filter
    # change took 130 ms with 2,000 runs), of numpy objects a fraction of that
    text = [c for c in out.columns if isinstance(out[c].dtype, pd.StringDtype | pd.ArrowDtype)]
    return out.astype(dict.fromkeys(text, object)) if text else out


def _run_dirs(root: Path) -> set[str]:
    if not root.is_dir():
        return set()
    with os.scandir(root) as it:
        return {e.name for e in it if not e.name.startswith(".") and e.is_dir()}


def _catalog(root: Path, new: list[str], skipped: set[str]) -> pd.DataFrame:
    """The catalog of the runs `new` (their explorer columns); a run that cannot be read is left out and
    added to `skipped`."""
    try:
        return _explorer_columns(store.catalog(root, runs=new))
    except (store.CorruptRun, ValueError):
        parts = []
        for r in new:
            try:
                parts.append(_explorer_columns(store.catalog(root, runs=[r])))
            except (store.CorruptRun, ValueError):
                skipped.add(r)
        parts = [p for p in parts if len(p)]
        return pd.concat(parts, ignore_index=True, sort=False) if parts else _explorer_columns(pd.DataFrame())


def runs_frame(
    root: str | os.PathLike | None = None, *, refresh: bool = False, disk_cache: bool = True
) -> pd.DataFrame:
    """Every complete run in the store, one row per step, with the explorer's columns in front.

    Loaded once per store and kept: in the process (later calls return it) and,
    with `disk_cache`, in the user's cache directory (cache_dir()), so the next
    session reads only the runs stored since. `refresh=True` reads the runs
    that appeared since the last load (and drops those removed), never the
    whole store again; run directories never change once complete.
    """
    root = Path(root) if root is not None else store.default_root()
    key = root.resolve()
    cached = _CACHE.get(key)
    if cached is not None and not refresh:
        return cached.frame
    t0 = time.monotonic()
    if cached is None and disk_cache and root.is_dir():
        cached = _read_disk(root)
    first = cached is None
    if cached is None:
        cached = _Cached(_explorer_columns(pd.DataFrame()))
    present = _run_dirs(root)
    new = sorted(d for d in present - cached.loaded - cached.skipped if store.is_complete(root / d))
    gone = cached.loaded - present
    frame = cached.frame[~cached.frame["run_id"].isin(gone)] if gone else cached.frame
    if new:
        add = _catalog(root, new, cached.skipped)
        frame = pd.concat([frame, add], ignore_index=True, sort=False) if len(frame) else add
    if new or gone or first:
        cached.frame = (
            frame.sort_values(["started", "run_id", "step"], kind="stable").reset_index(drop=True)
            if len(frame)
            else frame
        )
        cached.loaded = set(cached.frame["run_id"].unique()) if len(cached.frame) else set()
        if disk_cache and (new or gone) and root.is_dir():
            _write_disk(root, cached)
    _CACHE[key] = cached
    cached.seconds = time.monotonic() - t0
    return cached.frame


def load_seconds(root: str | os.PathLike | None = None) -> float | None:
    """How long the store's last load or refresh took (None before the first)."""
    root = Path(root) if root is not None else store.default_root()
    c = _CACHE.get(root.resolve())
    return None if c is None else c.seconds


def store_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """What a store holds, per study: runs, steps, benchmarks, backends, threads, first and last day."""
    if frame.empty:
        return pd.DataFrame(
            columns=["study", "runs", "steps", "benchmarks", "backends", "threads", "first", "last"]
        ).set_index("study")
    g = frame.groupby("study", sort=True)

    def listed(s: pd.Series) -> str:
        return ", ".join(map(str, sorted(s.dropna().unique(), key=_sort_key)))

    return pd.DataFrame(
        {
            "runs": g["run_id"].nunique(),
            "steps": g.size(),
            "benchmarks": g["benchmark"].agg(listed),
            "backends": g["backend"].agg(listed),
            "threads": g["threads"].agg(listed),
            "first": g["date"].min(),
            "last": g["date"].max(),
        }
    )


@dataclass
class Params(checks.Checked):
    """notebooks/05_explore's parameters. scale: what a study run for an empty store uses (smoke | small |
    full). root: the results store (None: $RXLAB_RUNS, else data/runs). study_if_empty: the study run
    first when the store holds no run (None: none; the explorer then says there is nothing)."""

    scale: str = "small"
    root: str | None = None
    study_if_empty: str | None = "quickstart"

    def __post_init__(self):
        checks.choice("scale", self.scale, SCALES)
        if self.root is not None and (
            not isinstance(self.root, (str, os.PathLike)) or not str(self.root) or Path(self.root).is_file()
        ):
            checks.fail("root", self.root, "expected None or a directory (a results store)")
        if self.study_if_empty is not None:
            checks.choice("study_if_empty", self.study_if_empty, [*studies.names(), None])

    @property
    def store(self) -> Path:
        return Path(self.root) if self.root is not None else store.default_root()


def runs_for(params: Params, *, live: bool = True) -> pd.DataFrame:
    """The store's runs (runs_frame); when it holds none and params.study_if_empty names a study, that
    study is run first at params.scale (progress bar and, in a notebook, its rows as they are stored)."""
    frame = runs_frame(params.store)
    if frame.empty and params.study_if_empty:
        study = studies.get(params.study_if_empty)
        print(f"{params.store} holds no run: running the {study.name} study at scale {params.scale} first")
        study.run(study.params(scale=params.scale), params.store, live=live)
        frame = runs_frame(params.store, refresh=True)
    elif frame.empty:
        print(f"{params.store} holds no run (and study_if_empty is None): nothing to explore yet")
    return frame


def first_view(frame: pd.DataFrame) -> dict:
    """What the explorer shows first: readrandom's qps by backend (the question rxlab asks of every
    backend), threads as hue when those runs have several thread counts, else the backend's colour.
    Where no run has readrandom: the measurement most runs made (not a load, flush or compaction).
    Returns the benchmark to select (None: none) and x, y, hue."""
    if frame.empty or "benchmark" not in frame.columns:
        return {"benchmark": None, "x": "backend", "y": "qps", "hue": "backend"}
    measured = frame.loc[~frame["benchmark"].isin(PREPARING), "benchmark"]
    if (measured == "readrandom").any():
        bench = "readrandom"
    else:
        bench = measured.value_counts().index[0] if len(measured) else None
    rows = frame[frame["benchmark"] == bench] if bench is not None else frame
    several = "threads" in rows.columns and rows["threads"].nunique() > 1
    return {"benchmark": bench, "x": "backend", "y": "qps", "hue": "threads" if several else "backend"}


# --------------------------------------------------------------------------- filtering


def _sort_key(v):
    return (0, float(v), "") if isinstance(v, (int, float, np.integer, np.floating)) else (1, 0.0, str(v))


def choices(frame: pd.DataFrame) -> dict[str, list]:
    """The values each filter can take (sorted), and `date`: the days that have runs."""
    out = {}
    for f in (*FILTERS, "date"):
        if f in frame.columns:
            vals = [v for v in frame[f].dropna().unique()]
            out[f] = sorted(vals, key=_sort_key)
        else:
            out[f] = []
    return out


def filter_runs(frame: pd.DataFrame, *, dates: tuple[str, str] | None = None, **selected) -> pd.DataFrame:
    """The rows whose filter columns take one of the selected values (an empty selection keeps all), and
    whose date is within `dates` (first, last: 'YYYY-MM-DD', both included). A value the store does not
    hold is refused in one line that names what it holds."""
    bad = [k for k in selected if k not in FILTERS]
    if bad:
        raise ValueError(f"filter {bad[0]!r}: allowed are {', '.join(FILTERS)} and dates")
    keep = np.ones(len(frame), dtype=bool)
    for name, values in selected.items():
        vals = [values] if isinstance(values, (str, int, np.integer)) else list(values or ())
        if not vals:
            continue
        col = frame[name]
        if name == "threads":
            try:
                vals = [int(v) for v in vals]
            except (TypeError, ValueError):
                raise ValueError(f"threads={values!r}: expected thread counts such as 1, 2") from None
        known = set(col.dropna().unique())
        unknown = [v for v in vals if v not in known]
        if unknown:
            held = ", ".join(map(str, sorted(known, key=_sort_key)[:20])) or "nothing"
            raise ValueError(f"{name}={unknown[0]!r}: the store holds {held}")
        keep &= col.isin(vals).to_numpy(dtype=bool, na_value=False)
    if dates is not None:
        lo, hi = dates
        for d in (lo, hi):
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(d)):
                raise ValueError(f"dates={dates!r}: expected ('YYYY-MM-DD', 'YYYY-MM-DD')")
        day = frame["date"].astype(str)
        keep &= ((day >= str(lo)) & (day <= str(hi))).to_numpy()
    return frame[keep]


# --------------------------------------------------------------------------- the plot and its table


def metric_columns(frame: pd.DataFrame) -> list[str]:
    """Numeric columns with at least one finite value: the seeds' first (qps, iops, reqsz, usPer, syPer,
    cpuPer, rx.lat, io.lat), then rxlab's derived ones and the percentiles, then every other number."""
    nums = frame.select_dtypes(include="number", exclude="bool")
    has = nums.notna().any()
    num = [c for c in nums.columns[has.to_numpy()] if c != "step"]
    main = [c for c in MAIN_METRICS if c in num]
    return main + sorted(c for c in num if c not in main)


def axis_columns(frame: pd.DataFrame) -> list[str]:
    """What x can be: the group columns (study, benchmark, backend, threads, ...) and every metric."""
    return (
        [c for c in CATEGORIES if c in frame.columns]
        + ["started"] * ("started" in frame.columns)
        + [c for c in metric_columns(frame) if c not in CATEGORIES]
    )


def is_category(frame: pd.DataFrame, col: str) -> bool:
    """Is a column drawn as groups (a category axis) rather than as numbers?"""
    s = frame[col]
    return (col in CATEGORIES or not pd.api.types.is_numeric_dtype(s)) and col != "started"


# --------------------------------------------------------------------------- two runs side by side


def run_choices(frame: pd.DataFrame, limit: int = 500) -> list[tuple[str, str]]:
    """(label, run_id) of the runs in a frame, the newest first (at most `limit`)."""
    if frame.empty:
        return []
    last = frame.drop_duplicates("run_id", keep="last").sort_values(["started", "run_id"], ascending=False)
    last = last.head(limit)
    pairs = frame.loc[frame["run_id"].isin(last["run_id"]), ["run_id", "benchmark"]].drop_duplicates()
    benches = pairs.groupby("run_id", sort=False)["benchmark"].agg(",".join)
    return [
        (f"{rid[:22]} {b} x{t} {benches[rid]}"[:90], rid)
        for rid, b, t in zip(last["run_id"], last["backend"], last["threads"], strict=True)
    ]


def measured_step(frame: pd.DataFrame, run_id: str, step: str | None = None) -> pd.Series:
    """A run's row for one step: `step` (a benchmark name), else its last step that measures (not a
    load, flush or compaction)."""
    rows = frame[frame["run_id"] == run_id]
    if rows.empty:
        raise ValueError(f"run {run_id!r}: not among the runs shown (widen the filters)")
    if step is not None:
        hit = rows[rows["benchmark"] == step]
        if hit.empty:
            raise ValueError(f"step {step!r}: run {run_id} has {', '.join(dict.fromkeys(rows['benchmark']))}")
        return hit.iloc[-1]
    measuring = rows[~rows["benchmark"].isin(PREPARING)]
    return (measuring if len(measuring) else rows).iloc[-1]


def diff_runs(
    frame: pd.DataFrame, a: str, b: str, *, step: str | None = None, only_different: bool = False
) -> pd.DataFrame:
    """Two runs' columns side by side: one row per column (the explorer's, the seeds', the raw and the
    spec's), the value in each run, and for numbers the difference b - a and the change in %.
    The step compared is `step` when both have it, else each run's last measuring step."""
    ra = measured_step(frame, a, step)
    common = (
        step
        if step is not None
        else (
            ra["benchmark"] if ra["benchmark"] in set(frame.loc[frame["run_id"] == b, "benchmark"]) else None
        )
    )
    rb = measured_step(frame, b, common)
    if step is None and common is not None:
        ra = measured_step(frame, a, common)
    cols = [c for c in frame.columns if not (pd.isna(ra[c]) and pd.isna(rb[c])) if c != "started"]
    va, vb = ra[cols], rb[cols]
    out = pd.DataFrame({"column": cols, "A": va.to_numpy(dtype=object), "B": vb.to_numpy(dtype=object)})
    na = pd.to_numeric(va, errors="coerce").to_numpy(dtype=float)
    nb = pd.to_numeric(vb, errors="coerce").to_numpy(dtype=float)
    numeric = (
        np.array([pd.api.types.is_number(v) and not isinstance(v, (bool, np.bool_)) for v in va])
        & np.isfinite(na)
        & np.isfinite(nb)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        out["B - A"] = np.where(numeric, nb - na, np.nan)
        out["change %"] = np.where(numeric & (na != 0), (nb / na - 1) * 100, np.nan)
    same = np.array([_same(x, y) for x, y in zip(out["A"], out["B"], strict=True)])
    out["differs"] = ~same
    if only_different:
        out = out[out["differs"]]
    return out.set_index("column")


def _same(x, y) -> bool:
    if pd.isna(x) and pd.isna(y):
        return True
    try:
        return bool(x == y)
    except (TypeError, ValueError):
        return str(x) == str(y)


