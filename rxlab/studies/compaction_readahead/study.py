"""The compaction-readahead study of the second seed, run on this machine under a memory limit.

The seed (blog-2024-01-08, "Explaining changes in RocksDB performance for
IO-bound workloads") runs db_bench's overwrite step (write-only, limited by
how fast compaction keeps up) with buffered IO and compaction_readahead_size
0 (the default before RocksDB 8.7), 512 KiB, 1 MiB and 2 MiB (the default
since 8.7), and shows throughput, read MB/s and the average read request
size (iostat's rareq-sz) per setting. Its point: the best setting depends on
the device's max_sectors_kb (128 KiB for its RAID device, 1280 KiB for the
SSDs beneath). This module is that study:

* `Params` (checked in one line each) and `Params.settings()`, the scale
  resolved here, with the device that holds the DB (its max_sectors_kb from
  sysfs) and the memory cgroup that will hold the step (`cgroup_support`).
* Buffered reads come from the page cache unless memory is short, so each
  overwrite step runs in a child process (``python -m rxlab.studies.compaction_readahead.study
  --child SPEC.json``) placed in a memory cgroup of its own with a limit well
  below the DB's size (v1: memory.limit_in_bytes, created under the cgroup
  of the calling process; v2: memory.max, beside it), removed afterwards. The child
  runs the step through rxlab.bench.driver.Session and stores it with
  rxlab.core.store.RunWriter, adding per step its own storage reads from
  /proc/self/io and its cgroup's memory.stat.
* `run_study`: load a DB once (fillseq, flush, wait for compaction), then for
  each repetition and setting (rotated per repetition): copy the DB, evict
  it from the page cache (drop_caches, or fadvise DONTNEED on its files), run
  overwrite in the limited child. Every run is stored; `load_study` finds the
  latest study again through the catalog.
* `summary` (medians per setting), `findings_table` (local best and worst
  beside the seed's), `device_table`, the figures and `findings` text.

The page-cache hit ratio (column ``cache.hit``) is defined here, once:

    cache.hit = 1 - own_read_bytes / fs.read_bytes

``fs.read_bytes`` is what RocksDB read through the file system in the step
(rxlab's engine counters, every thread: compaction's reads), and
``own_read_bytes`` what the same process made the block layer read
(/proc/self/io read_bytes: page-cache misses, plus what the kernel read ahead
for it, including the readahead(2) calls RocksDB issues for compaction with
buffered IO). It is the share of what compaction read that was in memory
before the step went for it (files flushed or written moments earlier, or
kept from earlier reads): 1 means nothing came from the device, 0 that all
of it did, whether through RocksDB's own readahead (whose 8 KiB reads then
find the pages it just fetched) or read by read. Below 0 the device
delivered more than RocksDB consumed (prefetched data evicted or never
used). Without a memory limit it sits near 1 on this machine (the DB fits in
memory) and the readahead setting cannot matter; under the limit it should be
low. Both counters are the process's own, so other processes on the machine
cannot move it. The
seeds' columns (qps, iops, reqsz, wmbps) and the read MB/s (rmbps, own_rmbps)
come from rxlab.core.metrics.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter
from tqdm import tqdm

from rxlab.bench import driver
from rxlab.bench.fio import parse_size
from rxlab.core import figures, metrics, published, stats, store, sysinfo
from rxlab.core import params as checks
from rxlab.core.cgroup import CgroupSupport, MemoryCgroup, cgroup_support
from rxlab.core.metrics import column

__all__ = ["PUBLISHED", "SCALES", "SEED_FILE", "CgroupSupport", "MemoryCgroup", "Params", "Settings",
           "StudyResult", "cgroup_support", "device_table", "fig_hit_ratio", "fig_read_mbps", "fig_reqsz",
           "fig_throughput", "findings", "findings_table", "load_study", "plan", "run_study", "study_frame",
           "summary"]

SEED_FILE = "blog-2024-01-08-rocksdb-compaction-readahead.txt"
PUBLISHED = (f"{SEED_FILE}: readahead_findings", f"{SEED_FILE}: readahead_statements")
RUN_PREFIX = "readahead-"
KEY_SIZE = 16
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
SEED_SETTINGS = (0, 512 * KIB, 1 * MIB, 2 * MIB)   # the seed's compaction_readahead_size values
MAX_READAHEAD = 64 * MIB
DROP_CACHES = ("system", "db", "none")
READ_MBPS = "rmbps"   # device read MiB/s (rxlab.core.metrics)


# --------------------------------------------------------------------------- parameters

@dataclass(frozen=True)
class Scale:
    """A scale preset. `num` None: sized from the free disk and the memory limit (full)."""

    num: int | None
    duration: float            # seconds of overwrite per setting
    repeats: int
    memory_limit: int          # bytes of the child's memory cgroup (process + page cache)
    cache_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int


SCALES = {
    # seconds: a 25 MB DB, 4 MiB memtables, a limit that leaves the child a few tens of MB of page cache
    "smoke": Scale(num=60_000, duration=1.0, repeats=1, memory_limit=192 * MIB, cache_size=1 * MIB,
                   write_buffer_size=4 * MIB, target_file_size_base=4 * MIB,
                   max_bytes_for_level_base=16 * MIB),
    # minutes: about 1 GiB of data, 256 MiB for the child (its own memory, about 100 MiB, included), so the
    # levels that compaction reads do not fit in what is left for the page cache
    "small": Scale(num=2_500_000, duration=20.0, repeats=2, memory_limit=256 * MIB, cache_size=8 * MIB,
                   write_buffer_size=32 * MIB, target_file_size_base=32 * MIB,
                   max_bytes_for_level_base=128 * MIB),
    # the largest the disk holds: a quarter of the free space, 4..16 GiB, a 1 GiB limit
    "full": Scale(num=None, duration=120.0, repeats=3, memory_limit=1 * GIB, cache_size=64 * MIB,
                  write_buffer_size=64 * MIB, target_file_size_base=64 * MIB,
                  max_bytes_for_level_base=256 * MIB),
}
FULL_DISK_FRACTION = 0.25
FULL_MIN_BYTES, FULL_MAX_BYTES = 4 * GIB, 16 * GIB
MIN_LIMIT = 64 * MIB   # below this the child (Python, RocksDB, memtables) cannot run


def _size_label(b: int) -> str:
    if b == 0:
        return "0"
    if b % MIB == 0:
        return f"{b // MIB} MiB"
    if b % KIB == 0:
        return f"{b // KIB} KiB"
    return f"{b} B"


def _bytes(v) -> int:

    return parse_size(v)


@dataclass
class Settings:
    """A scale resolved on this machine: what a study will actually run."""

    scale: str
    num: int
    db_bytes: int
    duration: float
    repeats: int
    memory_limit: int            # 0: no limit (the cgroup is unavailable or was not asked for)
    cgroup: CgroupSupport
    cache_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int
    work_dir: str
    free_bytes: int
    device: sysinfo.DeviceInfo
    read_ahead_kb: int | None
    drop_caches: str
    notes: list = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        def size(b):
            return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / MIB:.0f} MiB"

        lim = size(self.memory_limit) if self.memory_limit else "none"
        rows = [("keys (num)", f"{self.num:,}"), ("DB size (keys x (16 + value))", size(self.db_bytes)),
                ("memory limit of the overwrite step", lim),
                ("DB / memory limit",
                 f"{self.db_bytes / self.memory_limit:.1f}x" if self.memory_limit else "-"),
                ("memory cgroup", self.cgroup.reason),
                ("overwrite duration", f"{self.duration:g} s"), ("repeats", str(self.repeats)),
                ("block cache", size(self.cache_size)),
                ("write buffer / target file / L1", f"{size(self.write_buffer_size)} / "
                 f"{size(self.target_file_size_base)} / {size(self.max_bytes_for_level_base)}"),
                ("cache eviction between settings", self.drop_caches),
                ("device", f"{self.device.disk} ({self.device.model})"),
                ("max_sectors_kb", str(self.device.max_sectors_kb)),
                ("read_ahead_kb", str(self.read_ahead_kb)),
                ("work directory", self.work_dir), ("free there", size(self.free_bytes))]
        rows += [("note", n) for n in self.notes]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


@dataclass
class Params(checks.Checked):
    """The study's parameters (the notebook's papermill parameters).

    compaction_readahead_size: the values to run (bytes or sizes such as
    '512k'; the seed's 0, 512k, 1m, 2m). scale: smoke | small | full.
    memory_limit: bytes (or '512m') of the memory cgroup the overwrite step
    runs in, its own memory included; None takes the scale's; 0 runs without
    a limit (buffered reads then mostly hit the page cache). backend: an rxlab
    engine (its counters give the bytes RocksDB read). threads: overwrite's
    writer threads. duration, repeats: None takes the scale's. db_size: bytes
    of key-value data instead of the scale's key count. drop_caches: system
    (echo 1 > /proc/sys/vm/drop_caches), db (fadvise DONTNEED on the DB's
    files only) or none, before each setting.
    """

    compaction_readahead_size: list = field(default_factory=lambda: list(SEED_SETTINGS))
    scale: str = "small"
    memory_limit: int | str | None = None
    backend: str = "posix"
    threads: int = 1
    duration: float | None = None
    repeats: int | None = None
    value_size: int = 400
    db_size: int | str | None = None
    db_dir: str | None = None
    drop_caches: str = "system"

    def __post_init__(self):
        ra = checks.as_list(self.compaction_readahead_size)
        vals = []
        for v in ra:
            try:
                n = _bytes(v) if not checks.is_bool(v) else -1
            except (ValueError, TypeError):
                n = -1
            vals.append(n)
        if not ra or any(n < 0 or n > MAX_READAHEAD for n in vals) or len(set(vals)) != len(vals):
            checks.fail("compaction_readahead_size", self.compaction_readahead_size,
                        f"expected a non-empty list of distinct sizes 0..{MAX_READAHEAD // MIB}m, "
                        "e.g. [0, '512k', '1m', '2m']")
        self.compaction_readahead_size = vals
        checks.choice("scale", self.scale, tuple(SCALES))
        if self.memory_limit is not None:
            try:
                n = _bytes(self.memory_limit) if not checks.is_bool(self.memory_limit) else -1
            except (ValueError, TypeError):
                n = -1
            if n != 0 and n < MIN_LIMIT:
                checks.fail("memory_limit", self.memory_limit,
                            f"expected None (the scale's), 0 (no limit) or a size of at least "
                            f"{MIN_LIMIT // MIB}m, e.g. '512m'")
            self.memory_limit = n
        self.backend = checks.backend(self.backend)
        if checks.is_default(self.backend):
            checks.fail("backend", self.backend, "needs an rxlab engine (posix, libaio, io_uring): its "
                        "counters give the bytes RocksDB read, the hit ratio's denominator")
        if not (checks.is_int(self.threads) and 1 <= self.threads <= 64):
            checks.fail("threads", self.threads, "expected an integer 1..64 (overwrite's writer threads)")
        if self.duration is not None and not (checks.is_number(self.duration) and 0 < self.duration <= 3600):
            checks.fail("duration", self.duration, "expected None (the scale's) or seconds in (0, 3600]")
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 20):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..20")
        if not (checks.is_int(self.value_size) and 1 <= self.value_size <= 1 << 20):
            checks.fail("value_size", self.value_size, "expected an integer 1..1048576 (bytes)")
        if self.db_size is not None:
            try:
                n = _bytes(self.db_size)
            except (ValueError, TypeError):
                n = -1
            if n < MIB:
                checks.fail("db_size", self.db_size,
                            "expected None (the scale's) or a size of at least 1m, e.g. '2g'")
        self.db_dir = checks.db_dir(self.db_dir, need_direct_io=False)
        checks.choice("drop_caches", self.drop_caches, DROP_CACHES)
        self.settings()  # the disk must hold the scale and the DB must sit on a block device

    def settings(self) -> Settings:
        """The scale resolved here: sizes, the memory limit and cgroup, the device; checks the disk."""
        sc = SCALES[self.scale]
        work = Path(self.db_dir) if self.db_dir is not None else Path(tempfile.gettempdir())
        free = shutil.disk_usage(sysinfo._existing(work)).free
        dev = sysinfo.device_for_path(work)
        if dev.disk is None:
            raise ValueError(f"db_dir={str(work)!r}: on {dev.fstype}, which has no block device; the study "
                             "reads the device's counters: choose a directory on a disk file system")
        entry = KEY_SIZE + self.value_size
        if self.db_size is not None:
            num = max(1, _bytes(self.db_size) // entry)
        elif sc.num is not None:
            num = sc.num
        else:
            db_bytes = int(min(FULL_MAX_BYTES, free * FULL_DISK_FRACTION))
            if db_bytes < FULL_MIN_BYTES:
                raise ValueError(f"scale='full': needs {FULL_MIN_BYTES * 4 / GIB:.0f} GiB free at {work}, "
                                 f"only {free / GIB:.1f} GiB; use scale='small' or another db_dir")
            num = db_bytes // entry
        db_bytes = num * entry
        need = 3 * db_bytes  # the loaded DB, the copy a setting overwrites, compaction's output
        if need > free:
            raise ValueError(f"scale={self.scale!r}: needs about {need / GIB:.1f} GiB free at {work}, only "
                             f"{free / GIB:.1f} GiB; choose another db_dir or a smaller db_size")
        support = cgroup_support()
        limit = sc.memory_limit if self.memory_limit is None else int(self.memory_limit)
        notes = []
        if limit and not support.available:
            notes.append(f"memory limit unavailable ({support.reason}): the step runs without one, so "
                         "buffered reads may come from the page cache (see cache.hit)")
            limit = 0
        drop = self.drop_caches
        if drop == "system" and os.geteuid() != 0:
            notes.append("not root: cannot write /proc/sys/vm/drop_caches; evicting the DB's files "
                         "(fadvise DONTNEED) instead")
            drop = "db"
        ra_kb = sysinfo._read_int(Path("/sys/block") / dev.disk / "queue/read_ahead_kb")
        return Settings(scale=self.scale, num=int(num), db_bytes=int(db_bytes),
                        duration=float(self.duration) if self.duration is not None else sc.duration,
                        repeats=self.repeats if self.repeats is not None else sc.repeats,
                        memory_limit=int(limit), cgroup=support, cache_size=sc.cache_size,
                        write_buffer_size=sc.write_buffer_size,
                        target_file_size_base=sc.target_file_size_base,
                        max_bytes_for_level_base=sc.max_bytes_for_level_base, work_dir=str(work),
                        free_bytes=int(free), device=dev, read_ahead_kb=ra_kb, drop_caches=drop, notes=notes)


# --------------------------------------------------------------------------- running

_rot = stats.rotate


def plan(params: Params) -> pd.DataFrame:
    """The overwrite runs in execution order: rep, compaction_readahead_size (rotated per repetition)."""
    rows = [{"rep": rep, "readahead": ra, "setting": _size_label(ra)}
            for rep in range(params.settings().repeats) for ra in _rot(params.compaction_readahead_size, rep)]
    return pd.DataFrame(rows, columns=["rep", "readahead", "setting"])


_new_study_id = stats.new_study_id


def _run_name(study: str, rep: int, readahead: int) -> str:
    return f"{RUN_PREFIX}{study}-r{rep}-crs{readahead}"


_NAME_RE = re.compile(r"^readahead-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)-crs(?P<crs>\d+)$")


def _spec(params: Params, s: Settings, db: Path, *, name: str, steps: list, readahead: int | None,
          existing: bool, seed: int = 0):

    return driver.RunSpec(
        db=str(db), name=name, backend=params.backend, steps=steps, num=s.num, key_size=KEY_SIZE,
        value_size=params.value_size, threads=params.threads, block_align=False, compression="none",
        cache_size=s.cache_size, use_direct_reads=False, use_direct_io_for_flush_and_compaction=False,
        write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
        max_bytes_for_level_base=s.max_bytes_for_level_base, compaction_readahead_size=readahead,
        use_existing_db=existing, scale=params.scale, seed=seed)


def _load(params: Params, s: Settings, db: Path, study: str, root: Path) -> Path:
    """The DB every setting starts from: fillseq, flush, wait for compaction (stored as a run)."""

    spec = _spec(params, s, db, name=f"{RUN_PREFIX}{study}-load",
                 steps=["fillseq", "flush", "waitforcompaction"], readahead=None, existing=False)
    spec.threads = 1
    return driver.run(spec, root=root, progress=False)


def _copy_db(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)


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
    for p in Path(db).rglob("*"):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return "fadvise"


def _run_child(spec, root: Path, meta: dict, limit: int, support: CgroupSupport, work: Path) -> Path:  # noqa: PLR0917
    """Run `spec` in `python -m rxlab.studies.compaction_readahead.study --child`, in a memory cgroup of `limit` bytes (0: none)."""
    job = work / f"{spec.name}.json"
    name = f"rxlab-readahead-{os.getpid()}-{secrets.token_hex(3)}"
    cg = MemoryCgroup(support, name, limit) if limit else None
    job.write_text(json.dumps({"spec": spec.to_dict(), "root": str(root), "meta": meta,
                               "cgroup": str(cg.path) if cg else None,
                               "cgroup_version": cg.version if cg else None}))
    try:
        cmd = [sys.executable, "-m", "rxlab.studies.compaction_readahead.study", "--child", str(job)]
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


@dataclass
class StudyResult:
    """A study: its runs and one tidy frame (one row per overwrite step), keyed by study, rep, readahead."""

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    settings: Settings | None = None
    elapsed_s: float | None = None

    @property
    def readahead(self) -> list[int]:
        return sorted(int(r) for r in self.frame["readahead"].unique())

    @property
    def max_sectors_kb(self) -> int | None:
        v = self.frame.get("spec.max_sectors_kb")
        return int(v.dropna().iloc[0]) if v is not None and v.notna().any() else None


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True) -> StudyResult:
    """Load the DB once, then run overwrite per repetition and setting (see `plan`) in a limited child.

    The DBs live in `params.db_dir` (or a temporary directory) and are
    deleted at the end; the runs stay in the store (`root`, the store's
    default). The load is stored as a run too (named readahead-<study>-load).
    """


    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    study = _new_study_id()
    temp = params.db_dir is None
    work = Path(tempfile.mkdtemp(prefix="rxlab-readahead-")) if temp else Path(params.db_dir)
    work.mkdir(parents=True, exist_ok=True)
    base, db = work / f"readahead-base-{study}", work / f"readahead-db-{study}"
    steps = plan(params)
    runs: list[Path] = []
    t0 = time.monotonic()
    try:
        load = _load(params, s, base, study, root)
        bar = tqdm(steps.itertuples(index=False), total=len(steps), desc=f"readahead {params.scale}",
                   unit="run", disable=not progress)
        for r in bar:
            bar.set_postfix_str(f"rep {r.rep} compaction_readahead_size={r.setting}")
            _copy_db(base, db)
            how = evict(db, s.drop_caches)
            spec = _spec(params, s, db, name=_run_name(study, r.rep, r.readahead),
                         steps=[{"name": "overwrite", "duration": s.duration}], readahead=int(r.readahead),
                         existing=True, seed=1000 * (r.rep + 1))
            meta = {"study": study, "rep": int(r.rep), "readahead": int(r.readahead), "evicted": how,
                    "memory_limit": s.memory_limit, "max_sectors_kb": s.device.max_sectors_kb,
                    "read_ahead_kb": s.read_ahead_kb, "load_run": load.name}
            runs.append(_run_child(spec, root, meta, s.memory_limit, s.cgroup, work))
    finally:
        shutil.rmtree(db, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)
        if temp:
            shutil.rmtree(work, ignore_errors=True)
    frame = study_frame(store.catalog(root, runs=runs))
    return StudyResult(study=study, frame=frame, runs=runs, root=root, settings=s,
                       elapsed_s=time.monotonic() - t0)


# --------------------------------------------------------------------------- the child

def _cgroup_stat(path: str | None, version: int | None) -> dict:
    if not path:
        return {}
    out = MemoryCgroup.existing(path, version).stat()
    out.pop("limit")
    return out


# memory.stat counters (deltas over a step); the rest are levels (taken at the step's end)
_CG_COUNTERS = ("pgpgin", "pgpgout", "pgfault", "pgmajfault", "failcnt", "oom_kill", "workingset_refault",
                "workingset_refault_file", "workingset_activate", "pgscan", "pgsteal")
_CG_KEEP = ("cache", "rss", "dirty", "writeback", "mapped_file", "file", "anon", "file_dirty", "usage",
            "peak", *_CG_COUNTERS)


def child_main(job_file: str | os.PathLike) -> Path:
    """The child's side: join the cgroup, run the spec's steps, store them with per-step extras.

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
        m0 = _cgroup_stat(cg_path, cg_version)

        def finish() -> dict:
            m1 = _cgroup_stat(cg_path, cg_version)
            return {f"cgroup.{k}": m1[k] - m0.get(k, 0) if k in _CG_COUNTERS else m1[k] for k in _CG_KEEP if k in m1}
        return finish

    memory = {"memory_cgroup": {"path": cg_path, "version": cg_version, "limit": job["meta"].get("memory_limit")}}
    return driver.run(driver.RunSpec.from_dict(job["spec"]), job["root"], progress=False, meta=job["meta"],
                      fingerprint=memory, step_probe=probe)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rxlab.studies.compaction_readahead.study",
                                 description="Run one stored overwrite run of the readahead study "
                                             "(the study starts it in a memory cgroup).")
    ap.add_argument("--child", required=True, metavar="JOB.json", help="job file written by run_study")
    a = ap.parse_args(argv)
    path = child_main(a.child)
    print(json.dumps({"run": str(path)}), flush=True)
    return 0


