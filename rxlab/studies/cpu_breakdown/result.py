"""A CPU breakdown's result: its one run, the step rows, and the folded stacks of the profiled steps."""
from __future__ import annotations

from collections import Counter
from functools import cached_property
from pathlib import Path

from rxlab.bench import perf
from rxlab.core.study import StudyResult
from rxlab.studies.cpu_breakdown.params import PROFILE


class CpuResult(StudyResult):
    """Frame: one row per step of the run (study, test, then the step's raw columns, the run's
    metadata and the seeds' columns); `cpu.mode` is `profile` or `timers` for the seed tests' read
    steps, `cpu.rep` their repetition, `cpu.folded` the profiled step's stacks (an attachment)."""

    @property
    def run(self) -> Path:
        """The study's one stored run."""
        return Path(self.runs[0])

    @cached_property
    def folded(self) -> dict[tuple[str, int], dict[str, int]]:
        """The folded stacks of each profiled step, by (test, repetition), read from the run."""
        f = self.frame
        prof = f[f["cpu.mode"] == PROFILE] if "cpu.mode" in f.columns else f.iloc[:0]
        return {(r["test"], int(r["cpu.rep"])): perf.read_folded(self.run / "attachments" / r["cpu.folded"])
                for _, r in prof.iterrows()}

    def pooled_folded(self, test: str) -> dict[str, int]:
        """The folded stacks of every profiled repetition of one test, summed."""
        out: Counter = Counter()
        for (t, _), folded in self.folded.items():
            if t == test:
                out.update(folded)
        return dict(out)

    @property
    def backend(self) -> str:
        return str(self.frame["backend"].dropna().iloc[0]) if "backend" in self.frame.columns else ""

    @property
    def call_graph(self) -> str:
        col = self.frame.get("cpu.call_graph")
        return str(col.dropna().iloc[0]) if col is not None and col.notna().any() else ""
