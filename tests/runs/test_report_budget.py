"""`rxlab report --budget`: the report's time split among the notebooks' turns, planned again before each.

The split is checked on a simulated report (notebooks whose times are known, some taking more or less than
expected), the index's times read back, and a real report at smoke scale with a budget: the notebook that
takes one is given it, and the index says so.
"""
from __future__ import annotations

import os
import re
import subprocess

import pytest
from helpers_cli import rxlab_cmd

from rxlab.runs import report_budget as rb
from rxlab.runs.notebooks import notebook_index
from rxlab.runs.report import _slots, expected_times, last_turns, turns_phrase
from rxlab.runs.report_budget import FLOOR_S, Slot, share, turns_fitting


def _simulate(slots, total, actual):
    """Run the plan: each notebook takes actual[name](given budget) seconds; returns (given, seconds)."""
    left, given, spent = total, {}, 0.0
    for i, s in enumerate(slots):
        g = share(slots[i:], left)
        given[s.name] = g
        t = actual[s.name](g)
        spent += t
        left -= t
    return given, spent


def _turns(fixed, budget_default):
    # a notebook whose turns take exactly the budget it is given (its own when None), plus fixed work
    return lambda g: fixed + (budget_default if g is None else g)


SLOTS = [Slot("a", None, 100.0), Slot("b", 1200.0, 1300.0), Slot("c", 600.0, 650.0), Slot("d", None, 200.0)]
ACTUAL = {"a": lambda g: 100.0, "b": _turns(100, 1200), "c": _turns(50, 600), "d": lambda g: 200.0}


def test_everything_keeps_its_own_budget_when_the_report_fits():
    given, spent = _simulate(SLOTS, 2250.0, ACTUAL)
    assert given == {"a": None, "b": None, "c": None, "d": None}
    assert spent == 2250.0


def test_the_excess_is_taken_from_the_turns_in_proportion_and_the_report_ends_on_time():
    given, spent = _simulate(SLOTS, 1800.0, ACTUAL)   # 450 s too many: 300 from b's 1200, 150 from c's 600
    assert given["a"] is None and given["d"] is None   # no budget parameter: they run as they are
    assert given["b"] == pytest.approx(900.0) and given["c"] == pytest.approx(450.0)
    assert spent == pytest.approx(1800.0)


def test_a_notebook_that_overruns_takes_its_excess_from_those_after_it():
    late = {**ACTUAL, "b": lambda g: 100 + g + 120}    # b's last turn ran 120 s past its budget
    given, spent = _simulate(SLOTS, 1800.0, late)
    assert given["c"] == pytest.approx(330.0)
    assert spent == pytest.approx(1800.0)


def test_one_that_finishes_early_leaves_its_time_to_those_after_it():
    early = {**ACTUAL, "b": lambda g: 100 + 0.5 * g}   # b resolved its comparisons in half its budget
    given, _ = _simulate(SLOTS, 1800.0, early)
    assert given["c"] is None                             # everything left fits again


def test_a_share_never_goes_below_the_floor_nor_above_its_own_budget():
    assert share([Slot("b", 1200.0, 1300.0)], 10.0) == FLOOR_S        # far over: one turn still runs
    assert share([Slot("b", 5.0, 300.0)], 10.0) == 5.0                 # a budget below the floor stays
    assert share([Slot("b", 300.0, 200.0), Slot("x", None, 50.0)], 240.0) <= 300.0
    assert share([Slot("x", None, 50.0)], 0.0) is None
    with pytest.raises(ValueError, match="no notebook left"):
        share([], 100.0)


def _simulate_turns(slots, total, fixed, turn_s):
    """Run the plan with the stopping rule: a notebook runs the turns of `turn_s` seconds that fit what
    it is given (its own budget when None); returns (turns run, seconds)."""
    left, ran, spent = total, {}, 0.0
    for i, s in enumerate(slots):
        g = share(slots[i:], left)
        n = turns_fitting(s.turns_budget if g is None else g, turn_s)
        ran[s.name] = n
        t = fixed + n * turn_s
        spent += t
        left -= t
    return ran, spent


def test_a_cut_costs_whole_turns_to_the_nearest_and_the_rest_goes_to_those_after():
    # two studies of 6 turns of 100 s (600 s own budgets) and 50 s of other work each: 1300 s expected.
    # In 1190 s each has to give 55 s: 5.45 turns. Not knowing the turns' length, the plan gives the
    # first 545 s (5 turns), and the second 590 s: 5 turns too, 10 s short of a sixth, and 90 s of the
    # report unused. Knowing it, the first is given 5.5 turns and runs 5, and the second, with 640 s left
    # for its turns, all 6 of its own budget: the report takes 1200 s.
    plain = [Slot("a", 600.0, 650.0), Slot("b", 600.0, 650.0)]
    ran, spent = _simulate_turns(plain, 1190.0, 50.0, 100.0)
    assert ran == {"a": 5, "b": 5} and spent == pytest.approx(1100.0)
    slots = [Slot("a", 600.0, 650.0, 100.0, 600.0), Slot("b", 600.0, 650.0, 100.0, 600.0)]
    ran, spent = _simulate_turns(slots, 1190.0, 50.0, 100.0)
    assert ran == {"a": 5, "b": 6}
    assert spent == pytest.approx(1200.0)        # over by 10 s: less than half of the last one's turn
    # a share of 2.9 turns is given 3 with half a turn to spare; 2.4 turns, 2; never fewer than one
    assert share([Slot("c", 600.0, 650.0, 100.0, 600.0)], 340.0) == pytest.approx(350.0)
    assert share([Slot("c", 600.0, 650.0, 100.0, 600.0)], 290.0) == pytest.approx(250.0)
    assert share([Slot("c", 600.0, 650.0, 100.0, 600.0)], 10.0) == pytest.approx(150.0)
    # never above its own budget
    assert share([Slot("c", 600.0, 650.0, 100.0, 600.0), Slot("d", None, 1.0)], 649.0) == pytest.approx(600.0)


