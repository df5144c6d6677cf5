"""rxlab.core.store: complete runs round-trip; failed and killed runs never look complete."""
from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from rxlab.core import metrics, store  # noqa: E402

REPO = Path(__file__).resolve().parents[2]

FP = {"hostname": "testhost", "kernel": "6.x", "cpu_model": "cpu", "cores": 2,
      "device": {"disk": "vda", "model": "virtio", "fstype": "ext4", "scheduler": "none"},
      "rocksdb_build": {"version": "9.10.0", "key": "9.10.0-gcc12"}, "git_commit": "unknown",
      "rxlab_version": "0.1.0"}


def step(name, ops=1000, **kw):
    row = {"name": name, "ops": ops, "wall_s": 2.0, "lat_mean_us": 50.0, "cpu_user_s": 0.01,
           "cpu_sys_s": 0.005, "disk_reads": 400, "disk_read_sectors": 6400, "disk_read_ticks_ms": 20,
           "disk_writes": 0, "disk_write_sectors": 0, "disk_write_ticks_ms": 0}
    row.update(kw)
    return row


def write_run(root, name="io-eff", n=3, **spec):
    with store.RunWriter(root, {"name": name, "backend": "posix", "threads": 1, **spec}, FP) as w:
        for i in range(n):
            w.add_step(step(f"readrandom{i or ''}", ops=1000 * (i + 1)))
    return w


def tree_digest(path: Path) -> dict:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_run_written_and_read_back(tmp_path):
    extra = tmp_path / "fio.json"
    extra.write_text('{"jobs": []}')
    spec = {"name": "IO efficiency / 1 client", "backend": "io_uring", "threads": 1,
            "options": {"block_size": 8192}, "steps": ["fillseq", "readrandom"]}
    with store.RunWriter(tmp_path / "runs", spec, FP) as w:
        assert w.tmp.is_dir() and w.tmp.name.startswith(".tmp-")
        assert json.loads((w.tmp / "run.json").read_text())["status"] == "running"
        i0 = w.add_step(step("fillseq", stats={"rocksdb.block.cache.miss": 3}))
        i1 = w.add_step({**step("readrandom"), "histograms": {"read": [(10.0, 5), (20.0, 7)]},
                         "timeseries": [{"t_s": 0.0, "iops": 100.0}, {"t_s": 1.0, "iops": 120.0}]})
        w.add_histogram("fillseq", "write", [(1.0, 3), (2.0, 1)])
        w.add_timeseries(i0, [{"t_s": 0.0, "iops": 1.0}])
        w.attach(extra)
        assert (i0, i1) == (0, 1)
    assert w.path.name == w.run_id and w.path.is_dir()
    assert "io-efficiency-1-client" in w.run_id
    assert not any(p.name.startswith(".tmp-") for p in (tmp_path / "runs").iterdir())
    meta = json.loads((w.path / "run.json").read_text())
    assert meta["status"] == "complete" and meta["steps"] == 2
    assert meta["spec"] == spec and meta["fingerprint"] == FP
    assert meta["ended_utc"] >= meta["started_utc"]
    assert not (w.path / "parts").exists()

    run = store.load_run(w.run_id[:20], root=tmp_path / "runs")
    assert run.status == "complete" and run.spec == spec
    assert run.steps["name"].tolist() == ["fillseq", "readrandom"]
    assert run.steps["step"].tolist() == [0, 1]
    assert run.steps.loc[0, "stats.rocksdb.block.cache.miss"] == 3
    h = run.histograms
    assert set(h.columns) >= {"step", "name", "op", "upper_us", "count"}
    assert h[h.op == "read"]["count"].tolist() == [5, 7]
    assert h[h.op == "write"]["step"].unique().tolist() == [0]
    assert len(run.timeseries) == 3 and set(run.timeseries["step"]) == {0, 1}
    assert [p.name for p in run.attachments] == ["fio.json"]

    cat = store.catalog(tmp_path / "runs")
    assert len(cat) == 2 and (cat["run_id"] == w.run_id).all()
    assert {"host", "kernel", "backend", "device", "rocksdb_version", "spec.threads",
            "spec.options.block_size"} <= set(cat.columns)
    assert cat["backend"].unique().tolist() == ["io_uring"]
    assert "spec.steps" not in cat.columns
    view = store.seed_view(cat)
    derived = [*metrics.SEED_COLUMNS, *metrics.EXTRA_COLUMNS]
    assert list(view.columns[-len(derived):]) == derived
    assert view["qps"].tolist() == [500.0, 500.0]
    assert view["reqsz"].tolist() == [8.0, 8.0]
    eff = store.seed_view(cat, baseline=step("fio", ops=800, disk_reads=800))
    assert eff["io.eff"].tolist() == [0.5, 0.5]


