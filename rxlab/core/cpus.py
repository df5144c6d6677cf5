"""CPU lists as fio writes them ("1", "0,2-3"), and pinning the calling thread to one."""
from __future__ import annotations

import contextlib
import os

__all__ = ["CPUS_ALLOWED_POLICIES", "affinity", "parse_cpus"]

# fio's cpus_allowed_policy: "shared" (the scheduler places the jobs) or
# "split" (job i pinned to the i-th allowed CPU).
CPUS_ALLOWED_POLICIES = ("shared", "split")


def parse_cpus(text: str) -> set[int]:
    """fio's CPU list ("1", "0,2-3") as a set, checked against the CPUs this thread may use."""
    allowed = os.sched_getaffinity(0)
    out: set[int] = set()
    for part in str(text).split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            a, b = int(lo), int(hi or lo)
        except ValueError:
            raise ValueError(f"cpus_allowed={text!r}: expected CPU numbers and ranges such as 1 or "
                             "0,2-3") from None
        if a > b or a < 0:
            raise ValueError(f"cpus_allowed={text!r}: bad range {part.strip()!r}")
        out.update(range(a, b + 1))
    if not out <= allowed:
        missing = ", ".join(map(str, sorted(out - allowed)))
        raise ValueError(f"cpus_allowed={text!r}: CPU(s) {missing} are not available "
                         f"(allowed: {', '.join(map(str, sorted(allowed)))})")
    return out


@contextlib.contextmanager
def affinity(cpus: set[int] | None):
    """Restrict the calling thread (and the threads it starts) to `cpus` for the block."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
