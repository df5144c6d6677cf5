"""rxlab.studies.io_efficiency without benchmarks: parameters, plan, the store round trip, the seed's tables, figures.

A synthetic study is written to a tmp store with store.RunWriter, named as
run_study names its runs, with raw step counters chosen so that every seed
column has a known value (fio: 10,000 reads/s per job; RocksDB: io.eff 0.8,
0.7, 0.9 for readrandom, 2, 3 in the middle repetition). It then goes through
the same path as a real one: catalog -> load_study -> seed_tables. The real
IO path (run_study) is exercised by tests/test_notebooks.py at smoke scale.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from collections import namedtuple

import numpy as np
import pandas as pd
import pytest

from rxlab.bench import driver
from rxlab.core import figures, model, published, store
from rxlab.studies.io_efficiency import study as io_efficiency
from rxlab.studies.perf_model import analysis

STUDY = "20250101T000000abcd"
FP = {"hostname": "testhost", "kernel": "6.x", "cores": 2, "device": {"disk": "vda"}}
EFF = {"readrandom": 0.8, "readrandom2": 0.7, "readrandom3": 0.9}   # io.eff of the middle repetition
CPU_INC = {"readrandom": 10.0, "readrandom2": 8.0, "readrandom3": 6.0}
FIO_CPU_US = 12.0          # fio CPU per read (2 user + 10 system)
REP_SCALE = (1.02, 1.0, 0.98)   # repetitions 0, 1, 2: the median is repetition 1


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


def raw(name, ops, reads, user_us, sys_us, *, lat_us=100.0, kib=8.0, io_lat_us=60.0, **kw):
    """A step row of raw counters over one second (see rxlab.core.metrics)."""
    return {"name": name, "ops": ops, "wall_s": 1.0, "lat_mean_us": lat_us,
            "cpu_user_s": user_us * ops / 1e6, "cpu_sys_s": sys_us * ops / 1e6,
            "disk_reads": reads, "disk_read_sectors": reads * kib * 2,
            "disk_read_ticks_ms": reads * io_lat_us / 1e3,
            "disk_writes": 0, "disk_write_sectors": 0, "disk_write_ticks_ms": 0, **kw}


def write_study(root, *, threads=(1, 2), block_align=(True, False), reps=3, delays=(0,), excess=0.0,
                away=False, unaligned=False):
    """A stored study as run_study would leave it (one fio run and one sequence per configuration;
    with `away`, the fio run pinned away from the interrupt's CPU at 6,000 reads/s as well; with
    `unaligned`, fio reading 8.5 KiB blocks at 8,000 reads/s per job)."""
    paths = []
    for rep in range(reps):
        k = REP_SCALE[rep]
        for d in delays:
            for t in threads:
                fio_reads = int(10_000 * t)
                spec = {"name": f"ioeff-{STUDY}-r{rep}-t{t}-d{d}-fio", "tool": "rxlab-fio", "scale": "smoke",
                        "backend": "posix", "study_backend": "posix", "threads": t, "delay_us": d}
                with store.RunWriter(root, spec, FP) as w:
                    w.add_step({**raw("fio-sync", fio_reads, fio_reads, 1.0, 11.0), "job": "0",
                                "tool": "rxlab-fio"})
                    device = int(fio_reads * (1 + excess))
                    w.add_step({**raw("fio-sync", fio_reads, device, 2.0, 10.0, lat_us=90.0), "job": "total",
                                "tool": "rxlab-fio"})
                paths.append(w.path)
                if away and d == 0 and t == min(threads):
                    spec = {**spec, "name": f"ioeff-{STUDY}-r{rep}-t{t}-d{d}-fioaway", "tool": "rxlab-fio-away"}
                    with store.RunWriter(root, spec, FP) as w:
                        w.add_step({**raw("fio-sync", 6_000, 6_000, 2.0, 10.0, lat_us=150.0), "job": "total",
                                    "tool": "rxlab-fio", "irq_cpu": 1, "calls_on_irq_cpu": 0,
                                    "calls_counted": 6_000})
                    paths.append(w.path)
                if unaligned and d == 0:
                    spec = {"name": f"ioeff-{STUDY}-r{rep}-t{t}-d{d}-fio512", "tool": "rxlab-fio-unaligned",
                            "scale": "smoke", "backend": "posix", "study_backend": "posix", "threads": t,
                            "delay_us": d}
                    with store.RunWriter(root, spec, FP) as w:
                        w.add_step({**raw("fio-sync", 8_000 * t, 8_000 * t, 2.0, 10.0, lat_us=110.0, kib=8.5),
                                    "job": "total", "tool": "rxlab-fio"})
                    paths.append(w.path)
                for ba in block_align:
                    uri = io_efficiency.with_delay("posix", d)
                    spec = {"name": f"ioeff-{STUDY}-r{rep}-t{t}-d{d}-ba{int(ba)}", "backend": uri,
                            "threads": t, "block_align": ba, "scale": "smoke", "steps": ["io_efficiency"]}
                    with store.RunWriter(root, spec, FP) as w:
                        w.add_step({**raw("fillseq", 30_000, 0, 3.0, 2.0), "threads": 1, "backend": uri})
                        for test, eff in EFF.items():
                            reads = round(fio_reads * eff * k * (1.0 if ba else 0.93))
                            cpu = FIO_CPU_US + CPU_INC[test]
                            row = raw(test, reads, reads, cpu * 0.6, cpu * 0.4, kib=8.0 if ba else 8.8)
                            w.add_step({**row, "threads": t, "backend": uri, "fs.reads": reads})
                    paths.append(w.path)
    return paths


@pytest.fixture
def study(tmp_path):
    write_study(tmp_path / "runs")
    res = io_efficiency.load_study(tmp_path / "runs")
    assert res is not None
    return res


# --------------------------------------------------------------------------- parameters

def test_params_defaults_and_normalisation():
    p = io_efficiency.Params.checked(scale="smoke")
    assert (p.backend, p.threads, p.block_align, p.delay_us, p.value_size) == ("posix", [1, 2], [True, False],
                                                                                [0], 400)
    p = io_efficiency.Params.checked(scale="smoke", threads=2, block_align=True, delay_us=100)
    assert (p.threads, p.block_align, p.delay_us) == ([2], [True], [100])
    s = io_efficiency.Params.checked(scale="smoke").settings()
    assert (s.num, s.duration, s.fio_runtime, s.repeats, s.cache_size) == (30_000, 1.0, 1.0, 1, 1 << 20)
    s = io_efficiency.Params.checked(scale="small").settings()
    assert (s.num, s.cache_size, s.repeats) == (2_000_000, 8 << 20, 3)
    assert 0.75 * 2**30 < s.db_bytes < 0.85 * 2**30 and 5 <= s.duration <= 10
    s = io_efficiency.Params.checked(scale="smoke", db_size="1g", duration=2.5, repeats=2).settings()
    assert (s.num, s.duration, s.fio_runtime, s.repeats) == (2**30 // 416, 2.5, 2.5, 2)
    assert isinstance(s.table(), pd.DataFrame)


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
    ({"db_dir": "/proc/rxlab-x"}, "db_dir='/proc/rxlab-x': its file system does not support O_DIRECT"),
    ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are backend, threads, scale"),
])
def test_bad_parameters_fail_on_one_line_naming_them(kw, message):
    kw = {"scale": "smoke", **kw}
    with pytest.raises(ValueError) as e:
        io_efficiency.Params.checked(**kw)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_full_scale_is_sized_from_the_free_disk(monkeypatch, tmp_path):
    usage = namedtuple("usage", "total used free")

    def free(gib):
        monkeypatch.setattr(io_efficiency.shutil, "disk_usage", lambda p: usage(0, 0, int(gib * 2**30)))

    free(30)
    s = io_efficiency.Params.checked(scale="full", db_dir=str(tmp_path)).settings()
    assert s.db_bytes == pytest.approx(30 * 2**30 * io_efficiency.FULL_DISK_FRACTION, rel=1e-3)
    assert s.db_bytes >= 50 * s.cache_size and s.fio_size == s.db_bytes
    free(1000)
    s = io_efficiency.Params.checked(scale="full", db_dir=str(tmp_path)).settings()
    assert s.db_bytes == pytest.approx(io_efficiency.FULL_MAX_BYTES, rel=1e-3)
    free(10)
    with pytest.raises(ValueError, match=r"^scale='full': needs 16 GiB free"):
        io_efficiency.Params.checked(scale="full", db_dir=str(tmp_path))
    free(1)
    with pytest.raises(ValueError, match=r"^scale='small': needs about"):
        io_efficiency.Params.checked(scale="small")


def test_with_delays():
    p = io_efficiency.Params.checked(scale="smoke", threads=[2, 1], block_align=[False, True])
    assert p.with_delays([0]) is None
    d = p.with_delays([0, 100, 200])
    assert (d.threads, d.block_align, d.delay_us, d.scale) == ([1], [False], [0, 100, 200], "smoke")
    with pytest.raises(ValueError, match=r"^delay_us=\[-5\]"):
        p.with_delays([-5])
    with pytest.raises(ValueError, match="delays need an rxlab engine"):
        io_efficiency.Params.checked(scale="smoke", backend="default").with_delays([0, 100])


def test_plan_alternates_fio_and_rocksdb_and_rotates():
    p = io_efficiency.Params.checked(scale="smoke", repeats=2)
    pl = io_efficiency.plan(p)
    assert len(pl) == 2 * 2 * 5
    first = pl[pl["rep"] == 0]
    # undelayed, fio also runs placed away from the interrupt's CPU, and reading unaligned blocks
    assert first["tool"].tolist() == ["rxlab-fio", "rxlab-fio-away", "rxlab-fio-unaligned", "rocksdb",
                                      "rocksdb"] * 2
    assert first["threads"].tolist() == [1] * 5 + [2] * 5
    assert first["block_align"].tolist()[3:5] == [True, False]
    second = pl[pl["rep"] == 1]
    assert second["threads"].tolist() == [2] * 5 + [1] * 5
    assert second["block_align"].tolist()[3:5] == [False, True]
    delayed = io_efficiency.plan(p.with_delays([0, 100]))
    assert (delayed["tool"] == "rxlab-fio-away").sum() == 2  # delay 0 only
    # unaligned reads matter only where block_align off is studied (the delay study has it on)
    assert "rxlab-fio-unaligned" not in set(delayed["tool"])
    both = io_efficiency.plan(dataclasses.replace(p, delay_us=[0, 100]))
    assert (both["tool"] == "rxlab-fio-unaligned").sum() == 4  # delay 0 only
    for _, g in pl.groupby(["rep", "threads", "delay_us"]):
        assert g["tool"].iloc[0] == "rxlab-fio"   # every RocksDB run follows its own fio baseline


def test_sequence_is_the_seeds_with_single_threaded_loads():
    s = io_efficiency.Params.checked(scale="smoke").settings()
    seq = io_efficiency.sequence(s)
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
    assert io_efficiency.with_delay("posix", 0) == "posix"
    assert io_efficiency.with_delay("posix", 100) == "posix?delay_us=100"
    assert io_efficiency.with_delay("io_uring?sqpoll=1", 50) == "io_uring?sqpoll=1&delay_us=50"
    assert io_efficiency._strip_delay("io_uring?sqpoll=1&delay_us=50") == "io_uring?sqpoll=1"
    assert io_efficiency._strip_delay("posix?delay_us=100") == "posix"


# --------------------------------------------------------------------------- the store round trip

def test_study_frame_from_the_store(study):
    f = study.frame
    assert study.study == STUDY and study.threads == [1, 2] and study.block_align == [True, False]
    assert study.delays == [0] and study.repeats == 3 and study.backend == "posix"
    assert len(study.runs) == 3 * 2 * 3 and all(p.is_dir() for p in study.runs)
    fio = f[f["tool"] == "rxlab-fio"]
    assert len(fio) == 3 * 2 and set(fio["job"]) == {"total"}     # per-job rows left in the store
    db = f[f["tool"] == "rocksdb"]
    assert set(db["test"]) == {"fillseq", *io_efficiency.SEED_TESTS}
    assert set(db["block_align"]) == {True, False} and fio["block_align"].isna().all()
    fill = db[db["test"] == "fillseq"]
    assert (fill["step_threads"] == 1).all() and set(fill["threads"]) == {1, 2}
    for c in ("study", "rep", "tool", "backend", "threads", "block_align", "delay_us", "test", "run_id",
              "qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat"):
        assert c in f.columns, c


def test_load_study_filters_and_skips_incomplete(tmp_path):
    root = tmp_path / "runs"
    assert io_efficiency.load_study(root) is None
    write_study(root, threads=(1,), block_align=(True,), reps=1, delays=(0, 100))
    assert io_efficiency.load_study(root, delayed=True).delays == [0, 100]
    assert io_efficiency.load_study(root, delayed=False) is None
    assert io_efficiency.load_study(root, backend="io_uring") is None
    assert io_efficiency.load_study(root, scale="small") is None
    assert io_efficiency.load_study(root, backend="posix", scale="smoke").study == STUDY
    like = io_efficiency.Params.checked(scale="smoke", threads=[1], block_align=[True], delay_us=[100, 0])
    assert io_efficiency.load_study(root, params=like).study == STUDY
    for other in ({"threads": [1, 2]}, {"block_align": [True, False]}, {"delay_us": [0]}, {"scale": "small"},
                  {"backend": "libaio"}):
        kw = {"scale": "smoke", "threads": [1], "block_align": [True], "delay_us": [0, 100], **other}
        assert io_efficiency.load_study(root, params=io_efficiency.Params.checked(**kw)) is None, other
    # a RocksDB run without its fio baseline: not a complete study
    spec = {"name": "ioeff-20250102T000000abcd-r0-t1-d0-ba1", "backend": "posix"}
    with store.RunWriter(root, spec, FP) as w:
        for test in io_efficiency.SEED_TESTS:
            w.add_step(raw(test, 100, 100, 10.0, 10.0))
    assert io_efficiency.load_study(root, study="20250102T000000abcd") is None
    assert io_efficiency.load_study(root).study == STUDY


# --------------------------------------------------------------------------- the seed's tables

def test_seed_tables_shapes_and_columns(study):
    t = io_efficiency.seed_tables(study)
    assert list(t) == ["fio", "db_bench 1 user", "io.eff 1 user", "db_bench 2 users", "io.eff 2 users",
                       "block_align disabled", "block_align enabled", "block_align effect"]
    assert list(t["fio"].columns) == ["iops", "usPer", "syPer", "cpuPer", "lat.us", "numjobs", "source", "n",
                                      "backend"]
    db_cols = ["qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "test", "users",
               "source", "n", "backend"]
    for k in ("db_bench 1 user", "db_bench 2 users", "block_align disabled", "block_align enabled"):
        assert list(t[k].columns) == db_cols, k
        assert t[k]["source"].tolist() == ["local"] * 3 + ["published"] * 3, k
        assert t[k]["test"].tolist() == [*io_efficiency.SEED_TESTS] * 2, k
    for k in ("io.eff 1 user", "io.eff 2 users"):
        assert list(t[k].columns) == ["io.eff", "us.inc", "cpu.inc", "test", "users", "source", "n",
                                      "backend"]
    assert list(t["block_align effect"].columns) == ["test", "qps_on", "qps_off", "qps_change_pct",
                                                     "reqsz_on", "reqsz_off", "users", "source"]
    assert t["fio"]["source"].tolist() == ["local", "local", "published", "published"]


def test_seed_tables_values_are_medians_beside_the_published(study):
    t = io_efficiency.seed_tables(study)
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
    write_study(tmp_path, threads=(1,), block_align=(False,), reps=1)
    res = io_efficiency.load_study(tmp_path)
    t = io_efficiency.seed_tables(res)
    assert list(t) == ["fio", "db_bench 1 user", "io.eff 1 user"]
    assert t["db_bench 1 user"].query("source == 'local'")["reqsz"].to_numpy() == pytest.approx([8.8] * 3)
    with pytest.raises(ValueError, match="one block_align setting"):
        io_efficiency.fig_block_align(res)


def test_round_like_seed():
    df = pd.DataFrame({"qps": [8282.4], "usPer": [11.64321], "io.eff": [0.84449], "reqsz": [8.54],
                       "test": ["x"]})
    r = io_efficiency.round_like_seed(df)
    assert r.iloc[0].tolist() == [8282, 11.643, 0.844, 8.5, "x"]


def test_findings_and_the_background_check(study, tmp_path):
    t = io_efficiency.seed_tables(study)
    bg = io_efficiency.background_io(study)
    assert set(bg["tool"]) == {"rxlab-fio", "rocksdb"} and bg["excess_pct"].abs().max() < 1e-9
    text = io_efficiency.findings(t, bg)
    assert text.startswith("- The device was quiet")
    assert "io.eff at 1 user: 0.700 to 0.900 here against 0.842 to 0.849 in the seed" in text
    write_study(tmp_path / "busy", threads=(1,), block_align=(True,), reps=1, excess=0.5)
    busy = io_efficiency.load_study(tmp_path / "busy")
    bg = io_efficiency.background_io(busy)
    assert bg.loc[bg["tool"] == "rxlab-fio", "excess_pct"].iloc[0] == pytest.approx(50.0)
    text = io_efficiency.findings(io_efficiency.seed_tables(busy), bg)
    assert text.startswith("- **Caution**: during these runs the device served up to 50% more reads")


# --------------------------------------------------------------------------- figures

def test_figures_of_notebook_10(study, tmp_path):
    t = io_efficiency.seed_tables(study)
    for fn in (io_efficiency.fig_qps, io_efficiency.fig_ioeff, io_efficiency.fig_block_align, io_efficiency.fig_reqsz):
        fig = fn(study, t)
        ax = fig.axes[0]
        assert ax.patches, fn.__name__                       # bars drawn
        paths = figures.save(fig, f"ioeff_test_{fn.__name__}", runs=study.runs, published=io_efficiency.PUBLISHED,
                             directory=tmp_path)
        assert all(p.stat().st_size > 0 for p in paths.values())
    # qps: 2 local + 2 published series x 3 tests
    assert len(io_efficiency.fig_qps(study, t).axes[0].patches) == 12


# --------------------------------------------------------------------------- notebook 20's glue

def test_model_rows(study):
    rows = analysis.model_rows(study)
    assert set(rows["test"]) == {"fio-sync", *io_efficiency.SEED_TESTS}
    db = rows[rows["tool"] == "rocksdb"]
    assert db.groupby("test")["bloom"].first().to_dict() == {"readrandom": True, "readrandom2": True,
                                                            "readrandom3": False}
    assert not rows.loc[rows["tool"] == "rxlab-fio", "bloom"].any()
    with pytest.raises(ValueError, match="no study"):
        analysis.model_rows(None)


def test_the_placed_and_unaligned_fio_runs_are_no_baseline(tmp_path):
    write_study(tmp_path / "runs", away=True, unaligned=True)
    res = io_efficiency.load_study(tmp_path / "runs")
    f = res.frame
    away = f[f["tool"] == io_efficiency.FIO_AWAY_TOOL]
    assert len(away) == 3 and (away["threads"] == 1).all() and away["awayShare"].tolist() == [1.0] * 3
    # the seed's fio table and io.eff keep the baseline's 10,000 reads/s per job
    t = io_efficiency.seed_tables(res)
    fio = t["fio"].set_index(["source", "numjobs"])
    assert fio.loc[("local", 1), "iops"] == pytest.approx(10_000) and fio.loc[("local", 1), "n"] == 3
    e = t["io.eff 1 user"]
    assert e.loc[e["source"] == "local", "io.eff"].tolist() == pytest.approx(list(EFF.values()), abs=2e-4)
    unal = f[f["tool"] == io_efficiency.FIO_UNALIGNED_TOOL]
    assert len(unal) == 6 and unal["reqsz"].tolist() == pytest.approx([8.5] * 6)
    # the unaligned runs enter the model's rows only when asked
    assert io_efficiency.FIO_UNALIGNED_TOOL not in set(analysis.model_rows(res)["tool"])
    rows = analysis.model_rows(res, unaligned=True)
    placed = rows["tool"].isin([io_efficiency.FIO_AWAY_TOOL, io_efficiency.FIO_UNALIGNED_TOOL])
    assert placed.sum() == 9 and not rows.loc[placed, "baseline"].any()
    assert rows.loc[~placed, "baseline"].all()
    f1 = model.fit(rows)
    assert f1.baselines.loc[(1.0, 0.0), "iops"] == pytest.approx(10_000)
    assert f1.baselines.loc[(2.0, 0.0), "iops"] == pytest.approx(20_000)
    assert "size_penalty_us_per_kib" in f1.free
    text = analysis.model_findings(analysis.compare_models(rows))
    assert "Each KiB a read carries above the 8 KiB block (block_align off) costs" in text
    aligned = rows[rows["tool"] != io_efficiency.FIO_UNALIGNED_TOOL]
    aligned = aligned[aligned["block_align"].astype(object) != False]  # noqa: E712
    assert "Each KiB" not in analysis.model_findings(analysis.compare_models(aligned))


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
    text = analysis.model_findings(comp, gap=model.latency_gap(model.published_frame()))
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
    text = analysis.model_findings(comp, ho, gap=gap)
    line = next(x for x in text.splitlines() if "device='iostat'" in x)
    assert "by a median 0.7 to 2.2% per split (worst configuration 3.5%)" in line
    assert "+3.0 us at 1 client, +14.0 us at 2 clients" in line      # the delayed row is left out
    # without fio's io.lat there is no excess to state
    no_fio_io_lat = gap.drop(columns="io_lat_excess_us")
    assert "slower under RocksDB" not in analysis.model_findings(comp, ho, gap=no_fio_io_lat)


def test_findings_say_what_the_wait_for_a_cpu_explains():
    gap = pd.DataFrame({"threads": [1, 1, 2, 2], "delay_us": [0, 0, 0, 0], "runqPer": [0.1, 0.3, 19.0, 21.0],
                        "unexplained_us": [4.0, 6.0, 3.0, 5.0]})
    (line,) = analysis._wait_for_cpu_lines(gap)
    assert "0.2 us per query at 1 client, 20.0 us per query at 2 clients" in line
    assert "leaves 5.0, 4.0 us per query unexplained at 1, 2 client(s)" in line


def test_held_out_and_sensitivity_on_the_published_rows():
    rows = model.published_frame()
    ho_rows, ho = analysis.held_out(rows)
    assert list(ho.columns) == ["split", "model", "rows", "max_abs_err_pct", "median_abs_err_pct", "configs",
                                "config_max_abs_err_pct", "config_median_abs_err_pct", "config_floor_pct", "note"]
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
    for name, fig in (("a", analysis.fig_sensitivity_device(curves, points)),
                      ("b", analysis.fig_sensitivity_cpu(curves, points)),
                      ("c", analysis.fig_predicted_vs_measured(analysis.compare_models(rows))),
                      ("d", analysis.fig_model_error(analysis.compare_models(rows), ho_rows))):
        assert fig.axes and fig.axes[0].lines, name
        figures.plt.close(fig)
    assert not math.isnan(points["y"].iloc[0])


def test_other_studies_columns_in_the_store_do_not_clash(tmp_path):
    """Another study's step rows in the same store carry columns named rep, study, delay_us: the names win."""
    write_study(tmp_path / "runs")
    cat = store.catalog(tmp_path / "runs").assign(rep=99, study="other", delay_us=-1)
    f = io_efficiency.study_frame(cat)
    assert f.columns.is_unique
    assert set(f["rep"]) == {0, 1, 2} and set(f["study"]) == {STUDY} and set(f["delay_us"]) == {0}


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
    text = analysis.model_findings(analysis.compare_models(rows), ho, repeat=rep, agree=agree)
    assert f"the medians themselves are uncertain by about {2.0 * c3:.1f}% per split" in text
    assert "repetitions spanned 4.0% of its median qps" in text and "medians 5.0% apart" in text
    with pytest.raises(ValueError, match="share no configuration"):
        analysis.agreement(rows, rows.assign(test="other"))
    with pytest.raises(ValueError, match="repeatability: needs RocksDB rows"):
        analysis.repeatability(rows[rows["tool"] != "rocksdb"])
    # an earlier study of the same parameters: none before the only one stored
    assert io_efficiency.load_study(study.root, before=study.study) is None
    assert io_efficiency.load_study(study.root, before="29990101T000000ffff").study == study.study


