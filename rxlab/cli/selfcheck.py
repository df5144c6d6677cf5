"""Self-checks: `rxlab selfcheck backends|driver|paired`, the project's own validation benchmarks.

They check rxlab against RocksDB's and fio's own tools, not a user's
question, and they cost tens of minutes and gigabytes: so they are kept apart
from the everyday commands. The names of rxlab 0.1 (bench-backends,
bench-driver, bench-paired) still work for one release, with a note.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from rxlab.bench.fio import parse_cpus
from rxlab.bench.irq import busiest_irq_cpu
from rxlab.bench.selfcheck import backends as sb
from rxlab.bench.selfcheck import backends_in_turns as st
from rxlab.bench.selfcheck import driver as sd
from rxlab.bench.selfcheck import own_cost as so
from rxlab.bench.selfcheck import paired as sp
from rxlab.bench.turns import pooled, stamped

TITLE = "self-checks (tens of minutes, GiB of disk)"
DIR_HELP = "where the benchmark DBs live (default: $RXLAB_BENCH_DIR, else data/bench in the clone)"

COSTS = {
    "backends": "about 20 minutes and 3.2 GiB of disk (a 2.2 GiB DB and a 1 GiB one, kept for reuse); "
                "--interleave: 5 to 17 minutes per section",
    "driver": "about 10 minutes (--interleave: 17 min for readrandom, 10 for fio) on the backends DB "
              "(2.2 GiB, loaded first when missing)",
    "paired": "about 1 minute per pair and --reps 8 (needs the backends DB: run selfcheck backends first)",
}
# old name -> new command (rxlab 0.1's names; they go away in rxlab 0.3)
RENAMED = {"bench-backends": "backends", "bench-driver": "driver", "bench-paired": "paired"}


def add_parser(sub) -> None:
    p = sub.add_parser("selfcheck", help="rxlab checked against RocksDB's and fio's own tools: backends, "
                                         "driver, paired (tens of minutes each, GiB of disk)",
                       description="The project's own validation benchmarks, with their cost:\n"
                                   + "\n".join(f"  {k}: {v}" for k, v in COSTS.items()))
    ss = p.add_subparsers(dest="check", required=True, metavar="CHECK")
    _backends(ss.add_parser("backends", help=f"every backend through db_bench, alternated and repeated, "
                                             f"targets judged; {COSTS['backends']}",
                            description=f"The backends benchmark. Cost: {COSTS['backends']}."))
    _driver(ss.add_parser("driver", help=f"rxlab's driver against the release db_bench, rxlab fio against "
                                         f"fio; {COSTS['driver']}",
                          description=f"The driver benchmark. Cost: {COSTS['driver']}."))
    _paired(ss.add_parser("paired", help=f"in-process back-to-back A/B pairs on the backends DB; "
                                         f"{COSTS['paired']}",
                          description=f"Paired A/B ratios. Cost: {COSTS['paired']}."))
    for old, new in RENAMED.items():  # no help: not listed, still parsed
        q = sub.add_parser(old, description=f"Now `rxlab selfcheck {new}`.")
        {"backends": _backends, "driver": _driver, "paired": _paired}[new](q)
        q.set_defaults(renamed=f"rxlab selfcheck {new}")


def _interleave_options(p, what: str) -> None:
    p.add_argument("--interleave", action="store_true",
                   help=f"instead: {what} as processes reading one read-only DB in turns of --slice "
                   "seconds (SIGSTOP/SIGCONT), so host drift cancels; fresh processes every session, "
                   "CPUs default to the one taking the disk's interrupts")
    p.add_argument("--sessions", type=int, default=6, help="with --interleave: fresh sets of processes")
    p.add_argument("--rounds", type=int, default=8, help="with --interleave: turns per process and session")
    p.add_argument("--slice", type=float, default=1.0, help="with --interleave: seconds per turn")
    p.add_argument("--no-control", action="store_true",
                   help="with --interleave: leave out the baseline's second process (the A/A control)")
    p.add_argument("--pool", nargs="+", metavar="CSV",
                   help="with --interleave: run nothing, summarize the slices saved by earlier runs (their "
                   "per-slice CSVs) as one measurement (default: measure)")


def _backends(p) -> None:
    p.add_argument("--dir", help=DIR_HELP)
    p.add_argument("--size-gib", type=float, default=2.2, help="size of the main benchmark DB in GiB")
    p.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    p.add_argument("--repeats", type=int, default=3, help="repetitions of every configuration")
    p.add_argument("--only", help="comma-separated sections: readrandom, multireadrandom, seekrandom, "
                   "counters (default: all)")
    p.add_argument("--configs", help="comma-separated configurations, e.g. 'default,posix' (a name also "
                   "keeps its variants: 'default' keeps 'default (io_uring on)'; default: all)")
    p.add_argument("--cpus_allowed", help="run every db_bench on these CPUs (fio's list: 1, 0-1), the same "
                   "placement for every configuration (default: unpinned; where the scheduler puts the "
                   "readers moves CPU per op by 10-20%% between runs)")
    p.add_argument("--own-cost", action="store_true",
                   help="instead: readrandom with posix and default under perf, CPU per op by code "
                        "(what posix's own code costs beside RocksDB's posix file)")
    _interleave_options(p, "readrandom (default, posix, posix 512-aligned, or --configs) and "
                           "multireadrandom (every MultiRead configuration) through db_bench")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=_run_backends)


def _driver(p) -> None:
    p.add_argument("--dir", help=DIR_HELP)
    p.add_argument("--duration", type=int, default=10, help="seconds per readrandom measurement")
    p.add_argument("--fio-runtime", type=int, default=10, help="seconds per fio measurement")
    p.add_argument("--repeats", type=int, default=3, help="repetitions (medians are printed)")
    p.add_argument("--only", help="readrandom or fio (default: both)")
    p.add_argument("--cpus_allowed", help="run both tools' readrandom on these CPUs (fio's list: 1, 0-1), "
                   "the same placement for both (default: unpinned)")
    p.add_argument("--fs_uri", help="both tools' readrandom through this rxlab file system (db_bench "
                   "through the plugin), e.g. 'rxlab://posix': the same IO path and buffer placement for "
                   "both (default: RocksDB's own file system in each)")
    p.add_argument("--window", action="store_true",
                   help="instead: both tools' readrandom (children, 9 s or --duration) measured by one "
                   "observer, all threads' scheduler CPU and sleeps from seconds 3 to 6")
    p.add_argument("--profile", action="store_true",
                   help="instead: each tool's readrandom under perf record, the readers' CPU per op by "
                        "symbol")
    _interleave_options(p, "both tools' readrandom")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=_run_driver)


def _paired(p) -> None:
    p.add_argument("--dir", help=DIR_HELP)
    p.add_argument("--reps", type=int, default=8, help="pairs per comparison (at least 2)")
    p.add_argument("--duration", type=float, default=4, help="seconds per run of a pair")
    p.add_argument("--only", help="comma-separated words; run the pairs whose label contains one "
                   "(e.g. 'posix vs default,counters'; default: every pair)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=_run_paired)


def _interleave_cpus(a, root: Path) -> str | None:
    """The --interleave options checked in one place; the CPUs default to the one that takes the
    DB disk's interrupts (the placement every earlier pinned benchmark used), else unpinned."""
    if a.sessions < 1 or a.rounds < 1 or a.slice <= 0:
        raise ValueError(f"--sessions {a.sessions} --rounds {a.rounds} --slice {a.slice}: "
                         "need sessions >= 1, rounds >= 1 and slice > 0")
    cpus = a.cpus_allowed
    if cpus is None:
        irq = busiest_irq_cpu(root if root.exists() else root.parent)
        cpus = str(irq) if irq is not None else None
    if cpus is not None:
        parse_cpus(cpus)
    return cpus


