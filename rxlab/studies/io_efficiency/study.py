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
  `fig_reqsz`) and the glue of notebook 20 between a study and rxlab.core.model
  (`model_rows`, `compare_models`, `held_out`, `sensitivity_data` and their
  figures). Figures are built with rxlab.core.figures.figure(); the notebooks save
  them through rxlab.core.figures.save().

Columns come from rxlab.core.metrics only (seed_columns, efficiency): nothing here
computes qps, iops, io.eff or the CPU per operation itself.
"""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.colors as mc
import numpy as np
import pandas as pd
from tqdm import tqdm

from rxlab.bench import driver, fio
from rxlab.bench.driver import SEQUENCES
from rxlab.bench.fio import parse_size
from rxlab.bench.irq import busiest_irq_cpu
from rxlab.core import figures, metrics, model, published, stats, store
from rxlab.core import params as checks
from rxlab.core.sysinfo import work_space

__all__ = ["PUBLISHED", "SCALES", "SEED_TESTS", "Params", "Settings", "StudyResult", "background_io", "fig_block_align", "fig_ioeff", "fig_qps", "fig_reqsz", "findings", "load_study", "plan", "round_like_seed", "run_study", "seed_rows", "seed_tables", "sequence", "study_frame", "with_delay"]

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
# readers spread. Its reads are woken by an inter-processor wake-up, whose cost (rxlab.core.model's
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

    one = {"threads": 1}
    opts = {"fillseq": one, "overwritesome": one, "flush_mt_l0": one, "compact": one,
            "revrange": {"duration": settings.revrange_duration}}
    return [{"name": s, **opts[s]} if s in opts else s for s in SEQUENCES["io_efficiency"]]


_rot = stats.rotate


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


_new_study_id = stats.new_study_id


def away_cpu(path) -> int | None:
    """A CPU this process may use other than the one that takes the interrupts of the disk
    holding `path` (None: one CPU only, or the interrupts cannot be found)."""
    irq = busiest_irq_cpu(path)
    others = sorted(c for c in os.sched_getaffinity(0) if c != irq)
    return others[0] if irq is not None and others else None


def _run_fio(params: Params, s: Settings, filename: Path, *, study: str, rep: int, threads: int, delay: int,
             root: Path, tool: str = FIO_TOOL) -> Path | None:
    """rxlab fio (sync, qd1, numjobs=threads) on `filename`, stored as a run of its own.

    tool FIO_AWAY_TOOL: one job pinned to a CPU other than the interrupt's, more jobs pinned one
    per CPU (None when it cannot be placed: one CPU, or the interrupt's CPU is unknown);
    FIO_UNALIGNED_TOOL: unaligned blocks of bs=8704 at 512-byte offsets, placed as the baseline.
    """

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
    return fio.run_stored(root, filename, meta, rw="randread", size=s.fio_size, direct=True,
                            ioengine="sync", iodepth=1, numjobs=threads, runtime=s.fio_runtime,
                            ramp_time=s.fio_ramp, engine_options=opts, seed=rep + 1, **shape, **placed)


def _run_db(params: Params, s: Settings, db: Path, *, study: str, rep: int, threads: int, delay: int,
            block_align: bool, root: Path) -> Path:

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
    step columns and the seeds' columns from rxlab.core.metrics.seed_columns.
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


KEYS = ["study", "rep", "tool", "backend", "threads", "block_align", "delay_us", "test", "run_id"]


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """The tidy frame of a study from catalog rows (runs named by run_study; others are dropped)."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=[*KEYS, *metrics.SEED_COLUMNS])
    m = cat["run_name"].astype(str).str.extract(_NAME_RE)
    keep = m["study"].notna()
    is_fio = m["kind"].isin(list(FIO_KINDS.values()))
    if "job" in cat.columns:  # fio runs: the total row only (per-job rows stay in the store)
        keep &= ~is_fio | (cat["job"].astype(str) == "total")
    cat, m, is_fio = cat[keep].copy(), m[keep], is_fio[keep]
    if cat.empty:
        return pd.DataFrame(columns=[*KEYS, *metrics.SEED_COLUMNS])
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
    first = [c for c in KEYS if c in out.columns]
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
    rxlab.core.metrics.efficiency. delay_us None keeps every delay.
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
        keys = g[[c for c in KEYS if c != "test"]]
        parts.append(pd.concat([keys, eff[[*DB_COLUMNS, *metrics.EFFICIENCY_COLUMNS]]], axis=1))
    return pd.concat(parts).sort_index()


def fio_rows(result: StudyResult, delay_us: int | None = 0) -> pd.DataFrame:
    f = result.frame
    f = f[f["tool"] == FIO_TOOL]
    return f if delay_us is None else f[f["delay_us"] == delay_us]


_median = stats.medians


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

    fio = _median(fio_rows(result, delay_us), ["threads"], ["iops", "usPer", "syPer", "cpuPer", "rx.lat"])
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


def value_range(s: pd.Series, fmt: str) -> str:
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


def background_lines(background: pd.DataFrame | None) -> list[str]:
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
    lines.extend(background_lines(background))
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
        lines.append(f"- io.eff at {users}: {value_range(loc['io.eff'], '.3f')} here against "
                     f"{value_range(pub['io.eff'], '.3f')} in the seed ({_users_label(int(pub['users'].iloc[0]))}); "
                     f"RocksDB adds {value_range(loc['cpu.inc'], '.1f')} us of CPU per query over fio "
                     f"(seed: {value_range(pub['cpu.inc'], '.1f')} us).")
    eff = tables.get("block_align effect")
    if eff is not None and len(eff):
        loc, pub = eff[eff["source"] == "local"], eff[eff["source"] == "published"]
        lines.append(f"- block_align changes QPS by {value_range(loc['qps_change_pct'], '+.1f')}% here "
                     f"(seed: {value_range(pub['qps_change_pct'], '+.1f')}%); the device read size (reqsz) is "
                     f"{value_range(loc['reqsz_off'], '.1f')} KiB without it and {value_range(loc['reqsz_on'], '.1f')} KiB "
                     f"with it (seed: {value_range(pub['reqsz_off'], '.1f')} and "
                     f"{value_range(pub['reqsz_on'], '.1f')} KiB).")
    return "\n".join(lines)


# --------------------------------------------------------------------------- notebook 10's figures

def _local_color(backend: str, i: int) -> tuple:
    """The backend's colour, lighter for each further thread count."""

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
