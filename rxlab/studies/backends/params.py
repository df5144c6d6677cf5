"""The backends study's parameters: backends, device cases (the report's SSDs emulated), scale presets."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from rxlab.core import engines, metrics, scales, study
from rxlab.core import params as checks
from rxlab.core.study import StudySettings, size_text
from rxlab.core.sysinfo import work_space
from rxlab.core.turns_plan import Compare, TurnsParams

SEED_FILE = "lab-report-disaggregated-rocksdb-backends.txt"
PUBLISHED_TABLES = ("lab_throughput", "lab_latency", "lab_throughput_change", "lab_statements", "hardware",
                    "flags")
# For the figures' JSON sidecars: "<source>: <table>", source being the CSVs' source column.
PUBLISHED = tuple(f"{SEED_FILE}: {t}" for t in PUBLISHED_TABLES)

ENGINES = ("posix", "libaio", "io_uring")       # the report's three backends
KEY_SIZE, VALUE_SIZE = 16, 1000                 # §5.2.1 (lab_statements)
WRITE_BUFFER = 2 << 20                          # §5.2.1: "reserve only 2 MiB for the write buffer"
BLOCK_SIZE = 4096                               # db_bench's defaults for what the report does not state:
COMPRESSION = "snappy"                          # 4 KiB blocks, snappy, no bloom filter
LOCAL_TESTS = ("fillseq", "fillrandom", "readrandom", "readseq")   # Figures 3 and 6
CLUSTER_TESTS = ("fillseq", "readrandom", "readseq")               # Figures 10 to 13
ZIPPY_TEST = "mixgraph"                                            # Figure 4
# Latency percentiles of the figures (the report plots p50 to p99.9).
PERCENTILES = (50.0, 75.0, 90.0, 99.0, 99.9)
PCT_NAMES = tuple(f"p{p:g}" for p in PERCENTILES)
PCT_COLUMNS = tuple(metrics.percentile_column(p) for p in PERCENTILES)
MIB = 1 << 20
MAX_DELAY_US = 100_000


@dataclass(frozen=True)
class DeviceCase:
    """A storage case: a completion deadline per device read (delay_us +/- jitter_us, uniform)."""

    name: str
    delay_us: int
    jitter_us: int
    why: str


# The report states no device latency for its cluster SSDs; its only numbers
# for them are operation latency percentiles (Figures 12 and 13). readrandom
# with direct IO is the workload whose slow operations are device reads, so
# its upper percentiles are taken as the device's read latency: delay_us is
# the p99, jitter_us spreads reads up to the p99.9 (p99 - (p99.9 - p99) ..
# p99.9). rxlab's delay adds to reads only, as a deadline from submission.
DEVICE_CASES = {
    "local": DeviceCase("local", 0, 0, "this machine's disk as it is (no emulated latency)"),
    "virtual": DeviceCase("virtual", 10, 10, "virtual SSD: readrandom p99 about 10 us and p99.9 about 20 us "
                                             "(Figure 12, all three backends), so reads take 0 to 20 us"),
    "remote": DeviceCase("remote", 165, 77, "remote SSD: readrandom p99 164.97 us and p99.9 242.49 us "
                                            "(Figure 13, POSIX), so reads take 88 to 242 us"),
}


def with_case(backend: str, case: DeviceCase) -> str:
    """The backend URI with the case's delay_us and jitter_us (unchanged for a zero delay)."""
    if not case.delay_us:
        return backend
    return engines.with_options(backend, delay_us=case.delay_us, jitter_us=case.jitter_us or None)


def strip_case(uri: str) -> str:
    """The backend URI without delay_us and jitter_us: the backend a case was run on."""
    return engines.with_options(uri, delay_us=None, jitter_us=None)


def engine(backend: str) -> str:
    """posix, libaio, io_uring or default: the URI's engine."""
    return engines.engine(backend)


# What the study compares, in turns (rxlab.core.turns_plan): per device case, each backend's MB/s against
# the case's first backend (default on the local disk, posix in the emulated cases: default has no delay),
# test by test.
COMPARE = Compare(config="backend", metric="mbps", groups=("case",), keys=("test",), turn="rep",
                  label="MB/s")


