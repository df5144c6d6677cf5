"""Does the compiler matter? RocksDB built with gcc, clang and clang+LTO, the gcc-vs-clang post's tests.

params.py (Params, COMPARE, scale presets), study.py (plan: one turn's run
per build, the protocol runs them in turns with the base twice; the tidy
frame; also the child process's entry point), child.py (a run in a child
process on one build), relative.py (the post's comparison per version from
the same turns), tables.py, figures.py, findings.py.
"""
from __future__ import annotations

import importlib

__all__ = ["STUDY"]


def __getattr__(name: str):
    # STUDY is imported on first use, not with the package: every run is a child process started as
    # `python -m rxlab.studies.toolchains.study`, and a package that imported its own study module
    # would have runpy execute that module twice (and warn) in each child.
    if name == "STUDY":
        study = importlib.import_module("rxlab.studies.toolchains.study").ToolchainsStudy()
        globals()["STUDY"] = study
        return study
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