def test_catalog_of_several_runs_and_explicit_selection(tmp_path):
    a = write_run(tmp_path, "a", n=2)
    b = write_run(tmp_path, "b", n=3, threads=6)
    cat = store.catalog(tmp_path)
    assert len(cat) == 5
    assert cat.groupby("run_id").size().to_dict() == {a.run_id: 2, b.run_id: 3}
    assert sorted(cat["spec.threads"].unique()) == [1, 6]
    only_b = store.catalog(tmp_path, runs=[b.run_id])
    assert len(only_b) == 3
    by_path = store.catalog(runs=[a.path])
    assert len(by_path) == 2
    assert store.list_runs(tmp_path)["run_id"].tolist() == sorted([a.run_id, b.run_id])
    with pytest.raises(KeyError):
        store.load_run("nope", root=tmp_path)


def test_empty_and_default_root(tmp_path, monkeypatch):
    assert store.catalog(tmp_path / "none").empty
    monkeypatch.setenv("RXLAB_RUNS", str(tmp_path / "env-runs"))
    assert store.default_root() == tmp_path / "env-runs"
    w = write_run(None, "via-env", n=1)
    assert w.path.parent == tmp_path / "env-runs"
    assert len(store.catalog()) == 1
    monkeypatch.delenv("RXLAB_RUNS")
    assert store.default_root() == REPO / "data" / "runs"


class Boom(RuntimeError):
    pass


def test_exception_leaves_failed_dir_that_catalog_ignores(tmp_path):
    good = write_run(tmp_path, "good", n=1)
    before = tree_digest(good.path)
    with pytest.raises(Boom, match="device vanished"), store.RunWriter(tmp_path, {"name": "bad"}, FP) as w:
        w.add_step(step("fillseq"))
        w.add_step(step("readrandom"))
        raise Boom("device vanished")
    assert w.path.name == ".failed-" + w.run_id and w.path.is_dir()
    meta = json.loads((w.path / "run.json").read_text())
    assert meta["status"] == "failed" and meta["error"]["type"] == "Boom"
    assert "device vanished" in meta["error"]["message"] and "Traceback" in meta["error"]["traceback"]
    # what was measured before the failure is kept for the post-mortem
    run = store.load_run(w.path)
    assert run.status == "failed" and run.steps["name"].tolist() == ["fillseq", "readrandom"]
    cat = store.catalog(tmp_path)
    assert cat["run_id"].unique().tolist() == [good.run_id]
    with pytest.raises(ValueError, match="not complete"):
        store.catalog(tmp_path, runs=[w.path])
    assert tree_digest(good.path) == before


def test_bad_input_fails_the_run_cleanly(tmp_path):
    with pytest.raises(ValueError, match="name"), store.RunWriter(tmp_path, {"name": "x"}, FP) as w:
        w.add_step({"ops": 1})
    assert w.path.name.startswith(".failed-")
    with pytest.raises(RuntimeError, match="context manager"):
        store.RunWriter(tmp_path, {"name": "y"}, FP).add_step(step("a"))
    assert store.catalog(tmp_path).empty


