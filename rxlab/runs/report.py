"""`rxlab report`: every notebook rerun at one scale, figures/ and its index regenerated."""
from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab import studies
from rxlab.core import executions, figures, store
from rxlab.core.resolution import AA, MIN_TURNS, parse_budget
from rxlab.core.units import duration_words
from rxlab.runs.notebooks import (
    NOTEBOOKS_DIR,
    NotebookInfo,
    Outcome,
    notebook_index,
    resolve_notebook,
    run_notebook,
)
from rxlab.runs.report_budget import MARGIN_S, REPORT_BUDGETS, Slot, share, turns_fitting

SCALES = ("smoke", "small", "full")


def report(scale: str = "small", only: Iterable[str] | None = None, *, figures_dir: str | Path | None = None,
           out_dir: str | Path | None = None, runs_root: str | Path | None = None,
           progress: bool = True, budget: str | float | None = "scale") -> list[Outcome]:
    """Rerun every notebook at `scale` (or those named in `only`), regenerate figures/ and its index.

    Notebooks run in their numbered order, so a later one finds the runs of
    an earlier one in the store (notebook 20 reads the study of 10). A failing
    notebook is recorded in the index; the others still run. `budget`: the
    whole report's time ("65m", seconds; None: none; "scale": the scale's,
    REPORT_BUDGETS), split among the notebooks' turns (rxlab.runs.report_budget).
    """
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}: allowed are {', '.join(SCALES)}")
    total = REPORT_BUDGETS.get(scale) if budget == "scale" else parse_budget(budget, "budget")
    index = notebook_index()
    if only:
        chosen = {resolve_notebook(n).stem for n in only}
        index = [nb for nb in index if nb.name in chosen]
    # absolute: the notebooks run with notebooks/ as their directory, the index is written from here
    figs = Path(figures_dir).resolve() if figures_dir is not None else figures.figures_dir()
    out = Path(out_dir) if out_dir is not None else NOTEBOOKS_DIR / "out"
    outcomes = []
    # With progress, a line per notebook and the notebook's own stderr as it comes (its study's bar, which
    # moves during a cell that measures for minutes), rather than papermill's bar of cells, which does not.
    stream = _LineTracker(sys.stderr) if progress else None
    slots = _slots(index, scale, figs) if total is not None else []
    t0 = time.monotonic()
    for i, nb in enumerate(index, 1):
        params: dict = {"scale": scale}
        note = ""
        if total is not None:
            left = total - (time.monotonic() - t0)
            slot = slots[i - 1]
            given = share(slots[i - 1:], left)
            if given is not None:
                params["budget"] = round(given)
            whole = (f" ({_turns_words(turns_fitting(given, slot.turn_s))} of {slot.turn_s:.0f} s)"
                     if given is not None and slot.turn_s else "")
            note = (f" (report: {duration_words(max(left, 0))} of {duration_words(total)} left"
                    + (f"; its turns get {given:.0f} s{whole}" if given is not None else "") + ")")
        if stream is not None:
            stream.line(f"report ({scale}) {i}/{len(index)}: {nb.name}{note}")
        root = Path(runs_root) if runs_root is not None else store.default_root()
        known = {m["id"] for m in executions.read_manifests(root)}
        o = run_notebook(nb.path, out / f"{nb.name}.ipynb", params, runs_root=runs_root,
                         figures_dir=figs, stream=stream)
        o.turns = _turns_decided(root, known, nb.study)
        outcomes.append(o)
        if stream is not None:
            stream.line(f"report ({scale}) {i}/{len(index)}: {nb.name} {o.status} in {o.seconds:.0f} s"
                        + (f": {o.error}" if o.error else ""))
    write_index(figs, outcomes, scale)
    return outcomes


class _LineTracker:
    """A text stream that knows whether its last line is finished (a bar leaves it open with \r), so a
    line of the report's own starts on a line of its own."""

    def __init__(self, f):
        self.f, self.open = f, False

    def write(self, text: str) -> int:
        if text:
            self.f.write(text)
            self.f.flush()
            self.open = not text.endswith("\n")
        return len(text)

    def flush(self) -> None:
        self.f.flush()

    def line(self, text: str) -> None:
        self.write(("\n" if self.open else "") + text + "\n")


