"""The parent's side of a setting: the run spec, a cold copy of the DB, and the child in its memory cgroup.

Buffered reads come from the page cache unless memory is short, so each
overwrite step runs in a child process (``python -m
rxlab.studies.compaction_readahead.child --child JOB.json``, child.py)
placed in a memory cgroup of its own with a limit well below the DB's size
(rxlab.core.cgroup: v1 memory.limit_in_bytes under the cgroup of the calling
process, v2 memory.max beside it), removed afterwards.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path

from rxlab.bench import driver
from rxlab.core.cgroup import CgroupSupport, MemoryCgroup
from rxlab.core.pagecache import page_out
from rxlab.studies.compaction_readahead.params import KEY_SIZE, MIB, Params, Settings

CHILD_MODULE = "rxlab.studies.compaction_readahead.child"
TABLE_SUFFIXES = (".sst", ".blob")   # immutable once written: a copy may share them


def run_spec(params: Params, s: Settings, db: Path, *, name: str, steps: list, readahead: int | None,
             existing: bool, seed: int = 0) -> driver.RunSpec:
    """The seed's conditions: buffered IO for reads, flushes and compactions; no compression; the
    scale's memtable, file and level sizes; `readahead` as compaction_readahead_size (None: RocksDB's)."""
    return driver.RunSpec(
        db=str(db), name=name, backend=params.backend, steps=steps, num=s.num, key_size=KEY_SIZE,
        value_size=params.value_size, threads=params.threads, block_align=False, compression="none",
        cache_size=s.cache_size, use_direct_reads=False, use_direct_io_for_flush_and_compaction=False,
        write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
        max_bytes_for_level_base=s.max_bytes_for_level_base, compaction_readahead_size=readahead,
        use_existing_db=existing, scale=params.scale, seed=seed)


def load_db(params: Params, s: Settings, db: Path, name: str, root: Path) -> Path:
    """The DB every setting starts from: fillseq, flush, wait for compaction (stored as a run)."""
    spec = run_spec(params, s, db, name=name, steps=["fillseq", "flush", "waitforcompaction"], readahead=None,
                    existing=False)
    spec.threads = 1
    return driver.run(spec, root=root, progress=False)


def _link_or_copy(src: str, dst: str) -> None:
    if src.endswith(TABLE_SUFFIXES):
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


def copy_db(src: Path, dst: Path) -> None:
    """A fresh copy of the loaded DB for one run (each run overwrites its own), as RocksDB's checkpoints
    make one: table files hard-linked (RocksDB never changes one once written, and deleting the copy's
    name leaves the loaded DB's), the rest (MANIFEST, CURRENT, OPTIONS, WAL) copied. Copying the tables
    too wrote the whole DB again before every run (seconds at small), time the turns now use."""
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst, copy_function=_link_or_copy)


def evict(db: Path, how: str) -> str:
    """Make a setting start with none of the DB in the page cache; returns what was done.

    system: sync, then `echo 1 > /proc/sys/vm/drop_caches` (clean page cache
    of the whole machine). db: fdatasync and fadvise(DONTNEED) on each file of
    the DB (only these pages). none: nothing.
    """
    if how == "none":
        return "none"
    if how == "system":
        os.sync()
        try:
            Path("/proc/sys/vm/drop_caches").write_text("1")
            return "drop_caches"
        except OSError:
            pass  # fall through to the DB's own files
    page_out(db)
    return "fadvise"


def run_child(spec: driver.RunSpec, root: Path, *, meta: dict, limit: int, support: CgroupSupport,
              work: Path) -> Path:
    """Run `spec` in `python -m rxlab.studies.compaction_readahead.child`, in a memory cgroup of `limit`
    bytes (0: none); returns the stored run. A child killed by the limit is one line that says so."""
    job = work / f"{spec.name}.json"
    name = f"rxlab-readahead-{os.getpid()}-{secrets.token_hex(3)}"
    cg = MemoryCgroup(support, name, limit) if limit else None
    job.write_text(json.dumps({"spec": spec.to_dict(), "root": str(root), "meta": meta,
                               "cgroup": str(cg.path) if cg else None,
                               "cgroup_version": cg.version if cg else None}))
    try:
        cmd = [sys.executable, "-m", CHILD_MODULE, "--child", str(job)]
        if cg is not None:  # the shell joins the cgroup, then execs Python: all the child's memory is charged
            cmd = ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cg.procs_file), *cmd]
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        stat = cg.stat() if cg else {}
    finally:
        if cg is not None:
            cg.remove()
        job.unlink(missing_ok=True)
    if r.returncode != 0:
        why = ""
        if stat.get("oom_kill") or r.returncode == -9:
            why = (f" (killed: the {limit / MIB:.0f} MiB memory limit was too small for the process, "
                   f"{stat.get('oom_kill', 0)} OOM kill(s); raise memory_limit)")
        tail = (r.stderr.strip() or r.stdout.strip()).splitlines()[-1:] or [""]
        raise RuntimeError(f"{spec.name}: the overwrite child failed with exit {r.returncode}{why}: "
                           f"{tail[0]}")
    return Path(json.loads(r.stdout.strip().splitlines()[-1])["run"])
