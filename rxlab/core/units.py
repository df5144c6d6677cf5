"""Sizes as fio writes them ('8k', '2g'), read in one place so every tool accepts the same; durations
written one way in every progress line."""
from __future__ import annotations

__all__ = ["duration_words", "parse_size", "size_words"]


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


def size_words(n: float) -> str:
    """Bytes in the largest binary unit they fill, so that a message shows them: '40.0 MiB', '12.0 KiB',
    '1.50 GiB', '300 bytes' (never '0.0 GiB')."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if abs(n) >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.2f} {unit}" if abs(v) < 10 else f"{v:.1f} {unit}"
    return f"{int(n)} bytes"


def duration_words(seconds: float) -> str:
    """45s, 12m05s, 1h05m."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"
