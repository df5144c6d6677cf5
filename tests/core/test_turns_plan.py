"""The Study protocol's turns on a study without RocksDB: each run stores a synthetic measurement."""
from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from rxlab.core import scales, store
from rxlab.core.study import Study, StudyResult, manifest, match_runs, new_study_id
from rxlab.core.turns_plan import TURN_BUDGETS, Compare, TurnsParams, result_comparisons, turn_rows

TRUTH = {"base": 100.0, "fast": 120.0, "noisy": 90.0}
NOISE = {"base": 0.002, "fast": 0.002, "noisy": 0.02}
_NAME = re.compile(r"^syn-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-t(?P<turn>\d+)-(?P<config>[a-z]+)-c(?P<copy>\d)-"
                   r"(?P<group>[a-z]+)$")


@dataclass
class Params(TurnsParams):
    seed: int = 0


class Synthetic(Study, name="synthetic", notebook="", run_prefix="syn-", params=Params,
                compare=Compare(config="config", metric="value", groups=("group",), turn="turn")):
    """A study whose runs are draws around known values."""

    def plan(self, params):
        return pd.DataFrame([{"group": g, "config": c} for g in ("x", "y") for c in TRUTH])

    def setup(self, ctx):
        ctx.state["rng"] = np.random.default_rng(ctx.params.seed)

    def run_one(self, ctx, row):
        v = TRUTH[row.config] * np.exp(ctx.state["rng"].normal(0, NOISE[row.config]))
        name = ctx.run_name(f"t{row.turn}", row.config, f"c{row.copy}", row.group)
        with store.RunWriter(ctx.root, {"name": name}, {"hostname": "h"}) as w:
            w.add_step({"name": "step", "value": v})
        return w.path

    def frame(self, cat):
        cat, m = match_runs(cat, _NAME)
        if cat.empty:
            return pd.DataFrame(columns=["run_id", "study", "turn", "config", "copy", "group", "value"])
        return pd.DataFrame({"run_id": cat["run_id"], "study": m["study"], "turn": m["turn"].astype(int),
                             "config": m["config"], "copy": m["copy"].astype(int), "group": m["group"],
                             "value": cat["value"]})


STUDY = Synthetic()


def test_turn_rows_put_the_base_twice_and_rotate_groups():
    units = STUDY.plan(None)
    t0 = turn_rows(units, STUDY.compare, 0)
    t1 = turn_rows(units, STUDY.compare, 1)
    assert list(t0["group"].drop_duplicates()) == ["x", "y"]
    assert list(t1["group"].drop_duplicates()) == ["y", "x"]
    x0 = t0[t0["group"] == "x"]
    assert list(zip(x0["config"], x0["copy"], strict=True)) == [("base", 0), ("fast", 0), ("noisy", 0),
                                                                 ("base", 1)]
    only = turn_rows(units, STUDY.compare, 2, {("x",): ["noisy"], ("y",): []})
    assert set(only.loc[only["group"] == "x", "config"]) == {"base", "noisy"}
    assert "y" not in set(only["group"])     # nothing left to resolve there


def test_the_protocol_runs_turns_until_resolved(tmp_path):
    p = STUDY.params(scale="smoke", target=2.0, budget="5m", max_turns=40)
    res = STUDY.run(p, tmp_path, progress=False)
    t = result_comparisons(res, STUDY.compare)
    assert {"ratio", "lo", "hi", "half_width", "resolved", "turns", "status"} <= set(t.columns)
    fast = t[t["config"] == "fast"].set_index("group")
    noisy = t[t["config"] == "noisy"].set_index("group")
    assert fast["resolved"].all() and noisy["resolved"].all() and (t["half_width"].dropna() > 0).all()
    assert ((fast["lo"] <= 1.2) & (fast["hi"] >= 1.2)).all()
    # the quiet contender stopped at the minimum, the noisy one ran on with the base twice a turn, until
    # its group was resolved
    assert (fast["turns"] == 3).all() and noisy["turns"].max() > 3
    aa = t[t["config"] == "A/A"].set_index("group")
    m = manifest(tmp_path, res.study)
    assert m["status"] == "complete" and m["turns"]["stopped"] == "" and m["turns"]["turns"] == noisy[
        "turns"].max()
    assert (aa["turns"] == noisy["turns"]).all() and list(aa["comparison"]) == ["base A/A", "base A/A"]
    # loaded from the store, the same table
    again = StudyResult(study=res.study, frame=STUDY.frame(store.catalog(tmp_path)), runs=res.runs,
                        root=tmp_path)
    pd.testing.assert_frame_equal(result_comparisons(again, STUDY.compare), t)


