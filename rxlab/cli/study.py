"""`rxlab study list` and `rxlab study run NAME [--scale S] [-p NAME=VALUE ...]`: any study, from the shell."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from rxlab import studies
from rxlab.core import store
from rxlab.core.paths import REPO
from rxlab.core.study import SCALES
from rxlab.runs.sweep import parse_value

TITLE = "studies"


def add_parser(sub) -> None:
    p = sub.add_parser("study", help="list the seed studies, or run one (its runs, tables, figures, findings)",
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
    r.add_argument("--params", action="store_true", help="print the study's parameters and defaults, run nothing")
    r.add_argument("--runs", metavar="DIR", help="results store (default: $RXLAB_RUNS or data/runs)")
    r.add_argument("--out", metavar="DIR",
                   help="where the figures, tables and findings go (default: data/studies/NAME/STUDY_ID); "
                        "never the repository's figures/")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(fn=_run)


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
    params = study.params(scale=a.scale, **kw)
    root = Path(a.runs) if a.runs else store.default_root()
    t0 = time.monotonic()
    try:
        result = study.run(params, root, progress=not a.quiet)
    except KeyboardInterrupt:
        print(f"\nrxlab study run: interrupted; the runs stored so far stay in {root} and the study is marked "
              "interrupted (never loaded as complete)", file=sys.stderr)
        return 130
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
