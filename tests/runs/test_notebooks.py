"""The notebooks run top to bottom under papermill at scale="smoke", and refuse bad parameters.

Each notebook is executed as `rxlab report` and CI execute it: papermill, the
parameters injected after the cell tagged `parameters`, kernel python3, cwd =
notebooks/, the output notebook written to a tmp dir. RXLAB_RUNS and
RXLAB_FIGURES point at tmp dirs, so nothing lands in the repository's
data/runs/ or figures/. Notebook 10 runs first and notebook 20 finds its runs
in the store (run alone, notebook 20 runs its own smoke study). These tests do
real IO at smoke scale; how long each notebook took is in the report's
figures/index.md (a speed goal, not an assertion).
"""
from __future__ import annotations

import ast
import json
import time
from pathlib import Path

import nbformat
import papermill
import pytest

from rxlab import studies
from rxlab.runs.notebooks import notebook_index, run_notebook
from rxlab.runs.report import report

# The module's first smoke test runs every notebook (the report fixture): minutes in all.
pytestmark = pytest.mark.timeout(1500)

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
EXTS = ("pdf", "svg", "png", "csv", "json")

INDEX = {nb.name: nb for nb in notebook_index()}
FIGURES = {name: list(nb.figures) for name, nb in INDEX.items()}
IOEFF_NOTEBOOKS = ("10_io_efficiency", "20_perf_model")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """tmp runs and figures directories for the module, and a check that the repo's stay untouched."""
    base = tmp_path_factory.mktemp("notebooks")
    dirs = {"runs": base / "runs", "figures": base / "figures", "out": base / "out"}
    for d in dirs.values():
        d.mkdir()

    def listing():
        return {p: sorted(x.name for x in p.iterdir()) if p.is_dir() else None
                for p in (REPO / "figures", REPO / "data" / "runs")}

    before = listing()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RXLAB_RUNS", str(dirs["runs"]))
        mp.setenv("RXLAB_FIGURES", str(dirs["figures"]))
        mp.setenv("RXLAB_EXPLORE_CACHE", str(base / "explore-cache"))   # 05's explorer caches its frame there
        mp.delenv("RXLAB_DATA", raising=False)
        yield dirs
    assert listing() == before, "a notebook wrote into the repository's figures/ or data/runs/"


def execute(name: str, out_dir: Path, **parameters):
    out = out_dir / f"{name}-{int(time.time() * 1000)}.ipynb"
    t0 = time.monotonic()
    papermill.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out), parameters=parameters,
                               kernel_name="python3", cwd=str(NOTEBOOKS), progress_bar=False,
                               log_output=False, execution_timeout=240)
    return nbformat.read(out, as_version=4), time.monotonic() - t0


def error_outputs(nb) -> list[str]:
    return [f"cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(nb.cells)
            if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]


def test_every_study_has_its_notebook_and_every_notebook_its_place():
    """The registry is the one source: each study names its notebook, figures and seed; a notebook that
    belongs to no study is an exploration notebook (it draws no registered figure)."""
    assert set(IOEFF_NOTEBOOKS) <= set(INDEX)
    seeds = REPO.parent / "shared" / "seeds"
    by_notebook = {s.notebook: s for s in studies.every()}
    assert set(by_notebook) <= set(INDEX), "a study's notebook is missing"
    for name, nb in INDEX.items():
        s = by_notebook.get(name)
        if s is None or name.startswith("00_"):
            assert not nb.figures or s is not None, name
            continue
        assert nb.study == s.name and nb.figures == tuple(s.figures) and nb.figures, name
        assert nb.seed and s.seed == nb.seed, name
        if seeds.is_dir():
            assert (seeds / nb.seed).is_file(), (name, nb.seed)
    all_figures = [f for nb in INDEX.values() for f in nb.figures]
    assert len(all_figures) == len(set(all_figures)), "two studies save a figure of the same name"


@pytest.mark.parametrize("name", list(FIGURES))
def test_the_notebooks_are_parameterized_for_papermill(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), name      # the first code cell
    found = papermill.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))
    params = {k: v["default"] for k, v in found.items()}
    assigned = [t.id for node in ast.parse(code[0].source).body if isinstance(node, ast.Assign)
                for t in node.targets]
    assert list(params) == assigned, f"{name}: papermill cannot read every parameter (quotes in a comment?)"
    assert "scale" in params and params["scale"] in ('"small"', '"smoke"'), name
    # validation: the next cell takes the study from the registry and checks its parameters
    assert "studies.get(" in code[1].source and ".params(" in code[1].source, name
    assert not any(c.get("outputs") for c in code), f"{name}: commit the notebook without outputs"
    if name in IOEFF_NOTEBOOKS:
        assert {"backend", "threads", "scale", "block_align", "db_dir", "repeats"} <= set(params), name
        assert (params["backend"], params["threads"], params["scale"]) == ('"posix"', "[1, 2]", '"small"')


