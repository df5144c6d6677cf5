"""Results: `rxlab runs` (the store's runs, told apart), `rxlab show RUN`, `rxlab compare` (the main job)."""
from __future__ import annotations

import json
import sys
import warnings

from rxlab.bench.quick_compare import SCALES as COMPARE_SCALES
from rxlab.bench.quick_compare import compare
from rxlab.cli.output import print_steps, step_records, summary_line
from rxlab.core import store

TITLE = "results"
LATEST = "latest"
STORE = "the results store (default: $RXLAB_RUNS, else data/runs in the clone)"


def add_parser(sub) -> None:
    r = sub.add_parser("runs", help="the stored runs: backend, benchmarks, threads, qps, wall time",
                       description="The runs in the store, oldest first: what tells them apart. A run that "
                                   "cannot be read is named on stderr and left out, never an error.")
    r.add_argument("--dir", help=STORE)
    r.add_argument("--all", action="store_true", help="also failed (.failed-) and killed (.tmp-) runs")
    r.add_argument("--json", action="store_true", help="print the list as JSON only")
    r.set_defaults(fn=_runs)
    sh = sub.add_parser("show", help="one stored run: its summary and each step in the seeds' columns",
                        description="A stored run: its summary (backend, benchmarks, threads, qps, wall "
                                    "time), db_bench's result line per step, then the seeds' columns.")
    sh.add_argument("run", nargs="?", default=LATEST,
                    help="a run id, a unique prefix of one, a run directory's path, or `latest`: the last "
                         "complete run")
    sh.add_argument("--dir", help=STORE)
    sh.add_argument("--json", action="store_true",
                    help="print the run as JSON only: its summary and its steps as `rxlab bench --json` "
                         "prints them")
    sh.set_defaults(fn=_show)
    c = sub.add_parser("compare", help="the main job: a DB loaded and read through each backend by the "
                                       "release db_bench (plugin), one table (smoke: seconds, small: "
                                       "minutes)")
    c.add_argument("--scale", default="small", choices=list(COMPARE_SCALES),
                   help="smoke: 20K keys, 1 s per read step; small: 500K keys, 5 s")
    c.add_argument("--quiet", action="store_true", help="no progress bar")
    c.set_defaults(fn=_compare)


def _skipped(names: list[str]) -> None:
    for s in names:
        print(f"rxlab: skipped {s}", file=sys.stderr)


def _runs(a) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", store.SkippedRunsWarning)  # said below, one line each
        df = store.list_runs(a.dir, include_incomplete=a.all)
    skipped = df.attrs.get("skipped", [])
    if a.json:
        print(df.to_json(orient="records", indent=1))
    elif len(df):
        cols = ["run_id", "status", "backend", "benchmarks", "threads", "qps", "wall_s"]
        print(df[cols].to_string(index=False, na_rep="n/a", float_format=lambda v: f"{v:.1f}"))
    else:
        print("no runs" + (f" in {a.dir}" if a.dir else ""))
    _skipped(skipped)
    return 0


def _show(a) -> int:
    ref = a.run
    if ref == LATEST:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", store.SkippedRunsWarning)
            listed = store.list_runs(a.dir)
        if listed.empty:
            raise LookupError(f"no complete run in {a.dir or store.default_root()} (`rxlab runs --all` "
                              "lists failed ones)")
        ref = listed.sort_values("started_utc")["path"].iloc[-1]
    run = store.load_run(ref, a.dir)
    summary = store.run_summary(run.meta, run.steps)
    if a.json:
        out = {"run_id": run.run_id, "path": str(run.path), "status": run.status, **summary,
               "steps": step_records(run.steps) if not run.steps.empty else []}
        print(json.dumps(out, indent=1, default=str))
        return 0
    print(f"run {run.path}")
    print(f"status {run.status}  {summary_line(summary)}")
    if run.status not in ("complete",) and run.meta.get("error"):
        print(f"error: {run.meta['error'].get('type')}: {run.meta['error'].get('message')}")
    if run.steps.empty:
        print("no steps recorded")
        return 0
    print()
    print_steps(run.steps, False, False)
    return 0


def _compare(a) -> int:
    df = compare(a.scale, quiet=a.quiet)
    print(df.round(1).to_string(index=False))
    return 0
