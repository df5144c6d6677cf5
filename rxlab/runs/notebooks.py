"""The notebooks as a set, and running one with papermill.

A study's notebook is named by its study (`Study.notebook`); what it draws
and which seed it reproduces come from the study registry (rxlab.studies),
so `rxlab report`, `rxlab sweep`, the figures index and the tests all read
one source. A notebook that belongs to no study (an exploration notebook)
is run too and draws no registered figure.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rxlab import studies
from rxlab.core import store
from rxlab.core.paths import REPO
from rxlab.core.progress import PROGRESS_ENV

NOTEBOOKS_DIR = REPO / "notebooks"


@dataclass(frozen=True)
class NotebookInfo:
    name: str            # file stem, e.g. 10_io_efficiency
    path: Path
    figures: tuple       # figure stems it saves (its study's)
    seed: str | None     # the seed document's file name in ../shared/seeds/
    study: str | None = None   # the study it runs (None: an exploration notebook)


def notebook_index(directory: str | Path = NOTEBOOKS_DIR) -> list[NotebookInfo]:
    """The notebooks in run order (their file names sort in that order)."""
    by_notebook = {s.notebook: s for s in studies.every()}
    out = []
    for p in sorted(Path(directory).glob("[0-9][0-9]_*.ipynb")):
        s = by_notebook.get(p.stem)
        if s is not None:
            out.append(NotebookInfo(p.stem, p, tuple(s.figures), s.seed, s.name))
            continue
        # not (yet) a registered study: what its metadata declares
        meta = json.loads(p.read_text()).get("metadata", {}).get("rxlab", {})
        out.append(NotebookInfo(p.stem, p, tuple(meta.get("figures", ())), meta.get("seed")))
    return out


def resolve_notebook(name: str | Path, directory: str | Path = NOTEBOOKS_DIR) -> Path:
    """A notebook by path, file stem ("10_io_efficiency"), number ("10") or study name ("backends")."""
    p = Path(name)
    if p.suffix == ".ipynb" and p.is_file():
        return p.resolve()
    known = notebook_index(directory)
    for nb in known:
        if str(name) in (nb.name, nb.path.name, nb.name.split("_", 1)[0], nb.study):
            return nb.path
    raise ValueError(f"notebook {str(name)!r}: not a file; known are {', '.join(nb.name for nb in known)}")


@dataclass
class Outcome:
    """What one execution of a notebook left: status ok | failed, its runs, the error's one line."""

    notebook: str
    parameters: dict
    status: str
    seconds: float
    output: str
    runs: list
    error: str = ""
    figures: list = field(default_factory=list)
    turns: dict = field(default_factory=dict)   # what its study's turns decided (rxlab.runs.report)

    def to_dict(self) -> dict:
        return asdict(self)


def _complete_runs(root: Path) -> set[str]:
    return {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")} if root.is_dir() else set()


@contextlib.contextmanager
def _environ(**values):
    """Set environment variables for the kernel that papermill starts (it inherits os.environ)."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update({k: str(v) for k, v in values.items() if v is not None})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_notebook(notebook: str | Path, output: str | Path, parameters: Mapping | None = None, *,
                 runs_root: str | Path | None = None, figures_dir: str | Path | None = None,
                 timeout_s: float | None = None, progress: bool = False, stream=None) -> Outcome:
    """Execute a notebook with papermill; never raises for a failure inside the notebook.

    The executed notebook is written to `output` whether it succeeds or not
    (papermill keeps the cells run so far and marks the failing one). The runs
    the notebook stored are the complete run directories that appeared in the
    store meanwhile; RXLAB_RUNS and RXLAB_FIGURES are passed to the kernel.
    `progress`: papermill's bar of cells. `stream`: a text file (sys.stderr)
    that the notebook's stderr is copied to as its cells write it, with
    RXLAB_PROGRESS=text, so a study's bar shows there while a long cell runs.
    """
    import papermill  # noqa: PLC0415 - papermill loads jupyter's kernel machinery: about a second


    path = resolve_notebook(notebook)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    root = Path(runs_root) if runs_root is not None else store.default_root()
    before = _complete_runs(root)
    figs = Path(figures_dir) if figures_dir is not None else None
    fig_before = {p: p.stat().st_mtime for p in figs.glob("*.json")} if figs and figs.is_dir() else {}
    params = dict(parameters or {})
    t0 = time.monotonic()
    status, error = "ok", ""
    text_bars = {PROGRESS_ENV: "text"} if stream is not None else {}
    with _environ(RXLAB_RUNS=str(root), RXLAB_FIGURES=str(figs) if figs is not None else None, **text_bars):
        try:
            papermill.execute_notebook(str(path), str(output), parameters=params, kernel_name="python3",
                                       cwd=str(path.parent), progress_bar=progress, log_output=False,
                                       stderr_file=stream, execution_timeout=timeout_s)
        except papermill.PapermillExecutionError as e:
            status, error = "failed", f"{e.ename}: {str(e.evalue).strip().splitlines()[0] if e.evalue else ''}"
        except Exception as e:  # the kernel died, a timeout, a bad notebook file
            status, error = "failed", f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
    seconds = time.monotonic() - t0
    runs = sorted(str(root / r) for r in _complete_runs(root) - before)
    made = sorted(p.stem for p in figs.glob("*.json") if fig_before.get(p) != p.stat().st_mtime) if figs else []
    return Outcome(path.stem, params, status, seconds, str(output), runs, error, made)
