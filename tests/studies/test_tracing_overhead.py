"""rxlab.studies.tracing_overhead: strace parsing, the strace/counters comparison, parameters, plan, and a real tiny study.

The tiny study runs the stock db_bench through the plugin on libaio, untraced,
under perf and under strace, stores every run, and reads the syscall table
back from the stored attachments: the whole path of notebook 50 at a few
thousand operations. libaio is the engine whose data path has no syscall
that the dynamic loader also makes (it never preads), so its counts must
agree with strace's exactly, however few they are.
"""
from __future__ import annotations

import math
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from rxlab.core import figures, store
from rxlab.studies.tracing_overhead import study as tracing_overhead

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")

STRACE_TEXT = """\
% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 86.34    6.385952       44346       144        18 futex
  8.51    0.629463          31     19957           pread64
  4.01    0.296767          14     20066           pwrite64
  0.00    0.000000           0         2           io_submit
------ ----------- ----------- --------- --------- ----------------
100.00    7.312182         180     40169        18 total
"""


def test_parse_strace_table_reads_every_column():
    t = tracing_overhead.parse_strace_table(STRACE_TEXT)
    assert list(t["syscall"]) == ["futex", "pread64", "pwrite64", "io_submit"]
    futex = t.iloc[0]
    assert (futex["calls"], futex["errors"], futex["usecs_per_call"]) == (144, 18, 44346)
    assert futex["seconds"] == pytest.approx(6.385952)
    assert t.loc[t["syscall"] == "pread64", "errors"].item() == 0  # an empty errors column is 0
    assert tracing_overhead.parse_strace_summary(STRACE_TEXT) == {"futex": 144, "pread64": 19957, "pwrite64": 20066,
                                                         "io_submit": 2}


def test_parse_strace_summary_of_a_real_strace(tmp_path):
    out = tmp_path / "s.txt"
    subprocess.run(["strace", "-c", "-f", "-o", str(out), "--", "true"], check=True)
    calls = tracing_overhead.parse_strace_summary(out.read_text())
    assert calls.get("execve") == 1, out.read_text()
    assert "total" not in calls


def counters(**calls):
    """A counters dict as the plugin writes it: every engine syscall, zeros included."""
    names = ("pread64", "pwrite64", "io_submit", "io_getevents", "io_uring_enter", "fsync", "fdatasync")
    return {"reads": 1, **{f"sys.{n}.count": calls.get(n, 0) for n in names}}


def test_compare_syscalls_judges_the_data_path_rxlab_issued():
    traced = {"pread64": 2, "pwrite64": 1000, "io_submit": 5000, "io_getevents": 5000, "fsync": 32,
              "futex": 99}
    t = tracing_overhead.compare_syscalls(traced, counters(pwrite64=1000, io_submit=5000, io_getevents=4990, fsync=13))
    by = t.set_index("syscall")
    # the loader's two preads: shown, not judged (rxlab never issued one); fsync: not a read or write
    assert not by.loc["pread64", "compared"] and by.loc["pread64", "rxlab"] == 0
    assert not by.loc["fsync", "compared"] and by.loc["fsync", "rel_diff"] == pytest.approx(13 / 32 - 1)
    assert list(t.loc[t["compared"], "syscall"]) == ["pwrite64", "io_submit", "io_getevents"]
    assert by.loc["io_getevents", "rel_diff"] == pytest.approx(-0.002)
    assert "futex" not in by.index and "io_uring_enter" not in by.index  # neither counted nor issued
    v = tracing_overhead.agreement(t)
    assert v["rows"] == 3 and v["within"] and v["worst_abs_rel_diff"] == pytest.approx(0.002)
    # 2% off is outside 1%
    off = tracing_overhead.compare_syscalls(traced, counters(pwrite64=1000, io_submit=5100, io_getevents=5000))
    assert not tracing_overhead.agreement(off)["within"]
    # a judged syscall strace never saw is a disagreement, not a division by zero
    ghost = tracing_overhead.compare_syscalls({"pwrite64": 10}, counters(pwrite64=10, io_uring_enter=7))
    assert math.isinf(tracing_overhead.agreement(ghost)["worst_abs_rel_diff"])
    assert not tracing_overhead.agreement(ghost)["within"]


