"""The RocksDB wiki's asynchronous-IO page, run on this machine, the page's results beside.

The page (rocksdb-wiki-asynchronous-io.txt) measures two things with
db_bench on remote flash: MultiGet (multireadrandom, batch_size=8,
multiread_stride=40000, 4 threads) in three implementations (single-file, the
default; single-level and multi-level, async IO across files through C++
coroutines), and long scans (seekrandom, seek_nexts=65536) with and without
async prefetch. It prints micros/op and the P50/P95/P99 of
rocksdb.db.multiget.micros. This module is that study, with what these
builds can do:

* MultiGet against a loop of Get, batch sizes 1..64, on a DB compacted into
  one SST file, so that a batch lands in one file: there MultiGet reads its
  blocks with one FileSystem::MultiRead, which libaio and io_uring submit
  together (real queue depth) and posix serves as a loop of pread. That is the
  page's single-file row. Its single-level and multi-level rows read several
  files at once through coroutines (USE_COROUTINES, folly): no build here has
  them, so they have no local counterpart; a MultiGet step with async_io=true
  is run anyway and its counters show that nothing asynchronous happened.
* Scans with async_io off and on: the iterator's FilePrefetchBuffer then
  prefetches through FSRandomAccessFile::ReadAsync and FileSystem::Poll,
  which the rxlab engines implement (libaio and io_uring truly
  asynchronously; posix serves a ReadAsync inline). The DB is built without
  block_align, which would disable RocksDB's auto readahead.
* Per backend and per emulated device latency (the engines' delay_us),
  micros/op as db_bench prints it, the mean latency per call, and p50, p95,
  p99 per call.

Each step row records whether its reads overlapped (`overlap`, from the
backend's counters: reads in flight at once for MultiRead, ReadAsync
submissions reaped by Poll for scans) and never says so when the counters do
not show it. Every run is stored; `load_study` finds a study again.

The reference configurations "default" and "default?io_uring=1" are
RocksDB's own posix file system: RocksDB uses io_uring for MultiRead and
ReadAsync only if the program defines RocksDbIOUringEnable() returning true.
rxlab's extension defines it (ext/module.cc) and answers what the backend
URI asked: false for "default" (MultiRead is a loop of pread, ReadAsync is
refused and the prefetch falls back to synchronous reads), true for
"default?io_uring=1" (what db_bench does by default, --io_uring_enabled=true).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Patch
from tqdm import tqdm

from rxlab.bench import driver
from rxlab.core import figures, metrics, published, stats, store, sysinfo
from rxlab.core import params as checks
from rxlab.core.builds import active_build
from rxlab.core.sysinfo import work_space

__all__ = [
    "PUBLISHED",
    "SCALES",
    "SEED_FILE",
    "Params",
    "Settings",
    "StudyResult",
    "db_structure_table",
    "fig_latency",
    "fig_multiget",
    "fig_scan",
    "findings",
    "latency_table",
    "limits_table",
    "load_study",
    "multiget_table",
    "overlap",
    "plan",
    "reference_configurations",
    "run_study",
    "scan_table",
    "step_plan",
    "study_frame",
]

SEED_FILE = "rocksdb-wiki-asynchronous-io.txt"
PUBLISHED = (
    f"{SEED_FILE}: asyncio_results",
    f"{SEED_FILE}: asyncio_db_structure",
    f"{SEED_FILE}: asyncio_statements",
)
RUN_PREFIX = "asyncio-"
KEY_SIZE = 32  # the page's --key_size
VALUE_SIZE = 512  # the page's --value_size
BLOCK_BYTES = 8192
BLOOM_BITS = 10  # the page's --bloom_bits
SEED_BATCH = 8  # the page's --batch_size
SEED_THREADS = 4  # the page's --threads
SEED_STRIDE_RATIO = 125  # the page's --num / --multiread_stride (5000000 / 40000)
ONE_FILE = 64 << 30  # target_file_size_base and max_bytes_for_level_base: compact into one SST
MAX_DELAY_US = 100_000
MIB, GIB = 1 << 20, 1 << 30

# The step labels (the `test` column) and what each measures.
GET_LOOP, MULTIGET, MULTIGET_ASYNC = "readrandom", "multireadrandom", "multireadrandom async_io"
SCAN_SYNC, SCAN_ASYNC = "seekrandom", "seekrandom async_io"
KIND = {
    GET_LOOP: "Get loop",
    MULTIGET: "MultiGet",
    MULTIGET_ASYNC: "MultiGet async_io",
    SCAN_SYNC: "scan",
    SCAN_ASYNC: "scan async_io",
}


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Scale:
    num: int
    duration: float  # seconds per step
    repeats: int
    cache_size: int
    batch_sizes: tuple
    seek_nexts: int


SCALES = {
    # seconds: an 11 MB DB, three batch sizes, short scans
    "smoke": Scale(
        num=20_000, duration=0.1, repeats=1, cache_size=1 * MIB, batch_sizes=(1, 8, 64), seek_nexts=512
    ),
    # minutes: 1M keys (0.5 GiB, 68x the cache), batch sizes 1..64, scans of 8192 keys (4.5 MB)
    "small": Scale(
        num=1_000_000,
        duration=1.5,
        repeats=2,
        cache_size=8 * MIB,
        batch_sizes=(1, 2, 4, 8, 16, 32, 64),
        seek_nexts=8192,
    ),
    # the page's key count (5M keys, 2.7 GB) and scan length (65536 keys, 36 MB)
    "full": Scale(
        num=5_000_000,
        duration=5.0,
        repeats=3,
        cache_size=64 * MIB,
        batch_sizes=(1, 2, 4, 8, 16, 32, 64),
        seek_nexts=65536,
    ),
}
DEFAULT_BACKENDS = ["posix", "libaio", "io_uring", "default", "default?io_uring=1"]


@dataclass(frozen=True)
class Settings:
    """A scale resolved with the parameters: what a study will run."""

    scale: str
    num: int
    db_bytes: int
    duration: float
    repeats: int
    cache_size: int
    batch_sizes: tuple
    seek_nexts: int
    multiread_stride: int
    threads: int
    work_dir: str
    free_bytes: int

    def table(self) -> pd.DataFrame:
        def size(b):
            return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / MIB:.1f} MiB"

        rows = [
            ("keys (num)", f"{self.num:,}"),
            ("DB size (keys x (32 + 512 B))", size(self.db_bytes)),
            ("block cache", size(self.cache_size)),
            ("DB / cache", f"{self.db_bytes / self.cache_size:.0f}x"),
            ("seconds per step", f"{self.duration:g}"),
            ("repeats", str(self.repeats)),
            ("threads", str(self.threads)),
            ("MultiGet batch sizes", ", ".join(map(str, self.batch_sizes))),
            ("multiread_stride (num / 125, as the page's)", f"{self.multiread_stride:,}"),
            ("scan length (seek_nexts)", f"{self.seek_nexts:,}"),
            ("work directory", self.work_dir),
            ("free there", size(self.free_bytes)),
        ]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


@dataclass
class Params(checks.Checked):
    """The study's parameters (notebook 40's papermill parameters).

    backends: default, default?io_uring=1 and rxlab engine URIs (without
    delay_us); None: DEFAULT_BACKENDS (papermill cannot pass a default
    containing '=' through a parameters cell). delay_us: emulated device latency per read, rxlab engines only
    (the default file system runs at 0 only). batch_sizes, seek_nexts,
    repeats, duration: None takes the scale's. threads: client threads (the
    page used 4 on a larger machine). db_dir: where the DB goes (None: a
    temporary directory; O_DIRECT needed).
    """

    scale: str = "small"
    backends: list | None = None
    delay_us: list = field(default_factory=lambda: [0, 500])
    batch_sizes: list | None = None
    seek_nexts: int | None = None
    threads: int = 1
    repeats: int | None = None
    duration: float | None = None
    db_dir: str | None = None

    def __post_init__(self):
        checks.choice("scale", self.scale, SCALES)
        if self.backends is None:
            self.backends = list(DEFAULT_BACKENDS)
        self.backends = checks.backend_list("backends", self.backends)
        self.delay_us = checks.int_list("delay_us", self.delay_us, 0, MAX_DELAY_US)
        if self.batch_sizes is not None:
            self.batch_sizes = sorted(checks.int_list("batch_sizes", self.batch_sizes, 1, 1024))
        if self.seek_nexts is not None and not (
            checks.is_int(self.seek_nexts) and 1 <= self.seek_nexts <= 1 << 20
        ):
            checks.fail("seek_nexts", self.seek_nexts, "expected None (the scale's) or an integer 1..1048576")
        if not (checks.is_int(self.threads) and 1 <= self.threads <= 64):
            checks.fail("threads", self.threads, "expected an integer 1..64")
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 100):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..100")
        if self.duration is not None and not (checks.is_number(self.duration) and 0 < self.duration <= 3600):
            checks.fail("duration", self.duration, "expected None (the scale's) or seconds in (0, 3600]")
        if any(self.delay_us) and all(checks.is_default(b) for b in self.backends):
            checks.fail(
                "delay_us",
                self.delay_us,
                "delays need an rxlab engine (posix, libaio, io_uring) "
                "among the backends; the default file system has none",
            )
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()

    def settings(self) -> Settings:
        sc = SCALES[self.scale]
        work, free = work_space(self.db_dir)
        db_bytes = sc.num * (KEY_SIZE + VALUE_SIZE)
        if 2 * db_bytes > free:
            raise ValueError(
                f"scale={self.scale!r}: needs about {2 * db_bytes / GIB:.1f} GiB free at {work}, "
                f"only {free / GIB:.1f} GiB free; choose another db_dir or a smaller scale"
            )
        return Settings(
            scale=self.scale,
            num=sc.num,
            db_bytes=db_bytes,
            duration=float(self.duration) if self.duration is not None else sc.duration,
            repeats=self.repeats if self.repeats is not None else sc.repeats,
            cache_size=sc.cache_size,
            batch_sizes=tuple(self.batch_sizes) if self.batch_sizes is not None else sc.batch_sizes,
            seek_nexts=self.seek_nexts if self.seek_nexts is not None else sc.seek_nexts,
            multiread_stride=max(1, sc.num // SEED_STRIDE_RATIO),
            threads=self.threads,
            work_dir=str(work),
            free_bytes=int(free),
        )

    def configurations(self) -> list[tuple[str, int]]:
        """(backend, delay_us) pairs: every backend at every delay, the default file system at 0 only."""
        return [(b, d) for d in self.delay_us for b in self.backends if d == 0 or not checks.is_default(b)]


def with_delay(backend: str, delay_us: int) -> str:
    """backend URI with delay_us=N added; unchanged for 0."""
    if not delay_us:
        return backend
    return f"{backend}{'&' if '?' in backend else '?'}delay_us={int(delay_us)}"


def reference_configurations(backends: Sequence[str] = DEFAULT_BACKENDS) -> pd.DataFrame:
    """What each backend is: the file system, how it serves MultiRead and ReadAsync here."""
    what = {
        "posix": (
            "rxlab engine posix (pread)",
            "loop of pread: one read in flight",
            "served inline (synchronous engine): no overlap",
        ),
        "libaio": (
            "rxlab engine libaio (io_submit/io_getevents)",
            "the batch submitted together",
            "submitted, reaped by Poll",
        ),
        "io_uring": (
            "rxlab engine io_uring (liburing)",
            "the batch submitted together",
            "submitted, reaped by Poll",
        ),
        "default": (
            "RocksDB's posix file system; RocksDbIOUringEnable() returns false",
            "loop of pread (RocksDB's fallback)",
            "refused (NotSupported): synchronous prefetch",
        ),
        "default?io_uring=1": (
            "RocksDB's posix file system; RocksDbIOUringEnable() returns true "
            "(db_bench's default, --io_uring_enabled=true)",
            "io_uring, submitted together",
            "io_uring, reaped by Poll",
        ),
    }
    rows = []
    for b in backends:
        key = b if b in what else _engine(b)
        w = what.get(key, (f"rxlab engine {key}", "", ""))
        rows.append({"backend": b, "file system": w[0], "MultiRead": w[1], "ReadAsync": w[2]})
    return pd.DataFrame(rows).set_index("backend")


def _engine(uri: str) -> str:
    base = str(uri).removeprefix("rxlab://")
    if base.startswith("default"):
        return base if base in ("default", "default?io_uring=1") else "default"
    return base.split("?")[0]


# --------------------------------------------------------------------------- plan and run


def step_plan(s: Settings) -> list[dict]:
    """The read steps of one configuration, in order, with their db_bench options.

    readrandom (the loop of Get), multireadrandom at each batch size
    (multiread_batched, the page's stride ratio), multireadrandom at the page's
    batch size with async_io and optimize_multiget_for_io (the page's
    multi-level flags; no effect without coroutines), seekrandom with
    async_io off and on.
    """
    mg = {"name": "multireadrandom", "multiread_batched": True, "multiread_stride": s.multiread_stride}
    steps = [{"name": "readrandom", "label": GET_LOOP, "batch_size": 1}]
    steps += [{**mg, "label": MULTIGET, "batch_size": b, "async_io": False} for b in s.batch_sizes]
    steps.append(
        {
            **mg,
            "label": MULTIGET_ASYNC,
            "batch_size": SEED_BATCH,
            "async_io": True,
            "optimize_multiget_for_io": True,
        }
    )
    steps += [
        {"name": "seekrandom", "label": lab, "seek_nexts": s.seek_nexts, "async_io": a}
        for lab, a in ((SCAN_SYNC, False), (SCAN_ASYNC, True))
    ]
    return steps


_rot = stats.rotate


def plan(params: Params) -> pd.DataFrame:
    """The runs in execution order: the build, then rep x (backend, delay), rotated each repetition."""
    s = params.settings()
    rows = [
        {
            "rep": None,
            "backend": _build_backend(params),
            "delay_us": 0,
            "run": "build",
            "steps": "fillseq, flush, compact",
        }
    ]
    labels = ", ".join(dict.fromkeys(st["label"] for st in step_plan(s)))
    for rep in range(s.repeats):
        for b, d in _rot(params.configurations(), rep):
            rows.append({"rep": rep, "backend": b, "delay_us": d, "run": "read", "steps": labels})
    return pd.DataFrame(rows)


def _build_backend(params: Params) -> str:
    for b in params.backends:
        if not checks.is_default(b):
            return _engine(b)
    return "posix"


def _spec(params: Params, s: Settings, db: Path, *, name: str, backend: str, steps: list, seed: int):

    return driver.RunSpec(
        db=str(db),
        name=name,
        backend=backend,
        steps=steps,
        num=s.num,
        key_size=KEY_SIZE,
        value_size=VALUE_SIZE,
        threads=s.threads,
        duration=s.duration,
        block_size=BLOCK_BYTES,
        block_align=False,
        compression="none",
        cache_size=s.cache_size,
        bloom_bits=BLOOM_BITS,
        write_buffer_size=64 * MIB,
        target_file_size_base=ONE_FILE,
        max_bytes_for_level_base=ONE_FILE,
        use_existing_db=steps[0]["name"] != "fillseq",
        scale=params.scale,
        seed=seed,
    )


def _fingerprint(db: Path) -> dict:

    build = active_build()
    rec = (build / "build.json").read_text() if (build / "build.json").is_file() else "{}"
    return sysinfo.fingerprint(str(db), rocksdb_build=json.loads(rec))


_SST_RE = re.compile(r"^\s*(\d+):(\d+)\[")
_LEVEL_RE = re.compile(r"^--- level (\d+) ---")


def parse_sstables(text: str) -> pd.DataFrame:
    """RocksDB's "rocksdb.sstables" property -> level, file, size_bytes per SST file."""
    rows, level = [], None
    for line in (text or "").splitlines():
        m = _LEVEL_RE.match(line)
        if m:
            level = int(m.group(1))
            continue
        m = _SST_RE.match(line)
        if m and level is not None:
            rows.append({"level": level, "file": f"{int(m.group(1)):06d}.sst", "size_bytes": int(m.group(2))})
    return pd.DataFrame(rows, columns=["level", "file", "size_bytes"])


def _run_steps(spec, steps: list[dict], specd: dict, root: Path, structure: bool = False) -> Path:
    """Open a session, run the steps (counters reset before each), store the run; returns its path."""

    driver.validate(spec)
    fp = _fingerprint(Path(spec.db))
    sess = driver.Session(spec)
    try:
        with store.RunWriter(root, specd, fp) as w:
            for st in steps:
                sess.db.reset_counters()  # fs.max_inflight is then this step's
                row = sess.run_step(st)
                if st["name"] in ("readrandom", "multireadrandom", "seekrandom"):
                    row.update(_step_annotations(st, row, spec.backend))
                w.add_step(row)
            if structure:
                sst = parse_sstables(sess.db.property("rocksdb.sstables") or "")
                with tempfile.TemporaryDirectory() as td:
                    p = Path(td) / "db_structure.json"
                    p.write_text(sst.to_json(orient="records"))
                    w.attach(p)
    finally:
        sess.close()
    return w.path


def _step_annotations(step: dict, row: dict, backend: str) -> dict:
    """The step's options and its overlap verdict, recorded in the stored row."""
    out = {
        k: step.get(k)
        for k in (
            "batch_size",
            "async_io",
            "seek_nexts",
            "multiread_stride",
            "optimize_multiget_for_io",
            "multiread_batched",
        )
        if k in step
    }
    out["overlap"], out["overlap_evidence"] = overlap({**row, **out}, backend)
    return out


def overlap(row: dict, backend: str) -> tuple[str, str]:  # noqa: PLR0911
    """Did this step's reads overlap, by the counters? ("yes" | "no" | "unknown", the evidence).

    MultiGet: yes when the backend had more than one read in flight at once
    (fs.max_inflight, reset before the step). Scans with async_io: yes when
    ReadAsync submissions went to an asynchronous engine and were reaped by
    Poll (fs.read_async, fs.async_completed); posix serves ReadAsync inline,
    which is no overlap. RocksDB's own file system has no rxlab counters: its
    READ_ASYNC_MICROS ticker says whether ReadAsync was used at all, and
    nothing says how many reads were in flight (unknown).
    """

    def num(k):
        v = row.get(k)
        try:
            return 0.0 if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)
        except (TypeError, ValueError):
            return 0.0

    eng = _engine(backend)
    name = str(row.get("name", ""))
    is_default = eng.startswith("default")
    if name in (SCAN_SYNC, SCAN_ASYNC) or row.get("benchmark") == "seekrandom":
        if not row.get("async_io"):
            return "no", "async_io off: synchronous prefetch"
        if is_default:
            t = num("ticker.rocksdb.read.async.micros")
            if t > 0:
                return (
                    "unknown",
                    f"ReadAsync used (READ_ASYNC_MICROS {t:.0f} us); in-flight reads not counted",
                )
            return "no", "ReadAsync not used (READ_ASYNC_MICROS 0): synchronous fallback"
        ra, done, polls = num("fs.read_async"), num("fs.async_completed"), num("fs.polls")
        if ra == 0:
            return "no", "no ReadAsync reached the file system"
        if eng == "posix":
            return "no", f"{ra:.0f} ReadAsync served inline by posix (synchronous engine)"
        if done > 0 and polls > 0:
            return "yes", f"{ra:.0f} ReadAsync submitted without waiting, {polls:.0f} Poll calls reaped them"
        return "no", f"{ra:.0f} ReadAsync but no completion reaped by Poll"
    if name in (MULTIGET, MULTIGET_ASYNC) or row.get("benchmark") == "multireadrandom":
        if is_default:
            return "unknown", "RocksDB's file system: reads in flight not counted"
        mi, mr, reqs = num("fs.max_inflight"), num("fs.multireads"), num("fs.multiread_reqs")
        if mi > 1:
            return "yes", f"up to {mi:.0f} reads in flight in {mr:.0f} MultiRead calls ({reqs:.0f} reads)"
        return "no", f"one read in flight at a time ({mr:.0f} MultiRead calls, {reqs:.0f} reads)"
    if is_default:
        return "no", "one Get at a time"
    return (
        "yes" if num("fs.max_inflight") > 1 else "no"
    ), f"max {num('fs.max_inflight'):.0f} read(s) in flight"


