"""`make setup`'s main job writes the user's figures to a folder of their own, and `rxlab report` shows a
notebook's own progress (its study's bar) in the terminal while a cell runs, not only papermill's cells.

Real executions: `rxlab report --scale smoke --only 00` in a subprocess (the start-here notebook and its
quickstart study), its stderr read line by line as it comes.
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest
from helpers_cli import rxlab_cmd

pytest.importorskip("papermill")
pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]


def _digest(path: Path) -> dict:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_make_main_writes_the_figures_to_an_ignored_folder_of_its_own():
    r = subprocess.run(["make", "-n", "main"], cwd=REPO, capture_output=True, text=True, check=True)
    report = [ln for ln in r.stdout.splitlines() if " report " in ln]
    assert report == [".venv/bin/rxlab report --scale small --only 10 --figures figures-local"], r.stdout
    ignored = subprocess.run(["git", "check-ignore", "figures-local/x.png", "data/studies/io_efficiency/x"],
                             cwd=REPO, capture_output=True, text=True, check=False)
    assert ignored.stdout.split() == ["figures-local/x.png", "data/studies/io_efficiency/x"]


def test_report_streams_the_notebooks_own_progress(tmp_path):
    env = {**os.environ, "RXLAB_RUNS": str(tmp_path / "runs"), "RXLAB_SCRATCH": str(tmp_path / "scratch")}
    env.pop("RXLAB_FIGURES", None)
    before = _digest(REPO / "figures")
    seen: list[tuple[float, str]] = []
    with subprocess.Popen([*rxlab_cmd(), "report", "--scale", "smoke", "--only", "00", "--figures",
                           str(tmp_path / "figs")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as p:
        t0 = time.monotonic()

        def read():
            for chunk in iter(lambda: p.stderr.read(64), ""):  # a bar updates with \r, not \n: as it comes
                seen.append((time.monotonic() - t0, chunk))

        reader = threading.Thread(target=read)
        reader.start()
        out = p.stdout.read()
        p.wait(timeout=280)
        reader.join(timeout=10)
    err = "".join(c for _, c in seen)
    assert p.returncode == 0, err[-3000:] + out
    assert err.startswith("report (smoke) 1/1: 00_start_here\n")
    done = re.search(r"\nreport \(smoke\) 1/1: 00_start_here ok in \d+ s\n", err)
    assert done, err[-3000:]
    # the quickstart study's own text bar ("quickstart smoke: 100%|...| 1/1"), streamed while the notebook ran
    bar = err.find("quickstart smoke:")
    assert 0 < bar < done.start(), err[-3000:]
    at = next(t for t, _ in _upto(seen, bar))
    end = next(t for t, _ in _upto(seen, done.start()))
    assert at < end, "the study's bar came only when the notebook had ended"
    assert re.search(r"quickstart smoke: 100%\|.*\| 1/1", err), err[-3000:]
    assert "00_start_here" in out and (tmp_path / "figs" / "index.md").is_file()
    assert _digest(REPO / "figures") == before, "rxlab report --figures DIR wrote into figures/"


def _upto(seen, offset: int):
    """The chunks from the one holding character `offset` of the stream on."""
    n = 0
    for t, chunk in seen:
        n += len(chunk)
        if n > offset:
            yield t, chunk


def test_a_relative_figures_folder_is_where_the_report_was_started(tmp_path):
    """make main passes `--figures figures-local`: the figures and their index land there together, not in
    the notebooks' own directory (where the notebooks run)."""
    env = {**os.environ, "RXLAB_RUNS": str(tmp_path / "runs"), "RXLAB_SCRATCH": str(tmp_path / "scratch")}
    env.pop("RXLAB_FIGURES", None)
    r = subprocess.run([*rxlab_cmd(), "report", "--scale", "smoke", "--only", "80", "--figures", "figs"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=280, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    figs = tmp_path / "figs"
    drawn = sorted(p.name for p in figs.glob("*.png"))
    index = (figs / "index.md").read_text()
    assert drawn and all(f"]({name})" in index for name in drawn), (drawn, index[-2000:])
    assert not (REPO / "notebooks" / "figs").exists(), "the figures went to the notebooks' own directory"