# The common presets with the report's own keys (16 + 1000 bytes each) and seconds of readrandom and
# mixgraph; full takes db_bench's block cache (well below the DB, so that reads reach the device). At small
# a turn measures 11 tests in slices (5 local, 3 in each emulated case) in about 2.5 minutes, the first
# turn each backend's whole runs too (about 3 more): the budget holds four turns.
SCALES = scales.presets(
    scales.Scale,
    smoke={"num": 5_000, "duration": 0.2},                            # 5 MB, seconds
    small={"num": 200_000, "duration": 2.0, "budget_s": 840.0},      # 0.2 GB, minutes
    full={"num": 2_000_000, "duration": 10.0, "cache_size": 32 * MIB},  # 2 GB
)

# The slices of a test measured on every backend of a case at once (slices.py), by scale: seconds a slice,
# and seconds every process runs the test before the first slice. The rounds are the duration's slices:
# each backend runs each test `duration` seconds in a turn.
SLICES = {"smoke": {"slice_s": 0.1, "warmup_s": 0.2},
          "small": {"slice_s": 0.5, "warmup_s": 1.0},
          "full": {"slice_s": 1.0, "warmup_s": 5.0}}


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved on this machine."""

    threads: int
    work_dir: str
    free_bytes: int
    turns: str = ""     # the stopping rule, in words
    sliced: bool = True  # throughput on every backend of a case at once, in slices (else whole runs only)
    whole_turns: int = 1  # with sliced: the first turns that also run the whole sequences (latency)
    rounds: int = 4     # of a test in slices: rounds of every backend, seconds a slice, seconds before them
    slice_s: float = 0.5
    warmup_s: float = 1.0

    def own_rows(self) -> list[tuple[str, object]]:
        if self.sliced:
            method = [("throughput, per turn", f"every backend of a case at once, {self.rounds} rounds of "
                                               f"{self.slice_s:g} s slices after {self.warmup_s:g} s"),
                      ("latency", f"a whole run of the report's sequence on each backend, the first "
                                  f"{self.whole_turns} turn{'s' if self.whole_turns > 1 else ''}"),
                      ("readseq", "passes over the DB for the slices; one pass a whole run")]
        else:
            method = [("throughput and latency", "whole runs of the report's sequence, every turn"),
                      ("readseq", "one pass over the DB per thread")]
        return [("key / value bytes", f"{KEY_SIZE} / {VALUE_SIZE}"),
                ("write buffer", size_text(WRITE_BUFFER)),
                ("block size, compression", f"{BLOCK_SIZE} B, {COMPRESSION}"),
                ("read threads", self.threads), *method, ("turns", self.turns)]


@dataclass
class Params(TurnsParams):
    """The study's parameters (the notebook's papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): target (percent), budget,
    min_turns and max_turns set the stopping rule; `repeats`, when given, runs
    exactly that many turns instead. sliced: each turn measures the
    throughput of every test on every backend of a case at once, in slices
    (slices.py), and the first `whole_turns` turns also run the report's
    sequence as whole runs, for the latency percentiles; sliced=False runs
    the whole sequences every turn and takes the throughput from them.

    backends: default and/or rxlab engine URIs (posix, libaio, io_uring, ...),
    without delays. threads: clients of the read steps (the fills run with one,
    as db_bench's default). device_cases: names in DEVICE_CASES (local must be
    among them: every figure compares against it); case_delays: {name:
    [delay_us, jitter_us]} to change a case or add one. The emulated cases run
    on the rxlab engines only (RocksDB's default file system has no delay).
    """

    SCALES = SCALES   # its own budget at small (TurnsParams.scale_budget)

    backends: list = field(default_factory=engines.backends)  # every backend of the registry, default first
    threads: int = 1
    db_dir: str | None = None
    repeats: int | None = None
    duration: float | None = None
    device_cases: list = field(default_factory=lambda: ["local", "virtual", "remote"])
    case_delays: dict | None = None
    sliced: bool = True
    whole_turns: int = 1

    def __post_init__(self):
        super().__post_init__()
        self.backends = checks.backend_list("backends", self.backends)
        self.threads = checks.integer("threads", self.threads, 1, 64, note=" (clients of the read steps)")
        checks.optional_integer("repeats", self.repeats, 1, 100)
        checks.optional_seconds("duration", self.duration)
        if not checks.is_bool(self.sliced):
            checks.fail("sliced", self.sliced,
                        "expected True (every backend of a case at once, in slices) or False (whole runs)")
        self.whole_turns = checks.integer("whole_turns", self.whole_turns, 1, 1000,
                                          note=" (turns that also run whole sequences, for the latency)")
        self._cases = dict(DEVICE_CASES)
        for name, case in self._custom_cases().items():
            self._cases[name] = case
        cases = checks.as_list(self.device_cases)
        if not cases or len(set(cases)) != len(cases) or not all(c in self._cases for c in cases):
            checks.fail("device_cases", self.device_cases,
                        f"expected a list of distinct names among {', '.join(self._cases)}")
        if "local" not in cases:
            checks.fail("device_cases", self.device_cases,
                        "must include 'local' (every figure compares with it)")
        self.device_cases = list(cases)
        if any(self._cases[c].delay_us for c in cases) and not self.engines:
            checks.fail("device_cases", self.device_cases,
                        "emulated cases need an rxlab engine (posix, libaio, io_uring) among the backends")
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()


    def _custom_cases(self) -> dict[str, DeviceCase]:
        if self.case_delays is None:
            return {}
        if not isinstance(self.case_delays, Mapping):
            checks.fail("case_delays", self.case_delays, "expected None or {name: [delay_us, jitter_us]}")
        out = {}
        for name, dj in self.case_delays.items():
            ok = (isinstance(name, str) and re.fullmatch(r"[a-z][a-z0-9_]{0,15}", name) is not None
                  and isinstance(dj, (list, tuple)) and len(dj) == 2 and all(checks.is_int(v) for v in dj)
                  and 0 <= dj[1] <= dj[0] <= MAX_DELAY_US)
            if not ok:
                checks.fail("case_delays", self.case_delays,
                            "expected {name: [delay_us, jitter_us]} with a lowercase name and "
                            f"0 <= jitter_us <= delay_us <= {MAX_DELAY_US}")
            out[name] = DeviceCase(name, int(dj[0]), int(dj[1]), "set by the case_delays parameter")
        return out

    @property
    def engines(self) -> list[str]:
        """The backends that are rxlab engines (they take delays)."""
        return [b for b in self.backends if not checks.is_default(b)]

    def case(self, name: str) -> DeviceCase:
        return self._cases[name]

    def cases_table(self) -> pd.DataFrame:
        """The device cases of this study: delay, jitter, read latency range, where the values come from."""
        rows = []
        for c in self.device_cases:
            d = self._cases[c]
            lo, hi = d.delay_us - d.jitter_us, d.delay_us + d.jitter_us
            rng = "the disk's own" if not d.delay_us else f"{lo} to {hi} us"
            rows.append({"case": c, "delay_us": d.delay_us, "jitter_us": d.jitter_us,
                         "read completes no earlier than": rng,
                         "backends": ", ".join(self.backends if not d.delay_us else self.engines),
                         "from": d.why})
        return pd.DataFrame(rows).set_index("case")

    def settings(self) -> Settings:
        sc = SCALES[self.scale].given(duration=self.duration, repeats=self.repeats)
        work, free = work_space(self.db_dir)
        db_bytes = sc.num * (KEY_SIZE + VALUE_SIZE)
        # the DB (uncompressed at worst) and its compactions' copies
        study.check_space(self.scale, 3 * db_bytes, work, free)
        return Settings(scale=self.scale, num=sc.num, db_bytes=db_bytes, duration=float(sc.duration),
                        repeats=sc.repeats, cache_size=sc.cache_size, threads=self.threads,
                        work_dir=str(work), free_bytes=int(free), turns=self.rule().describe(),
                        sliced=self.sliced, whole_turns=self.whole_turns,
                        rounds=max(1, round(sc.duration / SLICES[self.scale]["slice_s"])),
                        **SLICES[self.scale])
