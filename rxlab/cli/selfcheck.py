"""Self-checks: `rxlab selfcheck backends|driver|paired|parity`, the project's own validation benchmarks.

They check rxlab against RocksDB's and fio's own tools, not a user's
question, and they cost tens of minutes and gigabytes: so they are kept apart
from the everyday commands. The names of rxlab 0.1 (bench-backends,
bench-driver, bench-paired) still work for one release, with a note.
"""
from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path

import pandas as pd

from rxlab.bench.fio import parse_cpus
from rxlab.bench.irq import busiest_irq_cpu
from rxlab.bench.selfcheck import backends as sb
from rxlab.bench.selfcheck import backends_in_turns as st
from rxlab.bench.selfcheck import driver as sd
from rxlab.bench.selfcheck import own_cost as so
from rxlab.bench.selfcheck import paired as sp
from rxlab.bench.selfcheck import parity as spar
from rxlab.bench.selfcheck import parity_report as spr
from rxlab.bench.selfcheck.parity_rows import NAMES as PARITY_ROWS
from rxlab.bench.turns import pooled, stamped
from rxlab.core import engines

TITLE = "self-checks (tens of minutes, GiB of disk)"
DIR_HELP = "where the benchmark DBs live (default: $RXLAB_BENCH_DIR, else data/bench in the clone)"

COSTS = {
    "backends": "about 20 minutes and 3.2 GiB of disk (a 2.2 GiB DB and a 1 GiB one, kept for reuse); "
                "--interleave: 5 to 17 minutes per section",
    "driver": "about 10 minutes (--interleave: 17 min for readrandom, 10 for fio) on the backends DB "
              "(2.2 GiB, loaded first when missing)",
    "paired": "about 1 minute per pair and --reps 8 (needs the backends DB: run selfcheck backends first)",
    "parity": "--budget (default 10 minutes), plus loading a DB for the readers (about 0.5 GiB at "
              "--num 400000)",
}
# old name -> new command (rxlab 0.1's names; they go away in rxlab 0.3)
RENAMED = {"bench-backends": "backends", "bench-driver": "driver", "bench-paired": "paired"}


def add_parser(sub) -> None:
    p = sub.add_parser("selfcheck", help="rxlab checked against RocksDB's and fio's own tools: backends, "
                                         "driver, paired, parity (tens of minutes each, GiB of disk)",
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
    _parity(ss.add_parser("parity", help=f"every workload on every engine against RocksDB's own file system, "
                                         f"ratios with 95%% intervals in turns; {COSTS['parity']}",
                          description="The parity matrix: each cell the ratio of an engine to default "
                                      "on throughput and CPU per op, with a 95% interval, measured in turns "
                                      "with an A/A control until every cell is resolved or the budget ends. "
                                      f"Cost: {COSTS['parity']}."))
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


def _parity(p) -> None:
    p.add_argument("--workloads", help=f"comma-separated rows (default: all): {', '.join(PARITY_ROWS)}")
    p.add_argument("--engines", help="comma-separated engines (default: every engine of the registry, "
                   "`rxlab engines`); each gives a plain column, and one with its best options where it "
                   "has them")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default: 1,2)")
    p.add_argument("--condition", default="quiet", help="quiet, busy (one process spinning on a CPU beside "
                   "every run) or both (default: quiet)")
    p.add_argument("--direct", default="on", help="O_DIRECT reads, flush and compaction: on, off or both "
                   "(default: on)")
    p.add_argument("--sync", default="off", help="--sync writes: off, on or both (default: off)")
    p.add_argument("--target", type=float, default=spar.resolution.DEFAULT_TARGET_PCT,
                   help="stop adding turns to a cell once its half-width is at most this many percent "
                   "(default: 2)")
    p.add_argument("--budget", default="10m", help="time for all the turns, e.g. 90s, 10m, 1.5h "
                   "(default: 10m); cells not resolved by then are marked so")
    p.add_argument("--num", type=int, default=400_000, help="keys per fill and in the readers' DB "
                   "(default: 400000, 1,000-byte values)")
    p.add_argument("--duration", type=int, default=5, help="whole seconds of each timed row (readers, "
                   "readwhilewriting, mixgraph; db_bench's --duration; default: 5)")
    p.add_argument("--min-turns", type=int, default=spar.resolution.AB_MIN_TURNS,
                   help="turns before a cell may be called resolved (default: %(default)s, as `rxlab ab`: "
                   "a cell's turn takes seconds, and an earlier stop favours a spread narrow by chance)")
    p.add_argument("--json", action="store_true", help="print the result as JSON instead of the table")
    p.add_argument("--out", help="where the runs, cells, JSON and figure go (default: "
                   "<--dir>/parity/<UTC time>)")
    p.add_argument("--figure-dir", help="also write the figure (with its table and sidecar) here, "
                   "e.g. docs/findings/figures (default: only in --out)")
    p.add_argument("--dir", help=DIR_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=_run_parity)


