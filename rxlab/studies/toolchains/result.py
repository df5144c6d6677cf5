"""A toolchain study's result: its frame, the base build, the relative QPS its tables and figures share."""
from __future__ import annotations

from functools import cached_property

import pandas as pd

from rxlab.core.study import StudyResult
from rxlab.studies.toolchains.relative import relative_by_version, relative_qps


class ToolchainsResult(StudyResult):
    """Frame keys: study, rep, build (the run's RocksDB build key), toolchain, version, base, test,
    run_id; then the step's raw columns (rocksdb_build among them) and the seeds' columns (qps...)."""

    @property
    def base(self) -> str:
        """The build the others are relative to (the parameters', or the one the runs recorded)."""
        if self.params is not None:
            return self.params.base
        return str(self.frame["base"].dropna().iloc[0])

    @cached_property
    def relative(self) -> pd.DataFrame:
        """Every build against the base build, per test (relative.relative_qps)."""
        return relative_qps(self.frame, self.base)

    @cached_property
    def by_version(self) -> pd.DataFrame:
        """Every build against the gcc build of its own RocksDB version (the post's comparison)."""
        return relative_by_version(self.frame, "gcc")


def both_sides(result: ToolchainsResult) -> None:
    """Refuse, in one line, a table or figure that compares the base build with itself: only smoke (the
    pipeline's check in CI, with the one build there is) shows the base alone, as the A/A control it is."""
    ran = sorted(set(result.frame["build"].dropna())) if "build" in result.frame.columns else []
    if len(ran) < 2 and result.scale != "smoke":
        raise ValueError(f"toolchains: study {result.study} ran only {', '.join(ran) or 'no build'}: no "
                         "comparison to show (rxlab builds lists the builds; the study's parameters name "
                         "the missing ones and the commands that make them)")