_new_study_id = stats.new_study_id


def _slug(backend: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", backend).strip("-")


@dataclass
class StudyResult:
    """A study: its runs and one tidy frame of their read steps (see `study_frame`)."""

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    structure: pd.DataFrame
    params: Params | None = None
    settings: Settings | None = None
    elapsed_s: float | None = None

    @property
    def backends(self) -> list[str]:
        return list(dict.fromkeys(self.frame["backend"]))

    @property
    def delays(self) -> list[int]:
        return sorted(int(d) for d in self.frame["delay_us"].unique())


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True) -> StudyResult:
    """Build the one-SST DB (a run of its own), then every repetition x configuration (see `plan`).

    The DB lives in `params.db_dir` (or a temporary directory) and is deleted
    at the end; every run stays in the store.
    """

    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    study = _new_study_id()
    temp = params.db_dir is None
    work = Path(tempfile.mkdtemp(prefix="rxlab-asyncio-")) if temp else Path(params.db_dir)
    work.mkdir(parents=True, exist_ok=True)
    db = work / f"asyncio-db-{study}"
    pl = plan(params)
    runs: list[Path] = []
    t0 = time.monotonic()
    base = {"tool": "rocksdb", "study": study, "study_scale": params.scale}
    try:
        bar = tqdm(
            pl.itertuples(index=False),
            total=len(pl),
            desc=f"asyncio {params.scale}",
            unit="run",
            disable=not progress,
        )
        for r in bar:
            bar.set_postfix_str(f"{r.run} {r.backend} delay {r.delay_us}")
            if r.run == "build":
                steps = [
                    {"name": "fillseq", "threads": 1, "disable_wal": True},
                    {"name": "flush"},
                    {"name": "compact"},
                ]
                spec = _spec(
                    params, s, db, name=f"{RUN_PREFIX}{study}-build", backend=r.backend, steps=steps, seed=0
                )
                shutil.rmtree(db, ignore_errors=True)
                specd = {
                    **spec.to_dict(),
                    **base,
                    "kind": "build",
                    "rep": -1,
                    "delay_us": 0,
                    "study_backend": r.backend,
                }
                runs.append(_run_steps(spec, steps, specd, root, structure=True))
                continue
            uri = with_delay(r.backend, r.delay_us)
            steps = step_plan(s)
            spec = _spec(
                params,
                s,
                db,
                name=f"{RUN_PREFIX}{study}-r{r.rep}-{_slug(r.backend)}-d{r.delay_us}",
                backend=uri,
                steps=steps,
                seed=1000 * (int(r.rep) + 1),
            )
            specd = {
                **spec.to_dict(),
                **base,
                "kind": "read",
                "rep": int(r.rep),
                "delay_us": int(r.delay_us),
                "study_backend": r.backend,
            }
            runs.append(_run_steps(spec, steps, specd, root))
    finally:
        shutil.rmtree(db, ignore_errors=True)
        if temp:
            shutil.rmtree(work, ignore_errors=True)
    res = _result(study, root, runs)
    res.params, res.settings, res.elapsed_s = params, s, time.monotonic() - t0
    return res


