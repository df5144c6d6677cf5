"""`rxlab selfcheck parity` end to end at smoke scale: the release db_bench through the plugin, real RocksDB.

Two workloads (a writer from an empty DB and a reader of the loaded DB), two engines (posix, and
io_uring with its best-options column), tiny --num and a short budget: the cells are far from
resolved, and what is checked is the matrix's shape, its A/A control and its outputs.
"""
from __future__ import annotations

import json

import pytest
from helpers_cli import describe, run_cli

from rxlab.core import engines


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("parity")
    r = run_cli("selfcheck", "parity", "--workloads", "fillseq,readrandom", "--engines", "posix,io_uring",
                "--threads", "1", "--num", "3000", "--duration", "1", "--target", "50", "--budget", "60s",
                "--min-turns", "2",
                "--json", "--out", out, "--dir", out, timeout=240)
    assert r.returncode == 0, describe(r)
    return json.loads(r.stdout), out, r


def test_the_matrix_has_every_cell_from_the_registry(smoke):
    doc, out, _ = smoke
    io_best = engines.best("io_uring")
    assert io_best is not None and "registered_files=1" in io_best
    assert list(doc["columns"]) == ["default", "posix", "io_uring", "io_uring+best"]
    assert doc["columns"]["io_uring+best"] == "rxlab://" + io_best
    assert doc["columns"]["default"] is None and doc["columns"]["posix"] == "rxlab://posix"
    cells = doc["cells"]
    got = {(c["workload"], c["metric"], c["config"]) for c in cells}
    for w in ("fillseq", "readrandom"):
        for m in ("qps", "cpu_per_op_us"):
            for c in ("posix", "io_uring", "io_uring+best", "A/A"):
                assert (w, m, c) in got, (w, m, c)
    for c in cells:
        assert c["turns"] >= 2, c
        assert c["ratio"] > 0 and c["lo"] <= c["ratio"] <= c["hi"], c
        assert c["resolved"] == (c["half_width"] <= doc["settings"]["target_pct"]), c
        assert c["status"].startswith("resolved" if c["resolved"] else "unresolved"), c
    # the options are stated once, and the same for every column
    assert doc["options"]["value_size"] == 1000 and doc["options"]["write_buffer_size"] == 2 << 20
    # stored beside: every run, every cell, the JSON and the figure
    for name in ("runs.csv", "cells.csv", "parity.json", "parity_matrix.png", "parity_matrix.csv"):
        assert (out / name).is_file(), name


def test_every_run_measured_throughput_and_cpu(smoke):
    import pandas as pd  # noqa: PLC0415 - only this test reads the stored runs

    _, out, _ = smoke
    runs = pd.read_csv(out / "runs.csv")
    assert set(runs["config"]) >= {"default", "posix", "io_uring"}
    assert (runs["ops"] > 0).all() and (runs["qps"] > 0).all() and (runs["cpu_s"] > 0).all()
    # default runs twice per turn (the A/A control): copies 0 and 1
    d = runs[runs["config"] == "default"].groupby(["workload", "turn"])["copy"].apply(sorted)
    assert all(c == [0, 1] for c in d)
    # the fill wrote every key; the engines' runs are the same work as default's
    fill = runs[runs["workload"] == "fillseq"]
    assert (fill["ops"] == 3000).all()


def test_a_reading_group_warms_up_once_with_the_base_and_keeps_it_out_of_its_cells(smoke):
    """The first run to read the loaded DB reads it cold; it is always the base's first copy in turn 1,
    so kept it would pull every ratio of that turn one way. One base run before a reader's first turn,
    stored apart; a writer starts from an empty DB every run and has none."""
    import pandas as pd  # noqa: PLC0415 - only these tests read the stored runs

    _, out, r = smoke
    warm = pd.read_csv(out / "warmups.csv")
    assert list(warm["workload"]) == ["readrandom"] and list(warm["config"]) == ["default"], warm
    assert (warm["ops"] > 0).all()
    runs = pd.read_csv(out / "runs.csv")
    assert not runs["command"].str.contains("--seed=999 ").any() and not runs["command"].str.endswith(
        "--seed=999").any(), "a warm-up run is in a cell"
    assert "readrandom t=1 quiet direct=on sync=off warm-up (default, not kept)" in r.stderr


def test_the_a_a_control_is_one_within_its_interval(smoke):
    """default against itself: ratio 1 inside the 95% interval. Four A/A intervals (two workloads, two
    metrics) from the smoke matrix's two turns; each misses 1 by chance 5% of the time or more (two
    turns, heavy-tailed noise on a busy CI machine: two of four missed once in a fresh clone's CI run,
    2026-12-06), so two of four must hold. A real bias, such as the first run of a turn always faster,
    moves them all."""
    doc, _, _ = smoke
    aa = [c for c in doc["cells"] if c["config"] == "A/A"]
    assert len(aa) == 4
    inside = [c["lo"] <= 1.0 <= c["hi"] for c in aa]
    assert sum(inside) >= 2, [(c.get("workload"), c.get("metric"), c["ratio"], c["lo"], c["hi"]) for c in aa]


