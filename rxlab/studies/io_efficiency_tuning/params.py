"""The tuning study's parameters: which configurations, what is compared, the scale presets, and the DB's
fixed shape."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rxlab.core import params as checks
from rxlab.core import scales, study
from rxlab.core.study import StudySettings, size_text
from rxlab.core.sysinfo import work_space
from rxlab.core.turns_plan import Compare, TurnsParams
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS
from rxlab.studies.io_efficiency_tuning.result import read_rows

__all__ = ["BASE", "BLOCK_BYTES", "COMPARE", "KEY_SIZE", "PUBLISHED", "SCALES", "SEED_FILE", "TARGET",
           "VALUE_SIZE", "Params", "ReadsCompare", "Scale", "Settings"]

SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
PUBLISHED = (f"{SEED_FILE}: ioeff_efficiency",)
TARGET = 0.80                 # the io.eff goal for the best rxlab configuration on this machine
SEED_TEST = "readrandom2"     # the seed's case this DB is: one level after a full compaction
BLOCK_BYTES = 8192
KEY_SIZE, VALUE_SIZE = 16, 400
FIO_RAMP_S = 0.5
MIB, GIB = 1 << 20, 1 << 30
BASE = "seed"                 # the configuration every other one is compared with: the ladder's first rung


@dataclass(frozen=True)
class ReadsCompare(Compare):
    """A Compare that sees the read runs only, each with io.eff against its own turn's fio
    (result.read_rows). The frame also holds the fio baselines: the denominator of io.eff, not a
    configuration; compared, they would be one that never resolves."""

    def rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        return read_rows(frame)

    def run_turns(self, study, ctx, units, run_row, *, frame, progress=True) -> dict:
        return super().run_turns(study, ctx, units, run_row, frame=lambda: self.rows(frame()),
                                 progress=progress)


# What the study compares, in turns (rxlab.core.turns_plan): every configuration's io.eff over the seed's
# setting's, both against the same turn's fio (so the ratio is that of device read IOPS in the turn).
COMPARE = ReadsCompare(config="config", metric="io.eff", base=BASE, turn="rep", label="io.eff")


@dataclass(frozen=True)
class Scale(scales.Scale):
    """The common preset (seconds: of each read run and each fio run) and fio's file."""

    fio_size: int = 1 * GIB


# small: the whole study took 288 s before turns (a 24 s load and fio's file, then three repetitions of fio
# and 13 configurations, 5 s runs); the turns get what the load leaves: 264 s, three turns of ~86 s (fio, 13
# configurations and the seed's A/A copy) when the machine is as quick as then. smoke keeps the common 5 s.
SCALES = scales.presets(
    Scale,
    smoke={"duration": 0.5, "fio_size": 64 * MIB},
    small={"budget_s": 264.0},
    full={"num": 8_000_000, "repeats": 5, "cache_size": 8 * MIB, "fio_size": 4 * GIB},
)


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved with the parameters: what a study will run."""

    fio_size: int
    configs: tuple
    turns: str = ""     # the stopping rule, in words

    def own_rows(self) -> list[tuple[str, str]]:
        return [("fio file", size_text(self.fio_size)), ("configurations", ", ".join(self.configs)),
                ("turns", self.turns)]


@dataclass
class Params(TurnsParams):
    """The study's parameters (notebook 15's papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): target (percent), budget,
    min_turns and max_turns set the stopping rule; `repeats`, when given, runs
    exactly that many turns instead.

    configs: names from CONFIGS (None: all, the ladder first; 'seed', the
    base, must be among them). duration: seconds of each read and fio run,
    None takes the scale's. db_dir: where the DB and fio's file go (None: a
    temporary directory; it must support O_DIRECT).
    """

    SCALES = SCALES   # the turns' budget at each scale (TurnsParams.scale_budget)

    configs: list | None = None
    repeats: int | None = None
    duration: float | None = None
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.configs is None:
            self.configs = list(CONFIGS)
        names = checks.as_list(self.configs)
        bad = [n for n in names if n not in CONFIGS]
        if not names or bad or len(set(names)) != len(names):
            checks.fail("configs", self.configs, f"expected distinct names from: {', '.join(CONFIGS)}")
        if BASE not in names:
            checks.fail("configs", self.configs, f"must include {BASE!r}, the configuration the others "
                                                 "are compared with")
        self.configs = [n for n in CONFIGS if n in names]  # the ladder's order
        checks.optional_integer("repeats", self.repeats, 1, 100, none="None (turns by the stopping rule)")
        checks.optional_seconds("duration", self.duration, 0.1)
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()


    def settings(self) -> Settings:
        sc = SCALES[self.scale].given(duration=self.duration, repeats=self.repeats)
        work, free = work_space(self.db_dir)
        db_bytes = sc.num * (KEY_SIZE + VALUE_SIZE)
        study.check_space(self.scale, 2 * db_bytes + sc.fio_size, work, free)
        return Settings(scale=self.scale, num=sc.num, db_bytes=db_bytes, duration=float(sc.duration),
                        repeats=int(sc.repeats), cache_size=sc.cache_size, fio_size=sc.fio_size,
                        configs=tuple(self.configs), turns=self.rule().describe())

    def configs_table(self) -> pd.DataFrame:
        """The configurations this study runs: ladder or side, backend, RunSpec and step fields, change."""
        return pd.DataFrame([{"configuration": n, "kind": "ladder" if CONFIGS[n].on_ladder else "side",
                              "backend": CONFIGS[n].backend, "RunSpec": dict(CONFIGS[n].spec) or "",
                              "read step": dict(CONFIGS[n].step) or "", "change": CONFIGS[n].change}
                             for n in self.configs]).set_index("configuration")
