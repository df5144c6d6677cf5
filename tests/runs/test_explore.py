"""The run explorer (rxlab.runs.explore): its data functions on a real store, its widgets without a browser.

The store holds three real tiny driver runs (fillseq, flush, readrandom; 5,000
keys): two outside any study (posix with 1 thread, io_uring with 2) and one
of the start-here study. tests/runs/bench_explore.py measures the explorer
with 2,000 runs; tests/runs/test_browser.py drives it in JupyterLab.
"""

from __future__ import annotations

import json
import shutil

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from helpers_explore import tiny_run

from rxlab.core import store
from rxlab.runs import explore
from rxlab.runs import figures as saved_figures
from rxlab.runs.explore import data as explore_data
from rxlab.studies import quickstart

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("explore")
    root = tmp / "runs"
    tiny_run(tmp, root, "adhoc-posix", "posix")
    tiny_run(tmp, root, "adhoc-uring", "io_uring?registered_files=1", threads=2)
    quickstart.STUDY.run(quickstart.STUDY.params(scale="smoke", backend="libaio"), root, progress=False)
    return root


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """Every test starts without the explorer's caches (in the process and on disk)."""
    monkeypatch.setenv("RXLAB_EXPLORE_CACHE", str(tmp_path / "cache"))
    explore_data._CACHE.clear()
    yield
    explore_data._CACHE.clear()


@pytest.fixture
def frame(store_dir):
    return explore.runs_frame(store_dir)


def test_the_frame_has_the_explorers_columns_and_tells_studies_apart(frame):
    assert frame["run_id"].nunique() == 3 and len(frame) == 9
    assert list(frame.columns[:13]) == [
        "run_id",
        "step",
        "study",
        "study_id",
        "benchmark",
        "backend",
        "engine",
        "threads",
        "build",
        "host",
        "date",
        "started",
        "scale",
    ]
    runs = frame.drop_duplicates("run_id").set_index("backend")
    assert runs.loc["posix", "study"] == explore.NO_STUDY and pd.isna(runs.loc["posix", "study_id"])
    assert runs.loc["libaio", "study"] == "quickstart" and len(runs.loc["libaio", "study_id"]) == 19
    assert runs.loc["io_uring?registered_files=1", "engine"] == "io_uring"
    for c in ("qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat", "runqPer", "stealPer"):
        assert c in frame.columns, c
    mets = explore.metric_columns(frame)
    assert mets[:8] == ["qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat"]
    assert "fs.reads" in mets and "backend" not in mets


def test_the_catalog_is_read_once_and_a_refresh_reads_only_new_runs(store_dir, tmp_path, monkeypatch):
    f1 = explore.runs_frame(store_dir)
    assert explore.runs_frame(store_dir) is f1  # cached in the process
    cache_files = list((tmp_path / "cache").glob("*.pkl"))
    assert len(cache_files) == 1
    explore_data._CACHE.clear()  # a new session: from the disk cache
    read = []
    monkeypatch.setattr(store, "catalog", lambda *a, **k: read.append(k.get("runs")) or pd.DataFrame())
    f2 = explore.runs_frame(store_dir)
    assert read == [] and f2[["run_id", "step", "qps"]].equals(f1[["run_id", "step", "qps"]])
    monkeypatch.undo()
    monkeypatch.setenv("RXLAB_EXPLORE_CACHE", str(tmp_path / "cache"))
    new = tiny_run(tmp_path, store_dir, "adhoc-late", "posix", threads=4)
    assert explore.runs_frame(store_dir) is f2  # no refresh: the cached frame
    calls = []
    real = store.catalog
    monkeypatch.setattr(store, "catalog", lambda *a, **k: calls.append(k.get("runs")) or real(*a, **k))
    f3 = explore.runs_frame(store_dir, refresh=True)
    assert calls == [[new.name]]  # only the new run was read
    assert f3["run_id"].nunique() == 4 and 4 in set(f3.loc[f3["run_id"] == new.name, "threads"])
    shutil.rmtree(new)
    assert explore.runs_frame(store_dir, refresh=True)["run_id"].nunique() == 3  # a removed run goes


