"""The readahead study's parameters: the settings to run, the memory limit, scale presets, the device here."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.core import params as checks
from rxlab.core import published, scales, study, sysinfo
from rxlab.core.cgroup import CgroupSupport, cgroup_support
from rxlab.core.study import StudySettings
from rxlab.core.turns_plan import Compare, TurnsParams
from rxlab.core.units import parse_size

SEED_FILE = "blog-2024-01-08-rocksdb-compaction-readahead.txt"
PUBLISHED = (f"{SEED_FILE}: readahead_findings", f"{SEED_FILE}: readahead_statements")
KEY_SIZE = 16
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
SEED_SETTINGS = (0, 512 * KIB, 1 * MIB, 2 * MIB)   # the seed's compaction_readahead_size values
MAX_READAHEAD = 64 * MIB
DROP_CACHES = ("system", "db", "none")

# What the study compares, in turns (rxlab.core.turns_plan): each setting's overwrite throughput (the seed's
# headline graph) against the first setting given, the seed's base: 0, the default before RocksDB 8.7. Read
# MB/s and request sizes stay per-turn values beside it (tables.per_turn), not comparisons.
COMPARE = Compare(config="setting", metric="qps", turn="rep", label="overwrite ops/s")


@dataclass(frozen=True)
class Scale(scales.Scale):
    """The common preset (`num` None: sized from the free disk and the memory limit, full) and the
    study's own: the child's memory cgroup (process + page cache) and the LSM tree's shape."""

    memory_limit: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int


SCALES = scales.presets(
    Scale,
    # seconds: a 25 MB DB, 4 MiB memtables, a limit that leaves the child a few tens of MB of page cache
    smoke={"num": 60_000, "memory_limit": 192 * MIB, "write_buffer_size": 4 * MIB,
           "target_file_size_base": 4 * MIB, "max_bytes_for_level_base": 16 * MIB},
    # minutes: about 1 GiB of data, 256 MiB for the child (its own memory, about 100 MiB, included), so the
    # levels that compaction reads do not fit in what is left for the page cache. The whole study took 256 s
    # on the lab VM before turns (a 20 s load, then 2 x 4 runs of a 20 s step and 9 s around each, copying
    # the 1 GiB DB among them, which overwrite.copy_db now links): the turns get 225 s of it, and an 8 s
    # step (at about 90k writes/s the four 32 MiB memtables that trigger the first compaction fill in some
    # 4 s; compaction reads in the rest), so that three turns of five runs (the base twice) fit and give an
    # interval. Longer steps, more turns: duration=20, budget="10m".
    small={"num": 2_500_000, "duration": 8.0, "repeats": 2, "memory_limit": 256 * MIB,
           "write_buffer_size": 32 * MIB, "target_file_size_base": 32 * MIB,
           "max_bytes_for_level_base": 128 * MIB, "budget_s": 225.0},
    # the largest the disk holds: a quarter of the free space, 4..16 GiB, a 1 GiB limit
    full={"duration": 120.0, "memory_limit": 1 * GIB, "write_buffer_size": 64 * MIB,
          "target_file_size_base": 64 * MIB, "max_bytes_for_level_base": 256 * MIB},
)
MIN_LIMIT = 64 * MIB   # below this the child (Python, RocksDB, memtables) cannot run


def size_label(b: int) -> str:
    """A setting as the tables and figures name it: 0, 512 KiB, 1 MiB, 2 MiB."""
    if b == 0:
        return "0"
    if b % MIB == 0:
        return f"{b // MIB} MiB"
    if b % KIB == 0:
        return f"{b // KIB} KiB"
    return f"{b} B"


def _size(b: float) -> str:
    return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / MIB:.0f} MiB"


def _size_or_bad(v) -> int:
    """Bytes of an int or a size such as '512k'; -1 for anything else (booleans included)."""
    if checks.is_bool(v):
        return -1
    try:
        return parse_size(v)
    except (ValueError, TypeError):
        return -1


def read_ahead_kb(disk: str | None) -> int | None:
    """The disk's queue/read_ahead_kb (the kernel's own readahead for buffered reads), None if unreadable."""
    try:
        return int((Path("/sys/block") / str(disk) / "queue/read_ahead_kb").read_text())
    except (OSError, ValueError):
        return None


def seed_devices() -> pd.DataFrame:
    """The seed's devices (its RAID device md2 and the SSDs beneath), with their max_sectors_kb."""
    st = published.load("readahead_statements")
    st = st[st["quantity"] == "max_sectors_kb"]
    return pd.DataFrame({"device": st["condition"], "max_sectors_kb": st["value"].astype(float),
                         "max_hw_sectors_kb": np.nan, "read_ahead_kb": np.nan, "scheduler": "",
                         "source": "published"}).reset_index(drop=True)


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved on this machine: what a study will actually run."""

    memory_limit: int            # 0: no limit (the cgroup is unavailable or was not asked for)
    cgroup: CgroupSupport
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int
    work_dir: str
    free_bytes: int
    device: sysinfo.DeviceInfo
    read_ahead_kb: int | None
    drop_caches: str
    turns: str = ""     # the stopping rule, in words
    notes: list = field(default_factory=list)

    def rows(self) -> list[tuple[str, object]]:
        """The common rows but `repeats`: turns decide how many (the `turns` row)."""
        return [r for r in super().rows() if r[0] != "repeats"]

    def own_rows(self) -> list[tuple[str, str]]:
        lim = _size(self.memory_limit) if self.memory_limit else "none"
        rows = [("memory limit of the overwrite step", lim),
                ("DB / memory limit",
                 f"{self.db_bytes / self.memory_limit:.1f}x" if self.memory_limit else "-"),
                ("memory cgroup", self.cgroup.reason),
                ("write buffer / target file / L1", f"{_size(self.write_buffer_size)} / "
                 f"{_size(self.target_file_size_base)} / {_size(self.max_bytes_for_level_base)}"),
                ("cache eviction before each run", self.drop_caches),
                ("device", f"{self.device.disk} ({self.device.model})"),
                ("max_sectors_kb", str(self.device.max_sectors_kb)),
                ("read_ahead_kb", str(self.read_ahead_kb)), ("turns", self.turns)]
        return rows + [("note", n) for n in self.notes]

    def device_table(self) -> pd.DataFrame:
        """The device that will hold the DB beside the seed's (before a run; tables.device_table after)."""
        d = self.device
        here = {"device": f"{d.disk} (here)", "max_sectors_kb": d.max_sectors_kb,
                "max_hw_sectors_kb": d.max_hw_sectors_kb, "read_ahead_kb": self.read_ahead_kb,
                "scheduler": d.scheduler, "source": "local"}
        return pd.concat([pd.DataFrame([here]), seed_devices()], ignore_index=True)


