"""rxlab.studies.compaction_readahead: parameters, turns, the memory cgroup, cache eviction, the DB's copy,
the hit ratio, and a tiny real study.

The study test runs the real path at a tiny size: a DB loaded in this process,
one turn of overwrite runs (the base twice) in child processes placed in a
memory cgroup, the runs stored and found again, the comparisons, tables and
figures built from them. Tests that need a memory cgroup (root and a memory
controller) skip where there is none.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures
from matplotlib import pyplot as plt
from matplotlib.figure import Figure

from rxlab.bench import driver
from rxlab.core import metrics, store, sysinfo
from rxlab.core.cgroup import MemoryCgroup, cgroup_support
from rxlab.core.study import manifest
from rxlab.core.turns_plan import turn_rows
from rxlab.studies.compaction_readahead import (
    STUDY,
    ReadaheadResult,
    child,
    columns,
    figures,
    overwrite,
    params,
)

pytestmark = pytest.mark.timeout(300)

MIB = 1 << 20
SUPPORT = cgroup_support()
needs_cgroup = pytest.mark.skipif(not SUPPORT.available, reason=f"no memory cgroup: {SUPPORT.reason}")


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


# --------------------------------------------------------------------------- parameters

def test_params_defaults_are_the_seeds_settings():
    p = STUDY.params(scale="smoke")
    assert p.compaction_readahead_size == [0, 512 << 10, 1 << 20, 2 << 20]
    s = p.settings()
    assert s.device.disk and s.device.max_sectors_kb > 0
    assert s.memory_limit == (params.SCALES["smoke"].memory_limit if SUPPORT.available else 0)
    assert list(STUDY.plan(p)["setting"]) == ["0", "512 KiB", "1 MiB", "2 MiB"]
    assert "rep" not in STUDY.plan(p).columns          # one turn: the protocol adds the turn
    assert STUDY.compare.base_of(list(STUDY.plan(p)["setting"])) == "0"   # the default before RocksDB 8.7
    assert STUDY.compare.metric == "qps"
    assert s.duration == 1.0 and p.rule().budget_s == 5.0                  # smoke: the common 5 s of turns
    small = params.SCALES["small"]
    assert small.budget_s + 20 <= 256 and small.duration == 8.0   # the 256 s it took before, less the load
    assert "repeats" not in dict(s.rows()) and "5 s budget" in dict(s.rows())["turns"]
    dt = s.device_table()
    assert dt["source"].tolist() == ["local", "published", "published"]
    assert dt["max_sectors_kb"].tolist() == [s.device.max_sectors_kb, 128.0, 1280.0]


def test_each_turn_runs_every_setting_once_and_the_base_twice_in_an_order_that_moves():
    p = STUDY.params(scale="smoke")
    units = STUDY.plan(p)
    turns = [turn_rows(units, STUDY.compare, t) for t in range(10)]
    for t in turns:
        assert t["setting"].value_counts().to_dict() == {"0": 2, "512 KiB": 1, "1 MiB": 1, "2 MiB": 1}
        assert sorted(t.loc[t["setting"] == "0", "copy"]) == [0, 1]
        assert (t.loc[t["setting"] != "0", "copy"] == 0).all() and t["rep"].nunique() == 1
    first, second = (list(zip(t["setting"], t["copy"], strict=True)) for t in turns[:2])
    assert first == [("0", 0), ("512 KiB", 0), ("1 MiB", 0), ("2 MiB", 0), ("0", 1)]
    assert second == first[::-1]                         # ABBA: a linear drift cancels over two turns
    # over the turns every setting takes every position
    for setting in ("0", "512 KiB", "1 MiB", "2 MiB"):
        assert {i for t in turns for i in np.flatnonzero(t["setting"].to_numpy() == setting)} == set(range(5))
    # repeats: exactly that many turns, no budget
    rule = STUDY.params(scale="smoke", repeats=4).rule()
    assert (rule.min_turns, rule.max_turns, rule.budget_s) == (4, 4, None)


@pytest.mark.parametrize(("kw", "name"), [
    ({"compaction_readahead_size": []}, "compaction_readahead_size"),
    ({"compaction_readahead_size": [0, 0]}, "compaction_readahead_size"),
    ({"compaction_readahead_size": ["2x"]}, "compaction_readahead_size"),
    ({"compaction_readahead_size": [True]}, "compaction_readahead_size"),
    ({"compaction_readahead_size": ["1g"]}, "compaction_readahead_size"),
    ({"scale": "huge"}, "scale"),
    ({"memory_limit": "1m"}, "memory_limit"),
    ({"memory_limit": "lots"}, "memory_limit"),
    ({"backend": "default"}, "backend"),
    ({"backend": "nosuch"}, "backend"),
    ({"threads": 0}, "threads"),
    ({"threads": 1.5}, "threads"),
    ({"duration": 0}, "duration"),
    ({"repeats": 0}, "repeats"),
    ({"target": 0}, "target"),
    ({"budget": "soon"}, "budget"),
    ({"value_size": 0}, "value_size"),
    ({"db_size": "1k"}, "db_size"),
    ({"drop_caches": "all"}, "drop_caches"),
])
def test_bad_parameters_fail_in_one_line_naming_the_value(kw, name):
    msg = refusal(STUDY, **kw)
    assert msg.startswith(f"{name}="), msg


def test_one_setting_is_no_comparison_beyond_smoke():
    for scale in ("small", "full"):
        msg = refusal(STUDY, scale=scale, compaction_readahead_size=["2m"])
        assert msg.startswith("compaction_readahead_size=['2m']: one setting compares nothing: give two")
    assert STUDY.params(scale="smoke", compaction_readahead_size=[0]).compaction_readahead_size == [0]


def test_unknown_parameter_and_a_db_dir_without_a_device(tmp_path):
    with pytest.raises(ValueError, match=r"^unknown parameter 'readahead'"):
        STUDY.params(scale="smoke", readahead=[0])
    if Path("/dev/shm").is_dir() and sysinfo.device_for_path("/dev/shm").disk is None:
        with pytest.raises(ValueError, match="no block device"):
            STUDY.params(scale="smoke", db_dir="/dev/shm/rxlab-readahead-test")


# --------------------------------------------------------------------------- cgroup and eviction

@needs_cgroup
def test_memory_cgroup_bounds_the_page_cache_of_its_child(tmp_path):
    data = tmp_path / "f.dat"
    with open(data, "wb") as f:
        f.write(os.urandom(96 * MIB))
    overwrite.evict(tmp_path, "db")
    cg = MemoryCgroup(SUPPORT, f"rxlab-test-{os.getpid()}", 32 * MIB)
    try:
        assert cg.path.is_dir()
        r = subprocess.run(["/bin/sh", "-c", 'echo $$ > "$0" && exec cat "$1" > /dev/null',
                            str(cg.procs_file), str(data)], check=True)
        assert r.returncode == 0
        st = cg.stat()
        assert st["limit"] == 32 * MIB
        assert 0 < st["peak"] <= 32 * MIB       # the whole file went through, never more than the limit
        assert st["failcnt"] > 0                # the limit was hit and reclaimed against
    finally:
        cg.remove()
    assert not cg.path.exists()


@pytest.mark.skipif(shutil.which("fincore") is None, reason="fincore (util-linux) not installed")
def test_evict_db_drops_the_files_pages(tmp_path):
    db = tmp_path / "db"
    db.mkdir()
    f = db / "000001.sst"
    f.write_bytes(os.urandom(8 * MIB))
    f.read_bytes()

    def resident() -> int:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", str(f)],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])

    assert resident() > 0
    assert overwrite.evict(db, "db") == "fadvise"
    assert resident() == 0
    assert overwrite.evict(db, "none") == "none"


def _digests(db: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(db.iterdir()) if f.is_file()}


def test_copy_db_links_the_tables_and_an_overwrite_of_the_copy_leaves_the_loaded_db_as_it_was(tmp_path):
    p = STUDY.params(scale="smoke", compaction_readahead_size=[0], db_size="2m", db_dir=str(tmp_path))
    s, base, db, root = p.settings(), tmp_path / "base", tmp_path / "db", tmp_path / "runs"
    overwrite.load_db(p, s, base, "readahead-copytest-load", root)
    before = _digests(base)
    overwrite.copy_db(base, db)
    tables = [f for f in base.iterdir() if f.suffix == ".sst"]
    assert tables and all((db / f.name).stat().st_ino == f.stat().st_ino for f in tables)     # linked
    manifests = [f for f in base.iterdir() if f.name.startswith("MANIFEST-")]
    assert manifests and all((db / f.name).stat().st_ino != f.stat().st_ino for f in manifests)  # copied
    spec = overwrite.run_spec(p, s, db, name="readahead-copytest", readahead=0, existing=True,
                              steps=[{"name": "overwrite", "ops": 20_000}])
    driver.run(spec, root=root, progress=False)
    assert set(_digests(db)) != set(before)              # the copy moved on: new tables, a new MANIFEST
    assert _digests(base) == before                      # the loaded DB did not: every run starts from it


# --------------------------------------------------------------------------- derived columns

def _row(**kw):
    base = {"name": "overwrite", "benchmark": "overwrite", "ops": 100_000, "wall_s": 2.0,
            "disk_reads": 1000, "disk_read_sectors": 1000 * 64, "disk_writes": 10, "disk_write_sectors": 2048,
            "fs.read_bytes": 40 * MIB, "own_read_bytes": 10 * MIB,
            "ticker.rocksdb.compact.read.bytes": 40 * MIB, "ticker.rocksdb.stall.micros": 500_000}
    return {**base, **kw}


def test_derived_columns_use_metrics_and_define_the_hit_ratio_once():
    df = pd.DataFrame([_row(), _row(**{"fs.read_bytes": 0}), _row(own_read_bytes=80 * MIB)])
    d = columns.derived(df)
    seed = metrics.seed_columns(df)
    assert d["reqsz"].tolist() == seed["reqsz"].tolist() == [32.0] * 3
    assert d["qps"].iloc[0] == 50_000
    assert d[columns.READ_MBPS].iloc[0] == pytest.approx(1000 * 32 * 1024 / MIB / 2.0)
    assert d["cache.hit"].iloc[0] == pytest.approx(0.75)
    assert np.isnan(d["cache.hit"].iloc[1])           # nothing read: no ratio, not 1
    assert d["cache.hit"].iloc[2] == pytest.approx(-1.0)  # the device delivered twice what RocksDB read
    assert d["stall.pct"].iloc[0] == pytest.approx(25.0)
    assert d["own_rmbps"].iloc[0] == pytest.approx(5.0)


def test_seed_marks_come_from_the_published_findings():
    assert figures.seed_marks("throughput") == {"1 MiB": "seed: best", "512 KiB": "seed: worst"}
    assert figures.seed_marks("read MB/s (iostat)") == {"2 MiB": "seed: best"}


# --------------------------------------------------------------------------- a tiny real study

@pytest.fixture(scope="module")
def tiny_study(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    work = tmp_path_factory.mktemp("db")
    p = STUDY.params(scale="smoke", compaction_readahead_size=[0, "1m"], duration=0.5, db_size="6m",
                     budget="1s", db_dir=str(work), drop_caches="db",
                     memory_limit="192m" if SUPPORT.available else 0)
    res = STUDY.run(p, root=root, progress=False)
    return p, res, root, work


def test_study_stores_one_turn_the_base_twice(tiny_study):
    """A 1 s budget holds one turn whatever the machine's speed (a turn is three runs of 0.5 s): 0, 1 MiB,
    and 0 again (the A/A copy, a run named r0a)."""
    _, res, root, work = tiny_study
    assert len(res.runs) == 3 and all(store.is_complete(r) for r in res.runs)
    assert res.turns["turns"] == 1 and res.turns["stopped"] == "budget"
    f = res.frame
    assert sorted(f["readahead"]) == [0, 0, 1 << 20]
    assert sorted(zip(f["setting"], f["copy"], strict=True)) == [("0", 0), ("0", 1), ("1 MiB", 0)]
    assert (f["rep"] == 0).all()
    assert (f["ops"] > 0).all() and (f["fs.read_bytes"] >= 0).all()
    assert (f["spec.use_direct_reads"] == False).all()  # noqa: E712 buffered IO as in the seed
    assert set(f["spec.compaction_readahead_size"]) == {0, 1 << 20}
    assert list(work.iterdir()) == []                  # the DBs and job files are gone, the runs stay
    # the load is a run of its own; the study's frame holds only the overwrite steps
    names = set(store.catalog(root)["run_name"].astype(str))
    assert names == {f"readahead-{res.study}-load", f"readahead-{res.study}-r0-crs0",
                     f"readahead-{res.study}-r0a-crs0", f"readahead-{res.study}-r0-crs1048576"}
    load = store.list_runs(root).set_index("name").loc[f"readahead-{res.study}-load", "run_id"]
    assert (f["spec.load_run"] == load).all()      # each setting names the DB it started from
    again = STUDY.load(root)
    assert again is not None and again.study == res.study and len(again.frame) == 3
    assert again.readahead == res.readahead == [0, 1 << 20]
    assert again.frame["copy"].tolist() == res.frame["copy"].tolist()
    assert STUDY.load(root, scale="small") is None
    m = manifest(root, res.study)
    assert m["status"] == "complete" and m["study"] == "compaction_readahead" and len(m["runs"]) == 3
    assert m["turns"]["turns"] == 1 and m["turns"]["budget_s"] == 1.0


@pytest.mark.skipif(not SUPPORT.available, reason=f"no memory cgroup: {SUPPORT.reason}")
def test_study_child_ran_inside_its_memory_limit(tiny_study):
    _, res, root, _ = tiny_study
    f = res.frame
    assert (f["spec.memory_limit"] == 192 * MIB).all() and res.memory_limit == 192 * MIB
    assert (f["cgroup.peak"] > 0).all() and (f["cgroup.peak"] <= 192 * MIB).all()
    run = store.load_run(res.runs[0], root)
    assert run.fingerprint["memory_cgroup"]["limit"] == 192 * MIB
    assert run.fingerprint["memory_cgroup"]["version"] == SUPPORT.version
    assert not any(d.name.startswith("rxlab-readahead-") for d in SUPPORT.parent.iterdir())  # removed


def test_study_tables(tiny_study):
    p, res, _, _ = tiny_study
    s = STUDY.table("summary", res)
    assert s["setting"].tolist() == ["0", "1 MiB"] and s["n"].tolist() == [2, 1]
    assert (s["max_sectors_kb"] == p.settings().device.max_sectors_kb).all()
    assert s["above_max_sectors"].tolist() == [False, s["max_sectors_kb"].iloc[0] < 1024]
    ft = STUDY.table("findings", res)
    assert ft["metric"].tolist() == ["throughput", "read MB/s (iostat)", "rareq-sz (iostat)"]
    assert ft.loc[0, "best in seed"] == "1MB" and ft.loc[0, "best here"] in ("0", "1 MiB")
    assert ft["in turns"].tolist() == ["0 of 1 ratios to 0 resolved", *["not compared (per_turn table)"] * 2]
    t = STUDY.table("per_turn", res)
    assert list(zip(t["setting"], t["copy"], strict=True)) == [("0", 0), ("0", 1), ("1 MiB", 0)]
    np.testing.assert_allclose(t["qps"].sort_values(), res.frame["qps"].sort_values())
    dt = STUDY.table("device", res)
    assert dt["max_sectors_kb"].tolist() == [p.settings().device.max_sectors_kb, 128.0, 1280.0]
    assert dt.loc[0, "device"] == f"{p.settings().device.disk} (here)"
    text = STUDY.findings(res)
    assert "max_sectors_kb" in text and "hit ratio" in text


def test_the_comparison_has_its_interval_and_the_a_a_row_and_says_why_it_is_unresolved(tiny_study):
    _, res, _, _ = tiny_study
    c = STUDY.table("comparisons", res)
    assert {"ratio", "lo", "hi", "half_width", "resolved", "turns", "status"} <= set(c.columns)
    assert c["config"].tolist() == ["1 MiB", "A/A"] and set(c["base"]) == {"0"}
    f = res.frame.set_index(["setting", "copy"])["qps"]
    want = f[("1 MiB", 0)] / np.sqrt(f[("0", 0)] * f[("0", 1)])   # over the geometric mean of the base's pair
    assert c.loc[0, "ratio"] == pytest.approx(want)
    assert c.loc[1, "ratio"] == pytest.approx(f[("0", 1)] / f[("0", 0)])
    assert not c["resolved"].any() and (c["turns"] == 1).all()
    assert (c["status"] == "unresolved: too few turns (1 < 3), budget").all()
    assert "1 MiB" in STUDY.findings(res).split("unresolved, not to be read as differences: ")[1]


def test_the_figures_are_drawn_from_their_tables_alone(tiny_study, tmp_path):
    """Each figure saved with its table and sidecar, then redrawn from the CSV and the sidecar's draw_args
    only: what `rxlab figures` does without the runs."""
    _, res, _, _ = tiny_study
    assert list(STUDY.figures) == ["readahead_throughput_ratio", "readahead_throughput",
                                   "readahead_read_mbps", "readahead_reqsz", "readahead_hit_ratio"]
    for s in saved_figures(STUDY, res, tmp_path):
        assert s.fig.axes[0].get_xlabel() == "compaction_readahead_size" and len(s.side["runs"]) == 3
        assert isinstance(s.again, Figure) and s.again.axes[0].get_xlabel() == "compaction_readahead_size"
        if s.name == "readahead_throughput_ratio":   # one turn: nothing resolved, the marker drawn hollow
            assert _marker_faces(s.again) == ["white"]
    r = pd.read_csv(tmp_path / "readahead_throughput_ratio.csv")
    assert r["config"].tolist() == ["1 MiB", "A/A"] and (r["setting"] == "1 MiB").all()   # the band behind it
    assert r.loc[0, "seed"] == "seed: best" and not r["resolved"].any()
    t = pd.read_csv(tmp_path / "readahead_throughput.csv")
    med = t[t["kind"] == "median"].set_index("setting")
    assert med.loc["1 MiB", "seed"] == "seed: best" and len(t[t["kind"] == "rep"]) == 3
    assert sorted(t.loc[(t["kind"] == "rep") & (t["setting"].astype(str) == "0"), "copy"]) == [0, 1]
    np.testing.assert_allclose(med["value"], STUDY.table("summary", res).set_index("setting")["qps"])
    r = pd.read_csv(tmp_path / "readahead_reqsz.csv")
    assert (r["max_sectors_kb"] == res.max_sectors_kb).all()
    m = pd.read_csv(tmp_path / "readahead_read_mbps.csv")
    assert set(m["series"]) == {"rmbps", "own_rmbps", "fs_rmbps"} and len(m) == 6


def _marker_faces(fig) -> list:
    return [ln.get_markerfacecolor() for ln in fig.axes[0].lines if ln.get_marker() == "o"]


def test_resolved_and_unresolved_ratios_are_told_apart_in_table_figure_and_findings(tiny_study, tmp_path):
    """Four turns made from the tiny study's runs with throughputs set: 1 MiB steadily 10% above the base
    (resolved), 2 MiB scattered around it (unresolved), the base's pair within half a percent."""
    _, res, _, _ = tiny_study
    f = res.frame
    base = f[(f["setting"] == "0") & (f["copy"] == 0)].iloc[0]
    one = f[f["setting"] == "1 MiB"].iloc[0]
    two = one.copy()
    two["readahead"], two["setting"] = 2 << 20, "2 MiB"
    pairs = [(1000, 1004), (998, 1001), (1003, 999), (1000, 1002)]
    noise, scatter = (1.002, 0.997, 1.001, 1.0), (0.90, 1.10, 0.95, 1.08)
    rows = []
    for turn, ((b0, b1), e, x) in enumerate(zip(pairs, noise, scatter, strict=True)):
        ref = np.sqrt(b0 * b1)
        for r, copy, qps in ((base, 0, b0), (base, 1, b1), (one, 0, 1.10 * ref * e), (two, 0, x * ref)):
            rows.append({**r.to_dict(), "rep": turn, "copy": copy, "qps": qps})
    made = ReadaheadResult(study=res.study, frame=pd.DataFrame(rows), runs=[], root=tmp_path, name=STUDY.name,
                           turns={"target": 2.0, "turns": 4, "stopped": "budget"})
    c = STUDY.table("comparisons", made).set_index("config")
    assert c.loc["1 MiB", "resolved"] and c.loc["1 MiB", "ratio"] == pytest.approx(1.10, rel=2e-3)
    assert c.loc["1 MiB", "half_width"] < 2 and c.loc["1 MiB", "turns"] == 4
    assert not c.loc["2 MiB", "resolved"] and c.loc["2 MiB", "status"].startswith("unresolved: budget (+-")
    assert c.loc["A/A", "half_width"] < 2
    text = STUDY.findings(made)
    resolved, unresolved = text.split("unresolved, not to be read as differences: ")
    assert "1 of 2 overwrite ops/s ratios to 0 resolved (1 MiB 1.100 [" in resolved and "2 MiB" in unresolved
    assert "A/A control" in unresolved
    fig = STUDY.figure("readahead_throughput_ratio", made, save=False)
    faces = _marker_faces(fig)
    assert len(faces) == 2 and faces[0] != "white" and faces[1] == "white"   # 1 MiB filled, 2 MiB hollow
    plt.close(fig)