# --------------------------------------------------------------------------- tables

_KEYS = ["study", "rep", "readahead", "setting", "run_id"]


def _col(df: pd.DataFrame, name: str) -> pd.Series:

    return column(df, name)


def derived(df: pd.DataFrame) -> pd.DataFrame:
    """This study's columns beside rxlab.core.metrics.seed_columns (same index).

    rmbps (device-wide, iostat's rMB/s) and own_rmbps (the process's own
    storage reads) come from rxlab.core.metrics. cache.hit: the page-cache hit ratio (module docstring). compact_rmbps:
    RocksDB's compaction read MiB/s (ticker rocksdb.compact.read.bytes).
    stall.pct: write-stall time (ticker rocksdb.stall.micros) as % of the
    step's wall time: how much overwrite waited for compaction.
    """

    seed = metrics.seed_columns(df)
    wall = _col(df, "wall_s").where(lambda w: w > 0)
    out = pd.DataFrame(index=df.index)
    for c in ("qps", "iops", "reqsz", "wmbps", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat"):
        out[c] = seed[c]
    out[READ_MBPS] = seed["rmbps"]
    out["own_rmbps"] = seed["own_rmbps"]
    fs = _col(df, "fs.read_bytes")
    out["cache.hit"] = 1.0 - _col(df, "own_read_bytes") / fs.where(fs > 0)
    out["compact_rmbps"] = _col(df, "ticker.rocksdb.compact.read.bytes").fillna(0) / MIB / wall
    out["stall.pct"] = _col(df, "ticker.rocksdb.stall.micros").fillna(0) / 1e6 / wall * 100
    out["fs_rmbps"] = fs / MIB / wall
    return out


DERIVED = ("qps", "iops", "reqsz", READ_MBPS, "own_rmbps", "fs_rmbps", "cache.hit", "compact_rmbps",
           "stall.pct", "wmbps", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat")


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """One row per overwrite step of the catalog's readahead-<study>-r<rep>-crs<bytes> runs, keys first."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=[*_KEYS, *DERIVED])
    m = cat["run_name"].astype(str).str.extract(_NAME_RE)
    keep = m["study"].notna() & (cat.get("benchmark", cat["name"]).astype(str) == "overwrite")
    cat, m = cat[keep].copy(), m[keep]
    if cat.empty:
        return pd.DataFrame(columns=[*_KEYS, *DERIVED])
    keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int), "readahead": m["crs"].astype(int),
                         "setting": m["crs"].astype(int).map(_size_label)}, index=cat.index)
    d = derived(cat)
    raw = cat.drop(columns=[c for c in (*d.columns, "readahead", "rep", "study") if c in cat.columns])
    out = pd.concat([keys, raw, d], axis=1)
    first = [c for c in _KEYS if c in out.columns]
    out = out[first + [c for c in out.columns if c not in first]]
    return out.sort_values(["study", "rep", "readahead"], kind="stable").reset_index(drop=True)


def load_study(root: str | os.PathLike | None = None, *, study: str | None = None,
               scale: str | None = None) -> StudyResult | None:
    """The latest study in the store (runs named readahead-*), or None; filters: study id, scale."""

    root = Path(root) if root is not None else store.default_root()
    cat = store.catalog(root)
    if cat.empty or "run_name" not in cat.columns:
        return None
    frame = study_frame(cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)])
    for sid in sorted(frame["study"].unique(), reverse=True):
        f = frame[frame["study"] == sid]
        if study is not None and sid != study:
            continue
        if scale is not None and set(f.get("spec.scale", pd.Series(dtype=object)).dropna()) != {scale}:
            continue
        return StudyResult(study=str(sid), frame=f.reset_index(drop=True),
                           runs=[root / r for r in f["run_id"].unique()], root=root)
    return None


SUMMARY_COLUMNS = ("setting", "readahead_kb", "qps", READ_MBPS, "reqsz", "iops", "cache.hit", "own_rmbps",
                   "fs_rmbps", "compact_rmbps", "stall.pct", "wmbps", "cgroup.peak_mib", "cgroup.cache_mib",
                   "max_sectors_kb", "above_max_sectors", "n")


def summary(result: StudyResult) -> pd.DataFrame:
    """Medians over the repetitions, one row per setting, in the seed's terms.

    readahead_kb: compaction_readahead_size in KiB; qps: overwrite
    throughput; rmbps, reqsz, iops: the device (iostat's rMB/s, rareq-sz,
    r/s); cache.hit: the page-cache hit ratio; own_rmbps: the process's own
    storage reads; fs_rmbps: what RocksDB read through the file system;
    compact_rmbps: compaction's reads; stall.pct: write stalls; cgroup.peak_mib
    and cgroup.cache_mib: the cgroup's peak usage and page cache at the end;
    above_max_sectors: the setting exceeds the device's max_sectors_kb.
    """
    f = result.frame
    msk = result.max_sectors_kb
    g = f.assign(**{"cgroup.peak_mib": _col(f, "cgroup.peak") / MIB,
                    "cgroup.cache_mib": (_col(f, "cgroup.cache") if "cgroup.cache" in f.columns
                                         else _col(f, "cgroup.file")) / MIB})
    cols = [c for c in (*DERIVED, "cgroup.peak_mib", "cgroup.cache_mib") if c in g.columns]
    num = g[["readahead", *cols]].apply(pd.to_numeric, errors="coerce")
    med = num.groupby("readahead", sort=True)[cols].median()
    med["n"] = num.groupby("readahead").size()
    med = med.reset_index()
    med["setting"] = med["readahead"].map(_size_label)
    med["readahead_kb"] = med["readahead"] / KIB
    med["max_sectors_kb"] = msk
    med["above_max_sectors"] = med["readahead_kb"] > msk if msk else np.nan
    return med[[c for c in SUMMARY_COLUMNS if c in med.columns]]


_FINDING_METRICS = {"throughput": "qps", "read MB/s (iostat)": READ_MBPS, "rareq-sz (iostat)": "reqsz"}


def findings_table(result: StudyResult) -> pd.DataFrame:
    """Per metric of the seed's three graphs: the best and worst setting here and in the seed.

    The seed names the best and worst of its three explicit settings (it
    states no numbers); local best and worst are over the settings run here,
    by the medians of `summary`, with the spread of the medians in % of the best.
    """

    pub = published.load("readahead_findings")
    s = summary(result)
    rows = []
    for metric, col in _FINDING_METRICS.items():
        p = pub[pub["metric"] == metric]
        v = s.set_index("setting")[col].dropna()
        best = v.idxmax() if len(v) else ""
        worst = v.idxmin() if len(v) else ""
        spread = (v.max() - v.min()) / v.max() * 100 if len(v) and v.max() else np.nan
        rows.append({"metric": metric, "column": col, "best here": best, "worst here": worst,
                     "best/worst gap %": spread,
                     "best in seed": str(p["best"].iloc[0]).removeprefix("compaction_readahead_size=")
                     if len(p) else "",
                     "worst in seed": (str(p["worst"].iloc[0]).removeprefix("compaction_readahead_size=")
                                       if len(p) and str(p["worst"].iloc[0]) not in ("", "nan") else "")})
    return pd.DataFrame(rows)


def device_table(settings: Settings) -> pd.DataFrame:
    """The device's queue limits here beside the seed's (max_sectors_kb of md2 and its SSDs)."""

    d = settings.device
    rows = [{"device": f"{d.disk} (here)", "max_sectors_kb": d.max_sectors_kb,
             "max_hw_sectors_kb": d.max_hw_sectors_kb, "read_ahead_kb": settings.read_ahead_kb,
             "scheduler": d.scheduler, "source": "local"}]
    st = published.load("readahead_statements")
    for _, r in st[st["quantity"] == "max_sectors_kb"].iterrows():
        rows.append({"device": r["condition"], "max_sectors_kb": float(r["value"]),
                     "max_hw_sectors_kb": np.nan, "read_ahead_kb": np.nan, "scheduler": "",
                     "source": "published"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures

def _bars(result: StudyResult, col: str, ylabel: str, *, ref_lines: Sequence[tuple] = (),
          marks: dict | None = None):
    """Bars of the per-setting medians, circles for the repetitions; the seed's verdicts under the ticks."""

    f = result.frame
    s = summary(result)
    fig, ax = figures.figure(aspect=0.72)
    x = np.arange(len(s))
    color = figures.backend_color(str(f["backend"].iloc[0]) if "backend" in f.columns and len(f) else "posix")
    ax.bar(x, s[col], 0.6, color=color, label="median here")
    for i, ra in enumerate(s["setting"]):
        pts = pd.to_numeric(f.loc[f["setting"] == ra, col], errors="coerce").dropna()
        if len(pts) > 1:
            ax.plot(np.full(len(pts), i), pts, "o", ms=3, color="#222222", mfc="none")
    for y, label, style in ref_lines:
        ax.axhline(y, color="#555555", lw=0.8, ls=style)
        ax.annotate(label, (-0.45, y), ha="left", va="bottom", fontsize=6, color="#333333")
    _ticks(ax, s, marks)
    ax.set_ylabel(ylabel)
    return fig, ax


def _ticks(ax, s: pd.DataFrame, marks: dict | None) -> None:
    marks = marks or {}
    ax.set_xticks(np.arange(len(s)), [f"{r}\n({marks[r]})" if r in marks else str(r) for r in s["setting"]])
    ax.set_xlabel("compaction_readahead_size")


def _seed_marks(metric: str) -> dict:
    """{setting label: 'seed: best' / 'seed: worst'} from the published findings."""

    p = published.load("readahead_findings")
    p = p[p["metric"] == metric]
    out: dict = {}
    for kind in ("best", "worst"):
        v = str(p[kind].iloc[0]) if len(p) else ""
        m = re.search(r"=(\d+)(KB|MB)", v)
        if m:
            b = int(m.group(1)) * (KIB if m.group(2) == "KB" else MIB)
            out[_size_label(b)] = f"seed: {kind}"
    return out


def fig_throughput(result: StudyResult):
    """overwrite QPS per setting (bars: medians, circles: repetitions), the seed's best and worst marked."""
    fig, ax = _bars(result, "qps", "overwrite operations per second", marks=_seed_marks("throughput"))
    ax.set_title("throughput of overwrite (compaction-bound)")
    return fig


def fig_read_mbps(result: StudyResult):
    """Device read MiB/s per setting (diskstats) with the process's own reads and RocksDB's reads beside."""

    s = summary(result)
    fig, ax = figures.figure(aspect=0.72)
    x = np.arange(len(s))
    series = [(READ_MBPS, "device (diskstats)", figures.backend_color("posix")),
              ("own_rmbps", "this process (/proc/self/io)", "#e69f00"),
              ("fs_rmbps", "RocksDB through the file system", "#009e73")]
    w = 0.8 / len(series)
    for i, (col, label, color) in enumerate(series):
        ax.bar(x - 0.4 + w * (i + 0.5), s[col], w * 0.92, color=color, label=label)
    top = max(float(np.nanmax(s[[c for c, _, _ in series]].to_numpy(float))) * 1.3, 1.0)
    ax.set_ylim(0, top)
    _ticks(ax, s, _seed_marks("read MB/s (iostat)"))
    ax.set_ylabel("read MiB/s")
    ax.set_title("reads during overwrite")
    ax.legend(loc="upper left", fontsize=6)
    return fig


def fig_reqsz(result: StudyResult):
    """Device read request size (reqsz, KiB) per setting, log scale, beside the setting and max_sectors_kb."""

    msk = result.max_sectors_kb
    refs = [(msk, f"max_sectors_kb = {msk}", "--")] if msk else []
    fig, ax = _bars(result, "reqsz", "average read request size, reqsz (KiB)", ref_lines=refs,
                    marks=_seed_marks("rareq-sz (iostat)"))
    s = summary(result)
    ra = s["readahead_kb"].where(s["readahead_kb"] > 0)
    ax.plot(np.arange(len(s)), ra, "_", ms=18, mew=1.5, color="#d55e00", label="compaction_readahead_size")
    ax.set_yscale("log", base=2)
    vals = pd.to_numeric(result.frame["reqsz"], errors="coerce").dropna()
    lo = max(1.0, float(vals.min()) / 2) if len(vals) else 1.0
    top = [msk or 0, ra.max() if ra.notna().any() else 0, vals.max() if len(vals) else 1]
    hi = max(float(np.nanmax(top)), 8.0) * 2
    ax.set_ylim(lo, hi)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, fontsize=6)  # below: clear of the data
    ax.set_title("device read size (iostat's rareq-sz)")
    return fig


def fig_hit_ratio(result: StudyResult):
    """Page-cache hit ratio of RocksDB's reads per setting (1: all from memory, 0: all from the device)."""
    fig, ax = _bars(result, "cache.hit", "page-cache hit ratio, cache.hit")
    ax.axhline(0, color="#555555", lw=0.6)
    lo = float(np.nanmin([0.0, *pd.to_numeric(result.frame["cache.hit"], errors="coerce").dropna()]))
    ax.set_ylim(min(lo * 1.1, 0), 1.05)
    lim = result.frame.get("spec.memory_limit")
    lim_txt = f"memory limit {float(lim.iloc[0]) / MIB:.0f} MiB" if lim is not None and float(lim.iloc[0]) \
        else "no memory limit"
    ax.set_title(f"hit ratio of RocksDB's reads ({lim_txt})")
    return fig


# --------------------------------------------------------------------------- text

def findings(result: StudyResult) -> str:
    """What the study shows, in a few Markdown bullets with its numbers."""
    s = summary(result)
    ft = findings_table(result).set_index("metric")
    msk = result.max_sectors_kb
    lim = result.frame.get("spec.memory_limit")
    limit = float(lim.iloc[0]) if lim is not None and len(lim) else 0.0
    lines = []
    if msk:
        above = [r for r, a in zip(s["setting"], s["above_max_sectors"], strict=True) if a is True]
        lines.append(f"- The device's max_sectors_kb is {msk} KiB (the seed's RAID device: 128, its SSDs: "
                     "1280); "
                     + (f"{', '.join(above)} exceed it." if above else
                        "no setting run here exceeds it, so the seed's condition (readahead larger than "
                        "max_sectors_kb) is not tested on this device."))
    qps = s.set_index("setting")["qps"]
    lines.append("- overwrite throughput: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in qps.items())
                 + f"; best here {ft.loc['throughput', 'best here']}, "
                   f"worst {ft.loc['throughput', 'worst here']} "
                   f"(seed: best {ft.loc['throughput', 'best in seed']}, worst "
                   f"{ft.loc['throughput', 'worst in seed']}); the gap is "
                   f"{ft.loc['throughput', 'best/worst gap %']:.0f}% of the best.")
    rs = s.set_index("setting")
    lines.append("- Device reads: " + ", ".join(
        f"{k} {r[READ_MBPS]:.1f} MiB/s in {r['reqsz']:.0f} KiB requests" for k, r in rs.iterrows())
        + f" (seed: most MB/s with {ft.loc['read MB/s (iostat)', 'best in seed']}, largest rareq-sz with "
          f"{ft.loc['rareq-sz (iostat)', 'best in seed']}, smallest with "
          f"{ft.loc['rareq-sz (iostat)', 'worst in seed']}).")
    lines.append("- Page-cache hit ratio of RocksDB's reads (1 - own device reads / file-system reads): "
                 + ", ".join(f"{k} {r['cache.hit']:.2f}" for k, r in rs.iterrows())
                 + (f", under a {limit / MIB:.0f} MiB memory limit" if limit else ", without a memory limit")
                 + f"; write stalls took {', '.join(f'{v:.0f}%' for v in rs['stall.pct'])} of the step.")
    crs = rs["compact_rmbps"]
    lines.append("- Compaction read " + ", ".join(f"{v:.1f} MiB/s at {k}" for k, v in crs.items())
                 + " (RocksDB's own count of compaction input bytes per second of the step).")
    if (rs["stall.pct"] < 5).all():
        lines.append("- Write stalls took under 5% of every step: overwrite was not compaction-bound here, "
                     "so the readahead setting changes how fast compaction reads, not how fast the writer "
                     "writes.")
    own, dev = pd.to_numeric(result.frame["own_read_bytes"]), (
        pd.to_numeric(result.frame["disk_read_sectors"]) * 512)
    if dev.sum() > 0 and own.sum() < 0.95 * dev.sum():
        lines.append(f"- The device served {dev.sum() / max(own.sum(), 1):.2f}x the reads this process "
                     "issued: "
                     "other processes' IO is in the device-wide columns (rmbps, reqsz, iops).")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
