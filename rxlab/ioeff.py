"""The IO-efficiency study of the first seed, run on this machine, published numbers beside.

The seed (blog-2025-10-23, "How efficient is RocksDB for IO-bound, point-query
workloads?") defines IO efficiency as RocksDB's storage read IOPS over fio's at
the same concurrency (fio sync, queue depth 1, 8 KiB O_DIRECT random reads),
runs the db_bench sequence fillseq, revrange, overwritesome, flush_mt_l0,
readrandom, compact, readrandom2, readrandom3 at 1 and 6 users with
block_align on and off, and prints its tables. This module is that study:

* `Params` (checked in one line each) and `Params.settings()`, the scale
  presets resolved on this machine (`smoke`: seconds; `small`: minutes, a DB
  about 100 times the block cache; `full`: a DB sized from the free disk, many
  times the cache, O_DIRECT keeping it IO-bound).
* `run_study`: for each repetition, delay and thread count, rxlab's fio
  baseline (sync, qd1, numjobs = threads) and then the seed's sequence for each
  block_align setting, alternated so that drift of the machine hits fio and
  RocksDB alike. Every run (fio included) is stored; `load_study` finds the
  latest study in the store again through the catalog.
* `seed_tables`: the seed's tables with its column names, medians over the
  repetitions, the published rows beside (`source` local / published).
* The figures of notebook 10 (`fig_qps`, `fig_ioeff`, `fig_block_align`,
  `fig_reqsz`) and the glue of notebook 20 between a study and rxlab.model
  (`model_rows`, `compare_models`, `held_out`, `sensitivity_data` and their
  figures). Figures are built with rxlab.figures.figure(); the notebooks save
  them through rxlab.figures.save().

Columns come from rxlab.metrics only (seed_columns, efficiency): nothing here
computes qps, iops, io.eff or the CPU per operation itself.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import figures, metrics, model, published, store, study
from . import params as checks
from .sysinfo import work_space

__all__ = [
    "PUBLISHED", "SCALES", "SEED_TESTS", "Comparison", "Params", "Settings", "StudyResult", "agreement",
    "background_io", "compare_models", "error_summary", "fig_block_align", "fig_ioeff", "fig_model_error",
    "fig_predicted_vs_measured", "fig_qps", "fig_reqsz", "fig_sensitivity_cpu", "fig_sensitivity_device",
    "findings", "held_out", "held_out_change", "load_study", "model_findings", "model_rows", "plan", "repeatability",
    "round_like_seed", "run_study", "seed_rows", "seed_tables", "sensitivity_data", "sequence", "steal_effect",
    "study_frame", "unaligned_cost", "with_delay",
]

SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
# The published tables behind the figures (for the figures' JSON sidecars).
PUBLISHED = (f"{SEED_FILE}: ioeff_fio", f"{SEED_FILE}: ioeff_db_bench", f"{SEED_FILE}: ioeff_efficiency",
             f"{SEED_FILE}: ioeff_model")
SEED_TESTS = model.SEED_TESTS          # readrandom, readrandom2, readrandom3
BLOCK_BYTES = 8192                     # the seed's block size and fio's bs
KEY_SIZE = 16                          # db_bench's default key size (the driver's RunSpec default)
FIO_TOOL = "rxlab-fio"
# The same fio run placed away from the CPU that takes the disk's interrupts: one job pinned to
# another CPU, or several jobs pinned one per CPU (fio's cpus_allowed_policy=split), as RocksDB's
# readers spread. Its reads are woken by an inter-processor wake-up, whose cost (rxlab.model's
# remote_us) no CPU, run-queue or disk counter holds. Not a baseline: io.eff's denominator stays
# FIO_TOOL, fio left to the scheduler, which keeps its jobs on the interrupt's CPU.
FIO_AWAY_TOOL = "rxlab-fio-away"
# fio reading the way RocksDB reads without block_align: blocks a little over 8 KiB (bs=8704)
# that start anywhere in a page (blockalign=512), placed as the baseline is (left to the
# scheduler), so that the two differ in the reads alone. Run only where the study has
# block_align off; not a baseline either. `unaligned_cost` sets its cost beside what RocksDB's
# reads without block_align cost; the model fits on it only when asked (model_rows(...,
# unaligned=True)): on these VMs fio's unaligned reads cost several times more per KiB.
FIO_UNALIGNED_TOOL = "rxlab-fio-unaligned"
UNALIGNED_BS, UNALIGNED_ALIGN = BLOCK_BYTES + 512, 512
# run kind (the run name's suffix) of each fio tool
FIO_KINDS = {FIO_TOOL: "fio", FIO_AWAY_TOOL: "fioaway", FIO_UNALIGNED_TOOL: "fio512"}
DB_TOOL = "rocksdb"
RUN_PREFIX = "ioeff-"

# Column sets of the seed's tables.
FIO_COLUMNS = ("iops", "usPer", "syPer", "cpuPer", "lat.us", "numjobs")
DB_COLUMNS = metrics.SEED_COLUMNS      # qps iops reqsz usPer syPer cpuPer rx.lat io.lat test
EFF_COLUMNS = (*metrics.EFFICIENCY_COLUMNS, "test")
DB_TABLE_COLUMNS = (*DB_COLUMNS, "users", "source", "n", "backend")
_NUMERIC = (*(c for c in metrics.SEED_COLUMNS if c != "test"), *metrics.EFFICIENCY_COLUMNS)


# --------------------------------------------------------------------------- parameters

@dataclass(frozen=True)
class Scale:
    """A scale preset. `num` None means: sized from the free disk (full)."""

    num: int | None
    duration: float            # seconds per read step (readrandom, readrandom2, readrandom3)
    revrange_duration: float   # seconds of revrange, whose results the seed ignores
    fio_runtime: float
    fio_ramp: float
    fio_size: int | None       # bytes of fio's file (None: the DB's size, capped)
    repeats: int
    cache_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int


MIB, GIB = 1 << 20, 1 << 30
SCALES = {
    # seconds in total: a 12 MB DB, 1 MiB cache; small write buffers so the tree still has levels
    "smoke": Scale(num=30_000, duration=1.0, revrange_duration=0.3, fio_runtime=1.0, fio_ramp=0.2,
                   fio_size=64 * MIB, repeats=1, cache_size=1 * MIB, write_buffer_size=1 * MIB,
                   target_file_size_base=1 * MIB, max_bytes_for_level_base=4 * MIB),
    # minutes: 2M keys (about 0.8 GiB, 100x the 8 MiB cache), the stock reference's settings
    "small": Scale(num=2_000_000, duration=5.0, revrange_duration=2.0, fio_runtime=5.0, fio_ramp=1.0,
                   fio_size=1 * GIB, repeats=3, cache_size=8 * MIB, write_buffer_size=64 * MIB,
                   target_file_size_base=64 * MIB, max_bytes_for_level_base=256 * MIB),
    # the largest run the disk holds: a quarter of the free space, 4..16 GiB, 64 MiB cache
    "full": Scale(num=None, duration=20.0, revrange_duration=5.0, fio_runtime=20.0, fio_ramp=2.0,
                  fio_size=None, repeats=3, cache_size=64 * MIB, write_buffer_size=64 * MIB,
                  target_file_size_base=64 * MIB, max_bytes_for_level_base=256 * MIB),
}
FULL_DISK_FRACTION = 0.25    # of the free space, for the DB (compaction needs as much again)
FULL_MIN_BYTES = 4 * GIB     # below this, full is no bigger than small: refuse
FULL_MAX_BYTES = 16 * GIB    # a sequence rewrites the DB three times; 16 GiB keeps a run to hours
FIO_MAX_BYTES = 16 * GIB

MAX_THREADS = 256            # rxlab fio's numjobs limit
MAX_DELAY_US = 100_000


@dataclass(frozen=True)
class Settings:
    """A scale resolved on this machine: what a study will actually run."""

    scale: str
    num: int
    db_bytes: int
    duration: float
    revrange_duration: float
    fio_runtime: float
    fio_ramp: float
    fio_size: int
    repeats: int
    cache_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int
    work_dir: str
    free_bytes: int

    def table(self) -> pd.DataFrame:
        """One row per setting, sizes in readable units, for a notebook."""
        def size(b):
            return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / MIB:.0f} MiB"

        rows = [("keys (num)", f"{self.num:,}"), ("DB size (keys x (16 + value))", size(self.db_bytes)),
                ("block cache", size(self.cache_size)),
                ("DB / cache", f"{self.db_bytes / self.cache_size:.0f}x"),
                ("read step duration", f"{self.duration:g} s"),
                ("revrange duration", f"{self.revrange_duration:g} s"),
                ("fio runtime (+ ramp)", f"{self.fio_runtime:g} s (+ {self.fio_ramp:g} s)"),
                ("fio file", size(self.fio_size)), ("repeats", str(self.repeats)),
                ("write buffer / L1 target", f"{size(self.write_buffer_size)} / "
                                             f"{size(self.max_bytes_for_level_base)}"),
                ("work directory", self.work_dir), ("free there", size(self.free_bytes))]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


_fail, _as_list, _is_int, _is_bool, _check_backend = (checks.fail, checks.as_list, checks.is_int,
                                                     checks.is_bool, checks.backend)


def _bytes(v) -> int:
    from .rawio import parse_size

    return parse_size(v)


@dataclass
class Params(checks.Checked):
    """The study's parameters (the notebooks' papermill parameters).

    backend: default, default?io_uring=1 or an rxlab engine URI (posix,
    libaio, io_uring?registered_files=1&fixed_buffers=1, ...). threads: the
    client counts (fio numjobs alike). scale: smoke | small | full.
    db_dir: where the DB and fio's file go (None: a temporary directory in
    $TMPDIR; it must support O_DIRECT). block_align: the settings to run.
    repeats, duration: None takes the scale's. value_size: bytes per value
    (the seed's 400). delay_us: emulated device latency per read (rxlab
    engines only; fio's baseline gets the same). db_size: bytes (or '2g') of
    key-value data instead of the scale's key count.
    """

    backend: str = "posix"
    threads: list = field(default_factory=lambda: [1, 2])
    scale: str = "small"
    db_dir: str | None = None
    block_align: list = field(default_factory=lambda: [True, False])
    repeats: int | None = None
    value_size: int = 400
    duration: float | None = None
    delay_us: list = field(default_factory=lambda: [0])
    db_size: int | str | None = None

    def __post_init__(self):
        self.backend = _check_backend(self.backend)
        th = _as_list(self.threads)
        if not th or not all(_is_int(t) and 1 <= t <= MAX_THREADS for t in th) or len(set(th)) != len(th):
            _fail("threads", self.threads, f"expected a non-empty list of distinct integers 1..{MAX_THREADS}")
        self.threads = [int(t) for t in th]
        if self.scale not in SCALES:
            _fail("scale", self.scale, f"allowed are {', '.join(SCALES)}")
        ba = _as_list(self.block_align)
        if not ba or not all(_is_bool(b) for b in ba) or len(set(ba)) != len(ba):
            _fail("block_align", self.block_align,
                  "expected True, False or a list of them, e.g. [True, False]")
        self.block_align = [bool(b) for b in ba]
        if self.repeats is not None and not (_is_int(self.repeats) and 1 <= self.repeats <= 100):
            _fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..100")
        if not (_is_int(self.value_size) and 1 <= self.value_size <= 1 << 20):
            _fail("value_size", self.value_size, "expected an integer 1..1048576 (bytes)")
        if self.duration is not None and not (isinstance(self.duration, (int, float)) and not _is_bool(
                self.duration) and 0 < self.duration <= 3600):
            _fail("duration", self.duration, "expected None (the scale's) or seconds in (0, 3600]")
        dl = _as_list(self.delay_us)
        if not dl or not all(_is_int(d) and 0 <= d <= MAX_DELAY_US for d in dl) or len(set(dl)) != len(dl):
            _fail("delay_us", self.delay_us,
                  f"expected a non-empty list of distinct integers 0..{MAX_DELAY_US}")
        self.delay_us = [int(d) for d in dl]
        if any(self.delay_us) and self.backend.removeprefix("rxlab://").startswith("default"):
            _fail("delay_us", self.delay_us, "delays need an rxlab engine (posix, libaio, io_uring), "
                                             "not the default file system")
        if self.db_size is not None:
            try:
                n = _bytes(self.db_size)
            except ValueError:
                n = -1
            if n < MIB:
                _fail("db_size", self.db_size,
                      "expected None (the scale's) or a size of at least 1m, e.g. '2g'")
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()  # the disk must hold the scale

    def with_delays(self, delay_us) -> Params | None:
        """The delay study that goes with these parameters: one client (the smallest thread count),
        the first block_align setting, the given delays; None when no delay is above 0."""
        dl = _as_list(delay_us)
        if not any(d for d in dl if _is_int(d)) and all(_is_int(d) for d in dl):
            return None
        return dataclasses.replace(self, threads=[min(self.threads)], block_align=self.block_align[:1],
                                   delay_us=dl)

    def settings(self) -> Settings:
        """The scale resolved here: key count, sizes, durations, repeats; checks the free disk."""
        sc = SCALES[self.scale]
        work, free = work_space(self.db_dir)
        entry = KEY_SIZE + self.value_size
        if self.db_size is not None:
            num = max(1, _bytes(self.db_size) // entry)
        elif sc.num is not None:
            num = sc.num
        else:
            db_bytes = int(min(FULL_MAX_BYTES, free * FULL_DISK_FRACTION))
            if db_bytes < FULL_MIN_BYTES:
                raise ValueError(f"scale='full': needs {FULL_MIN_BYTES * 4 / GIB:.0f} GiB free at {work} "
                                 f"for a DB of at least {FULL_MIN_BYTES / GIB:.0f} GiB, only "
                                 f"{free / GIB:.1f} GiB free; use scale='small' or another db_dir")
            num = db_bytes // entry
        db_bytes = num * entry
        fio_size = sc.fio_size if sc.fio_size is not None else min(FIO_MAX_BYTES, db_bytes)
        need = 2 * db_bytes + fio_size  # the DB, its compaction's copy, fio's file
        if need > free:
            raise ValueError(f"scale={self.scale!r}: needs about {need / GIB:.1f} GiB free at {work}, only "
                             f"{free / GIB:.1f} GiB free; choose another db_dir or a smaller db_size")
        dur = float(self.duration) if self.duration is not None else sc.duration
        return Settings(scale=self.scale, num=int(num), db_bytes=int(db_bytes), duration=dur,
                        revrange_duration=min(sc.revrange_duration, dur),
                        fio_runtime=float(self.duration) if self.duration is not None else sc.fio_runtime,
                        fio_ramp=sc.fio_ramp, fio_size=int(fio_size),
                        repeats=self.repeats if self.repeats is not None else sc.repeats,
                        cache_size=sc.cache_size, write_buffer_size=sc.write_buffer_size,
                        target_file_size_base=sc.target_file_size_base,
                        max_bytes_for_level_base=sc.max_bytes_for_level_base, work_dir=str(work),
                        free_bytes=int(free))


# --------------------------------------------------------------------------- running

def sequence(settings: Settings) -> list:
    """The seed's sequence (driver.SEQUENCES['io_efficiency']) with its per-step options.

    The fill, flush and compaction steps run single-threaded as in the seed's
    helper scripts (benchmark.sh loads with one thread whatever the user
    count); the read steps run with the study's thread count. revrange,
    whose results the seed ignores, is cut to `revrange_duration`.
    """
    from .driver import SEQUENCES

    one = {"threads": 1}
    opts = {"fillseq": one, "overwritesome": one, "flush_mt_l0": one, "compact": one,
            "revrange": {"duration": settings.revrange_duration}}
    return [{"name": s, **opts[s]} if s in opts else s for s in SEQUENCES["io_efficiency"]]


_rot = study.rotate


def with_delay(backend: str, delay_us: int) -> str:
    """backend URI with ?delay_us=N (or &delay_us=N) added; unchanged for 0."""
    if not delay_us:
        return backend
    return f"{backend}{'&' if '?' in backend else '?'}delay_us={int(delay_us)}"


def _strip_delay(uri: str) -> str:
    base, _, q = str(uri).partition("?")
    parts = [p for p in q.split("&") if p and not p.startswith("delay_us=")]
    return base + ("?" + "&".join(parts) if parts else "")


def _run_name(study: str, rep: int, threads: int, delay: int, kind: str) -> str:
    return f"{RUN_PREFIX}{study}-r{rep}-t{threads}-d{delay}-{kind}"


_NAME_RE = re.compile(r"^ioeff-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)-t(?P<threads>\d+)"
                      r"-d(?P<delay>\d+)-(?P<kind>fio|fioaway|fio512|ba0|ba1)$")


def plan(params: Params) -> pd.DataFrame:
    """The runs of a study in execution order: rep, delay_us, threads, tool, block_align.

    For each repetition, delay and thread count: fio first, then the seed's
    sequence for each block_align setting. Each repetition rotates the order
    of the delays, thread counts and block_align settings, so no configuration
    always runs first (after a cold start) or last. Undelayed, fio also runs
    placed away from the interrupt's CPU (FIO_AWAY_TOOL: one job pinned to
    another CPU, more jobs one per CPU), right after the baseline, and where
    block_align off is studied, reading unaligned blocks (FIO_UNALIGNED_TOOL).
    """
    rows = []
    for rep in range(params.settings().repeats):
        for d in _rot(params.delay_us, rep):
            for t in _rot(params.threads, rep):
                rows.append({"rep": rep, "delay_us": d, "threads": t, "tool": FIO_TOOL, "block_align": None})
                if d == 0:
                    rows.append({"rep": rep, "delay_us": d, "threads": t, "tool": FIO_AWAY_TOOL,
                                 "block_align": None})
                    if False in params.block_align:
                        rows.append({"rep": rep, "delay_us": d, "threads": t, "tool": FIO_UNALIGNED_TOOL,
                                     "block_align": None})
                for ba in _rot(params.block_align, rep):
                    rows.append({"rep": rep, "delay_us": d, "threads": t, "tool": DB_TOOL, "block_align": ba})
    return pd.DataFrame(rows, columns=["rep", "delay_us", "threads", "tool", "block_align"])


_new_study_id = study.new_study_id


def away_cpu(path) -> int | None:
    """A CPU this process may use other than the one that takes the interrupts of the disk
    holding `path` (None: one CPU only, or the interrupts cannot be found)."""
    from . import placement

    irq = placement.busiest_irq_cpu(path)
    others = sorted(c for c in os.sched_getaffinity(0) if c != irq)
    return others[0] if irq is not None and others else None


def _run_fio(params: Params, s: Settings, filename: Path, *, study: str, rep: int, threads: int, delay: int,
             root: Path, tool: str = FIO_TOOL) -> Path | None:
    """rxlab fio (sync, qd1, numjobs=threads) on `filename`, stored as a run of its own.

    tool FIO_AWAY_TOOL: one job pinned to a CPU other than the interrupt's, more jobs pinned one
    per CPU (None when it cannot be placed: one CPU, or the interrupt's CPU is unknown);
    FIO_UNALIGNED_TOOL: unaligned blocks of bs=8704 at 512-byte offsets, placed as the baseline.
    """
    from . import rawio

    placed, shape = {}, {"bs": BLOCK_BYTES}
    if tool == FIO_AWAY_TOOL:
        cpu = away_cpu(filename)
        if cpu is None:
            return None
        placed = {"cpus_allowed": str(cpu)} if threads == 1 else {"cpus_allowed_policy": "split"}
    if tool == FIO_UNALIGNED_TOOL:
        shape = {"bs": UNALIGNED_BS, "blockalign": UNALIGNED_ALIGN}
    opts = f"delay_us={delay}" if delay else ""
    meta = {"name": _run_name(study, rep, threads, delay, FIO_KINDS[tool]), "tool": tool, "study": study,
            "rep": rep, "threads": threads, "delay_us": delay, "scale": params.scale,
            "study_backend": params.backend}
    return rawio.run_stored(root, filename, meta, rw="randread", size=s.fio_size, direct=True,
                            ioengine="sync", iodepth=1, numjobs=threads, runtime=s.fio_runtime,
                            ramp_time=s.fio_ramp, engine_options=opts, seed=rep + 1, **shape, **placed)


def _run_db(params: Params, s: Settings, db: Path, *, study: str, rep: int, threads: int, delay: int,
            block_align: bool, root: Path) -> Path:
    from . import driver

    spec = driver.RunSpec(
        db=str(db), name=_run_name(study, rep, threads, delay, f"ba{int(block_align)}"),
        backend=with_delay(params.backend, delay), steps=sequence(s), num=s.num, key_size=KEY_SIZE,
        value_size=params.value_size, threads=threads, duration=s.duration, block_size=BLOCK_BYTES,
        block_align=block_align, compression="none", cache_size=s.cache_size,
        write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
        max_bytes_for_level_base=s.max_bytes_for_level_base, scale=params.scale, seed=1000 * rep)
    return driver.run(spec, root=root, progress=False)


@dataclass
class StudyResult:
    """A study: its runs (fio and RocksDB) and one tidy frame of their rows.

    frame: one row per RocksDB step and one per fio run (fio's total row),
    keyed by study, rep, tool (rocksdb | rxlab-fio), backend, threads (the
    configuration's client count; fill steps ran with one, see
    `step_threads`), block_align (None for fio), delay_us, test (the step's
    name: the seed's test names, fio-sync for fio), run_id; then the raw
    step columns and the seeds' columns from rxlab.metrics.seed_columns.
    """

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    params: Params | None = None
    settings: Settings | None = None
    elapsed_s: float | None = None

    @property
    def backend(self) -> str:
        b = self.frame["backend"].dropna().unique()
        return str(b[0]) if len(b) else ""

    @property
    def threads(self) -> list[int]:
        return sorted(int(t) for t in self.frame["threads"].unique())

    @property
    def block_align(self) -> list[bool]:
        ba = self.frame.loc[self.frame["tool"] == DB_TOOL, "block_align"].dropna().unique()
        return sorted((bool(b) for b in ba), reverse=True)

    @property
    def delays(self) -> list[int]:
        return sorted(int(d) for d in self.frame["delay_us"].unique())

    @property
    def repeats(self) -> int:
        return int(self.frame["rep"].nunique())


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True) -> StudyResult:
    """Run the study (see `plan` for the order) and store every run under `root` (the store's default).

    The DB and fio's file live in `params.db_dir` (or a temporary directory)
    and are deleted at the end; the results stay in the store.
    """
    from tqdm import tqdm

    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    study = _new_study_id()
    temp = params.db_dir is None
    work = Path(tempfile.mkdtemp(prefix="rxlab-ioeff-")) if temp else Path(params.db_dir)
    work.mkdir(parents=True, exist_ok=True)
    db, fio_file = work / f"ioeff-db-{study}", work / f"ioeff-fio-{study}.data"
    steps = plan(params)
    runs: list[Path] = []
    t0 = time.monotonic()
    try:
        bar = tqdm(steps.itertuples(index=False), total=len(steps), desc=f"ioeff {params.scale}",
                   unit="run", disable=not progress)
        for r in bar:
            what = {FIO_TOOL: "fio", FIO_AWAY_TOOL: "fio away",
                    FIO_UNALIGNED_TOOL: "fio unaligned"}.get(r.tool, f"block_align={r.block_align}")
            bar.set_postfix_str(f"rep {r.rep} delay {r.delay_us} threads {r.threads} {what}")
            if r.tool in FIO_KINDS:
                run = _run_fio(params, s, fio_file, study=study, rep=r.rep, threads=r.threads,
                               delay=r.delay_us, root=root, tool=r.tool)
                if run is not None:
                    runs.append(run)
            else:
                runs.append(_run_db(params, s, db, study=study, rep=r.rep, threads=r.threads,
                                    delay=r.delay_us, block_align=r.block_align, root=root))
    finally:
        shutil.rmtree(db, ignore_errors=True)
        fio_file.unlink(missing_ok=True)
        if temp:
            shutil.rmtree(work, ignore_errors=True)
    frame = study_frame(store.catalog(root, runs=runs))
    return StudyResult(study=study, frame=frame, runs=runs, root=root, params=params, settings=s,
                       elapsed_s=time.monotonic() - t0)


_KEYS = ["study", "rep", "tool", "backend", "threads", "block_align", "delay_us", "test", "run_id"]


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """The tidy frame of a study from catalog rows (runs named by run_study; others are dropped)."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=[*_KEYS, *metrics.SEED_COLUMNS])
    m = cat["run_name"].astype(str).str.extract(_NAME_RE)
    keep = m["study"].notna()
    is_fio = m["kind"].isin(list(FIO_KINDS.values()))
    if "job" in cat.columns:  # fio runs: the total row only (per-job rows stay in the store)
        keep &= ~is_fio | (cat["job"].astype(str) == "total")
    cat, m, is_fio = cat[keep].copy(), m[keep], is_fio[keep]
    if cat.empty:
        return pd.DataFrame(columns=[*_KEYS, *metrics.SEED_COLUMNS])
    if "threads" in cat.columns:
        cat = cat.rename(columns={"threads": "step_threads"})
    uri = cat["backend"].astype(str) if "backend" in cat.columns else pd.Series("", index=cat.index)
    study_backend = cat["spec.study_backend"] if "spec.study_backend" in cat.columns else uri
    cat = cat.drop(columns=[c for c in ("backend", "tool", "block_align") if c in cat.columns])
    keys = pd.DataFrame({
        "study": m["study"], "rep": m["rep"].astype(int),
        "tool": m["kind"].map({k: t for t, k in FIO_KINDS.items()}).fillna(DB_TOOL),
        "backend": np.where(is_fio, study_backend.astype(str), uri.map(_strip_delay)),
        "threads": m["threads"].astype(int),
        "block_align": m["kind"].map({"ba1": True, "ba0": False}).astype(object),
        "delay_us": m["delay"].astype(int), "backend_uri": uri}, index=cat.index)
    derived = metrics.seed_columns(cat)
    # other studies' runs in the same store may carry columns of these names: the keys win
    raw = cat.drop(columns=[c for c in (*derived.columns, *keys.columns) if c in cat.columns])
    out = pd.concat([keys, raw, derived], axis=1)
    first = [c for c in _KEYS if c in out.columns]
    out = out[first + [c for c in out.columns if c not in first]]
    return out.sort_values(["study", "rep", "delay_us", "threads", "run_id", "step"] if "step" in out.columns
                           else ["study", "rep", "delay_us", "threads", "run_id"], kind="stable"
                           ).reset_index(drop=True)


def _complete(frame: pd.DataFrame) -> bool:
    """Every RocksDB configuration has its fio baseline and the seed's three read tests."""
    db = frame[frame["tool"] == DB_TOOL]
    fio = frame[frame["tool"] == FIO_TOOL]
    if db.empty or fio.empty:
        return False
    have = set(map(tuple, fio[["rep", "threads", "delay_us"]].to_numpy().tolist()))
    need = set(map(tuple, db[["rep", "threads", "delay_us"]].to_numpy().tolist()))
    if not need <= have:
        return False
    tests = db[db["test"].isin(SEED_TESTS)].groupby("run_id")["test"].nunique()
    return bool(len(tests) == db["run_id"].nunique() and (tests == len(SEED_TESTS)).all())


def load_study(root: str | os.PathLike | None = None, *, params: Params | None = None,
               study: str | None = None, backend: str | None = None, scale: str | None = None,
               delayed: bool | None = None, before: str | None = None) -> StudyResult | None:
    """The latest complete study in the store (catalog runs named ioeff-*), or None.

    params: a study of these parameters (the same backend and scale, and the
    same sets of thread counts, block_align settings and delays; repetitions
    and sizes are not compared). Other filters: study id, backend, scale,
    `delayed` (True: a study with delay_us > 0 rows; False: only undelayed
    rows; None: either), `before` (a study id: only studies started before it).
    """
    root = Path(root) if root is not None else store.default_root()
    cat = store.catalog(root)
    if cat.empty or "run_name" not in cat.columns:
        return None
    cat = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)]
    frame = study_frame(cat)
    if frame.empty:
        return None
    if params is not None:
        backend, scale = params.backend, params.scale
    for sid in sorted(frame["study"].unique(), reverse=True):
        f = frame[frame["study"] == sid]
        db = f[f["tool"] == DB_TOOL]
        scales = set(f["spec.scale"].dropna()) if "spec.scale" in f.columns else set()
        checks = [
            study is None or sid == study,
            before is None or str(sid) < str(before),
            backend is None or set(f["backend"]) == {backend},
            scale is None or scales == {scale},
            delayed is None or bool((f["delay_us"] > 0).any()) == delayed,
            params is None or (set(f["threads"]) == set(params.threads)
                               and set(db["block_align"]) == set(params.block_align)
                               and set(f["delay_us"]) == set(params.delay_us)),
        ]
        if all(checks) and _complete(f):
            runs = [root / r for r in f["run_id"].unique()]
            return StudyResult(study=str(sid), frame=f.reset_index(drop=True), runs=runs, root=root)
    return None


# --------------------------------------------------------------------------- the seed's tables

def seed_rows(result: StudyResult, delay_us: int | None = 0) -> pd.DataFrame:
    """The seed's read tests, one row per run and test, with io.eff, us.inc and cpu.inc.

    Each row is measured against the fio baseline of its own repetition,
    thread count and delay (the run just before it), through
    rxlab.metrics.efficiency. delay_us None keeps every delay.
    """
    f = result.frame
    if delay_us is not None:
        f = f[f["delay_us"] == delay_us]
    db = f[(f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS)]
    fio = f[f["tool"] == FIO_TOOL]
    if db.empty:
        raise ValueError(f"study {result.study}: no readrandom rows at delay_us={delay_us}")
    parts = []
    for (rep, t, d), g in db.groupby(["rep", "threads", "delay_us"], sort=True):
        b = fio[(fio["rep"] == rep) & (fio["threads"] == t) & (fio["delay_us"] == d)]
        if b.empty:
            raise ValueError(f"study {result.study}: no fio baseline for rep={rep}, threads={t}, "
                             f"delay_us={d}")
        eff = metrics.efficiency(g.drop(columns=[c for c in _NUMERIC if c in g.columns]), b.iloc[[0]])
        keys = g[[c for c in _KEYS if c != "test"]]
        parts.append(pd.concat([keys, eff[[*DB_COLUMNS, *metrics.EFFICIENCY_COLUMNS]]], axis=1))
    return pd.concat(parts).sort_index()


def _fio_rows(result: StudyResult, delay_us: int | None = 0) -> pd.DataFrame:
    f = result.frame
    f = f[f["tool"] == FIO_TOOL]
    return f if delay_us is None else f[f["delay_us"] == delay_us]


_median = study.medians


def _users_label(n) -> str:
    return f"{int(n)} user" + ("" if int(n) == 1 else "s")


def _published_users(threads: int) -> int:
    """The seed's table to put beside a local one: 1 user for 1, its 6 users for any other count."""
    return 1 if threads == 1 else 6


def _main_block_align(result: StudyResult) -> bool:
    ba = result.block_align
    return True if True in ba or not ba else ba[0]


def seed_tables(result: StudyResult, delay_us: int = 0) -> dict[str, pd.DataFrame]:
    """The seed's tables, local medians over the repetitions with the published rows beside.

    Keys (the seed's table titles) and columns:

    * "fio": iops usPer syPer cpuPer lat.us numjobs source
    * "db_bench N user(s)" for each thread count (the main block_align
      setting, on when run): qps iops reqsz usPer syPer cpuPer rx.lat io.lat
      test users source
    * "io.eff N user(s)": io.eff us.inc cpu.inc test users source
    * with both block_align settings, at the smallest thread count:
      "block_align disabled", "block_align enabled" (the db_bench columns)
      and "block_align effect": test qps_on qps_off qps_change_pct reqsz_on
      reqsz_off users source

    source is "local" or "published"; local rows carry `n` (repetitions)
    and `backend`. Published rows beside a local N-user table are the seed's
    1-user table for one client and its 6-user table for more (the seed has
    no other counts; `users` says which). The seed does not state the users
    of its block_align tables (users empty there; they equal its 1-user table).
    """
    rows = seed_rows(result, delay_us)
    med = _median(rows, ["threads", "block_align", "test"], _NUMERIC)
    med["backend"] = result.backend
    pub_db = published.load("ioeff_db_bench")
    pub_eff = published.load("ioeff_efficiency")
    pub_fio = published.load("ioeff_fio")
    out: dict[str, pd.DataFrame] = {}

    fio = _median(_fio_rows(result, delay_us), ["threads"], ["iops", "usPer", "syPer", "cpuPer", "rx.lat"])
    fio = fio.rename(columns={"rx.lat": "lat.us"}).assign(numjobs=lambda d: d["threads"], source="local",
                                                          backend="rxlab-fio sync")
    pf = pub_fio.assign(source="published", n=np.nan, backend="fio sync")
    out["fio"] = _stack(fio, pf, [*FIO_COLUMNS, "source", "n", "backend"])

    main = _main_block_align(result)
    for t in result.threads:
        loc = med[(med["threads"] == t) & (med["block_align"] == main)].assign(users=t, source="local")
        pu = _published_users(t)
        pdb = pub_db[pub_db["table"] == f"db_bench {_users_label(pu)}"].assign(source="published", n=np.nan,
                                                                                backend="default")
        out[f"db_bench {_users_label(t)}"] = _stack(loc, pdb, DB_TABLE_COLUMNS)
        pe = pub_eff[pub_eff["table"] == f"io.eff {_users_label(pu)}"].assign(source="published", n=np.nan,
                                                                               backend="default")
        out[f"io.eff {_users_label(t)}"] = _stack(loc, pe, [*EFF_COLUMNS, "users", "source", "n", "backend"])

    if len(result.block_align) >= 2:
        t0 = min(result.threads)
        for ba, title in ((False, "block_align disabled"), (True, "block_align enabled")):
            loc = med[(med["threads"] == t0) & (med["block_align"] == ba)].assign(users=t0, source="local")
            pdb = pub_db[pub_db["table"] == title].assign(source="published", n=np.nan, backend="default")
            out[title] = _stack(loc, pdb, DB_TABLE_COLUMNS)
        out["block_align effect"] = _block_align_effect(out["block_align enabled"],
                                                        out["block_align disabled"])
    return out


def _stack(local: pd.DataFrame, pub: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """Local rows then published rows, the given columns (absent ones empty)."""
    parts = []
    for frame in (local, pub):
        d = frame.reset_index(drop=True).copy()
        for c in cols:
            if c not in d.columns:
                d[c] = np.nan
        parts.append(d[list(cols)].astype(object))
    out = pd.concat(parts, ignore_index=True)
    for c in cols:
        if c in _NUMERIC or c in FIO_COLUMNS or c in ("n", "users"):
            out[c] = pd.to_numeric(out[c], errors="coerce").astype(float)
        else:
            out[c] = out[c].astype(str).where(out[c].notna(), "")
    return out


def _block_align_effect(on: pd.DataFrame, off: pd.DataFrame) -> pd.DataFrame:
    """Per test and source: QPS with and without block_align, the change in %, reqsz both ways."""
    m = on.merge(off, on=["source", "test"], suffixes=("_on", "_off"))
    out = pd.DataFrame({
        "test": m["test"], "qps_on": m["qps_on"], "qps_off": m["qps_off"],
        "qps_change_pct": (m["qps_on"] / m["qps_off"] - 1.0) * 100.0,
        "reqsz_on": m["reqsz_on"], "reqsz_off": m["reqsz_off"], "users": m["users_on"],
        "source": m["source"]})
    order = out["source"].map({"local": 0, "published": 1})
    return out.assign(_o=order).sort_values(["_o", "test"]).drop(columns="_o").reset_index(drop=True)


# How the seed prints each column (decimals); everything else is left alone.
SEED_DECIMALS = {"qps": 0, "iops": 0, "reqsz": 1, "usPer": 3, "syPer": 3, "cpuPer": 3, "rx.lat": 2,
                 "io.lat": 0, "lat.us": 2, "io.eff": 3, "us.inc": 3, "cpu.inc": 3, "qps_on": 0, "qps_off": 0,
                 "qps_change_pct": 1, "reqsz_on": 1, "reqsz_off": 1, "numjobs": 0, "users": 0, "n": 0}


def round_like_seed(df: pd.DataFrame) -> pd.DataFrame:
    """A copy rounded as the seed prints its tables (qps 0 decimals, usPer 3, ...), for display."""
    out = df.copy()
    for c, d in SEED_DECIMALS.items():
        if c in out.columns:
            out[c] = pd.to_numeric(out[c], errors="coerce").round(d)
            if d == 0 and out[c].notna().all():
                out[c] = out[c].astype(int)
    return out


def _rng(s: pd.Series, fmt: str) -> str:
    s = pd.to_numeric(s, errors="coerce").dropna()
    if s.empty:
        return "n/a"
    lo, hi = format(s.min(), fmt), format(s.max(), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def background_io(*results: StudyResult) -> pd.DataFrame:
    """Reads issued by the measured program against reads served by the device, per run.

    fio rows: the reads fio issued per second (its qps); RocksDB rows (the
    seed's read tests, rxlab engines only): the reads the backend counted
    in-process (fs.reads) per second. device_reads_per_s is iops, from
    /proc/diskstats. The device counters are device-wide, as iostat's are in
    the seed: another process reading the same disk during a run is counted
    as the run's, and excess_pct > 0 says by how much. (RocksDB's block cache
    hits make its own reads slightly fewer than its queries; the backend's
    counter sees exactly what reached the file system.)
    """
    parts = []
    for r in results:
        if r is None:
            continue
        f = r.frame
        fio = f[f["tool"] == FIO_TOOL]
        db = f[(f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS)]
        own_db = (pd.to_numeric(db["fs.reads"]) if "fs.reads" in db.columns
                  else pd.Series(np.nan, index=db.index)) / pd.to_numeric(db["wall_s"])
        for rows, own in ((fio, pd.to_numeric(fio["qps"])), (db, own_db)):
            out = rows[["study", "rep", "tool", "threads", "block_align", "delay_us", "test"]].copy()
            out["own_reads_per_s"] = own
            out["device_reads_per_s"] = pd.to_numeric(rows["iops"])
            parts.append(out)
    out = pd.concat(parts, ignore_index=True)
    out["excess_pct"] = (out["device_reads_per_s"] / out["own_reads_per_s"] - 1.0) * 100.0
    return out


BACKGROUND_LIMIT_PCT = 5.0


def _background_lines(background: pd.DataFrame | None) -> list[str]:
    if background is None or background["excess_pct"].isna().all():
        return []
    worst = float(background["excess_pct"].max())
    if worst > BACKGROUND_LIMIT_PCT:
        return [f"- **Caution**: during these runs the device served up to {worst:.0f}% more reads than the "
                "measured program issued (`background_io`): another process was using this disk. iops, "
                "io.eff, reqsz and io.lat come from device-wide counters (as iostat's do in the seed) and "
                "include that IO; rerun on a quiet machine before drawing conclusions from them."]
    return [f"- The device was quiet: it served at most {max(worst, 0):.1f}% more reads than the measured "
            "program issued."]


def findings(tables: Mapping[str, pd.DataFrame], background: pd.DataFrame | None = None) -> str:
    """What the tables show, in a few Markdown bullets with their numbers (for the notebook).

    background: `background_io(result)`; when the device served more than 5%
    more reads than the measured program issued, the first bullet says that
    the device-wide counters (iops, io.eff, reqsz, io.lat) include other
    processes' IO.
    """
    lines = []
    lines.extend(_background_lines(background))
    fio = tables["fio"]
    for _, r in fio[fio["source"] == "local"].iterrows():
        pub = fio[(fio["source"] == "published") & (fio["numjobs"] == _published_users(int(r["numjobs"])))]
        p = pub.iloc[0] if len(pub) else None
        lines.append(f"- fio sync qd1, {int(r['numjobs'])} job(s): {r['iops']:,.0f} IOPS, "
                     f"{r['lat.us']:.1f} us mean latency, {r['cpuPer']:.1f} us CPU per read"
                     + (f" (seed, {int(p['numjobs'])} job(s): {p['iops']:,.0f} IOPS, {p['lat.us']:.1f} us, "
                        f"{p['cpuPer']:.1f} us)." if p is not None else "."))
    for key, t in tables.items():
        if not key.startswith("io.eff "):
            continue
        loc, pub = t[t["source"] == "local"], t[t["source"] == "published"]
        users = key.removeprefix("io.eff ")
        lines.append(f"- io.eff at {users}: {_rng(loc['io.eff'], '.3f')} here against "
                     f"{_rng(pub['io.eff'], '.3f')} in the seed ({_users_label(int(pub['users'].iloc[0]))}); "
                     f"RocksDB adds {_rng(loc['cpu.inc'], '.1f')} us of CPU per query over fio "
                     f"(seed: {_rng(pub['cpu.inc'], '.1f')} us).")
    eff = tables.get("block_align effect")
    if eff is not None and len(eff):
        loc, pub = eff[eff["source"] == "local"], eff[eff["source"] == "published"]
        lines.append(f"- block_align changes QPS by {_rng(loc['qps_change_pct'], '+.1f')}% here "
                     f"(seed: {_rng(pub['qps_change_pct'], '+.1f')}%); the device read size (reqsz) is "
                     f"{_rng(loc['reqsz_off'], '.1f')} KiB without it and {_rng(loc['reqsz_on'], '.1f')} KiB "
                     f"with it (seed: {_rng(pub['reqsz_off'], '.1f')} and "
                     f"{_rng(pub['reqsz_on'], '.1f')} KiB).")
    return "\n".join(lines)


# --------------------------------------------------------------------------- notebook 10's figures

def _local_color(backend: str, i: int) -> tuple:
    """The backend's colour, lighter for each further thread count."""
    import matplotlib.colors as mc

    rgb = np.array(mc.to_rgb(figures.backend_color(backend)))
    return tuple(rgb + (1 - rgb) * min(0.55 * i, 0.8))


_PUB_COLORS = ("#000000", "#8c8c8c")


def _series_bars(ax, series: list[dict], tests: Sequence[str], ylabel: str) -> None:
    """Grouped bars: one group per test, one bar per series (label, color, values by test, points)."""
    n = len(series)
    width = 0.8 / max(n, 1)
    x = np.arange(len(tests))
    for i, s in enumerate(series):
        pos = x - 0.4 + width * (i + 0.5)
        vals = [s["values"].get(t, np.nan) for t in tests]
        ax.bar(pos, vals, width * 0.92, color=s["color"], label=s["label"], hatch=s.get("hatch"),
               edgecolor="white" if not s.get("hatch") else "#333333", linewidth=0.4)
        for j, t in enumerate(tests):
            pts = s.get("points", {}).get(t, [])
            if len(pts) > 1:
                ax.plot([pos[j]] * len(pts), pts, "o", ms=2.2, color="#222222", alpha=0.7, zorder=3)
    ax.set_xticks(x, list(tests))
    ax.set_ylabel(ylabel)
    ax.legend(ncols=2 if n > 2 else 1, loc="lower center", bbox_to_anchor=(0.5, 1.0))


def _per_test(df: pd.DataFrame, col: str) -> dict:
    return dict(zip(df["test"], pd.to_numeric(df[col]), strict=False))


def _users_series(result: StudyResult, tables: Mapping, table_prefix: str, col: str) -> list[dict]:
    rows = seed_rows(result)
    main = _main_block_align(result)
    series, pubs = [], {}
    for i, t in enumerate(result.threads):
        tab = tables[f"{table_prefix} {_users_label(t)}"]
        loc = tab[tab["source"] == "local"]
        pts = rows[(rows["threads"] == t) & (rows["block_align"] == main)].groupby("test")[col].apply(list)
        series.append({"label": f"{result.backend}, {_users_label(t)}",
                       "color": _local_color(result.backend, i), "values": _per_test(loc, col),
                       "points": pts.to_dict()})
        pub = tab[tab["source"] == "published"]
        pubs[int(pub["users"].iloc[0])] = pub
    for i, (u, pub) in enumerate(sorted(pubs.items())):
        series.append({"label": f"seed, {_users_label(u)}", "color": _PUB_COLORS[i % 2],
                       "values": _per_test(pub, col)})
    return series


def fig_qps(result: StudyResult, tables: Mapping | None = None):
    """QPS per test: here (each thread count, dots = repetitions) and in the seed."""
    tables = tables if tables is not None else seed_tables(result)
    fig, ax = figures.figure(aspect=0.75)
    _series_bars(ax, _users_series(result, tables, "db_bench", "qps"), SEED_TESTS, "queries per second")
    return fig


def fig_ioeff(result: StudyResult, tables: Mapping | None = None):
    """io.eff (RocksDB storage IOPS / fio's at the same concurrency) per test, here and in the seed."""
    tables = tables if tables is not None else seed_tables(result)
    fig, ax = figures.figure(aspect=0.75)
    _series_bars(ax, _users_series(result, tables, "io.eff", "io.eff"), SEED_TESTS,
                 "io.eff (RocksDB IOPS / fio IOPS)")
    ax.axhline(1.0, color="#555555", lw=0.6, ls="--")
    ax.set_ylim(0, max(1.1, ax.get_ylim()[1]))
    return fig


def _ba_rows(result: StudyResult) -> pd.DataFrame:
    rows = seed_rows(result)
    return rows[rows["threads"] == min(result.threads)]


def fig_block_align(result: StudyResult, tables: Mapping | None = None):
    """QPS change from block_align (on vs off, %) per test, here (dots: each repetition) and in the seed."""
    tables = tables if tables is not None else seed_tables(result)
    if "block_align effect" not in tables:
        raise ValueError("the study ran one block_align setting: run block_align=[True, False]")
    eff = tables["block_align effect"]
    r = _ba_rows(result)
    piv = r.pivot_table(index=["rep", "test"], columns="block_align", values="qps", aggfunc="first").dropna()
    pts = ((piv[True] / piv[False] - 1.0) * 100.0).groupby(level="test").apply(list).to_dict() \
        if {True, False} <= set(piv.columns) else {}
    loc, pub = eff[eff["source"] == "local"], eff[eff["source"] == "published"]
    series = [{"label": f"{result.backend}, {_users_label(min(result.threads))}",
               "color": _local_color(result.backend, 0),
               "values": _per_test(loc, "qps_change_pct"), "points": pts},
              {"label": "seed", "color": _PUB_COLORS[0], "values": _per_test(pub, "qps_change_pct")}]
    fig, ax = figures.figure(aspect=0.75)
    _series_bars(ax, series, SEED_TESTS, "QPS change with block_align (%)")
    ax.axhline(0.0, color="#555555", lw=0.6)
    return fig


def fig_reqsz(result: StudyResult, tables: Mapping | None = None):
    """Device read size (reqsz, KiB) per test with block_align on and off, here and in the seed."""
    tables = tables if tables is not None else seed_tables(result)
    if "block_align effect" not in tables:
        raise ValueError("the study ran one block_align setting: run block_align=[True, False]")
    eff = tables["block_align effect"]
    r = _ba_rows(result)
    loc, pub = eff[eff["source"] == "local"], eff[eff["source"] == "published"]
    color = figures.backend_color(result.backend)
    series = []
    for ba, col, hatch in ((True, "reqsz_on", None), (False, "reqsz_off", "///")):
        pts = r[r["block_align"] == ba].groupby("test")["reqsz"].apply(list).to_dict()
        series.append({"label": f"{result.backend}, block_align {'on' if ba else 'off'}", "color": color,
                       "hatch": hatch,
                       "values": _per_test(loc, col), "points": pts})
    for ba, col, hatch in ((True, "reqsz_on", None), (False, "reqsz_off", "///")):
        series.append({"label": f"seed, block_align {'on' if ba else 'off'}", "color": _PUB_COLORS[1],
                       "hatch": hatch, "values": _per_test(pub, col)})
    fig, ax = figures.figure(aspect=0.75)
    _series_bars(ax, series, SEED_TESTS, "device read size (KiB)")
    ax.axhline(BLOCK_BYTES / 1024, color="#555555", lw=0.6, ls="--")  # the block size
    return fig


# --------------------------------------------------------------------------- notebook 20: the model

def model_rows(*results: StudyResult, unaligned: bool = False) -> pd.DataFrame:
    """rxlab.model's input from studies: the fio baselines and the seed's read tests.

    Columns: study, rep, tool, backend, threads, delay_us, block_align,
    bloom (readrandom and readrandom2 have bloom filters, readrandom3 not),
    test, run_id, the seeds' columns, runqPer and awayShare where measured, and
    `baseline` (False for the fio runs placed away from the interrupt's CPU,
    which inform the model's remote_us but are no io.eff denominator).
    unaligned=True keeps fio's unaligned runs too (baseline False), so that they
    set the model's size penalty; off by default because on these VMs their
    cost per KiB is several times what RocksDB's reads without block_align pay
    (`unaligned_cost`), and with them the block_align-off rows are predicted worse.
    """
    parts = []
    for r in results:
        if r is None:
            continue
        f = r.frame
        fio_tools = [t for t in FIO_KINDS if unaligned or t != FIO_UNALIGNED_TOOL]
        keep = f["tool"].isin(fio_tools) | ((f["tool"] == DB_TOOL) & f["test"].isin(SEED_TESTS))
        # studies stored before the wait for a CPU (or where the readers woke) was measured lack it
        extra = [c for c in (model.RUNQ, model.AWAY, model.STEAL) if c in f.columns]
        parts.append(f.loc[keep, [*_KEYS, *[c for c in DB_COLUMNS if c != "test"], *extra]])
    if not parts:
        raise ValueError("no study to take model rows from")
    out = pd.concat(parts, ignore_index=True)
    out["bloom"] = out["test"].map(model.SEED_BLOOM).astype(object).where(out["tool"] == DB_TOOL, False)
    out["bloom"] = out["bloom"].astype(bool)
    out["baseline"] = ~out["tool"].isin([t for t in FIO_KINDS if t != FIO_TOOL])
    return out


def unaligned_cost(*results: StudyResult) -> pd.DataFrame:
    """What reads without block_align cost, in fio and in RocksDB, per client count (undelayed).

    fio: its unaligned run (bs=8704 at 512-byte offsets) against its baseline (8 KiB aligned),
    medians over repetitions; RocksDB: block_align off against on, medians over the seed's
    three tests and the repetitions. Columns per threads and tool: reqsz_excess_kib (KiB per
    read above 8), lat_us and io_lat_us (extra latency per read: fio's lat, RocksDB's latency
    per query / reads per query; iostat's io.lat) and io_lat_us_per_kib. Empty without the
    unaligned runs or without both block_align settings.
    """
    rows = model_rows(*results, unaligned=True)
    rows = rows[rows["delay_us"] == 0].copy()
    rows["lat"] = pd.to_numeric(rows["rx.lat"])
    db = rows["tool"] == DB_TOOL
    rows.loc[db, "lat"] = rows.loc[db, "threads"] * 1e6 / pd.to_numeric(rows.loc[db, "iops"])  # per read
    cols = ["reqsz", "lat", "io.lat"]
    out = []
    for t in sorted(rows["threads"].unique()):
        at = rows[rows["threads"] == t]
        at_db = at[at["tool"] == DB_TOOL]
        aligned = at_db["block_align"].astype(bool)
        pairs = [("fio", at[at["tool"] == FIO_UNALIGNED_TOOL], at[at["tool"] == FIO_TOOL]),
                 ("rocksdb", at_db[~aligned], at_db[aligned])]
        for tool, off, on in pairs:
            if off.empty or on.empty:
                continue
            d = off[cols].apply(pd.to_numeric).median() - on[cols].apply(pd.to_numeric).median()
            excess = float(pd.to_numeric(off["reqsz"]).median()) - BLOCK_BYTES / 1024
            out.append({"threads": int(t), "tool": tool, "reqsz_excess_kib": excess, "lat_us": d["lat"],
                        "io_lat_us": d["io.lat"],
                        "io_lat_us_per_kib": d["io.lat"] / excess if excess > 0.05 else np.nan})
    return pd.DataFrame(out, columns=["threads", "tool", "reqsz_excess_kib", "lat_us", "io_lat_us",
                                      "io_lat_us_per_kib"])


def _fio_mask(rows: pd.DataFrame) -> pd.Series:
    """fio rows, as rxlab.model tells them: a tool name containing "fio"."""
    return rows["tool"].astype(str).str.contains("fio", case=False)


def _baseline_mask(rows: pd.DataFrame) -> pd.Series:
    """fio rows that are io.eff's denominator (not the placed or unaligned runs beside them)."""
    base = rows["baseline"].fillna(True).astype(bool) if "baseline" in rows.columns else True
    return _fio_mask(rows) & base


def _seed_predictions(rows: pd.DataFrame) -> pd.DataFrame:
    """The seed's model on each RocksDB row: device = fio lat - fio cpuPer, libc+kernel = fio cpuPer,
    RocksDB = cpu.inc (rxlab.metrics.efficiency against the mean fio row of its threads and delay)."""
    is_fio = _fio_mask(rows)
    fio, db = rows[_baseline_mask(rows)], rows[~is_fio]
    base = fio.groupby(["threads", "delay_us"])[["iops", "usPer", "cpuPer", "rx.lat"]].mean()
    parts = []
    for key, g in db.groupby(["threads", "delay_us"]):
        if key not in base.index:
            raise ValueError(f"no fio baseline for threads={key[0]}, delay_us={key[1]}")
        b = base.loc[key]
        e = metrics.efficiency(g[["qps", "iops", "usPer", "cpuPer"]],
                               {"iops": b["iops"], "usPer": b["usPer"], "cpuPer": b["cpuPer"]})
        pred = model.seed_model(e["cpu.inc"].to_numpy(float), float(b["rx.lat"] - b["cpuPer"]),
                                float(b["cpuPer"]), float(key[0]))
        parts.append(pd.DataFrame({"seed_iops_pred": pred, "cpu.inc": e["cpu.inc"], "io.eff": e["io.eff"]},
                                  index=g.index))
    return pd.concat(parts).loc[db.index]


@dataclass
class Comparison:
    """The seed's model and the fitted model on published and local rows.

    table: one row per RocksDB row (source, test, threads, block_align,
    delay_us, measured iops, both predictions and their errors in %);
    summary: per source and model, rows and max / median |error| %; fits:
    the ModelFit per source.
    """

    table: pd.DataFrame
    summary: pd.DataFrame
    fits: dict


def compare_models(local: pd.DataFrame, published_rows: pd.DataFrame | None = None,
                   n_boot: int | str = "auto") -> Comparison:
    """Fit rxlab.model on each source (the seed's tables, this machine's runs), predict its rows,
    and put the seed's own model beside (IOPS predicted against iops measured, as the seed compares).

    n_boot: bootstrap draws for the standard errors; "auto" draws 200 when
    the local rows repeat each configuration at least 3 times (with fewer, a
    bootstrap says nothing) and none otherwise.
    """
    if n_boot == "auto":
        reps = local[~_fio_mask(local)].groupby(["threads", "delay_us", "block_align", "test"]).size()
        n_boot = 200 if len(reps) and reps.min() >= 3 else 0
    sources = {"published": model.published_frame() if published_rows is None else published_rows,
               "local": local}
    tables, fits = [], {}
    for src, frame in sources.items():
        rows = frame.reset_index(drop=True)
        f = model.fit(rows, n_boot=int(n_boot) if src == "local" else 0)
        fits[src] = f
        pred = f.predict(rows)
        seed = _seed_predictions(rows)
        t = pd.DataFrame({"source": src, "test": pred["test"], "threads": pred["threads"],
                          "block_align": pred.get("block_align", np.nan),
                          "delay_us": pred["delay_us"], "iops": pred["iops"],
                          "seed_iops_pred": seed["seed_iops_pred"],
                          "seed_err_pct": (seed["seed_iops_pred"] / pred["iops"] - 1.0) * 100.0,
                          "fitted_iops_pred": pred["iops_pred"], "fitted_err_pct": pred["err_iops_pct"],
                          "qps": pred["qps"], "fitted_qps_pred": pred["qps_pred"],
                          "fitted_err_qps_pct": pred["err_qps_pct"]})
        tables.append(t)
    table = pd.concat(tables, ignore_index=True)
    return Comparison(table=table, summary=error_summary(table), fits=fits)


def error_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per source and model: rows, max and median |error| % and the share within 3%."""
    out = []
    for src, g in table.groupby("source", sort=False):
        for name, col in (("seed", "seed_err_pct"), ("fitted", "fitted_err_pct")):
            a = pd.to_numeric(g[col]).abs()
            out.append({"source": src, "model": name, "rows": int(a.size), "max_abs_err_pct": a.max(),
                        "median_abs_err_pct": a.median(), "within_3pct": float((a <= 3.0).mean())})
    return pd.DataFrame(out)


# The held-out models: rxlab.model's device option -> the name in held_out's summary.
HELD_OUT_MODELS = {"curve": "fitted", "iostat": "fitted, iostat device"}


def held_out(rows: pd.DataFrame,
             devices: Sequence[str] = tuple(HELD_OUT_MODELS)) -> tuple[pd.DataFrame, pd.DataFrame]:
    """rxlab.model.evaluate over the splits these rows allow; returns (rows, summary).

    Splits: each test left out in turn (fit on the other two); block_align
    off predicted from on; the larger thread counts from the smallest; the
    delayed rows from the undelayed. devices: the fitted models to hold out,
    rxlab.model's `device` option: "curve" predicts from fio's device
    ("fitted"), "iostat" takes each run's own io.lat ("fitted, iostat
    device"; the seed's model is reported once, beside the first). The rows
    carry the option in `device`. A split that cannot be fitted is
    reported in the summary's `note` instead of failing the notebook.
    `config_floor_pct` is the median over the held-out configurations of
    `repeatability`'s floor: what a model that knew each one's true rate
    would still miss its median by (NaN with one repetition). The errors can
    be smaller: the held-out rows ran in the same repetitions as the rows the
    model was fitted on, and share their drift.
    """
    bad = [d for d in devices if d not in HELD_OUT_MODELS]
    if bad or not devices:
        raise ValueError(f"held_out devices={list(devices)!r}: choose from {', '.join(HELD_OUT_MODELS)}")
    is_db = ~_fio_mask(rows)
    splits = [(f"{t} held out", is_db & (rows["test"] != t)) for t in SEED_TESTS]
    if rows.loc[is_db, "block_align"].nunique() > 1:
        splits.append(("block_align off from on", is_db & (rows["block_align"] == True)))  # noqa: E712
    th = sorted(rows.loc[is_db, "threads"].unique())
    if len(th) > 1:
        splits.append((f"threads > {th[0]} from {th[0]}", is_db & (rows["threads"] == th[0])))
    if (rows.loc[is_db, "delay_us"] > 0).any() and (rows.loc[is_db, "delay_us"] == 0).any():
        splits.append(("delayed from undelayed", is_db & (rows["delay_us"] == 0)))
    all_rows, summ = [], []
    for device, (name, mask) in ((d, sp) for d in devices for sp in splits):
        try:
            ev = model.evaluate(rows, fit_on=mask.to_numpy(), device=device)
        except ValueError as e:
            summ.append({"split": name, "model": HELD_OUT_MODELS[device], "rows": 0,
                         "max_abs_err_pct": np.nan,
                         "median_abs_err_pct": np.nan, "configs": 0, "config_max_abs_err_pct": np.nan,
                         "config_median_abs_err_pct": np.nan, "config_floor_pct": np.nan, "note": str(e)})
            continue
        all_rows.append(ev.rows.assign(split=name, device=device))
        per_config = config_errors(ev.rows)
        floor = float(repeatability(ev.rows)["floor_pct"].median())
        for _, s in ev.summary.iterrows():
            if s["model"] == "fitted (qps)" or (s["model"] == "seed (iops)" and device != devices[0]):
                continue
            m = s["model"].removesuffix(" (iops)")
            c = per_config[f"{m}_err_pct"].abs()
            summ.append({"split": name, "model": HELD_OUT_MODELS[device] if m == "fitted" else m,
                         "rows": s["rows"],
                         "max_abs_err_pct": s["max_abs_err_pct"],
                         "median_abs_err_pct": s["median_abs_err_pct"],
                         "configs": len(c), "config_max_abs_err_pct": c.max(),
                         "config_median_abs_err_pct": c.median(), "config_floor_pct": floor, "note": ""})
    out_rows = pd.concat(all_rows, ignore_index=True) if all_rows else pd.DataFrame()
    return out_rows, pd.DataFrame(summ, columns=["split", "model", "rows", "max_abs_err_pct",
                                                 "median_abs_err_pct", "configs", "config_max_abs_err_pct",
                                                 "config_median_abs_err_pct", "config_floor_pct", "note"])


HELD_OUT_CONFIG = ("test", "block_align", "threads", "delay_us")


def config_errors(pred: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per configuration, the median over its repetitions of measured and predicted IOPS and the error.

    The studies judge every figure on medians of repetitions; a single
    repetition carries the host's drift (fio's device latency moves 5-15%
    from one repetition to the next here), which no model of the
    configuration can predict. `by`: the columns that name a configuration
    (default: those of HELD_OUT_CONFIG present). Columns: iops, fitted_iops,
    seed_iops, n and fitted_err_pct / seed_err_pct (median predicted /
    median measured - 1).
    """
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in pred.columns]
    if not by:
        raise ValueError(f"config_errors: none of the columns {list(HELD_OUT_CONFIG if by is None else by)} "
                         "is in the predictions")
    g = pred.groupby(by, dropna=False).agg(iops=("iops", "median"), fitted_iops=("iops_pred", "median"),
                                           seed_iops=("seed_iops_pred", "median"), n=("iops", "size"))
    g["fitted_err_pct"] = (g["fitted_iops"] / g["iops"] - 1.0) * 100.0
    g["seed_err_pct"] = (g["seed_iops"] / g["iops"] - 1.0) * 100.0
    return g.reset_index()


@functools.lru_cache(maxsize=None)
def _median_abs_normal(n: int) -> float:
    """E|median of n standard normal draws| (a fixed-seed simulation: the same number every time)."""
    rng = np.random.default_rng(12345)
    return float(np.mean(np.abs(np.median(rng.standard_normal((200_000, max(int(n), 1))), axis=1))))


def repeatability(rows: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """How far a configuration's median over its repetitions can be from its own true rate.

    Per configuration of the RocksDB rows (`by`, default HELD_OUT_CONFIG): n repetitions, the
    median qps, `spread_pct` ((max - min) / median), `sd_pct` (their standard deviation in % of the
    median) and `floor_pct`: E|median of n - mean| for normal draws of that spread, that is what a
    model that knew each configuration's true rate would still miss the median by, on average.
    With n=3 the spread is itself rough: read the floor as a scale, not a bound.
    """
    db = rows[~_fio_mask(rows)] if "tool" in rows.columns else rows
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in db.columns]
    if not by or db.empty:
        raise ValueError("repeatability: needs RocksDB rows with qps and configuration columns "
                         f"({', '.join(HELD_OUT_CONFIG)})")
    qps = pd.to_numeric(db["qps"])
    g = qps.groupby([db[c] for c in by], dropna=False)
    out = pd.DataFrame({"n": g.size(), "qps": g.median(), "qps_min": g.min(), "qps_max": g.max(),
                        "sd": g.std(ddof=1)})
    out["spread_pct"] = (out["qps_max"] - out["qps_min"]) / out["qps"] * 100.0
    out["sd_pct"] = out.pop("sd") / out["qps"] * 100.0
    out["floor_pct"] = [sd * _median_abs_normal(n) if n > 1 else np.nan
                        for sd, n in zip(out["sd_pct"], out["n"], strict=True)]
    return out.reset_index()


def agreement(a: pd.DataFrame, b: pd.DataFrame, by: Sequence[str] | None = None) -> pd.DataFrame:
    """The same configurations in two studies (model_rows of each): median qps in each and
    `diff_pct` = b / a - 1. On one machine, a day apart or an hour, this is the A/A difference that
    any model fitted on one study and judged on the other's medians carries."""
    ra, rb = repeatability(a, by), repeatability(b, by)
    keys = [c for c in ra.columns if c in (HELD_OUT_CONFIG if by is None else by)]
    m = ra[[*keys, "n", "qps"]].merge(rb[[*keys, "n", "qps"]], on=keys, suffixes=("_a", "_b"))
    if m.empty:
        raise ValueError("agreement: the two studies share no configuration")
    m["diff_pct"] = (m["qps_b"] / m["qps_a"] - 1.0) * 100.0
    return m


def steal_effect(rows: pd.DataFrame, by: Sequence[str] | None = None) -> pd.Series:
    """How much of the repetitions' spread the hypervisor's steal accounts for.

    Over the RocksDB rows, within each configuration (`by`, default HELD_OUT_CONFIG), log qps and
    cpuPer regressed on stealPer (each centred on its configuration's mean, one pooled slope):
    `qps_pct_per_10us` (% of qps per 10 us of steal per query), `cpu_us_per_us` (us of cpuPer per us
    of steal), `r2` (the share of the within-configuration variance of log qps that steal
    explains), and the rows' stealPer (`steal_median_us`, `steal_max_us`) and `rows`. Where steal
    does not vary within any configuration (one repetition each, as at smoke scale) the slopes and
    r2 are NaN: there is nothing to regress.
    """
    db = rows[~_fio_mask(rows)] if "tool" in rows.columns else rows
    by = [c for c in (HELD_OUT_CONFIG if by is None else by) if c in db.columns]
    if not by or model.STEAL not in db.columns or pd.to_numeric(db[model.STEAL], errors="coerce").notna().sum() < 3:
        raise ValueError(f"steal_effect: needs RocksDB rows with {model.STEAL} and configuration columns "
                         f"({', '.join(HELD_OUT_CONFIG)})")
    d = db.assign(_lq=np.log(pd.to_numeric(db["qps"])), _s=pd.to_numeric(db[model.STEAL]),
                  _c=pd.to_numeric(db["cpuPer"])).dropna(subset=["_lq", "_s", "_c"])
    g = d.groupby(by, dropna=False)
    x, lq, cpu = (d[c] - g[c].transform("mean") for c in ("_s", "_lq", "_c"))
    sxx, syy = float((x * x).sum()), float((lq * lq).sum())
    b_q, b_c = (float((x * lq).sum()) / sxx, float((x * cpu).sum()) / sxx) if sxx > 0 else (np.nan, np.nan)
    return pd.Series({"rows": len(d), "steal_median_us": float(d["_s"].median()), "steal_max_us": float(d["_s"].max()),
                      "qps_pct_per_10us": (np.exp(10.0 * b_q) - 1.0) * 100.0, "cpu_us_per_us": b_c,
                      "r2": b_q * b_q * sxx / syy if sxx > 0 and syy > 0 else np.nan})


def held_out_change(with_term: pd.DataFrame, without: pd.DataFrame) -> pd.DataFrame:
    """Two `held_out` summaries side by side (the same rows with and without a term's column, say
    stealPer): per split and model, the median and worst configuration's error in each, and the
    change (with - without, percentage points; negative is better)."""
    keys = ["split", "model"]
    cols = ["config_median_abs_err_pct", "config_max_abs_err_pct"]
    m = with_term[keys + cols].merge(without[keys + cols], on=keys, suffixes=("", "_without"))
    if m.empty:
        raise ValueError("held_out_change: the two summaries share no split and model")
    for c in cols:
        m[c.replace("_abs_err_pct", "_change_pp")] = m[c] - m[f"{c}_without"]
    return m


def _steal_lines(f: model.ModelFit | None, eff: pd.Series | None) -> list[str]:
    """The host's steal: how the runs moved with it, and the model's steal_factor ([] without either)."""
    lines = []
    if eff is not None and not np.isnan(eff["r2"]):
        lines.append(f"- The host's steal (stealPer, us per query that the VM's runnable vCPUs waited for a "
                     f"physical CPU) was {eff['steal_median_us']:.1f} us per query in the median RocksDB row and "
                     f"up to {eff['steal_max_us']:.1f}. Within a configuration, each 10 us of it moved qps by "
                     f"{eff['qps_pct_per_10us']:+.1f}% and cpuPer by {10 * eff['cpu_us_per_us']:+.1f} us, and it "
                     f"accounts for {eff['r2']:.0%} of the repetitions' spread of qps (steal_effect).")
    if f is not None and "steal_factor" in f.free:
        lines.append(f"- Beyond the CPU it inflates, each us of steal per query cost "
                     f"{f.params['steal_factor']:.2f} ± {f.stderr['steal_factor']:.2f} us of latency "
                     f"(steal_factor, fitted on fio's and RocksDB's rows alike: the emulated disk answers later "
                     f"when the host is busy).")
    return lines


def _floor_clause(h: pd.DataFrame) -> str:
    """'; the medians themselves ...' from held_out's config_floor_pct, or '' where it is unknown."""
    if "config_floor_pct" not in h.columns or not h["config_floor_pct"].notna().any():
        return ""
    return (f"; the medians themselves are uncertain by about {_rng(h['config_floor_pct'].dropna(), '.1f')}% "
            "per split (the repetitions' spread), and a held-out error can fall below that only because the "
            "fitted and the held-out rows share each repetition's drift")


def _repeatability_lines(rep: pd.DataFrame | None, agree: pd.DataFrame | None) -> list[str]:
    """Findings on the measurements' own noise: the repetitions' spread and, given a second study,
    how far the same configurations moved between the two."""
    lines = []
    if rep is not None and rep["floor_pct"].notna().any():
        lines.append(f"- The repetitions themselves: a configuration's {int(rep['n'].median())} repetitions "
                     f"spanned {rep['spread_pct'].median():.1f}% of its median qps (median over "
                     f"{len(rep)} configurations; widest {rep['spread_pct'].max():.1f}%), so a model that "
                     f"knew each configuration's true rate would still miss the medians by about "
                     f"{rep['floor_pct'].median():.1f}% (largest {rep['floor_pct'].max():.1f}%).")
    if agree is not None and len(agree):
        d = agree["diff_pct"].abs()
        lines.append(f"- The same {len(agree)} configurations in an earlier study with the same parameters: "
                     f"medians {d.median():.1f}% apart (median over configurations; widest {d.max():.1f}%).")
    return lines


SEED_DEVICE_UNROUNDED_US = 101.61 - 10.916   # fio lat - cpuPer at one job, the seed's device term


def sensitivity_data(fit: model.ModelFit, rows: pd.DataFrame, threads: int | None = None
                     ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Model curves and measured points for the seed's two bullets; returns (curves, points).

    curves: rxlab.model.sensitivity for the seed's model and the fitted one,
    with `panel` "device" (io.eff against device latency, one line per local
    cpu.inc of readrandom and readrandom3) and "cpu" (io.eff against RocksDB
    CPU per query, at this machine's device latency and the seed's 90.7 us).
    libc+kernel is fio's cpuPer here, reads per query and reqsz the local
    medians (undelayed rows at `threads`, by default the smallest client count).
    points: measured io.eff (medians over repetitions) with x = the fio device
    latency (lat - cpuPer) at each delay_us ("device") or cpu.inc ("cpu"),
    local and the seed's one-user rows.
    """
    if threads is None:  # the smallest client count with undelayed fio rows
        fio0 = rows[_baseline_mask(rows) & (rows["delay_us"] == 0)]
        threads = int(fio0["threads"].min()) if len(fio0) else 1
    base = rows[_baseline_mask(rows) & (rows["threads"] == threads)]
    base0 = base[base["delay_us"] == 0]
    if base0.empty:
        raise ValueError(f"no undelayed fio rows at threads={threads}")
    libc = float(pd.to_numeric(base0["cpuPer"]).median())
    dev0 = float((pd.to_numeric(base0["rx.lat"]) - pd.to_numeric(base0["cpuPer"])).median())
    pred = _seed_predictions(rows)
    db = rows.loc[pred.index].assign(**{"cpu.inc": pred["cpu.inc"], "io.eff": pred["io.eff"]})
    db = db[db["threads"] == threads]
    db0 = db[db["delay_us"] == 0]
    main = db0[db0["block_align"] == True] if (db0["block_align"] == True).any() else db0  # noqa: E712
    rpq = float((pd.to_numeric(main["iops"]) / pd.to_numeric(main["qps"])).median())
    reqsz = float(pd.to_numeric(main["reqsz"]).median())
    cpus = sorted({round(float(main.loc[main["test"] == t, "cpu.inc"].median()), 1)
                   for t in ("readrandom", "readrandom3") if (main["test"] == t).any()})
    kw = {"threads": threads, "libc_kernel_us": libc, "reads_per_query": rpq, "reqsz_kib": reqsz}
    dev_grid = np.linspace(5.0, 400.0, 80)
    c1 = model.sensitivity(fit, device_latency_us=dev_grid, cpu_per_query_us=cpus, **kw)
    c1 = c1.assign(panel="device")
    devices = sorted({round(dev0, 1), round(SEED_DEVICE_UNROUNDED_US, 1)})
    c2 = model.sensitivity(fit, device_latency_us=devices, cpu_per_query_us=np.linspace(0.0, 40.0, 81), **kw)
    c2 = c2.assign(panel="cpu")
    curves = pd.concat([c1, c2], ignore_index=True)

    pts = []
    fio_dev = base.assign(device_us=pd.to_numeric(base["rx.lat"]) - pd.to_numeric(base["cpuPer"]))
    fdev = fio_dev.groupby("delay_us")["device_us"].median()
    main_all = db[db["block_align"] == True] if (db["block_align"] == True).any() else db  # noqa: E712
    for (d, t), g in main_all.groupby(["delay_us", "test"]):
        if d in fdev.index:
            pts.append({"panel": "device", "source": "local", "test": t, "delay_us": d, "x": fdev[d],
                        "y": g["io.eff"].median(), "n": len(g)})
    for (t, ba), g in db0.groupby(["test", "block_align"]):
        pts.append({"panel": "cpu", "source": "local", "test": t, "delay_us": 0, "block_align": ba,
                    "x": g["cpu.inc"].median(), "y": g["io.eff"].median(), "n": len(g)})
    pe = published.load("ioeff_efficiency")
    for _, r in pe[pe["users"] == 1].iterrows():
        pts.append({"panel": "device", "source": "published", "test": r["test"], "delay_us": 0,
                    "x": SEED_DEVICE_UNROUNDED_US, "y": r["io.eff"], "n": 1})
        pts.append({"panel": "cpu", "source": "published", "test": r["test"], "delay_us": 0,
                    "block_align": True, "x": r["cpu.inc"], "y": r["io.eff"], "n": 1})
    points = pd.DataFrame(pts, columns=["panel", "source", "test", "delay_us", "block_align", "x", "y", "n"])
    return curves, points


def fig_predicted_vs_measured(comp: Comparison):
    """Predicted against measured IOPS, the seed's model and the fitted one, seed's data and local."""
    from matplotlib import ticker as mticker

    fig, axes = figures.figure(width="page", aspect=0.36, ncols=2)
    for ax, src in zip(axes, ("published", "local"), strict=True):
        t = comp.table[comp.table["source"] == src]
        lo = float(np.nanmin(t[["iops", "seed_iops_pred", "fitted_iops_pred"]].to_numpy(float))) * 0.9
        hi = float(np.nanmax(t[["iops", "seed_iops_pred", "fitted_iops_pred"]].to_numpy(float))) * 1.1
        xs = np.array([lo, hi])
        ax.fill_between(xs, xs * 0.97, xs * 1.03, color="#dddddd", lw=0, label="within 3%")
        ax.plot(xs, xs, color="#555555", lw=0.6)
        ax.plot(t["iops"], t["seed_iops_pred"], "x", color="#d55e00", label="seed's model")
        ax.plot(t["iops"], t["fitted_iops_pred"], "o", mfc="none", color="#0072b2", label="fitted model")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        thousands = mticker.FuncFormatter(lambda v, _: f"{v / 1000:g}k")
        ax.xaxis.set_major_formatter(thousands)
        ax.yaxis.set_major_formatter(thousands)
        ax.set_xlabel("measured IOPS")
        ax.set_title("the seed's tables" if src == "published" else "this machine")
    axes[0].set_ylabel("predicted IOPS")  # both panels: the right one's label ran into the left's ticks
    axes[0].legend(loc="upper left")
    return fig


def fig_model_error(comp: Comparison, heldout_rows: pd.DataFrame | None = None):
    """Error % of each model per row: seed's model and fitted (in sample, and held out when given:
    per repetition, then on each configuration's median over its repetitions beside the seed's model)."""
    cats = []
    for src in ("published", "local"):
        t = comp.table[comp.table["source"] == src]
        where = "seed" if src == "published" else "local"
        cats.append((f"{where}\nseed's model", t["seed_err_pct"], "#d55e00"))
        cats.append((f"{where}\nfitted", t["fitted_err_pct"], "#0072b2"))
    if heldout_rows is not None and len(heldout_rows):
        device = (heldout_rows["device"] if "device" in heldout_rows.columns
                  else pd.Series("curve", heldout_rows.index))
        curve = heldout_rows[device == "curve"]
        cats.append(("held out\nfitted\nper row", curve["err_iops_pct"], "#56b4e9"))
        per_config = pd.concat([config_errors(g) for _, g in curve.groupby("split", sort=False)])
        cats.append(("held out\nfitted\nmedians", per_config["fitted_err_pct"], "#56b4e9"))
        cats.append(("held out\nseed's\nmedians", per_config["seed_err_pct"], "#d55e00"))
        iostat = heldout_rows[device == "iostat"]
        if len(iostat):
            per_config = pd.concat([config_errors(g) for _, g in iostat.groupby("split", sort=False)])
            cats.append(("held out\niostat device\nmedians", per_config["fitted_err_pct"], "#009e73"))
    fig, ax = figures.figure(width="page", aspect=0.32)
    rng = np.random.default_rng(0)
    for i, (_, vals, color) in enumerate(cats):
        v = pd.to_numeric(vals).to_numpy(float)
        ax.plot(i + rng.uniform(-0.15, 0.15, v.size), v, "o", ms=3, color=color, alpha=0.8)
        if v.size:
            ax.plot([i - 0.25, i + 0.25], [np.median(v)] * 2, color="#222222", lw=1.2)
    ax.axhspan(-3, 3, color="#dddddd", zorder=0)
    ax.axhline(0, color="#555555", lw=0.6)
    ax.set_xticks(range(len(cats)), [c[0] for c in cats])
    ax.set_ylabel("predicted / measured IOPS - 1 (%)")
    ax.set_title("model error (grey: within 3%; bar: median)")
    return fig


def _sens_axes(curves: pd.DataFrame, points: pd.DataFrame, panel: str, *, line_key: str, xlabel: str,
               fmt: str):
    fig, ax = figures.figure(aspect=0.8)
    c = curves[curves["panel"] == panel]
    x_col = "device_latency_us" if panel == "device" else "cpu_per_query_us"
    colors = figures.CYCLE
    for i, (v, g) in enumerate(c.groupby(line_key)):
        for name, ls in (("seed", "--"), ("fitted", "-")):
            gg = g[g["model"] == name].sort_values(x_col)
            # a fitted wait below zero can make the latency vanish at the edge of the grid: not a prediction
            gg = gg[(gg["lat_us"] > 0) & gg["io.eff"].between(0, 1.5)]
            if len(gg):
                ax.plot(gg[x_col], gg["io.eff"], ls, color=colors[i % len(colors)],
                        label=f"{name}, {fmt.format(v)}")
    p = points[points["panel"] == panel]
    markers = {"readrandom": "o", "readrandom2": "s", "readrandom3": "^"}
    for (src, test), g in p.groupby(["source", "test"]):
        ax.plot(g["x"], g["y"], markers.get(test, "o"), ms=4,
                color="#000000" if src == "published" else "#d55e00",
                mfc="none" if src == "published" else None,
                label=f"{'seed' if src == 'published' else 'here'}: {test}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("io.eff")
    top = float(pd.to_numeric(p["y"]).max()) if len(p) else 1.0
    ax.set_ylim(0, max(1.02, top * 1.05))  # a measured io.eff above 1 is shown, not clipped
    ax.legend(fontsize=5.5, ncols=2, loc="lower right")
    return fig, ax


def fig_sensitivity_device(curves: pd.DataFrame, points: pd.DataFrame):
    """io.eff against device latency: model lines per RocksDB CPU, measured points (delay_us), the seed's."""
    fig, ax = _sens_axes(curves, points, "device", line_key="cpu_per_query_us",
                         xlabel="device latency per read (us)", fmt="{:.1f} us CPU")
    ax.set_title("io.eff rises with device latency")
    return fig


def fig_sensitivity_cpu(curves: pd.DataFrame, points: pd.DataFrame):
    """io.eff against RocksDB CPU per query: model lines per device latency, measured tests, the seed's."""
    fig, ax = _sens_axes(curves, points, "cpu", line_key="device_latency_us",
                         xlabel="RocksDB CPU per query, cpu.inc (us)", fmt="device {:.0f} us")
    ax.set_title("io.eff falls with RocksDB CPU")
    return fig


def _wait_for_cpu_lines(gap: pd.DataFrame | None) -> list[str]:
    """What the readers' wait for a CPU (runqPer) explains, per client count, from `model.latency_gap`
    of undelayed rows; nothing when the rows did not measure it."""
    if gap is None or model.RUNQ not in gap.columns:
        return []
    g = gap[(gap["delay_us"] == 0) & (gap[model.RUNQ] > 0)]
    if g.empty:
        return []
    m = g.groupby("threads")[[model.RUNQ, "unexplained_us"]].median()
    parts = [f"{m.loc[t, model.RUNQ]:.1f} us per query at {int(t)} client{'s' if t > 1 else ''}" for t in m.index]
    rest = ", ".join(f"{m.loc[t, 'unexplained_us']:.1f}" for t in m.index)
    return [f"- The readers waited for a CPU (runqPer, the scheduler's run_delay) {', '.join(parts)} "
            f"(medians, no delay). Counted beside cpuPer, and fio's out of its device term (the model's "
            f"runq=True), it leaves {rest} us per query unexplained at "
            f"{', '.join(str(int(t)) for t in m.index)} client(s)."]


def model_findings(comp: Comparison, heldout_summary: pd.DataFrame | None = None,
                   background: pd.DataFrame | None = None, gap: pd.DataFrame | None = None,
                   repeat: pd.DataFrame | None = None, agree: pd.DataFrame | None = None,
                   steal: pd.Series | None = None) -> str:
    """The model comparison in a few Markdown bullets with its numbers (background: `background_io`;
    gap: `model.latency_gap(rows, runq=True)` of the local rows, for the wait for a CPU; repeat:
    `repeatability(rows)`; agree: `agreement` with an earlier study; steal: `steal_effect(rows)`)."""
    s = comp.summary.set_index(["source", "model"])
    lines = _background_lines(background) + _wait_for_cpu_lines(gap)
    for src, label in (("published", "the seed's tables"), ("local", "this machine's runs")):
        if (src, "seed") not in s.index:
            continue
        a, b = s.loc[(src, "seed")], s.loc[(src, "fitted")]
        lines.append(f"- On {label} ({int(a['rows'])} rows) the seed's model misses by a median "
                     f"{a['median_abs_err_pct']:.1f}% (max {a['max_abs_err_pct']:.1f}%); the fitted model by "
                     f"{b['median_abs_err_pct']:.1f}% (max {b['max_abs_err_pct']:.1f}%), "
                     f"{b['within_3pct']:.0%} of rows within 3%.")
    if heldout_summary is not None and len(heldout_summary):
        h = heldout_summary[heldout_summary["model"] == "fitted"]
        if len(h):
            lines.append(f"- Held out ({len(h)} splits), the fitted model's median error per split is "
                         f"{_rng(h['median_abs_err_pct'], '.1f')}% over single repetitions (worst row "
                         f"{h['max_abs_err_pct'].max():.1f}%), and "
                         f"{_rng(h['config_median_abs_err_pct'], '.1f')}% "
                         f"on each configuration's median over its repetitions (worst configuration "
                         f"{h['config_max_abs_err_pct'].max():.1f}%)" + _floor_clause(h) + ".")
            sd = heldout_summary[heldout_summary["model"] == "seed"]
            if len(sd):
                lines.append(f"- The seed's model on the same held-out configurations: median error "
                             f"per split "
                             f"{_rng(sd['config_median_abs_err_pct'], '.1f')}% (worst configuration "
                             f"{sd['config_max_abs_err_pct'].max():.1f}%).")
        io = heldout_summary[(heldout_summary["model"] == HELD_OUT_MODELS["iostat"])
                             & heldout_summary["config_median_abs_err_pct"].notna()]
        if len(io):
            med, worst = _rng(io["config_median_abs_err_pct"], ".1f"), io["config_max_abs_err_pct"].max()
            lines.append(f"- Given the disk's latency that iostat saw in each run (device='iostat': each "
                         f"row's io.lat less the reader's CPU inside it, fitted on the fio rows), the model "
                         f"misses "
                         f"held-out configurations by a median {med}% "
                         f"per split (worst configuration {worst:.1f}%): CPU, the "
                         f"wait for a CPU and the disk's own latency account for a query"
                         + _excess_clause(gap) + ".")
    f = comp.fits.get("local")
    lines += _repeatability_lines(repeat, agree) + _steal_lines(f, steal)
    lines += _remote_lines(f, gap) + _size_lines(f)
    if f is not None:
        p = f.params
        held = [q for q, why in f.held.items() if not why.startswith(("used with device=", "device="))]
        lines.append(f"- Fitted here: device {p['dev_1_us']:.1f} us per read at one client "
                     f"({p['dev_per_thread_us']:+.1f} us per extra client), a wait of {p['wait_us']:.1f} us "
                     f"per query that neither CPU nor device time explains"
                     + (f"; held: {', '.join(held)}." if held else "."))
    return "\n".join(lines)


def _remote_lines(f: model.ModelFit | None, gap: pd.DataFrame | None) -> list[str]:
    """Where the readers were woken: the fitted remote_us and the undelayed rows' awayShare per
    client count, RocksDB's against its fio baseline's ([] when the term was held)."""
    if f is None or "remote_us" not in f.free or gap is None or model.AWAY not in gap.columns:
        return []
    g = gap[gap["delay_us"] == 0].groupby("threads")[[model.AWAY, "fio_awayShare"]].median()
    share = ", ".join(f"{r[model.AWAY]:.0%} against fio's {r['fio_awayShare']:.0%} at {int(t)} "
                      f"client{'s' if t > 1 else ''}" for t, r in g.iterrows())
    p, se = f.params["remote_us"], f.stderr["remote_us"]
    slope = ""
    if "remote_per_thread_us" in f.free:
        slope = (f", {f.params['remote_per_thread_us']:+.1f} ± {f.stderr['remote_per_thread_us']:.1f} us per "
                 "extra client")
    return [f"- A read whose reader was woken away from the CPU that takes the disk's interrupts costs "
            f"{p:.1f} ± {se:.1f} us more at one client{slope} (remote_us, fitted with fio placed away beside "
            f"its baseline). RocksDB's readers were woken away on {share} (medians of awayShare)."]


def _size_lines(f: model.ModelFit | None) -> list[str]:
    """What a read's KiB above the block cost (size penalty at one client and per extra client),
    [] when the rows held the penalty."""
    if f is None or "size_penalty_us_per_kib" not in f.free:
        return []
    p, se = f.params, f.stderr
    per = "size_penalty_per_thread_us_per_kib"
    slope = (f", {p[per]:+.1f} ± {se[per]:.1f} us per extra client" if per in f.free
             else f" (per extra client: held, {f.held.get(per, '')})")
    return [f"- Each KiB a read carries above the {BLOCK_BYTES // 1024} KiB block (block_align off) costs "
            f"{p['size_penalty_us_per_kib']:.1f} ± {se['size_penalty_us_per_kib']:.1f} us at one client"
            f"{slope} "
            "(size penalty, fitted on the rows whose reqsz differs: RocksDB's without block_align, and fio's "
            "unaligned runs where model_rows was asked for them)."]


def _excess_clause(gap: pd.DataFrame | None) -> str:
    """'; the fio-device model's miss ...' with the disk's io.lat under RocksDB minus under fio, per
    client count (undelayed rows of `gap`, rxlab.model.latency_gap), or '' without fio's io.lat."""
    if gap is None or "io_lat_excess_us" not in gap.columns:
        return ""
    g = gap[(gap["delay_us"] == 0) & gap["io_lat_excess_us"].notna()]
    if g.empty:
        return ""
    by = g.groupby("threads")["io_lat_excess_us"].median()
    parts = ", ".join(f"{v:+.1f} us at {int(t)} client{'s' if t > 1 else ''}" for t, v in by.items())
    return (f"; what the fio-device model misses is the disk itself being slower under RocksDB's reads "
            f"than under fio's (iostat's io.lat, RocksDB minus fio, medians: {parts})")
