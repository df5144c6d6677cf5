"""The IO-efficiency study's parameters, scale presets and names: what a study runs and how its runs are told.

io.eff's denominator is FIO_TOOL, rxlab's fio left to the scheduler (sync,
queue depth 1, 8 KiB O_DIRECT random reads, numjobs = clients). Two more fio
runs go beside it and are never a baseline: FIO_AWAY_TOOL, the same run
placed away from the CPU that takes the disk's interrupts (its reads are
woken by an inter-processor wake-up, which informs rxlab.core.model's
remote_us), and FIO_UNALIGNED_TOOL, fio reading the way RocksDB reads
without block_align (blocks a little over 8 KiB, bs=8704, that start
anywhere in a page, blockalign=512), run only where block_align off is
studied. The model fits on the unaligned runs only when asked: on these VMs
they cost several times what RocksDB's unaligned reads do
(docs/findings/2026-11-26-perf_model.md).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from rxlab.core import model, study
from rxlab.core import params as checks
from rxlab.core.study import StudySettings, settings_table, size_text
from rxlab.core.sysinfo import work_space

SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
# The published tables behind the figures (for the figures' JSON sidecars).
PUBLISHED = (f"{SEED_FILE}: ioeff_fio", f"{SEED_FILE}: ioeff_db_bench", f"{SEED_FILE}: ioeff_efficiency",
             f"{SEED_FILE}: ioeff_model")
SEED_TESTS = model.SEED_TESTS          # readrandom, readrandom2, readrandom3
BLOCK_BYTES = 8192                     # the seed's block size and fio's bs
KEY_SIZE = 16                          # db_bench's default key size (the driver's RunSpec default)

FIO_TOOL = "rxlab-fio"
FIO_AWAY_TOOL = "rxlab-fio-away"
FIO_UNALIGNED_TOOL = "rxlab-fio-unaligned"
UNALIGNED_BS, UNALIGNED_ALIGN = BLOCK_BYTES + 512, 512
# run kind (the run name's suffix) of each fio tool
FIO_KINDS = {FIO_TOOL: "fio", FIO_AWAY_TOOL: "fioaway", FIO_UNALIGNED_TOOL: "fio512"}
DB_TOOL = "rocksdb"
RUN_PREFIX = "ioeff-"

MIB, GIB = 1 << 20, 1 << 30
FIO_MAX_BYTES = 16 * GIB
MAX_THREADS = 256            # rxlab fio's numjobs limit
MAX_DELAY_US = 100_000


@dataclass(frozen=True)
class Scale:
    """A scale preset. `num` None means: sized from the free disk (full)."""

    num: int | None
    duration: float            # seconds per read step (readrandom, readrandom2, readrandom3)
    revrange_duration: float   # seconds of revrange, whose results the seed ignores
    fio_runtime: float
    fio_ramp: float
    fio_size: int | None       # bytes of fio's file (None: the DB's size, capped)
    repeats: int
    cache_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int


SCALES = {
    # seconds in total: a 12 MB DB, 1 MiB cache; small write buffers so the tree still has levels
    "smoke": Scale(num=30_000, duration=1.0, revrange_duration=0.3, fio_runtime=1.0, fio_ramp=0.2,
                   fio_size=64 * MIB, repeats=1, cache_size=1 * MIB, write_buffer_size=1 * MIB,
                   target_file_size_base=1 * MIB, max_bytes_for_level_base=4 * MIB),
    # minutes: 2M keys (about 0.8 GiB, 100x the 8 MiB cache), the stock reference's settings
    "small": Scale(num=2_000_000, duration=5.0, revrange_duration=2.0, fio_runtime=5.0, fio_ramp=1.0,
                   fio_size=1 * GIB, repeats=3, cache_size=8 * MIB, write_buffer_size=64 * MIB,
                   target_file_size_base=64 * MIB, max_bytes_for_level_base=256 * MIB),
    # the largest run the disk holds: a quarter of the free space, 4..16 GiB, 64 MiB cache
    "full": Scale(num=None, duration=20.0, revrange_duration=5.0, fio_runtime=20.0, fio_ramp=2.0,
                  fio_size=None, repeats=3, cache_size=64 * MIB, write_buffer_size=64 * MIB,
                  target_file_size_base=64 * MIB, max_bytes_for_level_base=256 * MIB),
}


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved on this machine: what a study will actually run."""

    revrange_duration: float
    fio_runtime: float
    fio_ramp: float
    fio_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int
    work_dir: str
    free_bytes: int

    def table(self) -> pd.DataFrame:
        """One row per setting, sizes in readable units, for a notebook."""
        return settings_table([
            ("keys (num)", f"{self.num:,}"), ("DB size (keys x (16 + value))", size_text(self.db_bytes)),
            ("block cache", size_text(self.cache_size)),
            ("DB / cache", f"{self.db_bytes / self.cache_size:.0f}x"),
            ("read step duration", f"{self.duration:g} s"),
            ("revrange duration", f"{self.revrange_duration:g} s"),
            ("fio runtime (+ ramp)", f"{self.fio_runtime:g} s (+ {self.fio_ramp:g} s)"),
            ("fio file", size_text(self.fio_size)), ("repeats", str(self.repeats)),
            ("write buffer / L1 target", f"{size_text(self.write_buffer_size)} / "
                                         f"{size_text(self.max_bytes_for_level_base)}"),
            ("work directory", self.work_dir), ("free there", size_text(self.free_bytes))])


