"""rxlab.studies.async_io: parameters, a real tiny study (RocksDB on posix, io_uring and RocksDB's own FS),
the overlap verdicts against the backends' counters, the tables with the page's rows, figures.

The study runs once for the module at smoke size with 0.1 s steps (a few seconds). Assertions are on
counters and structure (which reads were in flight together, which ReadAsync reached Poll), never on timing.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from rxlab.core import figures, store
from rxlab.studies.async_io import study as A

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
        (
            {"backends": ["posix", "posix"]},
            "backends=['posix', 'posix']: expected a non-empty list of distinct",
        ),
        ({"backends": ["io_uring?delay_us=5"]}, "give the delay through the delay_us parameter"),
        ({"delay_us": [-5]}, "delay_us=[-5]: expected a non-empty list of distinct integers 0..100000"),
        (
            {"batch_sizes": [0, 8]},
            "batch_sizes=[0, 8]: expected a non-empty list of distinct integers 1..1024",
        ),
        ({"seek_nexts": 0}, "seek_nexts=0: expected None"),
        ({"threads": 0}, "threads=0: expected an integer 1..64"),
        ({"repeats": 0}, "repeats=0: expected None"),
        ({"duration": -1}, "duration=-1: expected None"),
        ({"backends": ["default"], "delay_us": [0, 100]}, "delay_us=[0, 100]: delays need an rxlab engine"),
        ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are scale, backends"),
    ],
)
def test_a_bad_parameter_fails_in_one_line(kw, message):
    with pytest.raises(ValueError) as e:
        A.Params.checked(**{"scale": "smoke", **kw})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_settings_and_configurations_follow_the_page():
    p = A.Params.checked(
        scale="smoke", backends=["posix", "default", "io_uring"], delay_us=[0, 100], batch_sizes=[8, 1]
    )
    s = p.settings()
    assert s.batch_sizes == (1, 8) and s.multiread_stride == s.num // 125  # the page's 5000000 / 40000
    # the default file system has no delay knob: it runs at 0 only
    assert p.configurations() == [
        ("posix", 0),
        ("default", 0),
        ("io_uring", 0),
        ("posix", 100),
        ("io_uring", 100),
    ]
    assert A.Params.checked(scale="smoke").backends == A.DEFAULT_BACKENDS
    steps = A.step_plan(s)
    labels = [st["label"] for st in steps]
    assert labels == [A.GET_LOOP, A.MULTIGET, A.MULTIGET, A.MULTIGET_ASYNC, A.SCAN_SYNC, A.SCAN_ASYNC]
    assert all(st["multiread_batched"] for st in steps if st["name"] == "multireadrandom")
    pl = A.plan(p)
    assert pl["run"].tolist() == ["build"] + ["read"] * 5
    assert A.with_delay("io_uring?sqpoll=1", 5) == "io_uring?sqpoll=1&delay_us=5"


def test_reference_configurations_name_what_each_default_is():
    t = A.reference_configurations()
    assert "returns false" in t.loc["default", "file system"]
    assert "returns true" in t.loc["default?io_uring=1", "file system"]
    assert "pread" in t.loc["posix", "MultiRead"]


def test_parse_sstables():
    text = (
        "--- level 0 --- version# 3 ---\n 12:1000[a .. b]\n 13:2000[c .. d]\n"
        "--- level 6 --- version# 3 ---\n 9:110622955['00' seq:0, type:1 .. '01' seq:0, type:1](0)\n"
    )
    t = A.parse_sstables(text)
    assert t.to_dict("records") == [
        {"level": 0, "file": "000012.sst", "size_bytes": 1000},
        {"level": 0, "file": "000013.sst", "size_bytes": 2000},
        {"level": 6, "file": "000009.sst", "size_bytes": 110622955},
    ]


# --------------------------------------------------------------------------- a real study


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("asyncio-runs")
    p = A.Params.checked(
        scale="smoke",
        backends=["posix", "io_uring", "default"],
        delay_us=[0],
        batch_sizes=[1, 8],
        seek_nexts=256,
        duration=0.1,
    )
    return A.run_study(p, root=root, progress=False)


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
    s = A.db_structure_table(study)
    assert s[s["source"] == "local"]["files"].tolist() == [1]
    assert s[s["source"] == "published"]["files"].sum() == 46  # 4 L0 files + 6 + 13 + 23
    kinds = {store.load_run(r).spec.get("kind") for r in study.runs}
    assert kinds == {"build", "read"}
    assert len(study.frame) == 3 * 6


def test_multiget_overlap_comes_from_multiread_on_io_uring_only(study):
    u = _step(study, "io_uring", A.MULTIGET, 8)
    assert u["fs.multireads"] > 0 and u["fs.max_inflight"] > 1 and u["overlap"] == "yes"
    p = _step(study, "posix", A.MULTIGET, 8)
    assert p["fs.multireads"] > 0 and p["fs.max_inflight"] == 1 and p["overlap"] == "no"
    d = _step(study, "default", A.MULTIGET, 8)
    assert d["overlap"] == "unknown"  # RocksDB's own FS: no rxlab counters
    g = _step(study, "io_uring", A.GET_LOOP)
    assert g["fs.max_inflight"] == 1 and g["overlap"] == "no"
    # async_io on MultiGet: no coroutines, so nothing asynchronous reached the file system
    a = _step(study, "io_uring", A.MULTIGET_ASYNC, 8)
    assert a["fs.read_async"] == 0 and "coroutines" in a["notes"]
    # p95 is computed from the step's own histogram and lies between p50 and p99
    assert u["p50_us"] <= u["p95_us"] <= u["p99_us"] * 1.001


def test_scan_async_io_reaches_read_async_and_poll(study):
    u = _step(study, "io_uring", A.SCAN_ASYNC)
    assert u["fs.read_async"] > 0 and u["fs.polls"] > 0 and u["overlap"] == "yes"
    for b in ("posix", "io_uring"):
        s = _step(study, b, A.SCAN_SYNC)
        assert s["fs.read_async"] == 0 and s["overlap"] == "no"
    p = _step(study, "posix", A.SCAN_ASYNC)
    assert p["fs.read_async"] > 0 and p["overlap"] == "no"  # served inline: no overlap claimed
    d = _step(study, "default", A.SCAN_ASYNC)
    assert d["overlap"] == "no" and "not used" in d["overlap_evidence"]  # io_uring off: synchronous fallback


def test_tables_put_the_page_beside(study):
    mg = A.multiget_table(study)
    pub = mg[mg["source"] == "published"].set_index("api")
    assert pub.loc["MultiGet single-file", "micros_per_key"] == pytest.approx(1291.992)
    assert pub.loc["MultiGet multi-level", "p95_us"] == pytest.approx(7356.182075)
    loc = mg[mg["source"] == "local"]
    # the Get loop at b keys per op: b Gets; per key the same as b = 1
    g1 = loc[(loc["api"] == "Get loop") & (loc["backend"] == "posix") & (loc["batch_size"] == 1)].iloc[0]
    g8 = loc[(loc["api"] == "Get loop") & (loc["backend"] == "posix") & (loc["batch_size"] == 8)].iloc[0]
    assert g8["us_per_op"] == pytest.approx(8 * g1["us_per_op"])
    assert g8["micros_per_key"] == g1["micros_per_key"] and np.isnan(g8["p50_us"])
    sc = A.scan_table(study)
    ps = sc[sc["source"] == "published"]
    assert ps["speedup"].dropna().iloc[0] == pytest.approx(848858.669 / 414442.303)
    assert set(sc.loc[sc["source"] == "local", "overlap"]) <= {"yes", "no", "unknown"}
    lim = A.limits_table(study)
    assert lim["here"].str.contains("no local counterpart").sum() == 2
    text = A.findings(study)
    assert "no local counterpart" in text and "2.05x" in text


def test_load_study_finds_it_again(study):
    again = A.load_study(study.root)
    assert again is not None and again.study == study.study
    assert len(again.frame) == len(study.frame) and len(again.structure) == 1
    assert A.load_study(study.root, study="nosuch") is None


def test_figures_carry_the_runs_and_the_page(study, tmp_path):
    for stem, fn in (
        ("asyncio_multiget", A.fig_multiget),
        ("asyncio_scan", A.fig_scan),
        ("asyncio_latency", A.fig_latency),
    ):
        paths = figures.save(fn(study), stem, runs=study.runs, published=A.PUBLISHED, directory=tmp_path)
        side = json.loads(paths["json"].read_text())
        assert side["runs"] and any(A.SEED_FILE in s for s in side["published_sources"])
        assert all(paths[e].stat().st_size > 0 for e in ("pdf", "svg", "png"))


def test_a_frame_without_asyncio_runs_is_empty():
    assert A.study_frame(pd.DataFrame({"run_id": []})).empty
