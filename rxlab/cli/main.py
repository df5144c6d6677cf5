"""The `rxlab` command: one parser assembled from the command groups, everyday commands first.

Each group is a module of rxlab/cli/ with `TITLE` and `add_parser(sub)`,
which adds its commands to the subparsers `sub`. Adding a group is one
module and one line in GROUPS. A command's parser may set, with
set_defaults:

- `fn(args) -> int`: what it runs (argparse parsed its arguments);
- `raw(argv) -> int`: a command with its own flag dialect (`bench` and
  `fio` take db_bench's and fio's flags), given its arguments as they are;
- `passthrough="NAME"`: the arguments after `--` go, as they are, to
  args.NAME (`rxlab worker SCHEDULER -- --tls-ca-file ca.pem`);
- `renamed="rxlab NEW"`: an old name, run with a note naming the new one.

Bad input ends in one line on stderr and exit code 2, Ctrl-C in one line and
exit code 130: never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import textwrap

import rxlab
from rxlab.cli.common import (
    BAD_INPUT,
    EXIT_BAD_INPUT,
    HelpFormatter,
    Parser,
    fail,
    interrupted,
)
from rxlab.core.builds import active_build

__all__ = ["EXIT_BAD_INPUT", "GROUPS", "build_parser", "main", "version_text"]

# (module, the commands it adds), in the order `rxlab --help` lists them. A table of names, imported
# with importlib, rather than imports at the top: each group module imports what its commands need
# (pandas, Dask, the studies, matplotlib: about 1.5 s together), and `rxlab engines` or `rxlab runs`
# should not wait for what `rxlab report` needs. One command imports its group only; --help imports all.
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("rxlab.cli.bench", ("bench", "fio")),
    ("rxlab.cli.runs", ("runs", "show", "compare")),
    ("rxlab.cli.engines", ("engines",)),
    ("rxlab.cli.study", ("study", "clean")),
    ("rxlab.cli.ab", ("ab",)),
    ("rxlab.cli.figure", ("figure", "export", "archive", "import")),
    ("rxlab.cli.lab", ("lab",)),
    ("rxlab.cli.orchestrate", ("report", "sweep", "worker")),
    ("rxlab.cli.builds", ("rocksdb", "builds", "build-rocksdb", "build-module", "remove-build",
                          "plugin-path")),
    ("rxlab.cli.conformance", ("conformance",)),
    ("rxlab.cli.selfcheck", ("selfcheck", "bench-backends", "bench-driver", "bench-paired")),
)

DESCRIPTION = ("A research workbench for RocksDB IO performance: RocksDB on rxlab's IO engines, db_bench's "
               "workloads, a results store, studies and their figures.")


def version_text() -> str:
    return f"rxlab {rxlab.__version__} (RocksDB {rxlab.rocksdb_version}, build {active_build().name})"


class _Version(argparse.Action):
    """--version, computed only when asked (it reads the active build)."""

    def __init__(self, option_strings, dest, **kw):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit()


def _group_of(command: str) -> str | None:
    return next((m for m, cmds in GROUPS if command in cmds), None)


def build_parser(command: str | None = None) -> tuple[Parser, dict[str, argparse.ArgumentParser]]:
    """The parser with every group's commands (or, given a command, with its group's only: the others'
    imports are not needed to run it). Returns the parser and its commands by name."""
    ap = Parser(prog="rxlab", description=DESCRIPTION, formatter_class=HelpFormatter,
                usage="rxlab [-h] [--version] COMMAND ...")
    ap.add_argument("--version", action=_Version, help="rxlab's version and the RocksDB build it runs")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND", title="commands", prog="rxlab")
    group = _group_of(command) if command else None
    sections = []
    for module, commands in GROUPS:
        if group is not None and module != group:
            continue
        mod = importlib.import_module(module)
        before = len(sub._choices_actions)
        mod.add_parser(sub)
        added = {a.dest for a in sub._choices_actions[before:]}
        unknown = added - set(commands)
        if unknown:  # the table decides which group a command's name imports
            raise RuntimeError(f"{module} adds {sorted(unknown)}: list them in rxlab.cli.main.GROUPS")
        sections.append((getattr(mod, "TITLE", module.rsplit(".", 1)[-1]), sub._choices_actions[before:]))
    ap.epilog = _command_list(sections)
    sub.help = argparse.SUPPRESS
    sub._choices_actions = []  # listed by group in the epilog instead of one flat list
    return ap, dict(sub.choices)


def _command_list(sections) -> str:
    columns = min(100, shutil.get_terminal_size().columns - 2)  # argparse's width for the rest
    width = max((len(a.dest) for _, acts in sections for a in acts), default=8) + 4
    out = []
    for title, acts in sections:
        out.append(f"{title}:")
        for a in acts:
            out += textwrap.wrap(a.help, columns, initial_indent=f"  {a.dest:<{width - 2}}",
                                 subsequent_indent=" " * width)
        out.append("")
    out.append("`rxlab COMMAND --help`: what a command takes and its defaults. The documentation: docs/ "
               "(`make docs-serve`).")
    return "\n".join(out)


def _split_passthrough(argv: list[str]) -> tuple[list[str], list[str] | None]:
    if "--" not in argv:
        return argv, None
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--version"]:
        print(version_text())
        return 0
    command = next((a for a in argv if not a.startswith("-")), None)
    if command is not None and _group_of(command) is None:
        command = None  # unknown: the full parser names what is allowed
    ap, commands = build_parser(command if argv and argv[0] == command else None)
    chosen = commands.get(argv[0]) if argv else None
    raw = chosen.get_default("raw") if chosen is not None else None
    # db_bench's and fio's dialects name their tool in a failure (`rxlab bench: ...`); the rest say rxlab
    prog = f"rxlab {argv[0]}" if raw is not None else "rxlab"
    try:
        if raw is not None:
            return raw(argv[1:]) or 0
        head, tail = _split_passthrough(argv)
        a, extra = ap.parse_known_args(head)
        if extra:  # said by the command's own parser, which knows what it passes on
            commands[a.cmd].error(f"unrecognized arguments: {' '.join(extra)}")
        target = commands[a.cmd].get_default("passthrough")
        if tail is not None:
            if not target:
                ap.error(f"'--' passes options on only for `rxlab worker`, not `rxlab {a.cmd}`")
            setattr(a, target, tail)
        elif target:
            setattr(a, target, [])
        if getattr(a, "renamed", None):
            print(f"rxlab: `rxlab {a.cmd}` is now `{a.renamed}` (the old name goes away in rxlab 0.3)",
                  file=sys.stderr)
        return a.fn(a) or 0
    except KeyboardInterrupt as e:
        return interrupted(prog, e)
    except BAD_INPUT as e:
        return fail(prog, e)


if __name__ == "__main__":
    sys.exit(main())
