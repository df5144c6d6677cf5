"""Every figure goes through `save()`: one paper style, one colour per backend.

The style is set once (`paper_style()`): fonts and sizes for a two-column
paper (a column is 3.3 in wide). Backends keep their colour in every figure,
so posix is always the same blue. `save(fig, name, runs=...)` writes
figures/<name>.pdf, .svg and .png and a JSON sidecar naming the runs, the
published sources and the environment behind the figure.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg") if os.environ.get("MPLBACKEND") is None and not os.environ.get("DISPLAY") else None
import matplotlib.pyplot as plt  # noqa: E402

COLUMN_WIDTH_IN = 3.3
PAGE_WIDTH_IN = 7.0

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


def backend_color(name: str) -> str:
    """The colour of a backend; URIs reduce to their engine if not listed."""
    if name in BACKEND_COLORS:
        return BACKEND_COLORS[name]
    base = str(name).removeprefix("rxlab://").split("?")[0]
    return BACKEND_COLORS.get(base, CYCLE[hash(base) % len(CYCLE)])


def paper_style() -> None:
    """Apply the one paper style (idempotent)."""
    import seaborn as sns

    sns.set_theme(context="paper", style="whitegrid", palette=CYCLE, font_scale=0.9)
    plt.rcParams.update({
        "figure.figsize": (COLUMN_WIDTH_IN, COLUMN_WIDTH_IN * 0.68),
        "figure.dpi": 150,
        "savefig.dpi": 300,
        "savefig.bbox": "tight",
        "savefig.pad_inches": 0.02,
        "font.size": 8,
        "axes.titlesize": 8,
        "axes.labelsize": 8,
        "legend.fontsize": 7,
        "legend.frameon": False,
        "xtick.labelsize": 7,
        "ytick.labelsize": 7,
        "lines.linewidth": 1.2,
        "lines.markersize": 4,
        "pdf.fonttype": 42,  # TrueType in PDFs: editable text, accepted by publishers
        "ps.fonttype": 42,
        "svg.fonttype": "none",
    })


def figure(width: str = "column", aspect: float = 0.68, **kw):
    """A new figure sized for a column ("column") or the page ("page")."""
    paper_style()
    w = COLUMN_WIDTH_IN if width == "column" else PAGE_WIDTH_IN
    return plt.subplots(figsize=(w, w * aspect), **kw)


def figures_dir() -> Path:
    return Path(os.environ.get("RXLAB_FIGURES", Path(__file__).resolve().parent.parent / "figures"))


def save(fig, name: str, runs: Iterable = (), published: Iterable[str] = (), notes: str = "",
         directory: str | os.PathLike | None = None) -> dict[str, Path]:
    """Write figures/<name>.{pdf,svg,png} and <name>.json; returns the paths."""
    from . import sysinfo

    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"figure name {name!r}: use a plain file stem such as 'ioeff_qps'")
    out = Path(directory) if directory is not None else figures_dir()
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for ext in ("pdf", "svg", "png"):
        p = out / f"{name}.{ext}"
        fig.savefig(p, metadata={"Creator": "rxlab"} if ext != "png" else None)
        paths[ext] = p
    side = {
        "figure": name,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": [str(r) for r in runs],
        "published_sources": list(published),
        "notes": notes,
        "environment": sysinfo.fingerprint(),
        "rxlab_commit": sysinfo.git_info().get("git_commit"),
    }
    p = out / f"{name}.json"
    p.write_text(json.dumps(side, indent=1, default=str) + "\n")
    paths["json"] = p
    plt.close(fig)
    return paths