def test_compare_syscalls_without_counters_is_strace_only():
    t = tracing_overhead.compare_syscalls({"pread64": 300, "pwrite64": 7, "futex": 3}, None)
    assert list(t["syscall"]) == ["pread64", "pwrite64"]
    assert t["rxlab"].isna().all() and not t["compared"].any()
    assert tracing_overhead.agreement(t)["rows"] == 0 and not tracing_overhead.agreement(t)["within"]


@pytest.mark.parametrize(("kw", "needle"), [
    ({"backends": ["bogus"]}, "backends='bogus'"),
    ({"backends": ["posix", "posix"]}, "backends=['posix', 'posix']"),
    ({"backends": ["io_uring?counters=0"]}, "set by the tracer"),
    ({"tracers": ["ltrace"]}, "tracers=['ltrace']"),
    ({"tracers": []}, "tracers=[]"),
    ({"workloads": ["readwhilewriting"]}, "workloads=['readwhilewriting']"),
    ({"scale": "huge"}, "scale='huge'"),
    ({"repeats": 0}, "repeats=0"),
    ({"num": 5}, "num=5"),
    ({"reads": 2.5}, "reads=2.5"),
    ({"perf_freq": 0}, "perf_freq=0"),
    ({"perf_freq": True}, "perf_freq=True"),
    ({"tracer": ["none"]}, "unknown parameter 'tracer'"),
])
def test_bad_parameters_fail_on_one_line(kw, needle):
    with pytest.raises(ValueError) as e:
        tracing_overhead.Params.checked(**{"scale": "smoke", **kw})
    msg = str(e.value)
    assert needle in msg and "\n" not in msg, msg


def test_plan_alternates_and_skips_counters_on_default():
    p = tracing_overhead.Params.checked(scale="smoke", repeats=3)
    plan = tracing_overhead.plan(p)
    assert len(plan) == 3 * (4 * 4 - 1)
    assert not ((plan["backend"] == "default") & (plan["tracer"] == "counters")).any()
    firsts = plan.groupby("rep").first()
    assert firsts["backend"].nunique() == 3 and firsts["tracer"].nunique() == 3  # rotated every repetition
    assert plan.groupby(["backend", "tracer"]).size().eq(3).all()


