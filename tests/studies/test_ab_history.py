"""Which stored `rxlab ab` studies measured one comparison (rxlab.studies.ab.history.comparison_key), and
what their pool prints and draws."""
import pandas as pd
import pytest

from rxlab.studies.ab.history import comparison_key, describe_pooled, forest_table, pooled, since_id

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


def test_the_figure_table_has_each_study_its_band_and_the_pool():
    t = pd.DataFrame({"study": ["20261207T184342aebd", "20261207T184359e3d5"],
                      "started_utc": ["2026-12-07T18:43:42Z", "2026-12-07T18:43:59Z"], "commit": ["", ""],
                      "ratio": [1.04, 1.02], "lo": [1.01, 0.99], "hi": [1.07, 1.05], "half_width": [3.0, 3.0],
                      "turns": [27, 27], "resolved": [False, False], "aa_ratio": [1.0, float("nan")],
                      "aa_lo": [0.97, float("nan")], "aa_hi": [1.03, float("nan")],
                      "aa_half_width": [3.0, float("nan")]})
    p = pooled(t)
    f = forest_table(t, p, "default", "posix", target=2.0)
    # two studies started in one minute stay two categories; the A/A band only where there was one
    assert list(f["study"]) == ["12-07 18:43", "12-07 18:43", "12-07 18:43 e3d5", "pooled"]
    assert list(f["config"]) == ["posix", "A/A", "posix", "posix"]
    assert f.iloc[-1]["ratio"] == pytest.approx(p["ratio"]) and not f.iloc[-1]["resolved"]
    assert describe_pooled(t, p, 2.0).startswith("2 studies of this comparison on this host (1.040, 1.020)")
    assert describe_pooled(t.iloc[:0], pooled(t.iloc[:0]), 2.0).startswith("no stored study")
