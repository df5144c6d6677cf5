"""rxlab.studies.io_efficiency: parameters, turns, the store round trip, the seed's tables, comparisons,
figures, real IO.

Most tests read a synthetic study (tests/studies/helpers_ioeff.py: raw step
counters chosen so that every seed column has a known value) through the
same path as a real one: catalog -> frame -> load -> tables. One real tiny
study (posix, one client, both block_align settings, 0.3 s steps) runs the
protocol end to end in turns: Study.run, the manifest, the scratch directory,
load, the comparisons.
"""
from __future__ import annotations

import shutil
from collections import namedtuple
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_ioeff import CPU_INC, EFF, FIO_CPU_US, FP, REP_SCALE, STUDY_ID, raw, stored_study, write_study
from helpers_studies import refusal, registered_outputs, saved_figures
from matplotlib import pyplot as plt

from rxlab.bench import driver
from rxlab.core import published, store
from rxlab.core.study import FULL_DISK_FRACTION, FULL_MAX_BYTES, manifest
from rxlab.core.turns_plan import turn_rows
from rxlab.studies.io_efficiency import STUDY, findings, matching, params, same_as, sequence, tables
from rxlab.studies.io_efficiency import figures as ioeff_figures

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


@pytest.fixture
def study(tmp_path):
    return stored_study(tmp_path / "runs")


# --------------------------------------------------------------------------- parameters

def test_params_defaults_and_normalisation():
    p = STUDY.params(scale="smoke")
    assert (p.backend, p.threads, p.block_align, p.delay_us, p.value_size) == ("posix", [1, 2], [True, False],
                                                                                [0], 400)
    p = STUDY.params(scale="smoke", threads=2, block_align=True, delay_us=100)
    assert (p.threads, p.block_align, p.delay_us) == ([2], [True], [100])
    s = STUDY.params(scale="smoke").settings()
    assert (s.num, s.duration, s.fio_runtime, s.repeats, s.cache_size) == (30_000, 1.0, 1.0, 1, 1 << 20)
    s = STUDY.params(scale="small").settings()
    assert (s.num, s.cache_size, s.repeats) == (2_000_000, 8 << 20, 3)
    assert 0.75 * 2**30 < s.db_bytes < 0.85 * 2**30 and 5 <= s.duration <= 10
    s = STUDY.params(scale="smoke", db_size="1g", duration=2.5, repeats=2).settings()
    assert (s.num, s.duration, s.fio_runtime, s.repeats) == (2**30 // 416, 2.5, 2.5, 2)
    assert isinstance(s.table(), pd.DataFrame)


def test_the_turns_budget_by_scale_and_repeats_as_exact_turns():
    """smoke keeps the common 5 s (one turn: CI time does not grow); small holds three turns of about
    400 s (the fewest the rule resolves with); repeats=N is exactly N turns."""
    assert STUDY.params(scale="smoke").rule().budget_s == 5.0
    r = STUDY.params(scale="small").rule()
    assert r.budget_s == params.SMALL_BUDGET_S and params.SMALL_BUDGET_S >= 3 * 400
    assert (r.target, r.min_turns, r.max_turns) == (2.0, 3, None)
    assert STUDY.params(scale="smoke", budget="90s", target=5).rule().budget_s == 90.0
    r = STUDY.params(scale="small", repeats=2).rule()
    assert (r.min_turns, r.max_turns, r.budget_s) == (2, 2, None)


@pytest.mark.parametrize(("kw", "message"), [
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"threads": [0]}, "threads=[0]: expected a non-empty list of distinct integers 1..256"),
    ({"threads": []}, "threads=[]"),
    ({"threads": [1, 1]}, "threads=[1, 1]"),
    ({"threads": [True]}, "threads=[True]"),
    ({"threads": "2"}, "threads='2'"),
    ({"backend": "nosuch"}, "backend='nosuch': unknown engine 'nosuch'"),
    ({"backend": "io_uring?foo=1"}, "backend='io_uring?foo=1': unknown option 'foo'"),
    ({"backend": "default?foo=1"}, "backend='default?foo=1': the default file system takes only"),
    ({"backend": "posix?delay_us=5"}, "backend='posix?delay_us=5': give the delay through the delay_us"),
    ({"backend": ""}, "backend=''"),
    ({"block_align": [1]}, "block_align=[1]: expected True, False"),
    ({"block_align": []}, "block_align=[]"),
    ({"repeats": 0}, "repeats=0"),
    ({"value_size": 0}, "value_size=0"),
    ({"duration": 0}, "duration=0"),
    ({"duration": "5"}, "duration='5'"),
    ({"delay_us": [-1]}, "delay_us=[-1]"),
    ({"delay_us": [100], "backend": "default"}, "delays need an rxlab engine"),
    ({"db_size": "1k"}, "db_size='1k'"),
    ({"db_size": "lots"}, "db_size='lots'"),
    ({"db_dir": "/proc/rxlab-x"},
     "db_dir='/proc/rxlab-x': /proc (the nearest existing part of /proc/rxlab-x) is not writable"),
    ({"target": 0}, "target=0: expected a half-width in percent"),
    ({"budget": "soon"}, "budget='soon'"),
    ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are scale, target, budget, min_turns, max_turns, "
                    "backend, threads"),
])
def test_bad_parameters_fail_on_one_line_naming_them(kw, message):
    assert message in refusal(STUDY, **kw)


