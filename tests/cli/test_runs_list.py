"""`rxlab runs`: each run's study and the study's status, the filters --study, --backend, --since, the
--columns to print, and lines that fit 120 columns.

The store is written by the store's own writer (rxlab.core.store.RunWriter) with a few steps each, and a
manifest by the study protocol's writer: what is checked is the listing, not a measurement.
"""
from __future__ import annotations

import json

import pytest
from helpers_cli import describe, run_cli

from rxlab.core import executions, store
from rxlab.core.study import _write_manifest

pytestmark = pytest.mark.timeout(120)

FP = {"hostname": "testhost", "kernel": "6.x", "cpu_model": "cpu", "cores": 2}
SID = "20261127T101500ab12"


def _run(root, name, backend, benchmarks=("fillseq", "flush", "readrandom")):
    with store.RunWriter(root, {"name": name, "backend": backend, "threads": 1}, FP) as w:
        for b in benchmarks:
            w.add_step({"name": b, "ops": 1000, "wall_s": 2.0, "threads": 1})
    return w.run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    long_name = f"ioeff-{SID}-r0-t1-d0-ba1-with-a-long-name-that-makes-the-id-long"
    many = ("fillseq", "flush", "compact", "waitforcompaction", "readrandom", "readseq", "seekrandom")
    studied = [_run(root, long_name, "io_uring?sqpoll=1"),
               _run(root, f"ioeff-{SID}-r0-t2-d0-ba0", "posix", many)]
    # a study that died: "running", its owner a process that is gone
    gone = {**executions.owner(), "pid": 2**22 + 1}
    _write_manifest(root, SID, {"study": "io_efficiency", "id": SID, "status": "running", "scale": "smoke",
                                "runs": studied, "owner": gone, "seconds": 12.5})
    lone = _run(root, "bench-by-hand", "default")
    return root, studied, lone


def test_runs_show_their_study_and_its_status_in_120_columns(runs):
    root, studied, lone = runs
    r = run_cli("runs", "--dir", root)
    assert r.returncode == 0, describe(r)
    lines = r.stdout.splitlines()
    assert max(map(len, lines)) <= 120, r.stdout
    assert lines[0].split() == ["run", "backend", "benchmarks", "threads", "qps", "wall_s", "study",
                                "study_status"]
    assert run_cli("runs", "--dir", root, "--all").stdout.split()[:3] == ["run", "status", "backend"]
    # `run` is the id's unique prefix (time and random part): what `rxlab show` takes
    for rid in [*studied, lone]:
        assert any(ln.startswith("-".join(rid.split("-")[:2])) for ln in lines[1:]), rid
    shown = run_cli("show", "-".join(studied[0].split("-")[:2]), "--dir", root)
    assert shown.returncode == 0, describe(shown)
    listed = json.loads(run_cli("runs", "--dir", root, "--json").stdout)
    by_id = {x["run_id"]: x for x in listed}
    assert {(by_id[r]["study"], by_id[r]["study_id"], by_id[r]["study_status"]) for r in studied} == \
        {("io_efficiency", SID, "interrupted")}
    assert (by_id[lone]["study"], by_id[lone]["study_status"]) == ("", "")


def test_filters_and_columns(runs):
    root, studied, lone = runs

    def ids(*args):
        r = run_cli("runs", "--dir", root, *args, "--json")
        assert r.returncode == 0, describe(r)
        return sorted(x["run_id"] for x in json.loads(r.stdout))

    assert ids("--study", "io_efficiency") == sorted(studied)
    assert ids("--study", SID[:10]) == sorted(studied)
    assert ids("--backend", "io_uring") == [studied[0]]  # the engine, whatever its options
    assert ids("--backend", "posix") == [studied[1]]
    assert ids("--since", "1h") == sorted([*studied, lone])
    assert ids("--since", "2099-01-01") == []
    assert ids("--backend", "posix", "--since", "2026-01-01T00:00") == [studied[1]]
    r = run_cli("runs", "--dir", root, "--backend", "nosuch")
    assert r.returncode == 0 and r.stdout.startswith("no runs match (backends in the store: default, ")
    r = run_cli("runs", "--dir", root, "--columns", "run_id,qps")
    assert r.stdout.splitlines()[0].split() == ["run_id", "qps"]
    assert len(r.stdout.splitlines()) == 4
    for bad, want in ((("--columns", "run_id,nosuch"),
                       "rxlab: --columns run_id,nosuch: nosuch unknown; allowed are run_id, status, "),
                      (("--since", "yesterday"), "rxlab: --since yesterday: expected a UTC date or time")):
        r = run_cli("runs", "--dir", root, *bad)
        assert r.returncode == 2 and r.stderr.startswith(want), describe(r)
        assert len(r.stderr.splitlines()) == 1, describe(r)