@dataclass
class Params(study.StudyParams):
    """The study's parameters (the notebooks' papermill parameters).

    backend: default, default?io_uring=1 or an rxlab engine URI (posix,
    libaio, io_uring?registered_files=1&fixed_buffers=1, ...). threads: the
    client counts (fio numjobs alike). scale: smoke | small | full.
    db_dir: where the DB and fio's file go (None: a temporary directory in
    $TMPDIR; it must support O_DIRECT). block_align: the settings to run.
    repeats, duration: None takes the scale's. value_size: bytes per value
    (the seed's 400). delay_us: emulated device latency per read (rxlab
    engines only; fio's baseline gets the same). db_size: bytes (or '2g') of
    key-value data instead of the scale's key count.
    """

    backend: str = "posix"
    threads: list = field(default_factory=lambda: [1, 2])
    db_dir: str | None = None
    block_align: list = field(default_factory=lambda: [True, False])
    repeats: int | None = None
    value_size: int = 400
    duration: float | None = None
    delay_us: list = field(default_factory=lambda: [0])
    db_size: int | str | None = None

    def __post_init__(self):
        super().__post_init__()
        self.backend = checks.backend(self.backend)
        self.threads = checks.int_list("threads", self.threads, 1, MAX_THREADS)
        self.block_align = checks.bool_list("block_align", self.block_align)
        checks.optional_integer("repeats", self.repeats, 1, 100)
        checks.integer("value_size", self.value_size, 1, 1 << 20, note=" (bytes)")
        checks.optional_seconds("duration", self.duration)
        self.delay_us = checks.int_list("delay_us", self.delay_us, 0, MAX_DELAY_US)
        if any(self.delay_us) and checks.is_default(self.backend):
            checks.fail("delay_us", self.delay_us, "delays need an rxlab engine (posix, libaio, io_uring), "
                                                   "not the default file system")
        checks.db_size(self.db_size)
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()  # the disk must hold the scale

    def with_delays(self, delay_us) -> Params | None:
        """The delay study that goes with these parameters: one client (the smallest thread count),
        the first block_align setting, the given delays; None when no delay is above 0."""
        dl = checks.as_list(delay_us)
        if not any(d for d in dl if checks.is_int(d)) and all(checks.is_int(d) for d in dl):
            return None
        return dataclasses.replace(self, threads=[min(self.threads)], block_align=self.block_align[:1],
                                   delay_us=dl)

    def settings(self) -> Settings:
        """The scale resolved here: key count, sizes, durations, repeats; checks the free disk."""
        sc = SCALES[self.scale]
        work, free = work_space(self.db_dir)
        entry = KEY_SIZE + self.value_size
        num = study.key_count(entry, work, free, num=sc.num, db_size=self.db_size)
        db_bytes = num * entry
        fio_size = sc.fio_size if sc.fio_size is not None else min(FIO_MAX_BYTES, db_bytes)
        # the DB, its compaction's copy, fio's file
        study.check_space(self.scale, 2 * db_bytes + fio_size, work, free, smaller="db_size")
        dur = float(self.duration) if self.duration is not None else sc.duration
        return Settings(scale=self.scale, num=int(num), db_bytes=int(db_bytes), duration=dur,
                        revrange_duration=min(sc.revrange_duration, dur),
                        fio_runtime=float(self.duration) if self.duration is not None else sc.fio_runtime,
                        fio_ramp=sc.fio_ramp, fio_size=int(fio_size),
                        repeats=self.repeats if self.repeats is not None else sc.repeats,
                        cache_size=sc.cache_size, write_buffer_size=sc.write_buffer_size,
                        target_file_size_base=sc.target_file_size_base,
                        max_bytes_for_level_base=sc.max_bytes_for_level_base, work_dir=str(work),
                        free_bytes=int(free))


def with_delay(backend: str, delay_us: int) -> str:
    """backend URI with ?delay_us=N (or &delay_us=N) added; unchanged for 0."""
    if not delay_us:
        return backend
    return f"{backend}{'&' if '?' in backend else '?'}delay_us={int(delay_us)}"


def strip_delay(uri: str) -> str:
    """The backend URI without its delay_us: the backend a delayed run was run on."""
    base, _, q = str(uri).partition("?")
    parts = [p for p in q.split("&") if p and not p.startswith("delay_us=")]
    return base + ("?" + "&".join(parts) if parts else "")