def test_filters(frame):
    opts = explore.choices(frame)
    assert opts["backend"] == ["io_uring?registered_files=1", "libaio", "posix"]
    assert opts["study"] == [explore.NO_STUDY, "quickstart"] and opts["threads"] == [1, 2]
    assert set(explore.filter_runs(frame, backend=["posix"])["backend"]) == {"posix"}
    two = explore.filter_runs(frame, backend=["posix", "libaio"], benchmark=["readrandom"])
    assert len(two) == 2 and set(two["benchmark"]) == {"readrandom"}
    assert set(explore.filter_runs(frame, study=["quickstart"])["backend"]) == {"libaio"}
    assert len(explore.filter_runs(frame, threads=[2], benchmark="readrandom")) == 1
    assert len(explore.filter_runs(frame)) == len(frame) == len(explore.filter_runs(frame, backend=[]))
    day = opts["date"][0]
    assert len(explore.filter_runs(frame, dates=(day, day))) == len(frame)
    assert explore.filter_runs(frame, dates=("1999-01-01", "1999-12-31")).empty
    with pytest.raises(
        ValueError,
        match=r"^backend='nosuch': the store holds io_uring\?registered_files=1, "
        r"libaio, posix$",
    ):
        explore.filter_runs(frame, backend=["nosuch"])
    with pytest.raises(ValueError, match=r"^filter 'colour': allowed are study, benchmark, backend"):
        explore.filter_runs(frame, colour=["red"])
    with pytest.raises(ValueError, match=r"^dates=\('yesterday', 'today'\): expected"):
        explore.filter_runs(frame, dates=("yesterday", "today"))


def test_plot_table_summary_and_drawing(frame):
    shown = explore.filter_runs(frame, benchmark=["readrandom"])
    t = explore.plot_table(shown, "threads", "qps", "backend")
    assert list(t.columns) == ["run_id", "step", "benchmark", "threads", "qps", "backend"] and len(t) == 3
    s = explore.summary_table(t, "threads", "qps", "backend")
    assert list(s.columns[:3]) == ["threads", "backend", "median qps"] and s["runs"].sum() == 3
    posix = t[t["backend"] == "posix"]["qps"].iloc[0]
    assert s.loc[s["backend"] == "posix", "median qps"].iloc[0] == pytest.approx(posix)
    numeric = explore.summary_table(explore.plot_table(frame, "cpuPer", "qps"), "cpuPer", "qps")
    assert "median qps" not in numeric.columns and numeric["qps"].is_monotonic_decreasing
    for x, y, hue in (
        ("threads", "qps", "backend"),
        ("cpuPer", "qps", None),
        ("benchmark", "rx.lat", "study"),
    ):
        fig = explore.draw(explore.plot_table(frame, x, y, hue), x, y, hue)
        assert fig.axes[0].get_title().startswith(f"{y} by {x}")
        assert len(explore.png(fig)) > 5000
    plt.close("all")
    with pytest.raises(ValueError, match=r"^y='nosuch': allowed are qps, iops, reqsz"):
        explore.plot_table(frame, "threads", "nosuch")
    with pytest.raises(ValueError, match=r"^hue='qps': allowed are study, benchmark"):
        explore.plot_table(frame, "threads", "qps", "qps")


def test_the_first_view_is_readrandom_qps_by_backend(frame):
    want = {"benchmark": "readrandom", "x": "backend", "y": "qps", "hue": "threads"}
    assert explore.first_view(frame) == want
    one_thread = frame[frame["threads"] == 1]
    assert explore.first_view(one_thread)["hue"] == "backend"
    loads = frame[frame["benchmark"] != "readrandom"]  # only loads and flushes: nothing measured to pick
    assert explore.first_view(loads)["benchmark"] is None


