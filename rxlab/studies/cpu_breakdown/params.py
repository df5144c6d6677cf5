"""The CPU breakdown's parameters: the backend, perf's sampling, and the IO-efficiency seed's DB and scales.

The DB is the IO-efficiency seed's (its sequence, Settings and scale presets
come from rxlab.bench.ioeff, shared with the io_efficiency study), so the
three tests read the trees the first seed describes: readrandom a tree of
several levels with bloom filters, readrandom2 one level after a full
compaction, readrandom3 the same without bloom filters.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pandas as pd

from rxlab.bench.ioeff.db import Settings as IoEfficiencySettings
from rxlab.bench.ioeff.db import resolve
from rxlab.bench.ioeff.names import SEED_TESTS
from rxlab.core import params as checks
from rxlab.core import study
from rxlab.core.study import settings_table

SEED_FILE = "blog-2025-12-01-rocksdb-gcc-vs-clang-and-more.txt"
IOEFF_SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"   # the tests' seed
PUBLISHED = (f"{SEED_FILE}: gccclang_flamegraph (Flamegraphs: percentage of samples)",
             f"{IOEFF_SEED_FILE}: readrandom, readrandom2, readrandom3 (the tests)")
TESTS = tuple(SEED_TESTS)                # readrandom, readrandom2, readrandom3
KEY_SIZE = 16                            # the seeds' db_bench default
BLOCK_BYTES = 8192                       # the IO-efficiency seed's block size
PROFILE, TIMERS = "profile", "timers"    # the two kinds of read step
TIMER_PERF_LEVEL = 5                     # kEnableTimeAndCPUTimeExceptForMutex: timers and CPU timers
PROFILE_PERF_LEVEL = 1                   # kDisable, db_bench's default: no timer cost in the profile
REPEATS = {"smoke": 1, "small": 2, "full": 3}
SMOKE_DURATION = 0.5                     # seconds per read step at smoke (ioeff's is 1 s): CI's budget


@dataclass
class Params(study.StudyParams):
    """The study's parameters (the notebook's papermill parameters).

    backend: default (RocksDB's own posix file system, as the seed's db_bench
    used) or an rxlab engine URI. threads: clients of the read steps.
    scale: smoke | small | full (ioeff's presets: DB size, cache, durations).
    call_graph: dwarf | fp. frequency: samples per second per thread.
    repeats: profiled and timed step pairs per test (None: the scale's).
    duration: seconds per read step (None: the scale's). value_size, db_size,
    db_dir: as in the io_efficiency study.
    """

    backend: str = "default"
    threads: int = 1
    call_graph: str = "dwarf"
    frequency: int = 999
    repeats: int | None = None
    duration: float | None = None
    value_size: int = 400
    db_size: int | str | None = None
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        self.backend = checks.backend(self.backend)
        self.threads = checks.integer("threads", self.threads, 1, 64)
        checks.choice("call_graph", self.call_graph, ("dwarf", "fp"))
        checks.integer("frequency", self.frequency, 10, 10_000, what="samples per second, an integer")
        checks.optional_integer("repeats", self.repeats, 1, 20)
        checks.integer("value_size", self.value_size, 1, 1 << 20, note=" (bytes)")
        checks.optional_seconds("duration", self.duration)
        checks.db_size(self.db_size)
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()  # the disk must hold the scale

    def settings(self) -> IoEfficiencySettings:
        """The seed's DB at this scale resolved here, with this study's repetitions (and shorter read
        steps at smoke)."""
        s = resolve(self.scale, db_dir=self.db_dir, value_size=self.value_size, duration=self.duration,
                    repeats=1, db_size=self.db_size)
        repeats = self.repeats if self.repeats is not None else REPEATS[self.scale]
        if self.scale == "smoke" and self.duration is None:
            s = dataclasses.replace(s, duration=SMOKE_DURATION,
                                    revrange_duration=min(s.revrange_duration, SMOKE_DURATION))
        return dataclasses.replace(s, repeats=repeats)

    def table(self) -> pd.DataFrame:
        """The settings as the notebook shows them: the DB's, then the steps' and perf's."""
        s = self.settings()
        t = s.table().drop(index=["fio runtime (+ ramp)", "fio file", "repeats"], errors="ignore")
        extra = settings_table([
            ("read steps per test", f"{s.repeats} profiled + {s.repeats} timed (PerfContext level "
                                    f"{TIMER_PERF_LEVEL})"),
            ("sampling", f"perf record -e cpu-clock -F {self.frequency} --call-graph {self.call_graph}"),
            ("backend", self.backend), ("clients", self.threads)])
        return pd.concat([t, extra])