def test_unaligned_cost_sets_fio_beside_rocksdb(tmp_path):
    """fio's unaligned run (8.5 KiB, lat 110 us against the baseline's 90) and RocksDB's
    block_align off (8.8 KiB reads; the synthetic rows carry one latency for both settings)."""
    write_study(tmp_path / "runs", unaligned=True)
    res = io_efficiency.load_study(tmp_path / "runs")
    c = analysis.unaligned_cost(res).set_index(["threads", "tool"])
    assert list(c.index) == [(1, "fio"), (1, "rocksdb"), (2, "fio"), (2, "rocksdb")]
    assert c.loc[(1, "fio"), "reqsz_excess_kib"] == pytest.approx(0.5)
    assert c.loc[(1, "fio"), "lat_us"] == pytest.approx(20.0)
    assert c.loc[(1, "rocksdb"), "reqsz_excess_kib"] == pytest.approx(0.8)
    assert c.loc[(1, "fio"), "io_lat_us"] == pytest.approx(0.0, abs=1e-9)  # same io.lat in the rows
    plain = tmp_path / "plain"
    write_study(plain)
    assert set(analysis.unaligned_cost(io_efficiency.load_study(plain))["tool"]) == {"rocksdb"}


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
    text = analysis.model_findings(analysis.compare_models(analysis.model_rows(study)), steal=eff)
    assert "each 10 us of it moved qps by -18.1% and cpuPer by +13.0 us" in text
    assert "accounts for 100% of the repetitions' spread" in text
    with pytest.raises(ValueError, match="steal_effect: needs RocksDB rows with stealPer"):
        analysis.steal_effect(df.drop(columns="stealPer"))
    flat = analysis.steal_effect(df.assign(stealPer=3.0))        # e.g. one repetition per configuration
    assert flat[["qps_pct_per_10us", "cpu_us_per_us", "r2"]].isna().all() and flat["steal_median_us"] == 3.0
    assert "host's steal" not in analysis.model_findings(analysis.compare_models(analysis.model_rows(study)), steal=flat)


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
