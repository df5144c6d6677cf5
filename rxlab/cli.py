"""The `rxlab` command."""
from __future__ import annotations

import argparse
import json
import os
import re
import sys


def _plugin_path(a):
    from .backends_bench import plugin_path

    print(plugin_path())


def _rocksdb(a):
    from . import builds

    prefix = builds.active_build()
    rec = json.loads((prefix / "build.json").read_text()) if (prefix / "build.json").is_file() else {}
    try:
        from . import _core

        module = f"compiled against {_core.rocksdb_build} (RocksDB {_core.rocksdb_version})"
    except ImportError as e:
        module = f"not importable: {e}"
    print(f"active build: {prefix}")
    for k in ("version", "compiler", "compiler_version", "lto", "cxxflags_release", "build_seconds",
              "built_at", "patches", "source"):
        if k in rec:
            print(f"  {k}: {rec[k]}")
    if rec:
        print(f"  cmake flags: {' '.join(rec['cmake_flags'])}")
    print(f"  library: {prefix / 'lib'}\n  headers: {prefix / 'include'}\n  db_bench: {prefix / 'bin' / 'db_bench'}")
    print(f"  rxlab._core: {module}")


def _builds(a):
    from . import builds

    print(builds.format_builds(builds.list_builds()))


def _build_rocksdb(a):
    from . import builds

    print(builds.build(a.version, a.cc, a.lto, a.jobs, a.force, a.cxxflags))


def _remove_build(a):
    from . import builds

    print(f"removed {builds.remove(a.key)}")


def _build_module(a):
    from . import builds

    print(builds.ensure_module(a.key, a.jobs) or f"{a.key}: the installed module's build")


def _engines(a):
    from . import _core

    for e in _core.engines():
        print(f"{e['name']}: {e['help']}")
        for name, (default, help_) in e["options"].items():
            print(f"    {name}={default:<8} {help_}")


def _compare(a):
    from .compare import compare

    df = compare(a.scale, quiet=a.quiet)
    print(df.round(1).to_string(index=False))


def _interleave_args(a, root):
    """The --interleave options checked in one place; the CPUs default to the one that takes the
    DB disk's interrupts (the placement every earlier pinned benchmark used), else unpinned."""
    from .placement import busiest_irq_cpu
    from .rawio import parse_cpus

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


def _add_interleave_args(p, what: str) -> None:
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
                   "per-slice CSVs) as one measurement")


def _bench_backends(a):
    from pathlib import Path

    from .backends_bench import SECTIONS, Bench, default_root, select_configs, select_sections, summarize

    root = Path(a.dir) if a.dir else default_root()
    sections = select_sections(a.only)
    configs = select_configs(a.configs, sections)
    if a.cpus_allowed is not None:
        from .rawio import parse_cpus

        parse_cpus(a.cpus_allowed)  # a bad list fails here, before any DB is loaded
    if a.repeats < 1 or a.duration <= 0:
        raise ValueError(f"bench-backends --repeats {a.repeats} --duration {a.duration}: "
                         "need repeats >= 1 and duration > 0")
    if a.interleave:
        from .backends_bench import INTERLEAVE_SECTIONS, interleaved, summarize_interleaved
        from .interleave import pooled, stamped

        turns = tuple(INTERLEAVE_SECTIONS) if sections == SECTIONS else sections
        if any(sec not in INTERLEAVE_SECTIONS for sec in turns):
            raise ValueError(f"bench-backends --interleave --only {a.only!r}: runs in turns are "
                             f"{', '.join(INTERLEAVE_SECTIONS)}")
        cpus = _interleave_args(a, root)
        part = "-".join(filter(None, ["-".join(turns) if turns != tuple(INTERLEAVE_SECTIONS) else "",
                                      f"cpus{cpus}" if cpus else ""]))
        if a.pool:
            print(summarize_interleaved(pooled(a.pool)))
            return
        out = stamped(root / f"backends-interleaved{f'-{part}' if part else ''}.csv")
        df = interleaved(root, sections=turns, configs=configs, sessions=a.sessions, rounds=a.rounds,
                         slice_s=a.slice, cpus_allowed=cpus, control=not a.no_control, size_gib=a.size_gib,
                         quiet=a.quiet, out=out)
        df.to_csv(out, index=False)
        print(summarize_interleaved(df))
        print(f"\nper-slice rows: {out}")
        return
    if a.own_cost:
        from .backends_bench import own_cost, summarize_own_cost

        out = root / "backends-own-cost.csv"
        df = own_cost(root, reps=a.repeats, duration=a.duration, quiet=a.quiet, out=out)  # saved run by run
        print(summarize_own_cost(df))
        print(f"\nper-run rows: {out}")
        return
    b = Bench(root, size_gib=a.size_gib, duration=a.duration, repeats=a.repeats, quiet=a.quiet,
              sections=sections, configs=configs, cpus_allowed=a.cpus_allowed)
    df = b.main()
    # a run of some sections or configurations writes its own file: the full run's table stays whole
    part = "-".join(sections) if sections != SECTIONS else ""
    if configs:
        part = "-".join(filter(None, [part, *(c.replace("+", "") for c in configs)]))
    if a.cpus_allowed:
        part = "-".join(filter(None, [part, f"cpus{a.cpus_allowed}"]))
    out = root / (f"backends-bench-{part}.csv" if part else "backends-bench.csv")
    df.to_csv(out, index=False)
    print(summarize(df, b.placements))
    print(f"\nper-repetition rows: {out}")