def _slots(index: Sequence[NotebookInfo], scale: str, figs: Path) -> list[Slot]:
    """Each notebook's turns' budget at `scale` (None: it has no `budget` parameter) and the time it is
    expected to take (its last run at this scale in the index, else its turns' budget and a margin), with
    its turns' length where the index recorded it. A notebook whose turns stopped at a budget (cut by that
    report, or given by mistake) is expected to take, at its own budget, the turns that fit it."""
    import papermill  # noqa: PLC0415 - jupyter's machinery: only when a report runs

    last = expected_times(figs / "index.md", scale)
    recorded = last_turns(figs / "index.md", scale)
    out = []
    for nb in index:
        turns = None
        if nb.study and "budget" in papermill.inspect_notebook(str(nb.path)):
            turns = getattr(studies.get(nb.study).Params, "budget_at", lambda _: None)(scale)
        expected = last.get(nb.name, (turns or 0.0) + MARGIN_S)
        rec = recorded.get(nb.name)
        if turns and rec and nb.name in last:
            n, turn_s, stopped = rec
            ran = n * turn_s
            will = turns_fitting(turns, turn_s) * turn_s if stopped == "budget" else ran
            out.append(Slot(nb.name, turns, max(expected - ran, 0.0) + will, turn_s, will))
        else:
            out.append(Slot(nb.name, turns, expected))
    return out


def _turns_decided(root: Path, known: set[str], study: str | None) -> dict:
    """What the turns of `study` decided in an execution that was not in the store before (`known`):
    turns, seconds, stopped; empty when it did not run in turns."""
    if not study:
        return {}
    new = [m for m in executions.read_manifests(root) if m["id"] not in known and m.get("study") == study]
    t = (new[-1].get("turns") if new else None) or {}
    return {k: t[k] for k in ("turns", "seconds", "stopped") if k in t} if t.get("turns") else {}


_STOPPED = {"": "resolved", "budget": "stopped by its budget", "max turns": "stopped at its max turns"}


def _turns_words(n: int) -> str:
    return f"{n} turn{'s' if n != 1 else ''}"


def turns_phrase(turns: dict) -> str:
    """The index's words for what a notebook's turns decided: '4 turns of 140 s, stopped by its budget'."""
    if not turns:
        return ""
    n = int(turns["turns"])
    return (f"{_turns_words(n)} of {float(turns['seconds']) / n:.0f} s, "
            f"{_STOPPED.get(str(turns.get('stopped', '')), 'stopped: ' + str(turns.get('stopped')))}")


def _sidecar(figs: Path, stem: str) -> dict | None:
    p = figs / f"{stem}.json"
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return None


def _scale(side: dict) -> str:
    """The scale a figure was made at: its sidecar's (older sidecars named runs by path: '')."""
    return str(side.get("scale") or "")


def _comparison_table(figs: Path, stem: str, study: str | None) -> tuple[pd.DataFrame | None, str]:
    """The comparisons behind a figure: its own table when it draws ratios with intervals (a ratio_plot's
    columns), else its study's `comparisons` table ('study'), else None."""
    for path, whose in ((figs / f"{stem}.csv", ""), (figs / "tables" / f"{study}_comparisons.csv", "study")):
        if not study and whose:
            continue
        try:
            t = pd.read_csv(path)
        except (OSError, ValueError):
            continue
        if {"config", "half_width"} <= set(t.columns):
            return t, whose
    return None, ""


