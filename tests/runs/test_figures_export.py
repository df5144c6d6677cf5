"""Figures a paper can use: redrawn from their tables alone, exported with their data, runs archived.

One real backends study at smoke scale (posix, the local disk, a 5 MB DB) is
run into a temporary store; its figures are saved into a temporary folder and
everything else works from there, as it would on a colleague's machine.
"""
from __future__ import annotations

import hashlib
import json
import re
import tarfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from rxlab.cli.main import main
from rxlab.core import archive, resolution, store
from rxlab.core.paths import REPO
from rxlab.runs import export as exporting
from rxlab.runs import figures as saved
from rxlab.runs.notebooks import Outcome
from rxlab.runs.report import expected_times, resolution_cells, write_index
from rxlab.studies.backends import STUDY

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    figs = tmp_path_factory.mktemp("figures")
    p = STUDY.params(scale="smoke", backends=["posix"], device_cases=["local"], duration=0.1)
    result = STUDY.run(p, root, progress=False)
    for name in ("lab_throughput", "lab_latency"):
        STUDY.figure(name, result, directory=figs)
    STUDY.save_tables(result, figs / "tables")
    return root, figs, result


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_a_redraw_from_the_table_alone_gives_the_same_figure(made, tmp_path):
    _, figs, _ = made
    out = tmp_path / "again"
    saved.redraw(["lab_throughput"], figs, out=out)
    for ext in ("png", "pdf", "svg", "csv"):
        assert sha(out / f"lab_throughput.{ext}") == sha(figs / f"lab_throughput.{ext}"), ext
    side = json.loads((out / "lab_throughput.json").read_text())
    orig = json.loads((figs / "lab_throughput.json").read_text())
    assert side["table"]["sha256"] == orig["table"]["sha256"]
    assert side["runs"] == orig["runs"] and side["study_id"] == orig["study_id"]
    assert side["measured"] == orig["measured"]  # what measured it, not what redrew it


def test_a_redraw_at_page_width_in_slides_style_changes_only_the_drawing(made, tmp_path):
    _, figs, _ = made
    saved.redraw(["lab_latency"], figs, width="page", style="slides", aspect=0.5, formats=["png"],
                 out=tmp_path)
    assert sha(tmp_path / "lab_latency.png") != sha(figs / "lab_latency.png")
    assert sha(tmp_path / "lab_latency.csv") == sha(figs / "lab_latency.csv")
    assert not (tmp_path / "lab_latency.pdf").exists()
    side = json.loads((tmp_path / "lab_latency.json").read_text())
    assert side["drawn"]["layout"] == {"width": "page", "aspect": 0.5, "style": "slides"}
    with Image.open(tmp_path / "lab_latency.png") as new, Image.open(figs / "lab_latency.png") as old:
        assert new.size[0] > old.size[0]


def test_an_edited_table_is_refused(made, tmp_path):
    _, figs, _ = made
    for f in figs.glob("lab_throughput.*"):
        (tmp_path / f.name).write_bytes(f.read_bytes())
    t = pd.read_csv(tmp_path / "lab_throughput.csv")
    t.loc[0, "value"] = 1e9
    t.to_csv(tmp_path / "lab_throughput.csv", index=False)
    with pytest.raises(ValueError, match="does not match the hash in its sidecar"):
        saved.redraw(["lab_throughput"], tmp_path)


def test_the_list_says_what_can_be_redrawn(made):
    _, figs, result = made
    df = saved.list_figures(figs).set_index("figure")
    assert set(df.index) == {"lab_throughput", "lab_latency"}
    assert (df["redraw"] == "yes").all() and (df["study"] == "backends").all()
    assert (df["scale"] == "smoke").all()
    assert (df["runs"] == len(result.runs)).all()


def test_no_machine_path_in_a_sidecar_or_table(made):
    _, figs, _ = made
    for p in list(figs.glob("*.json")) + list(figs.glob("*.csv")) + list((figs / "tables").glob("*")):
        text = p.read_text()
        assert not re.search(r"(?<![\w.])/(work|root|home|tmp|var|usr)/", text), p.name


def test_no_machine_path_under_the_repositorys_figures():
    for p in (REPO / "figures").rglob("*"):
        if p.is_file() and p.suffix in (".json", ".md", ".csv", ".tex"):
            assert not re.search(r"['\"(`]/(work|root|home|tmp|var)/", p.read_text()), p.relative_to(REPO)


