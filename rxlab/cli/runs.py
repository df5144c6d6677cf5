"""Results: `rxlab runs` (the store's runs, told apart), `rxlab show RUN`, `rxlab compare` (the main job)."""
from __future__ import annotations

import datetime as _dt
import json
import re
import sys
import warnings

import pandas as pd

from rxlab.bench.quick_compare import SCALES as COMPARE_SCALES
from rxlab.bench.quick_compare import compare
from rxlab.cli.output import print_steps, step_records, summary_line
from rxlab.core import engines, executions, store

TITLE = "results"
WIDTH = 120   # `rxlab runs` fits its lines in this many columns (long cells end in "~")
DEFAULT_COLUMNS = ("run", "status", "backend", "benchmarks", "threads", "qps", "wall_s", "study",
                   "study_status")
_STUDY_ID = re.compile(r"(\d{8}T\d{6}[0-9a-f]{4})")   # rxlab.core.study.new_study_id in a run's name
LATEST = "latest"
STORE = "the results store (default: $RXLAB_RUNS, else data/runs in the clone)"


def add_parser(sub) -> None:
    r = sub.add_parser("runs", help="the stored runs: backend, benchmarks, threads, qps, wall time",
                       description="The runs in the store, oldest first: what tells them apart. A run that "
                                   "cannot be read is named on stderr and left out, never an error.")
    r.add_argument("--dir", help=STORE)
    r.add_argument("--all", action="store_true", help="also failed (.failed-) and killed (.tmp-) runs")
    r.add_argument("--json", action="store_true", help="print the list as JSON only")
    r.add_argument("--study", metavar="NAME_OR_ID",
                   help="only the runs of this study: a name such as io_efficiency, or a study id or its "
                        "prefix (default: every run)")
    r.add_argument("--backend", metavar="NAME",
                   help="only runs on this backend: posix, io_uring, default... (default: every backend)")
    r.add_argument("--since", metavar="WHEN",
                   help="only runs started since WHEN: a UTC date or time (2026-11-27, 2026-11-27T15:00) or "
                        "an age (30m, 2h, 3d); default: since the first")
    r.add_argument("--columns", metavar="A,B,...",
                   help=f"the columns to print (default: {','.join(DEFAULT_COLUMNS)}, status only with "
                        "--all); `--columns all` names every one")
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


def _engine_or_self(backend: str) -> str:
    """The engine of a stored backend string; the string itself when it is not one ("" for none)."""
    try:
        return engines.engine(backend)
    except ValueError:
        return backend


def _since(text: str) -> str:
    """--since as an ISO UTC time that started_utc compares with as text."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([smhd])", text.strip())
    if m:
        unit = {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
        t = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=float(m.group(1)) * unit)
    else:
        try:
            t = _dt.datetime.fromisoformat(text.strip().removesuffix("Z"))
        except ValueError:
            raise ValueError(f"--since {text}: expected a UTC date or time (2026-11-27, 2026-11-27T15:00) or "
                             "an age (30m, 2h, 3d)") from None
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def with_studies(df: pd.DataFrame, root) -> pd.DataFrame:
    """The runs with their study (name and id) and the study's status, from the store's manifests
    (a run a manifest does not list: by the study id in its name)."""
    by_run = executions.run_studies(root)
    by_id = {str(m["id"]): m for m in executions.read_manifests(root)}
    names, ids, states = [], [], []
    for rid, name in zip(df["run_id"].astype(str), df["name"].fillna("").astype(str), strict=True):
        if rid in by_run:
            n, sid, st = by_run[rid]
        else:
            m = _STUDY_ID.search(name)
            sid = m.group(1) if m else ""
            man = by_id.get(sid)
            n = str(man.get("study", "")) if man else ""
            st = executions.status(man) if man else ("no manifest" if sid else "")
        names.append(n)
        ids.append(sid)
        states.append(st)
    return df.assign(study=names, study_id=ids, study_status=states,
                     run=df["run_id"].astype(str).str.split("-").str[:2].str.join("-"))


def fit(df: pd.DataFrame, width: int = WIDTH) -> str:
    """The table as text in at most `width` columns: the widest text cells cut, ending in "~" (never the
    run ids: `rxlab show` takes them)."""
    text = df.to_string(index=False, na_rep="n/a", float_format=lambda v: f"{v:.1f}")
    cut = {c: max([len(str(c)), *map(len, df[c].astype(str))]) for c in df.columns
           if c not in ("run", "run_id") and not pd.api.types.is_numeric_dtype(df[c])}
    while text and max(map(len, text.splitlines())) > width and cut:
        c = max(cut, key=cut.get)
        over = max(map(len, text.splitlines())) - width
        keep = max(len(str(c)), 8, cut[c] - over)
        if keep >= cut[c]:
            del cut[c]
            continue
        cut[c] = keep
        df = df.assign(**{c: [v if len(v) <= keep else v[:keep - 1] + "~" for v in df[c].astype(str)]})
        text = df.to_string(index=False, na_rep="n/a", float_format=lambda v: f"{v:.1f}")
    return text


def _runs(a) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", store.SkippedRunsWarning)  # said below, one line each
        df = store.list_runs(a.dir, include_incomplete=a.all)
    skipped = df.attrs.get("skipped", [])
    df = with_studies(df, a.dir if a.dir else store.default_root())
    allowed = list(df.columns)
    # without --all every run listed is complete: its status column would say so on every line
    cols = [c for c in DEFAULT_COLUMNS if a.all or c != "status"]
    if a.columns:
        given_cols = [c.strip() for c in a.columns.split(",") if c.strip()]
        cols = allowed if a.columns.strip() == "all" else given_cols
        bad = [c for c in cols if c not in allowed]
        if bad or not cols:
            raise ValueError(f"--columns {a.columns}: {', '.join(bad) or 'none given'} unknown; allowed are "
                             f"{', '.join(allowed)} (or all)")
    given = len(df)
    if a.study:
        want = a.study.strip()
        df = df[(df["study"] == want) | (df["study_id"].str.startswith(want) & (df["study_id"] != ""))]
    if a.backend:
        base = df["backend"].fillna("").astype(str)
        want = a.backend.strip().lower()
        known = sorted(set(base[base != ""]))
        df = df[(base.str.lower() == want) | (base.map(_engine_or_self).str.lower() == want)]
    if a.since:
        df = df[df["started_utc"].fillna("").astype(str) >= _since(a.since)]
    if a.json:
        print(df[cols if a.columns else allowed].to_json(orient="records", indent=1))
    elif len(df):
        print(fit(df[cols]))
    elif given:
        hint = f" (backends in the store: {', '.join(known)})" if a.backend else ""
        print(f"no runs match{hint}; {given} runs in all")
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
