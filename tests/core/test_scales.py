"""rxlab.core.scales: the presets defined once, a study's own differences on top, parameters over both."""
from __future__ import annotations

import importlib
from dataclasses import dataclass

import pytest

from rxlab.bench.ioeff.db import SCALES as IOEFF_SCALES
from rxlab.core import scales
from rxlab.core.study import SCALES as STUDY_SCALES

MIB, GIB = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Own(scales.Scale):
    fio_size: int = 1 * GIB


def test_a_study_declares_only_what_differs():
    p = scales.presets(Own, smoke={"duration": 0.5, "fio_size": 64 * MIB}, full={"num": 8_000_000})
    assert list(p) == list(scales.NAMES) == list(STUDY_SCALES)
    assert p["smoke"] == Own(**{**scales.COMMON["smoke"], "duration": 0.5, "fio_size": 64 * MIB})
    assert p["small"] == Own(**scales.COMMON["small"])          # nothing declared: the common preset
    assert p["full"].num == 8_000_000 and p["full"].fio_size == 1 * GIB
    assert p["full"].cache_size == scales.COMMON["full"]["cache_size"]
    with pytest.raises(TypeError, match="scale 'huge': the scales are smoke, small, full"):
        scales.presets(Own, huge={"num": 1})
    with pytest.raises(TypeError):
        scales.presets(Own, smoke={"nosuch": 1})


def test_parameters_given_replace_the_scales_and_none_keeps_it():
    sc = scales.presets(Own)["small"]
    assert sc.given(duration=None, repeats=None) == sc
    got = sc.given(duration=2.5, repeats=7, fio_size=None)
    assert (got.duration, got.repeats, got.fio_size, got.num) == (2.5, 7, sc.fio_size, sc.num)
    with pytest.raises(TypeError, match="Own has no setting 'colour'"):
        sc.given(colour="red")


# The presets each study had before they were defined once (keys, seconds, repeats, cache per scale):
# defining them in one place must not change what a study runs. Changed since on purpose, when the
# studies moved to turns (2026-11-27) and each turn had to fit three times in the study's old time:
# compaction_readahead's small overwrite step 20 -> 8 s, tracing_overhead's small keys 100k -> 50k,
# async_io's small step 1.5 -> 0.6 s (repeats: the common 3, unused in turns); and on 2026-11-28, when
# the toolchain matrix's 6 builds were first measured, toolchains' small keys 500k -> 250k and seconds 8 -> 4;
# on 2026-12-07, when its timed tests moved to slices (every build at once), its small seconds 4 -> 2 (each
# build's seconds of a timed test in a turn: 4 slices of 0.5 s).
BEFORE = {
    "rxlab.studies.async_io.params": {"smoke": (20_000, 0.1, 1, 1 * MIB),
                                      "small": (1_000_000, 0.6, 3, 8 * MIB),
                                      "full": (5_000_000, 5.0, 3, 64 * MIB)},
    "rxlab.studies.compaction_readahead.params": {"smoke": (60_000, 1.0, 1, 1 * MIB),
                                                  "small": (2_500_000, 8.0, 2, 8 * MIB),
                                                  "full": (None, 120.0, 3, 64 * MIB)},
    "rxlab.bench.ioeff.db": {"smoke": (30_000, 1.0, 1, 1 * MIB), "small": (2_000_000, 5.0, 3, 8 * MIB),
                             "full": (None, 20.0, 3, 64 * MIB)},
    "rxlab.studies.io_efficiency_tuning.params": {"smoke": (30_000, 0.5, 1, 1 * MIB),
                                                  "small": (2_000_000, 5.0, 3, 8 * MIB),
                                                  "full": (8_000_000, 20.0, 5, 8 * MIB)},
    "rxlab.studies.toolchains.params": {"smoke": (10_000, 0.3, 2), "small": (250_000, 2.0, 3),
                                        "full": (4_000_000, 60.0, 5)},
    # tracing runs a count of operations: its preset's seconds are unused (...)
    "rxlab.studies.tracing_overhead.params": {"smoke": (2_000, ..., 1, 1 * MIB),
                                              "small": (50_000, ..., 3, 8 * MIB),
                                              "full": (1_000_000, ..., 3, 8 * MIB)},
    "rxlab.studies.quickstart.params": {"smoke": (20_000,), "small": (500_000,), "full": (4_000_000,)},
    "rxlab.studies.backends.params": {"smoke": (5_000, 0.2, 1, 1 * MIB), "small": (200_000, 2.0, 3, 8 * MIB),
                                      "full": (2_000_000, 10.0, 3, 32 * MIB)},
}


@pytest.mark.parametrize("module", list(BEFORE))
def test_every_study_keeps_its_presets(module):
    presets = importlib.import_module(module).SCALES
    assert list(presets) == list(scales.NAMES)
    for name, want in BEFORE[module].items():
        sc = presets[name]
        assert isinstance(sc, scales.Scale), module
        got = (sc.num, sc.duration, sc.repeats, sc.cache_size)[:len(want)]
        kept = [g for g, w in zip(got, want, strict=True) if w is not ...]
        assert kept == [w for w in want if w is not ...], (module, name, got)


def test_the_seeds_db_keeps_its_own_settings():
    smoke, full = IOEFF_SCALES["smoke"], IOEFF_SCALES["full"]
    assert (smoke.revrange_duration, smoke.fio_runtime, smoke.fio_ramp) == (0.3, 1.0, 0.2)
    assert smoke.fio_size == 64 * MIB
    assert (smoke.write_buffer_size, smoke.max_bytes_for_level_base) == (1 * MIB, 4 * MIB)
    assert (full.revrange_duration, full.fio_runtime, full.fio_size, full.max_bytes_for_level_base) == \
        (5.0, 20.0, None, 256 * MIB)