def test_each_group_has_the_95_interval_of_its_median(store_dir, tmp_path):
    root = tmp_path / "runs"
    shutil.copytree(store_dir, root)
    for i in range(2):  # posix, 1 thread: three readrandom steps in all
        tiny_run(tmp_path, root, f"adhoc-posix-{i}", "posix")
    t = explore.plot_table(explore.filter_runs(explore.runs_frame(root), benchmark=["readrandom"]),
                           "backend", "qps")
    s = explore.summary_table(t, "backend", "qps").set_index("backend")
    assert list(s.columns) == ["median qps", "95% lo", "95% hi", "min qps", "max qps", "steps", "runs"]
    posix = s.loc["posix"]
    assert posix["steps"] == 3 and posix["min qps"] <= posix["95% lo"] <= posix["median qps"]
    assert posix["median qps"] <= posix["95% hi"] <= posix["max qps"] and posix["95% lo"] < posix["95% hi"]
    assert pd.isna(s.loc["libaio", "95% lo"])  # one step: no interval
    fig = explore.draw(t, "backend", "qps", "backend")
    ax = fig.axes[0]
    assert ax.get_title() == "qps by backend: median and its 95% interval"
    # the interval's bar (with its caps): a line from 95% lo to 95% hi
    ys = [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.lines]
    spans = [(np.nanmin(y), np.nanmax(y)) for y in ys if np.isfinite(y).any()]
    assert (posix["95% lo"], posix["95% hi"]) in [pytest.approx(s) for s in spans], spans
    plt.close("all")


def test_two_runs_side_by_side(frame):
    ids = frame.drop_duplicates("run_id").set_index("backend")["run_id"]
    a, b = ids["posix"], ids["io_uring?registered_files=1"]
    d = explore.diff_runs(frame, a, b)
    assert (
        d.loc["benchmark", "A"] == d.loc["benchmark", "B"] == "readrandom"
    )  # the measured step, not the load
    assert d.loc["backend", "differs"] and not d.loc["benchmark", "differs"]
    qa, qb = d.loc["qps", "A"], d.loc["qps", "B"]
    assert d.loc["qps", "B - A"] == pytest.approx(qb - qa)
    assert d.loc["qps", "change %"] == pytest.approx((qb / qa - 1) * 100)
    assert d.loc["threads", "B - A"] == 1
    only = explore.diff_runs(frame, a, b, only_different=True)
    assert only["differs"].all() and "benchmark" not in only.index and "backend" in only.index
    same = explore.diff_runs(frame, a, a, only_different=True)
    assert same.empty
    fill = explore.diff_runs(frame, a, b, step="fillseq")
    assert fill.loc["benchmark", "A"] == "fillseq"
    with pytest.raises(ValueError, match=r"^step 'mixgraph': run .* has fillseq, flush, readrandom$"):
        explore.diff_runs(frame, a, b, step="mixgraph")
    labels = explore.run_choices(frame)
    assert next(r for _, r in labels) == frame["run_id"].iloc[-1]  # the newest first


def test_save_plot_goes_through_the_figure_pipeline(frame, tmp_path):
    t = explore.plot_table(explore.filter_runs(frame, benchmark=["readrandom"]), "threads", "qps", "backend")
    paths = explore.save_plot(
        t, "threads", "qps", "backend", directory=tmp_path / "figs", filters={"benchmark": ["readrandom"]}
    )
    assert {p.name for p in paths.values()} == {
        f"explore_qps_by_threads_backend.{e}" for e in ("pdf", "svg", "png", "csv", "json")
    }
    side = json.loads(paths["json"].read_text())
    assert sorted(side["runs"]) == sorted(t["run_id"].unique())
    assert side["table"]["rows"] == 3 and "readrandom" in side["notes"]
    assert pd.read_csv(paths["csv"])["qps"].tolist() == pytest.approx(t["qps"].tolist())
    # redrawable from its table alone (the plot spec in its sidecar), as `rxlab figure redraw` does it
    assert side["plot"] == {"kind": "explore", "x": "threads", "y": "qps", "hue": "backend"}
    done = saved_figures.redraw(["explore_qps_by_threads_backend"], tmp_path / "figs", width="page")
    (redrawn,) = done.values()
    assert redrawn["png"].is_file() and redrawn["png"].name == "explore_qps_by_threads_backend-page.png"
    with pytest.raises(ValueError, match=r"^name='../x': use letters"):
        explore.save_plot(t, "threads", "qps", name="../x", directory=tmp_path)
    with pytest.raises(ValueError, match="nothing to save"):
        explore.save_plot(t.iloc[0:0], "threads", "qps", directory=tmp_path)