def test_an_export_holds_the_figures_their_data_and_the_provenance(made, tmp_path):
    root, figs, result = made
    dest = tmp_path / "paper"
    done = exporting.export(dest, ["lab_throughput"], figures_dir=figs, runs_root=root, with_runs=True)
    names = {p.name for p in dest.iterdir()}
    assert {f"lab_throughput.{e}" for e in ("pdf", "svg", "png", "csv", "json")} <= names
    assert "lab_latency.png" not in names and "README.md" in names
    assert "backends_throughput.tex" in {p.name for p in (dest / "tables").iterdir()}
    readme = (dest / "README.md").read_text()
    assert result.study in readme and "rxlab study run backends --scale smoke" in readme
    assert "| machine A |" in readme and "### Machine A:" in readme and "\\usepackage{booktabs}" in readme
    assert done["archives"] == [f"{result.study}.rxlab.tar.gz"]
    # a colleague redraws from the export alone
    saved.redraw(["lab_throughput"], dest, formats=["png"], out=tmp_path / "colleague")
    with pytest.raises(ValueError, match="is not an empty folder"):
        exporting.export(dest, figures_dir=figs)
    with pytest.raises(ValueError, match="figure 'nosuch': not in"):
        exporting.export(tmp_path / "x", ["nosuch"], figures_dir=figs)


def test_archive_and_import_round_trip_into_another_store(made, tmp_path):
    root, _, result = made
    file = archive.archive_study(result.study, root, tmp_path / "s.tar.gz")
    with tarfile.open(file) as t:
        members = t.getnames()
    assert "ARCHIVE.json" in members and f".studies/{result.study}.json" in members
    other = tmp_path / "other"
    df = archive.import_archive(file, other)
    assert set(df["status"]) == {"imported"} and len(df) == len(result.runs)
    a = store.catalog(root, runs=result.runs)
    b = store.catalog(other)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    again = STUDY.load(other)
    assert again is not None and again.study == result.study
    assert set(archive.import_archive(file, other)["status"]) == {"already there"}
    with pytest.raises(ValueError, match="archives are never overwritten"):
        archive.archive_study(result.study, root, file)


@pytest.mark.parametrize(("argv", "want"), [
    (["figure", "redraw", "nosuch"], "figure 'nosuch': known are"),
    (["figure", "redraw", "lab_throughput", "--aspect", "9"], "aspect=9.0: expected a height/width ratio"),
    (["figure", "redraw", "lab_throughput", "--format", "png,gif"],
     "--format png,gif: allowed are pdf, svg, png"),
    (["archive", "20000101T000000abcd"], "study '20000101T000000abcd': no complete run of it"),
    (["import", "/nonexistent/x.tar.gz"], "no such archive file"),
])
def test_bad_input_is_one_line(made, capsys, tmp_path, argv, want):
    root, figs, _ = made
    extra = ["--dir", str(figs)] if argv[0] == "figure" else ["--runs", str(root)]
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and want in err[0], err


def test_import_refuses_a_file_that_is_not_an_archive(tmp_path):
    bad = tmp_path / "x.tar.gz"
    bad.write_text("not a tar")
    with pytest.raises(ValueError, match="not an rxlab archive"):
        archive.import_archive(bad, tmp_path / "store")


def test_the_index_lists_a_studys_own_tables_not_those_of_a_study_whose_name_begins_with_it(tmp_path):
    (tmp_path / "tables").mkdir()
    for stem in ("io_efficiency_fio", "io_efficiency_tuning_configs"):
        (tmp_path / "tables" / f"{stem}.md").write_text("| a |\n| --- |\n| 1 |\n")
    text = write_index(tmp_path).read_text()
    ioeff = text.split("## 10_io_efficiency", 1)[1].split("\n## ", 1)[0]
    tuning = text.split("## 15_raising_io_efficiency", 1)[1].split("\n## ", 1)[0]
    assert "io_efficiency_fio" in ioeff and "io_efficiency_tuning_configs" not in ioeff
    assert "io_efficiency_tuning_configs" in tuning


def test_a_report_of_some_notebooks_keeps_the_last_run_of_the_others(tmp_path):
    """`rxlab report --only 70` rewrites the index: 10's line from the earlier report stays, 70's is new."""

    def outcome(nb, seconds):
        return Outcome(notebook=nb, parameters={}, status="ok", seconds=seconds,
                       output=f"notebooks/out/{nb}.ipynb", runs=["r1"])

    write_index(tmp_path, [outcome("10_io_efficiency", 877), outcome("70_toolchains", 7)])
    text = write_index(tmp_path, [outcome("70_toolchains", 608)]).read_text()
    ioeff = text.split("## 10_io_efficiency", 1)[1].split("\n## ", 1)[0]
    tc = text.split("## 70_toolchains", 1)[1].split("\n## ", 1)[0]
    assert "Last run: ok (877 s, 1 runs stored)" in ioeff
    assert "Last run: ok (608 s, 1 runs stored)" in tc and "(7 s" not in tc


