"""The async IO study's parameters: backends, emulated device latencies, the page's settings, scales, and
what the study compares in turns (COMPARE)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pandas as pd

from rxlab.core import engines, scales, study
from rxlab.core import params as checks
from rxlab.core.study import StudySettings
from rxlab.core.sysinfo import work_space
from rxlab.core.turns_plan import Compare, TurnsParams

__all__ = ["ASYNC_MULTIGET", "ASYNC_SCAN", "BLOCK_BYTES", "BLOOM_BITS", "COMPARE", "EFFECTS", "GET_LOOP",
           "KEY_SIZE", "KIND", "MULTIGET", "MULTIGET_ASYNC", "MULTIGET_GAIN", "PUBLISHED", "SCALES",
           "SCAN_ASYNC", "SCAN_SYNC", "SEED_BATCH", "SEED_FILE", "SEED_THREADS", "VALUE_SIZE", "Params",
           "Scale", "Settings", "default_backends", "engine", "reference_configurations", "step_name",
           "with_delay"]

SEED_FILE = "rocksdb-wiki-asynchronous-io.txt"
PUBLISHED = (
    f"{SEED_FILE}: asyncio_results",
    f"{SEED_FILE}: asyncio_db_structure",
    f"{SEED_FILE}: asyncio_statements",
)
KEY_SIZE = 32  # the page's --key_size
VALUE_SIZE = 512  # the page's --value_size
BLOCK_BYTES = 8192
BLOOM_BITS = 10  # the page's --bloom_bits
SEED_BATCH = 8  # the page's --batch_size
SEED_THREADS = 4  # the page's --threads
SEED_SCAN_KEYS = 65536  # the page's --seek_nexts
SEED_STRIDE_RATIO = 125  # the page's --num / --multiread_stride (5000000 / 40000)
ONE_FILE = 64 << 30  # target_file_size_base and max_bytes_for_level_base: compact into one SST
MAX_DELAY_US = 100_000
MIB = 1 << 20

# The step labels (the `test` column) and what each measures.
GET_LOOP, MULTIGET, MULTIGET_ASYNC = "readrandom", "multireadrandom", "multireadrandom async_io"
SCAN_SYNC, SCAN_ASYNC = "seekrandom", "seekrandom async_io"
KIND = {
    GET_LOOP: "Get loop",
    MULTIGET: "MultiGet",
    MULTIGET_ASYNC: "MultiGet async_io",
    SCAN_SYNC: "scan",
    SCAN_ASYNC: "scan async_io",
}


def step_name(test: str, batch_size) -> str:
    """What a read step is called in comparisons: its kind, with the batch size for a MultiGet
    ("Get loop", "MultiGet 8", "MultiGet async_io 8", "scan", "scan async_io")."""
    if test in (MULTIGET, MULTIGET_ASYNC):
        return f"{KIND[test]} {int(batch_size)}"
    return KIND.get(test, str(test))


# What the study compares, in turns (rxlab.core.turns_plan): per emulated delay, each backend's MB/s against
# the delay's base (Params.base_backend: posix, the synchronous read path, which runs at every delay), read
# step by read step. MB/s is db_bench's: for MultiGet and the Get loop the inverse of micros/op per key, for
# scans the scan figure's throughput.
COMPARE = Compare(config="backend", metric="mb_per_s", groups=("delay_us",), keys=("step",), turn="rep",
                  label="MB/s")

# What changes within one backend's run, step against step (each run reads every step, so a turn pairs
# them): the effect's name, its base step, and the test (step label) whose steps are set against it.
MULTIGET_GAIN = "MultiGet over the Get loop"
ASYNC_MULTIGET, ASYNC_SCAN = "async_io on MultiGet", "async_io on scans"
EFFECTS = {
    MULTIGET_GAIN: (step_name(GET_LOOP, 1), MULTIGET),
    ASYNC_MULTIGET: (step_name(MULTIGET, SEED_BATCH), MULTIGET_ASYNC),
    ASYNC_SCAN: (step_name(SCAN_SYNC, None), SCAN_ASYNC),
}


@dataclass(frozen=True)
class Scale(scales.Scale):
    """The common preset and the page's own: MultiGet batch sizes, scan length."""

    batch_sizes: tuple = (1, 2, 4, 8, 16, 32, 64)
    seek_nexts: int = 8192


