"""A redraw keeps what measured a figure, says what drew it, and writes beside the original unless asked
to replace it; a figure no study draws (saved from Python or the explorer with a plot spec) is redrawn
from its table. No RocksDB: the tables are made here."""
from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest

from rxlab.cli.main import main
from rxlab.core import figures
from rxlab.runs import figures as saved

TABLE = pd.DataFrame({"backend": ["posix", "io_uring", "posix", "io_uring"], "threads": [1, 1, 4, 4],
                      "qps": [10_295.0, 11_020.5, 30_100.0, 35_900.0]})


def _save(d, name="my_qps", plot=None):
    fig, ax = figures.figure()
    ax.bar(TABLE["backend"], TABLE["qps"])
    return figures.save(fig, name, table=TABLE, directory=d, runs=["r1", "r2"],
                        plot=plot or {"kind": "bar", "x": "backend", "y": "qps", "hue": "threads"})


def _side(d, name):
    return json.loads((d / f"{name}.json").read_text())


def _sha(p):
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_a_python_figure_is_redrawn_beside_the_original_from_its_plot_spec(tmp_path):
    paths = _save(tmp_path)
    before = {p.name: _sha(p) for p in tmp_path.iterdir()}
    orig = _side(tmp_path, "my_qps")
    assert set(orig["measured"]) == {"utc", "rxlab_commit", "git_dirty", "environment"}
    assert orig["measured"]["environment"]["kernel"] and orig["drawn"]["utc"] == orig["measured"]["utc"]
    assert saved.list_figures(tmp_path).set_index("figure").loc["my_qps", "redraw"] == "yes"

    done = saved.redraw(["my_qps"], tmp_path, width="page", style="slides")
    assert done["my_qps"]["json"].name == "my_qps-page-slides.json"
    assert {p.name: _sha(p) for p in tmp_path.iterdir() if p.name in before} == before  # untouched
    side = _side(tmp_path, "my_qps-page-slides")
    assert side["measured"] == orig["measured"] and side["redrawn_from"] == "my_qps"
    assert side["drawn"]["layout"] == {"width": "page", "style": "slides"}
    assert side["runs"] == ["r1", "r2"] and side["table"]["sha256"] == orig["table"]["sha256"]
    assert paths["csv"].read_bytes() == (tmp_path / "my_qps-page-slides.csv").read_bytes()
    # a redraw of the redraw finds its drawing through the original's name
    saved.redraw(["my_qps-page-slides"], tmp_path, replace=True, formats=["png"])
    assert _side(tmp_path, "my_qps-page-slides")["measured"] == orig["measured"]


def test_replace_writes_over_the_original_and_keeps_what_measured_it(tmp_path):
    _save(tmp_path, plot={"kind": "line", "x": "threads", "y": "qps", "hue": "backend"})
    orig = _side(tmp_path, "my_qps")
    assert main(["figure", "redraw", "my_qps", "--dir", str(tmp_path), "--replace", "--width", "page"]) == 0
    side = _side(tmp_path, "my_qps")
    assert side["measured"] == orig["measured"] and "redrawn_from" not in side
    assert side["drawn"]["layout"]["width"] == "page"
    assert sorted(p.stem for p in tmp_path.glob("*.json")) == ["my_qps"]


def test_a_figure_without_study_or_plot_spec_says_how_to_make_it_redrawable(tmp_path, capsys):
    fig, _ = figures.figure()
    figures.save(fig, "bare", table=TABLE, directory=tmp_path)
    assert saved.list_figures(tmp_path).set_index("figure").loc["bare", "redraw"].startswith("no: no study")
    assert main(["figure", "redraw", "bare", "--dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no study draws it and its sidecar has no plot spec" in err[0]


def test_a_sidecar_from_before_measured_and_drawn_were_told_apart_keeps_its_provenance(tmp_path):
    _save(tmp_path)
    old = _side(tmp_path, "my_qps")
    m = old.pop("measured")
    old.pop("drawn")
    old.update({"created_utc": "2026-11-20T05:10:30Z", "rxlab_commit": "925cf64", "git_dirty": False,
                "environment": m["environment"]})
    (tmp_path / "my_qps.json").write_text(json.dumps(old))
    saved.redraw(["my_qps"], tmp_path, formats=["png"])
    side = _side(tmp_path, "my_qps-redrawn")
    assert side["measured"]["rxlab_commit"] == "925cf64" and side["measured"]["utc"] == "2026-11-20T05:10:30Z"
    assert side["drawn"]["rxlab_commit"] != "925cf64"


@pytest.mark.parametrize(("plot", "want"), [({"kind": "pie", "x": "backend", "y": "qps"}, "plot kind 'pie'"),
                                            ({"kind": "bar", "x": "backend", "y": "nosuch"}, "'nosuch'")])
def test_a_bad_plot_spec_is_one_line(tmp_path, plot, want):
    _save(tmp_path, plot=plot)
    with pytest.raises(ValueError, match=want):
        saved.redraw(["my_qps"], tmp_path)
