"""rxlab.studies.io_efficiency_tuning: parameters, the ladder's construction, the turns (fio first in each,
the seed's setting twice), a real tiny study of every configuration, and that each configuration really
changed what it says (counters, tickers, URIs), not timing.

The study runs once for the module at smoke size with 0.3 s runs (one turn: a 1 s budget,
about twenty seconds); the comparisons, tables, findings, figures (each redrawn from its saved table alone)
and `load` are checked on it.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures

from rxlab.core import store
from rxlab.core.study import RunContext, manifest
from rxlab.core.turns_plan import turn_rows
from rxlab.studies.io_efficiency_tuning import CONFIGS, LADDER, STUDY, tables
from rxlab.studies.io_efficiency_tuning import study as study_module
from rxlab.studies.io_efficiency_tuning.params import SEED_FILE, TARGET
from rxlab.studies.io_efficiency_tuning.result import DB_TOOL, FIO_TOOL

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


@pytest.mark.parametrize(("kw", "message"), [
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"configs": ["seed", "nosuch"]}, "configs=['seed', 'nosuch']: expected distinct names from: seed,"),
    ({"configs": ["io_uring"]}, "configs=['io_uring']: must include 'seed'"),
    ({"configs": ["seed", "seed"]}, "expected distinct names"),
    ({"repeats": 0}, "repeats=0: expected None (turns by the stopping rule)"),
    ({"target": 0}, "target=0: expected a half-width in percent"),
    ({"budget": "soon"}, "budget='soon': expected None (the scale's) or a time"),
    ({"duration": "long"}, "duration='long': expected None"),
    ({"duration": 0.05}, "duration=0.05: expected None (the scale's) or seconds 0.1..3600"),
    ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are scale, target, budget, min_turns, max_turns, "
                    "configs, repeats"),
])
def test_a_bad_parameter_fails_in_one_line(kw, message):
    assert message in refusal(STUDY, **kw)


def test_each_rung_is_the_one_before_plus_one_change():
    for before, after in itertools.pairwise(LADDER):
        changed = (before.backend != after.backend) + sum(
            before.spec.get(k) != after.spec.get(k) for k in {*before.spec, *after.spec}) + sum(
            before.step.get(k) != after.step.get(k) for k in {*before.step, *after.step})
        assert changed == 1, (before.name, after.name)
        # what was changed earlier stays changed
        assert before.spec.items() <= after.spec.items() and before.step.items() <= after.step.items()
    assert LADDER[0].name == "seed" and LADDER[0].backend == "posix"
    assert not any(c.busy_polls for c in LADDER)
    assert [c.name for c in CONFIGS.values() if c.on_ladder] == [c.name for c in LADDER]


def test_configs_keep_the_ladders_order_and_a_turn_rotates_them_with_the_seed_twice():
    p = STUDY.params(scale="smoke", configs=["default file system", "io_uring", "seed"])
    assert p.configs == ["seed", "io_uring", "default file system"]
    assert list(p.configs_table()["kind"]) == ["ladder", "ladder", "side"]
    units = STUDY.plan(p)
    assert list(units.columns) == ["config"] and list(units["config"]) == p.configs   # one turn, no load
    turns = [turn_rows(units, STUDY.compare, t) for t in range(8)]
    for t, rows in enumerate(turns):
        assert (rows["rep"] == t).all() and len(rows) == 4
        assert sorted(rows.loc[rows["config"] == "seed", "copy"]) == [0, 1]        # the A/A pair
        assert (rows.loc[rows["config"] != "seed", "copy"] == 0).all()
    assert len({tuple(r["config"]) for r in turns}) == 8                          # the order moves
    assert {r["config"].iloc[0] for r in turns} == set(p.configs)                 # each goes first
    # `repeats` runs exactly that many turns; otherwise the rule (target, budget) decides
    four = STUDY.params(scale="smoke", repeats=4).rule()
    assert (four.min_turns, four.max_turns, four.budget_s) == (4, 4, None)
    rule = STUDY.params(scale="small").rule()
    assert rule.budget_s == 264.0 and rule.max_turns is None and rule.target == 2.0


def test_the_db_loads_once_and_each_turn_runs_fio_before_its_first_read(tmp_path, monkeypatch):
    """Three turns with the runs themselves faked (what each would run is recorded): the load once, in
    setup, then in each turn fio first, then every configuration once and the seed's setting twice."""
    calls: list[tuple] = []

    def read(spec, root, progress, meta):
        calls.append((meta["kind"], meta["rep"], meta["copy"], meta["config"], spec.seed))
        return tmp_path / spec.name

    def fio_run(root, filename, meta, **kw):
        calls.append(("fio", meta["rep"], meta["copy"], meta["config"], kw["seed"]))
        return tmp_path / meta["name"]

    monkeypatch.setattr(study_module.driver, "run", read)
    monkeypatch.setattr(study_module.fio, "run_stored", fio_run)
    monkeypatch.setattr(study_module.fio, "layout", lambda *a, **k: True)
    p = STUDY.params(scale="smoke", configs=["seed", "io_uring"], db_dir=str(tmp_path))
    ctx = RunContext(STUDY, "20261128T000000abcd", p, p.settings(), tmp_path, tmp_path)
    STUDY.setup(ctx)
    assert calls == [("load", -1, 0, "", 0)] and len(ctx.runs) == 1
    returned = []
    for t in range(3):
        for row in turn_rows(STUDY.plan(p), STUDY.compare, t).itertuples(index=False):
            returned.append(len(STUDY.run_one(ctx, row)))
    assert returned == [2, 1, 1] * 3    # the turn's first read comes with its fio
    for t in range(3):
        turn = [c for c in calls if c[1] == t]
        assert turn[0][0] == "fio" and [c[0] for c in turn[1:]] == ["read"] * 3
        assert sorted((c[3], c[2]) for c in turn[1:]) == [("io_uring", 0), ("seed", 0), ("seed", 1)]
        assert len({c[4] for c in turn[1:]}) == 1    # every read of a turn reads the same keys


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning")
    p = STUDY.params(scale="smoke", duration=0.3, budget="1s", db_dir=str(root / "work"))   # one turn
    return STUDY.run(p, root=root / "runs", progress=False)


