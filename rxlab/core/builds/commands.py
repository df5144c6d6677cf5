"""Build commands run with their output in a log and one line on failure (ninja with progress)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from rxlab.core.builds.cache import PATCH_DIR, BuildError


def run_logged(cmd: list[str], what: str, cwd: Path | None = None, log: Path | None = None) -> None:
    if log is None:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            raise BuildError(f"{what} failed (exit {r.returncode}): " + " | ".join(tail))
        return
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        r = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, check=False)
    if r.returncode != 0:
        tail = log.read_text().strip().splitlines()[-8:]
        raise BuildError(f"{what} failed (exit {r.returncode}), log {log}: " + " | ".join(tail))


def ninja_with_progress(cmd: list[str], cwd: Path, log: Path) -> None:
    """Run ninja, print a progress line from its [done/total] status."""
    tty = sys.stderr.isatty()
    last_pct = -1
    start = time.time()
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env={**os.environ, "NINJA_STATUS": "[%f/%t] "})
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            m = re.match(r"\[(\d+)/(\d+)\]", line)
            if not m:
                continue
            done, total = int(m.group(1)), int(m.group(2))
            pct = 100 * done // max(total, 1)
            mins = (time.time() - start) / 60
            if tty:
                sys.stderr.write(f"\r  compiling RocksDB: {pct:3d}% ({done}/{total}, {mins:.1f} min)")
                sys.stderr.flush()
            elif pct >= last_pct + 5:
                sys.stderr.write(f"  compiling RocksDB: {pct:3d}% ({done}/{total}, {mins:.1f} min)\n")
                sys.stderr.flush()
                last_pct = pct
        rc = proc.wait()
    if tty:
        sys.stderr.write("\n")
    if rc != 0:
        errs = [ln for ln in log.read_text().splitlines() if "error" in ln.lower()][-5:]
        hint = ""
        if any("<cstdint>" in e or "does not name a type" in e or "was not declared" in e for e in errs):
            hint = (" | this compiler needs a missing include: put the smallest patch in "
                    f"{PATCH_DIR}/<version>/ (see its README) and build again")
        raise BuildError(f"ninja failed (exit {rc}), log {log}: " + " | ".join(errs) + hint)


def full_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False).stdout
    return out.splitlines()[0] if out else "unknown"
