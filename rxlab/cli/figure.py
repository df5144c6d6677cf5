"""Figures for a paper: `rxlab figure list|redraw`, `rxlab export`, `rxlab archive`, `rxlab import`."""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from rxlab.core import archive, figures, store
from rxlab.core.figures import FORMATS, STYLES, WIDTHS
from rxlab.runs import export as exporting
from rxlab.runs import figures as saved

TITLE = "figures for a paper"


def _dir_help() -> str:
    return "the figures' folder (default: $RXLAB_FIGURES or the clone's figures/)"


def add_parser(sub) -> None:
    fmt = argparse.ArgumentDefaultsHelpFormatter
    p = sub.add_parser("figure", help="list the saved figures, or redraw them from their saved tables (no rerun)",
                       description="Saved figures: each has its table (NAME.csv) and sidecar (NAME.json) beside it.")
    fs = p.add_subparsers(dest="figure_cmd", required=True, metavar="ACTION")
    ls = fs.add_parser("list", help="every saved figure: study, scale, date, table rows, runs, redrawable")
    ls.add_argument("--dir", help=_dir_help())
    ls.set_defaults(fn=_list)
    rd = fs.add_parser("redraw", help="draw figures again from their saved tables, at another width, aspect "
                                      "or style", formatter_class=fmt)
    rd.add_argument("names", nargs="+", metavar="NAME", help="figure names (`rxlab figure list`)")
    rd.add_argument("--dir", help=_dir_help())
    rd.add_argument("--out", help="write the redrawn figures here under their own names (default: beside the "
                                  "originals in --dir, as NAME-page-slides.* or NAME-redrawn.*)")
    rd.add_argument("--replace", action="store_true", help="write over the originals in --dir (what measured "
                                                           "them stays in their sidecars)")
    rd.add_argument("--width", choices=list(WIDTHS), help="a paper column (3.3 in) or the page (7 in); "
                                                          "default: the figure's own")
    rd.add_argument("--aspect", type=float, help="height / width, 0.1 to 3; default: the figure's own")
    rd.add_argument("--format", default=",".join(FORMATS), help=f"comma-separated, of {', '.join(FORMATS)}")
    rd.add_argument("--style", choices=list(STYLES), default="paper", help="paper, or slides (larger text)")
    rd.set_defaults(fn=_redraw)
    ex = sub.add_parser("export", help="a folder for a paper or a colleague: figures, their data, tables, "
                                       "provenance README", formatter_class=fmt)
    ex.add_argument("dest", help="a new (or empty) folder; nothing is overwritten")
    ex.add_argument("--figures", nargs="+", metavar="NAME", help="only these figures (default: all)")
    ex.add_argument("--study", metavar="ID", help="only the figures of this study id")
    ex.add_argument("--with-runs", action="store_true",
                    help="also each study's runs as an archive (to re-analyse from the raw runs)")
    ex.add_argument("--dir", help=_dir_help())
    ex.add_argument("--runs", help="the results store for --with-runs (default: $RXLAB_RUNS or data/runs)")
    ex.set_defaults(fn=_export)
    ar = sub.add_parser("archive", help="pack a study's runs (Parquet) and manifest into one .tar.gz",
                        formatter_class=fmt)
    ar.add_argument("study_id", help="a study id (its figures' sidecars and `rxlab runs` name it)")
    ar.add_argument("--out", help="the archive file (default: ./STUDY_ID.rxlab.tar.gz); never overwritten")
    ar.add_argument("--runs", help="the results store (default: $RXLAB_RUNS or data/runs)")
    ar.set_defaults(fn=_archive)
    im = sub.add_parser("import", help="load an archive's runs into a results store (runs already there are "
                                       "kept)", formatter_class=fmt)
    im.add_argument("file", help="an archive made by `rxlab archive`")
    im.add_argument("--runs", help="the results store (default: $RXLAB_RUNS or data/runs)")
    im.set_defaults(fn=_import)


def _list(a) -> int:
    df = saved.list_figures(a.dir)
    print(df.to_string(index=False) if len(df) else f"no saved figures in {a.dir or figures.figures_dir()}")
    return 0


def _redraw(a) -> int:
    t0 = time.monotonic()
    formats = [f.strip() for f in a.format.split(",") if f.strip()]
    done = saved.redraw(a.names, a.dir, width=a.width, aspect=a.aspect, style=a.style, formats=formats,
                        out=a.out, replace=a.replace)
    for name, paths in done.items():
        print(f"{name}: " + " ".join(str(p) for k, p in paths.items() if k in formats))
    print(f"redrawn from their tables in {time.monotonic() - t0:.1f} s")
    return 0


def _export(a) -> int:
    done = exporting.export(a.dest, a.figures, study_id=a.study, figures_dir=a.dir, runs_root=a.runs,
                            with_runs=a.with_runs)
    print(f"{a.dest}: {len(done['figures'])} figures, {len(done['tables'])} table files, "
          f"{len(done['archives'])} run archives, README.md")
    return 0


def _archive(a) -> int:
    root = Path(a.runs) if a.runs else store.default_root()
    out = archive.archive_study(a.study_id, root, a.out)
    print(f"{out}: {len(archive.study_runs(a.study_id, root))} runs of study {a.study_id}")
    return 0


def _import(a) -> int:
    df = archive.import_archive(a.file, a.runs)
    print(df.to_string(index=False))
    return 0
