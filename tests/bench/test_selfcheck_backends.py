"""The backends benchmark's bookkeeping: which pairs run and how their ratios are summarised.

The benchmark itself runs minutes on a 2 GiB DB (`rxlab selfcheck backends`,
`rxlab selfcheck paired`) and prints figures; these tests check the parts that
decide what is printed.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from helpers_bench import small_bench_db

from rxlab.bench import perf
from rxlab.bench.selfcheck import backends as bb
from rxlab.bench.selfcheck import backends_in_turns as st
from rxlab.bench.selfcheck import own_cost as so
from rxlab.bench.selfcheck import paired as sp
from rxlab.cli import main
from rxlab.core import stats


def test_select_pairs_by_words():
    assert sp.select_pairs(None) == sp.PAIRS
    chosen = sp.select_pairs("posix vs default,counters")
    assert set(chosen) == {"readrandom posix vs default", "readrandom posix counters on vs off",
                           "readrandom io_uring counters on vs off"}
    assert set(sp.select_pairs("multiread")) == {k for k in sp.PAIRS if k.startswith("multiread")}


BAD_BENCH_INPUT = [
    ("paired", ["--only", "nope"], "'nope' matches no pair"),
    ("paired", ["--reps", "1"], "--reps 1"),
    ("paired", ["--duration", "0"], "--duration 0"),
    ("backends", ["--only", "multiread"], "sections are readrandom, multireadrandom"),
    ("backends", ["--repeats", "0"], "--repeats 0"),
    ("backends", ["--duration", "0", "--own-cost"], "--duration 0"),
    ("backends", ["--only", "readrandom", "--configs", "libaio+x"],
     "configurations of readrandom are default, posix"),
    ("backends", ["--cpus_allowed", "0-999"], "are not available"),
    ("driver", ["--only", "readrandom", "--cpus_allowed", "x"], "expected CPU numbers"),
    ("driver", ["--window", "--fs_uri", "posix"], "must be an rxlab:// URI"),
    ("driver", ["--interleave", "--rounds", "0"], "--rounds 0"),
    ("driver", ["--interleave", "--pool", "/nonexistent/rows.csv"], "cannot read saved slices"),
    ("driver", ["--interleave", "--only", "nope"], "parts are readrandom, fio"),
    ("driver", ["--interleave", "--fs_uri", "rxlab://nosuch"], "nosuch"),
    ("backends", ["--interleave", "--sessions", "0"], "--sessions 0"),
    ("backends", ["--interleave", "--slice", "0"], "--slice 0"),
    ("backends", ["--interleave", "--configs", "default"], "besides default"),
    ("backends", ["--interleave", "--only", "seekrandom"],
     "runs in turns are readrandom, multireadrandom, counters"),
    ("backends", ["--interleave", "--cpus_allowed", "0-999"], "are not available"),
    ("driver", ["--only", "readrandom", "--fs_uri", "rxlab://posix?buffer_align=3"], "buffer_align=3"),
]


@pytest.mark.parametrize(("command", "args", "want"), BAD_BENCH_INPUT)
def test_benchmarks_reject_bad_input_before_running(capsys, tmp_path, command, args, want):
    assert main(["selfcheck", command, "--dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and want in err[0], err
    assert err[0].startswith("rxlab: "), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("old", "new"), [("bench-backends", "backends"), ("bench-driver", "driver"),
                                          ("bench-paired", "paired")])
def test_old_names_still_run_with_a_note(capsys, tmp_path, old, new):
    """rxlab 0.1's names run the same check (here: refuse the same bad input) after one line that
    names the new command."""
    args = {"backends": ["--repeats", "0"], "driver": ["--interleave", "--rounds", "0"],
            "paired": ["--reps", "1"]}[new]
    assert main([old, "--dir", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2, err
    assert err[0] == f"rxlab: `rxlab {old}` is now `rxlab selfcheck {new}` (the old name goes away in rxlab 0.3)"
    assert args[-2] in err[1]


def test_median_interval_narrows_with_more_pairs_and_covers_the_median():
    rng = np.random.default_rng(1)
    few = 1.05 + 0.1 * rng.standard_normal(8)
    many = 1.05 + 0.1 * rng.standard_normal(128)
    lo8, hi8 = stats.median_interval(few)
    lo128, hi128 = stats.median_interval(many)
    assert lo8 <= np.median(few) <= hi8
    assert lo128 <= np.median(many) <= hi128
    assert hi128 - lo128 < (hi8 - lo8) / 2
    assert lo128 < 1.05 < hi128
    assert all(np.isnan(stats.median_interval([1.0])))


def test_summarize_paired_ratios_are_a_over_b_per_rep():
    rows = []
    for rep, (qa, qb) in enumerate([(110, 100), (90, 100), (105, 100)]):
        rows += [{"pair": "p", "rep": rep, "backend": "x", "side": "A", "qps": qa, "cpuPer": 100 / qa},
                 {"pair": "p", "rep": rep, "backend": "y", "side": "B", "qps": qb, "cpuPer": 100 / qb}]
    text = sp.summarize_paired(pd.DataFrame(rows))
    line = text.splitlines()[1]
    assert "QPS 1.050" in line and "(0.900..1.100)" in line and "n=3" in line
    assert "CPU/op 0.952" in line


def test_driver_bench_pairs_tools_by_repetition():
    from rxlab.bench.selfcheck import driver as driver_check

    rows = []
    for rep, (ours, theirs) in enumerate([(100.0, 50.0), (90.0, 100.0), (110.0, 100.0)]):
        rows += [{"section": "readrandom", "tool": "rxlab", "threads": 1, "rep": rep, "qps": ours, "cpuPer": 1.0},
                 {"section": "readrandom", "tool": "db_bench", "threads": 1, "rep": rep, "qps": theirs,
                  "cpuPer": 2.0}]
    df = pd.DataFrame(rows)
    r = driver_check.paired_ratios(df, "readrandom", 1, "rxlab", "db_bench")
    assert list(r.round(3)) == [2.0, 0.9, 1.1]       # per repetition, not medians of each tool
    assert r.median() == pytest.approx(1.1)
    assert (driver_check.paired_ratios(df, "readrandom", 1, "rxlab", "db_bench", "cpuPer") == 0.5).all()


def test_driver_bench_parts(tmp_path):
    from rxlab.bench.selfcheck import driver as driver_check

    with pytest.raises(ValueError, match=r"bogus.*readrandom, fio"):
        driver_check.main(tmp_path, parts=("bogus",))
    assert not any(tmp_path.iterdir())  # refused before any DB was loaded
    # a fio-only run summarizes without the readrandom section
    rows = [{"section": "fio sync qd1", "tool": t, "threads": 1, "rep": rep, "qps": q, "cpuPer": 20.0}
            for rep in range(2) for t, q in (("rxlab fio", 100.0 + rep), ("fio", 100.0))]
    text = driver_check.summarize(pd.DataFrame(rows))
    assert "readrandom" not in text and "fio sync qd1: rxlab fio" in text


def test_merge_paired_csv_keeps_other_pairs(tmp_path):
    from rxlab.bench.selfcheck.paired import merge_paired_csv

    path = tmp_path / "pairs.csv"
    first = pd.DataFrame({"pair": ["a", "a", "b"], "rep": [0, 1, 0], "qps": [1.0, 2.0, 3.0]})
    merge_paired_csv(path, first)
    merged = merge_paired_csv(path, pd.DataFrame({"pair": ["b", "b"], "rep": [0, 1], "qps": [9.0, 8.0]}))
    back = pd.read_csv(path)
    assert list(back["pair"]) == ["a", "a", "b", "b"] and list(back["qps"]) == [1.0, 2.0, 9.0, 8.0]
    assert back.equals(merged)
    assert not path.with_name(path.name + ".tmp").exists()


def test_merge_paired_csv_over_an_empty_file(tmp_path):
    from rxlab.bench.selfcheck.paired import merge_paired_csv

    path = tmp_path / "pairs.csv"
    path.write_text("")
    merge_paired_csv(path, pd.DataFrame({"pair": ["a"], "rep": [0], "qps": [1.0]}))
    assert list(pd.read_csv(path)["qps"]) == [1.0]


def test_driver_profile_compares_the_readers(tmp_path):
    """Both tools' readrandom under perf record on one small DB (written by rxlab, read by
    db_bench too): the readers' sampled CPU per op by leaf symbol, RocksDB's code in both."""
    from rxlab.bench.selfcheck import driver as driver_check

    if not perf.perf_support().cpu_clock:
        pytest.skip("perf's cpu-clock event does not work here")
    small_bench_db(tmp_path)
    with pytest.raises(ValueError, match="threads=0"):
        driver_check.profile(tmp_path, threads=0)
    prof = driver_check.profile(tmp_path, threads=1, duration=1, quiet=True)
    assert (prof[["rxlab", "db_bench"]].sum() > 0).all(), prof
    for tool in ("rxlab", "db_bench"):
        assert any(s.startswith("rocksdb::") for s in prof.index[prof[tool] > 0]), prof[tool]
    assert (prof["diff"] == prof["rxlab"] - prof["db_bench"]).all()
    text = driver_check.summarize_profile(prof)
    assert "reader threads' sampled CPU per op: rxlab" in text and "drivers' own loops" in text


@pytest.mark.parametrize(("leaf", "cls"), [
    ("rxlab::(anonymous namespace)::RxRandomAccessFile::Read", "rxlab backend"),
    ("[librxlab_plugin.so]", "rxlab backend"),
    ("__vdso_clock_gettime_[libc]", "clock reads (vDSO)"),
    ("rocksdb::PosixRandomAccessFile::Read", "RocksDB posix file"),
    ("iowrite16_[k]", "kernel"),
    ("__libc_pread_[libc]", "libc and system libraries"),
    ("rocksdb::IndexBlockIter::SeekImpl", "RocksDB and db_bench"),
    ("rocksdb::Benchmark::ReadRandom", "RocksDB and db_bench"),
])
def test_own_cost_classes_of_leaf_frames(leaf, cls):
    assert so.classify_leaf(leaf) == cls


def test_own_cost_profiles_posix_and_default_through_db_bench(tmp_path, monkeypatch):
    """Both backends' readrandom under perf on one small DB: only the posix runs execute rxlab's
    code (the plugin is not even loaded for default), and the summary prices it."""
    if not perf.perf_support().cpu_clock:
        pytest.skip("perf's cpu-clock event does not work here")
    with pytest.raises(ValueError, match=r"reps=0.*reps >= 1"):
        so.own_cost(tmp_path, reps=0)
    with pytest.raises(FileNotFoundError, match="no benchmark DB"):
        so.own_cost(tmp_path, reps=1)
    small_bench_db(tmp_path)
    saved = tmp_path / "own.csv"
    df = so.own_cost(tmp_path, threads=(1,), reps=1, duration=1, quiet=True, out=saved)
    assert set(df["backend"]) == {"posix", "default"} and (df["ops"] > 0).all()
    assert len(pd.read_csv(saved)) == len(df)       # written run by run, whole at the end
    # the second run fails (db_bench killed, say): the first one's rows stay on disk
    real, calls = so._profiled_db_bench, []

    def second_fails(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("db_bench died")
        return real(*args, **kw)

    monkeypatch.setattr(so, "_profiled_db_bench", second_fails)
    with pytest.raises(RuntimeError, match="db_bench died"):
        so.own_cost(tmp_path, threads=(1,), reps=1, duration=1, quiet=True, out=saved)
    kept = pd.read_csv(saved)
    assert set(kept["backend"]) == {"default"} and len(kept) == len(df) // 2
    per = df.pivot_table(index="class", columns="backend", values="us_per_op", aggfunc="sum")
    assert per.loc["rxlab backend", "posix"] > 0, per
    assert per.loc["rxlab backend", "default"] == 0, per
    assert (per.sum() > 1.0).all(), per  # microseconds of CPU per op, kernel and RocksDB included
    assert per.loc["RocksDB and db_bench"].gt(0).all() and per.loc["kernel"].gt(0).all(), per
    text = so.summarize_own_cost(df)
    assert "threads=1" in text and "posix's extra code" in text and "% of default's CPU/op" in text


def test_configs_select_configurations_and_the_summary_pairs_cpu_per_op():
    assert bb.select_configs(None) is None
    assert bb.select_configs("default, posix", ("readrandom",)) == ("default", "posix")
    # a name keeps its variants, and only its own
    assert bb.config_matches("default (io_uring on)", ("default",))
    assert not bb.config_matches("default (io_uring on)", ("posix",))
    cpu = {"default": (40.0, 50.0, 45.0, 44.0), "posix": (41.0, 55.0, 44.1, 45.0)}
    rows = [{"section": "readrandom", "config": c, "threads": t, "rep": rep, "qps": 1000.0,
             "cpuPer": v[rep] * t, "usPer": 1.0, "syPer": 1.0, "p99_us": 100.0}
            for c, v in cpu.items() for t in (1, 2) for rep in range(4)]
    text = bb.summarize(pd.DataFrame(rows))
    assert "multireadrandom" not in text and "seekrandom" not in text
    # paired posix/default per repetition: 1.025, 1.1, 0.98, 1.0227 -> median 1.024
    assert "posix / default CPU/op: paired median 1.024" in text and "n=4" in text
    assert "readrandom t=2: posix CPU/op 89.1 us vs default 89.0 us: +0.1%" in text


def test_summary_of_the_multiread_section_alone_pairs_by_repetition():
    assert bb.select_sections(None) == bb.SECTIONS
    assert bb.select_sections("multireadrandom, counters") == ("multireadrandom", "counters")
    qps = {"default (io_uring on)": (100.0, 200.0, 100.0),
           "default (io_uring off)": (50.0, 50.0, 50.0),
           "posix": (50.0, 60.0, 55.0), "libaio": (90.0, 210.0, 120.0), "io_uring": (110.0, 180.0, 105.0)}
    rows = [{"section": "multireadrandom", "config": c, "threads": 1, "rep": rep, "qps": q[rep],
             "cpuPer": 10.0, "usPer": 5.0, "syPer": 5.0, "p99_us": 100.0}
            for c, q in qps.items() for rep in range(3)]
    text = bb.summarize(pd.DataFrame(rows))
    assert "readrandom t=1" not in text and "counters" not in text
    # medians: io_uring 110 vs default 100; paired per repetition: 1.10, 0.90, 1.05 -> median 1.05
    assert "io_uring 110 ops/s = 2.00x posix" in text and "1.10x default with io_uring" in text
    assert "io_uring / default with io_uring: paired median 1.050" in text and "(0.900..1.100), n=3" in text


def test_adjusted_difference_holds_sleeps_per_op_equal():
    """CPU per op follows how often the reader slept; a run that happened to sleep more must not
    count against its backend. Known truth: posix costs 1.0 us more at equal sleeps, 12 us per sleep."""
    rng = np.random.default_rng(3)
    rows = []
    for rep in range(10):
        for config, extra, sleeps in (("default", 0.0, rng.uniform(0.5, 1.0)),
                                      ("posix", 1.0, rng.uniform(0.5, 0.7))):
            rows.append({"section": "readrandom", "config": config, "threads": 1, "rep": rep, "qps": 1000.0,
                         "sleepsPer": sleeps, "cpuPer": 40.0 + extra + 12.0 * sleeps + rng.normal(0, 0.2),
                         "usPer": 20.0, "syPer": 20.0, "p99_us": 100.0})
    df = pd.DataFrame(rows)
    diff, se, slope = bb.adjusted_difference(df, "posix", "default")
    assert diff == pytest.approx(1.0, abs=4 * se) and se < 0.3
    assert slope == pytest.approx(12.0, abs=1.0)
    # the raw medians mislead here: posix slept less, so it looks cheaper than it is
    med = df.groupby("config")["cpuPer"].median()
    assert med["posix"] - med["default"] < 0.5
    text = bb.summarize(df.assign(threads=1))
    line = next(x for x in text.splitlines() if "at equal sleeps" in x)
    assert re.search(r"posix - default = \+(0\.9|1\.0|1\.1) \+- 0\.\d us CPU/op", line), line
    # without the covariate there is nothing to adjust: NaNs, and no line
    assert all(np.isnan(bb.adjusted_difference(df.drop(columns="sleepsPer"), "posix", "default")))
    assert "at equal sleeps" not in bb.summarize(df.drop(columns="sleepsPer"))
    # every run slept once per op, give or take 0.001: no spread to fit a slope on, no line
    flat = df.assign(sleepsPer=0.995 + 0.001 * rng.uniform(size=len(df)))
    assert all(np.isnan(bb.adjusted_difference(flat, "posix", "default")))
    assert "at equal sleeps" not in bb.summarize(flat)


def test_placement_reads_the_page_offsets_of_the_read_buffers(tmp_path):
    """The benchmark prints where each configuration's 8 KiB read buffers fall in their pages
    (strace of a short readrandom): buffer_align=4096 pins them to offset 0, auto leaves them at
    multiples of 512, and the summary puts each side's placement beside the posix / default
    ratio."""
    import shutil as sh

    if not sh.which("strace"):
        pytest.skip("strace is not installed")
    db, num = small_bench_db(tmp_path)
    b = bb.Bench(tmp_path, size_gib=num * (bb.KEY_SIZE + bb.VALUE_SIZE) / 2**30)
    assert b.placement(db, "rxlab://posix?buffer_align=4096", 1, reads=500) == "0 (100%)"
    # auto keeps the device's 512 bytes: each buffer where malloc put it, at a multiple of 512
    auto = b.placement(db, "rxlab://posix", 1, reads=500)
    assert int(auto.split()[0]) % 512 == 0 and auto.endswith("%)"), auto
    # RocksDB's own file system: some offset that is a multiple of the device's 512 bytes
    where = b.placement(db, None, 1, reads=500)
    first = int(where.split()[0])
    assert first % 512 == 0 and where.endswith("%)"), where
    rows = [{"section": "readrandom", "config": c, "threads": 1, "rep": rep, "qps": 1000.0,
             "cpuPer": 40.0, "usPer": 1.0, "syPer": 1.0, "p99_us": 100.0}
            for c in ("default", "posix 512-aligned") for rep in range(3)]
    text = bb.summarize(pd.DataFrame(rows), {("posix 512-aligned", 1): "2048 (100%)", ("default", 1): where})
    assert f"read buffers' page offsets: posix 512-aligned 2048 (100%); default {where}" in text
    assert "readrandom t=1: posix 512-aligned CPU/op 40.0 us vs default 40.0 us: +0.0%" in text


def test_driver_window_measures_both_tools_with_one_clock(tmp_path):
    """Both tools' readrandom as children on one small DB, read by one observer mid-run: every
    thread's scheduler CPU and sleeps, both through the same rxlab file system."""
    from rxlab.bench.selfcheck import driver as driver_check

    small_bench_db(tmp_path)
    with pytest.raises(ValueError, match=r"start=3 length=3 duration=5"):
        driver_check.window(tmp_path, duration=5, start=3, length=3)
    df = driver_check.window(tmp_path, threads=(1,), repeats=1, duration=5, start=2, length=1.5,
                             fs_uri="rxlab://posix?buffer_align=4096", quiet=True)
    assert sorted(df["tool"]) == ["db_bench", "rxlab"], df
    # a 64 KiB cache on a 9 MB DB: nearly every read blocks, and costs microseconds of CPU
    assert (df["sleeps_per_s"] > 500).all() and df["cpu_per_sleep_us"].between(2, 2000).all(), df
    assert (df["window_s"] >= 1.5).all()
    text = driver_check.summarize_window(df)
    assert "readrandom t=1: CPU per sleep rxlab" in text and "n=1" in text


@pytest.mark.parametrize("median, lo, hi, verdict", [
    (1.023, 0.972, 1.098, "+2.3% MET (interval [0.972..1.098] reaches above +3%)"),
    (1.041, 0.999, 1.072, "+4.1% MISSED (interval [0.999..1.072] reaches above +3%)"),
    (0.958, 0.909, 0.989, "-4.2% MET (cheaper than default) (interval [0.909..0.989] below +3%)"),
    (1.010, 0.990, 1.025, "+1.0% MET (interval [0.990..1.025] below +3%)"),
])
def test_cpu_target_verdict_bounds_what_the_backend_adds(median, lo, hi, verdict):
    assert st.cpu_target_verdict(median, lo, hi) == verdict
