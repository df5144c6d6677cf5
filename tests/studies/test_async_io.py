"""rxlab.studies.async_io: parameters, a real tiny study (RocksDB on posix, io_uring and RocksDB's own FS),
the overlap verdicts against the backends' counters, the tables with the page's rows, figures.

The study runs once for the module at smoke size with 0.1 s steps (a few seconds). Assertions are on
counters and structure (which reads were in flight together, which ReadAsync reached Poll), never on timing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures

from rxlab.core import store
from rxlab.core.study import manifest
from rxlab.studies.async_io import STUDY, params
from rxlab.studies.async_io.overlap import overlap
from rxlab.studies.async_io.params import GET_LOOP, MULTIGET, MULTIGET_ASYNC, SCAN_ASYNC, SCAN_SYNC
from rxlab.studies.async_io.study import parse_sstables, step_plan

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


# --------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
        ({"backends": ["nosuch"]}, "backends='nosuch': unknown engine 'nosuch'"),
        ({"backends": ["posix", "posix"]},
         "backends=['posix', 'posix']: expected a non-empty list of distinct"),
        ({"backends": ["io_uring?delay_us=5"]}, "give the delay through the delay_us parameter"),
        ({"delay_us": [-5]}, "delay_us=[-5]: expected a non-empty list of distinct integers 0..100000"),
        ({"batch_sizes": [0, 8]},
         "batch_sizes=[0, 8]: expected a non-empty list of distinct integers 1..1024"),
        ({"seek_nexts": 0}, "seek_nexts=0: expected None"),
        ({"threads": 0}, "threads=0: expected an integer 1..64"),
        ({"repeats": 0}, "repeats=0: expected None"),
        ({"duration": -1}, "duration=-1: expected None"),
        ({"backends": ["default"], "delay_us": [0, 100]}, "delay_us=[0, 100]: delays need an rxlab engine"),
        ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are scale, backends"),
    ],
)
def test_a_bad_parameter_fails_in_one_line(kw, message):
    assert message in refusal(STUDY, **kw)


def test_settings_and_configurations_follow_the_page():
    p = STUDY.params(scale="smoke", backends=["posix", "default", "io_uring"], delay_us=[0, 100],
                     batch_sizes=[8, 1])
    s = p.settings()
    assert s.batch_sizes == (1, 8) and s.multiread_stride == s.num // 125  # the page's 5000000 / 40000
    # the default file system has no delay knob: it runs at 0 only
    assert p.configurations() == [("posix", 0), ("default", 0), ("io_uring", 0), ("posix", 100),
                                  ("io_uring", 100)]
    assert STUDY.params(scale="smoke").backends == params.default_backends()
    mixed = STUDY.params(scale="smoke", backends=["default", "io_uring?sqpoll=1"])
    assert mixed.build_backend() == "io_uring"   # the DB is loaded by an rxlab engine
    steps = step_plan(s)
    labels = [st["label"] for st in steps]
    assert labels == [GET_LOOP, MULTIGET, MULTIGET, MULTIGET_ASYNC, SCAN_SYNC, SCAN_ASYNC]
    assert all(st["multiread_batched"] for st in steps if st["name"] == "multireadrandom")
    pl = STUDY.plan(p)
    assert pl["run"].tolist() == ["build"] + ["read"] * 5
    assert pl["rep"].isna().tolist() == [True] + [False] * 5   # the build belongs to no repetition
    assert params.with_delay("io_uring?sqpoll=1", 5) == "io_uring?sqpoll=1&delay_us=5"


def test_the_plan_rotates_the_configurations_each_repetition():
    p = STUDY.params(scale="smoke", backends=["posix", "io_uring"], delay_us=[0], repeats=2)
    reads = STUDY.plan(p).query("run == 'read'")
    order = reads.groupby("rep")["backend"].apply(list).tolist()
    assert order == [["posix", "io_uring"], ["io_uring", "posix"]]


def test_reference_configurations_name_what_each_default_is():
    t = params.reference_configurations()
    assert "returns false" in t.loc["default", "file system"]
    assert "returns true" in t.loc["default?io_uring=1", "file system"]
    assert "pread" in t.loc["posix", "MultiRead"]
    uri = params.reference_configurations(["io_uring?sqpoll=1"])   # a URI is its engine
    assert uri.iloc[0]["ReadAsync"] == "submitted, reaped by Poll"


def test_parse_sstables():
    text = (
        "--- level 0 --- version# 3 ---\n 12:1000[a .. b]\n 13:2000[c .. d]\n"
        "--- level 6 --- version# 3 ---\n 9:110622955['00' seq:0, type:1 .. '01' seq:0, type:1](0)\n"
    )
    assert parse_sstables(text).to_dict("records") == [
        {"level": 0, "file": "000012.sst", "size_bytes": 1000},
        {"level": 0, "file": "000013.sst", "size_bytes": 2000},
        {"level": 6, "file": "000009.sst", "size_bytes": 110622955},
    ]


def test_the_verdict_claims_overlap_only_from_the_counters():
    scan = {"name": SCAN_ASYNC, "async_io": True, "fs.read_async": 10, "fs.async_completed": 10,
            "fs.polls": 4}
    assert overlap(scan, "io_uring")[0] == "yes"
    assert overlap(scan, "posix?delay_us=5")[0] == "no"   # posix serves ReadAsync inline
    assert overlap({**scan, "fs.polls": 0}, "libaio")[0] == "no"
    assert overlap({**scan, "async_io": False}, "io_uring") == ("no", "async_io off: synchronous prefetch")
    assert overlap({"name": SCAN_ASYNC, "async_io": True, "ticker.rocksdb.read.async.micros": 5.0},
                   "default?io_uring=1")[0] == "unknown"
    mg = {"name": MULTIGET, "fs.max_inflight": 8, "fs.multireads": 2, "fs.multiread_reqs": 16}
    assert overlap(mg, "libaio") == ("yes", "up to 8 reads in flight in 2 MultiRead calls (16 reads)")
    assert overlap({**mg, "fs.max_inflight": np.nan}, "io_uring")[0] == "no"
    assert overlap(mg, "default")[0] == "unknown"


# --------------------------------------------------------------------------- a real study


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("asyncio-runs")
    p = STUDY.params(scale="smoke", backends=["posix", "io_uring", "default"], delay_us=[0],
                     batch_sizes=[1, 8], seek_nexts=256, duration=0.1,
                     db_dir=str(tmp_path_factory.mktemp("asyncio-db")))
    return STUDY.run(p, root=root, progress=False)


def _step(result, backend, test, batch=None):
    f = result.frame
    m = (f["backend"] == backend) & (f["test"] == test)
    if batch is not None:
        m &= f["batch_size"] == batch
    rows = f[m]
    assert len(rows) == 1, (backend, test, batch, len(rows))
    return rows.iloc[0]


def test_every_run_is_stored_and_the_db_was_one_sst(study):
    assert len(study.runs) == 1 + 3  # the build and one run per backend
    assert all(store.is_complete(r) for r in study.runs)
    assert len(study.structure) == 1  # one SST file: a MultiGet batch lands in one file
    s = STUDY.table("db_structure", study)
    assert s[s["source"] == "local"]["files"].tolist() == [1]
    assert s[s["source"] == "published"]["files"].sum() == 46  # 4 L0 files + 6 + 13 + 23
    kinds = {store.load_run(r).spec.get("kind") for r in study.runs}
    assert kinds == {"build", "read"}
    assert len(study.frame) == 3 * 6
    build = [r for r in study.runs if store.load_run(r).spec.get("kind") == "build"]
    assert set(study.frame["build_run"]) == {build[0].name}
    m = manifest(study.root, study.study)
    assert m["status"] == "complete" and m["study"] == "async_io" and len(m["runs"]) == 4
    # the DB is gone, the results stay
    assert not list(Path(study.params.db_dir).iterdir())


def test_multiget_overlap_comes_from_multiread_on_io_uring_only(study):
    u = _step(study, "io_uring", MULTIGET, 8)
    assert u["fs.multireads"] > 0 and u["fs.max_inflight"] > 1 and u["overlap"] == "yes"
    p = _step(study, "posix", MULTIGET, 8)
    assert p["fs.multireads"] > 0 and p["fs.max_inflight"] == 1 and p["overlap"] == "no"
    d = _step(study, "default", MULTIGET, 8)
    assert d["overlap"] == "unknown"  # RocksDB's own FS: no rxlab counters
    g = _step(study, "io_uring", GET_LOOP)
    assert g["fs.max_inflight"] == 1 and g["overlap"] == "no"
    # async_io on MultiGet: no coroutines, so nothing asynchronous reached the file system
    a = _step(study, "io_uring", MULTIGET_ASYNC, 8)
    assert a["fs.read_async"] == 0 and "coroutines" in a["notes"]
    # p95 is computed from the step's own histogram and lies between p50 and p99
    assert u["p50_us"] <= u["p95_us"] <= u["p99_us"] * 1.001


def test_scan_async_io_reaches_read_async_and_poll(study):
    u = _step(study, "io_uring", SCAN_ASYNC)
    assert u["fs.read_async"] > 0 and u["fs.polls"] > 0 and u["overlap"] == "yes"
    for b in ("posix", "io_uring"):
        s = _step(study, b, SCAN_SYNC)
        assert s["fs.read_async"] == 0 and s["overlap"] == "no"
    p = _step(study, "posix", SCAN_ASYNC)
    assert p["fs.read_async"] > 0 and p["overlap"] == "no"  # served inline: no overlap claimed
    d = _step(study, "default", SCAN_ASYNC)
    assert d["overlap"] == "no" and "not used" in d["overlap_evidence"]  # io_uring off: synchronous fallback


def test_tables_put_the_page_beside(study):
    mg = STUDY.table("multiget", study)
    pub = mg[mg["source"] == "published"].set_index("api")
    assert pub.loc["MultiGet single-file", "micros_per_key"] == pytest.approx(1291.992)
    assert pub.loc["MultiGet multi-level", "p95_us"] == pytest.approx(7356.182075)
    loc = mg[mg["source"] == "local"]
    assert list(dict.fromkeys(loc["backend"])) == ["posix", "io_uring", "default"]   # the order given
    # the Get loop at b keys per op: b Gets; per key the same as b = 1
    g1 = loc[(loc["api"] == "Get loop") & (loc["backend"] == "posix") & (loc["batch_size"] == 1)].iloc[0]
    g8 = loc[(loc["api"] == "Get loop") & (loc["backend"] == "posix") & (loc["batch_size"] == 8)].iloc[0]
    assert g8["us_per_op"] == pytest.approx(8 * g1["us_per_op"])
    assert g8["micros_per_key"] == g1["micros_per_key"] and np.isnan(g8["p50_us"])
    sc = STUDY.table("scan", study)
    ps = sc[sc["source"] == "published"]
    assert ps["speedup"].dropna().iloc[0] == pytest.approx(848858.669 / 414442.303)
    assert set(sc.loc[sc["source"] == "local", "overlap"]) <= {"yes", "no", "unknown"}
    assert (sc.loc[sc["source"] == "local", "seek_nexts"] == 256).all()
    lat = STUDY.table("latency", study)
    assert set(lat["api"]) == {"MultiGet", "MultiGet async_io", "MultiGet single-file",
                               "MultiGet single-level", "MultiGet multi-level"}
    lim = STUDY.table("limits", study)
    assert lim["here"].str.contains("no local counterpart").sum() == 2
    assert list(STUDY.table("backends", study).index) == ["posix", "io_uring", "default"]
    text = STUDY.findings(study)
    assert "no local counterpart" in text and "2.05x" in text and "single-level (775 us/op)" in text


def test_load_finds_it_again(study):
    again = STUDY.load(study.root)
    assert again is not None and again.study == study.study
    assert len(again.frame) == len(study.frame) and len(again.structure) == 1
    assert STUDY.load(study.root, study="nosuch") is None
    assert STUDY.load(study.root, scale="full") is None


def test_each_figure_is_drawn_from_its_table_alone(study, tmp_path):
    assert list(STUDY.figures) == ["asyncio_multiget", "asyncio_scan", "asyncio_latency"]
    for s in saved_figures(STUDY, study, tmp_path):
        assert "published" in set(s.table["kind"])
        assert s.again.axes and any(ax.lines or ax.patches for ax in s.again.axes)
    mg = pd.read_csv(tmp_path / "asyncio_multiget.csv")
    assert set(mg["kind"]) == {"median", "rep", "published"}
    assert set(mg.loc[mg["kind"] == "median", "api"]) == {"MultiGet", "Get loop"}
    sc = pd.read_csv(tmp_path / "asyncio_scan.csv")
    page = sc[(sc["kind"] == "published") & (sc["metric"] == "speedup")]["value"]
    assert page.tolist() == [pytest.approx(848858.669 / 414442.303)]
    lat = pd.read_csv(tmp_path / "asyncio_latency.csv")
    assert "MultiGet async_io" not in set(lat["api"]) and (lat["batch_size"] == 8).all()


def test_the_study_is_registered_and_its_outputs_are_written(study, tmp_path):
    out = registered_outputs(STUDY, study, tmp_path)
    assert {f"async_io_{t}.{x}" for t in STUDY.tables for x in ("tex", "md", "csv")} <= out.tables
    assert "2.05x" in out.findings


def test_a_frame_without_asyncio_runs_is_empty(tmp_path):
    assert STUDY.frame(pd.DataFrame({"run_id": []})).empty
    with store.RunWriter(tmp_path, {"name": "not-an-asyncio-run", "backend": "posix", "kind": "read"},
                         {"hostname": "h"}) as w:
        w.add_step({"name": "readrandom", "ops": 1, "wall_s": 1.0})
    assert STUDY.frame(store.catalog(tmp_path)).empty
    assert STUDY.load(tmp_path) is None
