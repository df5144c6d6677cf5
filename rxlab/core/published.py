"""Published numbers from the seed documents, as pandas DataFrames.

The CSVs in data/published/ are hand transcriptions of the seeds (see its
README.md); this module only finds and reads them. It imports nothing else
from rxlab, so notebooks and tests can put published numbers beside fresh
measurements before (or without) the compiled extension being built.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from rxlab.core.paths import REPO

__all__ = ["data_dir", "load", "load_all", "tables"]


def data_dir() -> Path:
    """The directory holding the published CSVs.

    RXLAB_DATA names a data root (the directory with published/ and runs/),
    so a notebook run by papermill on another host can point at a copy of
    the data without a checkout; otherwise the repository's data/ is used.
    """
    root = os.environ.get("RXLAB_DATA")
    base = Path(root) if root else REPO / "data"
    return base / "published"


def tables() -> list[str]:
    """Names accepted by load(), sorted, so listings and errors are stable."""
    d = data_dir()
    if not d.is_dir():
        raise FileNotFoundError(f"no published data directory at {d} (check RXLAB_DATA)")
    return sorted(p.stem for p in d.glob("*.csv"))


def load(name: str) -> pd.DataFrame:
    """One published table; a wrong name fails on one line that lists the good ones."""
    names = tables()
    if name not in names:
        raise ValueError(f"unknown published table {name!r}; choose one of: {', '.join(names)}")
    # Only an empty cell is missing, so literal "NA" or "null" in flags stay text.
    df = pd.read_csv(data_dir() / f"{name}.csv", keep_default_na=False, na_values=[""])
    # A column left empty in every row (e.g. kernel, never stated) would read as
    # float; make it text so filters and concatenation across tables behave.
    for col in df.columns[df.isna().all()]:
        df[col] = df[col].astype("str")
    return df


def load_all() -> dict[str, pd.DataFrame]:
    """Every published table by name, for cross-table checks and notebooks."""
    return {name: load(name) for name in tables()}
