"""The child's side of a setting: join the memory cgroup, run the overwrite step, store it.

Started by overwrite.run_child as ``python -m
rxlab.studies.compaction_readahead.child --child JOB.json``; prints
{"run": PATH} on its last line. Nothing in the package imports this module,
so `python -m` runs it fresh (runpy warns about a module imported before it
is run as __main__).
"""
from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path

from rxlab.bench import driver
from rxlab.core.cgroup import MemoryCgroup

# memory.stat counters (deltas over a step); the rest are levels (taken at the step's end)
CGROUP_COUNTERS = ("pgpgin", "pgpgout", "pgfault", "pgmajfault", "failcnt", "oom_kill", "workingset_refault",
                   "workingset_refault_file", "workingset_activate", "pgscan", "pgsteal")
CGROUP_KEPT = ("cache", "rss", "dirty", "writeback", "mapped_file", "file", "anon", "file_dirty", "usage",
               "peak", *CGROUP_COUNTERS)


def cgroup_stat(path: str | None, version: int | None) -> dict:
    """memory.stat and usage of the child's cgroup (its limit left out: it is in the run's fingerprint)."""
    if not path:
        return {}
    out = MemoryCgroup.existing(path, version).stat()
    out.pop("limit")
    return out


def child_main(job_file: str | os.PathLike) -> Path:
    """Join the cgroup, run the job's steps, store them with per-step extras; returns the stored run.

    Each step row gets cgroup.* (memory.stat of the child's cgroup: counters
    as deltas, levels at the end; v1 max usage reset at the start, so
    cgroup.peak is the step's), taken inside the step's window through
    driver.run's step probe; own_read_bytes/own_write_bytes (/proc/self/io)
    the driver records for every step.
    """
    job = json.loads(Path(job_file).read_text())
    cg_path, cg_version = job.get("cgroup"), job.get("cgroup_version")
    if cg_path:
        own = Path("/proc/self/cgroup").read_text()
        if Path(cg_path).name not in own:  # started without the shell that joins it
            Path(cg_path, "cgroup.procs").write_text(str(os.getpid()))
            own = Path("/proc/self/cgroup").read_text()
        if Path(cg_path).name not in own:
            raise RuntimeError(f"the child did not join {cg_path}: /proc/self/cgroup says {own!r}")

    def probe():
        if cg_path and cg_version == 1:
            Path(cg_path, "memory.max_usage_in_bytes").write_text("0")
        m0 = cgroup_stat(cg_path, cg_version)

        def finish() -> dict:
            m1 = cgroup_stat(cg_path, cg_version)
            return {f"cgroup.{k}": m1[k] - m0.get(k, 0) if k in CGROUP_COUNTERS else m1[k]
                    for k in CGROUP_KEPT if k in m1}
        return finish

    memory = {"memory_cgroup": {"path": cg_path, "version": cg_version,
                                "limit": job["meta"].get("memory_limit")}}
    return driver.run(driver.RunSpec.from_dict(job["spec"]), job["root"], progress=False, meta=job["meta"],
                      fingerprint=memory, step_probe=probe)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rxlab.studies.compaction_readahead.child",
                                 description="Run one stored overwrite run of the readahead study "
                                             "(the study starts it in a memory cgroup).")
    ap.add_argument("--child", required=True, metavar="JOB.json", help="job file written by the study")
    a = ap.parse_args(argv)
    path = child_main(a.child)
    print(json.dumps({"run": str(path)}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
