"""The package's shape: layers that import only downward, no import cycles, small modules.

The layers contract lives in pyproject.toml ([tool.importlinter]) and is
checked by import-linter itself, so `.venv/bin/lint-imports` prints the same
verdict with the offending import chains.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
LAYERS = ("rxlab.cli", "rxlab.runs", "rxlab.studies", "rxlab.bench", "rxlab.core")
# A module above this many lines must be one cohesive thing: name it here, with why.
MAX_LINES = 650
COHESIVE: dict[str, str] = {}


def test_the_layers_contract_is_kept():
    exe = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(exe), "--config", str(REPO / "pyproject.toml")], cwd=REPO, capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " 0 broken" in r.stdout
    for contract in ("cli > runs > studies > bench > core", "studies are independent"):
        assert f"{contract} KEPT" in r.stdout, r.stdout[-3000:]


def test_the_independence_contract_lists_every_study():
    """A new study folder joins the contract (import-linter takes the modules it is given, no wildcard)."""
    tomllib = pytest.importorskip("tomllib")   # the standard library's from Python 3.11
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    listed = next(c for c in conf if c["type"] == "independence" and c["name"] == "studies are independent")
    folders = {f"rxlab.studies.{p.parent.name}" for p in (REPO / "rxlab" / "studies").glob("*/__init__.py")}
    assert set(listed["modules"]) == folders


def test_no_study_imports_another():
    """The same rule, said directly: no module of a study imports a module of another study."""
    g = _graph()
    studies = set(g.find_children("rxlab.studies"))
    bad = []
    for s in studies:
        for m in {s} | g.find_descendants(s):
            bad += [f"{m} -> {n}" for n in g.find_modules_directly_imported_by(m)
                    if any(n == o or n.startswith(o + ".") for o in studies - {s})]
    assert not bad, bad


def _graph():
    return grimp.build_graph("rxlab")


def test_no_module_imports_a_higher_layer():
    """The same rule, said directly: a module of layer i imports nothing of layers above it."""
    g = _graph()
    bad = []
    for i, low in enumerate(LAYERS):
        for high in LAYERS[:i]:
            for m in g.find_children(low) | g.find_descendants(low):
                bad += [f"{m} -> {n}" for n in g.find_modules_directly_imported_by(m)
                        if n == high or n.startswith(high + ".")]
    assert not bad, bad


def test_there_are_no_import_cycles():
    g = _graph()
    edges = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    # Tarjan's strongly connected components: any of more than one module is a cycle
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not comps, comps


@pytest.mark.parametrize("path", sorted((REPO / "rxlab").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_modules_stay_small(path):
    name = str(path.relative_to(REPO))
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES or name in COHESIVE, f"{name}: {n} lines; split it by job or say in COHESIVE why not"


def test_every_study_is_a_folder_with_its_notebook():
    from rxlab import studies

    names = studies.names()
    assert names, "no study registered"
    for s in studies.every():
        folder = REPO / "rxlab" / "studies" / s.name
        assert folder.is_dir(), f"study {s.name}: not a folder of its own"
        assert (REPO / "notebooks" / f"{s.notebook}.ipynb").is_file(), f"{s.name}: no notebook {s.notebook}"
        assert s.figures or s.notebook.startswith("00_"), f"{s.name}: no figures"


def test_function_local_imports_are_only_for_optional_or_heavy_dependencies_and_say_why():
    """ruff's PLC0415 finds an import inside a function; each one that stays carries its reason
    after the noqa (`# noqa: PLC0415 - only inside IPython`), so hidden coupling cannot creep back."""
    exe = Path(sys.executable).with_name("ruff")
    r = subprocess.run([str(exe), "check", "--select", "PLC0415", "--output-format", "concise", "rxlab"],
                       cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-1000:]
    bare = [f"{p.relative_to(REPO)}:{i}" for p in (REPO / "rxlab").rglob("*.py")
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if "noqa: PLC0415" in line and not line.split("noqa: PLC0415", 1)[1].strip().startswith("- ")]
    assert not bare, f"function-local imports without their reason: {bare}"
