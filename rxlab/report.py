"""The notebooks as a set: what each one draws, `rxlab report` and the figures index.

Every notebook in notebooks/ declares in its metadata, under "rxlab", the
figures it saves and the seed document it reproduces:

    "rxlab": {"figures": ["ioeff_qps", ...], "seed": "blog-2025-10-23-....txt"}

`notebook_index()` reads that; tests, `rxlab report` and the figures index
use it, so adding a notebook is one file.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
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