def test_a_quiet_matrix_names_no_neighbour(smoke):
    _, _, r = smoke
    head = next(ln for ln in r.stderr.splitlines() if ln.startswith("parity: "))
    assert "groups x" in head and "busy neighbour" not in head, head


def test_the_table_is_printed_without_json(tmp_path):
    r = run_cli("selfcheck", "parity", "--workloads", "fillrandom", "--engines", "posix", "--threads", "1",
                "--num", "2000", "--budget", "5s", "--min-turns", "2", "--out", tmp_path, "--dir", tmp_path,
                timeout=180)
    assert r.returncode == 0, describe(r)
    assert "db_bench options for every engine:" in r.stdout and "--value_size=1000" in r.stdout
    assert "fillrandom" in r.stdout and "A/A" in r.stdout
    assert "fillrandom t=1 quiet direct=on sync=off turn 1" in r.stderr  # progress while it runs


BAD = [
    (["--workloads", "fillseq,nope"], "--workloads nope", "workloads are fillseq"),
    (["--engines", "posix,ext9"], "--engines ext9", "engines are"),
    (["--threads", "0"], "--threads 0", ">= 1"),
    (["--threads", "one"], "--threads 'one'", ">= 1"),
    (["--budget", "soon"], "--budget='soon'", "90s, 10m"),
    (["--budget=-5m"], "--budget='-5m'", "positive"),
    (["--condition", "noisy"], "--condition 'noisy'", "quiet, busy or both"),
    (["--direct", "maybe"], "--direct 'maybe'", "on, off or both"),
    (["--target", "0"], "--target 0", "percent"),
]


@pytest.mark.parametrize(("args", "names", "allowed"), BAD, ids=[b[1] for b in BAD])
def test_bad_input_is_one_line(args, names, allowed, tmp_path):
    r = run_cli("selfcheck", "parity", *args, "--out", tmp_path, "--dir", tmp_path, timeout=60)
    assert r.returncode == 2, describe(r)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, describe(r)
    assert names in lines[0] and allowed in lines[0], lines[0]
    assert not list(tmp_path.iterdir()), "nothing is written for bad input"


def test_a_run_that_fails_is_a_failed_cell_and_the_rest_goes_on(tmp_path):
    """An engine configuration that db_bench cannot open (iopoll without polled queues, refused by the
    engine) fails its cells with the engine's own words; the other columns are still measured."""
    from rxlab.bench.selfcheck import parity  # noqa: PLC0415 - the module under test, beside the CLI tests

    s = parity.Settings(workloads=("fillseq",), engines=("posix",), threads=(1,), num=2000, budget_s=30,
                        min_turns=2, target=50).check()
    s.cols["io_uring+iopoll"] = "io_uring?iopoll=1"
    m = parity.Matrix(s, tmp_path, log=lambda _m: None)
    table = m.run()
    bad = table[table["config"] == "io_uring+iopoll"]
    assert set(bad["metric"]) == set(parity.METRICS)
    assert bad["status"].str.startswith("failed: ").all() and bad["status"].str.contains("iopoll").all(), bad
    assert not bad["resolved"].any()
    ok = table[table["config"] == "posix"]
    assert len(ok) == 2 and (ok["turns"] >= 2).all() and ok["ratio"].gt(0).all(), ok


def test_a_thread_sweep_draws_throughput_by_threads_with_the_same_work_at_every_count(tmp_path):
    """Three thread counts: the scaling figure and its table beside the matrix; a writer's threads
    share the same `num` keys (db_bench's --writes per thread), so every count writes num keys."""
    import pandas as pd  # noqa: PLC0415 - only this test reads the stored tables

    r = run_cli("selfcheck", "parity", "--workloads", "fillrandom", "--engines", "posix",
                "--threads", "1,2,4", "--num", "3000", "--target", "50", "--budget", "30s", "--min-turns",
                "2", "--out", tmp_path, "--dir", tmp_path, timeout=240)
    assert r.returncode == 0, describe(r)
    assert "each writer thread of the untimed rows writes --writes=num/N keys" in r.stdout
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert sorted(runs["threads"].unique()) == [1, 2, 4]
    assert (runs.groupby("threads")["ops"].max() == 3000).all(), runs[["threads", "ops"]]
    sc = pd.read_csv(tmp_path / "parity_threads.csv")
    assert set(zip(sc["config"], sc["threads"], strict=True)) == {(c, t) for c in ("default", "posix")
                                                                  for t in (1, 2, 4)}
    assert ((sc["lo"] <= sc["qps"]) & (sc["qps"] <= sc["hi"])).all() and (sc["turns"] >= 2).all()
    assert (tmp_path / "parity_threads.png").stat().st_size > 10_000