def test_a_study_loaded_by_id_reads_only_the_runs_its_manifest_lists(tmp_path):
    """Loading a study by id catalogs the runs its manifest names, not the whole store: an unreadable
    run elsewhere in it is not even opened (no SkippedRunsWarning), and the frame is the one the run
    returned. A second study of the same kind is left out; the latest is found without an id as before."""
    p = STUDY.params(scale="smoke", target=50.0, budget="5m", max_turns=3)
    first = STUDY.run(p, tmp_path, progress=False)
    second = STUDY.run(STUDY.params(scale="smoke", target=50.0, budget="5m", max_turns=3, seed=1), tmp_path,
                       progress=False)
    (tmp_path / "20000101T000000Z-000000-broken").mkdir()          # a run directory with no run.json
    (tmp_path / "20000101T000000Z-000000-broken" / "steps.parquet").write_bytes(b"not parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error", store.SkippedRunsWarning)
        got = STUDY.load(tmp_path, study=first.study)
    assert got is not None and got.study == first.study
    pd.testing.assert_frame_equal(got.frame, first.frame)
    assert sorted(r.name for r in got.runs) == sorted(manifest(tmp_path, first.study)["runs"])
    with pytest.warns(store.SkippedRunsWarning):                     # no id: the whole store, as before
        latest = STUDY.load(tmp_path)
    assert latest is not None and latest.study == second.study


def test_the_budget_stops_the_turns_and_the_table_says_so(tmp_path):
    p = STUDY.params(scale="smoke", target=0.01, budget="1s", min_turns=3)
    res = STUDY.run(p, tmp_path, progress=False)
    t = result_comparisons(res, STUDY.compare)
    assert res.turns["stopped"] == "budget"
    assert not t["resolved"].any() and t["status"].str.startswith("unresolved:").all()
    assert t["status"].str.contains("budget").all()


class OnceFirst(Synthetic, name="synthetic_once", notebook="", run_prefix="syn-", params=Params,
                compare=Compare(config="config", metric="value", groups=("group",), turn="turn")):
    """A study whose first turn does 3 s of work that later turns do not repeat (as the backends study's
    whole runs), and says so."""

    def run_turn(self, ctx, rows):
        if int(rows["turn"].iloc[0]) == 0:
            time.sleep(3.0)
            ctx.state["turn_once_s"] = 3.0
        return [self.run_one(ctx, r) for r in rows.itertuples(index=False)]


def test_a_first_turns_one_off_work_is_left_out_of_the_next_turns_forecast(tmp_path):
    """3 s of one-off work in a 5 s budget: the later turns, a few tenths of a second each, still run
    (forecast with the whole first turn, the rule would stop after it)."""
    once = OnceFirst()
    res = once.run(once.params(scale="smoke", target=0.01, budget="5s", min_turns=1, max_turns=4), tmp_path,
                   progress=False)
    assert res.turns["turns"] == 4 and res.turns["stopped"] == "max turns", res.turns


@pytest.mark.parametrize(("kw", "line"), [
    ({"target": 0}, "target=0: expected a half-width in percent"),
    ({"budget": "soon"}, "budget='soon': expected None (the scale's) or a time such as 90s"),
    ({"min_turns": 0}, "min_turns=0: expected an integer 1..1000"),
])
def test_bad_turn_parameters_are_one_line(kw, line):
    with pytest.raises(ValueError, match=re.escape(line)) as e:
        STUDY.params(**kw)
    assert "\n" not in str(e.value)


def test_a_studys_own_preset_sets_its_budget_unless_given():
    """A study whose small preset has its own budget_s stops its turns there; `budget` overrides it; a
    study without presets of its own takes the common one."""
    class Own(TurnsParams):
        SCALES = scales.presets(scales.Scale, small={"budget_s": 123.0})

    assert Own(scale="small").rule().budget_s == 123.0
    assert Own(scale="small", budget="2m").rule().budget_s == 120.0
    assert Own(scale="smoke").rule().budget_s == TURN_BUDGETS["smoke"]
    assert TurnsParams(scale="small").rule().budget_s == TURN_BUDGETS["small"] != 123.0


def test_study_ids_made_within_one_second_sort_in_the_order_they_were_made():
    """`Study.load` takes the greatest id as the latest: two studies started in the same second (as in
    the test above) must not sort by their random digits."""
    ids = [new_study_id() for _ in range(300)]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"\d{8}T\d{6}[0-9a-f]{4}", i) for i in ids)