def test_full_scale_is_sized_from_the_free_disk(monkeypatch, tmp_path):
    usage = namedtuple("usage", "total used free")

    def free(gib):
        monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(0, 0, int(gib * 2**30)))

    free(30)
    s = STUDY.params(scale="full", db_dir=str(tmp_path)).settings()
    assert s.db_bytes == pytest.approx(30 * 2**30 * FULL_DISK_FRACTION, rel=1e-3)
    assert s.db_bytes >= 50 * s.cache_size and s.fio_size == s.db_bytes
    free(1000)
    s = STUDY.params(scale="full", db_dir=str(tmp_path)).settings()
    assert s.db_bytes == pytest.approx(FULL_MAX_BYTES, rel=1e-3)
    free(10)
    with pytest.raises(ValueError, match=r"^scale='full': needs 16 GiB free"):
        STUDY.params(scale="full", db_dir=str(tmp_path))
    free(1)
    with pytest.raises(ValueError, match=r"^scale='small': needs about"):
        STUDY.params(scale="small")


def test_with_delays():
    p = STUDY.params(scale="smoke", threads=[2, 1], block_align=[False, True])
    assert p.with_delays([0]) is None
    d = p.with_delays([0, 100, 200])
    assert (d.threads, d.block_align, d.delay_us, d.scale) == ([1], [False], [0, 100, 200], "smoke")
    with pytest.raises(ValueError, match=r"^delay_us=\[-5\]"):
        p.with_delays([-5])
    with pytest.raises(ValueError, match="delays need an rxlab engine"):
        STUDY.params(scale="smoke", backend="default").with_delays([0, 100])


def _turns(p, n=4) -> pd.DataFrame:
    """The rows of the first n turns, as the protocol orders them (every setting active)."""
    units = STUDY.plan(p)
    return pd.concat([turn_rows(units, STUDY.compare, t) for t in range(n)], ignore_index=True)


def test_each_turn_runs_fio_and_each_setting_once_and_the_base_twice():
    p = STUDY.params(scale="smoke", block_align=[False, True])
    units = STUDY.plan(p)
    assert len(units) == 2 * 2
    # the main setting (on) first whatever the order given: the base, and the only one fio goes before
    assert units["setting"].tolist() == ["block_align on", "block_align off"] * 2
    assert units["fio_first"].tolist() == [True, False] * 2
    plan = _turns(p)
    assert len(plan) == 4 * 2 * 3
    for (rep, t), g in plan.groupby(["rep", "threads"]):
        assert sorted(zip(g["setting"], g["copy"], strict=True)) == [
            ("block_align off", 0), ("block_align on", 0), ("block_align on", 1)], (rep, t)
        fio = g[g["fio_first"].astype(bool) & (g["copy"] == 0)]     # where run_one runs fio's baseline
        assert fio["setting"].tolist() == ["block_align on"], (rep, t)
    # the groups (client counts) and the settings' order move from turn to turn
    first = plan.drop_duplicates("rep")["threads"].tolist()
    assert first == [1, 2, 1, 2]
    one = plan[plan["threads"] == 1]
    orders = [list(zip(g["setting"], g["copy"], strict=True)) for _, g in one.groupby("rep")]
    assert orders[1] == orders[0][::-1] and orders[2] != orders[0]
    assert STUDY.describe(next(plan.itertuples())).endswith("after fio")
    # the delay study (one client, one setting): the base alone, twice a turn, per delay
    delayed = _turns(p.with_delays([0, 100]), 1)
    assert delayed[["delay_us", "copy"]].values.tolist() == [[0, 0], [0, 1], [100, 0], [100, 1]]
    assert set(delayed["setting"]) == {"block_align off"}