def test_fs_uri_and_benchmarks():
    assert tracing_overhead.fs_uri("default", "strace") is None
    assert tracing_overhead.fs_uri("posix", "none", "/x.json") == "rxlab://posix?counters=0"
    assert tracing_overhead.fs_uri("posix", "perf", "/x.json") == "rxlab://posix?counters=0"
    assert tracing_overhead.fs_uri("io_uring?registered_files=1", "strace", "/x.json") == \
        "rxlab://io_uring?registered_files=1&counters=1&counters_path=/x.json"
    p = tracing_overhead.Params.checked(scale="smoke", workloads=["readseq", "readrandom"])
    assert p.benchmarks() == ["fillseq", "flush", "readseq", "readrandom"]
    p = tracing_overhead.Params.checked(scale="smoke", workloads=["fillrandom", "readrandom"])
    assert p.benchmarks() == ["fillrandom", "flush", "readrandom"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    p = tracing_overhead.Params.checked(scale="smoke", backends=["libaio"], tracers=["none", "perf", "strace"],
                               num=1500, reads=1500)
    s = p.settings()
    if "perf" in p.tracers and s.tools["perf"] != "available":
        pytest.skip(f"perf: {s.tools['perf']}")
    return tracing_overhead.run_study(p, root=root, progress=False, settings=s)


def test_tiny_study_stores_every_run(tiny):
    assert len(tiny.runs) == 3 and all(store.is_complete(r) for r in tiny.runs)
    f = tiny.frame
    assert set(f["tracer"]) == {"none", "perf", "strace"} and set(f["backend"]) == {"libaio"}
    assert set(f["test"]) == {"fillseq", "readrandom"}  # db_bench prints no result line for flush
    rr = f[f["test"] == "readrandom"]
    assert (rr["ops"] == 1500).all() and (rr["found"] == 1500).all()
    assert (rr["qps"] > 0).all() and rr["mb_per_s"].notna().all()
    # CPU of db_bench is only known when no tracer stands between it and the sampler
    assert rr.loc[rr["tracer"] == "none", "cpu_user_s"].notna().all()
    assert rr.loc[rr["tracer"] != "none", "cpu_user_s"].isna().all()
    again = tracing_overhead.load_study(tiny.root)
    assert again is not None and again.study == tiny.study and len(again.frame) == len(f)


def test_tiny_study_syscalls_agree_with_strace(tiny):
    table = tracing_overhead.syscall_table(tiny)
    assert set(table["backend"]) == {"libaio"} and table["run_id"].nunique() == 1
    by = table.set_index("syscall")
    judged = set(table.loc[table["compared"], "syscall"])
    assert {"pwrite64", "io_submit", "io_getevents"} <= judged, table
    assert by.loc["io_submit", "strace"] > 300, table   # the reads reached the device through libaio
    assert (table.loc[table["compared"], "diff"] == 0).all(), table
    summary = tracing_overhead.syscall_summary(table)
    assert summary.loc[summary["judged"], "within_1pct"].all()
    text = tracing_overhead.findings(tiny, tracing_overhead.throughput_table(tiny), tracing_overhead.overhead_table(tiny), summary)
    assert "all agree within 1%" in text


def test_tiny_study_perf_sampled(tiny):
    import json

    run = tiny.frame.loc[tiny.frame["tracer"] == "perf", "run_id"].iloc[0]
    info = json.loads((tiny.root / run / "attachments" / "perf.json").read_text())
    assert info["samples"] > 0 and info["event"] == "cpu-clock"


def test_tiny_study_tables_and_figures(tiny, tmp_path):
    tp = tracing_overhead.throughput_table(tiny)
    assert set(tp["tracer"]) == {"none", "perf", "strace"} and (tp["n"] == 1).all()
    ot = tracing_overhead.overhead_table(tiny)
    assert set(ot["tracer"]) == {"perf", "strace"}
    assert np.allclose(ot["rel"] * ot["slowdown"], 1.0)
    beside = tracing_overhead.published_beside(tp)
    assert set(beside["tracer"]) == {"none", "strace"} and (beside["backend"] == "libaio").all()
    summary = tracing_overhead.syscall_summary(tracing_overhead.syscall_table(tiny))
    for name, fig in (("tracing_throughput", tracing_overhead.fig_throughput(tiny, tp)),
                      ("tracing_overhead", tracing_overhead.fig_overhead(tiny, ot)),
                      ("tracing_syscalls", tracing_overhead.fig_syscalls(summary))):
        paths = figures.save(fig, name, runs=tiny.runs, published=tracing_overhead.PUBLISHED, directory=tmp_path)
        assert all(p.stat().st_size > 0 for p in paths.values())


def test_published_figure5_rows():
    p = tracing_overhead.published_rows()
    assert set(p["tracing"]) == {"none", "strace"}
    assert (p["engine"] == "posix|libaio").all()
    assert pd.to_numeric(p["value"]).gt(0).all()


def test_a_failing_run_is_not_complete(tmp_path):
    """An engine that fails every IO: db_bench dies, and the run is stored as failed, never complete."""
    p = tracing_overhead.Params.checked(scale="smoke", backends=["posix"], tracers=["none"], num=200, reads=200)
    s = p.settings(probe=False)
    work = tmp_path / "work"
    with pytest.raises(RuntimeError, match="db_bench failed"):
        tracing_overhead.run_one(p, s, study="20250101T000000abcd", rep=0, backend="posix?fault_eio=1", tracer="none",
                        work=work, root=tmp_path / "runs")
    dirs = list((tmp_path / "runs").iterdir())
    assert len(dirs) == 1 and dirs[0].name.startswith(".failed-")
    assert not any(work.iterdir())  # the DB is gone
