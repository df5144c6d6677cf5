"""The tracing study's parameters: backends, tracers, workloads, scale presets, the tools this machine has."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from rxlab.core import engines, scales, sysinfo
from rxlab.core import params as checks
from rxlab.core.study import settings_table
from rxlab.core.turns_plan import Compare, TurnsParams

SEED_FILE = "lab-report-disaggregated-rocksdb-backends.txt"
PUBLISHED = (f"{SEED_FILE}: lab_throughput (Figure 5)", f"{SEED_FILE}: lab_statements (5.2.1)")

TRACERS = ("none", "counters", "perf", "strace")
FILLS = ("fillseq", "fillrandom")
READS = ("readrandom", "readseq")
WORKLOADS = (*FILLS, *READS)

# The data path's read and write syscalls (rxlab's counter names, strace's names).
DATA_SYSCALLS = ("pread64", "pwrite64", "io_submit", "io_getevents", "io_uring_enter")
# The claim: strace's and rxlab's counts of those agree within 1%. A criterion, not a result.
TOLERANCE = 0.01

# The report's static db_bench settings (5.2.1, data/published/lab_statements.csv).
KEY_SIZE = 16
VALUE_SIZE = 1000
WRITE_BUFFER = 2 << 20
MIB = 1 << 20

# What the study compares, in turns (rxlab.core.turns_plan): per backend, the throughput (qps: operations
# over wall time) of each tracer against the untraced run, workload by workload. Each turn runs `none`
# twice per backend (the A/A pair: what "equal" looks like beside the tracers' ratios).
COMPARE = Compare(config="tracer", metric="qps", base="none", groups=("backend",), keys=("test",), turn="rep",
                  label="ops/s")


def tool_status(perf_freq: int = 999) -> dict[str, str]:
    """'available' or why not, for perf (a cpu-clock sample of `true`), strace, and hardware counters."""
    out = {"perf_hw_counters": sysinfo.perf_hw_counters(), "perf_sw_counters": sysinfo.perf_sw_counters()}
    perf = shutil.which("perf")
    if perf is None:
        out["perf"] = "not installed (apt-get install linux-perf)"
    else:
        with tempfile.TemporaryDirectory(prefix="rxlab-perf-") as td:
            r = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-F", str(perf_freq), "-g", "-o",
                                str(Path(td) / "p.data"), "--", "true"], capture_output=True, text=True,
                               timeout=30, check=False)
        last = (r.stderr.strip().splitlines() or [""])[-1]
        out["perf"] = "available" if r.returncode == 0 else \
            f"perf record -e cpu-clock fails (exit {r.returncode}): {last}"
    st = shutil.which("strace")
    if st is None:
        out["strace"] = "not installed (apt-get install strace)"
    else:
        r = subprocess.run([st, "-c", "-f", "-o", os.devnull, "--", "true"], capture_output=True, text=True,
                           timeout=30, check=False)
        out["strace"] = "available" if r.returncode == 0 else \
            f"strace -c fails (exit {r.returncode}): {(r.stderr.strip().splitlines() or [''])[-1]}"
    return out


@dataclass(frozen=True)
class Scale(scales.Scale):
    """The common preset (its duration unused: the workloads run a count of operations) and the study's
    own: operations of each read workload, references.run_db_bench's device background window."""

    reads: int
    background_s: float


SCALES = scales.presets(
    Scale,
    # seconds: a 2 MB DB, a 1 MiB cache (reads still reach the device); the common 5 s of turns (one)
    smoke={"num": 2_000, "reads": 2_000, "background_s": 0.0},
    # minutes: 50 MB, an 8 MiB cache. 270 s of turns (with the probes and the figures, within the 306 s the
    # study took in three repetitions of 15 runs: figures/index.md, 2026-11-27). A turn is 19 runs, `none`
    # twice; at the 100k keys and 20k reads of then it took about 120 s (strace runs 10 to 12 s): two turns,
    # fewer than the rule's three; at half of each about 70 s (estimated from those runs' times): three
    small={"num": 50_000, "reads": 10_000, "background_s": 0.2, "budget_s": 270.0},
    # the largest that keeps the strace runs to minutes: 1 GB, an 8 MiB cache
    full={"num": 1_000_000, "reads": 100_000, "cache_size": 8 * MIB, "background_s": 0.3},
)


