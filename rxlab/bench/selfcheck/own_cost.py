"""What posix's own code costs beside RocksDB's posix file (`rxlab selfcheck backends --own-cost`):
db_bench under perf, CPU per op by the class of the leaf symbol."""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import pandas as pd

from rxlab.bench import references
from rxlab.bench.perf import perf_record, reader_leaf_ns
from rxlab.bench.references import plugin_path
from rxlab.bench.selfcheck.backends import (
    COMMON,
)
from rxlab.core.builds import active_build

# The CPU per op of db_bench at two threads moves by 10-20% between runs seconds apart on these VMs
# (the disk's interrupts and the doorbell's exits are charged to whichever thread is on the CPU),
# so "posix within 3% of default" cannot be read from totals alone. A profile can: posix and
# default run the same RocksDB and the same pread; the only code that differs is the file system
# layer, and its samples can be counted. Leaf-symbol classes, first match wins:
OWN_CLASSES = (
    ("rxlab backend", r"^(rxlab::|\[librxlab_plugin)"),
    ("clock reads (vDSO)", r"(clock_gettime|vdso).*_\[libc\]$"),
    ("RocksDB posix file", r"^rocksdb::(Posix\w+|\(anonymous namespace\)::Posix\w+)::"),
    ("kernel", r"_\[k\]$"),
    ("libc and system libraries", r"_\[libc\]$"),
    ("RocksDB and db_bench", r""),
)
# What only one side runs: the backends' own code. The vDSO clock reads count for posix because
# rxlab times each system call (db_bench's readrandom without --statistics reads no clock per op;
# the default runs show it). Where the kernel's clocksource is the TSC, the counters read the TSC
# instead and this class is empty.
OWN = {"posix": ("rxlab backend", "clock reads (vDSO)"), "default": ("RocksDB posix file",)}


def classify_leaf(frame: str) -> str:
    """The OWN_CLASSES class of one leaf frame (as rxlab.bench.perf.frame_name spells it)."""
    for name, pattern in OWN_CLASSES:
        if re.search(pattern, frame):
            return name
    return OWN_CLASSES[-1][0]


def _profiled_db_bench(flags: dict, fs_uri: str | None, data: Path, *, frequency: int) -> dict:
    """db_bench under perf (driver_bench.perf_record): its result row plus `samples_ns`, the
    reader threads' sampled CPU ns per OWN_CLASSES class of the leaf frame."""

    cmd = []
    if fs_uri:  # LD_PRELOAD right before db_bench: perf itself must not load the plugin
        cmd += ["env", f"LD_PRELOAD={plugin_path()}"]
        flags = {**flags, "fs_uri": fs_uri}
    cmd += [str(active_build() / "bin" / "db_bench"), *references.flag_list(flags)]
    p = perf_record(cmd, data, frequency=frequency, timeout=float(flags["duration"]) * 10 + 120,
                    what=f"db_bench on {fs_uri or 'default'}")
    rows = references.parse_db_bench(p.stdout)
    if not rows:
        raise RuntimeError(f"db_bench printed no result line: {p.stdout.strip()[-400:]}")
    threads = int(flags["threads"])
    leaf, n = reader_leaf_ns(data, threads)
    if n < threads:
        raise RuntimeError(f"found {n} reader thread(s) in the samples of db_bench, expected {threads}")
    classes = {name: 0 for name, _ in OWN_CLASSES}
    for frame, ns in leaf.items():
        classes[classify_leaf(frame)] += ns
    data.unlink(missing_ok=True)
    return {**rows[-1], "samples_ns": classes}


def own_cost(root: Path, *, threads=(1, 2), reps: int = 3, duration: float = 5, frequency: int = 2999,
             quiet: bool = False, out: Path | None = None) -> pd.DataFrame:
    """posix against default through the release db_bench (readrandom on the benchmark DB), each
    under perf: the reader threads' CPU microseconds per op in each OWN_CLASSES class (by leaf
    frame), one row per run and class.
    The two backends alternate, the order flipped every repetition. `out`: a CSV rewritten after
    every run, so a run that fails (or is interrupted) keeps the ones before it."""

    bad = [t for t in threads if int(t) < 1]
    if bad or reps < 1 or duration <= 0 or frequency < 1:
        raise ValueError(f"own_cost threads={list(threads)} reps={reps} duration={duration} "
                         f"frequency={frequency}: threads >= 1, reps >= 1, duration > 0 and frequency >= 1")
    db = root / "db-aligned"
    if not (db / "CURRENT").is_file():
        raise FileNotFoundError(f"no benchmark DB at {db}: run `rxlab bench-backends` first")
    num = int((db / "rxlab-loaded").read_text().split()[0].split("=")[1])
    rows = []
    with tempfile.TemporaryDirectory(prefix="rxlab-own-") as tmp:
        for rep in range(reps):
            for t in threads:
                for backend in (("default", "posix") if rep % 2 == 0 else ("posix", "default")):
                    flags = {**COMMON, "db": str(db), "benchmarks": "readrandom", "use_existing_db": 1,
                             "threads": int(t), "duration": duration, "num": num}
                    flags.pop("histogram")
                    r = _profiled_db_bench(flags, None if backend == "default" else "rxlab://posix",
                                           Path(tmp) / "perf.data", frequency=frequency)
                    ops = r["ops"]
                    for cls, ns in r["samples_ns"].items():
                        rows.append({"rep": rep, "threads": int(t), "backend": backend, "class": cls,
                                     "us_per_op": ns / 1e3 / ops, "qps": r["qps"], "ops": ops})
                    if out is not None:
                        pd.DataFrame(rows).to_csv(out, index=False)
                    if not quiet:
                        total = sum(r["samples_ns"].values()) / 1e3 / ops
                        own = sum(r["samples_ns"][c] for c in OWN[backend]) / 1e3 / ops
                        print(f"  own cost t={t} rep {rep} {backend:8} {r['qps']:8.0f} ops/s, "
                              f"{total:5.1f} us CPU/op sampled, own code {own:5.2f} us/op",
                              file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def summarize_own_cost(df: pd.DataFrame) -> str:
    """Per thread count: medians per class and backend, then posix's own code minus default's, as
    us per op and as a share of default's sampled CPU per op (the target's 3%)."""
    out = ["CPU us per op by class, db_bench readrandom under perf (medians over repetitions):"]
    for t, g in df.groupby("threads"):
        tab = g.pivot_table(index="class", columns="backend", values="us_per_op", aggfunc="median")
        tab = tab.reindex([c for c, _ in OWN_CLASSES])
        totals = g.groupby(["backend", "rep"])["us_per_op"].sum().groupby("backend").median()
        out.append(f"\n  threads={t}")
        out.append("    " + tab.round(2).to_string().replace("\n", "\n    "))
        own = {b: g[(g["backend"] == b) & g["class"].isin(OWN[b])].groupby("rep")["us_per_op"].sum()
               for b in OWN}
        extra = float(own["posix"].median() - own["default"].median())
        share = extra / float(totals["default"]) * 100.0
        verdict = "MET" if share <= 3.0 else "MISSED"  # what posix adds; less is no miss
        out.append(f"    total sampled CPU/op: posix {totals['posix']:.1f}, "
                   f"default {totals['default']:.1f} us")
        out.append(f"    own code per op: posix {own['posix'].median():.2f} us (rxlab backend + its clock "
                   f"reads), default {own['default'].median():.2f} us (RocksDB's posix file)")
        out.append(f"    posix's extra code: {extra:+.2f} us per op = {share:+.2f}% of default's CPU/op "
                   f"(target within 3%) {verdict}")
    return "\n".join(out)