def _result(study: str, root: Path, runs: list[Path]) -> StudyResult:
    cat = store.catalog(root, runs=runs)
    build = [r for r in runs if (store.load_run(r, root).spec.get("kind") == "build")]
    structure = pd.DataFrame(columns=["level", "file", "size_bytes"])
    if build:
        att = [p for p in store.load_run(build[0], root).attachments if p.name == "db_structure.json"]
        if att:
            structure = pd.DataFrame(json.loads(att[0].read_text()), columns=["level", "file", "size_bytes"])
    return StudyResult(study=study, frame=study_frame(cat), runs=list(runs), root=root, structure=structure)


_KEYS = ["study", "rep", "backend", "delay_us", "test", "kind", "batch_size", "async_io", "run_id"]


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """One row per read step of asyncio runs: keys, raw columns, metrics.seed_columns, and
    db_bench's micros/op (thread time per op: threads / qps) and MB/s (bytes / wall / 2**20)."""
    if cat.empty or "spec.kind" not in cat.columns:
        return pd.DataFrame(columns=_KEYS)
    cat = cat[(cat["spec.kind"] == "read") & cat["run_name"].astype(str).str.startswith(RUN_PREFIX)].copy()
    if cat.empty:
        return pd.DataFrame(columns=_KEYS)
    keys = pd.DataFrame(
        {
            "study": cat["spec.study"].astype(str),
            "rep": pd.to_numeric(cat["spec.rep"]).astype(int),
            "backend": cat["spec.study_backend"].astype(str),
            "delay_us": pd.to_numeric(cat["spec.delay_us"]).astype(int),
            "kind": cat["name"].map(KIND),
            "backend_uri": cat["backend"].astype(str),
        },
        index=cat.index,
    )
    derived = metrics.seed_columns(cat)
    raw = cat.drop(columns=[c for c in (*derived.columns, *keys.columns, "backend") if c in cat.columns])
    out = pd.concat([keys, raw, derived], axis=1)
    out["mb_per_s"] = out["mbps"]  # db_bench's MB/s (rxlab.core.metrics); micros_per_op comes from there too
    out["us_per_call"] = out["rx.lat"]  # mean latency of one API call (a MultiGet)
    out["reads_per_key"] = pd.to_numeric(out.get("fs.reads", np.nan)) / pd.to_numeric(out["ops"])
    first = [c for c in _KEYS if c in out.columns]
    return out[first + [c for c in out.columns if c not in first]].reset_index(drop=True)


