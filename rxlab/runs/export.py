"""A folder for a paper or a colleague: chosen figures, their tables and sidecars, the seeds' tables,
and a short provenance README; optionally the runs themselves as an archive.

Everything in it is portable (run ids, build keys, study ids: no machine
path), and every figure in it can be redrawn there with `rxlab figure redraw
NAME --dir FOLDER` from its table alone.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from rxlab import studies
from rxlab.core import archive, figures, store
from rxlab.core.tables import PREAMBLE
from rxlab.runs.figures import list_figures

__all__ = ["export"]

EXTS = ("pdf", "svg", "png", "csv", "json")


def _chosen(listing: pd.DataFrame, names: Iterable[str] | None, study_id: str | None, src: Path) -> list[str]:
    have = set(listing["figure"])
    if names:
        names = list(names)
        missing = [n for n in names if n not in have]
        if missing:
            raise ValueError(f"figure {missing[0]!r}: not in {src} (`rxlab figure list` shows them)")
        return names
    if study_id:
        picked = [n for n in listing["figure"]
                  if figures.read_sidecar(n, src).get("study_id") == study_id]
        if not picked:
            raise ValueError(f"study {study_id!r}: no saved figure of it in {src}")
        return picked
    return list(listing["figure"])


# What tells one machine from another (rxlab's and Python's versions may differ on the same machine).
MACHINE_KEYS = ("machine", "os", "cpu_model", "cores", "memory_kb", "kernel")


def _machine_key(m: dict) -> str:
    env = m.get("environment") or {}
    return json.dumps({k: env.get(k) for k in MACHINE_KEYS if env.get(k) is not None}, sort_keys=True)


def _machine_words(env: dict) -> str:
    """A machine in one line a reader can tell apart: CPUs, memory, kernel (no host name)."""
    mem = f"{env['memory_kb'] / 2**20:.0f} GiB" if env.get("memory_kb") else ""
    parts = [f"{env['cores']} CPUs" if env.get("cores") else "", env.get("cpu_model") or "", mem,
             f"kernel {env['kernel']}" if env.get("kernel") else ""]
    return ", ".join(p for p in parts if p) or "not recorded"


def _provenance(sides: dict[str, dict]) -> str:
    measured = {n: figures.measured(s) for n, s in sides.items()}
    # each machine that measured a figure gets a letter; the table says which measured which
    machines: dict[str, str] = {}
    for m in measured.values():
        machines.setdefault(_machine_key(m), chr(ord("A") + len(machines)))
    lines = ["# Figures and their data", "",
             "Made with rxlab. Each figure comes as pdf, svg and png, the tidy table it was drawn from "
             "(`NAME.csv`) and a sidecar (`NAME.json`) naming the study, its runs (ids in the results "
             "store), the RocksDB builds, the scale, the published sources, what measured it (`measured`: "
             "rxlab commit, machine, when) and what drew this file (`drawn`).", "",
             "Redraw one from its table alone (no rerun), e.g. at page width for slides; the redraw is "
             "written beside it (`NAME-page-slides.*`), `--replace` writes over it:", "",
             "    rxlab figure redraw NAME --dir . --width page --style slides", "",
             "| figure | study | study id | scale | RocksDB builds | runs | measured on | measured (UTC) "
             "| rxlab commit |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, s in sides.items():
        m = measured[name]
        commit = (m.get("rxlab_commit") or "")[:10] + (" (dirty)" if m.get("git_dirty") else "")
        machine = machines[_machine_key(m)]
        lines.append(f"| {name} | {s.get('study') or ''} | {s.get('study_id') or ''} | "
                     f"{s.get('scale') or ''} | {', '.join(s.get('rocksdb_builds') or [])} | "
                     f"{len(s.get('runs') or [])} | "
                     f"machine {machine} | {m.get('utc') or ''} | {commit} |")
    lines += ["", "## Machines", ""]
    for key, letter in machines.items():
        env = json.loads(key)
        figs = [n for n in sides if _machine_key(measured[n]) == key]
        lines += [f"### Machine {letter}: {_machine_words(env)}", "", f"Measured: {', '.join(figs)}.", ""]
        lines += [f"- {k}: {v}" for k, v in env.items() if v not in (None, "")] + [""]
    lines += ["## Tables", "",
              "`tables/NAME.tex` are whole tables with a caption and `\\label{tab:NAME}`, to `\\input` "
              "in a paper; the longer ones are longtables that break across pages. The paper's preamble "
              "needs:", "", *[f"    {ln}" for ln in PREAMBLE.splitlines()], "",
              "`NAME.md` is the same table in Markdown and `NAME.csv` its data at full precision.", ""]
    made = sorted({(s.get("study"), s.get("scale")) for s in sides.values() if s.get("study")})
    lines += ["## Commands that made them", ""]
    for study_name, scale in made:
        try:
            nb = studies.get(study_name).notebook
        except ValueError:
            nb = "?"
        lines.append(f"- `rxlab study run {study_name} --scale {scale}` (or notebooks/{nb}.ipynb with "
                     f"`scale=\"{scale}\"`; `rxlab report --scale {scale} --only {nb.split('_')[0]}`)")
    return "\n".join(lines) + "\n"


def export(dest: str | os.PathLike, names: Iterable[str] | None = None, *, study_id: str | None = None,
           figures_dir: str | os.PathLike | None = None, runs_root: str | os.PathLike | None = None,
           with_runs: bool = False) -> dict[str, list[str]]:
    """Copy the chosen figures (default: all; or those of `study_id`) into `dest` (a new or empty folder),
    with their tables, sidecars, the studies' tables (tables/) and a README; `with_runs` adds each
    study's runs as an archive (runs/<study id>.rxlab.tar.gz) from the store `runs_root`."""
    src = Path(figures_dir) if figures_dir is not None else figures.figures_dir()
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"{dest}: exists and is not an empty folder; an export never overwrites")
    listing = list_figures(src)
    if listing.empty:
        raise ValueError(f"{src}: no saved figures")
    chosen = _chosen(listing, names, study_id, src)
    dest.mkdir(parents=True, exist_ok=True)
    done: dict[str, list[str]] = {"figures": [], "tables": [], "archives": []}
    sides = {}
    for n in chosen:
        for ext in EXTS:
            f = src / f"{n}.{ext}"
            if f.is_file():
                shutil.copy2(f, dest / f.name)
        sides[n] = figures.read_sidecar(n, src)
        done["figures"].append(n)
    study_names = {s.get("study") for s in sides.values() if s.get("study")}
    # by each study's own table names: a prefix would also take io_efficiency_tuning's for io_efficiency
    stems = {f"{s}_{n}" for s in study_names if s in studies.names() for n in studies.get(s).tables}
    tables = src / "tables"
    for t in sorted(tables.glob("*")) if tables.is_dir() else []:
        if t.stem in stems:
            (dest / "tables").mkdir(exist_ok=True)
            shutil.copy2(t, dest / "tables" / t.name)
            done["tables"].append(t.name)
    if with_runs:
        root = Path(runs_root) if runs_root is not None else store.default_root()
        (dest / "runs").mkdir(exist_ok=True)
        for sid in sorted({s.get("study_id") for s in sides.values() if s.get("study_id")}):
            out = archive.archive_study(sid, root, dest / "runs" / f"{sid}.rxlab.tar.gz")
            done["archives"].append(out.name)
    (dest / "README.md").write_text(_provenance(sides))
    return done