def test_sequence_is_the_seeds_with_single_threaded_loads():
    s = STUDY.params(scale="smoke").settings()
    seq = sequence(s)
    names = [x if isinstance(x, str) else x["name"] for x in seq]
    assert names == driver.SEQUENCES["io_efficiency"]
    steps = driver.expand(seq)
    spec = driver.RunSpec(db="/tmp/x", threads=2, duration=1.0, num=100)
    threads = {(st.get("label"), driver.step_spec(spec, st)["threads"]) for st in steps if "reopen" not in st}
    for name, t in threads:
        assert t == (2 if name in ("revrange", "readrandom", "readrandom2", "readrandom3") else 1), name
    rev = next(st for st in steps if st.get("label") == "revrange")
    assert driver.step_spec(spec, rev)["duration"] == s.revrange_duration


def test_delay_in_the_backend_uri():
    assert params.with_delay("posix", 0) == "posix"
    assert params.with_delay("posix", 100) == "posix?delay_us=100"
    assert params.with_delay("io_uring?sqpoll=1", 50) == "io_uring?sqpoll=1&delay_us=50"
    assert params.strip_delay("io_uring?sqpoll=1&delay_us=50") == "io_uring?sqpoll=1"
    assert params.strip_delay("posix?delay_us=100") == "posix"


# --------------------------------------------------------------------------- the store round trip

def test_study_frame_from_the_store(study):
    f = study.frame
    assert study.study == STUDY_ID and study.threads == [1, 2] and study.block_align == [True, False]
    assert study.delays == [0] and study.repeats == 3 and study.backend == "posix"
    assert len(study.runs) == 3 * 2 * 3 and all(p.is_dir() for p in study.runs)
    fio = f[f["tool"] == "rxlab-fio"]
    assert len(fio) == 3 * 2 and set(fio["job"]) == {"total"}     # per-job rows left in the store
    db = f[f["tool"] == "rocksdb"]
    assert set(db["test"]) == {"fillseq", *params.SEED_TESTS}
    assert set(db["block_align"]) == {True, False} and fio["block_align"].isna().all()
    fill = db[db["test"] == "fillseq"]
    assert (fill["step_threads"] == 1).all() and set(fill["threads"]) == {1, 2}
    for c in ("study", "rep", "tool", "backend", "threads", "block_align", "delay_us", "test", "run_id",
              "qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat"):
        assert c in f.columns, c
    # the turns' columns: no A/A copy in a study stored before turns; the comparisons' configuration and key
    assert (f["copy"] == 0).all()
    assert set(db["setting"]) == {"block_align on", "block_align off"} and fio["setting"].isna().all()
    seed = f[f["seed_test"].notna()]
    assert (seed["tool"] == "rocksdb").all() and (seed["seed_test"] == seed["test"]).all()
    assert set(seed["test"]) == set(params.SEED_TESTS) and fill["seed_test"].isna().all()


def test_load_filters_and_skips_incomplete(tmp_path):
    root = tmp_path / "runs"
    assert STUDY.load(root) is None
    write_study(root, threads=(1,), block_align=(True,), reps=1, delays=(0, 100))
    assert STUDY.load(root, where=matching(delayed=True)).delays == [0, 100]
    assert STUDY.load(root, where=matching(delayed=False)) is None
    assert STUDY.load(root, where=matching(backend="io_uring")) is None
    assert STUDY.load(root, scale="small") is None
    assert STUDY.load(root, scale="smoke", where=matching(backend="posix")).study == STUDY_ID
    like = STUDY.params(scale="smoke", threads=[1], block_align=[True], delay_us=[100, 0])
    found = STUDY.load(root, where=matching(like))
    assert found.study == STUDY_ID
    assert STUDY.load(root, where=same_as(found)).study == STUDY_ID
    for other in ({"threads": [1, 2]}, {"block_align": [True, False]}, {"delay_us": [0]}, {"scale": "small"},
                  {"backend": "libaio"}):
        kw = {"scale": "smoke", "threads": [1], "block_align": [True], "delay_us": [0, 100], **other}
        assert STUDY.load(root, where=matching(STUDY.params(**kw))) is None, other
    # a RocksDB run without its fio baseline: not a complete study
    spec = {"name": "ioeff-20250102T000000abcd-r0-t1-d0-ba1", "backend": "posix"}
    with store.RunWriter(root, spec, FP) as w:
        for test in params.SEED_TESTS:
            w.add_step(raw(test, 100, 100, 10.0, 10.0))
    assert STUDY.load(root, study="20250102T000000abcd") is None
    assert STUDY.load(root).study == STUDY_ID
    assert STUDY.load(root, before=STUDY_ID) is None
    assert STUDY.load(root, before="29990101T000000ffff").study == STUDY_ID