def load_study(
    root: str | os.PathLike | None = None, study: str | None = None, scale: str | None = None
) -> StudyResult | None:
    """The latest study in the store (or the one named), or None."""
    root = Path(root) if root is not None else store.default_root()
    cat = store.catalog(root)
    if cat.empty or "spec.study" not in cat.columns or "run_name" not in cat.columns:
        return None
    cat = cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX) & cat["spec.study"].notna()]
    if scale is not None:
        cat = cat[cat["spec.study_scale"] == scale]
    ids = sorted(cat["spec.study"].unique(), reverse=True)
    for sid in ids:
        if study is not None and sid != study:
            continue
        c = cat[cat["spec.study"] == sid]
        if set(c["spec.kind"]) >= {"build", "read"}:
            runs = [root / r for r in c["run_id"].unique()]
            return _result(str(sid), root, runs)
    return None


# --------------------------------------------------------------------------- tables

PCT = ("p50_us", "p95_us", "p99_us")


def _med(rows: pd.DataFrame, by: list[str], cols: Sequence[str]) -> pd.DataFrame:
    return stats.medians(rows, by, cols, sort=False)


def _verdict(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """One overlap verdict per group: the same in every repetition, else 'mixed'."""
    g = rows.groupby(by, sort=False, dropna=False)
    v = g["overlap"].agg(lambda s: s.iloc[0] if s.nunique() == 1 else "mixed")
    ev = g["overlap_evidence"].agg(lambda s: s.iloc[0])
    return pd.DataFrame({"overlap": v, "evidence": ev}).reset_index()


def multiget_table(result: StudyResult) -> pd.DataFrame:
    """Get loop against MultiGet at equal keys per op, per backend, delay and batch size.

    Per key: db_bench's micros/op (threads x wall / keys). Per op (one
    MultiGet of b keys, or b Gets in a loop): the mean latency, and p50, p95,
    p99 measured per MultiGet call. The loop's per-op mean is b x the mean Get
    (readrandom); its per-op percentiles are not measured (the driver times each
    Get, not b of them together), except at b = 1. Then the page's MultiGet rows
    (4 threads, remote flash, batch 8, a DB of several levels).
    """
    f = result.frame
    cols = [
        "micros_per_op",
        "us_per_call",
        *PCT,
        "qps",
        "reads_per_key",
        "cpuPer",
        "fs.max_inflight",
        "fs.multireads",
        "fs.multiread_reqs",
    ]
    by = ["backend", "delay_us", "test"]
    mg = f[f["test"].isin([MULTIGET, MULTIGET_ASYNC])]
    med = _med(mg, [*by, "batch_size"], cols).merge(_verdict(mg, [*by, "batch_size"]), on=[*by, "batch_size"])
    med["reads_per_multiread"] = med["fs.multiread_reqs"] / med["fs.multireads"]
    get = _med(f[f["test"] == GET_LOOP], by[:2], cols).merge(
        _verdict(f[f["test"] == GET_LOOP], by[:2]), on=by[:2]
    )
    rows = []
    for _, r in med.iterrows():
        g = get[(get["backend"] == r["backend"]) & (get["delay_us"] == r["delay_us"])]
        b = int(r["batch_size"])
        rows.append(
            {
                "source": "local",
                "backend": r["backend"],
                "delay_us": r["delay_us"],
                "api": KIND[r["test"]],
                "batch_size": b,
                "threads": _threads(result),
                "micros_per_key": r["micros_per_op"],
                "us_per_op": r["us_per_call"],
                "p50_us": r["p50_us"],
                "p95_us": r["p95_us"],
                "p99_us": r["p99_us"],
                "reads_per_multiread": r["reads_per_multiread"],
                "max_inflight": r["fs.max_inflight"],
                "cpu_us_per_key": r["cpuPer"],
                "overlap": r["overlap"],
                "n": r["n"],
            }
        )
        if len(g) and r["test"] == MULTIGET:
            gg = g.iloc[0]
            rows.append(
                {
                    "source": "local",
                    "backend": r["backend"],
                    "delay_us": r["delay_us"],
                    "api": "Get loop",
                    "batch_size": b,
                    "threads": _threads(result),
                    "micros_per_key": gg["micros_per_op"],
                    "us_per_op": b * gg["us_per_call"],
                    **{p: gg[p] if b == 1 else np.nan for p in PCT},
                    "reads_per_multiread": np.nan,
                    "max_inflight": gg["fs.max_inflight"],
                    "cpu_us_per_key": gg["cpuPer"],
                    "overlap": gg["overlap"],
                    "n": gg["n"],
                }
            )
    local = pd.DataFrame(rows)
    if not local.empty:
        local = local.sort_values(["delay_us", "backend", "batch_size", "api"], kind="stable")
    pub = _published_multiget()
    return pd.concat([local, pub], ignore_index=True)


def _threads(result: StudyResult) -> int:
    return int(pd.to_numeric(result.frame["threads"]).iloc[0]) if len(result.frame) else 1


def _published_multiget() -> pd.DataFrame:
    r = published.load("asyncio_results")
    r = r[r["table"].str.startswith("MultiGet ") & ~r["table"].str.contains("text")]
    rows = []
    for variant, g in r.groupby("variant", sort=False):
        v = dict(zip(g["metric"], pd.to_numeric(g["value"]), strict=True))
        rows.append(
            {
                "source": "published",
                "backend": "ws:// remote flash",
                "delay_us": np.nan,
                "api": f"MultiGet {variant}",
                "batch_size": SEED_BATCH,
                "threads": SEED_THREADS,
                "micros_per_key": v["micros/op"],
                "us_per_op": v["rocksdb.db.multiget.micros SUM"] / v["rocksdb.db.multiget.micros COUNT"],
                "p50_us": v["rocksdb.db.multiget.micros P50"],
                "p95_us": v["rocksdb.db.multiget.micros P95"],
                "p99_us": v["rocksdb.db.multiget.micros P99"],
                "overlap": "",
                "n": np.nan,
            }
        )
    return pd.DataFrame(rows)


def scan_table(result: StudyResult) -> pd.DataFrame:
    """Scans with and without async prefetch per backend and delay, the page's two rows beside.

    micros_per_scan is db_bench's micros/op; MB/s the keys and values read per
    second of wall time; async reads, Poll calls and the overlap verdict from
    the counters; speedup = micros_per_scan without / with async_io (the
    page: 2.05).
    """
    f = result.frame
    sc = f[f["test"].isin([SCAN_SYNC, SCAN_ASYNC])]
    cols = [
        "micros_per_op",
        "mb_per_s",
        *PCT,
        "qps",
        "cpuPer",
        "fs.read_async",
        "fs.polls",
        "fs.reads",
        "ticker.rocksdb.prefetch.bytes",
    ]
    by = ["backend", "delay_us", "test"]
    med = _med(sc, by, cols).merge(_verdict(sc, by), on=by)
    med = med.rename(
        columns={
            "micros_per_op": "micros_per_scan",
            "fs.read_async": "read_async",
            "fs.polls": "polls",
            "ticker.rocksdb.prefetch.bytes": "prefetch_bytes",
        }
    )
    med.insert(0, "source", "local")
    med["async_io"] = med["test"] == SCAN_ASYNC
    med["seek_nexts"] = (
        result.settings.seek_nexts if result.settings else pd.to_numeric(sc["seek_nexts"]).iloc[0]
    )
    med["threads"] = _threads(result)
    sync = med[~med["async_io"]].set_index(["backend", "delay_us"])["micros_per_scan"]
    med["speedup"] = [
        sync.get((b, d), np.nan) / m if a else np.nan
        for b, d, a, m in zip(
            med["backend"], med["delay_us"], med["async_io"], med["micros_per_scan"], strict=True
        )
    ]
    r = published.load("asyncio_results")
    r = r[r["benchmark"] == "seekrandom"]
    pub = []
    vals = {
        v: dict(zip(g["metric"], pd.to_numeric(g["value"]), strict=True)) for v, g in r.groupby("variant")
    }
    for variant, a in (("sync", False), ("async", True)):
        v = vals[variant]
        pub.append(
            {
                "source": "published",
                "backend": "ws:// remote flash",
                "async_io": a,
                "micros_per_scan": v["micros/op"],
                "mb_per_s": v["MB/s"],
                "seek_nexts": 65536,
                "threads": SEED_THREADS,
                "overlap": "",
                "speedup": vals["sync"]["micros/op"] / v["micros/op"] if a else np.nan,
            }
        )
    out = pd.concat([med, pd.DataFrame(pub)], ignore_index=True)
    keep = [
        "source",
        "backend",
        "delay_us",
        "async_io",
        "seek_nexts",
        "threads",
        "micros_per_scan",
        "mb_per_s",
        "speedup",
        *PCT,
        "cpuPer",
        "read_async",
        "polls",
        "prefetch_bytes",
        "overlap",
        "evidence",
        "n",
    ]
    return out[[c for c in keep if c in out.columns]]


def latency_table(result: StudyResult, batch_size: int = SEED_BATCH) -> pd.DataFrame:
    """p50, p95, p99 of one MultiGet at the page's batch size per backend and delay, the page's beside."""
    t = multiget_table(result)
    t = t[(t["batch_size"] == batch_size) & t["api"].str.startswith("MultiGet")]
    return t[["source", "backend", "delay_us", "api", "threads", "us_per_op", *PCT, "overlap", "n"]]


def db_structure_table(result: StudyResult) -> pd.DataFrame:
    """Files and bytes per level: the local DB (one SST) and the page's benchmark DB."""
    loc = result.structure.groupby("level").agg(files=("file", "count"), size_bytes=("size_bytes", "sum"))
    loc = loc.reset_index().assign(source="local")
    p = published.load("asyncio_db_structure")

    def nfiles(s):
        m = re.match(r"/(\d+)\.sst - /(\d+)\.sst", s)
        return int(m.group(2)) - int(m.group(1)) + 1 if m else 1

    pub = (
        p.assign(files=p["files"].map(nfiles))
        .groupby("level")
        .agg(files=("files", "sum"), size_bytes=("size_bytes", "sum"))
        .reset_index()
        .assign(source="published")
    )
    out = pd.concat([loc, pub], ignore_index=True)
    out["size_mib"] = out["size_bytes"] / MIB
    return out[["source", "level", "files", "size_bytes", "size_mib"]]


def limits_table(result: StudyResult) -> pd.DataFrame:
    """The page's results and what this build measures for each (or why it cannot)."""
    t = multiget_table(result)
    loc = t[t["source"] == "local"]
    a = loc[loc["api"] == "MultiGet async_io"]
    m8 = loc[(loc["api"] == "MultiGet") & (loc["batch_size"] == SEED_BATCH)]
    sc = scan_table(result)
    sca = sc[(sc["source"] == "local") & sc["async_io"]]
    pubm = t[t["source"] == "published"].set_index("api")["micros_per_key"]
    pubs = sc[sc["source"] == "published"].set_index("async_io")["micros_per_scan"]
    yes = lambda d: f"{int((d['overlap'] == 'yes').sum())} of {len(d)} configurations"  # noqa: E731
    rows = [
        (
            "MultiGet single-file",
            pubm.get("MultiGet single-file"),
            "measured: MultiGet on a one-SST DB, batch sizes "
            + ", ".join(map(str, sorted(loc["batch_size"].dropna().astype(int).unique()))),
            f"reads overlapped (MultiRead, >1 in flight) in {yes(m8)} at batch {SEED_BATCH}",
        ),
        (
            "MultiGet single-level",
            pubm.get("MultiGet single-level"),
            "no local counterpart: async reads across files need USE_COROUTINES (folly), "
            "absent from these builds",
            f"async_io=true MultiGet run anyway: same path as without it; overlap only from MultiRead "
            f"({yes(a)})",
        ),
        (
            "MultiGet multi-level",
            pubm.get("MultiGet multi-level"),
            "no local counterpart: same reason (optimize_multiget_for_io acts only with coroutines)",
            "the local DB has one file on one level, so there is nothing to read in parallel across levels",
        ),
        ("Scan without async", pubs.get(False), "measured: seekrandom async_io=false, block_align off", ""),
        (
            "Scan with async",
            pubs.get(True),
            "measured: seekrandom async_io=true (ReadAsync + Poll)",
            f"ReadAsync overlapped in {yes(sca)}",
        ),
    ]
    return pd.DataFrame(rows, columns=["page result", "page micros/op", "here", "counters say"])


# --------------------------------------------------------------------------- figures


def _delay_label(d) -> str:
    return "no added latency" if not d else f"delay_us={int(d)}"


def _tick(backend: str, delay_us) -> str:
    """A short two- or three-line tick label: the backend (query on its own line) and the delay."""
    return f"{backend.replace('?', chr(10))}\nd={int(delay_us)}"


def fig_multiget(result: StudyResult, table: pd.DataFrame | None = None):
    """Micros per key against batch size: MultiGet (solid) and the Get loop (dashed) per backend, one
    panel per device latency; the page's three MultiGet rows at batch 8 (black markers)."""
    t = multiget_table(result) if table is None else table
    loc, pub = t[t["source"] == "local"], t[t["source"] == "published"]
    delays = sorted(loc["delay_us"].dropna().unique())
    fig, axes = figures.figure(
        width="page", aspect=0.36, ncols=max(len(delays), 1), sharey=True, squeeze=False
    )
    markers = {"MultiGet single-file": "o", "MultiGet single-level": "s", "MultiGet multi-level": "^"}
    for ax, d in zip(axes[0], delays, strict=False):
        for b in result.backends:
            for api, ls in (("MultiGet", "-"), ("Get loop", "--")):
                g = loc[(loc["backend"] == b) & (loc["delay_us"] == d) & (loc["api"] == api)].sort_values(
                    "batch_size"
                )
                if len(g):
                    ax.plot(
                        g["batch_size"],
                        g["micros_per_key"],
                        ls,
                        marker="." if api == "MultiGet" else None,
                        color=figures.backend_color(b),
                        label=f"{b}, {api}",
                    )
        for _, r in pub.iterrows():
            ax.plot(
                [SEED_BATCH],
                [r["micros_per_key"]],
                markers.get(r["api"], "o"),
                color="#000000",
                mfc="none",
                label=f"page: {r['api'].removeprefix('MultiGet ')} ({SEED_THREADS} threads)",
            )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("keys per op (batch_size)")
        ax.set_title(_delay_label(d))
    axes[0][0].set_ylabel("micros/op per key (db_bench)")
    h, lab = axes[0][0].get_legend_handles_labels()
    fig.legend(h, lab, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=4, fontsize=5.5)
    return fig


def fig_scan(result: StudyResult, table: pd.DataFrame | None = None):
    """Scan throughput (MB/s) without and with async prefetch per backend and delay, the page's beside;
    right: the speedup (time without / with)."""
    t = scan_table(result) if table is None else table
    loc, pub = t[t["source"] == "local"], t[t["source"] == "published"]
    fig, (ax, ax2) = figures.figure(width="page", aspect=0.5, nrows=2, sharex=True)
    groups = [
        (b, d)
        for d in sorted(loc["delay_us"].unique())
        for b in result.backends
        if ((loc["backend"] == b) & (loc["delay_us"] == d)).any()
    ]
    labels = [_tick(b, d) for b, d in groups] + ["page\n(4 threads)"]
    x = np.arange(len(labels))
    for i, (b, d) in enumerate(groups):
        for a, off, hatch in ((False, -0.2, "///"), (True, 0.2, None)):
            g = loc[(loc["backend"] == b) & (loc["delay_us"] == d) & (loc["async_io"] == a)]
            if len(g):
                ax.bar(
                    x[i] + off,
                    g["mb_per_s"].iloc[0],
                    0.38,
                    color=figures.backend_color(b),
                    hatch=hatch,
                    edgecolor="#333333",
                    linewidth=0.4,
                )
                if a:
                    ax2.bar(
                        x[i],
                        g["speedup"].iloc[0],
                        0.6,
                        color=figures.backend_color(b),
                        edgecolor="none",
                    )
                    ax2.text(x[i], g["speedup"].iloc[0], g["overlap"].iloc[0], ha="center", va="bottom",
                             fontsize=6)
    for a, off, hatch in ((False, -0.2, "///"), (True, 0.2, None)):
        g = pub[pub["async_io"] == a]
        ax.bar(
            x[-1] + off,
            g["mb_per_s"].iloc[0],
            0.38,
            color="#000000" if a else "#8c8c8c",
            hatch=hatch,
            edgecolor="#333333",
            linewidth=0.4,
        )
    ax2.bar(x[-1], pub["speedup"].dropna().iloc[0], 0.6, color="#000000")

    ax.legend(
        handles=[
            Patch(facecolor="white", edgecolor="#333333", hatch="///", label="async_io off"),
            Patch(facecolor="#999999", edgecolor="#333333", label="async_io on"),
        ],
        loc="lower left",
        bbox_to_anchor=(0.0, 1.0),
        ncols=2,
    )
    ax.set_ylabel("scan MB/s")
    ax2.set_xticks(x, labels, fontsize=6)
    ax2.axhline(1.0, color="#555555", lw=0.6, ls="--")
    ax2.set_ylabel("speedup from async_io (x)")
    ax2.set_title("above each bar: did ReadAsync overlap, by the counters (yes / no / unknown)")
    return fig


def fig_latency(result: StudyResult, batch_size: int = SEED_BATCH):
    """p50/p95/p99 of one MultiGet of the page's batch size per backend and delay, the page's three rows."""
    t = latency_table(result, batch_size)
    t = t[(t["api"] != "MultiGet async_io")]
    loc, pub = t[t["source"] == "local"], t[t["source"] == "published"]
    order = {b: i for i, b in enumerate(result.backends)}
    loc = loc.assign(_o=loc["backend"].map(order)).sort_values(["delay_us", "_o"], kind="stable")
    rows = [(_tick(r.backend, r.delay_us), figures.backend_color(r.backend), r) for r in loc.itertuples()]
    rows += [(f"page\n{r.api.removeprefix('MultiGet ')}", "#000000", r) for r in pub.itertuples()]
    fig, ax = figures.figure(width="page", aspect=0.3)
    for i, (_, color, r) in enumerate(rows):
        ax.plot([i, i], [r.p50_us, r.p99_us], color=color, lw=1.2)
        for v, m in ((r.p50_us, "o"), (r.p95_us, "s"), (r.p99_us, "^")):
            ax.plot([i], [v], m, color=color, mfc="white" if m != "o" else color, ms=4)
    ax.set_xticks(range(len(rows)), [r[0] for r in rows], fontsize=6)
    ax.set_yscale("log")
    ax.set_ylabel(f"one MultiGet of {batch_size} keys (us)")
    ax.set_title("p50 (filled), p95 (square), p99 (triangle); the page: 4 threads, remote flash")
    return fig


# --------------------------------------------------------------------------- findings


def findings(result: StudyResult) -> str:
    """What the tables show, in Markdown bullets with their numbers."""
    mg, sc = multiget_table(result), scan_table(result)
    loc = mg[mg["source"] == "local"]
    lines = []
    for d in sorted(loc["delay_us"].dropna().unique()):
        parts = []
        for b in result.backends:
            g = loc[(loc["backend"] == b) & (loc["delay_us"] == d)]
            m = g[g["api"] == "MultiGet"].sort_values("batch_size")
            gl = g[g["api"] == "Get loop"]
            if m.empty or gl.empty:
                continue
            big = m.iloc[-1]
            parts.append(
                f"{b} {gl['micros_per_key'].iloc[0]:.0f} -> {big['micros_per_key']:.0f} us/key at "
                f"batch {int(big['batch_size'])} "
                f"({gl['micros_per_key'].iloc[0] / big['micros_per_key']:.1f}x, "
                f"overlap: {big['overlap']})"
            )
        if parts:
            lines.append(f"- MultiGet against the Get loop, {_delay_label(d)}: " + "; ".join(parts) + ".")
    a = loc[loc["api"] == "MultiGet async_io"]
    m8 = loc[(loc["api"] == "MultiGet") & (loc["batch_size"] == SEED_BATCH)]
    if len(a) and len(m8):
        j = a.merge(m8, on=["backend", "delay_us"], suffixes=("_a", ""))
        ratio = j["micros_per_key_a"] / j["micros_per_key"]
        same = j["max_inflight_a"].fillna(-1).eq(j["max_inflight"].fillna(-1)).all()
        counters = (
            "the backends' counters show the same reads in flight with and without it"
            if same
            else "the counters differ between the two in some configuration (see the table)"
        )
        lines.append(
            f"- MultiGet with async_io=true at batch {SEED_BATCH} takes {ratio.min():.2f}x to "
            f"{ratio.max():.2f}x the time of plain MultiGet ({counters}; without coroutines async_io "
            "does not change MultiGet's reads, so the spread is run-to-run variation): the page's "
            "single-level (775 us/op) and multi-level (508 us/op) rows have no local counterpart."
        )
    pub = mg[mg["source"] == "published"].set_index("api")
    lines.append(
        f"- The page (4 threads, remote flash, batch {SEED_BATCH}): single-file "
        f"{pub.loc['MultiGet single-file', 'micros_per_key']:.0f} us/op, "
        f"p50/p95/p99 {pub.loc['MultiGet single-file', 'p50_us']:.0f}/"
        f"{pub.loc['MultiGet single-file', 'p95_us']:.0f}/{pub.loc['MultiGet single-file', 'p99_us']:.0f} us "
        "per MultiGet."
    )
    sl = sc[(sc["source"] == "local") & sc["async_io"]]
    if len(sl):
        parts = [f"{r.backend} d={int(r.delay_us)} {r.speedup:.2f}x ({r.overlap})" for r in sl.itertuples()]
        sp = sc[(sc["source"] == "published") & sc["async_io"]]["speedup"].iloc[0]
        lines.append(
            "- Scan speedup from async_io (time without / with; overlap per the counters): "
            + "; ".join(parts)
            + f". The page: {sp:.2f}x."
        )
    return "\n".join(lines)
