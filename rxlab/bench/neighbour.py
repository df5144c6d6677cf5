"""The busy neighbour: a process spinning on one CPU beside a measurement (`with Spinner(cpu):`).

The project's CPU-contention load (the device-load study's `busy` setting, the parity matrix's
`busy` condition): on a 2-vCPU machine it takes one of the two, so whatever a measured process
does beyond its own thread (RocksDB's flush and compaction threads, an engine's completion
thread) competes for the one left.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time

from rxlab.core import sysinfo

# The spinner dies with its parent (PR_SET_PDEATHSIG, SIGKILL): a notebook killed mid-run must not
# leave a CPU spinning under every later measurement on the machine.
_SPIN = ("import ctypes, os, sys\nctypes.CDLL(None).prctl(1, 9)\nif os.getppid() != int(sys.argv[2]):\n"
         "    sys.exit(0)\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n")


def busy_cpu() -> int:
    """The CPU a busy neighbour takes by default: the highest this process may run on."""
    return max(os.sched_getaffinity(0))


class Spinner:
    """A process spinning on CPU `cpu` for the length of a `with` block (None: no spinner)."""

    def __init__(self, cpu: int | None):
        self.cpu, self.proc = cpu, None
        self.cpu_s: float | None = None   # after the block: the CPU time the spinner took (None: none ran)

    def __enter__(self):
        if self.cpu is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", _SPIN, str(self.cpu), str(os.getpid())])
            time.sleep(0.2)  # on its CPU before the measurement starts
            if self.proc.poll() is not None:
                raise RuntimeError(f"busy neighbour: the spinner on CPU {self.cpu} exited with "
                                   f"{self.proc.returncode}")
        return self

    def __exit__(self, *exc):
        if self.proc is not None:
            cpu = sysinfo.proc_pid_cpu(self.proc.pid)
            self.cpu_s = cpu["user_s"] + cpu["sys_s"] if cpu else None
            self.proc.kill()
            self.proc.wait()