def test_mixed_types_in_a_column_still_write(tmp_path):
    with store.RunWriter(tmp_path, {"name": "mixed"}, FP) as w:
        w.add_step(step("a", note=1, flag=True, tag="x", lst=[1.0, 2.0]))
        w.add_step(step("b", note="n/a", flag=3, tag=None, lst=[3.0]))
    run = store.load_run(w.run_id, root=tmp_path)
    assert run.steps["note"].tolist() == ["1", "n/a"]
    assert run.steps["flag"].tolist() == [1.0, 3.0]
    assert [list(x) for x in run.steps["lst"]] == [[1.0, 2.0], [3.0]]


CHILD = textwrap.dedent("""
    import sys, time, types
    from pathlib import Path
    repo = Path(sys.argv[1])
    try:
        import rxlab
    except ImportError:
        pkg = types.ModuleType("rxlab"); pkg.__path__ = [str(repo / "rxlab")]; sys.modules["rxlab"] = pkg
    from rxlab.core.store import RunWriter
    root, mode = sys.argv[2], sys.argv[3]
    fp = {"hostname": "child"}
    if mode == "pause":
        with RunWriter(root, {"name": "killed"}, fp) as w:
            for i in range(3):
                w.add_step({"name": f"s{i}", "ops": i, "wall_s": 1.0})
            print("ready", flush=True)
            time.sleep(60)
    else:  # write runs back to back until killed
        print("ready", flush=True)
        i = 0
        while True:
            with RunWriter(root, {"name": f"loop{i}"}, fp) as w:
                for j in range(4):
                    w.add_step({"name": f"s{j}", "ops": j, "wall_s": 1.0,
                                "histograms": {"read": [(1.0, j), (2.0, 1)]}})
            i += 1
""")


def _spawn(tmp_path, root, mode):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    p = subprocess.Popen([sys.executable, str(script), str(REPO), str(root), mode],
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.strip() == "ready", line
    return p


def test_sigkill_mid_run_leaves_nothing_the_catalog_accepts(tmp_path):
    root = tmp_path / "runs"
    earlier = write_run(root, "earlier", n=2)
    before = tree_digest(earlier.path)
    p = _spawn(tmp_path, root, "pause")
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    p.stdout.close()
    assert p.returncode == -signal.SIGKILL
    tmps = [d for d in root.iterdir() if d.name.startswith(".tmp-")]
    assert len(tmps) == 1
    assert not store.is_complete(tmps[0])
    cat = store.catalog(root)
    assert cat["run_id"].unique().tolist() == [earlier.run_id]
    assert tree_digest(earlier.path) == before
    # every step added before the kill survives in the parts
    crashed = store.load_run(tmps[0])
    assert crashed.status == "incomplete"
    assert crashed.steps["name"].tolist() == ["s0", "s1", "s2"]


def test_sigkill_at_random_moments_never_yields_a_partial_complete_run(tmp_path):
    root = tmp_path / "runs"
    earlier = write_run(root, "earlier", n=2)
    before = tree_digest(earlier.path)
    rng = random.Random(1234)
    for _ in range(4):
        p = _spawn(tmp_path, root, "loop")
        time.sleep(rng.uniform(0.05, 0.6))
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        p.stdout.close()
    for d in root.iterdir():
        if d.name.startswith("."):
            assert d.name.startswith(".tmp-"), d.name  # never .failed-: nothing raised
            continue
        assert store.is_complete(d), d
        run = store.load_run(d)
        if d == earlier.path:
            continue
        # a complete run has all its steps and histograms, never part of them
        assert run.steps["name"].tolist() == ["s0", "s1", "s2", "s3"]
        assert len(run.histograms) == 8
    cat = store.catalog(root)
    sizes = cat.groupby("run_id").size()
    assert set(sizes) <= {2, 4}
    assert (sizes == 4).sum() >= 1, "no run completed between the kills: the test did not test much"
    assert tree_digest(earlier.path) == before
    assert isinstance(cat, pd.DataFrame)
