"""A tracing study's result: its tidy frame, and the backends and tracers it holds."""
from __future__ import annotations

from rxlab.core.study import StudyResult
from rxlab.studies.tracing_overhead.params import TRACERS


class TracingResult(StudyResult):
    """Frame keys: study, rep (the turn), copy (1: the A/A second run of `none`), backend, tracer, test,
    run_id; then qps, mb_per_s (db_bench's MB/s), the seeds' columns and the step's raw columns (one row
    per db_bench step)."""

    @property
    def backends(self) -> list[str]:
        """The backends in the order the first turn ran them (the parameters' order)."""
        return list(dict.fromkeys(self.frame["backend"]))

    @property
    def tracers(self) -> list[str]:
        """The tracers in TRACERS' order: none, counters, perf, strace."""
        return [t for t in TRACERS if t in set(self.frame["tracer"])]