def test_the_study_is_in_the_registry_and_its_outputs_are_written(tiny_study, tmp_path):
    _, res, _, _ = tiny_study
    out = registered_outputs(STUDY, res, tmp_path)
    assert {"compaction_readahead_summary.csv", "compaction_readahead_findings.md",
            "compaction_readahead_device.tex"} <= out.tables
    assert "hit ratio" in out.findings


@needs_cgroup
def test_a_limit_too_small_for_the_child_fails_clearly(tmp_path):
    p = STUDY.params(scale="smoke", compaction_readahead_size=[0], db_size="2m", db_dir=str(tmp_path / "db"))
    spec = overwrite.run_spec(p, p.settings(), tmp_path / "db", name="readahead-tiny", steps=["fillseq"],
                              readahead=0, existing=False)
    root = tmp_path / "runs"
    with pytest.raises(RuntimeError, match=r"exit -9 \(killed: the 16 MiB memory limit was too small"):
        overwrite.run_child(spec, root, meta={"memory_limit": 16 * MIB}, limit=16 * MIB, support=SUPPORT,
                            work=tmp_path)
    assert store.list_runs(root).empty  # nothing that looks like a complete run
    assert not any(d.name.startswith("rxlab-readahead-") for d in SUPPORT.parent.iterdir())


def test_child_entry_point_refuses_without_a_job(capsys):
    with pytest.raises(SystemExit) as e:
        child.main([])
    assert e.value.code == 2 and "--child" in capsys.readouterr().err


def test_the_child_module_the_parent_starts_runs_as_a_program():
    """The command line run_child builds: `python -m <CHILD_MODULE> --child JOB`, at the module's path."""
    assert child.__name__ == overwrite.CHILD_MODULE
    r = subprocess.run([sys.executable, "-m", overwrite.CHILD_MODULE, "--help"], capture_output=True,
                       text=True, check=False, timeout=120)
    assert r.returncode == 0 and "--child JOB.json" in r.stdout, r.stderr
    assert "RuntimeWarning" not in r.stderr   # nothing imported the module before runpy ran it


def test_the_turns_budget_is_the_studys_own_by_scale():
    """small's turns stop at the study's own 225 s (on 2026-11-27 it ran 600 s, the common budget: its
    preset was not read); a budget given wins."""
    assert params.Params(scale="small").rule().budget_s == params.SCALES["small"].budget_s == 225.0
    assert params.Params(scale="small", budget="90s").rule().budget_s == 90.0
