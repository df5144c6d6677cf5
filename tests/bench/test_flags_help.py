"""rxlab.bench.flags: every flag of `rxlab bench` and `rxlab fio` has a meaning and a default read
from where the default is set, and the defaults that differ from db_bench's are named."""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from rxlab.bench import fio, flags
from rxlab.bench.driver import STEP_FIELDS, RunSpec


def test_every_bench_flag_has_a_meaning_once():
    listed = [f for section in flags.BENCH_HELP.values() for f, _ in section]
    assert sorted(listed) == sorted(flags.BENCH_FLAGS)
    assert len(listed) == len(set(listed))
    assert all(meaning.strip() for section in flags.BENCH_HELP.values() for _, meaning in section)


def test_bench_defaults_come_from_where_they_are_set():
    fields = {f.name: f for f in dataclasses.fields(RunSpec)}
    for flag, (target, _) in flags.BENCH_FLAGS.items():
        text = flags.bench_default(flag)
        assert text, flag
        if target in fields and flag not in flags._OWN_DEFAULTS:
            v = fields[target].default
            assert text == (str(v).lower() if isinstance(v, bool) else str(v)), flag
        if target.startswith("step:"):
            assert target[5:] in STEP_FIELDS and target[5:] in flags.STEP_DEFAULTS, flag
    assert set(flags.STEP_DEFAULTS) <= set(STEP_FIELDS)


def test_the_defaults_unlike_db_bench_are_named_unless_given():
    every = flags.differences(frozenset())
    assert "--use_direct_reads=true (db_bench: false)" in every
    assert "--compression_type=none (db_bench: snappy)" in every
    assert "--block_align=true (db_bench: false)" in every
    given = flags.differences(frozenset({"use_direct_reads", "block_align"}))
    assert not [d for d in given if d.startswith(("--use_direct_reads=", "--block_align="))]
    assert len(given) == len(every) - 2
    _, cli = flags.bench_spec(["--benchmarks=readrandom", "--block_align", "false", "--num=5"])
    assert cli["given"] == {"benchmarks", "block_align", "num"}


def test_every_fio_flag_has_a_meaning_and_fio_runs_default():
    assert set(flags.FIO_HELP) == set(flags.FIO_FLAGS)
    sig = inspect.signature(fio.run).parameters
    for flag in flags.FIO_FLAGS:
        text = flags.fio_default(flag)
        assert text, flag
        if flag in sig and sig[flag].default not in (None, "", inspect.Parameter.empty):
            v = sig[flag].default
            assert text == (str(v).lower() if isinstance(v, bool) else str(v)), flag


@pytest.mark.parametrize("helper", [flags.bench_help, flags.fio_help])
def test_help_lines_stay_readable(helper):
    for line in helper().splitlines():
        if line.startswith("  --"):
            assert "(default: " in line or (line.strip().startswith("--") and len(line.split()) == 1), line
