"""rxlab.studies.perf_model: the model against the runs (on the seed's tables and a synthetic study), and
one real tiny study end to end.

The analysis tests read the seed's published tables and the synthetic
IO-efficiency study of tests/studies/helpers_ioeff.py (known io.eff, CPU
and repetitions). The real study (posix, one client, block_align on, a
100 us delay study, 0.3 s steps) runs every part for real: the IO-efficiency
study and the delay study through that study's own Study.run, then the
placement and device-load measurements; a second run takes both
IO-efficiency studies from the store.
"""
from __future__ import annotations

import itertools
import math
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from helpers_ioeff import stored_study
from helpers_studies import refusal, saved_figures

from rxlab import studies
from rxlab.core import figures, model, store
from rxlab.core.study import manifest
from rxlab.studies.io_efficiency import STUDY as IOEFF
from rxlab.studies.io_efficiency import params as ioeff_params
from rxlab.studies.perf_model import STUDY, analysis
from rxlab.studies.perf_model import figures as pm_figures
from rxlab.studies.perf_model import findings as pm_findings
from rxlab.studies.perf_model.result import PerfModelResult

pytestmark = pytest.mark.timeout(600)
TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


@pytest.fixture
def study(tmp_path):
    return stored_study(tmp_path / "runs")


# --------------------------------------------------------------------------- parameters

def test_params_are_notebook_10s_and_the_delays():
    p = STUDY.params(scale="smoke")
    assert (p.backend, p.threads, p.block_align) == ("posix", [1, 2], [True, False])
    assert p.delay_us == [0, 100, 200]
    io = p.ioeff_params()
    assert (io.threads, io.block_align, io.delay_us, io.scale) == ([1, 2], [True, False], [0], "smoke")
    d = p.delay_params()
    assert (d.threads, d.block_align, d.delay_us) == ([1], [True], [0, 100, 200])
    assert STUDY.params(scale="smoke", delay_us=[0]).delay_params() is None
    assert p.settings() == io.settings()
    plan = STUDY.plan(p)
    assert plan["part"].tolist() == ["io_efficiency", "delayed", "placement", "device_load"]
    assert STUDY.plan(STUDY.params(scale="smoke", delay_us=0))["part"].tolist() == [
        "io_efficiency", "placement", "device_load"]


@pytest.mark.parametrize(("kw", "message"), [
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"delay_us": [-5]}, "delay_us=[-5]: expected a non-empty list"),
    ({"delay_us": [100], "backend": "default"}, "delays need an rxlab engine"),
    ({"threads": [0]}, "threads=[0]: expected a non-empty list of distinct integers 1..256"),
    ({"backend": "nosuch"}, "backend='nosuch': unknown engine 'nosuch'"),
    ({"value_size": 100}, "unknown parameter 'value_size': allowed are scale, backend, threads"),
])
def test_bad_parameters_fail_on_one_line_naming_them(kw, message):
    assert message in refusal(STUDY, **kw)


# --------------------------------------------------------------------------- the model against the runs

def test_model_rows(study):
    rows = analysis.model_rows(study)
    assert set(rows["test"]) == {"fio-sync", *ioeff_params.SEED_TESTS}
    db = rows[rows["tool"] == "rocksdb"]
    assert db.groupby("test")["bloom"].first().to_dict() == {"readrandom": True, "readrandom2": True,
                                                            "readrandom3": False}
    assert not rows.loc[rows["tool"] == "rxlab-fio", "bloom"].any()
    with pytest.raises(ValueError, match="no study"):
        analysis.model_rows(None)


def test_the_placed_and_unaligned_fio_runs_inform_the_fit_but_are_no_baseline(tmp_path):
    res = stored_study(tmp_path / "runs", away=True, unaligned=True)
    # the unaligned runs enter the model's rows only when asked
    assert ioeff_params.FIO_UNALIGNED_TOOL not in set(analysis.model_rows(res)["tool"])
    rows = analysis.model_rows(res, unaligned=True)
    placed = rows["tool"].isin([ioeff_params.FIO_AWAY_TOOL, ioeff_params.FIO_UNALIGNED_TOOL])
    assert placed.sum() == 9 and not rows.loc[placed, "baseline"].any()
    assert rows.loc[~placed, "baseline"].all()
    f1 = model.fit(rows)
    assert f1.baselines.loc[(1.0, 0.0), "iops"] == pytest.approx(10_000)
    assert f1.baselines.loc[(2.0, 0.0), "iops"] == pytest.approx(20_000)
    assert "size_penalty_us_per_kib" in f1.free
    text = pm_findings.model_findings(analysis.compare_models(rows))
    assert "Each KiB a read carries above the 8 KiB block (block_align off) costs" in text
    aligned = rows[rows["tool"] != ioeff_params.FIO_UNALIGNED_TOOL]
    aligned = aligned[aligned["block_align"].astype(object) != False]  # noqa: E712
    assert "Each KiB" not in pm_findings.model_findings(analysis.compare_models(aligned))


