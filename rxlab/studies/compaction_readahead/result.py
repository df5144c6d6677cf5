"""A readahead study's result: its tidy frame, the settings it ran, the device's max_sectors_kb."""
from __future__ import annotations

from rxlab.core.study import StudyResult


class ReadaheadResult(StudyResult):
    """Frame keys: study, rep, readahead (bytes), setting (its label), run_id; then the step's raw
    columns (spec.* among them: the memory limit, max_sectors_kb) and columns.DERIVED. One row per
    overwrite step."""

    @property
    def readahead(self) -> list[int]:
        return sorted(int(r) for r in self.frame["readahead"].unique())

    @property
    def max_sectors_kb(self) -> int | None:
        """The device's max_sectors_kb when the study ran (its largest request, KiB)."""
        v = self.frame.get("spec.max_sectors_kb")
        return int(v.dropna().iloc[0]) if v is not None and v.notna().any() else None

    @property
    def memory_limit(self) -> int:
        """Bytes of the overwrite step's memory cgroup (0: none)."""
        v = self.frame.get("spec.memory_limit")
        return int(v.dropna().iloc[0]) if v is not None and v.notna().any() else 0
