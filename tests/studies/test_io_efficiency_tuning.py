"""rxlab.studies.io_efficiency_tuning: parameters, the ladder's construction, a real tiny study of every
configuration, and that each configuration really changed what it says (counters, tickers, URIs), not timing.

The study runs once for the module at smoke size with 0.3 s runs (about fifteen seconds); the tables,
findings, figures (each redrawn from its saved table alone) and `load` are checked on it.
"""
from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures

from rxlab.core import store
from rxlab.core.study import manifest
from rxlab.studies.io_efficiency_tuning import CONFIGS, LADDER, STUDY, tables
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
    ({"repeats": 0}, "repeats=0: expected None"),
    ({"duration": "long"}, "duration='long': expected None"),
    ({"duration": 0.05}, "duration=0.05: expected None (the scale's) or seconds 0.1..3600"),
    ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are scale, configs"),
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


def test_configs_keep_the_ladders_order_and_the_plan_loads_once_and_rotates():
    p = STUDY.params(scale="smoke", repeats=3, configs=["default file system", "io_uring", "seed"])
    assert p.configs == ["seed", "io_uring", "default file system"]
    assert list(p.configs_table()["kind"]) == ["ladder", "ladder", "side"]
    pl = STUDY.plan(p)
    assert pl.iloc[0]["kind"] == "load" and (pl["kind"] == "load").sum() == 1
    firsts = [g[g["kind"] == "read"]["config"].iloc[0] for _, g in pl[pl["rep"] >= 0].groupby("rep")]
    assert len(set(firsts)) == 3  # no configuration always runs first
    for _, g in pl[pl["rep"] >= 0].groupby("rep"):
        assert g.iloc[0]["kind"] == "fio" and len(g) == 4


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning")
    p = STUDY.params(scale="smoke", duration=0.3, db_dir=str(root / "work"))
    return STUDY.run(p, root=root / "runs", progress=False)


def _row(result, config):
    f = result.frame
    return f[f["config"] == config].iloc[0]


def test_every_configuration_ran_against_its_repetitions_fio(result):
    f = result.frame
    assert set(f.loc[f["tool"] == DB_TOOL, "config"]) == set(CONFIGS) and result.configs == list(CONFIGS)
    assert (f["tool"] == FIO_TOOL).sum() == 1
    assert len(result.runs) == 1 + 1 + len(CONFIGS)   # the load, fio, a run per configuration
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


def test_tables_and_accounting_are_consistent(result):
    t = STUDY.table("configs", result)
    assert t.index[0] == "fio sync qd1" and list(t.index[1:]) == list(CONFIGS)
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
    assert acc["noise_us"].isna().all()   # one repetition: no noise estimate
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
    assert list(STUDY.figures) == ["ioeff_tuning", "ioeff_tuning_latency"]
    for s in saved_figures(STUDY, result, tmp_path):
        assert f"{SEED_FILE}: ioeff_efficiency" in s.side["published_sources"]
        assert s.again.axes and s.again.axes[0].patches   # bars drawn from the CSV alone
    t = pd.read_csv(tmp_path / "ioeff_tuning.csv")
    assert set(t["kind"]) == {"median", "rep", "target", "published"}
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