def test_other_studies_columns_in_the_store_do_not_clash(tmp_path):
    """Another study's step rows in the same store carry columns named rep, study, delay_us: the names win."""
    write_study(tmp_path / "runs")
    cat = store.catalog(tmp_path / "runs").assign(rep=99, study="other", delay_us=-1)
    f = STUDY.frame(cat)
    assert f.columns.is_unique
    assert set(f["rep"]) == {0, 1, 2} and set(f["study"]) == {STUDY_ID} and set(f["delay_us"]) == {0}


def test_the_placed_and_unaligned_fio_runs_are_no_baseline(tmp_path):
    res = stored_study(tmp_path / "runs", away=True, unaligned=True)
    f = res.frame
    away = f[f["tool"] == params.FIO_AWAY_TOOL]
    assert len(away) == 3 and (away["threads"] == 1).all() and away["awayShare"].tolist() == [1.0] * 3
    # the seed's fio table and io.eff keep the baseline's 10,000 reads/s per job
    t = tables.seed_tables(res)
    fio = t["fio"].set_index(["source", "numjobs"])
    assert fio.loc[("local", 1), "iops"] == pytest.approx(10_000) and fio.loc[("local", 1), "n"] == 3
    e = t["io.eff 1 user"]
    assert e.loc[e["source"] == "local", "io.eff"].tolist() == pytest.approx(list(EFF.values()), abs=2e-4)
    unal = f[f["tool"] == params.FIO_UNALIGNED_TOOL]
    assert len(unal) == 6 and unal["reqsz"].tolist() == pytest.approx([8.5] * 6)


# --------------------------------------------------------------------------- the seed's tables

def test_seed_tables_shapes_and_columns(study):
    t = tables.seed_tables(study)
    assert list(t) == ["fio", "db_bench 1 user", "io.eff 1 user", "db_bench 2 users", "io.eff 2 users",
                       "block_align disabled", "block_align enabled", "block_align effect"]
    assert list(t["fio"].columns) == ["iops", "usPer", "syPer", "cpuPer", "lat.us", "numjobs", "source", "n",
                                      "backend"]
    db_cols = ["qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "test", "users",
               "source", "n", "backend"]
    for k in ("db_bench 1 user", "db_bench 2 users", "block_align disabled", "block_align enabled"):
        assert list(t[k].columns) == db_cols, k
        assert t[k]["source"].tolist() == ["local"] * 3 + ["published"] * 3, k
        assert t[k]["test"].tolist() == [*params.SEED_TESTS] * 2, k
    for k in ("io.eff 1 user", "io.eff 2 users"):
        assert list(t[k].columns) == ["io.eff", "us.inc", "cpu.inc", "test", "users", "source", "n",
                                      "backend"]
    assert list(t["block_align effect"].columns) == ["test", "qps_on", "qps_off", "qps_change_pct",
                                                     "reqsz_on", "reqsz_off", "users", "source"]
    assert t["fio"]["source"].tolist() == ["local", "local", "published", "published"]


def test_the_studys_tables_stack_the_seeds_by_title(study):
    assert list(STUDY.tables) == ["fio", "db_bench", "io_eff", "block_align", "block_align_effect",
                                  "background_io", "comparisons"]
    db = STUDY.table("db_bench", study)
    assert db["table"].unique().tolist() == ["db_bench 1 user", "db_bench 2 users"] and len(db) == 12
    ba = STUDY.table("block_align", study)
    assert ba["table"].unique().tolist() == ["block_align disabled", "block_align enabled"]
    assert "qps_on" not in ba.columns
    assert STUDY.table("io_eff", study)["table"].str.startswith("io.eff ").all()
    assert len(STUDY.table("block_align_effect", study)) == 6


