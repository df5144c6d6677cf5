"""Checks shared by every study's parameters: one line that names the bad value and what is allowed.

A study's notebook passes its papermill parameters to `<study>.Params.checked(...)`
in the cell after the parameters cell. The dataclasses differ per study; the
checks (backend names and URIs, lists of distinct integers, sizes, O_DIRECT
directories, unknown names) are these.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from rxlab.core import engines, sysinfo
from rxlab.core.units import parse_size


class ParamError(ValueError):
    """One bad parameter: the one line `name=value: what is allowed`, and the parameter's `name`."""

    def __init__(self, name: str, line: str):
        super().__init__(line)
        self.name = name


class ParamErrors(ValueError):
    """Several bad parameters: `lines`, one per bad value (the message is those lines)."""

    def __init__(self, lines: list[str]):
        super().__init__("\n".join(lines))
        self.lines = list(lines)


def fail(name: str, value, allowed: str):
    """Raise the one-line ParamError (a ValueError) of a bad parameter: `name=value: what is allowed`."""
    raise ParamError(name, f"{name}={value!r}: {allowed}")


def as_list(v) -> list:
    return list(v) if isinstance(v, (list, tuple)) else [v]


def is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def is_bool(v) -> bool:
    return isinstance(v, (bool, np.bool_))


def is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not is_bool(v)


SCALES_OWN = "None (the scale's)"   # what None means for most of a study's sizes and counts


def integer(name: str, value, lo: int, hi: int, *, what: str = "an integer", note: str = "") -> int:
    """An integer lo..hi (a bool is not one): `name=value: expected <what> lo..hi<note>` otherwise."""
    if not (is_int(value) and lo <= value <= hi):
        fail(name, value, f"expected {what} {lo}..{hi}{note}")
    return int(value)


def optional_integer(name: str, value, lo: int, hi: int, *, none: str = SCALES_OWN) -> int | None:
    """None (`none` says what it stands for: the scale's by default) or an integer lo..hi."""
    if value is None:
        return None
    return integer(name, value, lo, hi, what=f"{none} or an integer")


def optional_seconds(name: str, value, lo: float = 0, hi: float = 3600, *, none: str = SCALES_OWN):
    """None (the scale's by default) or seconds: in (0, hi] when lo is 0, else lo..hi."""
    if value is None:
        return None
    if not (is_number(value) and (value > 0 if lo == 0 else value >= lo) and value <= hi):
        span = f"in (0, {hi:g}]" if lo == 0 else f"{lo:g}..{hi:g}"
        fail(name, value, f"expected {none} or seconds {span}")
    return value


def db_size(value, name: str = "db_size"):
    """None (the scale's) or a DB size of at least 1 MiB, as bytes or a size such as '2g' (kept as given)."""
    if value is None:
        return None
    try:
        n = -1 if is_bool(value) else parse_size(value)
    except (ValueError, TypeError):
        n = -1
    if n < 1 << 20:
        fail(name, value, f"expected {SCALES_OWN} or a size of at least 1m, e.g. '2g'")
    return value


def int_list(name: str, value, lo: int, hi: int, what: str = "integers") -> list[int]:
    """A non-empty list of distinct integers lo..hi (a scalar counts as a list of one)."""
    v = as_list(value)
    if not v or not all(is_int(x) and lo <= x <= hi for x in v) or len(set(v)) != len(v):
        fail(name, value, f"expected a non-empty list of distinct {what} {lo}..{hi}")
    return [int(x) for x in v]


def bool_list(name: str, value) -> list[bool]:
    v = as_list(value)
    if not v or not all(is_bool(b) for b in v) or len(set(v)) != len(v):
        fail(name, value, "expected True, False or a list of them, e.g. [True, False]")
    return [bool(b) for b in v]


def choice(name: str, value, allowed) -> str:
    if value not in allowed:
        fail(name, value, f"allowed are {', '.join(map(str, allowed))}")
    return value


def size_bytes(name: str, value, minimum: int = 1) -> int:
    """Bytes from an int or a size such as '512k', '2g'."""
    try:
        n = parse_size(value)
    except (ValueError, TypeError):
        n = -1
    if n < minimum:
        fail(name, value, f"expected a size of at least {minimum} bytes, e.g. 4096, '512k' or '2g'")
    return n


def backend(value, name: str = "backend", allow_delay: bool = False) -> str:
    """A backend: default, default?io_uring=0|1, or an rxlab engine URI that the engines accept."""
    if not isinstance(value, str) or not value.strip():
        fail(name, value, "expected a backend name or URI such as posix, io_uring?registered_files=1 "
                          "or default")
    b = value.strip()
    try:
        parsed = engines.parse(b)
    except ValueError:
        fail(name, value, "expected a backend name or URI such as posix, io_uring?registered_files=1 "
                          "or default")
    if not allow_delay and "delay_us" in parsed.options:
        fail(name, value, "give the delay through the delay_us parameter (fio's baseline gets it too)")
    try:
        engines.check(b)
    except ValueError as e:
        fail(name, value, str(e).splitlines()[0] if str(e) else "not a backend")
    return b


def backend_list(name: str, value, allow_delay: bool = False) -> list[str]:
    v = as_list(value)
    if not v or len(set(v)) != len(v):
        fail(name, value, "expected a non-empty list of distinct backends, e.g. ['posix', 'io_uring']")
    return [backend(b, name, allow_delay) for b in v]


def is_default(backend_uri: str) -> bool:
    return engines.is_default(backend_uri)


def db_dir(value, name: str = "db_dir", need_direct_io: bool = True) -> str | None:
    """None (a temporary directory) or a directory; with O_DIRECT when the study reads that way."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        fail(name, value, "expected None or a directory path")
    p = Path(value)
    if p.exists() and not p.is_dir():
        fail(name, value, "exists and is not a directory")
    why = sysinfo.dir_problem(p)
    if why:
        fail(name, value, f"{why}; choose a directory you can write")
    if need_direct_io:
        if not sysinfo.direct_io_works(p):
            fail(name, value, "its file system does not support O_DIRECT (the study reads with O_DIRECT); "
                              "choose a directory on a disk file system")
    return str(value)


class Checked:
    """Mixin for a parameters dataclass: `checked(**kw)` names every bad value, one line each."""

    @classmethod
    def checked(cls, **kw):
        """The parameters, checked: a ValueError of one line when one value is bad, a ParamErrors
        (one line per bad value, unknown names first) when several are.

        A dataclass's checks stop at the first bad value, so each bad value found is set aside (its
        default takes its place) and the parameters are checked again, until they pass or what fails
        is not a value that was given (a check of a default that stands in for a bad value says
        nothing about what was asked)."""
        names = [f.name for f in dataclasses.fields(cls)]
        lines = [f"unknown parameter {k!r}: allowed are {', '.join(names)}" for k in kw if k not in names]
        given = {k: v for k, v in kw.items() if k in names}
        while True:
            try:
                made = cls(**given)
            except ParamError as e:
                if e.name not in given:
                    if not lines:
                        raise
                    break
                lines.append(str(e))
                del given[e.name]
                continue
            except ValueError:
                if not lines:
                    raise
                break
            if not lines:
                return made
            break
        if len(lines) == 1:
            raise ValueError(lines[0])
        raise ParamErrors(lines)
