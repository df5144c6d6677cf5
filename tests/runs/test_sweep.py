"""`rxlab sweep`: a grid of papermill executions, a failing point recorded while the others finish,
reruns that skip what succeeded. Real executions of the start-here notebook at smoke scale."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from rxlab.runs import sweep

pytest.importorskip("papermill")
pytestmark = pytest.mark.timeout(300)


def rxlab(*args, env=None):
    return subprocess.run([sys.executable, "-m", "rxlab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=240, check=False, env=env)


def test_values_are_read_as_papermill_reads_yaml():
    assert [sweep.parse_value(v) for v in ("1", "2.5", "true", "posix", "[1, 2]", "None", "io_uring?sqpoll=1")] \
        == [1, 2.5, True, "posix", [1, 2], None, "io_uring?sqpoll=1"]


def test_the_grid_is_the_product_in_the_order_given():
    g = sweep.grid({"backend": ["posix", "io_uring"], "threads": [1, 2, 4]})
    assert len(g) == 6 and g[0] == {"backend": "posix", "threads": 1} and g[-1] == {"backend": "io_uring", "threads": 4}
    assert len({sweep.point_dir("/s", p) for p in g}) == 6
    with pytest.raises(ValueError, match=r"^threads=\[\]: expected at least one value$"):
        sweep.grid({"threads": []})
    with pytest.raises(ValueError, match="^parameter name '1x'"):
        sweep.grid({"1x": [1]})


def test_p_takes_name_equals_values_repeated_or_the_old_form():
    assert sweep.parse_params([["backend=posix,io_uring"], ["threads=1,[1, 2]"]]) == \
        ({"backend": ["posix", "io_uring"], "threads": [1, [1, 2]]}, [])
    # repeated -p NAME=V adds values; quotes and brackets keep their commas
    assert sweep.parse_params([["backend=posix"], ["backend=io_uring"], ["name='a,b'"]]) == \
        ({"backend": ["posix", "io_uring"], "name": ["a,b"]}, [])
    # the old form still works, and is returned for the note
    assert sweep.parse_params([["backend", "posix", "io_uring"], ["scale=smoke"]]) == \
        ({"backend": ["posix", "io_uring"], "scale": ["smoke"]}, ["backend", "posix", "io_uring"])
    for bad, message in ((["threads"], "-p threads: expected NAME=V1,V2, e.g. -p threads=1,2"),
                         (["threads=1,"], "-p threads=1,: expected NAME=V1,V2 with no empty value"),
                         (["=1"], "-p =1: expected NAME=V1,V2"),
                         (["threads=1", "2"], "-p threads=1 2: one NAME=V1,V2 per -p")):
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            sweep.parse_params([bad])


def test_the_old_p_form_is_noted_in_one_line(tmp_path):
    r = rxlab("sweep", "00", "-p", "scael", "smoke", "--out", tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "rxlab sweep: -p scael smoke is the old form; write -p scael=smoke (the same grid)",
        "rxlab: parameter 'scael': 00_start_here has backend, scale, db_dir, threads, workload"]


def test_a_sweep_with_a_failing_point_finishes_the_rest_and_resumes(tmp_path):
    env = {**os.environ, "RXLAB_RUNS": str(tmp_path / "runs"), "RXLAB_FIGURES": str(tmp_path / "figures")}
    out = tmp_path / "sweep"
    args = ("sweep", "00", "-p", "scale=smoke", "-p", "backend=nosuch,posix", "--out", out, "--quiet")
    r = rxlab(*args, env=env)
    assert r.returncode == 1, r.stderr
    assert "1 of 2 points failed" in r.stderr
    df = pd.read_csv(out / "summary.csv")
    assert list(df["backend"]) == ["nosuch", "posix"] and list(df["status"]) == ["failed", "ok"]
    assert df["error"].iloc[0].startswith("ValueError: backend='nosuch'")
    ok = json.loads((sweep.point_dir(out, {"scale": "smoke", "backend": "posix"}) / "status.json").read_text())
    assert ok["runs"] and all(os.path.isdir(run) for run in ok["runs"])
    assert (sweep.point_dir(out, {"scale": "smoke", "backend": "posix"}) / "notebook.ipynb").is_file()
    failed_dir = sweep.point_dir(out, {"scale": "smoke", "backend": "nosuch"})
    assert (failed_dir / "notebook.ipynb").is_file()  # kept, the failing cell marked
    assert not list((tmp_path / "figures").glob("*")), "a sweep must leave figures/ to rxlab report"
    # the rerun skips the point that succeeded and retries the failed one
    r = rxlab(*args, env=env)
    assert r.returncode == 1
    df = pd.read_csv(out / "summary.csv")
    assert list(df["skipped"]) == [False, True]
    assert len(list((tmp_path / "runs").glob("2*"))) == len(ok["runs"])  # nothing ran twice


def test_an_unknown_parameter_is_refused_in_one_line(tmp_path):
    r = rxlab("sweep", "00", "-p", "scael=smoke", "--out", tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "rxlab: parameter 'scael': 00_start_here has backend, scale, db_dir, threads, workload"
