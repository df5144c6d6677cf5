"""The environment fingerprint every run.json records: machine, kernel, CPU, memory, versions, commit."""
from __future__ import annotations

import json
import os
import platform
import re
import socket
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from rxlab.core.paths import REPO
from rxlab.core.sysinfo.cpu import CLK_TCK
from rxlab.core.sysinfo.device import device_for_path, read_file, read_int
from rxlab.core.sysinfo.probes import io_uring_status, perf_hw_counters, perf_sw_counters


def _cpu_model() -> str:
    text = read_file("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "cpu model", "Processor"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    return platform.processor() or "unknown"


def _cpufreq() -> dict:
    d = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    if not d.is_dir():
        return {"cpufreq_driver": "unavailable", "cpufreq_governor": "unavailable",
                "cpufreq_min_khz": None, "cpufreq_max_khz": None}
    return {"cpufreq_driver": read_file(d / "scaling_driver", "unavailable"),
            "cpufreq_governor": read_file(d / "scaling_governor", "unavailable"),
            "cpufreq_min_khz": read_int(d / "scaling_min_freq"),
            "cpufreq_max_khz": read_int(d / "scaling_max_freq")}


def _meminfo_kb(key: str) -> int | None:
    m = re.search(rf"^{key}:\s+(\d+) kB", read_file("/proc/meminfo") or "", re.M)
    return int(m.group(1)) if m else None


def _own_cgroup_dirs() -> list[str]:
    """This process's memory cgroup directories, innermost first (v2 unified, then v1 memory)."""
    dirs = []
    for line in (read_file("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            base = "/sys/fs/cgroup"
        elif "memory" in parts[1].split(","):
            base = "/sys/fs/cgroup/memory"
        else:
            continue
        p = Path(base + parts[2])
        while True:  # a limit can be set on any ancestor: walk up to the root
            dirs.append(str(p))
            if str(p) == base or p.parent == p:
                break
            p = p.parent
    return dirs


def _cgroup_memory_limit() -> int | None:
    """The tightest memory limit over this process's cgroup and its ancestors, in bytes; None if unlimited."""
    limits = []
    for d in _own_cgroup_dirs():
        for f in ("memory.max", "memory.limit_in_bytes"):
            s = read_file(f"{d}/{f}")
            if s and s != "max":
                try:
                    v = int(s)
                except ValueError:
                    continue
                if v < 2**62:
                    limits.append(v)
    return min(limits) if limits else None


def rxlab_version() -> str:
    try:
        return version("rxlab")
    except Exception:
        m = re.search(r'^version\s*=\s*"([^"]+)"', read_file(REPO / "pyproject.toml") or "", re.M)
        return m.group(1) if m else "unknown"


def git_info(repo: Path = REPO) -> dict:
    """Commit and dirtiness of the code that measures: the checkout less figures/, docs/, tests/ and
    Markdown files (read-only git calls: no index refresh)."""
    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", "--no-optional-locks", "-C", str(repo), *args],
                               capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None
    commit = git("rev-parse", "HEAD") if (repo / ".git").exists() else None
    if commit is None:
        return {"git_commit": "unknown", "git_dirty": None}
    # figures/ is what `rxlab report` rewrites as it goes: its own outputs do not make the code that
    # measured them dirty (every figure after the first would otherwise say "dirty"); prose and tests
    # being written while a study runs change nothing it measures, so a flag that counted them would
    # mark studies whose engines, driver and notebooks were the commit's
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)figures",
                 ":(exclude)docs", ":(exclude)tests", ":(exclude,glob)**/*.md")
    return {"git_commit": commit, "git_dirty": bool(status) if status is not None else None}


def host_id() -> str:
    """The name a host goes by in a sweep: $RXLAB_HOST_ID (`rxlab worker --host-id`), else its hostname."""
    return os.environ.get("RXLAB_HOST_ID") or socket.gethostname()


def fingerprint(db_path: str | os.PathLike | None = None, rocksdb_build: dict | None = None) -> dict:
    """The environment a run was measured in, for run.json.

    ``rocksdb_build`` is the build record the caller used (build.json of the
    RocksDB build, or the version of a packaged library); rxlab does not
    guess it. ``db_path`` names the storage whose device is described.
    """
    u = platform.uname()
    fp: dict = {
        "hostname": socket.gethostname(),
        "host_id": host_id(),
        "kernel": u.release, "kernel_version": u.version, "machine": u.machine,
        "os": _os_release(),
        "cpu_model": _cpu_model(),
        **_cpufreq(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_kb": _meminfo_kb("MemTotal"),
        "cgroup_memory_limit": _cgroup_memory_limit(),
        "clk_tck": CLK_TCK,
        "python": sys.version.split()[0],
        "rxlab_version": rxlab_version(),
        **git_info(),
        "perf_hw_counters": perf_hw_counters(),
        "perf_sw_counters": perf_sw_counters(),
        "io_uring": io_uring_status(),
        "fio": _tool_version(["fio", "--version"]),
        "captured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": device_for_path(db_path).asdict() if db_path is not None else None,
        "rocksdb_build": rocksdb_build,
    }
    json.dumps(fp)  # fail here, not at the end of a run, if something is not serialisable
    return fp


def _os_release() -> str:
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', read_file("/etc/os-release") or "", re.M)
    return m.group(1) if m else "unknown"


def _tool_version(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    return (r.stdout or r.stderr).strip().splitlines()[0] if r.returncode == 0 else "not found"