SCALES = scales.presets(
    Scale,
    # seconds: an 11 MB DB, three batch sizes, short scans; the common 5 s of turns (one, maybe two)
    smoke={"num": 20_000, "duration": 0.1, "batch_sizes": (1, 8, 64), "seek_nexts": 512},
    # minutes: 1M keys (0.5 GiB, 68x the cache), batch sizes 1..64, scans of 8192 keys (4.5 MB). The
    # study took 321 s here before turns (a 16 s build, 16 runs of 1.5 s steps, the notebook's tables and
    # figures): 270 s of turns keep it there. A turn is 10 runs of 11 steps at the default backends and
    # delays (6 at delay 0 with posix's A/A copy, 4 at 500 us), about 80 s with 0.6 s steps: 3 turns.
    small={"num": 1_000_000, "duration": 0.6, "budget_s": 270.0},
    # the page's key count (5M keys, 2.7 GB) and scan length (65536 keys, 36 MB)
    full={"num": 5_000_000, "duration": 5.0, "seek_nexts": SEED_SCAN_KEYS},
)


def default_backends() -> list[str]:
    """Every rxlab engine of the registry, then RocksDB's own file system without and with io_uring."""
    return [*engines.names(), "default", "default?io_uring=1"]


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved with the parameters: what a study will run."""

    batch_sizes: tuple
    seek_nexts: int
    multiread_stride: int
    threads: int
    work_dir: str
    free_bytes: int
    base: str = ""      # the backend every delay's comparisons are relative to
    turns: str = ""     # the stopping rule, in words

    def own_rows(self) -> list[tuple[str, object]]:
        return [("threads", self.threads), ("MultiGet batch sizes", ", ".join(map(str, self.batch_sizes))),
                ("multiread_stride (num / 125, as the page's)", f"{self.multiread_stride:,}"),
                ("scan length (seek_nexts)", f"{self.seek_nexts:,}"),
                ("base of the comparisons", self.base), ("turns", self.turns)]


@dataclass
class Params(TurnsParams):
    """The study's parameters (notebook 40's papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): target (percent), budget,
    min_turns and max_turns set the stopping rule; `repeats`, when given, runs
    exactly that many turns instead.

    backends: default, default?io_uring=1 and rxlab engine URIs (without
    delay_us); None: default_backends() (papermill cannot pass a default
    containing '=' through a parameters cell). delay_us: emulated device latency per read, rxlab engines only
    (the default file system runs at 0 only). batch_sizes, seek_nexts,
    duration: None takes the scale's. threads: client threads (the
    page used 4 on a larger machine). db_dir: where the DB goes (None: a
    temporary directory; O_DIRECT needed).
    """

    SCALES = SCALES      # the turns' budget at each scale (TurnsParams.scale_budget)

    backends: list | None = None
    delay_us: list = field(default_factory=lambda: [0, 500])
    batch_sizes: list | None = None
    seek_nexts: int | None = None
    threads: int = 1
    repeats: int | None = None
    duration: float | None = None
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.backends is None:
            self.backends = default_backends()
        self.backends = checks.backend_list("backends", self.backends)
        self.delay_us = checks.int_list("delay_us", self.delay_us, 0, MAX_DELAY_US)
        if self.batch_sizes is not None:
            self.batch_sizes = sorted(checks.int_list("batch_sizes", self.batch_sizes, 1, 1024))
        checks.optional_integer("seek_nexts", self.seek_nexts, 1, 1 << 20)
        checks.integer("threads", self.threads, 1, 64)
        checks.optional_integer("repeats", self.repeats, 1, 100)
        checks.optional_seconds("duration", self.duration)
        if any(self.delay_us) and all(checks.is_default(b) for b in self.backends):
            checks.fail("delay_us", self.delay_us, "delays need an rxlab engine (posix, libaio, io_uring) "
                                                   "among the backends; the default file system has none")
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()


    def settings(self) -> Settings:
        batch_sizes = None if self.batch_sizes is None else tuple(self.batch_sizes)
        sc = SCALES[self.scale].given(duration=self.duration, repeats=self.repeats,
                                      seek_nexts=self.seek_nexts, batch_sizes=batch_sizes)
        work, free = work_space(self.db_dir)
        db_bytes = sc.num * (KEY_SIZE + VALUE_SIZE)
        study.check_space(self.scale, 2 * db_bytes, work, free)
        return Settings(scale=self.scale, num=sc.num, db_bytes=db_bytes, duration=float(sc.duration),
                        repeats=sc.repeats, cache_size=sc.cache_size, batch_sizes=sc.batch_sizes,
                        seek_nexts=sc.seek_nexts, multiread_stride=max(1, sc.num // SEED_STRIDE_RATIO),
                        threads=self.threads, work_dir=str(work), free_bytes=int(free),
                        base=self.base_backend(), turns=self.rule().describe())

    def base_backend(self) -> str:
        """The backend each delay's comparisons are relative to: posix (the synchronous read path: MultiRead
        a loop of pread, ReadAsync served inline) when given, else the first rxlab engine (every delay
        runs it), else the first backend (RocksDB's own file system alone, at delay 0)."""
        rx = [b for b in self.backends if not checks.is_default(b)]
        return next((b for b in rx if engine(b) == "posix"), rx[0] if rx else self.backends[0])

    def configurations(self) -> list[tuple[str, int]]:
        """(backend, delay_us) pairs: every backend at every delay, the default file system at 0 only; the
        base first at each delay, the others in the order given."""
        base = self.base_backend()
        order = [base, *(b for b in self.backends if b != base)]
        return [(b, d) for d in self.delay_us for b in order if d == 0 or not checks.is_default(b)]

    def backends_table(self) -> pd.DataFrame:
        """What each backend of this study is: its file system, how it serves MultiRead and ReadAsync."""
        return reference_configurations(self.backends)

    def build_backend(self) -> str:
        """The engine that loads the DB: the first rxlab engine among the backends, else posix."""
        return next((engine(b) for b in self.backends if not checks.is_default(b)), "posix")


def with_delay(backend: str, delay_us: int) -> str:
    """backend URI with delay_us=N added; unchanged for 0."""
    return engines.with_options(backend, delay_us=int(delay_us)) if delay_us else backend


def engine(uri: str) -> str:
    """The engine of a backend URI (posix, libaio, io_uring), or which of RocksDB's own file system
    configurations it is (default, default?io_uring=1)."""
    b = engines.parse(uri)
    if engines.is_default(uri):
        return str(b) if str(b) in ("default", "default?io_uring=1") else "default"
    return b.engine


# What each backend is, and how it serves MultiRead and ReadAsync here. RocksDB's own posix file
# system uses io_uring for both only when the program defines RocksDbIOUringEnable() returning true;
# rxlab's extension defines it (ext/module.cc) and answers what the backend URI asked.
_WHAT = {
    "posix": ("rxlab engine posix (pread)", "loop of pread: one read in flight",
              "served inline (synchronous engine): no overlap"),
    "libaio": ("rxlab engine libaio (io_submit/io_getevents)", "the batch submitted together",
               "submitted, reaped by Poll"),
    "io_uring": ("rxlab engine io_uring (liburing)", "the batch submitted together",
                 "submitted, reaped by Poll"),
    "default": ("RocksDB's posix file system; RocksDbIOUringEnable() returns false",
                "loop of pread (RocksDB's fallback)", "refused (NotSupported): synchronous prefetch"),
    "default?io_uring=1": ("RocksDB's posix file system; RocksDbIOUringEnable() returns true "
                           "(db_bench's default, --io_uring_enabled=true)", "io_uring, submitted together",
                           "io_uring, reaped by Poll"),
}


def reference_configurations(backends: Sequence[str] | None = None) -> pd.DataFrame:
    """What each backend is (None: default_backends()): the file system, how it serves MultiRead and
    ReadAsync here."""
    rows = []
    for b in default_backends() if backends is None else backends:
        key = b if b in _WHAT else engine(b)
        w = _WHAT.get(key, (f"rxlab engine {key}", "", ""))
        rows.append({"backend": b, "file system": w[0], "MultiRead": w[1], "ReadAsync": w[2]})
    return pd.DataFrame(rows).set_index("backend")