def _row(result, config):
    f = result.frame
    return f[f["config"] == config].iloc[0]


def test_every_configuration_ran_against_its_turns_fio(result):
    f = result.frame
    assert set(f.loc[f["tool"] == DB_TOOL, "config"]) == set(CONFIGS) and result.configs == list(CONFIGS)
    assert (f["tool"] == FIO_TOOL).sum() == 1 and set(f["rep"]) == {0}    # smoke's budget: one turn
    # the load, fio, a run per configuration and the seed's A/A copy
    assert len(result.runs) == 1 + 1 + len(CONFIGS) + 1
    assert f.groupby("config")["copy"].apply(sorted).to_dict() == {"": [0], **{c: [0] for c in CONFIGS},
                                                                   "seed": [0, 1]}
    assert f.loc[f["copy"] == 1, "run_name"].str.endswith("-r0a-seed").all()   # the A/A copy's name
    assert all(store.is_complete(r) for r in result.runs)
    r = tables.efficiency_rows(result)
    fio_iops = f.loc[f["tool"] == FIO_TOOL, "iops"].iloc[0]
    assert np.allclose(r["io.eff"], r["iops"] / fio_iops)
    # one level after the compaction: nearly every query reads one block (the engine's own count; the
    # device's count in /proc/diskstats also holds whatever else this machine reads meanwhile, so only
    # its lower bound is checked)
    engine_reads = pd.to_numeric(r["fs.reads"], errors="coerce")
    per_query = (engine_reads / r["ops"])[engine_reads > 0]
    assert len(per_query) >= 5 and ((per_query > 0.5) & (per_query < 1.2)).all(), per_query
    assert (r["reads_per_query"] > 0.5).all(), r["reads_per_query"]
    assert (r["found"] == r["ops"]).all()


