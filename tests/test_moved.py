"""rxlab 0.1's module paths still work for one release, each with a DeprecationWarning naming the new one."""
from __future__ import annotations

import importlib
import sys

import pytest

import rxlab
from rxlab import _moved


def _forget() -> None:
    for old in _moved.MOVED:
        sys.modules.pop(f"rxlab.{old}", None)
        if old in vars(rxlab):
            delattr(rxlab, old)


@pytest.fixture(autouse=True)
def _fresh():
    """Each test imports the old names anew (an import is cached in sys.modules and on the package)."""
    _forget()
    yield
    _forget()


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_path_imports_with_a_warning_naming_the_new_one(old):
    targets = _moved.MOVED[old]
    with pytest.warns(DeprecationWarning, match=f"rxlab.{old} moved to {targets[0]}"):
        mod = importlib.import_module(f"rxlab.{old}")
    if len(targets) == 1:
        assert mod is importlib.import_module(targets[0])
        assert mod.__spec__.name == targets[0]   # the real module keeps its own identity
    else:
        # a split module: every public name of each new module is reachable through the old one
        for t in targets:
            new = importlib.import_module(t)
            for name in getattr(new, "__all__", [])[:20]:
                assert getattr(mod, name) is getattr(new, name)


def test_from_rxlab_import_an_old_name():
    with pytest.warns(DeprecationWarning, match="rxlab.refs moved to rxlab.bench.references"):
        from rxlab import refs
    from rxlab.bench import references

    assert refs.run_fio is references.run_fio


def test_a_study_keeps_its_old_entry_points():
    with pytest.warns(DeprecationWarning, match="rxlab.labreport moved to rxlab.studies.backends"):
        from rxlab import labreport
    from rxlab.studies.backends import STUDY

    params = labreport.Params.checked(scale="smoke")
    assert labreport.plan(params).equals(STUDY.plan(params))
    assert callable(labreport.run_study) and callable(labreport.fig_throughput)
    with pytest.raises(AttributeError, match="rxlab.labreport .* has no 'nosuch'"):
        labreport.nosuch  # noqa: B018


def test_an_unknown_old_name_is_still_an_import_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("rxlab.nosuch")