def test_compare_models_reproduces_the_seeds_arithmetic():
    comp = analysis.compare_models(model.published_frame())
    t = comp.table
    assert set(t["source"]) == {"published", "local"} and len(t) == 18
    one = t[(t["source"] == "published") & (t["threads"] == 1) & (t["block_align"] == True)]  # noqa: E712
    unrounded = model.seed_model_unrounded()["predicted"].to_numpy()
    assert one["seed_iops_pred"].to_numpy() == pytest.approx(unrounded)
    assert one["seed_err_pct"].to_numpy() == pytest.approx(
        (np.array([9095.870, 9156.084, 9246.930]) / np.array([8350, 8327, 8400]) - 1) * 100, abs=1e-3)
    s = comp.summary.set_index(["source", "model"])
    assert list(comp.summary.columns) == ["source", "model", "rows", "max_abs_err_pct", "median_abs_err_pct",
                                          "within_3pct"]
    assert s.loc[("published", "seed"), "median_abs_err_pct"] > 5.0
    assert s.loc[("published", "fitted"), "max_abs_err_pct"] < 5.0
    text = pm_findings.model_findings(comp, gap=model.latency_gap(model.published_frame()))
    assert "On the seed's tables (9 rows) the seed's model misses by a median" in text
    assert "waited for a CPU" not in text  # the seeds did not measure it


def test_findings_say_what_the_iostat_device_model_accounts_for():
    comp = analysis.compare_models(model.published_frame())
    ho = pd.DataFrame({"split": ["a", "b", "a"], "model": ["fitted, iostat device"] * 2 + ["fitted"],
                       "rows": [6, 6, 6], "max_abs_err_pct": [2.0, 4.0, 9.0],
                       "median_abs_err_pct": [1.0, 2.0, 5.0],
                       "configs": [2, 2, 2], "config_max_abs_err_pct": [1.5, 3.5, 8.0],
                       "config_median_abs_err_pct": [0.7, 2.2, 5.3], "note": ["", "", ""]})
    gap = pd.DataFrame({"threads": [1, 1, 2, 2, 1], "delay_us": [0, 0, 0, 0, 100],
                        "runqPer": [0.1, 0.3, 19.0, 21.0, 0.5], "unexplained_us": [4.0, 6.0, 3.0, 5.0, 0.0],
                        "io_lat_excess_us": [2.0, 4.0, 13.0, 15.0, 50.0]})
    text = pm_findings.model_findings(comp, ho, gap=gap)
    line = next(x for x in text.splitlines() if "device='iostat'" in x)
    assert "by a median 0.7 to 2.2% per split (worst configuration 3.5%)" in line
    assert "+3.0 us at 1 client, +14.0 us at 2 clients" in line      # the delayed row is left out
    # without fio's io.lat there is no excess to state
    no_fio_io_lat = gap.drop(columns="io_lat_excess_us")
    assert "slower under RocksDB" not in pm_findings.model_findings(comp, ho, gap=no_fio_io_lat)


def test_findings_say_what_the_wait_for_a_cpu_explains():
    gap = pd.DataFrame({"threads": [1, 1, 2, 2], "delay_us": [0, 0, 0, 0], "runqPer": [0.1, 0.3, 19.0, 21.0],
                        "unexplained_us": [4.0, 6.0, 3.0, 5.0]})
    (line,) = pm_findings._wait_for_cpu_lines(gap)
    assert "0.2 us per query at 1 client, 20.0 us per query at 2 clients" in line
    assert "leaves 5.0, 4.0 us per query unexplained at 1, 2 client(s)" in line


