"""rxlab.studies.tracing_overhead: strace parsing, the strace/counters comparison, parameters, the turns'
plan, and a real tiny study.

The tiny study runs the stock db_bench through the plugin on libaio, untraced
(twice: the A/A pair), under perf and under strace, in one turn, stores
every run, and reads the syscall table back from the stored
attachments: the whole path of notebook 50 at a few thousand operations.
libaio is the engine whose data path has no syscall that the dynamic loader
also makes (it never preads), so its counts must agree with strace's
exactly, however few they are.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures
from matplotlib.figure import Figure

from rxlab.core import store
from rxlab.core.study import manifest
from rxlab.core.turns_plan import turn_rows
from rxlab.studies.tracing_overhead import STUDY, findings, syscalls, tables, tracers

pytestmark = [pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed"),
              pytest.mark.timeout(300)]

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
    t = syscalls.parse_strace_table(STRACE_TEXT)
    assert list(t["syscall"]) == ["futex", "pread64", "pwrite64", "io_submit"]
    futex = t.iloc[0]
    assert (futex["calls"], futex["errors"], futex["usecs_per_call"]) == (144, 18, 44346)
    assert futex["seconds"] == pytest.approx(6.385952)
    assert t.loc[t["syscall"] == "pread64", "errors"].item() == 0  # an empty errors column is 0
    assert syscalls.parse_strace_summary(STRACE_TEXT) == {"futex": 144, "pread64": 19957, "pwrite64": 20066,
                                                          "io_submit": 2}


def test_parse_strace_summary_of_a_real_strace(tmp_path):
    out = tmp_path / "s.txt"
    subprocess.run(["strace", "-c", "-f", "-o", str(out), "--", "true"], check=True)
    calls = syscalls.parse_strace_summary(out.read_text())
    assert calls.get("execve") == 1, out.read_text()
    assert "total" not in calls


def counters(**calls):
    """A counters dict as the plugin writes it: every engine syscall, zeros included."""
    names = ("pread64", "pwrite64", "io_submit", "io_getevents", "io_uring_enter", "fsync", "fdatasync")
    return {"reads": 1, **{f"sys.{n}.count": calls.get(n, 0) for n in names}}


def test_compare_syscalls_judges_the_data_path_rxlab_issued():
    traced = {"pread64": 2, "pwrite64": 1000, "io_submit": 5000, "io_getevents": 5000, "fsync": 32,
              "futex": 99}
    ours = counters(pwrite64=1000, io_submit=5000, io_getevents=4990, fsync=13)
    t = syscalls.compare_syscalls(traced, ours)
    by = t.set_index("syscall")
    # the loader's two preads: shown, not judged (rxlab never issued one); fsync: not a read or write
    assert not by.loc["pread64", "compared"] and by.loc["pread64", "rxlab"] == 0
    assert not by.loc["fsync", "compared"] and by.loc["fsync", "rel_diff"] == pytest.approx(13 / 32 - 1)
    assert list(t.loc[t["compared"], "syscall"]) == ["pwrite64", "io_submit", "io_getevents"]
    assert by.loc["io_getevents", "rel_diff"] == pytest.approx(-0.002)
    assert "futex" not in by.index and "io_uring_enter" not in by.index  # neither counted nor issued
    v = syscalls.agreement(t)
    assert v["rows"] == 3 and v["within"] and v["worst_abs_rel_diff"] == pytest.approx(0.002)
    # 2% off is outside 1%
    off = syscalls.compare_syscalls(traced, counters(pwrite64=1000, io_submit=5100, io_getevents=5000))
    assert not syscalls.agreement(off)["within"]
    # a judged syscall strace never saw is a disagreement, not a division by zero
    ghost = syscalls.compare_syscalls({"pwrite64": 300}, counters(pwrite64=300, io_uring_enter=700))
    assert math.isinf(syscalls.agreement(ghost)["worst_abs_rel_diff"])
    assert not syscalls.agreement(ghost)["within"]
    # a few preads of buffered files (the OPTIONS file) beside the loader's two: shown, not judged
    few = syscalls.compare_syscalls({**traced, "pread64": 16}, {**ours, "sys.pread64.count": 14})
    few = few.set_index("syscall")
    assert few.loc["pread64", "rxlab"] == 14 and not few.loc["pread64", "compared"]
    assert few["compared"].sum() == 3


def test_compare_syscalls_without_counters_is_strace_only():
    t = syscalls.compare_syscalls({"pread64": 300, "pwrite64": 7, "futex": 3}, None)
    assert list(t["syscall"]) == ["pread64", "pwrite64"]
    assert t["rxlab"].isna().all() and not t["compared"].any()
    assert syscalls.agreement(t)["rows"] == 0 and not syscalls.agreement(t)["within"]


@pytest.mark.parametrize(("kw", "needle"), [
    ({"backends": ["bogus"]}, "backends='bogus'"),
    ({"backends": ["posix", "posix"]}, "backends=['posix', 'posix']"),
    ({"backends": ["io_uring?counters=0"]}, "set by the tracer"),
    ({"tracers": ["ltrace"]}, "tracers=['ltrace']"),
    ({"tracers": []}, "tracers=[]"),
    ({"tracers": ["perf", "strace"]}, "tracers=['perf', 'strace']: must include 'none': every overhead"),
    ({"target": 0}, "target=0"),
    ({"budget": "soon"}, "budget='soon'"),
    ({"workloads": ["readwhilewriting"]}, "workloads=['readwhilewriting']"),
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"repeats": 0}, "repeats=0"),
    ({"num": 5}, "num=5"),
    ({"reads": 2.5}, "reads=2.5"),
    ({"perf_freq": 0}, "perf_freq=0"),
    ({"perf_freq": True}, "perf_freq=True"),
    ({"tracer": ["none"]}, "unknown parameter 'tracer'"),
])
def test_bad_parameters_fail_on_one_line(kw, needle):
    msg = refusal(STUDY, **kw)
    assert needle in msg, msg


def test_each_turn_rotates_backends_and_tracers_and_runs_untraced_twice():
    p = STUDY.params(scale="smoke")
    units = STUDY.plan(p)
    assert len(units) == 4 * 4 - 1 and "rep" not in units.columns
    assert not ((units["backend"] == "default") & (units["tracer"] == "counters")).any()
    plan = pd.concat([turn_rows(units, STUDY.compare, t) for t in range(4)], ignore_index=True)
    assert len(plan) == 4 * (4 * 5 - 1)     # per turn every tracer once, none twice, default without counters
    firsts = plan.groupby("rep")["backend"].first().tolist()
    assert firsts == ["default", "posix", "libaio", "io_uring"]     # the backends rotate from turn to turn
    posix = plan[plan["backend"] == "posix"]
    t0, t1 = (posix[posix["rep"] == t][["tracer", "copy"]].apply(tuple, axis=1).tolist() for t in (0, 1))
    assert t0 == [("none", 0), ("counters", 0), ("perf", 0), ("strace", 0), ("none", 1)] and t1 == t0[::-1]
    assert set(plan.loc[plan["copy"] == 1, "tracer"]) == {"none"}   # only the base has an A/A copy
    assert plan.groupby(["rep", "backend"])["copy"].sum().eq(1).all()


def test_the_rule_takes_the_study_budget_of_its_scale_or_exactly_repeats_turns():
    small = STUDY.params(scale="small").rule()
    assert (small.budget_s, small.target, small.min_turns, small.max_turns) == (270.0, 2.0, 3, None)
    assert STUDY.params(scale="smoke").rule().budget_s == 5.0
    assert STUDY.params(scale="small", budget="2m").rule().budget_s == 120.0
    exact = STUDY.params(scale="small", repeats=4).rule()
    assert (exact.budget_s, exact.min_turns, exact.max_turns) == (None, 4, 4)


def test_fs_uri_and_benchmarks():
    assert tracers.fs_uri("default", "strace") is None
    assert tracers.fs_uri("posix", "none", "/x.json") == "rxlab://posix?counters=0"
    assert tracers.fs_uri("posix", "perf", "/x.json") == "rxlab://posix?counters=0"
    assert tracers.fs_uri("io_uring?registered_files=1", "strace", "/x.json") == \
        "rxlab://io_uring?registered_files=1&counters=1&counters_path=/x.json"
    assert tracers.slug("rxlab://io_uring?registered_files=1") == "io_uring_registered_files_1"
    assert tracers.default_flags("default?io_uring=0") == {"io_uring_enabled": "false"}
    p = STUDY.params(scale="smoke", workloads=["readseq", "readrandom"])
    assert p.benchmarks() == ["fillseq", "flush", "readseq", "readrandom"]
    p = STUDY.params(scale="smoke", workloads=["fillrandom", "readrandom"])
    assert p.benchmarks() == ["fillrandom", "flush", "readrandom"]


def test_the_strace_wrapper_gives_the_preload_to_db_bench_only(tmp_path):
    prefix = tracers.tracer_prefix("strace", tmp_path / "s.txt", 99)
    script = tracers.wrapper_script(tmp_path / "run.sh", prefix, tmp_path / "db_bench", "/lib/plugin.so")
    text = script.read_text()
    assert "unset LD_PRELOAD" in text and '-E LD_PRELOAD="$P"' in text and " env " not in text
    prefix = tracers.tracer_prefix("perf", tmp_path / "p.data", 99)
    perf = tracers.wrapper_script(tmp_path / "p.sh", prefix, tmp_path / "db_bench", None).read_text()
    assert "perf record -e cpu-clock -F 99 -g" in perf and 'env LD_PRELOAD="$P"' in perf


# --------------------------------------------------------------------------- a real tiny study

@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    # one turn, what smoke's 5 s budget gives here, fixed so that a faster machine does not run a second
    p = STUDY.params(scale="smoke", backends=["libaio"], tracers=["none", "perf", "strace"], num=1500,
                     reads=1500, max_turns=1, db_dir=str(tmp_path_factory.mktemp("db")))
    tools = p.settings().tools
    if tools["perf"] != "available":
        pytest.skip(f"perf: {tools['perf']}")
    return p, STUDY.run(p, root=root, progress=False)


def test_tiny_study_stores_every_run(tiny):
    p, res = tiny
    assert len(res.runs) == 4 and all(store.is_complete(r) for r in res.runs)   # one turn: none twice
    f = res.frame
    assert set(f["tracer"]) == {"none", "perf", "strace"} and set(f["backend"]) == {"libaio"}
    assert sorted(f.drop_duplicates("run_id")[["tracer", "copy"]].apply(tuple, axis=1)) == \
        [("none", 0), ("none", 1), ("perf", 0), ("strace", 0)]
    assert (f["rep"] == 0).all() and f.loc[f["copy"] == 1, "run_name"].str.contains("-r0a-").all()
    assert set(f["test"]) == {"fillseq", "readrandom"}  # db_bench prints no result line for flush
    rr = f[f["test"] == "readrandom"]
    assert (rr["ops"] == 1500).all() and (rr["found"] == 1500).all()
    assert (rr["qps"] > 0).all() and rr["mb_per_s"].notna().all()
    # CPU of db_bench is only known when no tracer stands between it and the sampler
    assert rr.loc[rr["tracer"] == "none", "cpu_user_s"].notna().all()
    assert rr.loc[rr["tracer"] != "none", "cpu_user_s"].isna().all()
    again = STUDY.load(res.root)
    assert again is not None and again.study == res.study and len(again.frame) == len(f)
    assert again.backends == res.backends == ["libaio"] and again.tracers == ["none", "perf", "strace"]
    assert STUDY.load(res.root, scale="small") is None
    m = manifest(res.root, res.study)
    assert m["status"] == "complete" and m["study"] == "tracing_overhead" and len(m["runs"]) == 4
    assert not list(Path(p.db_dir).iterdir())   # every DB and wrapper script is gone, the runs stay


def test_tiny_study_syscalls_agree_with_strace(tiny):
    _, res = tiny
    table = STUDY.table("syscall_runs", res)
    assert set(table["backend"]) == {"libaio"} and table["run_id"].nunique() == 1
    by = table.set_index("syscall")
    judged = set(table.loc[table["compared"], "syscall"])
    assert {"pwrite64", "io_submit", "io_getevents"} <= judged, table
    assert by.loc["io_submit", "strace"] > 300, table   # the reads reached the device through libaio
    assert (table.loc[table["compared"], "diff"] == 0).all(), table
    summary = STUDY.table("syscalls", res)
    assert summary.loc[summary["judged"], "within_1pct"].all()
    assert "all agree within 1%" in STUDY.findings(res)


def test_tiny_study_perf_sampled(tiny):
    _, res = tiny
    run = res.frame.loc[res.frame["tracer"] == "perf", "run_id"].iloc[0]
    info = json.loads((res.root / run / "attachments" / "perf.json").read_text())
    assert info["samples"] > 0 and info["event"] == "cpu-clock"


def test_tiny_study_tables(tiny):
    _, res = tiny
    tp = STUDY.table("throughput", res)
    assert set(tp["tracer"]) == {"none", "perf", "strace"}
    n = tp.set_index(["test", "tracer"])["n"].to_dict()
    assert n == {(t, tr): 2 if tr == "none" else 1 for t in ("fillseq", "readrandom")   # none twice a turn
                 for tr in ("none", "perf", "strace")}
    beside = STUDY.table("published", res)
    assert set(beside["tracer"]) == {"none", "strace"} and (beside["backend"] == "libaio").all()
    assert set(beside["published_mb_per_s"]) == {"exceed 80", "around 10"}


def test_every_comparison_has_its_interval_and_the_a_a_row_and_says_why_it_is_unresolved(tiny):
    """After one turn each tracer's ratio to untraced is there per workload, the A/A row beside, none
    resolved, and the table, the findings and the manifest say why."""
    _, res = tiny
    c = STUDY.table("comparisons", res)
    assert list(c.columns[:2]) == ["backend", "test"]
    assert {"ratio", "lo", "hi", "half_width", "resolved", "turns", "status", "slowdown"} <= set(c.columns)
    assert c[["test", "config"]].apply(tuple, axis=1).tolist() == [
        (t, cfg) for t in ("fillseq", "readrandom") for cfg in ("perf", "strace", "A/A")]
    assert set(c["base"]) == {"none"} and (c["turns"] == 1).all() and not c["resolved"].any()
    assert (c["status"] == "unresolved: too few turns (1 < 3), max turns").all()
    # the ratio is the tracer's qps over untraced's (the geometric mean of the A/A pair) in the same turn
    f = res.frame.set_index(["test", "tracer", "copy"])["qps"]
    for r in c[c["config"] != "A/A"].itertuples():
        want = f[(r.test, r.config, 0)] / math.sqrt(f[(r.test, "none", 0)] * f[(r.test, "none", 1)])
        assert r.ratio == pytest.approx(want) and r.slowdown == pytest.approx(1 / want)
    aa = c[c["config"] == "A/A"]
    assert aa["ratio"].tolist() == pytest.approx([f[(t, "none", 1)] / f[(t, "none", 0)] for t in aa["test"]])
    assert res.turns["stopped"] == "max turns" and manifest(res.root, res.study)["turns"]["turns"] == 1
    text = findings.findings(res)
    assert "strace keeps" in text and "none resolved: not to be read as differences" in text
    assert "In turns, libaio: 0 of 4 ratios to untraced resolved; unresolved, not to be read as differences" \
        in text
    assert "The report: posix and libaio exceed 80 MB/s untraced" in text


def test_the_figures_are_drawn_from_their_tables_alone(tiny, tmp_path):
    """Each figure saved with its table and sidecar, then redrawn from the CSV and the sidecar's draw_args
    only: what `rxlab figures` does without the runs."""
    _, res = tiny
    assert list(STUDY.figures) == ["tracing_throughput", "tracing_overhead", "tracing_syscalls"]
    for s in saved_figures(STUDY, res, tmp_path):
        assert isinstance(s.again, Figure) and s.again.axes
    t = pd.read_csv(tmp_path / "tracing_throughput.csv")
    assert set(t["kind"]) == {"median", "rep", "published"}
    pub = t[t["kind"] == "published"].set_index("tracer")
    assert (pub.loc["none", "mb_per_s"], pub.loc["strace", "mb_per_s"]) == (80.0, 10.0)
    o = pd.read_csv(tmp_path / "tracing_overhead.csv")
    assert o.loc[o["kind"] == "published", "ratio"].tolist() == [10 / 80]
    cmp = o[o["kind"] == "comparison"]
    assert set(cmp["config"]) == {"perf", "strace", "A/A"}
    assert {"lo", "hi", "resolved", "turns", "status"} <= set(o.columns)
    s = pd.read_csv(tmp_path / "tracing_syscalls.csv")
    assert set(s["syscall"]) >= {"pwrite64", "io_submit", "io_getevents"}
    # the loader's preads are drawn only where rxlab counted preads too (those of buffered files, as the
    # OPTIONS file read back), and never judged
    pread = s[s["syscall"] == "pread64"]
    assert (pread["rxlab"] > 0).all() and not pread["judged"].astype(bool).any(), pread


def test_the_study_is_in_the_registry_and_its_outputs_are_written(tiny, tmp_path):
    _, res = tiny
    out = registered_outputs(STUDY, res, tmp_path)
    assert {"tracing_overhead_throughput.csv", "tracing_overhead_syscalls.md",
            "tracing_overhead_comparisons.tex"} <= out.tables
    assert "Syscall counts" in out.findings


def test_published_figure5_rows():
    p = tables.published_rows()
    assert set(p["tracing"]) == {"none", "strace"}
    assert (p["engine"] == "posix|libaio").all()
    assert pd.to_numeric(p["value"]).gt(0).all()


def test_a_failing_run_fails_the_study_and_is_not_complete(tmp_path):
    """An engine that fails every IO: db_bench dies, the run is stored as failed (never complete), the
    study's manifest says failed, and the DB is gone."""
    p = STUDY.params(scale="smoke", backends=["posix?fault_eio=1"], tracers=["none"], num=200, reads=200,
                     db_dir=str(tmp_path / "work"))
    with pytest.raises(RuntimeError, match="db_bench failed"):
        STUDY.run(p, root=tmp_path / "runs", progress=False)
    dirs = [d for d in (tmp_path / "runs").iterdir() if d.name != ".studies"]
    assert len(dirs) == 1 and dirs[0].name.startswith(".failed-")
    (m,) = (tmp_path / "runs" / ".studies").glob("*.json")
    assert json.loads(m.read_text())["status"] == "failed"
    assert not any((tmp_path / "work").iterdir())  # the DB is gone
    assert STUDY.load(tmp_path / "runs") is None