def _uri_part(fs_uri: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", (fs_uri or "").removeprefix("rxlab://"))


def _run_backends(a) -> int:
    root = Path(a.dir) if a.dir else sb.default_root()
    sections = sb.select_sections(a.only)
    configs = sb.select_configs(a.configs, sections)
    if a.cpus_allowed is not None:
        parse_cpus(a.cpus_allowed)  # a bad list fails here, before any DB is loaded
    if a.repeats < 1 or a.duration <= 0:
        raise ValueError(f"--repeats {a.repeats} --duration {a.duration}: need repeats >= 1 and duration > 0")
    if a.interleave:
        turns = tuple(st.INTERLEAVE_SECTIONS) if sections == sb.SECTIONS else sections
        if any(sec not in st.INTERLEAVE_SECTIONS for sec in turns):
            raise ValueError(f"--interleave --only {a.only!r}: runs in turns are "
                             f"{', '.join(st.INTERLEAVE_SECTIONS)}")
        cpus = _interleave_cpus(a, root)
        part = "-".join(filter(None, ["-".join(turns) if turns != tuple(st.INTERLEAVE_SECTIONS) else "",
                                      f"cpus{cpus}" if cpus else ""]))
        if a.pool:
            print(st.summarize_interleaved(pooled(a.pool)))
            return 0
        out = stamped(root / f"backends-interleaved{f'-{part}' if part else ''}.csv")
        df = st.interleaved(root, sections=turns, configs=configs, sessions=a.sessions, rounds=a.rounds,
                            slice_s=a.slice, cpus_allowed=cpus, control=not a.no_control, size_gib=a.size_gib,
                            quiet=a.quiet, out=out)
        df.to_csv(out, index=False)
        print(st.summarize_interleaved(df))
        print(f"\nper-slice rows: {out}")
        return 0
    if a.own_cost:
        out = root / "backends-own-cost.csv"
        # saved run by run
        df = so.own_cost(root, reps=a.repeats, duration=a.duration, quiet=a.quiet, out=out)
        print(so.summarize_own_cost(df))
        print(f"\nper-run rows: {out}")
        return 0
    b = sb.Bench(root, size_gib=a.size_gib, duration=a.duration, repeats=a.repeats, quiet=a.quiet,
                 sections=sections, configs=configs, cpus_allowed=a.cpus_allowed)
    df = b.main()
    # a run of some sections or configurations writes its own file: the full run's table stays whole
    part = "-".join(sections) if sections != sb.SECTIONS else ""
    if configs:
        part = "-".join(filter(None, [part, *(c.replace("+", "") for c in configs)]))
    if a.cpus_allowed:
        part = "-".join(filter(None, [part, f"cpus{a.cpus_allowed}"]))
    out = root / (f"backends-bench-{part}.csv" if part else "backends-bench.csv")
    df.to_csv(out, index=False)
    print(sb.summarize(df, b.placements))
    print(f"\nper-repetition rows: {out}")
    return 0


def _run_paired(a) -> int:
    if a.reps < 2 or a.duration <= 0:
        raise ValueError(f"--reps {a.reps} --duration {a.duration}: need reps >= 2 and duration > 0")
    pairs = sp.select_pairs(a.only)
    root = Path(a.dir) if a.dir else sb.default_root()
    pdf = sp.paired(root, pairs=pairs, reps=a.reps, duration=a.duration, quiet=a.quiet)
    sp.merge_paired_csv(root / "backends-paired.csv", pdf)
    print(sp.summarize_paired(pdf))
    return 0


def _run_driver(a) -> int:
    root = Path(a.dir) if a.dir else sb.default_root()
    if a.profile:
        for t in (1, 2):
            prof = sd.profile(root, threads=t, duration=a.duration, quiet=a.quiet)
            prof.to_csv(root / f"driver-profile-t{t}.csv")
            print(f"readrandom t={t}:\n{sd.summarize_profile(prof)}\n")
        return 0
    if a.interleave:
        parts = tuple(a.only.split(",")) if a.only else sd.PARTS
        if any(p not in sd.PARTS for p in parts):
            raise ValueError(f"--only {a.only!r}: parts are {', '.join(sd.PARTS)}")
        cpus = _interleave_cpus(a, root)
        suffix = "".join(f"-{s}" for s in ("-".join(parts) if set(parts) != set(sd.PARTS) else "",
                                           f"cpus{cpus}" if cpus else "", _uri_part(a.fs_uri)) if s)
        if a.pool:
            print(sd.summarize_interleaved(pooled(a.pool)))
            return 0
        out = stamped(root / f"driver-interleaved{suffix}.csv")
        kw = {"sessions": a.sessions, "rounds": a.rounds, "slice_s": a.slice, "cpus_allowed": cpus,
              "control": not a.no_control, "quiet": a.quiet, "out": out}
        frames = []
        if "readrandom" in parts:
            frames.append(sd.interleaved(root, fs_uri=a.fs_uri, **kw))
            frames[-1].to_csv(out, index=False)
        if "fio" in parts:
            frames.append(sd.interleaved_fio(root, **kw))
        df = pd.concat(frames, ignore_index=True)
        df.to_csv(out, index=False)
        print(sd.summarize_interleaved(df))
        print(f"\nper-slice rows: {out}")
        return 0
    if a.window:
        df = sd.window(root, repeats=a.repeats, duration=max(a.duration, 9), fs_uri=a.fs_uri,
                       cpus_allowed=a.cpus_allowed, quiet=a.quiet)
        suffix = "".join(f"-{s}" for s in (f"cpus{a.cpus_allowed}" if a.cpus_allowed else "",
                                           _uri_part(a.fs_uri)) if s)
        out = root / f"driver-window{suffix}.csv"
        df.to_csv(out, index=False)
        print(sd.summarize_window(df))
        print(f"\nper-repetition rows: {out}")
        return 0
    parts = tuple(a.only.split(",")) if a.only else sd.PARTS
    df = sd.main(root, duration=a.duration, repeats=a.repeats, fio_runtime=a.fio_runtime, quiet=a.quiet,
                 parts=parts, cpus_allowed=a.cpus_allowed, fs_uri=a.fs_uri)
    name = "driver-bench" if set(parts) == set(sd.PARTS) else f"driver-bench-{'-'.join(parts)}"
    if a.cpus_allowed:
        name += f"-cpus{a.cpus_allowed}"
    if a.fs_uri:
        name += "-" + _uri_part(a.fs_uri)
    out = root / f"{name}.csv"
    df.to_csv(out, index=False)
    print(sd.summarize(df))
    print(f"\nper-repetition rows: {out}")
    return 0