def test_each_configuration_changed_what_it_says(result):
    seed, nostats = _row(result, "seed"), _row(result, "statistics off")
    hits = "ticker.rocksdb.block.cache.data.miss"
    assert seed[hits] > 0 and not nostats.get(hits, 0) > 0  # Statistics really off
    assert _row(result, "registered files + fixed buffers")["backend"].endswith(
        "registered_files=1&fixed_buffers=1")
    assert "io_uring" in _row(result, "io_uring")["backend"]
    assert _row(result, "defer taskrun")["backend"].endswith("fixed_buffers=1&defer_taskrun=1")
    assert "defer_taskrun" not in _row(result, "sqpoll")["backend"]  # the kernel refuses the two together
    assert _row(result, "spin")["backend"].endswith("fixed_buffers=1&spin_us=500")
    # without a block cache every query reads its block from the device (the index and filter
    # live in the table readers); with the 1 MiB cache some data blocks are hits
    nocache = _row(result, "no block cache")
    assert nocache["fs.reads"] / nocache["ops"] == pytest.approx(1.0, abs=0.01)
    assert seed["fs.reads"] / seed["ops"] < nocache["fs.reads"] / nocache["ops"]
    assert not _row(result, "engine counters off").get("fs.reads", 0) > 0  # counters=0
    assert not _row(result, "default file system").get("fs.reads", 0) > 0  # not an rxlab engine
    # index and filter blocks went through the block cache only where asked
    idx = "ticker.rocksdb.block.cache.index.add"
    assert _row(result, "index+filter in cache")[idx] > 0 and not seed.get(idx, 0) > 0
    assert "sqpoll=1" in _row(result, "sqpoll")["backend"]


def test_every_comparison_has_its_interval_and_the_a_a_row_and_says_why_it_is_unresolved(result):
    """A 1 s budget holds one turn: every io.eff ratio to the seed's setting is there, none
    resolved, and the table, the figure and the findings say so."""
    c = STUDY.table("comparisons", result)
    assert {"ratio", "lo", "hi", "half_width", "resolved", "turns", "status"} <= set(c.columns)
    assert set(c["config"]) == (set(CONFIGS) - {"seed"}) | {"A/A"} and set(c["base"]) == {"seed"}
    assert (c["ratio"] > 0).all() and not c["resolved"].any() and (c["turns"] == 1).all()
    assert (c["status"] == "unresolved: too few turns (1 < 3), budget").all()
    # the ratio is the turn's io.eff over the seed's (the geometric mean of its two runs)
    r = tables.efficiency_rows(result).groupby(["config", "copy"])["io.eff"].first()
    seed = np.sqrt(r["seed", 0] * r["seed", 1])
    got = c.set_index("config")["ratio"]
    assert np.isclose(got["io_uring"], r["io_uring", 0] / seed)
    assert np.isclose(got["A/A"], r["seed", 1] / r["seed", 0])
    assert result.turns["stopped"] == "budget" and manifest(result.root, result.study)["turns"]["turns"] == 1
    fig = STUDY.figures["ioeff_tuning_ratio"].data(result)   # drawn and saved in the figures' test
    # each configuration in the ladder's order, the seed's A/A row beside it (the band)
    cmp = fig[fig["config"] != "A/A"]
    assert list(cmp["config"]) == [n for n in CONFIGS if n != "seed"]
    assert (fig.groupby("label")["config"].apply(lambda x: "A/A" in set(x))).all()
    assert "half_width" in fig.columns and not fig["resolved"].any()
    text = STUDY.findings(result)
    assert "0 of 12 io.eff ratios to seed resolved; unresolved, not to be read as differences" in text


def test_tables_and_accounting_are_consistent(result):
    t = STUDY.table("configs", result)
    assert t.index[0] == "fio sync qd1" and list(t.index[1:]) == list(CONFIGS)
    assert t.loc["seed", "n"] == 2 and (t.drop(index=["fio sync qd1", "seed"])["n"] == 1).all()
    assert (t["io.eff_min"] <= t["io.eff"] + 1e-12).iloc[1:].all()
    acc = STUDY.table("accounting", result)
    assert list(acc.index) == [c.name for c in LADDER]
    lat = acc["lat_meas_us"].to_numpy()
    assert np.allclose(acc["saved_meas_us"].iloc[1:], lat[:-1] - lat[1:])
    assert np.allclose(acc["unexplained_us"].iloc[1:], (acc["saved_meas_us"] - acc["saved_pred_us"]).iloc[1:])
    assert np.allclose((acc["saved_user_us"] + acc["saved_sys_us"]).iloc[1:],
                       -np.diff(acc["cpuPer"].to_numpy()))   # means: the parts add up
    cpu = tables.efficiency_rows(result).groupby("config")["cpuPer"].median()
    assert np.isclose(acc.loc["seed", "cpuPer"], cpu["seed"])
    assert acc["noise_us"].isna().all()   # one turn: no noise estimate
    # busy polling (SQPOLL, the spinning reader) is left out of the model and its held-out predictions
    busy = {c.name for c in CONFIGS.values() if c.busy_polls}
    assert busy == {"sqpoll", "spin"}
    assert not busy & set(tables.model_rows(result)["config"])
    ho = STUDY.table("held_out", result)
    assert not ({"seed"} | busy) & set(ho["config"]) and len(ho) == len(CONFIGS) - 1 - len(busy)
    assert np.isfinite(ho["err_iops_pct"]).all()
    by = STUDY.table("held_out_by_config", result)
    assert set(by.index) == set(ho["config"]) and (by["n"] == ho.groupby("config").size()).all()
    med = ho.groupby("config")[["iops", "iops_pred"]].median()
    assert np.allclose(by["fitted_err_pct"], (med["iops_pred"] / med["iops"] - 1) * 100)


