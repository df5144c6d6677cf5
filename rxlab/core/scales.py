"""The scale presets, defined once: what smoke, small and full mean for every study.

`smoke` runs in seconds (CI: it checks the pipeline, not the numbers),
`small` in minutes on a laptop, `full` is the largest run the machine holds
(`num` None: a DB sized from the free disk, rxlab.core.study.key_count).
`COMMON` holds the values every study starts from; a study declares only what
differs, and the fields it adds, in one call:

    @dataclass(frozen=True)
    class Scale(scales.Scale):
        fio_runtime: float = 5.0

    SCALES = scales.presets(Scale, smoke={"duration": 0.5, "fio_runtime": 1.0}, full={"num": 8_000_000})

`Scale.given(...)` is a preset with the parameters a user set (None keeps the
scale's), the one way every study turns `duration=None` into its scale's.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["COMMON", "NAMES", "Scale", "presets"]

NAMES = ("smoke", "small", "full")
MIB = 1 << 20


@dataclass(frozen=True)
class Scale:
    """What every study's scale sets. A study's own Scale subclasses it, its added fields with defaults."""

    num: int | None      # keys loaded (None: sized from the free disk)
    duration: float      # seconds of each timed step
    repeats: int         # repetitions of each configuration
    cache_size: int      # RocksDB's block cache, bytes: below the DB, so that reads reach the device
    budget_s: float      # seconds a study compared in turns may take (rxlab.core.turns_plan), unless told

    def given(self, **values):
        """This preset with each value given that is not None (a parameter left None keeps the scale's)."""
        unknown = [k for k in values if k not in {f.name for f in dataclasses.fields(self)}]
        if unknown:
            raise TypeError(f"{type(self).__name__} has no setting {unknown[0]!r}")
        return dataclasses.replace(self, **{k: v for k, v in values.items() if v is not None})


# The common presets: the first seed's DB (16-byte keys, 400-byte values) at each scale.
# Turns: a few seconds at smoke (CI: one turn, then another only while it fits); small and full leave
# the stopping rule room to resolve.
COMMON: dict[str, dict] = {
    "smoke": {"num": 30_000, "duration": 1.0, "repeats": 1, "cache_size": 1 * MIB,        # ~12 MB: seconds
              "budget_s": 5.0},
    "small": {"num": 2_000_000, "duration": 5.0, "repeats": 3, "cache_size": 8 * MIB,     # ~0.8 GiB: minutes
              "budget_s": 600.0},
    "full": {"num": None, "duration": 20.0, "repeats": 3, "cache_size": 64 * MIB,         # from the free disk
             "budget_s": 3600.0},
}

S = TypeVar("S", bound=Scale)


def presets(scale: type[S] = Scale, **differ: dict) -> dict[str, S]:
    """Every scale's preset of a study: COMMON's values, replaced and extended by the study's own
    (`differ`: a dict per scale name, only what differs)."""
    bad = [k for k in differ if k not in NAMES]
    if bad:
        raise TypeError(f"scale {bad[0]!r}: the scales are {', '.join(NAMES)}")
    return {name: scale(**{**COMMON[name], **differ.get(name, {})}) for name in NAMES}