def test_held_out_and_sensitivity_on_the_published_rows():
    rows = model.published_frame()
    ho_rows, ho = analysis.held_out(rows)
    assert list(ho.columns) == ["split", "model", "rows", "max_abs_err_pct", "median_abs_err_pct", "configs",
                                "config_max_abs_err_pct", "config_median_abs_err_pct", "config_floor_pct",
                                "note"]
    # the seed's tables have one row per configuration: its median is the row, with no floor known
    ok = ho[ho["rows"] > 0]
    assert ok["config_floor_pct"].isna().all()
    assert (ok["configs"] == ok["rows"]).all()
    assert np.allclose(ok["config_median_abs_err_pct"], ok["median_abs_err_pct"])
    assert np.allclose(ok["config_max_abs_err_pct"], ok["max_abs_err_pct"])
    splits = set(ho["split"])
    assert {"readrandom held out", "readrandom2 held out", "readrandom3 held out", "block_align off from on",
            "threads > 1 from 1"} <= splits
    assert set(ho["model"]) == {"fitted", "seed", "fitted, iostat device"} and len(ho_rows)
    # the seed's fio tables publish no io.lat: the iostat-device model says so on each split
    io = ho[ho["model"] == "fitted, iostat device"]
    assert (io["rows"] == 0).all() and io["note"].str.contains("device='iostat' needs io.lat").all()
    assert set(ho_rows["device"]) == {"curve"}
    with pytest.raises(ValueError, match=r"held_out devices=\['fio'\]: choose from curve, iostat"):
        analysis.held_out(rows, devices=["fio"])
    fit = model.fit(rows)
    curves, points = analysis.sensitivity_data(fit, rows)
    assert set(curves["panel"]) == {"device", "cpu"} and set(curves["model"]) == {"seed", "fitted"}
    dev = curves[(curves["panel"] == "device") & (curves["model"] == "seed")]
    assert dev.groupby("cpu_per_query_us")["io.eff"].apply(lambda s: s.is_monotonic_increasing).all()
    cpu = curves[(curves["panel"] == "cpu") & (curves["model"] == "seed")]
    assert cpu.groupby("device_latency_us")["io.eff"].apply(lambda s: s.is_monotonic_decreasing).all()
    assert {"local", "published"} == set(points["source"])
    # the figures' tables from these rows draw (as their data functions stack them)
    for panel, draw in (("device", pm_figures.draw_sensitivity_device),
                        ("cpu", pm_figures.draw_sensitivity_cpu)):
        t = pd.concat([curves[curves["panel"] == panel].assign(layer="curve"),
                       points[points["panel"] == panel].assign(layer="point")], ignore_index=True)
        fig = draw(t)
        assert fig.axes and fig.axes[0].lines, panel
        figures.plt.close(fig)
    fig = pm_figures.draw_predicted_vs_measured(analysis.compare_models(rows).table)
    assert len(fig.axes[1].lines) == 3
    figures.plt.close(fig)
    assert not math.isnan(points["y"].iloc[0])


def test_config_errors_compare_medians_over_repetitions():
    pred = pd.DataFrame({"test": ["readrandom"] * 3 + ["readrandom3"] * 2, "block_align": True,
                         "threads": 1.0,
                         "delay_us": 0.0, "iops": [100.0, 110.0, 90.0, 50.0, 50.0],
                         "iops_pred": [105.0, 99.0, 120.0, 49.0, 49.0],
                         "seed_iops_pred": [110.0, 110.0, 110.0, 60.0, 60.0]})
    c = analysis.config_errors(pred).set_index("test")
    assert c.loc["readrandom", "n"] == 3 and c.loc["readrandom3", "n"] == 2
    assert c.loc["readrandom", "fitted_err_pct"] == pytest.approx(5.0)   # 105 / 100: medians, not row errors
    assert c.loc["readrandom", "seed_err_pct"] == pytest.approx(10.0)
    assert c.loc["readrandom3", "fitted_err_pct"] == pytest.approx(-2.0)


