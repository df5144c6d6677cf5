"""The seed studies, one folder each, found by one registry.

A study is a subpackage here whose __init__.py defines `STUDY`, an instance of
rxlab.core.study.Study. `rxlab study`, `rxlab report`, `rxlab sweep`, the
figure commands and the notebooks all find studies through `get` and `every`,
so a new study is a new folder (and its notebook) and nothing else.
"""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from rxlab.core.study import Study

__all__ = ["every", "figure_owner", "get", "names"]


@cache
def _registry() -> dict[str, Study]:
    found: dict[str, Study] = {}
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        study = getattr(mod, "STUDY", None)
        if isinstance(study, Study):
            if study.name in found:
                raise RuntimeError(f"two studies are named {study.name!r}")
            found[study.name] = study
    return dict(sorted(found.items(), key=lambda kv: (kv[1].notebook, kv[0])))


def names() -> list[str]:
    """The studies' names in their notebooks' order."""
    return list(_registry())


def every() -> list[Study]:
    """Every study, in their notebooks' order (00, 10, 15, 20, ...)."""
    return list(_registry().values())


def get(name: str) -> Study:
    """A study by name (or by its notebook's stem or number); one line naming the known ones."""
    reg = _registry()
    if name in reg:
        return reg[name]
    for s in reg.values():
        if str(name) in (s.notebook, s.notebook.split("_", 1)[0]):
            return s
    raise ValueError(f"study {name!r}: known are {', '.join(reg)}")


def figure_owner(figure: str) -> Study:
    """The study that draws a figure of this name."""
    for s in _registry().values():
        if figure in s.figures:
            return s
    known = sorted(f for s in _registry().values() for f in s.figures)
    raise ValueError(f"figure {figure!r}: known are {', '.join(known)}")
