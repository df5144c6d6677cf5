"""Saved figures: list them, and redraw them from their saved tables alone, at another size or style.

Every figure a study saves has its tidy table beside it (<name>.csv) and a
sidecar (<name>.json) that names the study that draws it. Redrawing reads
the table back, checks it against the hash in the sidecar, and calls the
study's drawing function inside `rxlab.core.figures.layout`, so a paper's
column or page width, another aspect or the slides style costs seconds and
no measurement. A figure no study draws (saved from the explorer or from
Python with `plot=`) is drawn again from that small plot spec (PLOT_KINDS).

A redraw writes beside the original (NAME-page-slides.*, or NAME-redrawn.*)
unless asked to replace it; its sidecar keeps what measured the figure and
says what drew it (rxlab.core.figures.save).
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from rxlab import studies
from rxlab.core import figures
from rxlab.core.figures import FORMATS, STYLES, WIDTHS

__all__ = ["PLOT_KINDS", "draw_plot", "list_figures", "load_table", "redraw", "redrawn_name"]


def _sidecars(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.json") if p.stem != "index" and not p.name.startswith("."))


def list_figures(directory: str | os.PathLike | None = None) -> pd.DataFrame:
    """One row per saved figure: name, study, scale, when, the rows of its table, its runs, and
    whether it can be redrawn (its table is there and its study draws it)."""
    d = Path(directory) if directory is not None else figures.figures_dir()
    known = {f: s.name for s in studies.every() for f in s.figures}
    rows = []
    for p in _sidecars(d) if d.is_dir() else []:
        try:
            side = json.loads(p.read_text())
        except (OSError, ValueError):
            rows.append({"figure": p.stem, "study": "", "scale": "", "created_utc": "", "table_rows": None,
                         "runs": None, "redraw": "no: unreadable sidecar"})
            continue
        table = side.get("table") or {}
        has_table = bool(table) and (d / table.get("file", f"{p.stem}.csv")).is_file()
        source = side.get("redrawn_from") or p.stem
        drawable = source in known or (side.get("plot") or {}).get("kind") in PLOT_KINDS
        why = ("yes" if has_table and drawable
               else "no: no saved table" if not has_table else "no: no study draws it and no plot spec")
        rows.append({"figure": p.stem, "study": side.get("study") or known.get(source, ""),
                     "scale": side.get("scale") or "", "created_utc": figures.measured(side).get("utc") or "",
                     "table_rows": table.get("rows"), "runs": len(side.get("runs") or []), "redraw": why})
    return pd.DataFrame(rows, columns=["figure", "study", "scale", "created_utc", "table_rows", "runs",
                                       "redraw"])


def load_table(name: str, directory: str | os.PathLike | None = None) -> tuple[pd.DataFrame, dict]:
    """A saved figure's table and sidecar; the table must match the hash the sidecar recorded."""
    d = Path(directory) if directory is not None else figures.figures_dir()
    side = figures.read_sidecar(name, d)
    info = side.get("table")
    if not info:
        raise ValueError(f"figure {name!r}: its sidecar names no saved table (made before tables were saved "
                         "beside figures: rerun its study)")
    path = d / info["file"]
    if not path.is_file():
        raise ValueError(f"figure {name!r}: its table {info['file']} is missing in {d}")
    if figures.table_hash(path) != info["sha256"]:
        raise ValueError(f"figure {name!r}: {info['file']} does not match the hash in its sidecar "
                         "(edited since it was saved?)")
    return pd.read_csv(path), side


def _bar(table: pd.DataFrame, x: str, y: str, hue: str | None = None, ylabel: str = "", **_):
    fig, ax = figures.figure()
    if hue:
        wide = table.pivot_table(index=x, columns=hue, values=y, aggfunc="median", sort=False)
        wide.plot.bar(ax=ax, rot=0, color=[figures.backend_color(str(c)) for c in wide.columns])
    else:
        ax.bar(table[x].astype(str), table[y], color=[figures.backend_color(str(v)) for v in table[x]])
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel or y)
    return fig


def _line(table: pd.DataFrame, x: str, y: str, hue: str | None = None, ylabel: str = "", **_):
    fig, ax = figures.figure()
    for key, group in table.groupby(hue, sort=False) if hue else [(None, table)]:
        part = group.sort_values(x)
        ax.plot(part[x], part[y], marker="o", label=None if key is None else str(key),
                color=figures.backend_color(str(key)) if key is not None else None)
    if hue:
        ax.legend(title=hue)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel or y)
    return fig


