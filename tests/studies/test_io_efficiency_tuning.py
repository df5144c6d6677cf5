"""rxlab.studies.io_efficiency_tuning: parameters, the ladder's construction, a real tiny study of every configuration,
and that each configuration really changed what it says (counters, tickers, URIs), not timing.

The study runs once for the module at smoke size with 0.3 s runs (about ten seconds).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rxlab.core import figures
from rxlab.studies.io_efficiency_tuning import study as T

pytestmark = pytest.mark.timeout(240)


@pytest.mark.parametrize(("kw", "message"), [
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"configs": ["seed", "nosuch"]}, "configs=['seed', 'nosuch']: expected distinct names from: seed,"),
    ({"configs": ["io_uring"]}, "configs=['io_uring']: must include 'seed'"),
    ({"configs": ["seed", "seed"]}, "expected distinct names"),
    ({"repeats": 0}, "repeats=0: expected None"),
    ({"duration": "long"}, "duration='long': expected None"),
    ({"nosuch": 1}, "unknown parameter 'nosuch'"),
])
def test_a_bad_parameter_fails_in_one_line(kw, message):
    with pytest.raises(ValueError) as e:
        T.Params.checked(**{"scale": "smoke", **kw})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_each_rung_is_the_one_before_plus_one_change():
    for before, after in zip(T.LADDER, T.LADDER[1:], strict=False):
        changed = (before.backend != after.backend) + sum(
            before.spec.get(k) != after.spec.get(k) for k in {*before.spec, *after.spec}) + sum(
            before.step.get(k) != after.step.get(k) for k in {*before.step, *after.step})
        assert changed == 1, (before.name, after.name)
        # what was changed earlier stays changed
        assert before.spec.items() <= after.spec.items() and before.step.items() <= after.step.items()
    assert T.LADDER[0].name == "seed" and T.LADDER[0].backend == "posix"
    assert not any(c.busy_polls for c in T.LADDER)


def test_plan_loads_once_and_rotates_the_configurations():
    p = T.Params.checked(scale="smoke", repeats=3, configs=["seed", "io_uring", "default file system"])
    pl = T.plan(p)
    assert pl.iloc[0]["kind"] == "load" and (pl["kind"] == "load").sum() == 1
    firsts = [g[g["kind"] == "read"]["config"].iloc[0] for _, g in pl[pl["rep"] >= 0].groupby("rep")]
    assert len(set(firsts)) == 3  # no configuration always runs first
    for _, g in pl[pl["rep"] >= 0].groupby("rep"):
        assert g.iloc[0]["kind"] == "fio" and len(g) == 4


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("tuning")
    p = T.Params.checked(scale="smoke", duration=0.3, db_dir=str(root / "work"))
    return T.run_study(p, root=root / "runs", progress=False)


def _row(result, config):
    f = result.frame
    return f[f["config"] == config].iloc[0]


def test_every_configuration_ran_against_its_repetitions_fio(result):
    f = result.frame
    assert set(f.loc[f["tool"] == T.DB_TOOL, "config"]) == set(T.CONFIGS)
    assert (f["tool"] == T.FIO_TOOL).sum() == 1
    r = T.rows(result)
    fio_iops = f.loc[f["tool"] == T.FIO_TOOL, "iops"].iloc[0]
    assert np.allclose(r["io.eff"], r["iops"] / fio_iops)
    # one level after the compaction: nearly every query reads one block from the device
    assert ((r["reads_per_query"] > 0.5) & (r["reads_per_query"] < 1.2)).all(), r["reads_per_query"]
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
    t = T.config_table(result)
    assert t.index[0] == "fio sync qd1" and list(t.index[1:]) == list(T.CONFIGS)
    assert (t["io.eff_min"] <= t["io.eff"] + 1e-12).iloc[1:].all()
    acc = T.accounting(result)
    assert list(acc.index) == [c.name for c in T.LADDER]
    lat = acc["lat_meas_us"].to_numpy()
    assert np.allclose(acc["saved_meas_us"].iloc[1:], lat[:-1] - lat[1:])
    assert np.allclose(acc["unexplained_us"].iloc[1:], (acc["saved_meas_us"] - acc["saved_pred_us"]).iloc[1:])
    cpu = T.rows(result).groupby("config")["cpuPer"].median()
    assert np.isclose(acc.loc["seed", "cpuPer"], cpu["seed"])
    # busy polling (SQPOLL, the spinning reader) is left out of the model and its held-out predictions
    busy = {c.name for c in T.CONFIGS.values() if c.busy_polls}
    assert busy == {"sqpoll", "spin"}
    assert not busy & set(T.model_rows(result)["config"])
    ho = T.held_out(result)
    assert not ({"seed"} | busy) & set(ho["config"]) and len(ho) == len(T.CONFIGS) - 1 - len(busy)
    assert np.isfinite(ho["err_iops_pct"]).all()
    by = T.held_out_by_config(ho)
    assert set(by.index) == set(ho["config"]) and (by["n"] == ho.groupby("config").size()).all()
    med = ho.groupby("config")[["iops", "iops_pred"]].median()
    assert np.allclose(by["fitted_err_pct"], (med["iops_pred"] / med["iops"] - 1) * 100)


def test_findings_figures_and_the_store(result, tmp_path, monkeypatch):
    text = T.findings(result)
    assert "fio sync qd1" in text and "Best without busy polling" in text and "sqpoll (side)" in text
    monkeypatch.setenv("RXLAB_FIGURES", str(tmp_path))
    for name, fig in (("a", T.fig_ioeff(result)), ("b", T.fig_latency(result))):
        figures.save(fig, name, runs=result.runs)
        assert (tmp_path / f"{name}.png").stat().st_size > 0
    again = T.load_study(result.root)
    assert again.study == result.study
    pd.testing.assert_frame_equal(again.frame.reset_index(drop=True), result.frame.reset_index(drop=True),
                                  check_like=True)