def test_seed_tables_values_are_medians_beside_the_published(study):
    t = tables.seed_tables(study)
    fio = t["fio"].set_index(["source", "numjobs"])
    assert fio.loc[("local", 1), "iops"] == pytest.approx(10_000)
    assert fio.loc[("local", 2), "cpuPer"] == pytest.approx(FIO_CPU_US)
    assert fio.loc[("local", 1), "lat.us"] == pytest.approx(90.0)
    assert fio.loc[("local", 1), "n"] == 3
    pub_fio = published.load("ioeff_fio").set_index("numjobs")
    assert fio.loc[("published", 6), "iops"] == pub_fio.loc[6, "iops"]

    for users in ("1 user", "2 users"):
        e = t[f"io.eff {users}"]
        loc = e[e["source"] == "local"].set_index("test")
        for test, eff in EFF.items():       # the median repetition, against its own fio run
            assert loc.loc[test, "io.eff"] == pytest.approx(eff, abs=2e-4)
            assert loc.loc[test, "cpu.inc"] == pytest.approx(CPU_INC[test], abs=1e-6)
            us_inc = 0.6 * (FIO_CPU_US + CPU_INC[test]) - 2.0
            assert loc.loc[test, "us.inc"] == pytest.approx(us_inc, abs=1e-6)
    pub = t["io.eff 2 users"]
    pub = pub[pub["source"] == "published"]
    assert (pub["users"] == 6).all()                    # beside 2 users: the seed's 6-user table
    assert pub["io.eff"].tolist() == published.load("ioeff_efficiency").query("users == 6")["io.eff"].tolist()

    db = t["db_bench 1 user"]
    loc = db[db["source"] == "local"].set_index("test")
    assert loc.loc["readrandom", "qps"] == pytest.approx(8000)
    assert loc.loc["readrandom", "reqsz"] == pytest.approx(8.0)
    assert loc.loc["readrandom", "io.lat"] == pytest.approx(60.0)

    eff = t["block_align effect"]
    loc, pub = eff[eff["source"] == "local"], eff[eff["source"] == "published"]
    assert loc["qps_change_pct"].to_numpy() == pytest.approx((1 / 0.93 - 1) * 100, abs=0.05)
    assert loc["reqsz_off"].to_numpy() == pytest.approx(8.8)
    assert pub.set_index("test").loc["readrandom", "qps_change_pct"] == pytest.approx((8282 / 7629 - 1) * 100)


def test_one_block_align_setting_has_no_block_align_tables(tmp_path):
    res = stored_study(tmp_path, threads=(1,), block_align=(False,), reps=1)
    t = tables.seed_tables(res)
    assert list(t) == ["fio", "db_bench 1 user", "io.eff 1 user"]
    assert t["db_bench 1 user"].query("source == 'local'")["reqsz"].to_numpy() == pytest.approx([8.8] * 3)
    assert STUDY.table("block_align", res).empty and STUDY.table("block_align_effect", res).empty
    with pytest.raises(ValueError, match="one block_align setting"):
        STUDY.figure("ioeff_block_align", res, save=False)
    c = STUDY.table("comparisons", res)       # io.eff alone: nothing to compare block_align with
    assert set(c["metric"]) == {"iops"} and set(c["config"]) == {"block_align off"}
    assert (c["turns"] == 1).all()
    done = STUDY.save_outputs(res, tmp_path / "out")
    assert done["figures"] == ["ioeff_qps", "ioeff_ioeff"] and len(done["failed"]) == 2


def test_round_like_seed():
    df = pd.DataFrame({"qps": [8282.4], "usPer": [11.64321], "io.eff": [0.84449], "reqsz": [8.54],
                       "test": ["x"]})
    r = tables.round_like_seed(df)
    assert r.iloc[0].tolist() == [8282, 11.643, 0.844, 8.5, "x"]


