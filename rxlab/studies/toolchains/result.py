"""A toolchain study's result: its frame, the base build, the comparisons its tables and figures share."""
from __future__ import annotations

from functools import cached_property

import pandas as pd

from rxlab.core.resolution import DEFAULT_TARGET_PCT, MIN_TURNS
from rxlab.core.study import StudyResult, manifest
from rxlab.core.turns_plan import result_comparisons
from rxlab.studies.toolchains.params import COMPARE
from rxlab.studies.toolchains.relative import by_version, with_labels


class ToolchainsResult(StudyResult):
    """Frame keys: study, rep (the turn), copy (1: the base's A/A second run), build (the run's RocksDB
    build key), toolchain, version, base, test, run_id; then the step's raw columns (rocksdb_build among
    them) and the seeds' columns (qps...)."""

    @property
    def base(self) -> str:
        """The build the others are relative to (the parameters', or the one the runs recorded)."""
        if self.params is not None:
            return self.params.base
        return str(self.frame["base"].dropna().iloc[0])

    @cached_property
    def decided(self) -> dict:
        """What the turns decided (target, min_turns, stopped...): this run's, else its manifest's."""
        if self.turns:
            return dict(self.turns)
        return dict((manifest(self.root, self.study) or {}).get("turns") or {})

    @cached_property
    def comparisons(self) -> pd.DataFrame:
        """Every build's QPS over the base build's per test, with its 95% interval over the turns, and the
        base's A/A row per test (rxlab.core.turns_plan.result_comparisons), each row's toolchain and
        version beside."""
        return with_labels(result_comparisons(self, COMPARE), self.frame)

    @cached_property
    def by_version(self) -> pd.DataFrame:
        """Every build against the gcc build of its own RocksDB version (the post's comparison), from the
        same turns, with the study's A/A rows beside each version."""
        d, p = self.decided, self.params
        return by_version(self.frame, self.comparisons,
                          target=float(d.get("target") or getattr(p, "target", DEFAULT_TARGET_PCT)),
                          min_turns=int(d.get("min_turns") or getattr(p, "min_turns", MIN_TURNS)),
                          stopped=d.get("stopped", ""))


def both_sides(result: ToolchainsResult) -> None:
    """Refuse, in one line, a table or figure that compares the base build with itself: only smoke (the
    pipeline's check in CI, with the one build there is) shows the base alone, as the A/A control it is."""
    ran = sorted(set(result.frame["build"].dropna())) if "build" in result.frame.columns else []
    if len(ran) < 2 and result.scale != "smoke":
        raise ValueError(f"toolchains: study {result.study} ran only {', '.join(ran) or 'no build'}: no "
                         "comparison to show (rxlab builds lists the builds; the study's parameters name "
                         "the missing ones and the commands that make them)")