def test_paired_noise_is_two_standard_errors():
    assert tables.paired_noise(pd.Series([1.0, 3.0, np.nan])) == pytest.approx(2.0 * np.std([1, 3], ddof=1)
                                                                              / np.sqrt(2))
    assert np.isnan(tables.paired_noise(pd.Series([1.0])))


def test_findings_name_the_baseline_the_best_and_the_side_configurations(result):
    text = STUDY.findings(result)
    assert "fio sync qd1" in text and "Best without busy polling" in text and "sqpoll (side)" in text
    assert f"the target {TARGET:.2f}" in text and "nan" not in text


def test_each_figure_is_drawn_from_its_table_alone(result, tmp_path):
    assert list(STUDY.figures) == ["ioeff_tuning", "ioeff_tuning_ratio", "ioeff_tuning_latency"]
    for s in saved_figures(STUDY, result, tmp_path):
        assert f"{SEED_FILE}: ioeff_efficiency" in s.side["published_sources"]
        assert s.again.axes
        if s.name != "ioeff_tuning_ratio":
            assert s.again.axes[0].patches   # bars drawn from the CSV alone
    t = pd.read_csv(tmp_path / "ioeff_tuning.csv")
    assert set(t["kind"]) == {"median", "rep", "target", "published"}
    # one turn resolves nothing: every bar but the seed's own is hollow
    vs = t[t["kind"] == "median"].set_index("config")["vs_seed"]
    assert vs["seed"] == "base" and (vs.drop("seed") == "unresolved").all()
    assert t.loc[t["kind"] == "published", "io.eff"].tolist() == [0.842]   # the seed's readrandom2, 1 user
    assert t.loc[t["kind"] == "target", "io.eff"].tolist() == [TARGET]
    assert list(t.loc[t["kind"] == "median", "config"]) == list(CONFIGS)
    lat = pd.read_csv(tmp_path / "ioeff_tuning_latency.csv")
    assert not {"sqpoll", "spin"} & set(lat["config"])
    m = lat[lat["kind"] == "median"].pivot_table(index="config", columns="component", values="us")
    assert np.allclose(m["user CPU"] + m["system CPU"] + m["device and waiting"], m["measured latency"])


def test_the_study_is_registered_stored_and_found_again(result, tmp_path):
    m = manifest(result.root, result.study)
    assert m["status"] == "complete" and m["scale"] == "smoke" and len(m["runs"]) == len(result.runs)
    again = STUDY.load(result.root)
    assert again is not None and again.study == result.study
    pd.testing.assert_frame_equal(again.frame.reset_index(drop=True), result.frame.reset_index(drop=True),
                                  check_like=True)
    assert STUDY.load(result.root, scale="small") is None
    assert STUDY.load(result.root, where=lambda f: (f["config"] == "nosuch").any()) is None
    # the DB and fio's file are gone, the results stay
    assert not list((Path(result.root).parent / "work").iterdir())
    out = registered_outputs(STUDY, result, tmp_path)
    assert {f"io_efficiency_tuning_{t}.{x}" for t in STUDY.tables for x in ("tex", "md", "csv")} <= out.tables


def test_a_frame_without_tuning_runs_is_empty(tmp_path):
    with store.RunWriter(tmp_path, {"name": "not-a-tuning-run", "backend": "posix", "kind": "read"},
                         {"hostname": "h"}) as w:
        w.add_step({"name": "readrandom", "ops": 1, "wall_s": 1.0})
    assert STUDY.frame(store.catalog(tmp_path)).empty
    assert STUDY.load(tmp_path) is None
