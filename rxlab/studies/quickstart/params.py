"""The start-here study's parameters: one backend, one read workload, a scale (keys loaded)."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rxlab.bench import driver
from rxlab.core import params as checks
from rxlab.core import scales, study
from rxlab.core.study import settings_table, size_text
from rxlab.core.sysinfo import work_space

KEY_SIZE, VALUE_SIZE = 16, 400  # the driver's defaults (db_bench's key size, the seeds' values)
CACHE_SIZE = 1 << 20  # a small block cache at every scale: reads reach the device
# keys loaded and read: seconds at smoke, about a minute at small, a DB well above the cache at full
SCALES = scales.presets(
    scales.Scale,
    smoke={"num": 20_000, "cache_size": CACHE_SIZE},
    small={"num": 500_000, "cache_size": CACHE_SIZE},
    full={"num": 4_000_000, "cache_size": CACHE_SIZE},
)
SCALE_KEYS = {name: sc.num for name, sc in SCALES.items()}
MAX_THREADS = 64

# The measured step after the load (fillseq, flush), with its db_bench options.
WORKLOADS: dict[str, dict] = {
    "readrandom": {},
    "multireadrandom": {"batch_size": 16, "multiread_batched": True},
    "seekrandom": {"seek_nexts": 10},
    "readseq": {},  # one pass over the DB per thread (ops = num)
    "readwhilewriting": {},  # readrandom beside a rate-limited writer
}


@dataclass(frozen=True)
class Settings:
    """A scale resolved on this machine."""

    scale: str
    num: int
    reads: int  # operations per read thread (readseq: one pass)
    db_bytes: int
    work_dir: str
    free_bytes: int

    def table(self) -> pd.DataFrame:
        return settings_table(
            [
                ("keys (num)", f"{self.num:,}"),
                ("key / value bytes", f"{KEY_SIZE} / {VALUE_SIZE}"),
                ("DB size (num x 416 B)", size_text(self.db_bytes)),
                ("block cache", size_text(CACHE_SIZE)),
                ("reads per thread", f"{self.reads:,}"),
                ("work directory", self.work_dir),
                ("free there", size_text(self.free_bytes)),
            ]
        )


@dataclass
class Params(study.StudyParams):
    """backend: an engine name or URI (`rxlab engines`: posix, io_uring?sqpoll=1, posix?delay_us=100, ...)
    or default. threads: clients of the measured step. workload: the measured step (WORKLOADS).
    db_dir: where the DB goes (None: a temporary directory). scale: smoke | small | full."""

    backend: str = "posix"
    threads: int = 1
    workload: str = "readrandom"
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        self.backend = checks.backend(self.backend, allow_delay=True)
        self.threads = checks.integer("threads", self.threads, 1, MAX_THREADS, what="one integer")
        checks.choice("workload", self.workload, tuple(WORKLOADS))
        self.db_dir = checks.db_dir(self.db_dir)

    def settings(self) -> Settings:
        num = SCALE_KEYS[self.scale]
        work, free = work_space(self.db_dir)
        db_bytes = num * (KEY_SIZE + VALUE_SIZE)
        study.check_space(self.scale, 3 * db_bytes, work, free)
        return Settings(
            scale=self.scale,
            num=num,
            reads=self.reads(),
            db_bytes=db_bytes,
            work_dir=str(work),
            free_bytes=int(free),
        )

    def reads(self) -> int:
        """Operations per thread of the measured step: a tenth of the keys in all (readseq: one pass)."""
        num = SCALE_KEYS[self.scale]
        return num if self.workload == "readseq" else max(1000, num // 10 // self.threads)

    def work_dir(self) -> Path:
        """db_dir, or a temporary directory that is removed when the process (the notebook's kernel) exits."""
        if self.db_dir:
            return Path(self.db_dir)
        work = Path(tempfile.mkdtemp(prefix="rxlab-start-"))
        atexit.register(shutil.rmtree, work, ignore_errors=True)
        return work

    def spec(self, db: str | Path, name: str = "start-here") -> driver.RunSpec:
        """fillseq, flush and the workload: the DB is loaded, written to SST files, then measured."""
        num = SCALE_KEYS[self.scale]
        step = {"name": self.workload, **WORKLOADS[self.workload]}
        if self.workload == "readseq":
            step.update(duration=0, ops=num)
        return driver.RunSpec(
            db=str(db),
            name=name,
            backend=self.backend,
            num=num,
            key_size=KEY_SIZE,
            value_size=VALUE_SIZE,
            steps=["fillseq", "flush", step],
            threads=self.threads,
            reads=self.reads(),
            cache_size=CACHE_SIZE,
            write_buffer_size=8 << 20,
            target_file_size_base=8 << 20,
            scale=self.scale,
        )
