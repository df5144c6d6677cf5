"""Notebooks and hosts: `rxlab report` (every notebook, figures/), `rxlab sweep` (a notebook over a grid,
here or on Dask) and `rxlab worker` (this host's one Dask worker)."""
from __future__ import annotations

import sys

from rxlab.core import figures
from rxlab.core.study import SCALES
from rxlab.runs.distributed import check_tls, run_worker, scheduler_address, sweep_distributed, worker_command
from rxlab.runs.report import report
from rxlab.runs.sweep import parse_params, sweep

TITLE = "notebooks and hosts"


def add_parser(sub) -> None:
    rp = sub.add_parser("report", help="rerun every notebook (default scale small: minutes to hours) and "
                                       "OVERWRITE the clone's figures/ and figures/index.md",
                        description="Rerun the notebooks in order with papermill and regenerate figures/ and "
                                    "figures/index.md. It overwrites the figures committed in this clone "
                                    "(use --figures DIR to write elsewhere). Scale small runs each study "
                                    "in minutes; full fills the disk's free space.")
    rp.add_argument("--scale", default="small", choices=list(SCALES),
                    help="smoke: seconds per notebook (a check); small: minutes; full: the largest runs the "
                         "machine holds")
    rp.add_argument("--only", nargs="+", metavar="NOTEBOOK",
                    help="only these notebooks, by name or number, e.g. --only 10 20 (default: all)")
    rp.add_argument("--figures", metavar="DIR",
                    help="figures directory (default: $RXLAB_FIGURES, else the clone's figures/)")
    rp.add_argument("--budget", default="scale", metavar="TIME",
                    help="the whole report's time (65m, 1.5h, none), split among the studies' turns before "
                         "each notebook from what the notebooks still to run took last time (default: the "
                         "scale's: 65 min at small, none at smoke and full)")
    rp.add_argument("--quiet", action="store_true", help="no progress bar")
    rp.set_defaults(fn=_report)

    sw = sub.add_parser("sweep", help="a notebook over a parameter grid (papermill), one point at a time, "
                                      "here or on a Dask cluster")
    sw.add_argument("notebook", help="notebook path, name (10_io_efficiency) or number (10)")
    sw.add_argument("-p", "--param", nargs="+", action="append", metavar="NAME=V1,V2",
                    help="a parameter and its values, comma-separated (YAML each: 1, true, [1, 2], posix); "
                         "repeat -p for more parameters, or -p NAME=V again for one more value (the old form "
                         "-p NAME V1 V2 still works; default: the notebook's own values)")
    sw.add_argument("--out", metavar="DIR", help="sweep directory (default: data/sweeps/<notebook>)")
    sw.add_argument("--force", action="store_true", help="rerun points that already succeeded")
    sw.add_argument("--timeout", type=float, metavar="SECONDS",
                    help="seconds per cell before a point fails (default: no limit)")
    sw.add_argument("--scheduler", metavar="ADDRESS",
                    help="run the points on a Dask cluster (tcp://HOST:PORT, tls://..., or 'local' for a "
                         "one-worker cluster here); default: in this process, one after the other")
    sw.add_argument("--shared-store", metavar="PATH",
                    help="with --scheduler: a store every host mounts (default: runs come back to this "
                         "host's store)")
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    sw.set_defaults(fn=_sweep)

    wk = sub.add_parser("worker", help="this host's single Dask worker for sweeps (dask worker --nworkers 1 "
                                       "--nthreads 1 --resources host=1); `-- OPTIONS` go to dask worker",
                        usage="rxlab worker [SCHEDULER | --scheduler-file FILE] [--host-id NAME] "
                              "[-- DASK_WORKER_OPTIONS ...]",
                        description="Start `dask worker` for rxlab sweeps: one process, one thread, the "
                                    "resource host=1 (a benchmark needs its host to itself). Everything "
                                    "after -- is passed to dask worker as it is, e.g. TLS: rxlab worker "
                                    "tls://10.0.0.1:8786 -- --tls-ca-file ca.pem --tls-cert w.pem "
                                    "--tls-key w.key")
    wk.add_argument("scheduler", nargs="?", help="scheduler address, e.g. tcp://10.0.0.1:8786 "
                                                 "(or give --scheduler-file)")
    wk.add_argument("--scheduler-file", metavar="FILE",
                    help="a scheduler file instead of the address (default: none, the address is given)")
    wk.add_argument("--host-id", metavar="NAME",
                    help="the name this host goes by in runs (default: $RXLAB_HOST_ID, else the hostname)")
    wk.add_argument("--dry-run", action="store_true",
                    help="print the dask worker command line, start nothing")
    wk.set_defaults(fn=_worker, passthrough="dask_args")


def _sweep(a) -> int:
    params, old_form = parse_params(a.param or [])
    if old_form:
        print(f"rxlab sweep: -p {' '.join(old_form)} is the old form; write -p {old_form[0]}="
              f"{','.join(old_form[1:])} (the same grid)", file=sys.stderr)
    if a.scheduler:
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
    cmd, env = worker_command(a.scheduler, a.host_id, a.scheduler_file, a.dask_args)
    if not a.dry_run:  # certificates refused in one line here, not in a traceback of dask worker's
        check_tls(a.scheduler or scheduler_address(a.scheduler_file), "worker", a.dask_args)
    print(" ".join(cmd), file=sys.stdout if a.dry_run else sys.stderr)
    if a.dry_run:
        return 0
    return run_worker(cmd, env)


def _report(a) -> int:
    try:
        outs = report(a.scale, a.only, figures_dir=a.figures, progress=not a.quiet, budget=a.budget)
    except ValueError as e:
        print(f"rxlab report: {e}", file=sys.stderr)
        return 2
    for o in outs:
        line = (f"{o.notebook:28} {o.status:6} {o.seconds:7.0f} s  {len(o.runs):4} runs  "
                f"{len(o.figures):3} figures")
        print(line + (f"  {o.error}" if o.error else ""))
    print(f"index: {(a.figures or figures.figures_dir())}/index.md")
    return 1 if any(o.status != "ok" for o in outs) else 0