@pytest.fixture(scope="module")
def smoke_report(lab):
    """`rxlab report --scale smoke` once for the module: every notebook in order, figures and index."""
    outcomes = report("smoke", figures_dir=lab["figures"], out_dir=lab["out"], runs_root=lab["runs"],
                      progress=False)
    return {o.notebook: o for o in outcomes}


@pytest.mark.parametrize("name", list(FIGURES))
def test_notebook_runs_at_smoke_scale(name, lab, smoke_report):
    o = smoke_report[name]
    nb = nbformat.read(o.output, as_version=4)
    assert o.status == "ok" and not error_outputs(nb), (o.error, error_outputs(nb))
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1 and 'scale = "smoke"' in injected[0].source
    if name == "05_explore":   # it explores the runs of the notebooks before it (it runs a study only when
        # the store is empty): its explorer is there, as a widget
        cell = next(c for c in nb.cells if c.cell_type == "code" and "rxlab.explore(" in c.source)
        assert "application/vnd.jupyter.widget-view+json" in json.dumps(cell.outputs)
    else:
        assert o.runs, "no run stored"
    runs = {p.name for p in lab["runs"].iterdir() if not p.name.startswith(".")}
    assert {Path(r).name for r in o.runs} <= runs
    assert set(o.figures) == set(FIGURES[name]), "the figures saved are not the ones its study declares"
    for fig in FIGURES[name]:
        for ext in EXTS:
            p = lab["figures"] / f"{fig}.{ext}"
            assert p.is_file() and p.stat().st_size > 0, p
        side = json.loads((lab["figures"] / f"{fig}.json").read_text())
        assert side["runs"] and set(side["runs"]) <= runs, fig       # run ids, no path
        assert side["scale"] == "smoke" and side["study"] == INDEX[name].study, fig
        assert any(INDEX[name].seed in s for s in side["published_sources"]), fig


def test_the_report_indexes_every_figure(lab, smoke_report):
    index = (lab["figures"] / "index.md").read_text()
    for name, figs in FIGURES.items():
        if figs:
            assert f"## {name}" in index
        for fig in figs:
            row = next(line for line in index.splitlines() if line.startswith(f"| {fig} |"))
            assert f"[png]({fig}.png)" in row and "| smoke |" in row, row
    assert "**failed**" not in index


@pytest.mark.parametrize(("name", "parameters", "message"), [
    ("10_io_efficiency", {"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ("10_io_efficiency", {"threads": [0]}, "threads=[0]: expected a non-empty list of distinct integers"),
    ("10_io_efficiency", {"backend": "nosuch"}, "backend='nosuch': unknown engine 'nosuch'"),
    ("20_perf_model", {"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ("20_perf_model", {"scale": "smoke", "delay_us": [-5]}, "delay_us=[-5]: expected a non-empty list"),
])
def test_a_bad_parameter_fails_in_the_validation_cell(name, parameters, message, lab):
    with pytest.raises(papermill.PapermillExecutionError) as e:
        execute(name, lab["out"], **parameters)
    err = e.value
    assert err.ename == "ValueError"
    assert message in err.evalue and "\n" not in err.evalue
    assert message in str(err)
    out = max(lab["out"].glob(f"{name}-*.ipynb"), key=lambda p: p.stat().st_mtime)
    nb = nbformat.read(out, as_version=4)
    injected = next(i for i, c in enumerate(nb.cells) if "injected-parameters" in c.metadata.get("tags", []))
    failed = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
              and any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    # the first code cell after papermill's injected parameters, and only it (papermill adds markdown
    # cells that point at the error, so count code cells)
    first_after = next(i for i in range(injected + 1, len(nb.cells)) if nb.cells[i].cell_type == "code")
    assert failed == [first_after]
    assert ".params(" in nb.cells[failed[0]].source


def test_a_failing_notebook_is_reported_in_one_line_and_kept(lab):
    """run_notebook, which report and sweep use, records a failure instead of raising."""
    o = run_notebook("00", lab["out"] / "failing.ipynb", {"backend": "nosuch", "scale": "smoke"},
                     runs_root=lab["runs"], figures_dir=lab["figures"])
    assert o.status == "failed" and o.runs == [] and o.figures == []
    assert o.error.startswith("ValueError: backend='nosuch'") and "\n" not in o.error
    assert Path(o.output).is_file()
