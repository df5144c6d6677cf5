"""A tiny real driver run (fillseq, flush, readrandom; 5,000 keys), the explorer's tests' and benchmark's row.

Imported by module name (pytest puts the test's folder on sys.path, and so does running
tests/runs/bench_explore.py): `from helpers_explore import tiny_run`.
"""
from __future__ import annotations

from pathlib import Path

from rxlab.bench import driver


def tiny_run(work: Path, root: Path, name: str, backend: str, *, threads: int = 1, reads: int = 1000) -> Path:
    """One stored run named `name` on `backend` (its DB in work/db-<name>), as driver.run returns it."""
    spec = driver.RunSpec(
        db=str(work / f"db-{name}"),
        name=name,
        backend=backend,
        num=5000,
        threads=threads,
        steps=["fillseq", "flush", "readrandom"],
        reads=reads,
        cache_size=1 << 20,
        write_buffer_size=4 << 20,
        target_file_size_base=4 << 20,
        scale="smoke",
    )
    return driver.run(spec, root=root, progress=False)
