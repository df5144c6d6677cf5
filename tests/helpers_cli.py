"""The `rxlab` command line as the CLI tests run it: in a subprocess, output captured.

Importable from any test module (pytest puts tests/ on sys.path for its conftest):
`from helpers_cli import describe, run_cli, rxlab_cmd`.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def rxlab_cmd() -> list[str]:
    """The installed `rxlab` script beside this Python, else `python -m rxlab.cli.main`."""
    exe = Path(sys.executable).parent / "rxlab"
    return [str(exe)] if exe.is_file() else [sys.executable, "-m", "rxlab.cli.main"]


def run_cli(*args, timeout: float = 120) -> subprocess.CompletedProcess:
    """`rxlab ARGS...`, its exit code and output (never raises on a non-zero exit)."""
    return subprocess.run([*rxlab_cmd(), *map(str, args)], capture_output=True, text=True, timeout=timeout,
                          check=False)


def describe(r: subprocess.CompletedProcess) -> str:
    """The exit code and the output's ends, for assertion messages."""
    return f"exit {r.returncode}\n--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