def test_repeatability_and_agreement_measure_the_noise_a_model_cannot_beat(study):
    """The repetitions of a configuration read at 1.02, 1.00 and 0.98 of the middle one: a 4%
    spread, a standard deviation of 2%, and a floor of E|median of 3| (0.535 sd for normal draws)."""
    assert analysis._median_abs_normal(1) == pytest.approx(math.sqrt(2 / math.pi), abs=0.005)
    c3 = analysis._median_abs_normal(3)
    assert 0.52 < c3 < 0.55
    rows = analysis.model_rows(study)
    rep = analysis.repeatability(rows)
    assert len(rep) == 12 and (rep["n"] == 3).all()         # 3 tests x 2 block_align x 2 thread counts
    assert rep["spread_pct"].to_numpy() == pytest.approx(4.0, abs=0.05)
    assert rep["sd_pct"].to_numpy() == pytest.approx(2.0, abs=0.03)
    assert rep["floor_pct"].to_numpy() == pytest.approx(2.0 * c3, abs=0.02)
    later = rows.assign(qps=np.where(rows["tool"] == "rocksdb", rows["qps"] * 1.05, rows["qps"]))
    agree = analysis.agreement(rows, later)
    assert len(agree) == 12 and agree["diff_pct"].to_numpy() == pytest.approx(5.0)
    _, ho = analysis.held_out(rows, devices=("curve",))
    fitted = ho[(ho["model"] == "fitted") & (ho["rows"] > 0)]
    assert len(fitted) and fitted["config_floor_pct"].to_numpy() == pytest.approx(2.0 * c3, abs=0.02)
    text = pm_findings.model_findings(analysis.compare_models(rows), ho, repeat=rep, agree=agree)
    assert f"the medians themselves are uncertain by about {2.0 * c3:.1f}% per split" in text
    assert "repetitions spanned 4.0% of its median qps" in text and "medians 5.0% apart" in text
    with pytest.raises(ValueError, match="share no configuration"):
        analysis.agreement(rows, rows.assign(test="other"))
    with pytest.raises(ValueError, match="repeatability: needs RocksDB rows"):
        analysis.repeatability(rows[rows["tool"] != "rocksdb"])
    # an earlier study of the same parameters: none before the only one stored
    assert IOEFF.load(study.root, before=study.study) is None
    assert IOEFF.load(study.root, before="29990101T000000ffff").study == study.study


def test_unaligned_cost_sets_fio_beside_rocksdb(tmp_path):
    """fio's unaligned run (8.5 KiB, lat 110 us against the baseline's 90) and RocksDB's
    block_align off (8.8 KiB reads; the synthetic rows carry one latency for both settings)."""
    res = stored_study(tmp_path / "runs", unaligned=True)
    c = analysis.unaligned_cost(res).set_index(["threads", "tool"])
    assert list(c.index) == [(1, "fio"), (1, "rocksdb"), (2, "fio"), (2, "rocksdb")]
    assert c.loc[(1, "fio"), "reqsz_excess_kib"] == pytest.approx(0.5)
    assert c.loc[(1, "fio"), "lat_us"] == pytest.approx(20.0)
    assert c.loc[(1, "rocksdb"), "reqsz_excess_kib"] == pytest.approx(0.8)
    assert c.loc[(1, "fio"), "io_lat_us"] == pytest.approx(0.0, abs=1e-9)  # same io.lat in the rows
    assert set(analysis.unaligned_cost(stored_study(tmp_path / "plain"))["tool"]) == {"rocksdb"}


def test_steal_effect_measures_how_the_runs_moved_with_the_hosts_steal(study):
    """Within each configuration qps falls 2% and cpuPer rises 1.3 us per us of steal per query;
    the configurations' own levels differ (they must not count as steal's doing)."""
    rng = np.random.default_rng(7)
    rows = []
    for (test, base), t in itertools.product((("readrandom", 12000.0), ("readrandom3", 15000.0)), (1, 2)):
        for steal in rng.uniform(0.0, 20.0, 6):
            rows.append({"tool": "rocksdb", "test": test, "block_align": True, "threads": t, "delay_us": 0,
                         "stealPer": steal, "qps": base * t * math.exp(-0.02 * steal),
                         "cpuPer": 40.0 + 10.0 * t + 1.3 * steal})
    rows.append({"tool": "rxlab-fio", "test": "fio-sync", "block_align": np.nan, "threads": 1, "delay_us": 0,
                 "stealPer": 90.0, "qps": 1.0, "cpuPer": 1.0})   # fio rows are not RocksDB's spread
    df = pd.DataFrame(rows)
    eff = analysis.steal_effect(df)
    assert eff["rows"] == 24
    assert eff["qps_pct_per_10us"] == pytest.approx((math.exp(-0.2) - 1) * 100)
    assert eff["cpu_us_per_us"] == pytest.approx(1.3)
    assert eff["r2"] == pytest.approx(1.0)
    noisy = df.assign(qps=df["qps"] * np.exp(0.05 * rng.standard_normal(len(df))))
    assert 0.2 < analysis.steal_effect(noisy)["r2"] < 0.95
    text = pm_findings.model_findings(analysis.compare_models(analysis.model_rows(study)), steal=eff)
    assert "each 10 us of it moved qps by -18.1% and cpuPer by +13.0 us" in text
    assert "accounts for 100% of the repetitions' spread" in text
    with pytest.raises(ValueError, match="steal_effect: needs RocksDB rows with stealPer"):
        analysis.steal_effect(df.drop(columns="stealPer"))
    flat = analysis.steal_effect(df.assign(stealPer=3.0))        # e.g. one repetition per configuration
    assert flat[["qps_pct_per_10us", "cpu_us_per_us", "r2"]].isna().all() and flat["steal_median_us"] == 3.0
    comp = analysis.compare_models(analysis.model_rows(study))
    assert "host's steal" not in pm_findings.model_findings(comp, steal=flat)


