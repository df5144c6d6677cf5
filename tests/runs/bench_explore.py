"""How long the run explorer takes with thousands of runs in the store (a benchmark: prints, asserts nothing).

    .venv/bin/python tests/runs/bench_explore.py [--runs 2000] [--store DIR]

The store is made of real rows: four tiny real driver runs (fillseq, flush,
readrandom on default, posix, libaio and io_uring; 5,000 keys) are measured
first, then `--runs` runs are written through the store's own writer
(rxlab.core.store.RunWriter) holding those runs' step rows and histograms,
each with its numbers scaled by a random factor (0.5 to 2) and its labels
varied as real stores vary: the study that made it (its run-name prefix and
a study id), the backend and its options, threads 1 to 8, two RocksDB builds,
three hosts, a start date over 60 days. Without --store the store is a
temporary directory removed at the end; with it, a store that already holds
enough runs is reused (the second invocation measures only the explorer).

Printed: the catalog's first load (cold: every run.json and steps.parquet
read), the load of a next session (the explorer's disk cache), a refresh
that finds nothing new, and per widget change (a filter, a
picker), the explorer's update time (filter, table, seaborn plot, PNG):
median and max over several changes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from helpers_explore import tiny_run

from rxlab.core import store
from rxlab.runs import explore
from rxlab.runs.explore import data as explore_data

BACKENDS = [
    "default",
    "posix",
    "libaio",
    "io_uring",
    "io_uring?registered_files=1&fixed_buffers=1",
    "posix?delay_us=100",
    "io_uring?sqpoll=1",
    "libaio?buffer_align=4096",
]
STUDIES = [
    "ioeff-{sid}-r0-t{t}",
    "lab-{sid}-r0-local-fillseq-b1",
    "start-{sid}-readrandom",
    "asyncio-{sid}-mget",
    "model-{sid}-d100",
    "bench",
]
HOSTS = ["vm", "lab-a", "lab-b"]
BUILDS = [{"key": "9.10.0-gcc12", "version": "9.10.0"}, {"key": "9.11.2-clang16", "version": "9.11.2"}]
SCALED = (
    "ops",
    "calls",
    "found",
    "bytes",
    "wall_s",
    "cpu_user_s",
    "cpu_sys_s",
    "lat_mean_us",
    "disk_reads",
    "disk_read_sectors",
    "disk_read_ticks_ms",
    "p50_us",
    "p75_us",
    "p90_us",
    "p95_us",
    "p99_us",
    "p99.9_us",
    "p99.99_us",
    "max_us",
)


def templates(work: Path) -> list[store.Run]:
    """Four real tiny runs (one per engine and default) in a scratch store: the rows every run copies."""
    root = work / "templates"
    out = []
    for b in ("default", "posix", "libaio", "io_uring"):
        out.append(store.load_run(tiny_run(work, root, f"template-{b}", b, reads=2000)))
        shutil.rmtree(work / f"db-template-{b}", ignore_errors=True)
    return out


def write_runs(root: Path, n: int, tmpl: list[store.Run], seed: int = 1) -> float:
    """n runs through RunWriter, labels varied and numbers scaled (see the module's docstring)."""
    rng = random.Random(seed)
    start = dt.datetime(2026, 9, 1, tzinfo=dt.timezone.utc)
    t0 = time.monotonic()
    for i in range(n):
        t = tmpl[i % len(tmpl)]
        backend = rng.choice(BACKENDS)
        threads = rng.choice([1, 2, 4, 8])
        when = start + dt.timedelta(minutes=rng.randrange(60 * 24 * 60))
        sid = when.strftime("%Y%m%dT%H%M%S") + f"{rng.randrange(1 << 16):04x}"
        name = rng.choice(STUDIES).format(sid=sid, t=threads)
        spec = {**t.spec, "name": name, "backend": backend, "threads": threads}
        fp = {**t.fingerprint, "host_id": rng.choice(HOSTS), "rocksdb_build": rng.choice(BUILDS)}
        factor = rng.uniform(0.5, 2.0)
        w = store.RunWriter(root, spec, fp)
        with w:
            w._started = when  # a backdated start: the dates a store collects over weeks
            for rec in t.steps.to_dict("records"):
                row = {k: v for k, v in rec.items() if k != "step" and not pd.isna(v)}  # NaN: not recorded
                for k in SCALED:
                    if k in row and isinstance(row[k], (int, float)):
                        row[k] = type(row[k])(row[k] * (factor if k != "wall_s" else 1 / factor))
                row["threads"] = threads if row.get("name") == "readrandom" else row.get("threads", 1)
                row["backend"] = backend
                w.add_step(row)
            for (step, op), h in t.histograms.groupby(["step", "op"]):
                w.add_histogram(int(step), op, zip(h["upper_us"] * factor, h["count"], strict=True))
        if (i + 1) % 500 == 0:
            print(f"  wrote {i + 1} runs ({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    return time.monotonic() - t0


def timed_changes(ex: explore.Explorer, changes) -> list[float]:
    out = []
    for widget, value in changes:
        widget.value = value
        out.append(ex.last_update_s)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--store", help="a store to fill (or reuse when it holds enough runs)")
    a = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="rxlab-bench-explore-", dir="/var/tmp"))
    root = Path(a.store) if a.store else work / "runs"
    try:
        have = len([d for d in root.iterdir() if not d.name.startswith(".")]) if root.is_dir() else 0
        if have < a.runs:
            print(f"measuring 4 template runs, then writing {a.runs - have} runs to {root}", file=sys.stderr)
            secs = write_runs(root, a.runs - have, templates(work), seed=have + 1)
            print(f"wrote {a.runs - have} runs in {secs:.0f} s", file=sys.stderr)
        os.environ["RXLAB_EXPLORE_CACHE"] = str(work / "cache")  # cold: no cache of an earlier session
        t0 = time.monotonic()
        frame = explore.runs_frame(root)
        cold = time.monotonic() - t0
        explore_data._CACHE.clear()  # a new session: the disk cache only
        t0 = time.monotonic()
        frame = explore.runs_frame(root)
        warm = time.monotonic() - t0
        t0 = time.monotonic()
        explore.runs_frame(root, refresh=True)
        refresh = time.monotonic() - t0
        t0 = time.monotonic()
        ex = explore.Explorer(root, figures_dir=work / "figures")
        first = time.monotonic() - t0
        opts = explore.choices(frame)
        f = ex.filters
        changes = [
            (f["backend"], ("posix",)),
            (f["backend"], ("posix", "io_uring")),
            (f["threads"], (1, 2)),
            (f["study"], ("io_efficiency",)),
            (f["study"], ()),
            (f["host"], (opts["host"][0],)),
            (f["benchmark"], ("readrandom",)),
            (f["threads"], ()),
            (f["backend"], ()),
            (f["host"], ()),
            (ex.date_from, opts["date"][5]),
            (ex.date_to, opts["date"][40]),
            (ex.date_from, opts["date"][0]),
            (ex.date_to, opts["date"][-1]),
        ]
        filt = timed_changes(ex, changes)
        pick = timed_changes(
            ex,
            [
                (ex.y, "cpuPer"),
                (ex.x, "backend"),
                (ex.hue, "threads"),
                (ex.y, "p99_us"),
                (ex.x, "threads"),
                (ex.hue, "backend"),
            ],
        )
        t0 = time.perf_counter()
        for _ in range(20):
            explore.filter_runs(frame, backend=["posix"], threads=[1, 2], study=["io_efficiency"])
        data_only = (time.perf_counter() - t0) / 20
        runs, steps = frame["run_id"].nunique(), len(frame)
        print(f"explorer with {runs:,} runs ({steps:,} steps, {frame.shape[1]} columns) in {root}")
        print(f"  catalog, first load (cold):       {cold:6.2f} s")
        print(f"  next session (the disk cache):    {warm:6.2f} s")
        print(f"  refresh, nothing new:             {refresh:6.2f} s")
        print(f"  explorer built and first drawn:   {first:6.2f} s")
        print(
            f"  filter change (filter, table, plot, PNG), {len(filt)} changes: median "
            f"{statistics.median(filt):.2f} s, max {max(filt):.2f} s"
        )
        print(
            f"  picker change (x, y, hue), {len(pick)} changes: median {statistics.median(pick):.2f} s, "
            f"max {max(pick):.2f} s"
        )
        print(f"  filter_runs alone (3 filters):    {data_only * 1000:6.1f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
