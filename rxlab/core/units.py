"""Sizes as fio writes them ('8k', '2g'), read in one place so every tool accepts the same."""
from __future__ import annotations

__all__ = ["parse_size"]


def parse_size(v) -> int:
    """'8k', '2g', '512', 4096 -> bytes (fio's binary suffixes)."""
    if isinstance(v, int):
        return v
    s = str(v).strip().lower().removesuffix("b").removesuffix("i")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    try:
        if s and s[-1] in mult:
            return int(float(s[:-1]) * mult[s[-1]])
        return int(s)
    except ValueError:
        raise ValueError(f"size {v!r}: expected a number with an optional k, m, g or t suffix") from None