@dataclass(frozen=True)
class Settings:
    """A scale resolved: what a study will run."""

    scale: str
    num: int
    reads: int
    cache_size: int
    perf_freq: int
    background_s: float
    db_bytes: int
    work_dir: str
    tools: dict
    turns: str          # the stopping rule, in words

    def table(self) -> pd.DataFrame:
        rows = [("keys (num)", f"{self.num:,}"), ("key / value bytes", f"{KEY_SIZE} / {VALUE_SIZE}"),
                ("DB size (keys x (key + value))", f"{self.db_bytes / MIB:.0f} MiB"),
                ("write buffer", f"{WRITE_BUFFER // MIB} MiB"),
                ("operations per read workload", f"{self.reads:,}"),
                ("block cache", f"{self.cache_size / MIB:g} MiB"), ("turns", self.turns),
                ("perf sampling frequency", f"{self.perf_freq} Hz (cpu-clock, call graphs)"),
                ("work directory", self.work_dir)]
        rows += [(f"tool: {k}", v) for k, v in self.tools.items()]
        return settings_table(rows)


@dataclass
class Params(TurnsParams):
    """The study's parameters (the notebook's papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): target (percent), budget,
    min_turns and max_turns set the stopping rule; `repeats`, when given, runs
    exactly that many turns instead.

    backends: default and rxlab engine URIs (posix, libaio, io_uring,
    io_uring?registered_files=1 ...; counters options are the study's own).
    tracers: none, counters, perf, strace (none is the base of every ratio).
    workloads: db_bench benchmarks (fillseq, fillrandom, readrandom, readseq);
    every run starts with the fills given (fillseq if none) and a flush.
    scale: smoke | small | full. num, reads: None takes the scale's.
    perf_freq: perf's sampling frequency in Hz. db_dir: where the DBs go
    (None: a temporary directory; O_DIRECT needed).
    """

    SCALES = SCALES   # the turns' budget at each scale (TurnsParams.scale_budget)

    backends: list = field(default_factory=engines.backends)  # every backend of the registry
    tracers: list = field(default_factory=lambda: list(TRACERS))
    workloads: list = field(default_factory=lambda: ["fillseq", "readrandom"])
    repeats: int | None = None
    num: int | None = None
    reads: int | None = None
    perf_freq: int = 999
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        bs = checks.backend_list("backends", self.backends)
        for b in bs:
            if {"counters", "counters_path"} & set(engines.options(b)):
                checks.fail("backends", self.backends, "counters and counters_path are set by the tracer "
                                                       "(none, counters, perf, strace): leave them out")
        self.backends = bs
        tr = checks.as_list(self.tracers)
        if not tr or len(set(tr)) != len(tr) or not all(t in TRACERS for t in tr):
            checks.fail("tracers", self.tracers, f"expected a non-empty list of distinct names from "
                                                 f"{', '.join(TRACERS)}")
        if "none" not in tr:
            checks.fail("tracers", self.tracers, "must include 'none': every overhead is a traced run's "
                                                 "throughput over the untraced runs' of the same turn")
        self.tracers = list(tr)
        wl = checks.as_list(self.workloads)
        if not wl or len(set(wl)) != len(wl) or not all(w in WORKLOADS for w in wl):
            checks.fail("workloads", self.workloads, f"expected a non-empty list of distinct db_bench "
                                                     f"benchmarks from {', '.join(WORKLOADS)}")
        self.workloads = list(wl)
        checks.optional_integer("repeats", self.repeats, 1, 100)
        checks.optional_integer("num", self.num, 100, 100_000_000)
        checks.optional_integer("reads", self.reads, 100, 100_000_000)
        checks.integer("perf_freq", self.perf_freq, 1, 10_000, note=" (Hz)")
        self.db_dir = checks.db_dir(self.db_dir)
        for tool in ("perf", "strace"):
            if tool in self.tracers and shutil.which(tool) is None:
                checks.fail("tracers", self.tracers, f"{tool} is not installed here; install it or drop "
                                                     f"{tool!r} from tracers")


    def settings(self, probe: bool = True) -> Settings:
        """The scale resolved; `probe` also asks perf and strace whether they work here (a second)."""
        sc = SCALES[self.scale].given(num=self.num, reads=self.reads)
        work = Path(self.db_dir) if self.db_dir is not None else Path(tempfile.gettempdir())
        return Settings(scale=self.scale, num=int(sc.num), reads=int(sc.reads), cache_size=sc.cache_size,
                        perf_freq=int(self.perf_freq), background_s=sc.background_s,
                        db_bytes=int(sc.num) * (KEY_SIZE + VALUE_SIZE), work_dir=str(work),
                        tools=tool_status(self.perf_freq) if probe else {}, turns=self.rule().describe())

    def benchmarks(self) -> list[str]:
        """db_bench's --benchmarks of every run: the fills (fillseq if none), flush, the reads."""
        fills = [w for w in self.workloads if w in FILLS] or ["fillseq"]
        return [*fills, "flush", *(w for w in self.workloads if w in READS)]


def applies(backend: str, tracer: str) -> bool:
    """RocksDB's own file system has no rxlab counters: no `counters` configuration for it."""
    return not (checks.is_default(backend) and tracer == "counters")