def _write_aa_copies(root, factor: float, reps=3, threads=(1, 2)) -> None:
    """The A/A copies a study in turns stores beside write_study's runs: block_align on's second sequence
    of each turn (r<turn>a), its reads `factor` times the first's."""
    for rep in range(reps):
        for t in threads:
            spec = {"name": f"ioeff-{STUDY_ID}-r{rep}a-t{t}-d0-ba1", "backend": "posix", "threads": t,
                    "block_align": True, "scale": "smoke", "steps": ["io_efficiency"]}
            with store.RunWriter(root, spec, FP) as w:
                w.add_step({**raw("fillseq", 30_000, 0, 3.0, 2.0), "threads": 1, "backend": "posix"})
                for test, eff in EFF.items():
                    reads = round(10_000 * t * eff * REP_SCALE[rep] * factor)
                    cpu = FIO_CPU_US + CPU_INC[test]
                    w.add_step({**raw(test, reads, reads, cpu * 0.6, cpu * 0.4), "threads": t,
                                "backend": "posix", "fs.reads": reads})


def test_every_comparison_has_its_interval_its_a_a_row_and_says_why_it_is_unresolved(tmp_path):
    """block_align off over on per turn, and io.eff as a ratio to the same turn's fio run, each with its
    t-interval over the turns and the base's A/A row (its second run of a turn over its first)."""
    root = tmp_path / "runs"
    write_study(root)
    _write_aa_copies(root, 1.01)
    res = STUDY.load(root)
    assert set(res.frame["copy"]) == {0, 1}
    c = STUDY.table("comparisons", res)
    assert list(c.columns) == ["delay_us", "threads", "test", "metric", "base", "config", "comparison",
                               "ratio", "lo", "hi", "half_width", "resolved", "turns", "status"]
    assert (c["turns"] == 3).all() and set(c["test"]) == set(params.SEED_TESTS)
    ba, io = c[c["metric"] == "qps"], c[c["metric"] == "iops"]
    # block_align: 0.93 of block_align on in every turn, on being the geometric mean of its two runs
    off = ba[ba["config"] == "block_align off"]
    assert len(off) == 6 and set(off["base"]) == {"block_align on"}
    assert off["ratio"].to_numpy() == pytest.approx(0.93 / np.sqrt(1.01), rel=1e-4)
    assert off["resolved"].all() and (off["status"] == "resolved").all()
    aa = c[c["config"] == "A/A"]
    assert len(aa) == 12 and aa["ratio"].to_numpy() == pytest.approx(1.01, rel=1e-4)
    assert set(aa["comparison"]) == {"block_align on A/A"}
    # io.eff: each turn's RocksDB reads over that turn's fio run; the turns differ by +-2% (REP_SCALE)
    eff = io[io["config"] != "A/A"]
    assert set(eff["base"]) == {"fio"} and set(eff["config"]) == {"block_align on", "block_align off"}
    on = eff[eff["config"] == "block_align on"].set_index(["threads", "test"])["ratio"]
    drift = np.prod(REP_SCALE) ** (1 / 3)
    for (t, test), v in on.items():
        assert v == pytest.approx(EFF[test] * drift * np.sqrt(1.01), rel=1e-3), (t, test)
    log = np.log(REP_SCALE)
    hw = 100 * np.expm1(4.302653 * log.std(ddof=1) / np.sqrt(3))
    assert eff["half_width"].to_numpy() == pytest.approx(hw, rel=0.02)
    assert (eff["lo"] < eff["ratio"]).all() and (eff["ratio"] < eff["hi"]).all() and not eff["resolved"].any()
    assert set(eff["status"]) == {f"unresolved: +-{hw:.1f}% > +-2%"}
    text = STUDY.findings(res)
    assert "block_align's effect on QPS (ratio to block_align on): 6 of 6 resolved" in text
    assert "io.eff (device read IOPS over fio's of the same turn): 0 of 12 resolved" in text
    assert "unresolved, not to be read as differences: 1 user readrandom block_align on / fio" in text


def test_findings_and_the_background_check(study, tmp_path):
    t = tables.seed_tables(study)
    bg = tables.background_io(study)
    assert set(bg["tool"]) == {"rxlab-fio", "rocksdb"} and bg["excess_pct"].abs().max() < 1e-9
    text = findings.table_findings(t, bg)
    assert text.startswith("- The device was quiet")
    assert "io.eff at 1 user: 0.700 to 0.900 here (medians) against 0.842 to 0.849 in the seed" in text
    assert STUDY.findings(study).startswith(text + "\n- In turns, ")
    busy = stored_study(tmp_path / "busy", threads=(1,), block_align=(True,), reps=1, excess=0.5)
    bg = tables.background_io(busy)
    assert bg.loc[bg["tool"] == "rxlab-fio", "excess_pct"].iloc[0] == pytest.approx(50.0)
    text = findings.table_findings(tables.seed_tables(busy), bg)
    assert text.startswith("- **Caution**: during these runs the device served up to 50% more reads")


