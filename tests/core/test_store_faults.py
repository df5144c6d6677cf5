"""rxlab.core.store when runs are damaged, and runs told apart.

One unreadable run (an empty directory, a corrupt run.json, an empty or garbled steps.parquet) never
blocks the store: catalog() and list_runs() leave it out and name it; load_run() of it says what is
wrong. One engine URI has one backend label whatever the entry point gave it.
"""
from __future__ import annotations

import shutil
import warnings

import pandas as pd
import pytest

from rxlab.core import metrics, store

FP = {"hostname": "testhost", "kernel": "6.x", "cpu_model": "cpu", "cores": 2,
      "device": {"disk": "vda", "model": "virtio", "fstype": "ext4", "scheduler": "none"}}


def step(name, ops=1000, wall_s=2.0, **kw):
    return {"name": name, "benchmark": name, "ops": ops, "wall_s": wall_s, "threads": 1, "disk_reads": 10,
            "disk_read_sectors": 160, "disk_read_ticks_ms": 1, **kw}


def write_run(root, name, backend, steps=("fillseq", "flush", "readrandom"), **spec):
    with store.RunWriter(root, {"name": name, "backend": backend, **spec}, FP) as w:
        for i, s in enumerate(steps):
            w.add_step(step(s, ops=1000 * (i + 1), backend=backend))
    return w.path


@pytest.fixture
def damaged(tmp_path):
    good_cli = write_run(tmp_path, "cli", "rxlab://posix")
    good_py = write_run(tmp_path, "python", "posix")
    (tmp_path / "empty").mkdir()
    for name, damage in (("badjson", lambda d: (d / "run.json").write_text("{not json")),
                         ("emptyjson", lambda d: (d / "run.json").write_text("")),
                         ("zerosteps", lambda d: (d / "steps.parquet").write_bytes(b"")),
                         ("garbledsteps", lambda d: (d / "steps.parquet").write_bytes(b"PAR1 garbage"))):
        shutil.copytree(good_py, tmp_path / name)
        damage(tmp_path / name)
    return tmp_path, good_cli, good_py


def test_catalog_skips_unreadable_runs_and_names_them(damaged):
    root, good_cli, good_py = damaged
    with pytest.warns(store.SkippedRunsWarning, match=r"skipped 5 unreadable run\(s\)"):
        cat = store.catalog(root)
    assert sorted(cat["run_id"].unique()) == sorted([good_cli.name, good_py.name])
    skipped = cat.attrs["skipped"]
    assert len(skipped) == 5
    want = {"empty": "an empty directory, not a run", "badjson": "run.json is corrupt (not JSON",
            "emptyjson": "run.json is corrupt (empty)", "zerosteps": "steps.parquet is unreadable",
            "garbledsteps": "steps.parquet is unreadable"}
    for name, text in want.items():
        (line,) = [s for s in skipped if s.startswith(f"run {name}: ")]
        assert text in line, line
        assert "\n" not in line


def test_naming_an_unreadable_run_raises_what_is_wrong(damaged):
    root, _, _ = damaged
    with pytest.raises(store.CorruptRun, match=r"^run badjson: run.json is corrupt \(not JSON"):
        store.load_run("badjson", root)
    with pytest.raises(store.CorruptRun, match=r"^run empty: an empty directory"):
        store.load_run("empty", root)
    with pytest.raises(store.CorruptRun, match=r"^run zerosteps: steps.parquet is unreadable"):
        store.load_run("zerosteps", root)
    with pytest.raises(store.CorruptRun, match="garbledsteps"):
        store.catalog(root, runs=["garbledsteps"])
    with pytest.raises(store.RunNotFound) as e:
        store.load_run("nope", root)
    assert isinstance(e.value, KeyError) and str(e.value).startswith("no run 'nope' in ")  # no quotes


def test_list_runs_tells_runs_apart_and_skips_the_unreadable(damaged):
    root, good_cli, good_py = damaged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", store.SkippedRunsWarning)
        df = store.list_runs(root)
    assert df["run_id"].tolist() == sorted([good_cli.name, good_py.name])
    assert len(df.attrs["skipped"]) == 5
    assert set(df["backend"]) == {"posix"}
    row = df.iloc[0]
    assert row["benchmarks"] == "fillseq,flush,readrandom" and row["threads"] == 1
    assert row["qps"] == pytest.approx(3000 / 2.0)  # readrandom's, the last measuring step
    assert row["wall_s"] > 0 and row["status"] == "complete"


def test_one_backend_label_whatever_the_entry_point(damaged):
    root, _, _ = damaged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", store.SkippedRunsWarning)
        cat = store.catalog(root)
    assert set(cat["backend"]) == {"posix"}  # rxlab://posix from the CLI, posix from Python
    assert cat.groupby("backend").size().to_dict() == {"posix": 6}
    for uri, label in (("rxlab://posix", "posix"), ("posix", "posix"),
                       (" rxlab://io_uring?sqpoll=1 ", "io_uring?sqpoll=1"),
                       ("rxlab://io_uring?registered_files=1&fixed_buffers=1",
                        "io_uring?registered_files=1&fixed_buffers=1"),
                       ("default?io_uring=1", "default?io_uring=1"), ("default", "default"),
                       ("rxlab://libaio?", "libaio"), (None, None), (float("nan"), None), ("", None)):
        assert metrics.backend_label(uri) == label, uri
    assert store.run_metadata({"spec": {"fs_uri": "rxlab://libaio"}})["backend"] == "libaio"


def test_run_summary_of_fio_and_of_steps_without_a_measuring_one():
    fio = pd.DataFrame([{"name": "randread", "job": "0", "ops": 500, "wall_s": 1.0},
                        {"name": "randread", "job": "total", "ops": 1000, "wall_s": 1.0}])
    s = store.run_summary({"spec": {"tool": "rxlab-fio", "rw": "randread", "bs": 8192, "iodepth": 32,
                                    "numjobs": 2, "backend": "io_uring"}, "duration_s": 1.5}, fio)
    assert s == {"backend": "io_uring", "benchmarks": "rxlab-fio randread 8192 qd32", "threads": 2,
                 "qps": 1000.0, "wall_s": 1.0}  # the measured second, not the time it took to store
    prep = pd.DataFrame([step("fillseq", ops=100, wall_s=1.0), step("flush", ops=1, wall_s=0.5)])
    s = store.run_summary({"spec": {"backend": "rxlab://posix"}}, prep)
    assert s["qps"] == 100.0 and s["wall_s"] == 1.5 and s["benchmarks"] == "fillseq,flush"
    assert store.run_summary({}, pd.DataFrame())["qps"] != store.run_summary({}, pd.DataFrame())["qps"]  # NaN
