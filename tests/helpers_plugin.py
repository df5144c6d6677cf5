"""Helpers for the tests that run the stock db_bench through rxlab's plugin
(test_plugin.py, test_strace.py). Not a test module.

The plugin (librxlab_plugin.so) is installed next to rxlab/_core*.so; with an
editable install it may only exist in the scikit-build tree, build/*/.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

# strace -c's summary is parsed in one place, shared with the tracing study.
from rxlab.studies.tracing_overhead.syscalls import parse_strace_summary  # noqa: F401 (re-exported for the tests)

REPO = Path(__file__).resolve().parent.parent
PLUGIN_NAME = "librxlab_plugin.so"


def plugin_path() -> Path:
    """The plugin library: the installed package's directory first, then build/*/."""
    candidates: list[Path] = []
    try:
        import rxlab._core as core

        candidates.append(Path(core.__file__).resolve().parent / PLUGIN_NAME)
    except ImportError:
        pass
    import rxlab

    candidates.append(Path(rxlab.__file__).resolve().parent / PLUGIN_NAME)
    for p in candidates:
        if p.is_file():
            return p
    built = sorted((REPO / "build").glob(f"*/{PLUGIN_NAME}"), key=lambda p: p.stat().st_mtime)
    if built:
        return built[-1]
    searched = [str(c) for c in candidates] + [str(REPO / "build" / "*" / PLUGIN_NAME)]
    pytest.fail(f"{PLUGIN_NAME} not found (looked in {', '.join(searched)}): build the project")


def db_bench_path() -> Path:
    """The release db_bench of the active RocksDB build (the plugin's build)."""
    from rxlab.core.builds import active_build

    p = Path(active_build()) / "bin" / "db_bench"
    if not p.is_file():
        pytest.fail(f"db_bench not found at {p}: run the set-up (rxlab builds)")
    return p


def plugin_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for db_bench run with the plugin preloaded (only for db_bench)."""
    env = dict(os.environ)
    env.pop("RXLAB_COUNTERS", None)
    env["LD_PRELOAD"] = str(plugin_path())
    if extra:
        env.update(extra)
    return env


def run_db_bench(args: list[str], *, timeout: float = 120,
                 wrapper: list[str] | None = None,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run db_bench with `args`. Without `wrapper`, LD_PRELOAD is set in its
    environment; with one (e.g. strace ... -E LD_PRELOAD=...), the caller
    decides how the preload reaches db_bench and `env` is used as is."""
    cmd = [*(wrapper or []), str(db_bench_path()), *args]
    if env is None:
        env = dict(os.environ) if wrapper else plugin_env()
        env.pop("RXLAB_COUNTERS", None)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def describe(proc: subprocess.CompletedProcess, tail: int = 3000) -> str:
    """The command, exit code and output ends, for assertion messages."""
    cmd = " ".join(str(a) for a in proc.args)
    return (f"command: {cmd}\nexit code: {proc.returncode}\n"
            f"--- stdout (end) ---\n{proc.stdout[-tail:]}\n--- stderr (end) ---\n{proc.stderr[-tail:]}")


def read_counters(path: Path) -> dict:
    """The counters JSON the plugin writes at exit."""
    assert path.is_file(), f"the plugin wrote no counters file at {path}"
    data = json.loads(path.read_text())
    for key in ("uri", "threads", "counters", "read_latency_ns"):
        assert key in data, f"counters JSON {path} lacks {key!r}: {sorted(data)}"
    return data


_FOUND = re.compile(r"^(\w+)\s*:.*\((\d+) of (\d+) found\)", re.MULTILINE)


def found(stdout: str, benchmark: str) -> tuple[int, int] | None:
    """(found, asked) from db_bench's result line of `benchmark`."""
    for m in _FOUND.finditer(stdout):
        if m.group(1) == benchmark:
            return int(m.group(2)), int(m.group(3))
    return None