# --------------------------------------------------------------------------- figures

def test_the_four_figures_are_drawn_from_their_tables_alone(study, tmp_path):
    assert list(STUDY.figures) == ["ioeff_qps", "ioeff_ioeff", "ioeff_block_align", "ioeff_reqsz"]
    ratios = {"ioeff_ioeff", "ioeff_block_align"}
    for s in saved_figures(STUDY, study, tmp_path):
        assert s.side["study_id"] == STUDY_ID and len(s.side["runs"]) == 18
        assert f"{params.SEED_FILE}: ioeff_efficiency" in s.side["published_sources"]
        # the saved table alone redraws the figure: the same bars or markers, the same legend
        if s.name in ratios:
            assert len(s.again.axes) == len(s.fig.axes) == 2, s.name      # a panel per client count
            assert [len(a.lines) for a in s.again.axes] == [len(a.lines) for a in s.fig.axes], s.name
            legends = [[t.get_text() for t in f.legends[0].get_texts()] for f in (s.fig, s.again)]
        else:
            assert len(s.again.axes[0].patches) == len(s.fig.axes[0].patches) > 0, s.name
            legends = [[t.get_text() for t in f.axes[0].get_legend().get_texts()] for f in (s.fig, s.again)]
        assert legends[0] == legends[1], s.name
    # the comparisons drawn: their rows with the panel and the seed's ratio beside
    io = pd.read_csv(tmp_path / "ioeff_ioeff.csv")
    assert {"config", "ratio", "lo", "hi", "half_width", "resolved", "turns", "panel", "seed"} \
        <= set(io.columns)
    assert set(io["panel"]) == {"1 user", "2 users"} and not io["resolved"].any()
    pub = published.load("ioeff_efficiency").set_index(["users", "test"])["io.eff"]
    two = io[io["panel"] == "2 users"].set_index("test")["seed"]
    assert two["readrandom2"].tolist() == [pub[(6, "readrandom2")]] * 2
    ba = pd.read_csv(tmp_path / "ioeff_block_align.csv")
    assert set(ba["config"]) == {"block_align off"} and ba["resolved"].all()
    db = published.load("ioeff_db_bench").set_index(["table", "test"])["qps"]
    seed = ba.set_index(["panel", "test"])["seed"]
    assert seed[("1 user", "readrandom")] == pytest.approx(db[("block_align disabled", "readrandom")]
                                                           / db[("block_align enabled", "readrandom")])
    # unresolved drawn hollow, and said in the legend; the seed's diamonds beside
    fig = ioeff_figures.draw_ioeff(io)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "unresolved (hollow, dashed)" in legend and ioeff_figures.SEED_LABEL in legend
    dots = [ln for ln in fig.axes[0].lines if ln.get_marker() == "o"]
    assert len(dots) == 6 and all(ln.get_markerfacecolor() == "white" for ln in dots)
    plt.close(fig)
    # qps: 2 local + 2 published series x 3 tests, one median per bar and a dot per repetition
    t = pd.read_csv(tmp_path / "ioeff_qps.csv")
    assert t["series"].unique().tolist() == ["posix, 1 user", "posix, 2 users", "seed, 1 user",
                                             "seed, 6 users"]
    assert (t["kind"] == "median").sum() == 6 and (t["kind"] == "rep").sum() == 18
    assert (t["kind"] == "published").sum() == 6
    med = t[(t["kind"] == "median") & (t["series"] == "posix, 1 user")].set_index("test")["value"]
    assert med["readrandom"] == pytest.approx(8000)
    rq = pd.read_csv(tmp_path / "ioeff_reqsz.csv")
    off = rq[(rq["source"] == "local") & (rq["kind"] == "median") & ~rq["block_align"]]
    assert off["value"].to_numpy() == pytest.approx([8.8] * 3)
    assert ioeff_figures.draw_reqsz(rq).axes[0].patches[3].get_hatch() == ioeff_figures.OFF_HATCH


def test_the_study_is_in_the_registry_and_its_outputs_are_written(study, tmp_path):
    out = registered_outputs(STUDY, study, tmp_path)
    assert {"io_efficiency_fio.tex", "io_efficiency_db_bench.md", "io_efficiency_io_eff.csv",
            "io_efficiency_comparisons.csv"} <= out.tables
    assert "io.eff at 2 users" in out.findings