def test_the_widgets_update_on_change_and_save(store_dir, tmp_path):
    pytest.importorskip("ipywidgets")
    ex = explore.Explorer(store_dir, figures_dir=tmp_path / "figs")
    assert ex.filters["benchmark"].value == ("readrandom",)  # the first view: readrandom's qps by backend
    assert ex.axes() == ("backend", "qps", "threads")
    assert ex.updates == 1 and ex.image.value[:4] == b"\x89PNG" and "3 steps of 3 runs" in ex.status.value
    assert "95% interval" in ex.table_html.value and "95% lo" in ex.table_html.value
    # every value of a short list shows, with a spare row; under each list, what it selects
    assert ex.filters["benchmark"].rows == len(ex.filters["benchmark"].options) + 1
    assert ">readrandom<" in ex.picked["benchmark"].value and ">all<" in ex.picked["backend"].value
    first = ex.image.value
    ex.filters["backend"].value = ("posix", "libaio")
    assert ">posix, libaio<" in ex.picked["backend"].value
    assert ex.updates == 2 and "2 steps of 2 runs" in ex.status.value and ex.image.value != first
    assert set(ex.table["backend"]) == {"posix", "libaio"}
    ex.y.value = "cpuPer"
    assert ex.updates == 3 and "cpuPer" in ex.table.columns and "median cpuPer" in ex.table_html.value
    assert {r for _, r in ex.run_a.options} == set(ex.frame["run_id"])  # every run can be compared
    assert {ex.run_a.value, ex.run_b.value} <= set(ex.frame["run_id"]) and ex.run_a.value != ex.run_b.value
    assert ex.diff.loc["backend", "differs"] and "columns differ" in ex.diff_html.value
    ex.filters["backend"].value = ("posix",)  # one run shown: B is another
    ex.run_a.value = ex.shown["run_id"].iloc[0]
    other = next(r for _, r in ex.run_b.options if r != ex.run_a.value)
    ex.run_b.value = other
    assert ex.diff.loc["run_id", "B"] == other
    ex.save_name.value = "my_plot"
    paths = ex.save()
    assert (
        paths is not None
        and (tmp_path / "figs" / "my_plot.png").is_file()
        and "saved" in ex.save_status.value
    )
    ex.save_name.value = "bad name!"
    assert ex.save() is None and "name='bad name!'" in ex.save_status.value


def test_an_empty_store_says_so(tmp_path):
    pytest.importorskip("ipywidgets")
    ex = explore.Explorer(tmp_path / "nothing")
    assert ex.frame.empty and "No runs in" in ex.status.value and ex.image.value == b""
    assert explore.store_summary(ex.frame).empty
    assert explore.plot_table(ex.frame, "threads", "qps").empty


def test_the_notebooks_parameters_are_checked(tmp_path, capsys):
    p = explore.Params.checked(scale="smoke", root=str(tmp_path / "r"), study_if_empty=None)
    assert explore.runs_for(p).empty and "holds no run" in capsys.readouterr().out
    with pytest.raises(ValueError, match=r"^study_if_empty='nosuch': allowed are quickstart, io_efficiency"):
        explore.Params.checked(study_if_empty="nosuch")
    with pytest.raises(ValueError, match=r"^scale='huge': allowed are smoke, small, full$"):
        explore.Params.checked(scale="huge")
    with pytest.raises(ValueError, match=r"^unknown parameter 'roots'"):
        explore.Params.checked(roots="x")