def test_turns_fitting_follows_the_stopping_rule():
    assert turns_fitting(350.0, 100.0) == 3
    assert turns_fitting(300.0, 100.0) == 3      # a turn that ends on the budget still runs
    assert turns_fitting(299.0, 100.0) == 2
    assert turns_fitting(5.0, 100.0) == 1        # the first always runs


def test_the_index_records_the_turns_and_the_plan_reads_them_back(tmp_path):
    phrase = turns_phrase({"turns": 4, "seconds": 561.0, "stopped": "budget"})
    assert phrase == "4 turns of 140 s, stopped by its budget"
    assert turns_phrase({"turns": 1, "seconds": 20.0, "stopped": ""}) == "1 turn of 20 s, resolved"
    idx = tmp_path / "index.md"
    idx.write_text("# Figures\n\nRegenerated by `rxlab report` at scale `small` (each ...).\n\n"
                   "## 10_io_efficiency\n\nLast run: ok (877 s, 20 runs stored, 3 turns of 230 s, resolved), "
                   "executed notebook x\n\n"
                   f"## 60_compaction_readahead\n\nLast run: ok (613 s, 9 runs stored, {phrase}), y\n\n"
                   "## 80_cpu_breakdown\n\nLast run: ok (99 s, 2 runs stored), z\n")
    assert last_turns(idx, "small") == {"10_io_efficiency": (3, 230.0, ""),
                                        "60_compaction_readahead": (4, 140.0, "budget")}
    assert last_turns(idx, "smoke") == {}
    slots = {s.name: s for s in _slots(notebook_index(), "small", tmp_path)}
    # resolved in its turns: expected as it ran
    io = slots["10_io_efficiency"]
    assert (io.expected_s, io.turn_s, io.turns_s) == (877.0, 230.0, 690.0)
    # stopped by a budget: at its own (225 s at small) one turn of 140 s fits, not the 4 that ran
    ra = slots["60_compaction_readahead"]
    assert ra.turns_budget == 225.0
    assert ra.turns_s == 140.0 and ra.expected_s == pytest.approx(613.0 - 560.0 + 140.0)


def test_expected_times_come_from_the_last_report_at_the_same_scale(tmp_path):
    idx = tmp_path / "index.md"
    idx.write_text("# Figures\n\nRegenerated by `rxlab report` at scale `small` (each ...).\n\n"
                   "## 10_io_efficiency\n\nLast run: ok (877 s, 20 runs stored), executed notebook x\n\n"
                   "## 20_perf_model\n\nLast run: ok (612 s, its turns' budget 480 s of the report's, 3 runs "
                   "stored), executed notebook y\n\n"
                   "## 30_backends\n\nLast run: **failed**: boom\n")
    assert expected_times(idx, "small") == {"10_io_efficiency": 877.0, "20_perf_model": 612.0}
    assert expected_times(idx, "full") == {}
    assert expected_times(tmp_path / "none.md", "small") == {}


def test_each_notebooks_turns_budget_is_known_without_making_its_parameters(tmp_path):
    # toolchains' parameters refuse without its build matrix; its budget is still known (12 min at small)
    slots = {s.name: s for s in _slots(notebook_index(), "small", tmp_path)}
    assert slots["70_toolchains"].turns_budget == 720.0
    assert slots["20_perf_model"].turns_budget == slots["10_io_efficiency"].turns_budget == 1200.0
    assert slots["80_cpu_breakdown"].turns_budget is None          # no budget parameter
    assert slots["10_io_efficiency"].expected_s == 1200.0 + rb.MARGIN_S   # no index: budget and a margin


@pytest.mark.rocksdb   # a notebook of a real study at smoke: about 30 s
def test_report_with_a_budget_gives_it_to_the_notebook_and_says_so(tmp_path):
    figs = tmp_path / "figs"
    figs.mkdir()
    # a last report at smoke that took far longer than 20 s: the plan has to cut the study's turns
    (figs / "index.md").write_text("# Figures\n\nRegenerated by `rxlab report` at scale `smoke`.\n\n"
                                   "## 50_tracing_overhead\n\nLast run: ok (300 s, 1 runs stored), x\n")
    env = {**os.environ, "RXLAB_RUNS": str(tmp_path / "runs"), "RXLAB_SCRATCH": str(tmp_path / "scratch")}
    r = subprocess.run([*rxlab_cmd(), "report", "--scale", "smoke", "--only", "50", "--budget", "20s",
                        "--figures", str(figs)], env=env, capture_output=True, text=True, timeout=600,
                       check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    # 300 s expected in 20 s: cut to the floor, which is above smoke's own 5 s: its own, then
    assert re.search(r"50_tracing_overhead \(report: \d+s of 20s left; its turns get 5 s\)", r.stderr), \
        r.stderr[-2000:]
    index = (figs / "index.md").read_text()
    assert "its turns' budget 5 s of the report's" in index
    # what its turns decided, read back by the next report's plan
    assert re.search(r"runs stored, \d+ turns? of \d+ s, (resolved|stopped by its budget|stopped at its max "
                     r"turns)\)", index), index[:3000]
    assert set(last_turns(figs / "index.md", "smoke")) == {"50_tracing_overhead"}


def test_a_bad_report_budget_is_one_line(tmp_path):
    r = subprocess.run([*rxlab_cmd(), "report", "--budget", "soon", "--figures", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 2
    assert r.stderr.strip() == ("rxlab report: budget='soon': expected a positive time such as 90s, 10m, "
                                "1.5h (or seconds)")