def test_a_notebook_that_failed_says_which_run_its_figures_are_from(tmp_path):
    """70 refused (a build missing) after a run that made its figures: the index says both, and keeps saying
    it through a later report that does not run 70; the report's budget plans with the run's time."""

    def outcome(nb, seconds, status="ok", error=""):
        return Outcome(notebook=nb, parameters={}, status=status, seconds=seconds,
                       output=f"notebooks/out/{nb}.ipynb", runs=["r1"] if status == "ok" else [], error=error)

    write_index(tmp_path, [outcome("70_toolchains", 608)], "small")
    write_index(tmp_path, [outcome("70_toolchains", 3, "failed", "ValueError: lacks 5 builds")], "small")
    text = write_index(tmp_path, [outcome("10_io_efficiency", 700)], "small").read_text()
    tc = text.split("## 70_toolchains", 1)[1].split("\n## ", 1)[0]
    assert "Last run: **failed**: ValueError: lacks 5 builds (3 s, 0 runs stored)" in tc
    assert "The figures below are from the run before it: ok (608 s, 1 runs stored)" in tc
    assert expected_times(tmp_path / "index.md", "small") == {"10_io_efficiency": 700.0,
                                                              "70_toolchains": 608.0}


def test_the_index_gives_each_figures_widest_half_width_and_its_a_a_spread(tmp_path):
    """A figure drawn from a comparison table (resolution.compare on turns: one contender 3% ahead
    with little noise, one with a lot) lists its widest half-width, how many comparisons missed the
    target, and the A/A control's ratio and half-width; a figure of its study without ratios falls
    back to the study's comparisons table; one with none says so."""
    rng = np.random.default_rng(7)
    rows = []
    for turn in range(6):
        drift = rng.normal(0, 0.05)
        for config, copy, ratio, noise in (("base", 0, 1.0, 0.003), ("base", 1, 1.0, 0.003),
                                           ("quiet", 0, 1.03, 0.003), ("noisy", 0, 1.0, 0.2)):
            rows.append({"turn": turn, "config": config, "copy": copy,
                         "value": 100 * ratio * np.exp(drift + rng.normal(0, noise))})
    table = resolution.compare(pd.DataFrame(rows), "base", target=2.0)
    table.to_csv(tmp_path / "ratio_fig.csv", index=False)
    widest, aa = resolution_cells(tmp_path, "ratio_fig", None)
    noisy = table.loc[table["config"] == "noisy", "half_width"].iloc[0]
    assert widest == f"±{noisy:.1f}%, 1 of 2 unresolved", widest
    aa_row = table[table["config"] == resolution.AA].iloc[0]
    assert aa == f"{aa_row['ratio']:.3f}, widest ±{aa_row['half_width']:.1f}%", aa

    (tmp_path / "tables").mkdir()
    table.to_csv(tmp_path / "tables" / "mystudy_comparisons.csv", index=False)
    pd.DataFrame({"config": ["a"], "qps": [1.0]}).to_csv(tmp_path / "abs_fig.csv", index=False)
    assert resolution_cells(tmp_path, "abs_fig", "mystudy")[0].endswith("(study's table)")
    assert resolution_cells(tmp_path, "abs_fig", "other") == ("no comparison table", "")
    # two turns: an interval 12.7 standard errors wide, not a half-width to list
    two = resolution.compare(pd.DataFrame([r for r in rows if r["turn"] < 2]), "base", target=2.0)
    two.to_csv(tmp_path / "two.csv", index=False)
    widest, aa = resolution_cells(tmp_path, "two", None)
    assert widest == "no interval to read: 2 turns (3 needed)" and aa.endswith(", 2 turns"), (widest, aa)
    # one turn: no interval at all, no A/A (a smoke run)
    one = resolution.compare(pd.DataFrame([r for r in rows if r["turn"] < 1]), "base", target=2.0)
    one.to_csv(tmp_path / "one.csv", index=False)
    assert resolution_cells(tmp_path, "one", None)[0].startswith("no interval to read: 1 turns")
    empty = one.assign(turns=np.nan, half_width=np.nan)
    empty.to_csv(tmp_path / "empty.csv", index=False)
    assert resolution_cells(tmp_path, "empty", None)[0] == "no interval to read: 0 turns (3 needed)"