def test_reused_tells_the_stored_studies_by_their_start_second_not_their_random_digits():
    r = PerfModelResult(study="20261127T040625443b", frame=pd.DataFrame(), runs=[], root=Path("."))
    r.__dict__["ioeff"] = SimpleNamespace(study="20261127T0406251346")    # run by it, in its own second
    r.__dict__["delayed"] = SimpleNamespace(study="20261127T040624ffff")  # from the store, a second before
    assert r.reused == ["20261127T040624ffff"]
    r.__dict__["delayed"] = None
    assert r.reused == []


def test_held_out_change_sets_two_summaries_side_by_side():
    a = pd.DataFrame({"split": ["s1", "s2"], "model": "fitted", "config_median_abs_err_pct": [1.0, 2.0],
                      "config_max_abs_err_pct": [3.0, 4.0]})
    b = a.assign(config_median_abs_err_pct=[1.5, 1.0], config_max_abs_err_pct=[5.0, 4.0])
    c = analysis.held_out_change(a, b).set_index("split")
    assert c.loc["s1", "config_median_change_pp"] == pytest.approx(-0.5)
    assert c.loc["s2", "config_median_change_pp"] == pytest.approx(1.0)
    assert c.loc["s1", "config_max_change_pp"] == pytest.approx(-2.0)
    assert c.loc["s2", "config_max_abs_err_pct_without"] == 4.0
    with pytest.raises(ValueError, match="share no split and model"):
        analysis.held_out_change(a, b.assign(model="seed"))


# --------------------------------------------------------------------------- a real tiny study

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    """A real study, then a second one with the same parameters (which reuses both IO-efficiency
    studies from the store)."""
    root = tmp_path_factory.mktemp("modelruns")
    db_dir = tmp_path_factory.mktemp("modeldb")
    p = STUDY.params(scale="smoke", threads=[1], block_align=[True], delay_us=[0, 100], duration=0.3,
                     db_dir=str(db_dir))
    first = STUDY.run(p, root=root, progress=False)
    second = STUDY.run(p, root=root, progress=False)
    return p, first, second


@TWO_CPUS
def test_a_real_study_runs_every_part_and_reuses_the_stored_ones(real):
    p, first, second = real
    assert first.reused == [] and set(first.frame["part"]) == {"io_efficiency", "delayed", "placement",
                                                               "device_load"}
    assert all(store.is_complete(r) for r in first.runs)
    # both IO-efficiency studies are stored as such (manifest, loadable by notebook 10)
    io, delayed = first.ioeff, first.delayed
    assert io.delays == [0] and delayed.delays == [0, 100] and delayed.threads == [1]
    for r in (io, delayed):
        assert manifest(first.root, r.study)["study"] == "io_efficiency"
        assert IOEFF.load(first.root, study=r.study) is not None
    # the second study took them from the store and measured placement and device load again
    assert second.reused == [io.study, delayed.study]
    assert second.ioeff.study == io.study and len(second.ioeff.frame) == len(io.frame)
    own = set(second.frame.loc[second.frame["part"].isin(["placement", "device_load"]), "run_id"])
    assert own and not own & set(first.frame["run_id"])
    m = manifest(second.root, second.study)
    assert m["status"] == "complete" and m["study"] == "perf_model" and len(m["runs"]) == len(second.runs)
    assert not list(Path(p.db_dir).iterdir())   # the DBs and fio's files are gone, the results stay
    # the turns of the two parts run here are the study's record (what `rxlab report` plans with), the
    # notebook's budget split between them; the second study ran none
    t = manifest(first.root, first.study)["turns"]
    assert set(t["parts"]) == {"io_efficiency", "delayed"}
    told = ("turns", "seconds", "stopped")
    assert {k: first.turns[k] for k in told} == {k: t[k] for k in told}
    assert t["turns"] == sum(d["turns"] for d in t["parts"].values()) >= 2
    assert t["seconds"] == pytest.approx(sum(d["seconds"] for d in t["parts"].values()), abs=0.2)
    half = STUDY.Params.budget_at("smoke") / 2
    assert [d["budget_s"] for d in t["parts"].values()] == [pytest.approx(half)] * 2
    assert "turns" not in m and not second.turns
    # placement and device load read back from the store as `run` returned them
    pl = first.placement_runs
    assert set(pl["where"]) >= {"shared", "split"} and (pl["iops"] > 0).all() and pl["run"].notna().all()
    dl = first.device_load_runs
    assert len(dl) == 4 and set(dl["neighbour"]) == {"idle", "busy"} and (dl["io.lat"] > 0).all()


