"""The tuning study's parameters: which configurations, the scale presets, and the DB's fixed shape."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from rxlab.core import params as checks
from rxlab.core import scales, study
from rxlab.core.study import StudySettings, size_text
from rxlab.core.sysinfo import work_space
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS

__all__ = ["BLOCK_BYTES", "KEY_SIZE", "PUBLISHED", "SCALES", "SEED_FILE", "TARGET", "VALUE_SIZE", "Params",
           "Scale", "Settings"]

SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
PUBLISHED = (f"{SEED_FILE}: ioeff_efficiency",)
TARGET = 0.80                 # the io.eff goal for the best rxlab configuration on this machine
SEED_TEST = "readrandom2"     # the seed's case this DB is: one level after a full compaction
BLOCK_BYTES = 8192
KEY_SIZE, VALUE_SIZE = 16, 400
FIO_RAMP_S = 0.5
MIB, GIB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Scale(scales.Scale):
    """The common preset (seconds: of each read run and each fio run) and fio's file."""

    fio_size: int = 1 * GIB


SCALES = scales.presets(
    Scale,
    smoke={"duration": 0.5, "fio_size": 64 * MIB},
    small={},
    full={"num": 8_000_000, "repeats": 5, "cache_size": 8 * MIB, "fio_size": 4 * GIB},
)


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved with the parameters: what a study will run."""

    fio_size: int
    configs: tuple

    def own_rows(self) -> list[tuple[str, str]]:
        return [("fio file", size_text(self.fio_size)), ("configurations", ", ".join(self.configs))]


@dataclass
class Params(study.StudyParams):
    """The study's parameters (notebook 15's papermill parameters).

    configs: names from CONFIGS (None: all, the ladder first). repeats,
    duration: None takes the scale's. db_dir: where the DB and fio's file go
    (None: a temporary directory; it must support O_DIRECT).
    """

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
        if "seed" not in names:
            checks.fail("configs", self.configs, "must include 'seed', the configuration the others "
                                                 "are compared with")
        self.configs = [n for n in CONFIGS if n in names]  # the ladder's order
        checks.optional_integer("repeats", self.repeats, 1, 100)
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
                        configs=tuple(self.configs))

    def configs_table(self) -> pd.DataFrame:
        """The configurations this study runs: ladder or side, backend, RunSpec and step fields, change."""
        return pd.DataFrame([{"configuration": n, "kind": "ladder" if CONFIGS[n].on_ladder else "side",
                              "backend": CONFIGS[n].backend, "RunSpec": dict(CONFIGS[n].spec) or "",
                              "read step": dict(CONFIGS[n].step) or "", "change": CONFIGS[n].change}
                             for n in self.configs]).set_index("configuration")
