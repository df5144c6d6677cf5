"""Every figure goes through `save()`: one style, one colour per backend, its data beside it.

The style is set in one place (`paper_style()`): fonts and sizes for a
two-column paper (a column is 3.3 in wide), or larger ones for slides.
Backends keep their colour in every figure, so posix is always the same blue.

`save(fig, name, table=...)` writes figures/<name>.pdf, .svg and .png, the
tidy table the figure was drawn from (<name>.csv) and a JSON sidecar that
names what is behind it in portable terms: the study and its id, the run ids
(relative to the results store, never a machine path), the RocksDB builds,
the scale, the published sources and the table's SHA-256; under "measured",
what measured it (rxlab's commit and whether the tree was dirty, the
machine, when), kept as it is by every redraw; under "drawn", what drew this
file (commit, when, layout). Because a figure is drawn from its table alone,
`layout(width=..., aspect=..., style=...)` around a drawing function redraws
it at another size or style without rerunning anything; a figure that no
study draws (saved from the explorer or from Python) is redrawn from the
small plot spec it was saved with (`plot=`, `rxlab.runs.figures`).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import matplotlib

# A headless process draws with Agg; a notebook or a desktop keeps the backend it chose.
if os.environ.get("MPLBACKEND") is None and not os.environ.get("DISPLAY"):
    matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from rxlab.core import engines, sysinfo
from rxlab.core.paths import REPO

__all__ = ["BACKEND_COLORS", "COLUMN_WIDTH_IN", "FORMATS", "PAGE_WIDTH_IN", "STYLES", "WIDTHS",
           "backend_color", "figure", "figures_dir", "layout", "measured", "paper_style", "read_sidecar",
           "save", "table_hash"]

COLUMN_WIDTH_IN = 3.3
PAGE_WIDTH_IN = 7.0
WIDTHS = {"column": COLUMN_WIDTH_IN, "page": PAGE_WIDTH_IN}
STYLES = ("paper", "slides")
FORMATS = ("pdf", "svg", "png")

# One colour per backend, the same in every figure (colour-blind safe palette).
BACKEND_COLORS = {
    "default": "#4d4d4d",
    "default?io_uring=1": "#999999",
    "posix": "#0072b2",
    "libaio": "#e69f00",
    "io_uring": "#009e73",
    "io_uring+reg+fixed": "#56b4e9",
    "io_uring?registered_files=1&fixed_buffers=1": "#56b4e9",
    "io_uring?sqpoll=1": "#cc79a7",
    "fio": "#d55e00",
    "published": "#000000",
}
# Other series (tests, settings) cycle through these after the backends.
CYCLE = ["#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#4d4d4d"]

# What `layout()` sets for the figures drawn inside it (a redraw at another size or style).
_LAYOUT: dict = {"width": None, "aspect": None, "style": "paper"}


def backend_color(name: str) -> str:
    """The colour of a backend; URIs reduce to their engine if not listed."""
    if name in BACKEND_COLORS:
        return BACKEND_COLORS[name]
    try:
        base = engines.engine(name)
    except ValueError:
        base = str(name)
    return BACKEND_COLORS.get(base, CYCLE[sum(map(ord, base)) % len(CYCLE)])


def paper_style(style: str | None = None) -> None:
    """Apply the one style (idempotent): `paper` (the default) or `slides` (larger text and lines)."""
    import seaborn as sns  # noqa: PLC0415 - seaborn takes a second to import; only drawing needs it

    style = style or _LAYOUT["style"]
    scale = 1.0 if style == "paper" else 1.5
    sns.set_theme(context="paper", style="whitegrid", palette=CYCLE, font_scale=0.9 * scale)
    plt.rcParams.update({
        "figure.figsize": (COLUMN_WIDTH_IN, COLUMN_WIDTH_IN * 0.68),
        "figure.dpi": 150,
        "savefig.dpi": 300,
        "savefig.bbox": "tight",
        "savefig.pad_inches": 0.02,
        "font.size": 8 * scale,
        "axes.titlesize": 8 * scale,
        "axes.labelsize": 8 * scale,
        "legend.fontsize": 7 * scale,
        "legend.frameon": False,
        "xtick.labelsize": 7 * scale,
        "ytick.labelsize": 7 * scale,
        "lines.linewidth": 1.2 * scale,
        "lines.markersize": 4 * scale,
        "pdf.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers
        "ps.fonttype": 42,
        "svg.fonttype": "none",
        "svg.hashsalt": "rxlab",  # fixed ids in the SVG: the same drawing gives the same file
    })


@contextlib.contextmanager
def layout(width: str | None = None, aspect: float | None = None, style: str | None = None):
    """Draw the figures inside at this width ("column" or "page"), height/width ratio and style,
    whatever their drawing function asks for."""
    if width is not None and width not in WIDTHS:
        raise ValueError(f"width={width!r}: allowed are {', '.join(WIDTHS)}")
    if aspect is not None and not (0.1 <= float(aspect) <= 3):
        raise ValueError(f"aspect={aspect!r}: expected a height/width ratio in [0.1, 3]")
    if style is not None and style not in STYLES:
        raise ValueError(f"style={style!r}: allowed are {', '.join(STYLES)}")
    old = dict(_LAYOUT)
    _LAYOUT.update({k: v for k, v in (("width", width), ("aspect", aspect), ("style", style))
                    if v is not None})
    try:
        yield
    finally:
        _LAYOUT.clear()
        _LAYOUT.update(old)


# Slides are seen from afar: a larger canvas, and text larger still in proportion (1.5 against 1.4).
SLIDES_CANVAS = 1.4


def figure(width: str = "column", aspect: float = 0.68, *, pyplot: bool = True, **kw):
    """A new figure sized for a column ("column") or the page ("page"); `layout()` overrides both.

    `pyplot=False`: a figure outside pyplot, on its own Agg canvas, for a widget's callback to draw (in
    JupyterLab a pyplot figure drawn in a button's callback came out as a blank PNG; see
    rxlab.studies.quickstart.tryit). Its keywords are Figure's (layout=...) and Figure.subplots's."""
    paper_style()
    w = WIDTHS[_LAYOUT["width"] or width] * (SLIDES_CANVAS if _LAYOUT["style"] == "slides" else 1.0)
    size = (w, w * (_LAYOUT["aspect"] or aspect))
    if pyplot:
        return plt.subplots(figsize=size, **kw)
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - only for this case
    from matplotlib.figure import Figure  # noqa: PLC0415 - only for this case

    fig = Figure(figsize=size, layout=kw.pop("layout", None))
    FigureCanvasAgg(fig)
    return fig, fig.subplots(**kw)


def figures_dir() -> Path:
    return Path(os.environ.get("RXLAB_FIGURES", REPO / "figures"))


def table_hash(table: pd.DataFrame | str | os.PathLike) -> str:
    """SHA-256 of a table's CSV text: of a saved file's bytes, or of a DataFrame as `save` writes it."""
    if isinstance(table, pd.DataFrame):
        return hashlib.sha256(table.to_csv(index=False).encode()).hexdigest()
    return hashlib.sha256(Path(table).read_bytes()).hexdigest()


def _portable_environment() -> dict:
    """The machine in words a reader can use (no host name, no path): kernel, CPU, memory, disk."""
    fp = sysinfo.fingerprint()
    return {k: fp.get(k) for k in ("kernel", "machine", "os", "cpu_model", "cores", "memory_kb", "python",
                                   "rxlab_version", "fio")}


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def measured(side: Mapping) -> dict:
    """What measured a saved figure (its sidecar's "measured": utc, rxlab_commit, git_dirty, environment);
    from the top-level fields of a sidecar written before the two were told apart."""
    if side.get("measured"):
        return dict(side["measured"])
    return {"utc": side.get("created_utc"), "rxlab_commit": side.get("rxlab_commit"),
            "git_dirty": side.get("git_dirty"), "environment": side.get("environment") or {}}


def save(fig, name: str, *, table: pd.DataFrame | None = None, draw_args: Mapping | None = None,
         study: str | None = None, study_id: str | None = None, runs: Iterable = (),
         builds: Iterable[str] = (), scale: str | None = None, published: Iterable[str] = (), notes: str = "",
         directory: str | os.PathLike | None = None, formats: Iterable[str] = FORMATS,
         close: bool = True, table_file: str | os.PathLike | None = None, plot: Mapping | None = None,
         measured_by: Mapping | None = None, redrawn_from: str | None = None) -> dict[str, Path]:
    """Write <name>.{pdf,svg,png}, <name>.csv (the table drawn) and <name>.json; returns the paths.

    `runs` are run ids (a path is reduced to its last part: the id in its store). A redraw passes
    the saved CSV as `table_file` instead of `table`: it is kept byte for byte (copied when the
    figure goes elsewhere), so its hash stays the one the study recorded; and the original's
    `measured(side)` as `measured_by`, kept as it is (what measured it), while "drawn" says what
    drew this file (`redrawn_from`: the figure it is a redraw of, under another name). `plot`: for a
    figure no study draws, how to draw it again from its table, e.g.
    {"kind": "bar", "x": "backend", "y": "qps"} (kinds: rxlab.runs.figures.PLOT_KINDS).
    """
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"figure name {name!r}: use a plain file stem such as 'ioeff_qps'")
    bad = [f for f in formats if f not in FORMATS]
    if bad or not list(formats):
        raise ValueError(f"formats={list(formats)!r}: allowed are {', '.join(FORMATS)}")
    out = Path(directory) if directory is not None else figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext in formats:
        p = out / f"{name}.{ext}"
        # no creation date inside the files: a redraw of the same data gives the same bytes
        meta = {"Creator": "rxlab", "CreationDate": None} if ext == "pdf" else \
            {"Creator": "rxlab", "Date": None} if ext == "svg" else None
        fig.savefig(p, metadata=meta)
        paths[ext] = p
    git = sysinfo.git_info()
    drawn = {"utc": _now(), "rxlab_commit": git.get("git_commit"), "git_dirty": git.get("git_dirty"),
             "layout": {k: v for k, v in _LAYOUT.items() if v is not None}}
    side = {
        "figure": name,
        **({"redrawn_from": redrawn_from} if redrawn_from else {}),
        "study": study,
        "study_id": study_id,
        "scale": scale,
        "runs": [Path(str(r)).name for r in runs],
        "rocksdb_builds": sorted(set(builds)),
        "published_sources": list(published),
        "notes": notes,
        "draw_args": dict(draw_args or {}),
        **({"plot": dict(plot)} if plot else {}),
        # what measured it: this process, unless a redraw hands on the original's
        "measured": dict(measured_by) if measured_by else {
            "utc": drawn["utc"], "rxlab_commit": drawn["rxlab_commit"], "git_dirty": drawn["git_dirty"],
            "environment": _portable_environment()},
        "drawn": drawn,
    }
    if table is not None or table_file is not None:
        t = out / f"{name}.csv"
        if table_file is None:
            table.to_csv(t, index=False)
        elif Path(table_file).resolve() != t.resolve():
            shutil.copyfile(table_file, t)
        head = pd.read_csv(t, nrows=0).columns if table is None else table.columns
        if table is not None:
            rows = len(table)
        else:
            with t.open() as fh:
                rows = sum(1 for _ in fh) - 1
        side["table"] = {"file": t.name, "sha256": table_hash(t), "rows": rows,
                         "columns": [str(c) for c in head]}
        paths["csv"] = t
    p = out / f"{name}.json"
    p.write_text(json.dumps(side, indent=1, default=str) + "\n")
    paths["json"] = p
    if close:
        plt.close(fig)
    return paths


def read_sidecar(name: str, directory: str | os.PathLike | None = None) -> dict:
    """A saved figure's sidecar; one line naming the figure when it is missing or unreadable."""
    d = Path(directory) if directory is not None else figures_dir()
    p = d / f"{name}.json"
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        raise ValueError(f"figure {name!r}: no {p.name} in {d}") from None
    except (OSError, ValueError) as e:
        raise ValueError(f"figure {name!r}: {p.name} is unreadable ({type(e).__name__})") from None