# --------------------------------------------------------------------------- a real tiny study

@pytest.fixture(scope="module")
def real(tmp_path_factory):
    root = tmp_path_factory.mktemp("ioeffruns")
    db_dir = tmp_path_factory.mktemp("ioeffdb")
    # budget 1 s: one turn whatever the machine's speed (smoke's 5 s may hold two on a fast one)
    p = STUDY.params(scale="smoke", threads=[1], block_align=[True, False], duration=0.3, budget="1s",
                     db_dir=str(db_dir))
    return p, STUDY.run(p, root=root, progress=False)


def test_a_real_study_runs_stores_and_loads_again(real):
    p, res = real
    assert STUDY.plan(p)["setting"].tolist() == ["block_align on", "block_align off"]
    assert all(store.is_complete(r) for r in res.runs)
    # before the turns: fio away (skipped where the interrupt's CPU is not known) and unaligned; then the
    # the one turn the 1 s budget holds: fio, and block_align on twice (A/A), off once
    assert len(res.runs) in (5, 6)
    runs = res.frame.drop_duplicates("run_id")
    turn = runs[runs["tool"].isin(["rxlab-fio", "rocksdb"])]
    assert sorted(zip(turn["tool"], turn["setting"].fillna("-"), turn["copy"], strict=True)) == [
        ("rocksdb", "block_align off", 0), ("rocksdb", "block_align on", 0), ("rocksdb", "block_align on", 1),
        ("rxlab-fio", "-", 0)]
    assert (turn["rep"] == 0).all() and runs["tool"].tolist()[0] != "rocksdb"    # the placed runs first
    m = manifest(res.root, res.study)
    assert m["status"] == "complete" and m["study"] == "io_efficiency" and m["params"]["threads"] == [1]
    assert m["turns"]["turns"] == 1 and m["turns"]["stopped"] == "budget" == res.turns["stopped"]
    assert not list(Path(p.db_dir).iterdir())     # the DB and fio's file are gone, the results stay
    f = res.frame
    assert set(f.loc[f["tool"] == "rocksdb", "block_align"]) == {True, False}
    assert f.groupby("copy")["setting"].unique().map(set).to_dict() == {
        0: {"block_align on", "block_align off", None}, 1: {"block_align on"}}
    seed = f[f["test"].isin(params.SEED_TESTS)]
    assert (seed["qps"] > 0).all() and (seed["iops"] > 0).all() and (seed["cpuPer"] > 0).all()
    unal = f[f["tool"] == params.FIO_UNALIGNED_TOOL]
    assert len(unal) == 1 and unal["bs"].iloc[0] == params.UNALIGNED_BS
    again = STUDY.load(res.root, where=matching(p))
    assert again is not None and again.study == res.study and len(again.frame) == len(f)
    t = tables.seed_tables(again)
    assert list(t) == ["fio", "db_bench 1 user", "io.eff 1 user", "block_align disabled",
                       "block_align enabled", "block_align effect"]
    e = t["io.eff 1 user"]
    assert (e.loc[e["source"] == "local", "io.eff"] > 0).all()


def test_a_real_studys_comparisons_say_why_they_are_unresolved(real, tmp_path):
    """At smoke the budget holds one turn: every ratio is there with its A/A row, none resolved, and the
    table, the figures and the findings say why."""
    _, res = real
    c = STUDY.table("comparisons", res)
    assert set(c["config"]) == {"block_align off", "block_align on", "A/A"}
    assert len(c) == 3 * (2 + 3)          # per test: off / on and A/A on QPS; on, off / fio and A/A on IOPS
    assert (c["ratio"] > 0).all() and not c["resolved"].any() and (c["turns"] == 1).all()
    assert (c["status"] == "unresolved: too few turns (1 < 3), budget").all()
    again = STUDY.load(res.root, study=res.study)      # what the turns decided, from the manifest
    pd.testing.assert_frame_equal(STUDY.table("comparisons", again), c)
    plt.close(STUDY.figure("ioeff_block_align", res, directory=tmp_path))
    fig = pd.read_csv(tmp_path / "ioeff_block_align.csv")
    assert set(fig["config"]) == {"block_align off", "A/A"} and "half_width" in fig.columns
    assert "unresolved, not to be read as differences" in STUDY.findings(res)