def resolution_cells(figs: str | Path, stem: str, study: str | None) -> tuple[str, str]:
    """What a figure resolves, for the index: the widest half-width of its comparisons (and how many are
    unresolved), and its A/A control's spread (the A/A ratios' range and widest half-width). A figure
    with no comparison behind it says so."""
    t, whose = _comparison_table(Path(figs), stem, study)
    if t is None:
        return "no comparison table", ""
    hw = pd.to_numeric(t["half_width"], errors="coerce")
    is_aa = t["config"].astype(str) == AA
    cmp_hw = hw[~is_aa]
    note = " (study's table)" if whose else ""
    turns = (pd.to_numeric(t["turns"], errors="coerce") if "turns" in t
             else pd.Series(MIN_TURNS, index=t.index))
    if cmp_hw.empty:
        widest = "no comparison" + note
    elif not np.isfinite(cmp_hw).any() or turns[~is_aa].max() < MIN_TURNS:
        # two turns give an interval (t with 1 degree of freedom: 12.7 standard errors), not one to read
        n = turns[~is_aa].max()
        widest = f"no interval to read: {int(n) if np.isfinite(n) else 0} turns ({MIN_TURNS} needed){note}"
    else:
        resolved = t.loc[~is_aa, "resolved"].astype(str).str.lower().isin(["true", "1"]) \
            if "resolved" in t else pd.Series(False, index=cmp_hw.index)
        n_un = int((~resolved).sum())
        few = int((turns[~is_aa] < MIN_TURNS).sum())   # listed as unresolved, their width not read
        widest = (f"±{np.nanmax(cmp_hw[turns[~is_aa] >= MIN_TURNS]):.1f}%"
                  + (f", {n_un} of {len(cmp_hw)} unresolved" if n_un else f", all {len(cmp_hw)} resolved")
                  + (f" ({few} with fewer than {MIN_TURNS} turns)" if few else "") + note)
    aa_ratio = pd.to_numeric(t.loc[is_aa, "ratio"], errors="coerce") if "ratio" in t else pd.Series()
    aa_hw = hw[is_aa]
    if aa_ratio.notna().any() and np.isfinite(aa_hw).any() and turns[is_aa].max() < MIN_TURNS:
        aa = f"{aa_ratio.min():.3f} to {aa_ratio.max():.3f}, {int(turns[is_aa].max())} turns"
    elif aa_ratio.notna().any() and np.isfinite(aa_hw).any():
        lo, hi = aa_ratio.min(), aa_ratio.max()
        span = f"{lo:.3f}" if np.isclose(lo, hi) else f"{lo:.3f} to {hi:.3f}"
        aa = f"{span}, widest ±{np.nanmax(aa_hw):.1f}%"
    else:
        aa = "none"
    return widest, aa


FIGURES_FROM = "The figures below are from the run before it: "


def _last_runs(index: Path) -> dict[str, list[str]]:
    """The `Last run:` line of each notebook's section in an index written before, and the line saying
    which run its figures are from when that one failed."""
    out: dict[str, list[str]] = {}
    if not index.is_file():
        return out
    name = None
    for line in index.read_text().splitlines():
        if line.startswith("## "):
            name = line[3:].strip()
        elif name and (line.startswith("Last run:") or line.startswith(FIGURES_FROM)):
            out.setdefault(name, []).append(line)
    return out


_SECONDS = re.compile(r"^ok \((\d+(?:\.\d+)?) s\b")
_TURNS = re.compile(r", (\d+) turns? of (\d+(?:\.\d+)?) s, "
                    r"(resolved|stopped by its budget|stopped at its max turns)")
_SCALE = re.compile(r"^Regenerated by `rxlab report` at scale `(\w+)`", re.M)


def _figures_runs(index: str | Path, scale: str) -> dict[str, str]:
    """Notebook name -> the index's words for the run its figures are from (its last run, or the run
    before a failed one), from a figures/index.md written by a report at `scale`; empty when there is
    none, or it was written at another scale."""
    index = Path(index)
    if not index.is_file():
        return {}
    m = _SCALE.search(index.read_text())
    if m and m.group(1) != scale:
        return {}
    runs = {name: _figures_run(lines) for name, lines in _last_runs(index).items()}
    return {name: run for name, run in runs.items() if run}


def expected_times(index: str | Path, scale: str) -> dict[str, float]:
    """Notebook name -> seconds of the run its figures are from (`_figures_runs`)."""
    return {name: float(t.group(1)) for name, run in _figures_runs(index, scale).items()
            if (t := _SECONDS.match(run))}


def last_turns(index: str | Path, scale: str) -> dict[str, tuple[int, float, str]]:
    """Notebook name -> (turns, seconds a turn, why they stopped: '' resolved, 'budget', 'max turns') of
    the run its figures are from, where the index at `scale` recorded them."""
    why = {v: k for k, v in _STOPPED.items()}
    return {name: (int(t.group(1)), float(t.group(2)), why[t.group(3)])
            for name, run in _figures_runs(index, scale).items() if (t := _TURNS.search(run))}


def _figures_run(lines: list[str]) -> str | None:
    """Which run a notebook's figures are from, by its lines in the index before: its last run when that
    was ok, else what that index said."""
    for line in lines:
        if line.startswith("Last run: ok"):
            return line.removeprefix("Last run: ")
        if line.startswith(FIGURES_FROM):
            return line.removeprefix(FIGURES_FROM)
    return None