@dataclass
class Params(TurnsParams):
    """The study's parameters (the notebook's papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): target (percent), budget,
    min_turns and max_turns set the stopping rule; `repeats`, when given, runs
    exactly that many turns instead.

    compaction_readahead_size: the values to run (bytes or sizes such as
    '512k'; the seed's 0, 512k, 1m, 2m), the first the base every other is
    compared with. scale: smoke | small | full.
    memory_limit: bytes (or '512m') of the memory cgroup the overwrite step
    runs in, its own memory included; None takes the scale's; 0 runs without
    a limit (buffered reads then mostly hit the page cache). backend: an rxlab
    engine (its counters give the bytes RocksDB read). threads: overwrite's
    writer threads. duration: None takes the scale's. db_size: bytes
    of key-value data instead of the scale's key count. drop_caches: system
    (echo 1 > /proc/sys/vm/drop_caches), db (fadvise DONTNEED on the DB's
    files only) or none, before each run.
    """

    SCALES = SCALES   # the turns' budget by scale (small's 225 s), not the common one

    compaction_readahead_size: list = field(default_factory=lambda: list(SEED_SETTINGS))
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
        super().__post_init__()
        ra = checks.as_list(self.compaction_readahead_size)
        vals = [_size_or_bad(v) for v in ra]
        if not ra or any(n < 0 or n > MAX_READAHEAD for n in vals) or len(set(vals)) != len(vals):
            checks.fail("compaction_readahead_size", self.compaction_readahead_size,
                        f"expected a non-empty list of distinct sizes 0..{MAX_READAHEAD // MIB}m, "
                        "e.g. [0, '512k', '1m', '2m']")
        if len(vals) < 2 and self.scale != "smoke":
            # the findings compare settings (best, worst, the gap): one compares nothing (smoke: the pipeline)
            checks.fail("compaction_readahead_size", self.compaction_readahead_size,
                        "one setting compares nothing: give two or more, e.g. [0, '2m'] (smoke runs one)")
        self.compaction_readahead_size = vals
        if self.memory_limit is not None:
            n = _size_or_bad(self.memory_limit)
            if n != 0 and n < MIN_LIMIT:
                checks.fail("memory_limit", self.memory_limit,
                            f"expected None (the scale's), 0 (no limit) or a size of at least "
                            f"{MIN_LIMIT // MIB}m, e.g. '512m'")
            self.memory_limit = n
        self.backend = checks.backend(self.backend)
        if checks.is_default(self.backend):
            checks.fail("backend", self.backend, "needs an rxlab engine (posix, libaio, io_uring): its "
                        "counters give the bytes RocksDB read, the hit ratio's denominator")
        checks.integer("threads", self.threads, 1, 64, note=" (overwrite's writer threads)")
        checks.optional_seconds("duration", self.duration)
        checks.optional_integer("repeats", self.repeats, 1, 100)
        checks.integer("value_size", self.value_size, 1, 1 << 20, note=" (bytes)")
        checks.db_size(self.db_size)
        self.db_dir = checks.db_dir(self.db_dir, need_direct_io=False)
        checks.choice("drop_caches", self.drop_caches, DROP_CACHES)
        self.settings()  # the disk must hold the scale and the DB must sit on a block device


    def settings(self) -> Settings:
        """The scale resolved here: sizes, the memory limit and cgroup, the device; checks the disk."""
        sc = SCALES[self.scale].given(duration=self.duration, repeats=self.repeats)
        work, free = sysinfo.work_space(self.db_dir)
        dev = sysinfo.device_for_path(work)
        if dev.disk is None:
            raise ValueError(f"db_dir={str(work)!r}: on {dev.fstype}, which has no block device; the study "
                             "reads the device's counters: choose a directory on a disk file system")
        entry = KEY_SIZE + self.value_size
        num = study.key_count(entry, work, free, num=sc.num, db_size=self.db_size)
        db_bytes = num * entry
        # the loaded DB, the copy a setting overwrites, compaction's output
        study.check_space(self.scale, 3 * db_bytes, work, free, smaller="db_size")
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
        return Settings(scale=self.scale, num=int(num), db_bytes=int(db_bytes),
                        duration=float(sc.duration), repeats=sc.repeats,
                        memory_limit=int(limit), cgroup=support, cache_size=sc.cache_size,
                        write_buffer_size=sc.write_buffer_size,
                        target_file_size_base=sc.target_file_size_base,
                        max_bytes_for_level_base=sc.max_bytes_for_level_base, work_dir=str(work),
                        free_bytes=int(free), device=dev, read_ahead_kb=read_ahead_kb(dev.disk),
                        drop_caches=drop, turns=self.rule().describe(), notes=notes)
