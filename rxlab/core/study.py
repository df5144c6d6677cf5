"""The Study protocol: what every seed study implements, and what running one does.

A study is a question asked of this machine (the seeds' tables and figures,
measured here). Each lives in a folder under rxlab/studies/ and subclasses
`Study`, declaring:

* `Params`: a dataclass of its parameters (a subclass of `StudyParams`),
  checked on construction, one line per bad value, with the scale presets
  `smoke` (seconds, CI), `small` (minutes) and `full` (the largest run the
  machine holds). `params.settings()` resolves a scale on this machine.
* `plan(params)`: the runs in execution order, one row each.
* `run_one(ctx, row)`: measure one row of the plan, store it, return the run.
* `frame(catalog)`: the study's tidy frame from the store's catalog rows.
* `tables` and `figures`: named functions of a result; every figure is a
  `FigureSpec`, a table (`data`) and a drawing of that table alone (`draw`),
  so a saved figure can be redrawn from its saved table without rerunning.
* `findings(result)`: what the numbers say, in Markdown.
* `compare` (optional): a rxlab.core.turns_plan.Compare, what the study
  compares; `plan` then gives one turn's rows and the protocol runs them in
  turns, with an A/A pair of the base, until every comparison's 95% interval
  is within the target or the budget is spent (rxlab/core/turns_plan.py).

`Study.run` does the rest the same way for every study: a study id, a
scratch directory that is removed afterwards, a progress bar, optional live
partial tables, and a manifest in the store written last: a study that
failed or was interrupted is marked so and never loaded as complete.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import secrets
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from rxlab.core import executions, figures, scales, store
from rxlab.core import params as checks
from rxlab.core.progress import tqdm
from rxlab.core.tables import save_table
from rxlab.core.units import parse_size, size_words

__all__ = ["FULL_DISK_FRACTION", "FULL_MAX_BYTES", "FULL_MIN_BYTES", "SCALES", "FigureSpec", "RunContext",
           "Study", "StudyParams", "StudyResult", "StudySettings", "check_space", "key_count", "manifest",
           "match_runs", "new_study_id", "settings_table", "tidy_frame"]

SCALES = scales.NAMES
MANIFESTS = ".studies"   # under the store's root: one JSON per study id


_made_ids = {"last": ""}   # the last study id this process made


def new_study_id() -> str:
    """UTC time (sortable) and 4 random hex digits: 20261122T210817cf97. The ids one process makes sort
    in the order it made them, also within one second (then the digits count up from the last id's):
    `Study.load` takes the greatest id as the latest."""
    while True:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        suffix = secrets.token_hex(2)
        last = _made_ids["last"]
        last_stamp, last_suffix = last[:-4], last[-4:]
        if stamp != last_stamp or suffix > last_suffix:
            break
        if last_suffix != "ffff":
            suffix = f"{int(last_suffix, 16) + 1:04x}"
            break
        time.sleep(0.05)  # this second's ids are used up: the next second's
    _made_ids["last"] = stamp + suffix
    return stamp + suffix


def settings_table(rows: Iterable[tuple[str, Any]]) -> pd.DataFrame:
    """A scale resolved on this machine as a two-column table (setting, value) for the notebook."""
    return pd.DataFrame([(k, str(v)) for k, v in rows], columns=["setting", "value"]).set_index("setting")


def size_text(b: float) -> str:
    """Bytes as GiB or MiB, for settings tables."""
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"


GIB = 1 << 30
FULL_DISK_FRACTION = 0.25    # of the free space, for the DB (compaction needs as much again)
FULL_MIN_BYTES = 4 * GIB     # below this, full is no bigger than small: refuse
FULL_MAX_BYTES = 16 * GIB    # a sequence rewrites the DB three times; 16 GiB keeps a run to hours


def key_count(entry: int, work: Path, free: float, *, num: int | None = None, db_size=None) -> int:
    """How many keys of `entry` bytes (key and value) a study loads: `db_size`'s worth when given, else
    the scale's `num`, else (scale full, num None) as many as FULL_DISK_FRACTION of the `free` bytes at
    `work` holds, FULL_MIN_BYTES..FULL_MAX_BYTES of data (refused, in one line, below that)."""
    if db_size is not None:
        return max(1, parse_size(db_size) // entry)
    if num is not None:
        return num
    db_bytes = int(min(FULL_MAX_BYTES, free * FULL_DISK_FRACTION))
    if db_bytes < FULL_MIN_BYTES:
        raise ValueError(f"scale='full': needs {FULL_MIN_BYTES / FULL_DISK_FRACTION / GIB:.0f} GiB free at "
                         f"{work} for a DB of at least {FULL_MIN_BYTES / GIB:.0f} GiB, only "
                         f"{size_words(free)} free; use scale='small' or another db_dir")
    return db_bytes // entry


def check_space(scale: str, need: float, work: Path, free: float, smaller: str = "scale") -> None:
    """Refuse, in one line, a scale that needs more bytes than are free in the work directory."""
    if need > free:
        raise ValueError(f"scale={scale!r}: needs about {size_words(need)} free at {work}, only "
                         f"{size_words(free)} free; choose another db_dir or a smaller {smaller}")


def match_runs(cat: pd.DataFrame, name_re: re.Pattern,
               where: Callable[[pd.DataFrame, pd.DataFrame], Any] | None = None
               ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A study's rows among catalog rows: those whose run_name `name_re` matches (it has a `study` group),
    fewer with `where(cat, groups)` (a mask), and the pattern's groups of each; both empty when none."""
    if cat.empty or "run_name" not in cat.columns:
        return cat.iloc[:0], pd.DataFrame()
    m = cat["run_name"].astype(str).str.extract(name_re)
    keep = m["study"].notna()
    if where is not None:
        keep &= where(cat, m)
    return cat[keep].copy(), m[keep]


def tidy_frame(keys: pd.DataFrame, cat: pd.DataFrame, derived: pd.DataFrame, *, first: Iterable[str] = (),
               drop: Iterable[str] = (), sort: Iterable[str] = ()) -> pd.DataFrame:
    """A study's tidy frame: its `keys`, the catalog rows' raw columns and the `derived` ones side by side
    (a raw column named as a key or a derived one, or in `drop`, left out: the study's win), the `first`
    columns moved first, sorted (stably) by the `sort` columns there are, indexed 0..n-1."""
    raw = cat.drop(columns=[c for c in (*derived.columns, *keys.columns, *drop) if c in cat.columns])
    out = pd.concat([keys, raw, derived], axis=1)
    head = [c for c in first if c in out.columns]
    out = out[head + [c for c in out.columns if c not in head]]
    order = [c for c in sort if c in out.columns]
    if order:
        out = out.sort_values(order, kind="stable")
    return out.reset_index(drop=True)


@dataclass(frozen=True)
class StudySettings:
    """A scale resolved on this machine: what a study will run. Every study's Settings starts with
    these and adds its own; `table()` shows them in the notebook."""

    scale: str
    num: int            # keys
    db_bytes: int       # key-value data
    duration: float     # seconds of each timed step
    repeats: int
    cache_size: int     # RocksDB's block cache, bytes

    def rows(self) -> list[tuple[str, Any]]:
        """The rows every study's settings table has, its own (`own_rows`) between them and the work
        directory (when the settings have one)."""
        rows = [("keys (num)", f"{self.num:,}"), ("DB size (key-value data)", size_text(self.db_bytes)),
                ("block cache", size_text(self.cache_size)),
                ("DB / cache", f"{self.db_bytes / self.cache_size:.0f}x" if self.cache_size else "-"),
                ("seconds per timed step", f"{self.duration:g}"),
                # a study in turns says its stopping rule in its own rows: the preset's repeats is unused
                *([] if getattr(self, "turns", "") else [("repeats", self.repeats)]),
                *self.own_rows()]
        if getattr(self, "work_dir", None):
            rows.append(("work directory", self.work_dir))
        if getattr(self, "free_bytes", None) is not None:
            rows.append(("free there", size_text(self.free_bytes)))
        return rows

    def own_rows(self) -> list[tuple[str, Any]]:
        """A study's own settings, as (setting, value) rows. None by default."""
        return []

    def table(self) -> pd.DataFrame:
        """The settings as the notebook shows them (setting, value)."""
        return settings_table(self.rows())


@dataclass
class StudyParams(checks.Checked):
    """Parameters every study has: the scale preset. Subclasses add their own (all with defaults)
    and check them in `__post_init__` after calling this one's."""

    scale: str = "small"

    def __post_init__(self):
        checks.choice("scale", self.scale, SCALES)

    def as_dict(self) -> dict:
        """The parameters as given (JSON-ready), for the study's manifest."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass
class StudyResult:
    """A study's runs and its tidy frame (one row per step, the study's keys first).

    `study` is the study id; `runs` the run directories in the store `root`.
    Studies subclass it for properties that read their frame (backends, cases, ...).
    """

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    params: Any = None
    settings: Any = None
    elapsed_s: float | None = None
    name: str = ""
    turns: dict | None = None   # what the turns decided (rxlab.core.turns_plan.run_turns), if in turns

    @property
    def run_ids(self) -> list[str]:
        """The runs as ids of the store (portable: no machine path)."""
        return [Path(r).name for r in self.runs]

    @property
    def scale(self) -> str | None:
        if self.params is not None and getattr(self.params, "scale", None):
            return self.params.scale
        if "spec.scale" in self.frame.columns:
            s = sorted(set(self.frame["spec.scale"].dropna().astype(str)))
            return ", ".join(s) or None
        return None

    @property
    def builds(self) -> list[str]:
        """The RocksDB builds behind the runs (keys such as 9.10.0-gcc12)."""
        if "rocksdb_build" not in self.frame.columns:
            return []
        return sorted(set(self.frame["rocksdb_build"].dropna().astype(str)))


@dataclass(frozen=True)
class FigureSpec:
    """A figure: `data(result)` gives its one tidy table, `draw(table)` draws it from that alone.

    `args(result)`, when given, returns a few JSON values the drawing also takes
    (`draw(table, **args)`: a base build's name for a title, say); they are saved
    in the sidecar so a redraw passes them again.
    """

    data: Callable[[Any], pd.DataFrame]
    draw: Callable[..., Any]
    args: Callable[[Any], dict] | None = None
    notes: str = ""


@dataclass
class RunContext:
    """What `Study.run_one` is given: the study id, its store, scratch space and the runs so far."""

    study: Study
    id: str
    params: StudyParams
    settings: Any
    root: Path
    work: Path                      # removed at the end when it is a temporary directory
    runs: list[Path] = field(default_factory=list)
    scratch: list[Path] = field(default_factory=list)
    state: dict = field(default_factory=dict)   # what `setup` prepares for every row (a loaded DB, ...)
    progress: bool = True           # Study.run's `progress`: a study may pass it on (driver.run's step bar)
    execution: Any = None           # rxlab.core.executions.Execution: owner, rows done (resume), scratch

    def run_name(self, *parts: object) -> str:
        """`<prefix><study id>-<parts...>`: a run name the study's `frame` can parse back."""
        return "-".join([f"{self.study.run_prefix}{self.id}", *(str(p) for p in parts)])

    def path(self, name: str) -> Path:
        """A scratch path in the work directory (`<name>-<study id>`), deleted when the study ends."""
        p = self.work / f"{name}-{self.id}"
        self.scratch.append(p)
        if self.execution is not None:
            self.execution.scratch.append(str(p))
        return p


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def manifest(root: str | os.PathLike, study_id: str) -> dict | None:
    """The manifest of a study in the store (None for a study stored before manifests existed)."""
    try:
        return json.loads((Path(root) / MANIFESTS / f"{study_id}.json").read_text())
    except (OSError, ValueError):
        return None


def _write_manifest(root: Path, study_id: str, content: dict) -> None:
    d = root / MANIFESTS
    d.mkdir(parents=True, exist_ok=True)
    tmp = d / f".{study_id}.json.new"
    tmp.write_text(json.dumps(content, indent=1, default=str) + "\n")
    os.replace(tmp, d / f"{study_id}.json")  # a reader sees the old manifest or the new one


class Study:
    """The protocol. A subclass declares what the study is in its class statement and implements
    plan, run_one and frame:

        class BackendsStudy(Study, name="backends", notebook="30_backends", seed=SEED_FILE,
                            published=PUBLISHED, run_prefix="lab-", params=Params,
                            result=BackendsResult, tables=TABLES, figures=FIGURES):
            '''The lab report's workloads on each backend (the docstring's first line: its title).'''
    """

    name: ClassVar[str]                 # registry key and CLI name, e.g. "backends"
    title: ClassVar[str]                # one line: what it measures
    notebook: ClassVar[str]             # its notebook's stem, e.g. "30_backends"
    seed: ClassVar[str | None] = None   # the seed document it reproduces (../shared/seeds/)
    published: ClassVar[tuple[str, ...]] = ()   # "<seed file>: <table>" behind its figures
    Params: ClassVar[type[StudyParams]]
    run_prefix: ClassVar[str]           # its runs are named <run_prefix><study id>-...
    result_type: ClassVar[type[StudyResult]] = StudyResult
    tables: ClassVar[Mapping[str, Callable]] = {}
    figures: ClassVar[Mapping[str, FigureSpec]] = {}
    compare: ClassVar[Any] = None   # a rxlab.core.turns_plan.Compare: the protocol runs the plan in turns
    work_prefix: ClassVar[str | None] = None   # unused: scratch folders are <name>-<id>-<pid> (executions)

    def __init_subclass__(cls, *, name: str | None = None, notebook: str | None = None,
                          seed: str | None = None, published: tuple[str, ...] = (),
                          run_prefix: str | None = None,
                          params: type[StudyParams] | None = None, result: type[StudyResult] | None = None,
                          tables: Mapping[str, Callable] | None = None,
                          figures: Mapping[str, FigureSpec] | None = None, work_prefix: str | None = None,
                          compare: Any = None, **kw):
        """The class statement's keywords become the study's declarations; its docstring's first line,
        its title."""
        super().__init_subclass__(**kw)
        given = {"name": name, "notebook": notebook, "seed": seed, "run_prefix": run_prefix, "Params": params,
                 "result_type": result, "tables": tables, "figures": figures, "work_prefix": work_prefix,
                 "compare": compare}
        for attr, value in given.items():
            if value is not None:
                setattr(cls, attr, value)
        if published:
            cls.published = tuple(published)
        if "title" not in cls.__dict__ and cls.__doc__:
            cls.title = cls.__doc__.strip().splitlines()[0].rstrip(".")

    # ------------------------------------------------------------------ what a study implements

    def plan(self, params: StudyParams) -> pd.DataFrame:
        raise NotImplementedError

    def setup(self, ctx: RunContext) -> None:
        """Before the first row (load a DB every row reads, say). Nothing by default."""

    def teardown(self, ctx: RunContext, error: BaseException | None) -> None:
        """After the last row, or when the study stops early (`error`: the exception, Ctrl-C included):
        close what `setup` opened. Runs before the scratch directory is removed. Nothing by default."""

    def run_one(self, ctx: RunContext, row) -> Path | list[Path] | None:
        """Measure one row of the plan; return the stored run(s), or None when the row is skipped."""
        raise NotImplementedError

    def describe(self, row) -> str:
        """The progress bar's note for a row: its plan columns."""
        return " ".join(f"{k} {v}" for k, v in row._asdict().items())

    def frame(self, catalog: pd.DataFrame) -> pd.DataFrame:
        """The tidy frame of the study's runs from catalog rows (others dropped)."""
        raise NotImplementedError

    def complete(self, frame: pd.DataFrame) -> bool:
        """Does a study's frame hold everything the tables need (for studies without a manifest)?"""
        return not frame.empty

    def findings(self, result: StudyResult) -> str:
        return ""

    def live_table(self, result: StudyResult) -> pd.DataFrame:
        """What a notebook shows while the study runs: the runs so far, a row each."""
        f = result.frame
        cols = [c for c in ("run_id", "name", "backend", "threads", "qps", "iops", "cpuPer", "rx.lat")
                if c in f.columns]
        return f[cols].tail(12)

    # ------------------------------------------------------------------ what running one does

    def params(self, **kw) -> StudyParams:
        """The parameters, checked (one line per bad value: rxlab.core.params.Checked.checked)."""
        return self.Params.checked(**kw)

    def _settings(self, params: StudyParams):
        return params.settings() if hasattr(params, "settings") else None

    def _work_dir(self, params: StudyParams, sid: str) -> tuple[Path, bool]:
        """db_dir when given, else a scratch folder of this execution (rxlab.core.executions)."""
        db_dir = getattr(params, "db_dir", None)
        if db_dir is None:
            return executions.make_scratch(self.name, sid), True
        p = Path(db_dir)
        p.mkdir(parents=True, exist_ok=True)
        return p, False

    def run(self, params: StudyParams, root: str | os.PathLike | None = None, *, progress: bool = True,
            live: bool | Callable[[StudyResult], None] = False, resume: Mapping | None = None) -> StudyResult:
        """Run the plan, every run stored under `root` (the store's default), under one study id.

        The scratch directory (a folder of this execution, or the paths the
        study made in `db_dir`) is removed at the end, on failure and on
        Ctrl-C too; one left by a killed execution, at the next start. The
        manifest (<root>/.studies/<id>.json) says "running" with its owner
        from the start, records each row's runs as they finish, and ends
        complete, or failed / interrupted with the error, so `load` never
        returns a study that stopped half way. `resume`: the manifest of an
        execution that stopped (`Study.resume`): its finished rows are reused,
        the rest run under its id. `live`: True shows `live_table` under the
        progress bar in a notebook, a callable gets each partial result.
        """

        if not isinstance(params, self.Params):
            raise TypeError(f"{self.name}: params must be {self.Params.__name__} (use study.params(...))")
        settings = self._settings(params)
        root = Path(root) if root is not None else store.default_root()
        for path, size in executions.clean_scratch(root):
            print(f"rxlab: removed {path} ({size / 2**20:.0f} MiB), left by a study whose process is gone",
                  file=sys.stderr)
        sid = str(resume["id"]) if resume else new_study_id()
        execution = executions.Execution(resume)
        steps = self.plan(params)
        keys = execution.keys(steps.itertuples(index=False))
        if self.compare is None:  # a study in turns has no plan made ahead: its turns' rows are reused
            execution.check_plan(keys, self.name, sid)
        work, temporary = self._work_dir(params, sid)
        ctx = RunContext(self, sid, params, settings, root, work, progress=progress, execution=execution)
        show = _live_display(self) if live is True else live or None
        t0 = time.monotonic()
        status, error, failure = "interrupted", None, None
        _write_manifest(root, sid, self._manifest(ctx, "running", t0))
        try:
            self.setup(ctx)

            def one(key: str, row) -> None:
                before = execution.reused(key, root)
                if before is not None:  # finished by the execution this one resumes
                    ctx.runs.extend(before)
                    return
                out = self.run_one(ctx, row)
                new = [] if out is None else [out] if isinstance(out, Path) else list(out)
                ctx.runs.extend(new)
                execution.finished(key, new)
                _write_manifest(root, sid, self._manifest(ctx, "running", t0))
                if show is not None and ctx.runs:
                    show(self._result(ctx, t0))

            if self.compare is not None:  # the protocol schedules turns until resolved (turns_plan)
                seen: dict[str, int] = {}
                self.compare.run_turns(self, ctx, steps, lambda row: one(executions.row_key(row, seen), row),
                                       frame=lambda: self._result(ctx, t0).frame, progress=progress)
            else:
                bar = tqdm(steps.itertuples(index=False), total=len(steps),
                           desc=f"{self.name} {params.scale}", unit="run", disable=not progress)
                for key, row in zip(keys, bar, strict=True):
                    bar.set_postfix_str(self.describe(row)[:60])
                    one(key, row)
            status = "complete"
        except BaseException as e:
            status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
            error = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
            failure = e
            raise
        finally:
            self.teardown(ctx, failure)
            for p in reversed(ctx.scratch):
                _remove(p)
            if temporary:
                shutil.rmtree(work, ignore_errors=True)
            _write_manifest(root, sid, self._manifest(ctx, status, t0, error))
        return self._result(ctx, t0)

    def _result(self, ctx: RunContext, t0: float) -> StudyResult:
        frame = self.frame(store.catalog(ctx.root, runs=ctx.runs)) if ctx.runs else self.frame(pd.DataFrame())
        return self.result_type(study=ctx.id, frame=frame, runs=list(ctx.runs), root=ctx.root,
                                params=ctx.params, settings=ctx.settings, elapsed_s=time.monotonic() - t0,
                                name=self.name, turns=ctx.state.get("turns"))

    def _manifest(self, ctx: RunContext, status: str, t0: float, error: str | None = None) -> dict:
        return {"study": self.name, "id": ctx.id, "status": status, "error": error,
                "params": ctx.params.as_dict(), "scale": ctx.params.scale,
                "runs": [p.name for p in ctx.runs], "seconds": round(time.monotonic() - t0, 1),
                "updated_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **({"turns": ctx.state["turns"]} if "turns" in ctx.state else {}),
                **(ctx.execution.fields(time.monotonic() - t0) if ctx.execution is not None else {})}

    def resume(self, study_id: str, root: str | os.PathLike | None = None, *, progress: bool = True,
               live: bool | Callable[[StudyResult], None] = False) -> StudyResult:
        """Run the rest of a study that stopped (interrupted, killed, failed) under its id, reusing the
        runs of the rows it finished. Refused, in one line, for a complete or still running study."""
        root = Path(root) if root is not None else store.default_root()
        m = manifest(root, study_id)
        if m is None:
            raise LookupError(f"study {study_id!r}: no manifest in {root / MANIFESTS} (`rxlab study runs` "
                              "lists the executions)")
        if m.get("study") != self.name:
            raise ValueError(f"study {study_id}: an execution of {m.get('study')!r}, not {self.name!r}")
        state = executions.status(m)
        if state == "complete":
            raise ValueError(f"study {study_id}: already complete ({len(m.get('runs') or [])} runs)")
        if state == "running":
            who = m.get("owner") or {}
            raise ValueError(f"study {study_id}: still running (pid {who.get('pid', '?')} on "
                             f"{who.get('host', '?')}); stop it first, or wait")
        given = m.get("params") or {}
        known = {f.name for f in dataclasses.fields(self.Params)}
        params = self.params(**{k: v for k, v in given.items() if k in known})
        return self.run(params, root, progress=progress, live=live, resume=m)

    def load(self, root: str | os.PathLike | None = None, *, study: str | None = None,
             scale: str | None = None, before: str | None = None,
             where: Callable[[pd.DataFrame], bool] | None = None) -> StudyResult | None:
        """The latest complete study in the store, or None. Filters: its id, its scale, started
        `before` another id, and `where(frame)` for anything else."""
        root = Path(root) if root is not None else store.default_root()
        cat = self._catalog_of(root, study)
        if cat.empty or "run_name" not in cat.columns:
            return None
        frame = self.frame(cat[cat["run_name"].astype(str).str.startswith(self.run_prefix)])
        if frame.empty:
            return None
        for sid in sorted(frame["study"].unique(), reverse=True):
            f = frame[frame["study"] == sid].reset_index(drop=True)
            m = manifest(root, str(sid))
            if m is not None and m.get("status") != "complete":
                continue
            scales = set(f["spec.scale"].dropna()) if "spec.scale" in f.columns else set()
            if ((study is None or sid == study) and (before is None or str(sid) < str(before))
                    and (scale is None or scales == {scale}) and (where is None or where(f))
                    and self.complete(f)):
                return self.result_type(study=str(sid), frame=f, root=root, name=self.name,
                                        runs=[root / r for r in f["run_id"].unique()])
        return None

    @staticmethod
    def _catalog_of(root: Path, study: str | None) -> pd.DataFrame:
        """The catalog `load` looks through: for a study named by id, the runs its manifest lists (a store
        holds thousands of runs, and reading them all is what made a load slow); else, or where one of
        those runs is gone or incomplete, every run."""
        m = manifest(root, study) if study else None
        names = (m or {}).get("runs") or []
        if names and all(store.is_complete(root / n) for n in names):
            return store.catalog(root, runs=[root / n for n in names])
        return store.catalog(root)

    # ------------------------------------------------------------------ tables and figures

    def table(self, name: str, result: StudyResult) -> pd.DataFrame:
        if name not in self.tables:
            raise ValueError(f"table {name!r}: {self.name} has {', '.join(self.tables) or 'no tables'}")
        return self.tables[name](result)

    def figure(self, name: str, result: StudyResult, *, save: bool = True,
               directory: str | os.PathLike | None = None, notes: str = ""):
        """Draw a figure from its table; with `save`, write it (pdf, svg, png), its table and its
        sidecar through rxlab.core.figures. Returns the matplotlib figure: a notebook displays it once
        (it is closed after saving, so the inline backend does not show it a second time)."""
        if name not in self.figures:
            raise ValueError(f"figure {name!r}: {self.name} has {', '.join(self.figures) or 'no figures'}")
        spec = self.figures[name]
        table = spec.data(result)
        args = spec.args(result) if spec.args else {}
        fig = spec.draw(table, **args)
        if save:
            figures.save(fig, name, table=table, draw_args=args, study=self.name, study_id=result.study,
                         runs=result.run_ids, builds=result.builds, scale=result.scale,
                         published=self.published, notes=notes or spec.notes, directory=directory)
        return fig

    def save_tables(self, result: StudyResult, directory: str | os.PathLike | None = None) -> list[Path]:
        """Every table as LaTeX, Markdown and CSV in `directory` (default: figures/tables/), named
        <study>_<table>; returns the files written."""
        d = Path(directory) if directory is not None else figures.figures_dir() / "tables"
        out: list[Path] = []
        for name in self.tables:
            t = self.table(name, result)
            if t is None or len(t) == 0:
                continue
            out += save_table(t, f"{self.name}_{name}", d,
                              caption=f"{self.title}: {name} (study {result.study})").values()
        return out

    def save_outputs(self, result: StudyResult, directory: str | os.PathLike) -> dict[str, list]:
        """Every figure (with its table and sidecar), every table and the findings under `directory`:
        what `rxlab study run` leaves for a study. A figure that cannot be drawn from this result is
        named with its error, not fatal."""
        import matplotlib.pyplot as plt  # noqa: PLC0415 - pyplot only when drawing

        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        done: dict[str, list] = {"figures": [], "failed": [], "tables": []}
        for name in self.figures:
            try:
                plt.close(self.figure(name, result, directory=d))
                done["figures"].append(name)
            except (ValueError, KeyError) as e:
                done["failed"].append(f"{name}: {(str(e).strip().splitlines() or [type(e).__name__])[0]}")
        done["tables"] = [p.name for p in self.save_tables(result, d / "tables")]
        (d / "findings.md").write_text(f"# {self.title}\n\nStudy {result.study}, scale {result.scale}.\n\n"
                                       + (self.findings(result) or "") + "\n")
        return done

    def describe_study(self) -> dict:
        """One line of `rxlab study list`: name, title, notebook, seed, figures."""
        return {"study": self.name, "title": self.title, "notebook": self.notebook, "seed": self.seed or "",
                "figures": ", ".join(self.figures)}


def _live_display(study: Study) -> Callable[[StudyResult], None] | None:
    """In a notebook, a display that `live_table` replaces after every run; elsewhere None."""
    try:
        from IPython import get_ipython  # noqa: PLC0415 - optional: only inside IPython
        from IPython.display import display  # noqa: PLC0415 - optional: only inside IPython
    except ImportError:
        return None
    if get_ipython() is None:
        return None
    from IPython.display import HTML  # noqa: PLC0415 - optional: only inside IPython

    # a line until the first run is stored (an empty DataFrame would show as an empty table)
    handle = display(HTML(f"<i>{study.name}: each run's rows appear here when it is stored</i>"),
                     display_id=True)

    def show(result: StudyResult) -> None:
        handle.update(study.live_table(result))

    return show