def write_index(figs: str | Path, outcomes: Iterable[Outcome] = (), scale: str | None = None) -> Path:
    """figures/index.md: every study's figures and tables with what their sidecars say (scale, study id,
    runs, builds, commit), and the last report's outcome. Portable: no machine path."""
    figs = Path(figs)
    figs.mkdir(parents=True, exist_ok=True)
    by_name = {o.notebook: o for o in outcomes}
    earlier = _last_runs(figs / "index.md")   # a notebook not rerun (--only) keeps its line
    lines = ["# Figures", "",
             "Regenerated by `rxlab report`" + (f" at scale `{scale}`" if scale else "")
             + " (each figure's own scale is in its row). Each figure is written as pdf, svg and png, with "
             "the tidy table it was drawn from (csv) and a JSON sidecar naming its study, runs (ids in the "
             "results store), RocksDB builds, published sources and rxlab commit. `rxlab figure redraw "
             "NAME` draws one again from its table; `rxlab export DIR` gathers them for a paper.", "",
             "What each figure resolves: `widest ±` is the widest 95% half-width of the comparisons it "
             "draws (ratios to a base, measured in turns; docs/methods/resolution.md), or of its study's "
             "comparisons table where the figure draws absolute values, and how many did not reach their "
             "target; `A/A` is the control's spread: the base against itself, its ratios and widest "
             "half-width. A comparison narrower than the A/A spread is not a difference.", ""]
    for nb in notebook_index():
        if not nb.figures:
            continue
        lines += [f"## {nb.name}", ""]
        if nb.seed:
            lines += [f"Seed: `{nb.seed}`", ""]
        o = by_name.get(nb.name)
        if o is not None:
            state = "ok" if o.status == "ok" else f"**failed**: {o.error}"
            given = (o.parameters or {}).get("budget")
            turns = f", its turns' budget {given} s of the report's" if given is not None else ""
            decided = f", {turns_phrase(o.turns)}" if o.turns else ""
            lines += [f"Last run: {state} ({o.seconds:.0f} s{turns}, {len(o.runs)} runs stored{decided}), "
                      f"executed notebook `notebooks/out/{Path(o.output).name}`", ""]
            # a notebook that failed (a refusal: a build missing) left the figures of the run before
            before = _figures_run(earlier.get(nb.name, [])) if o.status != "ok" else None
            if before:
                lines += [FIGURES_FROM + before, ""]
        elif nb.name in earlier:
            lines += [ln for line in earlier[nb.name] for ln in (line, "")]
        lines += ["| figure | files | scale | widest ± | A/A | study id | runs | RocksDB builds "
                  "| rxlab commit | published sources |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for stem in nb.figures:
            side = _sidecar(figs, stem)
            if side is None:
                lines.append(f"| {stem} | missing | | | | | | | | |")
                continue
            files = " ".join(f"[{e}]({stem}.{e})" for e in ("pdf", "svg", "png", "csv", "json")
                             if (figs / f"{stem}.{e}").is_file())
            pubs = "; ".join(s.split(":", 1)[-1].strip() for s in side.get("published_sources", []))
            m = figures.measured(side)  # the commit that measured it, whatever redrew it since
            commit = (m.get("rxlab_commit") or "")[:10] + (" (dirty)" if m.get("git_dirty") else "")
            widest, aa = resolution_cells(figs, stem, nb.study)
            builds = ", ".join(side.get("rocksdb_builds") or [])
            sid = side.get("study_id") or ""
            lines.append(f"| {stem} | {files} | {_scale(side)} | {widest} | {aa} | {sid} "
                         f"| {len(side.get('runs', []))} | {builds} | {commit} | {pubs} |")
        # by the study's own table names: a prefix would also take io_efficiency_tuning's for io_efficiency
        names = studies.get(nb.study).tables if nb.study else ()
        tables = [t for t in (figs / "tables" / f"{nb.study}_{n}.md" for n in names) if t.is_file()]
        if tables:
            lines += ["", "Tables (LaTeX, Markdown, CSV): " + ", ".join(
                f"[{t.stem}](tables/{t.stem}.tex) ([md](tables/{t.name}), [csv](tables/{t.stem}.csv))"
                for t in tables)]
        lines.append("")
    p = figs / "index.md"
    p.write_text("\n".join(lines))
    return p
