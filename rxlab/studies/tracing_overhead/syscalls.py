"""strace's summary and rxlab's counters, side by side: the syscall counts the tracing study compares.

`strace -c -f` counts every syscall of every thread; rxlab's engines count
the data path's own (`counters=1`, written as JSON at exit). One run gives
both, and `compare_syscalls` lines them up per syscall. The tests of the
plugin (tests/ext/test_strace.py) judge their runs with the same functions.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.studies.tracing_overhead.params import DATA_SYSCALLS, TOLERANCE

__all__ = ["COMPARE_COLUMNS", "agreement", "compare_syscalls", "counted_syscalls", "load_counters",
           "parse_strace_summary", "parse_strace_table"]

_STRACE_COLUMNS = ("pct_time", "seconds", "usecs_per_call", "calls", "errors", "syscall")


def parse_strace_table(text: str) -> pd.DataFrame:
    """`strace -c`'s summary as a frame: pct_time, seconds, usecs_per_call, calls, errors, syscall.

    Rows look like ' 93.35    0.155517           7     20024       3 pwrite64'
    (the errors column may be empty); the header, rules and 'total' row are left out.
    """
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[-1] == "total" or line.lstrip().startswith(("%", "-")):
            continue
        try:
            pct, secs = float(parts[0]), float(parts[1])
            usecs, calls = int(parts[2]), int(parts[3])
        except ValueError:
            continue
        errors = int(parts[4]) if len(parts) == 6 else 0
        rows.append({"pct_time": pct, "seconds": secs, "usecs_per_call": usecs, "calls": calls,
                     "errors": errors, "syscall": parts[-1]})
    return pd.DataFrame(rows, columns=list(_STRACE_COLUMNS))


def parse_strace_summary(text: str) -> dict[str, int]:
    """Calls per syscall from `strace -c`'s summary table (see parse_strace_table)."""
    t = parse_strace_table(text)
    return {str(s): int(c) for s, c in zip(t["syscall"], t["calls"], strict=True)}


def load_counters(path: str | os.PathLike) -> dict:
    """The counters JSON the plugin writes at exit (uri, threads, counters, read_latency_ns)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"the plugin wrote no counters file at {p}")
    data = json.loads(p.read_text())
    missing = [k for k in ("uri", "threads", "counters", "read_latency_ns") if k not in data]
    if missing:
        raise ValueError(f"counters JSON {p} lacks {missing}: has {sorted(data)}")
    return data


def counted_syscalls(counters: Mapping) -> dict[str, int]:
    """{syscall: calls} from a counters dict ('sys.NAME.count' keys)."""
    return {k[4:-6]: int(v) for k, v in counters.items() if k.startswith("sys.") and k.endswith(".count")}


COMPARE_COLUMNS = ("syscall", "strace", "rxlab", "diff", "rel_diff", "data_path", "compared")

# The fewest calls a row needs to be judged by default: below it, the dynamic loader's two preads (which
# strace sees and rxlab, outside the file system, cannot) are more than the 1% the rows are judged at. A
# few preads of buffered files (the OPTIONS file read back) on an engine whose data path is not pread
# are then shown, not judged.
MIN_JUDGED_CALLS = 200


def compare_syscalls(traced: Mapping[str, int], counters: Mapping | None,
                     compared: Sequence[str] | None = None) -> pd.DataFrame:
    """strace's calls against rxlab's per syscall: strace, rxlab, diff, rel_diff, data_path, compared.

    Rows: every syscall rxlab counts (its counters' names) and every data-path
    syscall strace saw. ``rel_diff`` = (rxlab - strace) / strace (NaN when
    strace saw none). ``compared`` marks the rows the agreement is judged on:
    by default the data path's read and write syscalls (DATA_SYSCALLS) that
    rxlab issued at least MIN_JUDGED_CALLS times, so the dynamic loader's
    pread64 (strace sees two per start) beside libaio's few preads of
    buffered files is shown but not judged; pass ``compared`` to name them.
    ``counters`` None (RocksDB's own file system) gives the strace column
    only.
    """
    ours = counted_syscalls(counters) if counters is not None else {}
    names = sorted(set(ours) | {n for n in DATA_SYSCALLS if traced.get(n, 0)},
                   key=lambda n: (DATA_SYSCALLS.index(n) if n in DATA_SYSCALLS else len(DATA_SYSCALLS), n))
    rows = []
    for n in names:
        s = int(traced.get(n, 0))
        o = ours.get(n) if counters is not None else None
        judged = (n in compared if compared is not None
                  else n in DATA_SYSCALLS and (o or 0) >= MIN_JUDGED_CALLS)
        rows.append({"syscall": n, "strace": s, "rxlab": np.nan if o is None else int(o),
                     "diff": np.nan if o is None else int(o) - s,
                     "rel_diff": (o - s) / s if (o is not None and s) else np.nan,
                     "data_path": n in DATA_SYSCALLS, "compared": bool(judged and counters is not None)})
    out = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    return out[(out["strace"] > 0) | (out["rxlab"].fillna(0) > 0)].reset_index(drop=True)


def agreement(table: pd.DataFrame, tolerance: float = TOLERANCE) -> dict:
    """Of the compared rows: how many, the worst |rel_diff|, and whether all are within `tolerance`.

    A compared row where strace saw no call counts as a disagreement (inf).
    """
    c = table[table["compared"]]
    rel = c["rel_diff"].astype(float).abs().where(c["strace"] > 0, np.inf)
    worst = float(rel.max()) if len(rel) else float("nan")
    return {"rows": len(c), "worst_abs_rel_diff": worst, "tolerance": tolerance,
            "within": bool(len(c)) and bool((rel <= tolerance).all())}
