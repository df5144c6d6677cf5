"""`rxlab study list|run|runs|resume` (any study from the shell, its executions, the rest of a stopped one)
and `rxlab clean` (scratch folders whose study's process is gone)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from rxlab import studies
from rxlab.core import executions, store
from rxlab.core.paths import REPO
from rxlab.core.study import SCALES
from rxlab.core.units import duration_words
from rxlab.runs.sweep import parse_value

TITLE = "studies"


def add_parser(sub) -> None:
    p = sub.add_parser("study",
                       help="list the seed studies, or run one (its runs, tables, figures, findings)",
                       description="The seed studies (rxlab/studies/): list them, or run one without its "
                                   "notebook.")
    ss = p.add_subparsers(dest="study_cmd", required=True, metavar="ACTION")
    ls = ss.add_parser("list", help="the studies: name, notebook, seed document, figures")
    ls.set_defaults(fn=_list)
    r = ss.add_parser("run", help="run one study; its tables, figures and findings go to --out",
                      formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    r.add_argument("name", help="a study name from `rxlab study list` (or its notebook's number)")
    r.add_argument("--scale", default="small", choices=SCALES,
                   help="smoke: seconds (a check); small: minutes; full: the largest the disk holds")
    r.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="a study parameter (YAML value: 1, true, [1, 2], posix); repeat for more; "
                        "`rxlab study run NAME --params` lists them")
    r.add_argument("--params", action="store_true",
                   help="print the study's parameters and defaults, run nothing")
    r.add_argument("--runs", metavar="DIR", help="results store (default: $RXLAB_RUNS or data/runs)")
    r.add_argument("--out", metavar="DIR",
                   help="where the figures, tables and findings go (default: data/studies/NAME/STUDY_ID); "
                        "never the repository's figures/")
    r.add_argument("--target", type=float, metavar="PCT",
                   help="a study measured in turns: the half-width (percent) every comparison's 95%% "
                        "interval must reach (default: the study's, 2)")
    r.add_argument("--budget", metavar="TIME",
                   help="a study measured in turns: the time its turns may take, e.g. 90s, 10m, 1.5h "
                        "(default: the scale's)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(fn=_run)
    h = ss.add_parser("runs", aliases=["history"],
                      help="the studies' executions in the store: id, study, scale, status, runs, start, "
                           "duration (a study whose process is gone: interrupted)")
    h.add_argument("--runs", metavar="DIR", help="results store (default: $RXLAB_RUNS or data/runs)")
    h.add_argument("--study", metavar="NAME", help="only this study's executions (default: every study's)")
    h.add_argument("--json", action="store_true", help="print them as JSON only")
    h.set_defaults(fn=_history)
    rs = ss.add_parser("resume", help="run the rest of an interrupted or failed study under its id, "
                                      "reusing the runs it finished")
    rs.add_argument("id", help="a study id from `rxlab study runs` (or a unique prefix of one)")
    rs.add_argument("--runs", metavar="DIR", help="results store (default: $RXLAB_RUNS or data/runs)")
    rs.add_argument("--out", metavar="DIR",
                    help="where the figures, tables and findings go (default: data/studies/NAME/STUDY_ID)")
    rs.add_argument("--quiet", action="store_true", help="no progress bar")
    rs.set_defaults(fn=_resume)
    c = sub.add_parser("clean", help="remove the scratch folders (DBs, files) that studies whose process is "
                                     "gone left behind; never a running study's",
                       description="Remove the scratch folders of studies whose process is gone (killed, "
                                   "crashed): under $RXLAB_SCRATCH (default <temp dir>/rxlab-scratch), and "
                                   "the paths in a db_dir that an interrupted study recorded. A running "
                                   "study's folders, and folders without an owner, are left alone.")
    c.add_argument("--runs", metavar="DIR", help="results store whose studies' db_dir paths are checked "
                                                 "too (default: $RXLAB_RUNS or data/runs)")
    c.set_defaults(fn=_clean)


def _list(a) -> int:
    rows = [s.describe_study() for s in studies.every()]
    print(pd.DataFrame(rows).to_string(index=False))
    return 0


def _parse_params(pairs: list[str]) -> dict:
    out = {}
    for item in pairs:
        name, eq, value = item.partition("=")
        if not eq or not name.strip():
            raise ValueError(f"-p {item!r}: expected NAME=VALUE, e.g. -p threads=2")
        if name in out:
            raise ValueError(f"-p {name}: given twice")
        out[name.strip()] = parse_value(value)
    return out


def _run(a) -> int:
    study = studies.get(a.name)
    if a.params:
        p = study.Params()
        for k, v in p.as_dict().items():
            print(f"{k} = {v!r}")
        return 0
    kw = _parse_params(a.param)
    if "scale" in kw:
        raise ValueError("-p scale=...: give the scale with --scale")
    for flag, value in (("target", a.target), ("budget", a.budget)):
        if value is None:
            continue
        if study.compare is None:
            raise ValueError(f"--{flag}: study {study.name} is not measured in turns (no comparisons to "
                             "resolve)")
        kw[flag] = value
    params = study.params(scale=a.scale, **kw)
    root = Path(a.runs) if a.runs else store.default_root()
    t0 = time.monotonic()
    try:
        result = study.run(params, root, progress=not a.quiet)
    except KeyboardInterrupt:
        return _interrupted(root)
    return _outputs(study, result, a, root, t0)


def _interrupted(root: Path) -> int:
    print(f"\nrxlab study: interrupted; the runs stored so far stay in {root} and the study is marked "
          "interrupted (never loaded as complete): `rxlab study runs` names it, `rxlab study resume ID` "
          "runs the rest", file=sys.stderr)
    return 130


def _outputs(study, result, a, root: Path, t0: float) -> int:
    out = Path(a.out) if a.out else REPO / "data" / "studies" / study.name / result.study
    done = study.save_outputs(result, out)
    print(f"study {study.name} {result.study}: {len(result.runs)} runs in {time.monotonic() - t0:.0f} s, "
          f"stored in {root}")
    print(f"figures ({len(done['figures'])}), tables and findings: {out}")
    for f in done["failed"]:
        print(f"  not drawn: {f}")
    text = study.findings(result)
    if text:
        print("\n" + text)
    return 0


def _history(a) -> int:
    root = Path(a.runs) if a.runs else store.default_root()
    df = executions.executions(root)
    if a.study:
        known = sorted(set(df["study"]) | {s.name for s in studies.every()})
        if a.study not in known:
            raise ValueError(f"--study {a.study}: not a study; known are {', '.join(known)}")
        df = df[df["study"] == a.study]
    if a.json:
        print(df.to_json(orient="records", indent=1))
        return 0
    if df.empty:
        print(f"no study executions in {root}")
        return 0
    show = df.assign(duration=df["duration_s"].map(duration_words), error=df["error"].str.slice(0, 40))
    cols = ["id", "study", "scale", "status", "runs", "rows", "start", "duration", "resumes", "error"]
    print(show[cols].to_string(index=False))
    return 0


def _resolve_id(root: Path, ref: str) -> dict:
    found = [m for m in executions.read_manifests(root) if str(m["id"]).startswith(ref)]
    exact = [m for m in found if m["id"] == ref]
    if exact or len(found) == 1:
        return (exact or found)[0]
    if not found:
        raise LookupError(f"study id {ref!r}: no such execution in {root} (`rxlab study runs` lists them)")
    some = ", ".join(m["id"] for m in found[:4])
    raise ValueError(f"study id {ref!r}: matches {len(found)} executions ({some}...); give more of it")


def _resume(a) -> int:
    root = Path(a.runs) if a.runs else store.default_root()
    m = _resolve_id(root, a.id)
    study = studies.get(str(m.get("study")))
    # the runs of the rows it finished: those are reused (setup, such as a DB load, runs again)
    before = sum(len(v) for v in (m.get("done") or {}).values())
    t0 = time.monotonic()
    try:
        result = study.resume(m["id"], root, progress=not a.quiet)
    except KeyboardInterrupt:
        return _interrupted(root)
    print(f"resumed {study.name} {result.study}: reused {before} runs, ran {len(result.runs) - before}")
    return _outputs(study, result, a, root, t0)


def _clean(a) -> int:
    root = Path(a.runs) if a.runs else store.default_root()
    removed = executions.clean_scratch(root)
    for path, size in removed:
        print(f"removed {path} ({size / 2**20:.1f} MiB)")
    total = sum(size for _, size in removed)
    print(f"{len(removed)} scratch folder(s) removed, {total / 2**20:.1f} MiB freed"
          if removed else f"nothing to remove (scratch: {executions.scratch_root()})")
    older = executions.unowned_temp([f"rxlab-{s.name}-" for s in studies.every()])
    for path, size in older:
        print(f"left alone: {path} ({size / 2**20:.1f} MiB), made by an older rxlab with no owner recorded; "
              "remove it yourself if no study of that rxlab runs")
    return 0
