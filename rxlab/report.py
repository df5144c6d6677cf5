"""The notebooks as a set: what each one draws, `rxlab report` and the figures index.

Every notebook in notebooks/ declares in its metadata, under "rxlab", the
figures it saves and the seed document it reproduces:

    "rxlab": {"figures": ["ioeff_qps", ...], "seed": "blog-2025-10-23-....txt"}

`notebook_index()` reads that; tests, `rxlab report` and the figures index
use it, so adding a notebook is one file.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS_DIR = REPO / "notebooks"


@dataclass(frozen=True)
class NotebookInfo:
    name: str            # file stem, e.g. 10_io_efficiency
    path: Path
    figures: tuple       # figure stems it saves
    seed: str | None     # the seed document's file name in ../shared/seeds/


def notebook_index(directory: str | Path = NOTEBOOKS_DIR) -> list[NotebookInfo]:
    """The notebooks in run order (their file names sort in that order)."""
    out = []
    for p in sorted(Path(directory).glob("[0-9][0-9]_*.ipynb")):
        meta = json.loads(p.read_text()).get("metadata", {}).get("rxlab", {})
        out.append(NotebookInfo(p.stem, p, tuple(meta.get("figures", ())), meta.get("seed")))
    return out


def resolve_notebook(name: str | Path, directory: str | Path = NOTEBOOKS_DIR) -> Path:
    """A notebook by path, file stem ("10_io_efficiency") or number ("10")."""
    p = Path(name)
    if p.suffix == ".ipynb" and p.is_file():
        return p.resolve()
    known = notebook_index(directory)
    for nb in known:
        if str(name) in (nb.name, nb.path.name, nb.name.split("_", 1)[0]):
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
                 timeout_s: float | None = None, progress: bool = False) -> Outcome:
    """Execute a notebook with papermill; never raises for a failure inside the notebook.

    The executed notebook is written to `output` whether it succeeds or not
    (papermill keeps the cells run so far and marks the failing one). The runs
    the notebook stored are the complete run directories that appeared in the
    store meanwhile; RXLAB_RUNS and RXLAB_FIGURES are passed to the kernel.
    """
    import papermill

    from . import store

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
    with _environ(RXLAB_RUNS=str(root), RXLAB_FIGURES=str(figs) if figs is not None else None):
        try:
            papermill.execute_notebook(str(path), str(output), parameters=params, kernel_name="python3",
                                       cwd=str(path.parent), progress_bar=progress, log_output=False,
                                       execution_timeout=timeout_s)
        except papermill.PapermillExecutionError as e:
            status, error = "failed", f"{e.ename}: {str(e.evalue).strip().splitlines()[0] if e.evalue else ''}"
        except Exception as e:  # the kernel died, a timeout, a bad notebook file
            status, error = "failed", f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"
    seconds = time.monotonic() - t0
    runs = sorted(str(root / r) for r in _complete_runs(root) - before)
    made = sorted(p.stem for p in figs.glob("*.json") if fig_before.get(p) != p.stat().st_mtime) if figs else []
    return Outcome(path.stem, params, status, seconds, str(output), runs, error, made)


# --------------------------------------------------------------------------- the report

SCALES = ("smoke", "small", "full")


def report(scale: str = "small", only: Iterable[str] | None = None, *, figures_dir: str | Path | None = None,
           out_dir: str | Path | None = None, runs_root: str | Path | None = None,
           progress: bool = True) -> list[Outcome]:
    """Rerun every notebook at `scale` (or those named in `only`), regenerate figures/ and its index.

    Notebooks run in their numbered order, so a later one finds the runs of
    an earlier one in the store (notebook 20 reads the study of 10). A failing
    notebook is recorded in the index; the others still run.
    """
    from tqdm import tqdm

    from . import figures

    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: allowed are {', '.join(SCALES)}")
    index = notebook_index()
    if only:
        chosen = {resolve_notebook(n).stem for n in only}
        index = [nb for nb in index if nb.name in chosen]
    figs = Path(figures_dir) if figures_dir is not None else figures.figures_dir()
    out = Path(out_dir) if out_dir is not None else NOTEBOOKS_DIR / "out"
    outcomes = []
    bar = tqdm(index, desc=f"report ({scale})", unit="notebook", disable=not progress)
    for nb in bar:
        bar.set_postfix_str(nb.name)
        outcomes.append(run_notebook(nb.path, out / f"{nb.name}.ipynb", {"scale": scale}, runs_root=runs_root,
                                     figures_dir=figs, progress=progress))  # cells: papermill's own bar
    write_index(figs, outcomes, scale)
    return outcomes


def _sidecar(figs: Path, stem: str) -> dict | None:
    p = figs / f"{stem}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _runs_scale(runs: list) -> str:
    """The scale the figure's runs were made at (from their specs), '' when they do not say."""
    scales = set()
    for r in runs[:50]:
        try:
            spec = json.loads((Path(r) / "run.json").read_text()).get("spec", {})
        except (OSError, ValueError):
            continue
        if spec.get("scale"):
            scales.add(str(spec["scale"]))
    return ", ".join(sorted(scales))


def write_index(figs: str | Path, outcomes: Iterable[Outcome] = (), scale: str | None = None) -> Path:
    """figures/index.md: every notebook's figures with what their sidecars say, and the last report's outcome."""
    figs = Path(figs)
    figs.mkdir(parents=True, exist_ok=True)
    by_name = {o.notebook: o for o in outcomes}
    lines = ["# Figures", "",
             "Regenerated by `rxlab report`" + (f" at scale `{scale}`" if scale else "") + ". Each figure is "
             "written as pdf, svg and png, with a JSON sidecar naming the runs, the published sources and the "
             "environment behind it.", ""]
    for nb in notebook_index():
        if not nb.figures:
            continue
        lines += [f"## {nb.name}", ""]
        if nb.seed:
            lines += [f"Seed: `{nb.seed}`", ""]
        o = by_name.get(nb.name)
        if o is not None:
            state = "ok" if o.status == "ok" else f"**failed**: {o.error}"
            lines += [f"Last run: {state} ({o.seconds:.0f} s, {len(o.runs)} runs stored), "
                      f"executed notebook `{o.output}`", ""]
        lines += ["| figure | files | created (UTC) | runs | scale | rxlab commit | published sources |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for stem in nb.figures:
            side = _sidecar(figs, stem)
            if side is None:
                lines.append(f"| {stem} | missing | | | | | |")
                continue
            files = " ".join(f"[{e}]({stem}.{e})" for e in ("pdf", "svg", "png", "json") if (figs / f"{stem}.{e}").is_file())
            pubs = "; ".join(s.split(":", 1)[-1].strip() for s in side.get("published_sources", []))
            lines.append(f"| {stem} | {files} | {side.get('created_utc', '')} | {len(side.get('runs', []))} | "
                         f"{_runs_scale(side.get('runs', []))} | {(side.get('rxlab_commit') or '')[:10]} | {pubs} |")
        lines.append("")
    p = figs / "index.md"
    p.write_text("\n".join(lines))
    return p
