"""The study's one run, open across the plan's rows: the DB, the run's writer, perf around each profiled step.

Sampling only the read step: `perf.Profiler` runs `perf record -e cpu-clock`
(a software event: these VMs have no hardware counters, see
`perf.perf_support`) on this process, started with its events disabled and
switched on and off through perf's control FIFO exactly around one step. The
driver's C++ threads are created inside the step and inherit the events.
`perf script` output is parsed and folded by rxlab.bench.perf (no
FlameGraph scripts) and the folded stacks are stored with the run as an
attachment per profiled step; their quality (how many stacks reach the
thread's start) goes into the step's row.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from rxlab.bench import driver, perf
from rxlab.core import store, sysinfo
from rxlab.core.builds import active_build
from rxlab.studies.cpu_breakdown.params import PROFILE
from rxlab.studies.cpu_breakdown.rules import stack_stats


def profile_dir() -> Path:
    """Where perf.data goes: memory (/dev/shm) when it can, so perf does not write to the DB's disk."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    return Path(tempfile.mkdtemp(prefix="rxlab-cpu-", dir=base))


class ProfiledRun:
    """A driver session on the DB and the RunWriter that stores its steps, open until `finish` (the run
    is complete) or `abort` (the run is stored as failed, with the error)."""

    def __init__(self, spec: driver.RunSpec, root: Path, meta: Mapping, *, call_graph: str, frequency: int):
        driver.validate(spec)
        build = active_build()
        rec = (build / "build.json").read_text() if (build / "build.json").is_file() else "{}"
        fingerprint = sysinfo.fingerprint(spec.db, rocksdb_build=json.loads(rec))
        self.spec, self.call_graph, self.frequency = spec, call_graph, frequency
        self._open = contextlib.ExitStack()
        # the session first: bad RocksDB options are refused before the run directory exists
        self.session = driver.Session(spec)
        self._open.callback(self._close_session)
        try:
            writer = store.RunWriter(root, {**spec.to_dict(), **meta}, fingerprint)
            self.writer = self._open.enter_context(writer)
        except BaseException:
            self._open.close()
            raise

    def _close_session(self) -> None:
        self.session.close()   # the session of the moment: a reopen replaces it

    def step(self, index: int, step: Mapping) -> None:
        """Run one step of the sequence and store its row (a `reopen` step reopens the DB)."""
        if "reopen" in step:
            started = self.session.threads_started   # the key generators continue the run's count
            self.session.close()
            self.session = driver.Session(self.spec, bloom_bits=step["reopen"].get("bloom_bits"))
            self.session.threads_started = started
            return
        mode = step.get("cpu_mode")
        extra = {"cpu.mode": mode or "", "cpu.rep": step.get("cpu_rep", -1),
                 "cpu.perf_level": step.get("perf_level", self.spec.perf_level)}
        row = self._profiled(index, step, extra) if mode == PROFILE else self.session.run_step(step)
        self.writer.add_step({**row, **extra, "step_index": index})

    def _profiled(self, index: int, step: Mapping, extra: dict) -> dict:
        """The step under perf; its folded stacks attached to the run, their numbers put in `extra`."""
        tmp = profile_dir()
        try:
            prof = perf.Profiler(os.getpid(), tmp, call_graph=self.call_graph, frequency=self.frequency)
            with prof:
                row = self.session.run_step(step)
            samples = perf.parse_script(perf.perf_script(prof.data))
            folded = perf.fold(samples)
            name = f"step{index:02d}-{step.get('label', step['name'])}-r{step.get('cpu_rep', 0)}.folded"
            self.writer.attach(perf.write_folded(folded, tmp / name))
            periods = [x.period for x in samples]
            extra.update({"cpu.folded": name, "cpu.call_graph": self.call_graph,
                          "cpu.frequency": self.frequency,
                          "cpu.period_ns": float(np.mean(periods)) if periods else np.nan,
                          "cpu.sampled_ns": float(np.sum(periods)) if periods else 0.0})
            extra.update({f"cpu.{k}": v for k, v in stack_stats(folded).items()})
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return row

    def finish(self) -> Path:
        """Close the DB and complete the run; returns its directory."""
        self._open.close()
        return self.writer.path

    def abort(self, error: BaseException) -> None:
        """Close the DB and store the run as failed with `error` (never as complete)."""
        self._open.__exit__(type(error), error, error.__traceback__)


def run_meta(support: perf.PerfSupport, *, study: str, call_graph: str, frequency: int, repeats: int) -> dict:
    """What the stored spec carries beside the driver's: the study, perf's settings and what perf can do."""
    return {"study": study, "call_graph": call_graph, "frequency": frequency, "repeats": repeats,
            "perf": dataclasses.asdict(support)}
