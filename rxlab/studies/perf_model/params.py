"""The performance-model study's parameters: notebook 10's (the study the model is fitted on) and the
delays of the delay study (the sensitivity points)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rxlab import studies
from rxlab.bench.ioeff.db import Settings
from rxlab.core import params as checks
from rxlab.core import study
from rxlab.core.study import Study, StudyParams

IOEFF = "io_efficiency"   # the study the model is fitted on, found by name in the registry


def ioeff_study() -> Study:
    """The IO-efficiency study, through the registry (studies do not import each other's modules)."""
    return studies.get(IOEFF)


@dataclass
class Params(study.StudyParams):
    """The study's parameters (notebook 20's papermill parameters).

    backend, threads, block_align, db_dir, repeats, duration, db_size: as in
    the IO-efficiency study (its Params, from the registry), whose study
    of these parameters the model is fitted on (taken from the store when one
    is there). delay_us: the emulated device latencies of the delay study
    (one client, the first block_align setting, rxlab engines only; [0]:
    none), also taken from the store when there. budget: the time the turns
    of those two that run here may take together, split evenly between them
    (None: the IO-efficiency study's at the scale; a study found in the
    store matches whatever its budget was). The placement and
    device-load measurements take fio's file size, runtime and repetitions
    from the scale.
    """

    backend: str = "posix"
    threads: list = field(default_factory=lambda: [1, 2])
    block_align: list = field(default_factory=lambda: [True, False])
    db_dir: str | None = None
    repeats: int | None = None
    duration: float | None = None
    db_size: int | str | None = None
    delay_us: list = field(default_factory=lambda: [0, 100, 200])
    budget: Any = None

    def __post_init__(self):
        super().__post_init__()
        ioeff = self.ioeff_params()   # every shared parameter checked there, one line each
        self.backend, self.threads, self.block_align = ioeff.backend, ioeff.threads, ioeff.block_align
        self.db_dir = ioeff.db_dir
        ioeff.with_delays(self.delay_us)   # the delays checked as the delay study's
        self.delay_us = [int(d) for d in checks.as_list(self.delay_us)]

    def ioeff_params(self) -> StudyParams:
        """The IO-efficiency study the model is fitted on (undelayed)."""
        return ioeff_study().params(backend=self.backend, threads=self.threads, scale=self.scale,
                                    db_dir=self.db_dir, block_align=self.block_align, repeats=self.repeats,
                                    duration=self.duration, db_size=self.db_size, budget=self.budget)

    @classmethod
    def budget_at(cls, scale: str) -> float | None:
        """The turns' budget at `scale` when `budget` is None: the IO-efficiency study's."""
        return ioeff_study().Params.budget_at(scale)

    def delay_params(self) -> StudyParams | None:
        """The delay study: one client, the first block_align setting, `delay_us`; None without a delay."""
        return self.ioeff_params().with_delays(self.delay_us)

    def settings(self) -> Settings:
        """The IO-efficiency study's scale resolved here (the placement and device-load runs take fio's
        file size, runtime and repetitions from it)."""
        return self.ioeff_params().settings()
