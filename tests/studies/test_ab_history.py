"""Which stored `rxlab ab` studies measured one comparison (rxlab.studies.ab.history.comparison_key)."""
import pytest

from rxlab.studies.ab.history import comparison_key, since_id

BASE = {"a": "default", "b": "io_uring?registered_files=1&buffered_batches=engine", "workload": "readrandom",
        "threads": 1, "condition": "quiet", "direct": True, "scale": "small", "num": None, "rounds": None,
        "slice_s": None, "target": 2.0, "budget": "10m"}


@pytest.mark.parametrize("change", [
    {"b": "rxlab://io_uring?buffered_batches=engine&registered_files=1"},   # the same URI spelled otherwise
    {"num": 1_000_000},                                                      # the scale's own size, given
    {"target": 1.0, "budget": "30m", "min_turns": 3},                        # how long, not what
])
def test_the_same_comparison(change):
    assert comparison_key({**BASE, **change}) == comparison_key(BASE)


@pytest.mark.parametrize("change", [
    {"b": "io_uring?registered_files=1"}, {"a": "posix"}, {"workload": "readseq"}, {"threads": 2},
    {"condition": "busy"}, {"direct": False}, {"scale": "smoke"}, {"num": 2_000_000}, {"slice_s": 1.0},
])
def test_another_comparison(change):
    assert comparison_key({**BASE, **change}) != comparison_key(BASE)


def test_since_is_a_study_id_or_a_date():
    assert since_id("20261207T172553d52a") == "20261207T172553d52a"
    assert since_id("2026-12-07T17:00") == "20261207T170000"
    assert since_id(None) is None
    with pytest.raises(ValueError, match="since='soon': expected a study id"):
        since_id("soon")
