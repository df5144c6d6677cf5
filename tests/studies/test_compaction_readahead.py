"""rxlab.studies.compaction_readahead: parameters, the memory cgroup, cache eviction, the hit ratio, and a
tiny real study.

The study test runs the real path at a tiny size: a DB loaded in this process,
overwrite in a child process placed in a memory cgroup, the runs stored and
found again, the tables and figures built from them. Tests that need a
memory cgroup (root and a memory controller) skip where there is none.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures
from matplotlib.figure import Figure

from rxlab.core import metrics, store, sysinfo
from rxlab.core.cgroup import MemoryCgroup, cgroup_support
from rxlab.core.study import manifest
from rxlab.studies.compaction_readahead import STUDY, child, columns, figures, overwrite, params

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
    dt = s.device_table()
    assert dt["source"].tolist() == ["local", "published", "published"]
    assert dt["max_sectors_kb"].tolist() == [s.device.max_sectors_kb, 128.0, 1280.0]


def test_plan_rotates_settings_per_repetition():
    p = STUDY.params(scale="smoke", compaction_readahead_size=[0, "1m"], repeats=2)
    pl = STUDY.plan(p)
    assert pl["readahead"].tolist() == [0, 1 << 20, 1 << 20, 0]
    assert pl["rep"].tolist() == [0, 0, 1, 1]


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
                     db_dir=str(work), drop_caches="db", memory_limit="192m" if SUPPORT.available else 0)
    res = STUDY.run(p, root=root, progress=False)
    return p, res, root, work


def test_study_stores_one_overwrite_run_per_setting(tiny_study):
    _, res, root, work = tiny_study
    assert len(res.runs) == 2 and all(store.is_complete(r) for r in res.runs)
    f = res.frame
    assert sorted(f["readahead"]) == [0, 1 << 20]
    assert (f["ops"] > 0).all() and (f["fs.read_bytes"] >= 0).all()
    assert (f["spec.use_direct_reads"] == False).all()  # noqa: E712 buffered IO as in the seed
    assert set(f["spec.compaction_readahead_size"]) == {0, 1 << 20}
    assert list(work.iterdir()) == []                  # the DBs and job files are gone, the runs stay
    # the load is a run of its own; the study's frame holds only the overwrite steps
    names = set(store.catalog(root)["run_name"].astype(str))
    assert names == {f"readahead-{res.study}-load", f"readahead-{res.study}-r0-crs0",
                     f"readahead-{res.study}-r0-crs1048576"}
    load = store.list_runs(root).set_index("name").loc[f"readahead-{res.study}-load", "run_id"]
    assert (f["spec.load_run"] == load).all()      # each setting names the DB it started from
    again = STUDY.load(root)
    assert again is not None and again.study == res.study and len(again.frame) == 2
    assert again.readahead == res.readahead == [0, 1 << 20]
    assert STUDY.load(root, scale="small") is None
    m = manifest(root, res.study)
    assert m["status"] == "complete" and m["study"] == "compaction_readahead" and len(m["runs"]) == 2


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
    assert s["setting"].tolist() == ["0", "1 MiB"]
    assert (s["max_sectors_kb"] == p.settings().device.max_sectors_kb).all()
    assert s["above_max_sectors"].tolist() == [False, s["max_sectors_kb"].iloc[0] < 1024]
    ft = STUDY.table("findings", res)
    assert ft["metric"].tolist() == ["throughput", "read MB/s (iostat)", "rareq-sz (iostat)"]
    assert ft.loc[0, "best in seed"] == "1MB" and ft.loc[0, "best here"] in ("0", "1 MiB")
    dt = STUDY.table("device", res)
    assert dt["max_sectors_kb"].tolist() == [p.settings().device.max_sectors_kb, 128.0, 1280.0]
    assert dt.loc[0, "device"] == f"{p.settings().device.disk} (here)"
    text = STUDY.findings(res)
    assert "max_sectors_kb" in text and "hit ratio" in text


def test_the_figures_are_drawn_from_their_tables_alone(tiny_study, tmp_path):
    """Each figure saved with its table and sidecar, then redrawn from the CSV and the sidecar's draw_args
    only: what `rxlab figures` does without the runs."""
    _, res, _, _ = tiny_study
    assert list(STUDY.figures) == ["readahead_throughput", "readahead_read_mbps", "readahead_reqsz",
                                   "readahead_hit_ratio"]
    for s in saved_figures(STUDY, res, tmp_path):
        assert s.fig.axes[0].get_xlabel() == "compaction_readahead_size" and len(s.side["runs"]) == 2
        assert isinstance(s.again, Figure) and s.again.axes[0].get_xlabel() == "compaction_readahead_size"
    t = pd.read_csv(tmp_path / "readahead_throughput.csv")
    med = t[t["kind"] == "median"].set_index("setting")
    assert med.loc["1 MiB", "seed"] == "seed: best" and len(t[t["kind"] == "rep"]) == 2
    np.testing.assert_allclose(med["value"], STUDY.table("summary", res).set_index("setting")["qps"])
    r = pd.read_csv(tmp_path / "readahead_reqsz.csv")
    assert (r["max_sectors_kb"] == res.max_sectors_kb).all()
    m = pd.read_csv(tmp_path / "readahead_read_mbps.csv")
    assert set(m["series"]) == {"rmbps", "own_rmbps", "fs_rmbps"} and len(m) == 6


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
