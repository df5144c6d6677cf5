"""The in-process paired A/B benchmark (`rxlab selfcheck paired`): back-to-back pairs on the backends
benchmark's DB, the order flipped every pair, ratios per pair."""
from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

from rxlab.bench import driver
from rxlab.bench.selfcheck.backends import (
    COMMON,
    KEY_SIZE,
    VALUE_SIZE,
)
from rxlab.core import metrics
from rxlab.core.stats import median_interval

PAIRS = {
    # (label, step, extra step options, A backend, B backend): A/B compared.
    "readrandom posix vs default": ("readrandom", {}, "posix", "default"),
    "readrandom posix counters on vs off": ("readrandom", {}, "posix", "posix?counters=0"),
    "readrandom io_uring counters on vs off": ("readrandom", {}, "io_uring", "io_uring?counters=0"),
    "multiread io_uring vs default io_uring": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "io_uring", "default?io_uring=1"),
    "multiread libaio vs default io_uring": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "libaio", "default?io_uring=1"),
    "multiread io_uring defer_taskrun vs plain": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "io_uring?defer_taskrun=1",
        "io_uring"),
    "multiread io_uring defer_taskrun vs default io_uring": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "io_uring?defer_taskrun=1",
        "default?io_uring=1"),
    "readrandom io_uring defer_taskrun vs plain": ("readrandom", {}, "io_uring?defer_taskrun=1", "io_uring"),
}


def select_pairs(only: str | None) -> dict:
    """The PAIRS whose label contains one of the comma-separated words of `only`."""
    if not only:
        return dict(PAIRS)
    words = [w.strip() for w in only.split(",") if w.strip()]
    chosen = {k: v for k, v in PAIRS.items() if any(w in k for w in words)}
    if not chosen:
        raise ValueError(f"bench-paired --only {only!r} matches no pair; pairs are: {', '.join(PAIRS)}")
    return chosen


def paired(root: Path, pairs: dict | None = None, reps: int = 8, duration: float = 4,
           quiet: bool = False) -> pd.DataFrame:
    """Back-to-back A/B pairs in one process, the order flipped every pair.

    On a shared host throughput drifts by 10-20% over minutes; a ratio taken
    from two runs seconds apart cancels most of it, and the median of the
    ratios is robust to the odd disturbed pair.
    """

    db = root / "db-aligned"
    if not (db / "CURRENT").is_file():
        raise FileNotFoundError(f"no benchmark DB at {db}: run `rxlab bench-backends` first")
    num = int((db / "rxlab-loaded").read_text().split()[0].split("=")[1])
    rows = []
    for label, (step, extra, a, b) in (pairs or PAIRS).items():
        for rep in range(reps):
            for backend in ((a, b) if rep % 2 == 0 else (b, a)):
                spec = driver.RunSpec(db=str(db), backend=backend, num=num, key_size=KEY_SIZE,
                                      value_size=VALUE_SIZE, duration=duration, block_size=8192,
                                      block_align=True, cache_size=8 << 20, bloom_bits=10,
                                      use_existing_db=True, statistics=False, steps=[step],
                                      target_file_size_base=COMMON["target_file_size_base"],
                                      max_bytes_for_level_base=COMMON["max_bytes_for_level_base"])
                sess = driver.Session(spec)
                try:
                    r = sess.run_step({"name": step, "label": step, **extra})
                finally:
                    sess.close()
                sc = metrics.seed_columns([r]).iloc[0]
                rows.append({"pair": label, "rep": rep, "backend": backend, "side": "A" if backend == a else "B",
                             "qps": sc["qps"], "cpuPer": sc["cpuPer"]})
                if not quiet:
                    print(f"  {label:40} rep {rep} {backend:22} {sc['qps']:9.0f} ops/s {sc['cpuPer']:6.1f} us CPU/op",
                          file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def merge_paired_csv(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """Write `new` into the pairs file at `path`: its pairs replace theirs, other pairs are kept
    (a run of some pairs with --only does not erase the others' last measurement)."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > 0:  # a 0-byte file (an interrupted write) holds no pairs
        old = pd.read_csv(path)
        if "pair" in old.columns:
            new = pd.concat([old[~old["pair"].isin(set(new["pair"]))], new], ignore_index=True)
    # written aside and renamed: an interrupted write leaves the previous file whole
    tmp = path.with_name(path.name + ".tmp")
    new.to_csv(tmp, index=False)
    tmp.replace(path)
    return new


def summarize_paired(df: pd.DataFrame) -> str:
    out = ["paired A/B: median of per-pair ratios A/B [95% bootstrap interval of the median] (min..max)"]
    for label, g in df.groupby("pair", sort=False):
        w = g.pivot(index="rep", columns="side", values=["qps", "cpuPer"])
        q = w["qps"]["A"] / w["qps"]["B"]
        c = w["cpuPer"]["A"] / w["cpuPer"]["B"]
        qi, ci = median_interval(q), median_interval(c)
        out.append(f"  {label:40} QPS {q.median():.3f} [{qi[0]:.3f}..{qi[1]:.3f}] "
                   f"({q.min():.3f}..{q.max():.3f})  CPU/op {c.median():.3f} [{ci[0]:.3f}..{ci[1]:.3f}] "
                   f"({c.min():.3f}..{c.max():.3f})  n={len(q)}")
    return "\n".join(out)