def _words(name: str, value: str | None) -> tuple[str, ...]:
    words = tuple(w.strip() for w in (value or "").split(",") if w.strip())
    if value is not None and not words:
        raise ValueError(f"{name} {value!r}: expected a comma-separated list")
    return words


def _switch(name: str, value: str) -> tuple[bool, ...]:
    v = {"on": (True,), "off": (False,), "both": (True, False)}.get(value.strip().lower())
    if v is None:
        raise ValueError(f"{name} {value!r}: expected on, off or both")
    return v


def _parity_settings(a) -> spar.Settings:
    """The command line as parity Settings; one line naming a bad value."""
    threads = []
    for w in _words("--threads", a.threads):
        try:
            threads.append(int(w))
        except ValueError:
            raise ValueError(f"--threads {a.threads!r}: expected integers >= 1, e.g. 1,2") from None
    cond = a.condition.strip().lower()
    if cond not in ("quiet", "busy", "both"):
        raise ValueError(f"--condition {a.condition!r}: expected quiet, busy or both")
    if a.min_turns < 2:
        raise ValueError(f"--min-turns {a.min_turns}: expected at least 2 (an interval needs two turns)")
    return spar.Settings(
        workloads=_words("--workloads", a.workloads) or PARITY_ROWS,
        engines=_words("--engines", a.engines), threads=tuple(threads),
        conditions=spar.CONDITIONS if cond == "both" else (cond,),
        direct=_switch("--direct", a.direct), sync=tuple(sorted(_switch("--sync", a.sync))),
        target=a.target, budget_s=spar.resolution.parse_budget(a.budget, "--budget") or 0.0,
        num=a.num, duration=a.duration, min_turns=a.min_turns).check()


def _run_parity(a) -> int:
    s = _parity_settings(a)
    root = Path(a.dir) if a.dir else sb.default_root()
    s.workdir = root / "parity-db"  # the readers' loaded DB, kept and reused while its options match
    out = Path(a.out) if a.out else root / "parity" / stamped(Path("run")).name.removeprefix("run-")
    command = shlex.join(["rxlab", *sys.argv[1:]])
    m = spar.Matrix(s, out, log=(lambda _m: None) if a.quiet else None,
                    on_turn=lambda mm: spr.store(mm, mm.table(), command))
    table = m.run()
    files = spr.store(m, table, command)
    fig = spr.save_figure(table, out, notes=command) if not table.empty else {}
    if a.figure_dir and not table.empty:
        fig = spr.save_figure(table, Path(a.figure_dir), notes=command)
    files.update({f"figure.{k}": v for k, v in fig.items()})
    if len(s.threads) >= 3 and m.runs:  # a thread-scaling sweep: throughput against threads as well
        runs = pd.DataFrame(m.runs)
        for d in [out, *([Path(a.figure_dir)] if a.figure_dir else [])]:
            sfig = spr.save_scaling_figure(runs, table, d, notes=command)
        files.update({f"scaling.{k}": v for k, v in sfig.items()})
    m.files = files
    if a.json:
        print(json.dumps(spr.document(m, table, command), indent=1))
    else:
        print(spr.text(m, table))
        print(f"\nruns: {files['runs']}\ncells: {files['cells']}\njson: {files['json']}"
              + (f"\nfigure: {fig['png']}" if fig else ""))
    return 0


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
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", engines.label(fs_uri) if fs_uri else "")


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
