"""The module paths of rxlab 0.1, kept working for one release.

rxlab 0.2 sorted the flat package into layers (core, bench, studies, runs,
cli). A script that imports an old path (`from rxlab import ioeff`,
`import rxlab.refs`) still works: it gets the module at the new path, or for
a module that was split in two, a module that looks names up in each new
one, with a DeprecationWarning that names where to import from now.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings

# old module -> the new module(s) that hold its names, the first one first
MOVED: dict[str, tuple[str, ...]] = {
    "store": ("rxlab.core.store",),
    "metrics": ("rxlab.core.metrics",),
    "sysinfo": ("rxlab.core.sysinfo",),
    "builds": ("rxlab.core.builds",),
    "figures": ("rxlab.core.figures",),
    "params": ("rxlab.core.params",),
    "published": ("rxlab.core.published",),
    "model": ("rxlab.core.model",),
    "study": ("rxlab.core.stats", "rxlab.core.study"),
    "driver": ("rxlab.bench.driver", "rxlab.core.sysinfo"),
    "flags": ("rxlab.bench.flags",),
    "rawio": ("rxlab.bench.fio", "rxlab.core.units", "rxlab.core.cpus"),
    "refs": ("rxlab.bench.references",),
    "interleave": ("rxlab.bench.turns",),
    "compare": ("rxlab.bench.quick_compare",),
    "backends_bench": ("rxlab.bench.selfcheck.backends", "rxlab.bench.selfcheck.paired",
                       "rxlab.bench.selfcheck.backends_in_turns", "rxlab.bench.selfcheck.own_cost",
                       "rxlab.bench.references", "rxlab.core.stats"),
    "driver_bench": ("rxlab.bench.selfcheck.driver", "rxlab.bench.perf"),
    "report": ("rxlab.runs.report", "rxlab.runs.notebooks"),
    "sweep": ("rxlab.runs.sweep",),
    "distributed": ("rxlab.runs.distributed",),
    "start": ("rxlab.studies.quickstart.study",),
    "ioeff": ("rxlab.studies.io_efficiency", "rxlab.studies.io_efficiency.study",
              "rxlab.studies.io_efficiency.params", "rxlab.studies.io_efficiency.result",
              "rxlab.studies.io_efficiency.tables", "rxlab.studies.io_efficiency.figures",
              "rxlab.studies.io_efficiency.findings", "rxlab.studies.perf_model.analysis",
              "rxlab.studies.perf_model.findings"),
    "ioeff_tuning": ("rxlab.studies.io_efficiency_tuning.study",
                     "rxlab.studies.io_efficiency_tuning.configs",
                     "rxlab.studies.io_efficiency_tuning.params",
                     "rxlab.studies.io_efficiency_tuning.tables",
                     "rxlab.studies.io_efficiency_tuning.figures",
                     "rxlab.studies.io_efficiency_tuning.findings",
                     "rxlab.studies.io_efficiency_tuning"),
    "labreport": ("rxlab.studies.backends", "rxlab.studies.backends.params", "rxlab.studies.backends.tables",
                  "rxlab.studies.backends.findings"),
    "asyncio_study": ("rxlab.studies.async_io.study",
                      "rxlab.studies.async_io.params",
                      "rxlab.studies.async_io.overlap",
                      "rxlab.studies.async_io.tables",
                      "rxlab.studies.async_io.figures",
                      "rxlab.studies.async_io.findings",
                      "rxlab.studies.async_io"),
    "tracing": ("rxlab.studies.tracing_overhead", "rxlab.studies.tracing_overhead.study",
                "rxlab.studies.tracing_overhead.params", "rxlab.studies.tracing_overhead.tables",
                "rxlab.studies.tracing_overhead.syscalls", "rxlab.studies.tracing_overhead.tracers",
                "rxlab.studies.tracing_overhead.findings"),
    "readahead": ("rxlab.studies.compaction_readahead", "rxlab.studies.compaction_readahead.study",
                  "rxlab.studies.compaction_readahead.params", "rxlab.studies.compaction_readahead.tables",
                  "rxlab.studies.compaction_readahead.columns",
                  "rxlab.studies.compaction_readahead.overwrite",
                  "rxlab.studies.compaction_readahead.findings", "rxlab.studies.compaction_readahead.child",
                  "rxlab.core.cgroup"),
    "toolchains": ("rxlab.studies.toolchains.study", "rxlab.studies.toolchains.params",
                   "rxlab.studies.toolchains.relative", "rxlab.studies.toolchains.tables",
                   "rxlab.studies.toolchains.findings", "rxlab.studies.toolchains.child",
                   "rxlab.studies.toolchains"),
    "cpu_breakdown": ("rxlab.studies.cpu_breakdown.study", "rxlab.studies.cpu_breakdown.params",
                      "rxlab.studies.cpu_breakdown.rules", "rxlab.studies.cpu_breakdown.tables",
                      "rxlab.studies.cpu_breakdown.findings", "rxlab.studies.cpu_breakdown",
                      "rxlab.bench.perf"),
    "placement": ("rxlab.studies.perf_model.placement", "rxlab.bench.irq"),
    "device_load": ("rxlab.studies.perf_model.device_load",),
}


def _warn(old: str, new: str) -> None:
    warnings.warn(f"rxlab.{old} moved to {new}; the old path goes away in rxlab 0.3", DeprecationWarning,
                  stacklevel=3)


class _Forwarding(types.ModuleType):
    """An old module split in several: its names are looked up in each new module, in order.

    For a study, the old module-level entry points map onto its Study: run_study(params, root,
    progress) runs it, load_study(root, ...) loads one, study_frame(catalog), plan(params) and
    findings(result) are its own, and fig_<x>(result) draws the study's figure whose name ends
    in _<x> (the shortest such name)."""

    def __init__(self, old: str, targets: tuple[str, ...]):
        super().__init__(f"rxlab.{old}")
        self._old, self._targets = old, targets

    def _study(self):
        for t in self._targets:
            study = getattr(importlib.import_module(t), "STUDY", None)
            if study is not None:
                return study
        return None

    def _study_entry(self, name: str):
        study = self._study()
        if study is None:
            return None
        entries = {
            "run_study": lambda params, root=None, progress=True: study.run(params, root, progress=progress),
            "load_study": study.load,
            "study_frame": study.frame,
            "plan": study.plan,
            "findings": lambda result, *a, **kw: study.findings(result),
        }
        if name.startswith("fig_"):
            # fig_throughput -> lab_throughput (the shortest name ending so, not lab_emulated_throughput);
            # fig_ioeff -> ioeff_tuning when no name ends so (the shortest that starts so)
            x = name[4:]
            want = sorted((f for f in study.figures if f == x or f.endswith("_" + x)), key=len) or \
                sorted((f for f in study.figures if f.startswith(x + "_")), key=len)
            if want:
                return lambda result, *a, **kw: study.figure(want[0], result, save=False)
        return entries.get(name)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        for t in self._targets:
            value = getattr(importlib.import_module(t), name, None)
            # a study package's submodule (findings.py) is not the old function of that name
            if value is not None and not isinstance(value, types.ModuleType):
                return value
        entry = self._study_entry(name)
        if entry is not None:
            return entry
        raise AttributeError(f"module rxlab.{self._old} (now {', '.join(self._targets)}) has no {name!r}")

    def __dir__(self):
        return sorted({n for t in self._targets for n in dir(importlib.import_module(t))})


class _Loader(importlib.abc.Loader):
    def __init__(self, old: str):
        self.old = old
        self.spec = None

    def create_module(self, spec):
        targets = MOVED[self.old]
        _warn(self.old, " and ".join(targets))
        if len(targets) == 1:
            mod = importlib.import_module(targets[0])
            self.spec = mod.__spec__
            return mod
        return _Forwarding(self.old, targets)

    def exec_module(self, module):
        # The new module has run already; importlib set its __spec__ to the old name's: put it back.
        if self.spec is not None:
            module.__spec__ = self.spec


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        pkg, _, old = fullname.rpartition(".")
        if pkg != "rxlab" or old not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(old))


def install() -> None:
    """Put the finder on sys.meta_path once (rxlab/__init__.py calls it)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder())