@TWO_CPUS
def test_the_study_is_found_again_through_its_manifest(real):
    _, first, second = real
    again = STUDY.load(first.root)
    assert again.study == second.study and set(again.run_ids) == set(second.run_ids)
    assert STUDY.load(first.root, before=second.study).study == first.study
    assert STUDY.load(first.root, scale="small") is None
    assert STUDY.load(first.root, study="20000101T000000abcd") is None
    assert again.ioeff.study == first.ioeff.study and again.reused == [first.ioeff.study, first.delayed.study]
    assert again.frame.shape == second.frame.shape
    assert studies.get("perf_model") is STUDY and studies.get("20") is STUDY


@TWO_CPUS
def test_the_tables_and_findings_of_a_real_study(real):
    _, first, second = real
    rows = STUDY.table("rows", first)
    assert set(rows.index.get_level_values("delay_us")) == {0, 100}
    comp = STUDY.table("comparison_summary", first)
    assert set(comp["source"]) == {"published", "local"}
    ho = STUDY.table("held_out", first)
    assert "delayed from undelayed" in set(ho["split"])
    assert STUDY.table("agreement", first).empty                          # nothing stored before it
    pl = STUDY.table("placement", first)
    assert pl["config"].tolist() == [c for c, _, w in pm_figures.placement.CONFIGS if w in set(pl["where"])]
    text = STUDY.findings(second)
    assert "On the seed's tables (9 rows) the seed's model misses by a median" in text
    assert "**Where the clients run**" in text and "**The disk under the vCPUs' load**" in text


@TWO_CPUS
def test_every_figure_is_drawn_from_its_table_alone(real, tmp_path):
    _, first, _ = real
    assert list(STUDY.figures) == ["model_predicted_vs_measured", "model_error", "model_client_placement",
                                   "model_device_load", "model_sensitivity_device", "model_sensitivity_cpu"]
    for s in saved_figures(STUDY, first, tmp_path):
        drawn = [len(ax.lines) + len(ax.patches) for ax in s.fig.axes]
        assert drawn == [len(ax.lines) + len(ax.patches) for ax in s.again.axes] and sum(drawn) > 0, s.name
    err = pd.read_csv(tmp_path / "model_error.csv")
    assert set(err["model"]) <= set(pm_figures.ERROR_COLORS) and "local\nfitted" in set(err["category"])
    sens = pd.read_csv(tmp_path / "model_sensitivity_device.csv")
    assert set(sens["layer"]) == {"curve", "point"} and set(sens["panel"]) == {"device"}
    delays = sens.loc[(sens["layer"] == "point") & (sens["source"] == "local"), "delay_us"]
    assert set(delays) == {0, 100}                       # the delay study's points are there


@TWO_CPUS
def test_an_interrupted_study_is_marked_and_never_loaded(real, monkeypatch):
    """Ctrl-C after the IO-efficiency part (taken from the store): the manifest says interrupted and
    `load` still returns the last complete study."""
    p, _, second = real
    real_one = type(STUDY).run_one

    def one_then_interrupt(self, ctx, row):
        if row.part != "io_efficiency":
            raise KeyboardInterrupt
        return real_one(self, ctx, row)

    monkeypatch.setattr(type(STUDY), "run_one", one_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        STUDY.run(p, root=second.root, progress=False)
    latest = max(m.stem for m in (second.root / ".studies").glob("*.json"))
    assert manifest(second.root, latest)["status"] == "interrupted"
    assert STUDY.load(second.root).study == second.study
