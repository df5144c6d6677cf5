"""Saved figures: list them, and redraw them from their saved tables alone, at another size or style.

Every figure a study saves has its tidy table beside it (<name>.csv) and a
sidecar (<name>.json) that names the study that draws it. Redrawing reads
the table back, checks it against the hash in the sidecar, and calls the
study's drawing function inside `rxlab.core.figures.layout`, so a paper's
column or page width, another aspect or the slides style costs seconds and
no measurement.
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

__all__ = ["list_figures", "load_table", "redraw"]


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
        why = ("yes" if has_table and p.stem in known
               else "no: no saved table" if not has_table else "no: no study draws it")
        rows.append({"figure": p.stem, "study": side.get("study") or known.get(p.stem, ""),
                     "scale": side.get("scale") or "", "created_utc": side.get("created_utc", ""),
                     "table_rows": table.get("rows"), "runs": len(side.get("runs") or []), "redraw": why})
    return pd.DataFrame(rows, columns=["figure", "study", "scale", "created_utc", "table_rows", "runs", "redraw"])


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


def redraw(names: Iterable[str], directory: str | os.PathLike | None = None, *, width: str | None = None,
           aspect: float | None = None, style: str | None = None, formats: Iterable[str] = FORMATS,
           out: str | os.PathLike | None = None) -> dict[str, dict[str, Path]]:
    """Redraw saved figures from their tables; written to `out` (default: where they are), with
    their sidecars' provenance kept and the new layout recorded."""
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
    d = Path(directory) if directory is not None else figures.figures_dir()
    dest = Path(out) if out is not None else d
    done = {}
    for name in names:
        spec = studies.figure_owner(name).figures[name]
        table, side = load_table(name, d)
        with figures.layout(width=width, aspect=aspect, style=style):
            fig = spec.draw(table, **(side.get("draw_args") or {}))
            done[name] = figures.save(
                fig, name, table_file=d / side["table"]["file"], draw_args=side.get("draw_args"), study=side.get("study"),
                study_id=side.get("study_id"), runs=side.get("runs") or (), builds=side.get("rocksdb_builds") or (),
                scale=side.get("scale"), published=side.get("published_sources") or (), notes=side.get("notes", ""),
                directory=dest, formats=formats)
        plt.close("all")
    return done
