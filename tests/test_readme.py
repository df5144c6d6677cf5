"""The README's quick starts, run as written: its fenced blocks under "## Quick start: ...", in a
temporary directory with a temporary store (RXLAB_RUNS), the venv's commands first on PATH (the README
says to activate it). The only lines not run are `rxlab lab`, which starts a server until Ctrl-C: the
test runs them with --dry-run (the URL they would print). The README itself stays short."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

from rxlab.bench import driver
from rxlab.core import store

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.timeout(600)


def quick_starts() -> dict[str, tuple[str, str]]:
    """{title: (language, code)} of every "## Quick start: TITLE" section's fenced block."""
    out = {}
    for m in re.finditer(r"^## Quick start: (.+?)\n(.*?)(?=^## |\Z)", README.read_text(), re.M | re.S):
        block = re.search(r"^```(\w+)\n(.*?)^```", m.group(2), re.M | re.S)
        assert block, f"quick start {m.group(1)!r} has no fenced block"
        out[m.group(1).strip()] = (block.group(1), block.group(2))
    return out


def env_for(tmp: Path) -> dict:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "RXLAB_RUNS": str(tmp / "runs"), "PYTHONUNBUFFERED": "1"}


def run(cmd, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def test_the_readme_is_short_and_has_the_three_quick_starts():
    assert len(README.read_bytes()) <= 6 * 1024
    assert set(quick_starts()) == {"compare backends on your own device", "Python", "JupyterLab"}
    for _, code in quick_starts().values():
        assert len([ln for ln in code.splitlines() if ln.strip()]) <= 13  # about ten lines each


def test_cli_quick_start(tmp_path):
    lang, code = quick_starts()["compare backends on your own device"]
    assert lang == "sh"
    r = run(["bash", "-e", "-o", "pipefail", "-c", code], tmp_path, env_for(tmp_path))
    listed = run([str(BIN / "rxlab"), "runs", "--json"], tmp_path, env_for(tmp_path))
    rows = json.loads(listed.stdout)
    assert [row["backend"] for row in rows] == ["posix", "default", "posix", "libaio", "io_uring"]
    assert [row["benchmarks"] for row in rows] == ["fillseq,flush,compact"] + ["readrandom"] * 4
    assert all(row["qps"] > 0 and row["status"] == "complete" for row in rows)
    assert r.stdout.count("(") and "found)" in r.stdout
    # every read found its key: the reads ran on the loaded DB with its key space
    found = re.findall(r"\((\d+) of (\d+) found\)", r.stdout)
    assert len(found) >= 4 and all(a == b for a, b in found)


def test_python_quick_start(tmp_path):
    lang, code = quick_starts()["Python"]
    assert lang == "python"
    # the store already holds a run (another posix readrandom): the quick start plots only its own
    earlier = driver.run(driver.RunSpec(db=str(tmp_path / "earlier-db"), backend="posix", num=5000,
                                        reads=500, steps=["fillseq", "flush", "readrandom"]),
                         root=tmp_path / "runs", progress=False)
    (tmp_path / "quick.py").write_text(code)
    r = run([sys.executable, "quick.py"], tmp_path, env_for(tmp_path))
    assert "b'value'" in r.stdout
    for ext in ("pdf", "svg", "png", "csv", "json"):
        assert (tmp_path / "my-figures" / f"my_qps.{ext}").is_file(), ext
    (own,) = [p.name for p in (tmp_path / "runs").iterdir()
              if not p.name.startswith(".") and p.name != earlier.name]
    side = json.loads((tmp_path / "my-figures" / "my_qps.json").read_text())
    assert side["runs"] == [own]  # the sidecar names the run the figure plots
    table = pd.read_csv(tmp_path / "my-figures" / "my_qps.csv")
    view = store.seed_view(store.catalog(tmp_path / "runs", runs=[own]))
    assert table["backend"].tolist() == ["posix"]  # one bar: its own run's readrandom, not a median of all
    assert table["qps"].tolist() == pytest.approx(view.loc[view["test"] == "readrandom", "qps"].tolist())
    # redrawable from its table alone (its plot spec), beside the original
    redrawn = run([str(BIN / "rxlab"), "figure", "redraw", "my_qps", "--dir", "my-figures", "--width",
                   "page"], tmp_path, env_for(tmp_path))
    assert (tmp_path / "my-figures" / "my_qps-page.png").is_file(), redrawn.stdout
    assert json.loads((tmp_path / "my-figures" / "my_qps-page.json").read_text())["runs"] == [own]


def test_jupyterlab_quick_start(tmp_path):
    lang, code = quick_starts()["JupyterLab"]
    assert lang == "sh"
    lines = [ln.split("#")[0].strip() for ln in code.strip().splitlines()]
    tmp = Path(tempfile.gettempdir())
    before = set(tmp.glob("rxlab-start-*"))
    ran = 0
    for line in lines:
        if line.startswith("rxlab lab"):
            # starts a server until Ctrl-C: check what it would start (the browser test runs one for real)
            r = run([str(BIN / "rxlab"), *line.split()[1:], "--dry-run"], REPO, env_for(tmp_path))
            assert "http://127.0.0.1:" in r.stdout and "token=" in r.stdout, r.stdout
            continue
        out = Path(line.split()[2])
        try:
            run(["bash", "-e", "-c", line], REPO, env_for(tmp_path))
            assert json.loads(out.read_text())["cells"], out
        finally:
            out.unlink(missing_ok=True)
        ran += 1
    assert ran == 1
    # the notebook's temporary directory went with its kernel
    assert set(tmp.glob("rxlab-start-*")) <= before
