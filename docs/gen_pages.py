"""The documentation's generated pages, written from the code at build time (mkdocs-gen-files).

Nothing here is typed by hand twice: the command line from rxlab's argparse
parsers, the bench and fio flags from rxlab.bench.flags's tables, the engine
options from the compiled engines (rxlab.core.engines), the studies from
their registry (rxlab.studies.every()), the findings index from the files in
docs/findings/. A change in the code changes the pages on the next build.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

import mkdocs_gen_files

from rxlab import studies
from rxlab.bench import flags
from rxlab.cli.main import GROUPS, build_parser
from rxlab.core import engines

DOCS = Path(__file__).resolve().parent
os.environ["COLUMNS"] = "100"  # argparse wraps its help to the terminal's width: one width for every build


def _block(text: str) -> str:
    return f"```text\n{text.rstrip()}\n```\n"


def _subcommands(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def cli_page() -> str:
    ap, commands = build_parser()
    out = ["# Command line\n",
           "Generated from rxlab's argparse parsers (`rxlab/cli/`) at every build of these pages. "
           "`bench` and `fio` take db_bench's and fio's flags: they are on [their own page](flags.md).\n",
           "## rxlab\n", _block(ap.format_help())]
    renamed = []
    for _, names in GROUPS:
        for name in names:
            p = commands.get(name)
            if p is None:
                continue
            if p.get_default("renamed"):
                renamed.append(f"`rxlab {name}` (now `{p.get_default('renamed')}`)")
                continue
            out.append(f"## rxlab {name}\n")
            if p.get_default("raw"):
                out.append(f"Takes {'db_bench' if name == 'bench' else 'fio'}'s flags: see "
                           f"[rxlab {name} flags](flags.md#rxlab-{name}).\n")
                continue
            out.append(_block(p.format_help()))
            for sub, sp in _subcommands(p).items():
                out += [f"### rxlab {name} {sub}\n", _block(sp.format_help())]
    if renamed:
        out.append("## Old names\n")
        out.append("rxlab 0.1's names still run, with a note naming the new command, until rxlab 0.3: "
                   + ", ".join(renamed) + ".\n")
    return "\n".join(out)


def flags_page() -> str:
    return "\n".join([
        "# rxlab bench and rxlab fio flags\n",
        "Generated from `rxlab/bench/flags.py` (meanings) and the defaults where they are set: `RunSpec` "
        "(`rxlab/bench/driver.py`), the C++ step (`ext/bench/workloads.h`), `rxlab.bench.fio.run`'s "
        "signature. The same text is `rxlab bench --help` and `rxlab fio --help`.\n",
        "## rxlab bench\n", _block(flags.bench_help()),
        "## rxlab fio\n", _block(flags.fio_help())])


def _table(opts: dict) -> list[str]:
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{k}` | `{d}` | {t.replace('|', '/')} |" if d != "" else f"| `{k}` | (none) | {t} |"
             for k, (d, t) in opts.items()]
    return rows


def engines_page() -> str:
    every = engines.engines()
    shared = engines.shared_options(every)
    rx = [e["name"] for e in every if e["name"] != engines.DEFAULT["name"]]
    out = ["# Engine options\n",
           "Generated from the engines themselves (`rxlab._core.engines()`, declared next to each engine "
           "in `ext/fs/`) and `rxlab.core.engines` for RocksDB's own file system. The same list is "
           "`rxlab engines`. A backend is a URI: `io_uring?registered_files=1&fixed_buffers=1` "
           "(`rxlab://` in front for db_bench's `--fs_uri`).\n",
           f"## Options of every rxlab engine\n\n{', '.join(rx)} take these.\n", *_table(shared), ""]
    for e in every:
        own = e["options"] if e["name"] == engines.DEFAULT["name"] else engines.own_options(e, shared)
        out += [f"## {e['name']}\n", f"{e['help']}.\n"]
        out += [*_table(own), ""] if own else ["No options beyond the shared ones.\n"]
    return "\n".join(out)


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        return repr(f.default)
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return repr(f.default_factory())  # type: ignore[misc]
    return "(required)"


def studies_page() -> str:
    out = ["# Studies\n",
           "Generated from the registry (`rxlab.studies.every()`): every study under `rxlab/studies/`, in "
           "its notebook's order. `rxlab study list` prints the same; `rxlab study run NAME --params` its "
           "parameters. What a study is: [Studies and the Study protocol](../concepts/studies.md).\n"]
    for s in studies.every():
        out += [f"## {s.name}\n", f"{s.title}\n",
                f"- notebook: `notebooks/{s.notebook}.ipynb`",
                f"- seed document: {s.seed or 'none'}",
                f"- published tables: {'; '.join(s.published) or 'none'}",
                f"- figures: {', '.join(f'`{f}`' for f in s.figures) or 'none'}",
                f"- tables: {', '.join(f'`{t}`' for t in s.tables) or 'none'}", ""]
        fields = dataclasses.fields(s.Params)
        out += ["| parameter | default |", "| --- | --- |"]
        out += [f"| `{f.name}` | `{_default(f)}` |" for f in fields]
        out.append("")
    return "\n".join(out)


def _title(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def findings_page() -> str:
    files = sorted((p for p in (DOCS / "findings").glob("*.md") if p.name != "index.md"),
                   key=lambda p: p.name, reverse=True)
    out = ["# Findings\n",
           "Dated notes of what the measurements showed on a given day, newest first: each keeps the "
           "numbers and their provenance as they were written. Generated from the files in "
           "`docs/findings/` (a new one is listed on the next build).\n"]
    out += [f"- [{_title(p)}]({p.name})" for p in files] or ["No findings yet."]
    return "\n".join(out) + "\n"


PAGES = {
    "reference/cli.md": cli_page,
    "reference/flags.md": flags_page,
    "reference/engines.md": engines_page,
    "reference/studies.md": studies_page,
    "findings/index.md": findings_page,
}

for _path, _make in PAGES.items():
    with mkdocs_gen_files.open(_path, "w") as _fh:
        _fh.write(_make())
