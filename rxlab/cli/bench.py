"""Measure: `rxlab bench` (db_bench's workloads in-process) and `rxlab fio` (the raw-IO baseline).

Both speak their tool's own flag dialect (rxlab.bench.flags), so they take
their arguments as they come rather than through argparse.
"""
from __future__ import annotations

import json
import os
import sys

from rxlab.bench import driver, fio, flags, references
from rxlab.cli.output import print_steps
from rxlab.core import metrics, store, sysinfo

TITLE = "measure"

# Steps that build a DB from nothing: over an existing DB they would write a second copy of the keys.
NEW_DB_STEPS = ("fillseq", "fillrandom")


def add_parser(sub) -> None:
    sub.add_parser("bench", add_help=False,
                   help="db_bench's workloads in this process on one backend; each run stored "
                        "(`rxlab bench --help`: every flag, its meaning and default)").set_defaults(raw=bench)
    sub.add_parser("fio", add_help=False,
                   help="rxlab's raw-IO baseline (fio's jobs through rxlab's engines; --real runs fio "
                        "beside it)").set_defaults(raw=fio_command)


def _need_benchmarks(spec: driver.RunSpec) -> ValueError:
    steps = ",".join(map(str, spec.steps))
    return ValueError(f"no --benchmarks given: it would run {steps} with --num={spec.num} at --db={spec.db} "
                      f"through {spec.backend}; add --benchmarks={steps} to run that (`rxlab bench --help` "
                      "lists the benchmarks)")


def _existing_db(spec: driver.RunSpec, given: frozenset) -> str | None:
    """Refuse to write over a DB nobody asked to replace; returns the header's note on the DB."""
    if not driver.is_rocksdb(spec.db):
        return f"a new database at {spec.db}"
    size = f"{driver.db_size(spec.db) / 2**20:.0f} MiB"
    if "use_existing_db" in given:
        return (f"the existing database at {spec.db} ({size})" if spec.use_existing_db
                else f"a new database at {spec.db}, replacing the one there ({size})")
    new = [s["name"] for s in driver.expand(spec.steps) if s.get("name") in NEW_DB_STEPS]
    if new:
        raise ValueError(f"--db={spec.db} holds a database ({size}) and {new[0]} would write over it: add "
                         "--use_existing_db=0 to replace it, --use_existing_db=1 to write into it, or choose "
                         "another --db")
    spec.use_existing_db = True  # reads, overwrite, compaction: steps that work on the DB that is there
    return f"the existing database at {spec.db} ({size})"


def _header(spec: driver.RunSpec, given: frozenset, db_note: str) -> list[str]:
    threads = f"{spec.threads} thread{'s' if spec.threads > 1 else ''}"
    lines = [f"rxlab bench: {','.join(map(str, spec.steps))} through {metrics.backend_label(spec.backend)}, "
             f"{threads}, {spec.num} keys of {spec.key_size}+{spec.value_size} bytes, {db_note}"]
    diff = flags.differences(given)
    if diff:
        lines.append("  defaults unlike db_bench's: " + ", ".join(diff))
    dev = sysinfo.device_for_path(spec.db)
    if not dev.disk:
        lines.append("  " + driver.no_block_device_note(spec.db, dev.fstype))
    return lines


def bench(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(flags.bench_help())
        return 0
    spec, cli = flags.bench_spec(argv)
    given = cli["given"]
    if "benchmarks" not in given:
        raise _need_benchmarks(spec)
    driver.validate(spec)
    db_note = _existing_db(spec, given)
    talk = not cli["json"] and not cli["quiet"]
    header = _header(spec, given, db_note) if talk else []

    def before_step():
        # The header once the DB is open (RocksDB checks its options only then: a bad one prints
        # nothing but its one line), just before the first step.
        if header:
            print("\n".join(header), flush=True)
            header.clear()
        return dict

    path = driver.run(spec, root=cli["runs_dir"], progress=talk, step_probe=before_step)
    run = store.load_run(path)
    print_steps(run.steps, cli["json"], cli["quiet"])
    if talk:
        print(f"\nrun stored in {path}")
    return 0


def fio_command(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print(flags.fio_help())
        return 0
    a = flags.fio_args(argv)
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
    rows = fio.run(a["filename"], **kw)
    result = {"rxlab": rows}
    stored = {"rxlab": fio.store_rows(a.get("runs_dir"), a["filename"], rows,
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
        result["fio"] = references.run_fio(a["filename"], **real_kw, extra=batching or None)
        stored["fio"] = fio.store_rows(a.get("runs_dir"), a["filename"], result["fio"],
                                       {"tool": "fio", "name": name}, **real_kw, **batching)
    if a.get("json"):
        def slim(r):
            d = {k: v for k, v in r.items() if k not in ("histograms", "timeseries")}
            # IOs per second of the job (fio's own number for real fio)
            d["iops"] = r.get("fio_iops", r["ops"] / r["wall_s"] if r.get("wall_s") else None)
            return d
        out = {k: [slim(r) for r in v] for k, v in result.items()}
        out["runs"] = {k: str(v) for k, v in stored.items()}
        print(json.dumps(out, indent=1, default=str))
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
            print(f"{tool} run stored in {path}", file=sys.stdout)
    return 0