def _print_steps(df, as_json: bool, quiet: bool) -> None:
    """db_bench-like result lines, then the seeds' columns (or JSON)."""
    import json as _json

    from . import metrics

    seed = metrics.seed_columns(df)
    rows = []
    for i, r in df.iterrows():
        d = {"name": r["name"], "benchmark": r.get("benchmark"), "threads": int(r.get("threads", 1)),
             "ops": int(r["ops"]), "found": int(r.get("found", 0)), "wall_s": float(r["wall_s"])}
        for c in metrics.SEED_COLUMNS[:-1]:
            d[c] = None if seed[c].isna().iloc[i] else float(seed[c].iloc[i])
        for c in metrics.PERCENTILE_COLUMNS:
            if c in df and not _isnan(r.get(c)):
                d[c] = float(r[c])
        if r.get("notes"):
            d["notes"] = r["notes"]
        rows.append(d)
    if as_json:
        print(_json.dumps(rows, indent=1))
        return
    for d in rows:
        per_thread_us = d["wall_s"] * 1e6 * d["threads"] / d["ops"] if d["ops"] else 0.0
        qps = d["ops"] / d["wall_s"] if d["wall_s"] else 0.0
        found = f"  ({d['found']} of {d['ops']} found)" if d["found"] else ""
        print(f"{d['name']:<14}: {per_thread_us:11.3f} micros/op {qps:.0f} ops/sec {d['wall_s']:.3f} seconds "
              f"{d['ops']} operations;{found}")
        if d.get("notes"):
            print(f"{'':14}  note: {d['notes']}")
    if not quiet:
        print()
        print(seed.assign(test=df["name"])[list(metrics.SEED_COLUMNS)].round(3).to_string(index=False))


