"""The command line as a newcomer reads it: `rxlab --help` grouped with the everyday commands first,
every option with its meaning and default, `--version`, `rxlab engines`, the old names, and no
abbreviations. The parsers are checked in-process (they are what `rxlab` runs); a few commands run as
subprocesses of the installed `rxlab`, as a user runs them.
"""
from __future__ import annotations

import argparse
import importlib
import re
import subprocess
import sys

import pytest
from helpers_cli import run_cli

import rxlab
from rxlab.bench import flags
from rxlab.bench.driver import RunSpec
from rxlab.core import engines

cli = importlib.import_module("rxlab.cli.main")  # the module: the package's attribute `main` is the function

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def top_help() -> str:
    r = run_cli("--help")
    assert r.returncode == 0, r.stderr
    return r.stdout


def _listed(text: str) -> list[str]:
    """The command names in the order `rxlab --help` lists them."""
    return [m.group(1) for m in re.finditer(r"^  ([a-z][a-z-]+)  ", text, re.M)]


def test_everyday_commands_come_first_and_self_checks_last(top_help):
    listed = _listed(top_help)
    assert listed[:6] == ["bench", "fio", "runs", "show", "compare", "engines"], listed
    assert listed.index("study") < listed.index("report") < listed.index("sweep") < listed.index("worker")
    assert listed.index("worker") < listed.index("rocksdb") < listed.index("builds")
    assert listed[-1] == "selfcheck"
    # the old names run but are not listed
    assert not {"bench-backends", "bench-driver", "bench-paired"} & set(listed)
    # grouped under what a user does
    for title in ("measure:", "results:", "RocksDB builds:", "self-checks (tens of minutes, GiB of disk):"):
        assert f"\n{title}\n" in top_help, title


def test_every_group_adds_exactly_the_commands_it_is_listed_with():
    """Adding a group is one module and one line in GROUPS: the line names the commands the module adds
    (so that one command imports only its group)."""
    seen = []
    for module, commands in cli.GROUPS:
        mod = importlib.import_module(module)
        assert callable(mod.add_parser), module
        ap = argparse.ArgumentParser()
        sub = ap.add_subparsers()
        mod.add_parser(sub)
        assert set(sub.choices) == set(commands), module
        seen += commands
    assert len(seen) == len(set(seen)), "a command in two groups"


def _options(p: argparse.ArgumentParser, name: str):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sub, sp in a.choices.items():
                yield from _options(sp, f"{name} {sub}")
        elif a.option_strings and a.dest not in ("help",) and "--version" not in a.option_strings:
            yield name, a, p._get_formatter()._get_help_string(a)


def test_every_option_has_a_meaning_and_its_default():
    ap, _ = cli.build_parser()
    checked = 0
    for name, action, text in _options(ap, "rxlab"):
        assert action.help and action.help is not argparse.SUPPRESS, (name, action.option_strings)
        assert "default" in text, f"{name} {action.option_strings[-1]}: {text!r} says no default"
        checked += 1
    assert checked > 60


def test_a_command_takes_no_abbreviation():
    """`--host 127.0.0.1` is not `--host-id 127.0.0.1`, and one bad argument is one line, exit 2."""
    r = run_cli("worker", "tcp://127.0.0.1:8786", "--host", "127.0.0.1", "--dry-run")
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "unrecognized arguments: --host 127.0.0.1" in lines[0], r.stderr
    ap, _ = cli.build_parser()
    assert all(not p.allow_abbrev for p in [ap, *_subparsers(ap)])


def _subparsers(p):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                yield sp
                yield from _subparsers(sp)


def test_version():
    r = run_cli("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == cli.version_text()
    assert r.stdout.startswith(f"rxlab {rxlab.__version__} (RocksDB {rxlab.rocksdb_version}, build ")


def test_report_help_says_its_scale_and_that_it_overwrites_figures():
    r = run_cli("report", "--help")
    text = " ".join(r.stdout.split())
    assert "(default: small)" in text and "overwrites the figures committed in this clone" in text
    assert "OVERWRITE the clone's figures/" in " ".join(run_cli("--help").stdout.split())


def test_bench_and_fio_help_list_every_flag_with_meaning_and_default():
    for cmd, table, text in (("bench", flags.BENCH_FLAGS, flags.bench_help()),
                             ("fio", flags.FIO_FLAGS, flags.fio_help())):
        r = run_cli(cmd, "--help")
        assert r.returncode == 0 and r.stdout.strip() == text.strip(), cmd
        lines = text.replace("\n" + " " * 30, " ").splitlines()
        for flag in table:
            line = next((ln for ln in lines if ln.startswith(f"  --{flag} ") or ln == f"  --{flag}"), None)
            assert line is not None, f"{cmd} --help does not list --{flag}"
            assert "(default: " in line and len(line.split()) > 3, line


def test_bench_help_defaults_are_runspecs_and_say_where_db_bench_differs():
    text = flags.bench_help()
    spec = RunSpec(db="x")
    for flag, field in (("num", "num"), ("value_size", "value_size"), ("block_size", "block_size"),
                        ("cache_size", "cache_size"), ("threads", "threads")):
        assert f"(default: {getattr(spec, field)}" in next(ln for ln in text.splitlines()
                                                         if ln.startswith(f"  --{flag} "))
    for flag, theirs in (("use_direct_reads", "false"), ("compression_type", "snappy"),
                         ("block_align", "false")):
        line = next(ln for ln in text.splitlines() if ln.startswith(f"  --{flag} "))
        assert f"db_bench: {theirs}" in line, line


def test_engines_lists_shared_options_once_and_default():
    r = run_cli("engines")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    every = engines.engines()
    shared = engines.shared_options(every)
    assert "depth" in shared and "delay_us" in shared and "sqpoll" not in shared
    for opt in shared:
        assert len(re.findall(rf"^\s+{re.escape(opt)}=", out, re.M)) == 1, opt
    assert re.search(r"^default: RocksDB's own", out, re.M)
    assert re.search(r"^\s+io_uring=0 ", out, re.M)  # default's one option
    assert re.search(r"^\s+sqpoll=0 ", out, re.M)  # io_uring's own
    for e in every:
        assert re.search(rf"^{re.escape(e['name'])}: ", out, re.M), e["name"]


def test_one_command_imports_only_its_group():
    """`rxlab engines` does not import what `rxlab report` or the studies need."""
    code = ("import sys; from rxlab.cli import main; main(['engines']); "
            "print(sorted(m for m in sys.modules if m.startswith(('rxlab.cli.', 'rxlab.runs', "
            "'rxlab.studies', 'pandas', 'matplotlib'))))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    loaded = eval(r.stdout.strip().splitlines()[-1])  # a list literal printed above
    assert "rxlab.cli.engines" in loaded
    assert not [m for m in loaded if m.startswith(("rxlab.runs", "rxlab.studies", "pandas", "matplotlib",
                                                   "rxlab.cli.orchestrate"))], loaded
