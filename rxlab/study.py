"""Small pieces every study module shares: study ids, rotated run orders, medians over repetitions."""
from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Sequence

import pandas as pd


def new_study_id() -> str:
    """UTC time (sortable) and 4 random hex digits: 20261122T210817cf97."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)


def rotate(seq: Sequence, k: int) -> list:
    """`seq` started at its k-th item (mod its length): repetition k's order, so that drift of the
    machine hits every configuration alike."""
    seq = list(seq)
    k %= max(len(seq), 1)
    return seq[k:] + seq[:k]


def medians(rows: pd.DataFrame, by: list[str], cols: Iterable[str], sort: bool = True) -> pd.DataFrame:
    """Median of each numeric column per group, with n (the repetitions behind it)."""
    cols = [c for c in cols if c in rows.columns]
    num = rows[by + cols].copy()
    for c in cols:
        num[c] = pd.to_numeric(num[c], errors="coerce").astype(float)
    g = num.groupby(by, sort=sort, dropna=False)
    out = g[cols].median()
    out["n"] = g.size()
    return out.reset_index()
