"""The start-here study (notebook 00) in the Study protocol, and its "try it" panel without a browser.

Real runs at smoke scale (20,000 keys: a second or two each) in a tmp store.
"""

from __future__ import annotations

import pytest
from helpers_studies import refusal

from rxlab import studies
from rxlab.studies import quickstart
from rxlab.studies.quickstart import tryit

pytestmark = pytest.mark.timeout(600)
STUDY = quickstart.STUDY


def test_it_is_a_registered_study_of_notebook_00():
    assert studies.get("quickstart") is STUDY and studies.get("00") is STUDY
    assert studies.names()[0] == "quickstart" and STUDY.notebook == "00_start_here"
    p = STUDY.params(scale="smoke", backend="io_uring?sqpoll=1", threads=2, workload="seekrandom")
    plan = STUDY.plan(p)
    assert plan.to_dict("records") == [
        {"backend": "io_uring?sqpoll=1", "workload": "seekrandom", "threads": 2}
    ]
    spec = p.spec("/tmp/x", name="n")
    assert [s if isinstance(s, str) else s["name"] for s in spec.steps] == ["fillseq", "flush", "seekrandom"]
    assert spec.num == quickstart.SCALE_KEYS["smoke"] and spec.reads == 1000 and spec.threads == 2
    seq = STUDY.params(scale="smoke", workload="readseq").spec("/tmp/x")
    assert seq.steps[-1] == {"name": "readseq", "duration": 0, "ops": quickstart.SCALE_KEYS["smoke"]}


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
        ({"backend": "nosuch"}, "backend='nosuch': unknown engine 'nosuch'"),
        ({"threads": 0}, "threads=0: expected one integer 1..64"),
        (
            {"workload": "mixgraph"},
            "workload='mixgraph': allowed are readrandom, multireadrandom, seekrandom",
        ),
        ({"colour": 1}, "unknown parameter 'colour': allowed are scale, backend, threads, workload, db_dir"),
    ],
)
def test_bad_parameters_are_one_line(kw, message):
    assert refusal(STUDY, **kw).startswith(message)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    root = tmp_path_factory.mktemp("quickstart") / "runs"
    seen = []
    r = STUDY.run(
        STUDY.params(scale="smoke", backend="posix", threads=2),
        root,
        progress=False,
        live=lambda partial: seen.append(STUDY.live_table(partial)),
    )
    r.live = seen
    return r


def test_a_run_is_stored_under_a_study_id_and_read_back(result):
    assert len(result.runs) == 1 and result.runs[0].name.endswith(f"start-{result.study.lower()}-readrandom")
    f = result.frame
    assert list(f.columns[:6]) == ["study", "backend", "workload", "threads", "test", "run_id"]
    assert f["test"].tolist() == ["fillseq", "flush", "readrandom"] and set(f["threads"]) == {2}
    rr = f[f["test"] == "readrandom"].iloc[0]
    assert rr["qps"] > 0 and rr["cpuPer"] > 0 and rr["ops"] == 2 * 1000
    loaded = STUDY.load(result.root)
    assert loaded is not None and loaded.study == result.study and STUDY.complete(loaded.frame)
    assert len(result.live) == 1 and list(result.live[0]["test"]) == ["fillseq", "flush", "readrandom"]


def test_its_tables_and_findings(result):
    steps = STUDY.table("steps", result)
    assert list(steps["name"]) == ["fillseq", "flush", "readrandom"]
    assert {"qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "p99_us"} <= set(
        steps.columns
    )
    h = STUDY.table("histogram", result)
    assert set(h["step"]) == {"readrandom"} and set(h["op"]) == {"get"} and h["count"].sum() == 2000
    assert h["cumulative"].iloc[-1] == pytest.approx(1.0) and h["upper_us"].is_monotonic_increasing
    looked = quickstart.look(result.runs[0])
    assert list(looked.index) == ["fillseq", "flush", "readrandom"]
    assert looked.loc["readrandom", "qps"] == pytest.approx(steps.iloc[-1]["qps"])
    assert STUDY.findings(result).startswith("- readrandom on posix with 2 thread(s): ")
    fig = quickstart.latency_figure(result.runs[0])
    assert fig.axes[0].get_title() == "readrandom on posix, 2 thread(s)"
    assert "p50" in " ".join(t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert (
        quickstart.engines_table().index.name == "engine" and "io_uring" in quickstart.engines_table().index
    )


def test_the_panels_choices_come_from_the_engines():
    names = tryit.engine_names()
    assert names[:4] == ["default", "posix", "libaio", "io_uring"] and "sync" not in names  # sync: fio only
    specs = tryit.option_specs("io_uring")
    main = [s.name for s in specs if s.main]
    assert main[:4] == ["delay_us", "jitter_us", "buffer_align", "depth"]
    assert {"sqpoll", "registered_files", "fixed_buffers", "iopoll"} <= set(main)
    assert "fault_eio" in {s.name for s in specs if not s.main}
    assert [s.name for s in tryit.option_specs("default")] == ["io_uring"]
    assert (
        tryit.backend_uri("io_uring", {"sqpoll": "1", "registered_files": "1", "delay_us": "", "depth": "64"})
        == "io_uring?sqpoll=1&registered_files=1"
    )
    assert tryit.backend_uri("posix") == "posix"
    with pytest.raises(ValueError, match=r"^option 'sqpoll': posix takes delay_us, jitter_us"):
        tryit.backend_uri("posix", {"sqpoll": "1"})
    with pytest.raises(ValueError, match=r"^engine='sync': allowed are default, posix"):
        tryit.option_specs("sync")


def test_try_run_refuses_a_bad_choice_in_one_line(tmp_path):
    with pytest.raises(ValueError) as e:
        tryit.try_run("posix", {"buffer_align": "100"}, root=tmp_path)
    assert str(e.value).startswith("backend='posix?buffer_align=100': option buffer_align=100 must be")
    assert "\n" not in str(e.value) and not (tmp_path / ".studies").exists()  # refused before any run


def test_the_panel_runs_and_shows_errors_in_one_line(tmp_path):
    pytest.importorskip("ipywidgets")
    p = quickstart.try_it("libaio", threads=1, scale="full", root=tmp_path)
    assert p.scale.value == "small"  # the panel offers smoke and small
    p.scale.value = "smoke"
    p.options["delay_us"].value = "50"
    assert "libaio?delay_us=50" in p.uri.value
    p.workload.value = "multireadrandom"
    r = p.run()
    assert r is p.last and p.error is None and r.backend == "libaio?delay_us=50"
    assert list(r.steps.index) == ["fillseq", "flush", "multireadrandom"]
    assert r.histogram["count"].sum() > 0 and "ops/s" in p.status.value and r.run.parent == tmp_path
    assert p.image.value[:4] == b"\x89PNG" and p.image.layout.display is None  # the histogram, shown
    # the emulated device read latency shows: no read completes before 50 us
    assert r.steps.loc["multireadrandom", "io.lat"] >= 0 and r.histogram["upper_us"].min() >= 50
    p.options["buffer_align"].value = "100"
    assert p.run() is None and p.error.startswith(
        "backend='libaio?delay_us=50&buffer_align=100': option buffer_align=100 must be"
    )
    assert "error:" in p.status.value and "Traceback" not in p.status.value and not p.run_button.disabled
    assert p.image.layout.display == "none"  # no stale histogram
    p.engine.value = "default"
    assert list(p.options) == ["io_uring"] and p.uri.value.endswith("<code>default</code>")
