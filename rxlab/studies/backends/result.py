"""A backends study's result: its tidy frame, and the backends and device cases it holds."""
from __future__ import annotations

from rxlab.core.study import StudyResult
from rxlab.studies.backends.params import ENGINES, engine


class BackendsResult(StudyResult):
    """Frame keys: study, rep, case, delay_us, jitter_us, backend (without the delay), backend_uri,
    part, test, run_id; then the step's raw columns, the seeds' columns and mbps."""

    @property
    def backends(self) -> list[str]:
        """The backends in the report's order: default, posix, libaio, io_uring, then the rest."""
        order = {b: i for i, b in enumerate(["default", *ENGINES])}
        return sorted(self.frame["backend"].unique(), key=lambda b: (order.get(engine(b), 9), b))

    @property
    def cases(self) -> list[str]:
        """The device cases, the fastest (local) first."""
        d = self.frame.groupby("case")["delay_us"].first().sort_values()
        return list(d.index)
