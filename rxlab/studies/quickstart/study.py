"""The start-here notebook's few calls: a DB on a backend, one stored run, a look at it.

notebooks/00_start_here.ipynb is for a first session in JupyterLab: open a
database on one of rxlab's backends and use it, run db_bench's fillseq and
readrandom through the driver (stored like every run), and read the run back.
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rxlab import _core
from rxlab.bench import driver
from rxlab.core import metrics, store
from rxlab.core import params as checks

# keys loaded and read: seconds at smoke, about a minute at small, a DB well above the cache at full
SCALE_KEYS = {"smoke": 20_000, "small": 500_000, "full": 4_000_000}


@dataclass
class Params(checks.Checked):
    """backend: an engine name or URI (`rxlab engines`) or default. scale: smoke | small | full.
    db_dir: where the DB goes (None: a temporary directory). threads: readrandom's clients."""

    backend: str = "posix"
    scale: str = "small"
    db_dir: str | None = None
    threads: int = 1

    def __post_init__(self):
        self.backend = checks.backend(self.backend, allow_delay=True)
        checks.choice("scale", self.scale, tuple(SCALE_KEYS))
        self.db_dir = checks.db_dir(self.db_dir)
        if not (checks.is_int(self.threads) and 1 <= self.threads <= 64):
            checks.fail("threads", self.threads, "expected one integer 1..64")
        self.threads = int(self.threads)

    def work_dir(self) -> Path:
        return Path(self.db_dir) if self.db_dir else Path(tempfile.mkdtemp(prefix="rxlab-start-"))

    def spec(self, db: str | Path) -> driver.RunSpec:
        """fillseq, flush and readrandom: the DB is loaded, written to SST files, then read."""
        num = SCALE_KEYS[self.scale]
        return driver.RunSpec(db=str(db), name="start-here", backend=self.backend, num=num,
                              steps=["fillseq", "flush", "readrandom"], threads=self.threads,
                              reads=max(1000, num // 10 // self.threads), cache_size=1 << 20,
                              write_buffer_size=8 << 20, target_file_size_base=8 << 20, scale=self.scale)


def engines_table() -> pd.DataFrame:
    """The engines the module has, with their URI options."""

    rows = [{"engine": e["name"], "what": e["help"],
             "options": ", ".join(f"{k}={v[0]}" for k, v in e["options"].items())} for e in _core.engines()]
    return pd.DataFrame(rows).set_index("engine")


def look(run_dir: str | Path) -> pd.DataFrame:
    """A stored run's steps in the seeds' columns (rxlab.core.metrics) with the latency percentiles."""
    run = store.load_run(run_dir)
    cols = ["name", "ops", "wall_s", *(metrics.percentile_column(p) for p in metrics.PERCENTILES[:4])]
    steps = run.steps
    seed = metrics.seed_columns(steps)
    return pd.concat([steps[[c for c in cols if c in steps]], seed.drop(columns=["test"], errors="ignore")],
                     axis=1).set_index("name")