def _explore(table: pd.DataFrame, x: str, y: str, hue: str | None = None, **_):
    from rxlab.runs.explore import plot  # noqa: PLC0415 - the explorer's widgets stack loads only for its figures

    return plot.draw(table, x, y, hue)


# A plot spec's kind -> its drawing (of a table, with the spec's x, y, hue and ylabel).
PLOT_KINDS = {"bar": _bar, "line": _line, "explore": _explore}


def draw_plot(table: pd.DataFrame, plot: dict):
    """Draw a table from a sidecar's plot spec ({"kind": "bar", "x": ..., "y": ..., "hue": ...})."""
    kind = plot.get("kind")
    if kind not in PLOT_KINDS:
        raise ValueError(f"plot kind {kind!r}: allowed are {', '.join(PLOT_KINDS)}")
    missing = [c for c in (plot.get("x"), plot.get("y"), plot.get("hue")) if c and c not in table.columns]
    if missing:
        raise ValueError(f"plot spec names column {missing[0]!r}, not in the table")
    return PLOT_KINDS[kind](table, **{k: v for k, v in plot.items() if k != "kind"})


def redrawn_name(name: str, width: str | None = None, aspect: float | None = None,
                 style: str | None = None) -> str:
    """The name a redraw beside the original takes: its layout in words (lab_latency-page-slides), or
    NAME-redrawn; the same layout gives the same name, so a second redraw replaces only the first."""
    parts = [p for p in (width, style if style != "paper" else None,
                         f"aspect{aspect:g}" if aspect is not None else None) if p]
    return f"{name}-{'-'.join(parts) if parts else 'redrawn'}"


def _drawing(name: str, d: Path):
    """The table, sidecar and drawing function of a saved figure: its study's, or its plot spec's."""
    try:
        side = figures.read_sidecar(name, d)
    except ValueError:
        side = None
    source = (side or {}).get("redrawn_from") or name
    try:
        spec = studies.figure_owner(source).figures[source]
    except ValueError as e:
        if side is None:
            raise
        plot = side.get("plot")
        if not plot:
            raise ValueError(f"figure {name!r}: no study draws it and its sidecar has no plot spec (save it "
                             "with figures.save(..., plot={'kind': 'bar', 'x': ..., 'y': ...}))") from e
        table, side = load_table(name, d)
        return table, side, lambda t: draw_plot(t, plot)
    table, side = load_table(name, d)
    return table, side, lambda t: spec.draw(t, **(side.get("draw_args") or {}))


def redraw(names: Iterable[str], directory: str | os.PathLike | None = None, *, width: str | None = None,
           aspect: float | None = None, style: str | None = None, formats: Iterable[str] = FORMATS,
           out: str | os.PathLike | None = None, replace: bool = False) -> dict[str, dict[str, Path]]:
    """Redraw saved figures from their tables, with what measured them kept and what drew them
    recorded: into `out` under their own names, over the originals with `replace`, else beside
    them under `redrawn_name` (the originals untouched)."""
    names = list(names)
    if not names:
        raise ValueError("name at least one figure (`rxlab figure list` shows them)")
    if width is not None and width not in WIDTHS:
        raise ValueError(f"--width {width}: allowed are {', '.join(WIDTHS)}")
    if style is not None and style not in STYLES:
        raise ValueError(f"--style {style}: allowed are {', '.join(STYLES)}")
    formats = list(formats)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise ValueError(f"--format {','.join(formats)}: allowed are {', '.join(FORMATS)}")
    if replace and out is not None:
        raise ValueError("--replace writes over the originals in --dir: give it or --out, not both")
    d = Path(directory) if directory is not None else figures.figures_dir()
    dest = Path(out) if out is not None else d
    done = {}
    for name in names:
        table, side, draw = _drawing(name, d)
        source = side.get("redrawn_from") or name
        new = name if (replace or out is not None) else redrawn_name(source, width, aspect, style)
        with figures.layout(width=width, aspect=aspect, style=style):
            fig = draw(table)
            done[name] = figures.save(
                fig, new, table_file=d / side["table"]["file"], draw_args=side.get("draw_args"),
                study=side.get("study"), study_id=side.get("study_id"), runs=side.get("runs") or (),
                builds=side.get("rocksdb_builds") or (), scale=side.get("scale"),
                published=side.get("published_sources") or (), notes=side.get("notes", ""), directory=dest,
                formats=formats, plot=side.get("plot"), measured_by=figures.measured(side),
                redrawn_from=source if new != source else None)
        plt.close("all")
    return done
