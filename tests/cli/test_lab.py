"""`rxlab lab`: JupyterLab on 127.0.0.1 with a token, as root too; `--configure` for a plain `jupyter lab`.

The server itself is started and driven in a real browser by
tests/runs/test_browser.py; here the command line and the configuration.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from rxlab.cli import lab

pytestmark = pytest.mark.timeout(120)
RXLAB = Path(sys.executable).parent / "rxlab"


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([str(RXLAB), "lab", *args], capture_output=True, text=True, timeout=60, check=False)


def test_dry_run_prints_the_url_with_its_token_and_the_command():
    r = run("05", "--port", "18888", "--token", "abc123", "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "http://127.0.0.1:18888/lab/tree/notebooks/05_explore.ipynb?token=abc123" in r.stdout
    cmd = r.stdout.strip().splitlines()[-1].split()
    assert (
        cmd[0] == str(Path(sys.executable).parent / "jupyter-lab") and cmd[1] == "notebooks/05_explore.ipynb"
    )
    assert {
        "--ServerApp.ip=127.0.0.1",
        "--ServerApp.port=18888",
        "--ServerApp.port_retries=0",
        "--IdentityProvider.token=abc123",
        "--no-browser",
    } <= set(cmd)
    assert ("--allow-root" in cmd) == (os.geteuid() == 0)


def test_a_new_token_each_time_and_a_free_port():
    a, b = run("--dry-run"), run("--dry-run")
    ta, tb = (re.search(r"token=([0-9a-f]{48})", x.stdout).group(1) for x in (a, b))
    assert ta != tb and "00_start_here.ipynb" in a.stdout
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        assert lab.free_port(busy) != busy


def test_allow_root_follows_the_user():
    kw = {"port": 1, "token": "t", "root_dir": Path("/tmp")}
    assert "--allow-root" in lab.lab_command(**kw, is_root=True)
    assert "--allow-root" not in lab.lab_command(**kw, is_root=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--port", "0"], "--port 0: expected 1..65535"),
        (["nosuch"], "notebook 'nosuch': not a file; known are 00_start_here, 05_explore"),
        (["--root-dir", "/nonexistent/x"], "--root-dir /nonexistent/x: not a directory"),
    ],
)
def test_bad_input_is_one_line(args, message):
    r = run(*args, "--dry-run")
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_configure_lets_the_venvs_jupyter_run_as_root_on_localhost(tmp_path):
    f = lab.write_config(tmp_path)
    assert f == tmp_path / "etc" / "jupyter" / "jupyter_server_config.json"
    assert json.loads(f.read_text()) == {"ServerApp": {"ip": "127.0.0.1", "allow_root": True}}
    f.write_text(json.dumps({"ServerApp": {"ip": "0.0.0.0", "open_browser": False}, "Other": {"x": 1}}))
    assert json.loads(lab.write_config(tmp_path).read_text()) == {  # others' keys kept, ours set
        "ServerApp": {"ip": "127.0.0.1", "open_browser": False, "allow_root": True},
        "Other": {"x": 1},
    }
    # a plain `jupyter lab` (no --allow-root, no --ip) with that configuration: it starts, on 127.0.0.1
    port = lab.free_port(19000)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_PATH": str(f.parent),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "u"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws"),
    }
    p = subprocess.Popen(
        [
            str(lab.jupyter_lab()),
            "--no-browser",
            f"--ServerApp.port={port}",
            "--IdentityProvider.token=t0k",
            f"--ServerApp.root_dir={tmp_path}",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        status = None
        while time.monotonic() < deadline and p.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=t0k", timeout=2) as r:
                    status = json.loads(r.read())
                    break
            except OSError:
                time.sleep(0.5)
        assert status is not None and "started" in status, (p.poll(), p.stdout.read() if p.poll() else "")
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            out = p.communicate(timeout=20)[0]
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out = p.communicate()[0]
    assert f"http://127.0.0.1:{port}/lab" in out and "Running as root is not recommended" not in out