def _isnan(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _bench(argv) -> int:
    from . import driver, store
    from .flags import BENCH_FLAGS, bench_spec

    if argv and argv[0] in ("-h", "--help"):
        print("usage: rxlab bench --benchmarks=fillseq,readrandom [db_bench flags] [--json] [--quiet]")
        print("benchmarks:", ", ".join(driver.BENCHMARKS))
        print("helper-script jobs:", ", ".join(driver.JOBS))
        print("sequences:", ", ".join(driver.SEQUENCES))
        print("flags:", " ".join(f"--{k}" for k in BENCH_FLAGS))
        return 0
    spec, cli = bench_spec(argv)
    path = driver.run(spec, root=cli["runs_dir"], progress=not cli["quiet"] and not cli["json"])
    run = store.load_run(path)
    _print_steps(run.steps, cli["json"], cli["quiet"])
    if not cli["json"] and not cli["quiet"]:
        print(f"\nrun stored in {path}")
    return 0


def _fio(argv) -> int:
    import json as _json

    from . import metrics, rawio, refs
    from .flags import FIO_FLAGS, fio_args

    if argv and argv[0] in ("-h", "--help"):
        print("usage: rxlab fio --filename=F [--rw=randread --bs=8k --size=2g --direct=1 --ioengine=sync "
              "--iodepth=1 --numjobs=1 --runtime=10 --ramp_time=1] [--engine_options=sqpoll=1] [--real] [--json]")
        print("flags:", " ".join(f"--{k}" for k in FIO_FLAGS))
        return 0
    a = fio_args(argv)
    kw = {k: a[k] for k in ("rw", "bs", "size", "direct", "ioengine", "iodepth", "numjobs", "runtime",
                            "ramp_time", "engine_options", "seed", "iodepth_batch_submit",
                            "iodepth_batch_complete_max", "thinktime", "thinktime_spin",
                            "cpus_allowed_policy", "cpus_allowed", "blockalign") if k in a}
    name = a.get("name") or "fio"
    if a.get("real") and (kw.get("thinktime") or kw.get("thinktime_spin")):
        # Checked before anything runs. fio 3.33 never finished a job with
        # thinktime_spin > 0 on these machines, and its thinktime alone
        # raised IOPS where a stall must lower them: not like for like.
        raise ValueError("--thinktime/--thinktime_spin with --real: these are rxlab fio's alone "
                         "(real fio 3.33 hangs on thinktime_spin here); drop --real")
    rows = rawio.run(a["filename"], **kw)
    result = {"rxlab": rows}
    stored = {"rxlab": rawio.store_rows(a.get("runs_dir"), a["filename"], rows,
                                        {"tool": "rxlab-fio", "name": name}, **kw)}
    if a.get("real"):
        batching = {k: kw[k] for k in ("iodepth_batch_submit", "iodepth_batch_complete_max", "blockalign")
                    if k in kw}
        if kw.get("cpus_allowed") or kw.get("cpus_allowed_policy") == "split":
            # fio splits the set given by cpus_allowed
            everything = ",".join(map(str, sorted(os.sched_getaffinity(0))))
            batching["cpus_allowed"] = kw.get("cpus_allowed") or everything
            batching["cpus_allowed_policy"] = kw.get("cpus_allowed_policy", "shared")
        real_kw = {k: v for k, v in kw.items()
                   if k not in ("engine_options", "seed", "cpus_allowed_policy", "cpus_allowed", *batching)}
        result["fio"] = refs.run_fio(a["filename"], **real_kw, extra=batching or None)
        stored["fio"] = rawio.store_rows(a.get("runs_dir"), a["filename"], result["fio"],
                                         {"tool": "fio", "name": name}, **real_kw, **batching)
    if a.get("json"):
        def slim(r):
            d = {k: v for k, v in r.items() if k not in ("histograms", "timeseries")}
            # IOs per second of the job (fio's own number for real fio)
            d["iops"] = r.get("fio_iops", r["ops"] / r["wall_s"] if r.get("wall_s") else None)
            return d
        out = {k: [slim(r) for r in v] for k, v in result.items()}
        out["runs"] = {k: str(v) for k, v in stored.items()}
        print(_json.dumps(out, indent=1, default=str))
        return 0
    for tool, rs in result.items():
        total = [r for r in rs if str(r.get("job")) == "total"] or rs[-1:]
        t = total[0]
        cpu = metrics.seed_columns([t])
        print(f"{tool:6} {a.get('ioengine', 'sync'):8} qd={a.get('iodepth', 1)} jobs={a.get('numjobs', 1)}: "
              f"{t['ops'] / t['wall_s']:9.0f} IOPS  lat {t.get('lat_mean_us', float('nan')):7.1f} us  "
              f"p99 {t.get('p99_us', float('nan')):7.1f} us  CPU/IO {float(cpu['cpuPer'].iloc[0]):6.2f} us "
              f"(user {float(cpu['usPer'].iloc[0]):.2f}, sys {float(cpu['syPer'].iloc[0]):.2f})")
    if not a.get("quiet"):
        for tool, path in stored.items():
            print(f"{tool} run stored in {path}")
    return 0


def _runs(a):
    from . import store

    df = store.list_runs(a.dir, include_incomplete=a.all)
    print(df.to_string(index=False) if len(df) else "no runs")


def _show(a):
    from . import store

    run = store.load_run(a.run, a.dir)
    print(f"run {run.path}")
    _print_steps(run.steps, a.json, False)


def _bench_paired(a):
    from pathlib import Path

    from .backends_bench import default_root, merge_paired_csv, paired, select_pairs, summarize_paired

    if a.reps < 2 or a.duration <= 0:
        raise ValueError(f"bench-paired --reps {a.reps} --duration {a.duration}: "
                         "need reps >= 2 and duration > 0")
    pairs = select_pairs(a.only)
    root = Path(a.dir) if a.dir else default_root()
    pdf = paired(root, pairs=pairs, reps=a.reps, duration=a.duration, quiet=a.quiet)
    out = root / "backends-paired.csv"
    merge_paired_csv(out, pdf)
    print(summarize_paired(pdf))


def _bench_driver(a):
    from pathlib import Path

    from .backends_bench import default_root
    from .driver_bench import PARTS, summarize
    from .driver_bench import main as run

    root = Path(a.dir) if a.dir else default_root()
    if a.profile:
        from .driver_bench import profile, summarize_profile

        for t in (1, 2):
            prof = profile(root, threads=t, duration=a.duration, quiet=a.quiet)
            prof.to_csv(root / f"driver-profile-t{t}.csv")
            print(f"readrandom t={t}:\n{summarize_profile(prof)}\n")
        return
    if a.interleave:
        import pandas as pd

        from .driver_bench import interleaved, interleaved_fio, summarize_interleaved
        from .interleave import pooled, stamped

        parts = tuple(a.only.split(",")) if a.only else PARTS
        if any(p not in PARTS for p in parts):
            raise ValueError(f"bench-driver --only {a.only!r}: parts are {', '.join(PARTS)}")
        cpus = _interleave_args(a, root)
        suffix = "".join(f"-{s}" for s in ("-".join(parts) if set(parts) != set(PARTS) else "",
                                           f"cpus{cpus}" if cpus else "",
                                           re.sub(r"[^A-Za-z0-9_.=-]+", "_", (a.fs_uri or "").removeprefix(
                                               "rxlab://"))) if s)
        if a.pool:
            print(summarize_interleaved(pooled(a.pool)))
            return
        out = stamped(root / f"driver-interleaved{suffix}.csv")
        kw = {"sessions": a.sessions, "rounds": a.rounds, "slice_s": a.slice, "cpus_allowed": cpus,
              "control": not a.no_control, "quiet": a.quiet, "out": out}
        frames = []
        if "readrandom" in parts:
            frames.append(interleaved(root, fs_uri=a.fs_uri, **kw))
            frames[-1].to_csv(out, index=False)
        if "fio" in parts:
            frames.append(interleaved_fio(root, **kw))
        df = pd.concat(frames, ignore_index=True)
        df.to_csv(out, index=False)
        print(summarize_interleaved(df))
        print(f"\nper-slice rows: {out}")
        return
    if a.window:
        from .driver_bench import summarize_window, window

        df = window(root, repeats=a.repeats, duration=max(a.duration, 9), fs_uri=a.fs_uri,
                    cpus_allowed=a.cpus_allowed, quiet=a.quiet)
        suffix = "".join(f"-{s}" for s in (f"cpus{a.cpus_allowed}" if a.cpus_allowed else "",
                                           re.sub(r"[^A-Za-z0-9_.=-]+", "_", (a.fs_uri or "").removeprefix(
                                               "rxlab://"))) if s)
        out = root / f"driver-window{suffix}.csv"
        df.to_csv(out, index=False)
        print(summarize_window(df))
        print(f"\nper-repetition rows: {out}")
        return
    parts = tuple(a.only.split(",")) if a.only else PARTS
    df = run(root, duration=a.duration, repeats=a.repeats, fio_runtime=a.fio_runtime, quiet=a.quiet, parts=parts,
             cpus_allowed=a.cpus_allowed, fs_uri=a.fs_uri)
    name = "driver-bench" if set(parts) == set(PARTS) else f"driver-bench-{'-'.join(parts)}"
    if a.cpus_allowed:
        name += f"-cpus{a.cpus_allowed}"
    if a.fs_uri:
        name += "-" + re.sub(r"[^A-Za-z0-9_.=-]+", "_", a.fs_uri.removeprefix("rxlab://"))
    out = root / f"{name}.csv"
    df.to_csv(out, index=False)
    print(summarize(df))
    print(f"\nper-repetition rows: {out}")


def _sweep(a) -> int:
    from .sweep import parse_value, sweep

    params = {}
    for group in a.param or []:
        name, values = group[0], group[1:]
        if not values:
            raise ValueError(f"-p {name}: give at least one value, e.g. -p {name} 1 2")
        if name in params:
            raise ValueError(f"-p {name}: given twice; list all its values after one -p")
        params[name] = [parse_value(v) for v in values]
    if a.scheduler:
        from .distributed import sweep_distributed

        df = sweep_distributed(a.notebook, params, a.scheduler, sweep_dir=a.out, shared_store=a.shared_store,
                               force=a.force, timeout_s=a.timeout, progress=not a.quiet)
    else:
        if a.shared_store:
            raise ValueError(f"--shared-store={a.shared_store}: only with --scheduler (in-process runs go to "
                             "$RXLAB_RUNS)")
        df = sweep(a.notebook, params, sweep_dir=a.out, force=a.force, timeout_s=a.timeout,
                   progress=not a.quiet)
    print(df.to_string(index=False))
    failed = int((df["status"] != "ok").sum())
    if failed:
        print(f"{failed} of {len(df)} points failed (their notebooks and status.json are in the sweep "
              f"directory)", file=sys.stderr)
    return 1 if failed else 0


def _worker(a) -> int:
    import subprocess

    from .distributed import worker_command

    cmd, env = worker_command(a.scheduler, a.host_id, a.scheduler_file, a.dask_args)
    print(" ".join(cmd), file=sys.stderr)
    return subprocess.call(cmd, env=env)


def _report(a) -> int:
    from .report import report

    outs = report(a.scale, a.only, figures_dir=a.figures, progress=not a.quiet)
    for o in outs:
        line = f"{o.notebook:28} {o.status:6} {o.seconds:7.0f} s  {len(o.runs):4} runs  {len(o.figures):3} figures"
        print(line + (f"  {o.error}" if o.error else ""))
    from . import figures

    print(f"index: {(a.figures or figures.figures_dir())}/index.md")
    return 1 if any(o.status != "ok" for o in outs) else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="rxlab", description="A research workbench for RocksDB IO performance.")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    sub.add_parser("plugin-path", help="path of the db_bench plugin (LD_PRELOAD it)").set_defaults(fn=_plugin_path)
    sub.add_parser("rocksdb", help="the active RocksDB build").set_defaults(fn=_rocksdb)
    sub.add_parser("builds", help="RocksDB builds in the cache").set_defaults(fn=_builds)
    sub.add_parser("engines", help="IO engines and their URI options").set_defaults(fn=_engines)

    b = sub.add_parser("build-rocksdb", help="build RocksDB from Debian's source tarball into the cache")
    b.add_argument("--version", default="9.10.0")
    b.add_argument("--cc", default="gcc", choices=["gcc", "clang"])
    b.add_argument("--lto", action="store_true")
    b.add_argument("--jobs", type=int)
    b.add_argument("--force", action="store_true", help="rebuild even if the build exists")
    b.add_argument("--cxxflags", default="", help="extra compiler flags (part of the build's key)")
    b.set_defaults(fn=_build_rocksdb)
    rb = sub.add_parser("remove-build", help="delete a build (and its module) from the cache")
    rb.add_argument("key", help="a key from `rxlab builds`, e.g. 9.10.0-clang16")
    rb.set_defaults(fn=_remove_build)
    bm = sub.add_parser("build-module", help="compile rxlab's module and plugin against a build "
                                             "(then RXLAB_BUILD=KEY selects it)")
    bm.add_argument("key")
    bm.add_argument("--jobs", type=int)
    bm.set_defaults(fn=_build_module)

    c = sub.add_parser("compare", help="load a DB through each backend (db_bench + plugin), print a table")
    c.add_argument("--scale", default="small", choices=["smoke", "small"])
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(fn=_compare)

    bb = sub.add_parser("bench-backends", help="the backends benchmark (>= 2 GiB DB; about 20 minutes)")
    bb.add_argument("--dir", help="where the DBs live (default data/bench or $RXLAB_BENCH_DIR)")
    bb.add_argument("--size-gib", type=float, default=2.2)
    bb.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    bb.add_argument("--repeats", type=int, default=3)
    bb.add_argument("--only", help="comma-separated sections: readrandom, multireadrandom, seekrandom, "
                    "counters (default: all)")
    bb.add_argument("--configs", help="comma-separated configurations, e.g. 'default,posix' (a name also "
                    "keeps its variants: 'default' keeps 'default (io_uring on)'; default: all)")
    bb.add_argument("--cpus_allowed", help="run every db_bench on these CPUs (fio's list: 1, 0-1), the same "
                    "placement for every configuration (unpinned, where the scheduler puts the readers moves "
                    "CPU per op by 10-20%% between runs)")
    bb.add_argument("--own-cost", action="store_true",
                    help="instead: readrandom with posix and default under perf, CPU per op by code "
                         "(what posix's own code costs beside RocksDB's posix file)")
    _add_interleave_args(bb, "readrandom (default, posix, posix 512-aligned, or --configs) and "
                         "multireadrandom (every MultiRead configuration) through db_bench")
    bb.add_argument("--quiet", action="store_true")
    bb.set_defaults(fn=_bench_backends)
    bp = sub.add_parser("bench-paired", help="in-process back-to-back A/B pairs on the benchmark DB")
    bp.add_argument("--dir")
    bp.add_argument("--reps", type=int, default=8)
    bp.add_argument("--duration", type=float, default=4)
    bp.add_argument("--only", help="comma-separated words; run the pairs whose label contains one "
                    "(e.g. 'posix vs default,counters')")
    bp.add_argument("--quiet", action="store_true")
    bp.set_defaults(fn=_bench_paired)

    bd = sub.add_parser("bench-driver", help="rxlab's driver vs the release db_bench, rxlab fio vs fio")
    bd.add_argument("--dir", help="where the DBs live (default data/bench or $RXLAB_BENCH_DIR)")
    bd.add_argument("--duration", type=int, default=10)
    bd.add_argument("--fio-runtime", type=int, default=10)
    bd.add_argument("--repeats", type=int, default=3)
    bd.add_argument("--only", help="readrandom or fio (default: both)")
    bd.add_argument("--cpus_allowed", help="run both tools' readrandom on these CPUs (fio's list: 1, 0-1), "
                    "the same placement for both")
    bd.add_argument("--fs_uri", help="both tools' readrandom through this rxlab file system (db_bench "
                    "through the plugin), e.g. 'rxlab://posix': the same IO path "
                    "and buffer placement for both (default: RocksDB's own file system in each)")
    bd.add_argument("--window", action="store_true",
                    help="instead: both tools' readrandom (children, 9 s or --duration) measured by one "
                    "observer, all threads' scheduler CPU and sleeps from seconds 3 to 6")
    bd.add_argument("--profile", action="store_true",
                    help="instead: each tool's readrandom under perf record, the readers' CPU per op by symbol")
    _add_interleave_args(bd, "both tools' readrandom")
    bd.add_argument("--quiet", action="store_true")
    bd.set_defaults(fn=_bench_driver)
    r = sub.add_parser("runs", help="list stored runs")
    r.add_argument("--dir", help="results root (default data/runs or $RXLAB_RUNS)")
    r.add_argument("--all", action="store_true", help="include failed and incomplete runs")
    r.set_defaults(fn=_runs)
    sh = sub.add_parser("show", help="print a stored run's tables")
    sh.add_argument("run", help="run id or path")
    sh.add_argument("--dir")
    sh.add_argument("--json", action="store_true")
    sh.set_defaults(fn=_show)
    sw = sub.add_parser("sweep", help="run a notebook over a parameter grid (papermill), one point at a time")
    sw.add_argument("notebook", help="notebook path, name (10_io_efficiency) or number (10)")
    sw.add_argument("-p", "--param", nargs="+", action="append", metavar=("NAME", "VALUE"),
                    help="a parameter and its values (YAML: 1, true, [1, 2], posix); repeat for more")
    sw.add_argument("--out", help="sweep directory (default data/sweeps/<notebook>)")
    sw.add_argument("--force", action="store_true", help="rerun points that already succeeded")
    sw.add_argument("--timeout", type=float, help="seconds per cell before a point fails")
    sw.add_argument("--scheduler", metavar="ADDRESS",
                    help="run the points on a Dask cluster (tcp://HOST:PORT, tls://..., or 'local' for a "
                         "one-worker cluster here); default: in this process, one after the other")
    sw.add_argument("--shared-store", metavar="PATH",
                    help="with --scheduler: a store every host mounts (default: runs come back to $RXLAB_RUNS)")
    sw.add_argument("--quiet", action="store_true")
    sw.set_defaults(fn=_sweep)
    wk = sub.add_parser("worker", help="this host's single Dask worker for sweeps (dask worker --nworkers 1 "
                                       "--nthreads 1 --resources host=1)")
    wk.add_argument("scheduler", nargs="?", help="scheduler address, e.g. tcp://10.0.0.1:8786")
    wk.add_argument("--scheduler-file", help="a scheduler file instead of the address")
    wk.add_argument("--host-id", help="the name this host goes by in runs (default: its hostname)")
    wk.add_argument("dask_args", nargs="*", help="more `dask worker` options after --, e.g. -- --tls-ca-file ca.pem")
    wk.set_defaults(fn=_worker)
    rp = sub.add_parser("report", help="rerun every notebook, regenerate figures/ and figures/index.md")
    rp.add_argument("--scale", default="small", choices=["smoke", "small", "full"])
    rp.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="only these notebooks (names or numbers)")
    rp.add_argument("--figures", help="figures directory (default figures/ or $RXLAB_FIGURES)")
    rp.add_argument("--quiet", action="store_true")
    rp.set_defaults(fn=_report)
    from .bench import conformance
    conformance.add_parser(sub)
    sub.add_parser("bench", help="db_bench workloads in-process; db_bench's flags (rxlab bench --help)")
    sub.add_parser("fio", help="rxlab's raw-IO baseline; fio's flags (rxlab fio --help)")

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("bench", "fio"):
        try:
            return _bench(argv[1:]) if argv[0] == "bench" else _fio(argv[1:])
        except (ValueError, FileNotFoundError, RuntimeError) as e:
            msg = str(e).strip().splitlines()
            print(f"rxlab {argv[0]}: {msg[0] if msg else type(e).__name__}", file=sys.stderr)
            return 2
    a = ap.parse_args(argv)
    try:
        rc = a.fn(a)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        msg = str(e).strip().splitlines()
        print(f"rxlab: {msg[0] if msg else type(e).__name__}", file=sys.stderr)
        return 2
    return rc or 0


if __name__ == "__main__":
    sys.exit(main())
