"""The lab report's backend study, run on this machine, its published numbers beside.

The seed (lab-report-disaggregated-rocksdb-backends.txt, "Disaggregated
RocksDB") runs db_bench's fillseq, fillrandom, readrandom, readseq and the
ZippyDB-like mixgraph on three pluggable file-system backends (POSIX, libaio,
io_uring) with 16-byte keys, 1000-byte values, a 2 MiB write buffer and
direct IO, on a local SSD (its Figures 3, 4 and 6) and on a cluster's
"virtual" and "remote" SSDs (Figures 10 to 13). This module is that study:

* `Params` (checked in one line each) and `Params.settings()`: the scale
  presets (`smoke`: seconds; `small`: minutes; `full`: a DB of several GiB).
* `DEVICE_CASES`: the local disk as it is, and the report's virtual and
  remote SSDs emulated with rxlab's per-read completion deadline
  (`delay_us`, `jitter_us`), the values taken from the report's own
  latency percentiles (see `DEVICE_CASES` for the derivation).
* `plan` / `run_study`: each repetition, device case and backend runs the
  sequence `driver.SEQUENCES["lab_report"]`, split where db_bench would start
  a fresh database (every fill benchmark), each part stored as a run. The
  order of cases and backends rotates from one repetition to the next, so
  drift of the machine hits every backend alike. `load_study` finds a study
  in the store again.
* Tables with the published rows beside (`throughput_table`,
  `latency_table`, `zippydb_table`, `emulated_table`, `change_table`,
  `hardware_table`), the five figures (`fig_throughput`, `fig_latency`,
  `fig_zippydb`, `fig_emulated_throughput`, `fig_emulated_latency`) and
  `findings`, the numbers in a few sentences.

Throughput is db_bench's MB/s (key and value bytes moved per second, MB =
2**20 bytes), the unit of the report: rxlab.metrics' `mbps`, like every other
column (qps, cpuPer, rx.lat, percentiles).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import figures, metrics, published, store, study
from . import params as checks
from .sysinfo import work_space

__all__ = [
    "DEVICE_CASES", "ENGINES", "PERCENTILES", "PUBLISHED", "SCALES", "SEED_FILE", "Params", "Settings",
    "StudyResult", "change_table", "emulated_table", "fig_emulated_latency", "fig_emulated_throughput",
    "fig_latency", "fig_throughput", "fig_zippydb", "findings", "hardware_table", "latency_pivot",
    "latency_table", "load_study", "mb_per_s", "medians", "parts", "plan", "run_study", "study_frame",
    "throughput_table", "with_case", "zippydb_options", "zippydb_table",
]

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
PUB_WORKLOAD = {"mixgraph": "mixgraph (ZippyDB)"}
# Latency percentiles of the figures (the report plots p50 to p99.9).
PERCENTILES = (50.0, 75.0, 90.0, 99.0, 99.9)
PCT_NAMES = tuple(f"p{p:g}" for p in PERCENTILES)
PCT_COLUMNS = tuple(metrics.percentile_column(p) for p in PERCENTILES)
RUN_PREFIX = "lab-"
MIB, GIB = 1 << 20, 1 << 30


# --------------------------------------------------------------------------- device cases

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
MAX_DELAY_US = 100_000


def with_case(backend: str, case: DeviceCase) -> str:
    """The backend URI with the case's delay_us and jitter_us (unchanged for a zero delay)."""
    if not case.delay_us:
        return backend
    q = f"delay_us={case.delay_us}" + (f"&jitter_us={case.jitter_us}" if case.jitter_us else "")
    return f"{backend}{'&' if '?' in backend else '?'}{q}"


def _strip_case(uri: str) -> str:
    base, _, q = str(uri).partition("?")
    keep = [p for p in q.split("&") if p and not p.startswith(("delay_us=", "jitter_us="))]
    return base + ("?" + "&".join(keep) if keep else "")


def _engine(backend: str) -> str:
    return str(backend).removeprefix("rxlab://").split("?")[0]


# --------------------------------------------------------------------------- parameters

@dataclass(frozen=True)
class Scale:
    num: int            # keys (16 + 1000 bytes each)
    duration: float     # seconds of readrandom and of mixgraph
    repeats: int
    cache_size: int     # block cache: well below the DB so that reads reach the device


SCALES = {
    "smoke": Scale(num=5_000, duration=0.2, repeats=1, cache_size=1 * MIB),          # 5 MB, seconds
    "small": Scale(num=200_000, duration=3.0, repeats=3, cache_size=8 * MIB),        # 0.2 GB, minutes
    "full": Scale(num=2_000_000, duration=10.0, repeats=3, cache_size=32 * MIB),     # 2 GB, db_bench's cache
}


@dataclass(frozen=True)
class Settings:
    """A scale resolved on this machine."""

    scale: str
    num: int
    db_bytes: int
    duration: float
    repeats: int
    cache_size: int
    threads: int
    work_dir: str
    free_bytes: int

    def table(self) -> pd.DataFrame:
        def size(b):
            return f"{b / GIB:.2f} GiB" if b >= GIB else f"{b / MIB:.1f} MiB"

        rows = [("keys (num)", f"{self.num:,}"), ("key / value bytes", f"{KEY_SIZE} / {VALUE_SIZE}"),
                ("DB size (num x 1016 B)", size(self.db_bytes)), ("write buffer", size(WRITE_BUFFER)),
                ("block cache", size(self.cache_size)),
                ("block size, compression", f"{BLOCK_SIZE} B, {COMPRESSION}"),
                ("readrandom, mixgraph duration", f"{self.duration:g} s"),
                ("readseq", "one pass over the DB per thread"), ("read threads", str(self.threads)),
                ("repeats", str(self.repeats)), ("work directory", self.work_dir),
                ("free there", size(self.free_bytes))]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


@dataclass
class Params(checks.Checked):
    """The study's parameters (the notebook's papermill parameters).

    backends: default and/or rxlab engine URIs (posix, libaio, io_uring, ...),
    without delays. threads: clients of the read steps (the fills run with one,
    as db_bench's default). device_cases: names in DEVICE_CASES (local must be
    among them: every figure compares against it); case_delays: {name:
    [delay_us, jitter_us]} to change a case or add one. The emulated cases run
    on the rxlab engines only (RocksDB's default file system has no delay).
    """

    backends: list = field(default_factory=lambda: ["default", "posix", "libaio", "io_uring"])
    threads: int = 1
    scale: str = "small"
    db_dir: str | None = None
    repeats: int | None = None
    duration: float | None = None
    device_cases: list = field(default_factory=lambda: ["local", "virtual", "remote"])
    case_delays: dict | None = None

    def __post_init__(self):
        self.backends = checks.backend_list("backends", self.backends)
        if not (checks.is_int(self.threads) and 1 <= self.threads <= 64):
            checks.fail("threads", self.threads, "expected an integer 1..64 (clients of the read steps)")
        self.threads = int(self.threads)
        checks.choice("scale", self.scale, tuple(SCALES))
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 100):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..100")
        if self.duration is not None and not (checks.is_number(self.duration) and 0 < self.duration <= 3600):
            checks.fail("duration", self.duration, "expected None (the scale's) or seconds in (0, 3600]")
        self._cases = dict(DEVICE_CASES)
        if self.case_delays is not None:
            if not isinstance(self.case_delays, Mapping):
                checks.fail("case_delays", self.case_delays, "expected None or {name: [delay_us, jitter_us]}")
            for name, dj in self.case_delays.items():
                ok = (isinstance(name, str) and re.fullmatch(r"[a-z][a-z0-9_]{0,15}", name) is not None
                      and isinstance(dj, (list, tuple)) and len(dj) == 2 and all(checks.is_int(v) for v in dj)
                      and 0 <= dj[1] <= dj[0] <= MAX_DELAY_US)
                if not ok:
                    checks.fail("case_delays", self.case_delays,
                                "expected {name: [delay_us, jitter_us]} with a lowercase name and "
                                f"0 <= jitter_us <= delay_us <= {MAX_DELAY_US}")
                self._cases[name] = DeviceCase(name, int(dj[0]), int(dj[1]),
                                               "set by the case_delays parameter")
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
        sc = SCALES[self.scale]
        work, free = work_space(self.db_dir)
        db_bytes = sc.num * (KEY_SIZE + VALUE_SIZE)
        need = 3 * db_bytes  # the DB (uncompressed at worst) and its compactions' copies
        if need > free:
            raise ValueError(f"scale={self.scale!r}: needs about {need / GIB:.1f} GiB free at {work}, only "
                             f"{free / GIB:.1f} GiB free; choose another db_dir or a smaller scale")
        return Settings(scale=self.scale, num=sc.num, db_bytes=db_bytes,
                        duration=float(self.duration) if self.duration is not None else sc.duration,
                        repeats=self.repeats if self.repeats is not None else sc.repeats,
                        cache_size=sc.cache_size, threads=self.threads, work_dir=str(work),
                        free_bytes=int(free))


# --------------------------------------------------------------------------- the sequence

def zippydb_options() -> dict:
    """The mixgraph options of the report's ZippyDB command (data/published/flags.csv), those the
    driver takes. Its key_size 48, num, reads and 256 MiB cache are not applied: the step reads the
    DB that fillrandom loaded (16-byte keys) for the study's duration."""
    from .driver import STEP_FIELDS

    f = published.load("flags")
    f = f[(f["source"] == SEED_FILE) & (f["table"] == "5.2.2 ZippyDB mixgraph command")]
    skip = {"key_size", "num", "reads"}
    return {r.flag: float(r.value) if "." in str(r.value) or "e" in str(r.value).lower() else int(r.value)
            for r in f.itertuples() if r.flag in STEP_FIELDS and r.flag not in skip}


def parts(settings: Settings) -> list[list]:
    """driver.SEQUENCES["lab_report"] split where db_bench starts a fresh DB (each fill benchmark), with
    the per-step options: fills single-threaded, readseq one pass (ops = num), mixgraph the ZippyDB
    options."""
    from .driver import FILL_STEPS, SEQUENCES

    out: list[list] = []
    for name in SEQUENCES["lab_report"]:
        if name in FILL_STEPS:
            out.append([{"name": name, "threads": 1}])
            continue
        step: dict = {"name": name}
        if name == "readseq":
            step.update(duration=0, ops=settings.num)
        elif name == "mixgraph":
            step.update(zippydb_options())
        out[-1].append(step)
    return out


_rot = study.rotate


def plan(params: Params) -> pd.DataFrame:
    """The runs in execution order: rep, case, delay_us, jitter_us, backend, part (the fill that starts it).

    Each repetition rotates the order of the cases and of the backends, so no
    backend always runs first (cold) or last.
    """
    s = params.settings()
    names = [p[0]["name"] for p in parts(s)]
    rows = []
    for rep in range(s.repeats):
        for c in _rot(params.device_cases, rep):
            case = params.case(c)
            backs = params.backends if not case.delay_us else params.engines
            for b in _rot(backs, rep):
                for part in names:
                    rows.append({"rep": rep, "case": c, "delay_us": case.delay_us,
                                 "jitter_us": case.jitter_us, "backend": b, "part": part})
    return pd.DataFrame(rows, columns=["rep", "case", "delay_us", "jitter_us", "backend", "part"])


_new_study_id = study.new_study_id


def _run_name(study: str, rep: int, case: str, part: str, b: int) -> str:
    return f"{RUN_PREFIX}{study}-r{rep}-{case}-{part}-b{b}"


_NAME_RE = re.compile(r"^lab-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)-(?P<case>[a-z][a-z0-9_]*)"
                      r"-(?P<part>fillseq|fillrandom)-b(?P<b>\d+)$")


@dataclass
class StudyResult:
    """A study: its runs and one tidy frame, one row per step.

    frame keys: study, rep, case, delay_us, jitter_us, backend (without the
    delay), backend_uri, part, test, run_id; then the raw step columns, the
    seeds' columns (rxlab.metrics.seed_columns) and mbps (db_bench's MB/s).
    """

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    params: Params | None = None
    elapsed_s: float | None = None

    @property
    def backends(self) -> list[str]:
        order = {b: i for i, b in enumerate(["default", *ENGINES])}
        return sorted(self.frame["backend"].unique(), key=lambda b: (order.get(_engine(b), 9), b))

    @property
    def cases(self) -> list[str]:
        d = self.frame.groupby("case")["delay_us"].first().sort_values()
        return list(d.index)


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True) -> StudyResult:
    """Run `plan(params)`, every part a stored run under `root` (the store's default); the DB is deleted."""
    from tqdm import tqdm

    from . import driver

    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    study = _new_study_id()
    temp = params.db_dir is None
    work = Path(tempfile.mkdtemp(prefix="rxlab-lab-")) if temp else Path(params.db_dir)
    work.mkdir(parents=True, exist_ok=True)
    db = work / f"lab-db-{study}"
    seq = {p[0]["name"]: p for p in parts(s)}
    steps = plan(params)
    runs: list[Path] = []
    t0 = time.monotonic()
    try:
        bar = tqdm(steps.itertuples(index=False), total=len(steps), desc=f"lab {params.scale}", unit="run",
                   disable=not progress)
        for r in bar:
            bar.set_postfix_str(f"rep {r.rep} {r.case} {r.backend} {r.part}")
            case = params.case(r.case)
            spec = driver.RunSpec(
                db=str(db), name=_run_name(study, r.rep, r.case, r.part, params.backends.index(r.backend)),
                backend=with_case(r.backend, case), steps=seq[r.part], num=s.num, key_size=KEY_SIZE,
                value_size=VALUE_SIZE, threads=s.threads, duration=s.duration, block_size=BLOCK_SIZE,
                block_align=False, compression=COMPRESSION, cache_size=s.cache_size, bloom_bits=0,
                use_direct_reads=True, use_direct_io_for_flush_and_compaction=True,
                write_buffer_size=WRITE_BUFFER, scale=params.scale, seed=1000 * r.rep)
            runs.append(driver.run(spec, root=root, progress=False))
    finally:
        shutil.rmtree(db, ignore_errors=True)
        if temp:
            shutil.rmtree(work, ignore_errors=True)
    frame = study_frame(store.catalog(root, runs=runs))
    return StudyResult(study=study, frame=frame, runs=runs, root=root, params=params,
                       elapsed_s=time.monotonic() - t0)


# --------------------------------------------------------------------------- frames

def mb_per_s(rows: pd.DataFrame) -> pd.Series:
    """db_bench's MB/s of each step row (rxlab.metrics' `mbps`)."""
    return metrics.seed_columns(rows)["mbps"].astype(float)


_KEYS = ["study", "rep", "case", "delay_us", "jitter_us", "backend", "backend_uri", "part", "test", "run_id"]


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """The tidy frame of a study from catalog rows (runs named by run_study; others are dropped)."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=[*_KEYS, *metrics.SEED_COLUMNS, "mbps"])
    m = cat["run_name"].astype(str).str.extract(_NAME_RE)
    keep = m["study"].notna()
    cat, m = cat[keep].copy(), m[keep]
    if cat.empty:
        return pd.DataFrame(columns=[*_KEYS, *metrics.SEED_COLUMNS, "mbps"])
    uri = cat["backend"].astype(str)
    delay = pd.to_numeric(uri.str.extract(r"delay_us=(\d+)")[0], errors="coerce").fillna(0).astype(int)
    jitter = pd.to_numeric(uri.str.extract(r"jitter_us=(\d+)")[0], errors="coerce").fillna(0).astype(int)
    keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int), "case": m["case"],
                         "delay_us": delay, "jitter_us": jitter, "backend": uri.map(_strip_case),
                         "backend_uri": uri, "part": m["part"]}, index=cat.index)
    derived = metrics.seed_columns(cat)
    raw = cat.drop(columns=[c for c in [*derived.columns, *keys.columns, "backend"] if c in cat.columns])
    out = pd.concat([keys, raw, derived], axis=1)
    first = [c for c in _KEYS if c in out.columns]
    out = out[first + [c for c in out.columns if c not in first]]
    return out.sort_values(["study", "rep", "run_id", "step"], kind="stable").reset_index(drop=True)


def _complete(f: pd.DataFrame) -> bool:
    """Every run of the study has its steps: the local case has every workload for every backend."""
    loc = f[f["case"] == "local"]
    if loc.empty:
        return False
    need = {*LOCAL_TESTS, ZIPPY_TEST}
    have = loc.groupby(["rep", "backend"])["test"].apply(set)
    return bool(all(need <= t for t in have))


def load_study(root: str | os.PathLike | None = None, *, study: str | None = None,
               scale: str | None = None) -> StudyResult | None:
    """The latest complete study in the store (runs named lab-*), or None; filters: study id, scale."""
    root = Path(root) if root is not None else store.default_root()
    cat = store.catalog(root)
    if cat.empty or "run_name" not in cat.columns:
        return None
    frame = study_frame(cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)])
    if frame.empty:
        return None
    for sid in sorted(frame["study"].unique(), reverse=True):
        f = frame[frame["study"] == sid]
        scales = set(f["spec.scale"].dropna()) if "spec.scale" in f.columns else set()
        if (study is None or sid == study) and (scale is None or scales == {scale}) and _complete(f):
            return StudyResult(study=str(sid), frame=f.reset_index(drop=True),
                               runs=[root / r for r in f["run_id"].unique()], root=root)
    return None


# --------------------------------------------------------------------------- tables

_VALUE_COLS = ["mbps", "qps", "cpuPer", "rx.lat", *PCT_COLUMNS, "ops", "wall_s"]


def medians(result: StudyResult) -> pd.DataFrame:
    """Per case, backend and test: medians over the repetitions (mbps, qps, cpuPer, rx.lat,
    percentiles), the min and max of mbps, and n."""
    f = result.frame
    cols = [c for c in _VALUE_COLS if c in f.columns]
    num = f[["case", "delay_us", "jitter_us", "backend", "test", *cols]].copy()
    for c in cols:
        num[c] = pd.to_numeric(num[c], errors="coerce").astype(float)
    g = num.groupby(["case", "delay_us", "jitter_us", "backend", "test"], sort=False)
    out = g[cols].median()
    out["mbps_min"], out["mbps_max"] = g["mbps"].min(), g["mbps"].max()
    out["n"] = g.size()
    return out.reset_index()


def _matches(engine: str, backend: str) -> bool:
    """Does a published engine field (posix, posix|libaio, all, ...) cover this backend?"""
    e = _engine(backend)
    if engine == "all":
        return e in ENGINES
    return e in str(engine).split("|")


def _published_for(pub: pd.DataFrame, setup: str, test: str, backend: str, **eq) -> pd.DataFrame:
    w = PUB_WORKLOAD.get(test, test)
    sel = pub[(pub["setup"] == setup) & (pub["workload"] == w)
              & pub["engine"].map(lambda e: _matches(e, backend))]
    for k, v in eq.items():
        sel = sel[sel[k] == v]
    return sel


def _pub_text(sel: pd.DataFrame) -> tuple[float, float, str, str, str]:
    """(value, value_max, qualifier, table, engine) of the first published row, NaNs when none."""
    if sel.empty:
        return np.nan, np.nan, "", "", ""
    r = sel.iloc[0]
    q = r["qualifier"] if isinstance(r["qualifier"], str) and r["qualifier"] != "nan" else ""
    vmax = float(r["value_max"]) if pd.notna(r["value_max"]) else np.nan
    return float(r["value"]), vmax, q, str(r["table"]), str(r["engine"])


def throughput_table(result: StudyResult, case: str = "local",
                     tests: Sequence[str] = LOCAL_TESTS) -> pd.DataFrame:
    """MB/s per test and backend in one case (medians, min..max, n), the report's number beside
    (published, published_max, qualifier, figure; empty where it states none for that backend)."""
    med = medians(result)
    pub = published.load("lab_throughput")
    pub = pub[pub["tracing"].isna()]  # Figure 5's rows (strace, perf) are another experiment
    rows = []
    for t in tests:
        for b in result.backends:
            m = med[(med["case"] == case) & (med["backend"] == b) & (med["test"] == t)]
            if m.empty:
                continue
            r = m.iloc[0]
            v, vmax, q, fig, eng = _pub_text(_published_for(pub, case, t, b))
            rows.append({"case": case, "test": t, "backend": b, "MB/s": r["mbps"], "MB/s min": r["mbps_min"],
                         "MB/s max": r["mbps_max"], "qps": r["qps"], "cpuPer": r["cpuPer"], "n": int(r["n"]),
                         "published MB/s": v, "published max": vmax, "qualifier": q, "published for": eng,
                         "figure": fig})
    return pd.DataFrame(rows)


def latency_table(result: StudyResult, case: str = "local",
                  tests: Sequence[str] = LOCAL_TESTS) -> pd.DataFrame:
    """Latency percentiles (us, medians over repetitions) per test and backend, one row per percentile,
    the report's number beside where it states one."""
    med = medians(result)
    pub = published.load("lab_latency")
    rows = []
    for t in tests:
        for b in result.backends:
            m = med[(med["case"] == case) & (med["backend"] == b) & (med["test"] == t)]
            if m.empty:
                continue
            for name, col in zip(PCT_NAMES, PCT_COLUMNS, strict=True):
                sel = _published_for(pub, case, t, b)
                sel = sel[sel["statistic"].map(lambda s, n=name: n in str(s).split(".."))]
                v, vmax, q, fig, eng = _pub_text(sel)
                rows.append({"case": case, "test": t, "backend": b, "percentile": name,
                             "us": m.iloc[0][col], "published us": v, "published max": vmax, "qualifier": q,
                             "published for": eng, "figure": fig})
    return pd.DataFrame(rows)


def latency_pivot(result: StudyResult, case: str = "local", tests: Sequence[str] = LOCAL_TESTS,
                  engines_only: bool = False) -> pd.DataFrame:
    """latency_table as one row per test and backend: the local percentiles (us) as columns, and
    `report` listing what the report states for that backend ("p99.9 13.42; p50 1.63")."""
    lat = latency_table(result, case, tests)
    if engines_only:
        lat = lat[lat["backend"].map(lambda b: not checks.is_default(b))]
    wide = lat.pivot_table(index=["test", "backend"], columns="percentile", values="us", sort=False)
    wide = wide.reindex(columns=list(PCT_NAMES))
    wide.columns = [f"{c} us" for c in wide.columns]

    def one(r) -> str:
        q = f"{r['qualifier']} " if r["qualifier"] else ""
        hi = f"-{r['published max']:g}" if np.isfinite(r["published max"]) else ""
        return f"{r['percentile']} {q}{r['published us']:g}{hi}"

    def said(g):
        return "; ".join(one(r) for _, r in g[g["published us"].notna()].iterrows())

    wide["report"] = lat.groupby(["test", "backend"], sort=False)[lat.columns.tolist()].apply(said)
    return wide.reset_index()


def zippydb_table(result: StudyResult, case: str = "local") -> pd.DataFrame:
    """mixgraph (ZippyDB) per backend: MB/s, qps, mean Get latency (rx.lat) and p99, the report's beside."""
    med = medians(result)
    pt, pl = published.load("lab_throughput"), published.load("lab_latency")
    rows = []
    for b in result.backends:
        m = med[(med["case"] == case) & (med["backend"] == b) & (med["test"] == ZIPPY_TEST)]
        if m.empty:
            continue
        r = m.iloc[0]
        v, _, q, fig, eng = _pub_text(_published_for(pt, case, ZIPPY_TEST, b))
        lv, _, lq, _, _ = _pub_text(_published_for(pl, case, ZIPPY_TEST, b, statistic="latency"))
        rows.append({"case": case, "backend": b, "MB/s": r["mbps"], "qps": r["qps"], "rx.lat": r["rx.lat"],
                     "p99 us": r[metrics.percentile_column(99.0)], "n": int(r["n"]), "published MB/s": v,
                     "published latency us": lv, "qualifier": " / ".join(x for x in (q, lq) if x),
                     "published for": eng, "figure": fig})
    return pd.DataFrame(rows)


def emulated_table(result: StudyResult) -> pd.DataFrame:
    """MB/s of the report's cluster workloads in every case (engines only), the report's beside."""
    parts_ = [throughput_table(result, c, CLUSTER_TESTS) for c in result.cases]
    t = pd.concat([p for p in parts_ if len(p)], ignore_index=True)
    return t[t["backend"].map(lambda b: not checks.is_default(b))].reset_index(drop=True)


def change_table(result: StudyResult, base: str = "virtual", other: str = "remote") -> pd.DataFrame:
    """Throughput change from `base` to `other` (%) per cluster workload and engine, with the change
    from local to `other`, and the report's Figure 11 beside (direction, %)."""
    med = medians(result)
    pub = published.load("lab_throughput_change")
    rows = []
    for t in CLUSTER_TESTS:
        for b in result.backends:
            if checks.is_default(b):
                continue
            get = {c: med[(med["case"] == c) & (med["backend"] == b) & (med["test"] == t)]["mbps"]
                   for c in ("local", base, other)}
            val = {c: float(s.iloc[0]) if len(s) else np.nan for c, s in get.items()}
            sel = pub[(pub["workload"] == t) & pub["engine"].map(lambda e, b=b: _matches(e, b))]
            p = sel.iloc[0] if len(sel) else None
            rows.append({"test": t, "backend": b, f"{base} MB/s": val[base], f"{other} MB/s": val[other],
                         f"change {base}->{other} %": (val[other] / val[base] - 1) * 100,
                         f"change local->{other} %": (val[other] / val["local"] - 1) * 100,
                         "published direction": p["direction"] if p is not None else "",
                         "published %": float(p["pct"]) if p is not None and pd.notna(p["pct"]) else np.nan,
                         "qualifier": p["qualifier"] if p is not None and isinstance(p["qualifier"], str)
                         else ""})
    return pd.DataFrame(rows)


def hardware_table(result: StudyResult) -> pd.DataFrame:
    """The report's setups (data/published/hardware.csv) beside this machine's (the runs' fingerprint)."""
    hw = published.load("hardware")
    hw = hw[hw["source"] == SEED_FILE]
    rows = [{"setup": r["table"], "storage": r["storage"], "notes": r["notes"], "source": r["source"]}
            for _, r in hw.iterrows()]
    f = result.frame.iloc[0]

    def g(k):
        return f.get(k, "")

    rows.append({"setup": "this machine (all cases)",
                 "storage": f"{g('device_model')} ({g('device')}, {g('fstype')}, scheduler {g('scheduler')})",
                 "notes": f"{g('cpu_model')}, {g('cores')} cores, kernel {g('kernel')}, RocksDB "
                          f"{g('rocksdb_version')} ({g('rocksdb_build')})", "source": "local"})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures

def _pub_marker(ax, x, v, vmax, label=None, *, color="#000000"):
    """A published number: a diamond (edge in `color`), with a bar over its range when it has one."""
    if not np.isfinite(v):
        return
    if np.isfinite(vmax):
        ax.plot([x, x], [v, vmax], color=color, lw=1.4, zorder=4)
    ax.plot(x, v if not np.isfinite(vmax) else (v + vmax) / 2, "D", ms=3.2, mfc="white", mec=color,
            mew=0.9, zorder=5, label=label)


def _bars(ax, table: pd.DataFrame, result: StudyResult, groups: Sequence[str], group_col: str, *,
          value: str = "MB/s", points: Mapping | None = None) -> None:
    """Bars: one group per `groups` value, one bar per backend; published markers on each bar."""
    backs = result.backends
    width = 0.8 / max(len(backs), 1)
    seen_pub = False
    for i, b in enumerate(backs):
        for j, gv in enumerate(groups):
            row = table[(table["backend"] == b) & (table[group_col] == gv)]
            if row.empty:
                continue
            r = row.iloc[0]
            x = j - 0.4 + width * (i + 0.5)
            ax.bar(x, r[value], width * 0.92, color=figures.backend_color(b), label=b if j == 0 else None,
                   edgecolor="white", linewidth=0.4)
            pts = (points or {}).get((b, gv), [])
            if len(pts) > 1:
                ax.plot([x] * len(pts), pts, "o", ms=1.8, color="#222222", alpha=0.7, zorder=3)
            pv = r.get("published MB/s", np.nan) if value == "MB/s" else r.get("published " + value, np.nan)
            if np.isfinite(pv):
                _pub_marker(ax, x, pv, r.get("published max", np.nan), None if seen_pub else "report")
                seen_pub = True
    ax.set_xticks(range(len(groups)), list(groups))


def _legend(fig, axes) -> None:
    handles, labels = {}, {}
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
            handles.setdefault(lab, h)
    labels = list(handles)
    fig.legend([handles[k] for k in labels], labels, ncols=min(len(labels), 6), loc="lower center",
               bbox_to_anchor=(0.5, 1.0), frameon=False)


def fig_throughput(result: StudyResult):
    """Figure 3: MB/s per workload and backend on the local disk (dots: repetitions; diamonds: the report)."""
    t = throughput_table(result, "local")
    pts = _case_points(result, "local", "mbps")
    fig, axes = figures.figure(width="page", aspect=0.3, ncols=len(LOCAL_TESTS))
    fig.subplots_adjust(wspace=0.35)
    for ax, test in zip(np.ravel(axes), LOCAL_TESTS, strict=True):
        sub = t[t["test"] == test].assign(g=test)
        _bars(ax, sub, result, [test], "g", points={(b, test): v for (b, tt), v in pts.items() if tt == test})
        ax.set_xticks([])
        ax.set_title(test)
        ax.set_ylim(bottom=0)
    np.ravel(axes)[0].set_ylabel("MB/s (db_bench)")
    _legend(fig, axes)
    return fig


def _case_points(result: StudyResult, case: str, col: str) -> dict:
    f = result.frame[result.frame["case"] == case]
    return {k: list(pd.to_numeric(v, errors="coerce")) for k, v in f.groupby(["backend", "test"])[col]}


def _percentile_lines(ax, lat: pd.DataFrame, result: StudyResult, test: str, *,
                      reference: pd.DataFrame | None = None, reference_label: str = "local") -> None:
    """Percentile curves per backend (log y), the report's numbers as diamonds; `reference` (another
    case's latency_table) drawn thin and dashed in the same colours."""
    x = np.arange(len(PCT_NAMES))
    seen_pub = False
    for b in result.backends:
        s = lat[(lat["test"] == test) & (lat["backend"] == b)].set_index("percentile").reindex(PCT_NAMES)
        if s["us"].notna().any():
            ax.plot(x, s["us"], "o-", ms=2.5, color=figures.backend_color(b), label=b)
        if reference is not None:
            r = reference[(reference["test"] == test) & (reference["backend"] == b)]
            r = r.set_index("percentile").reindex(PCT_NAMES)
            if r["us"].notna().any():
                ax.plot(x, r["us"], "--", lw=0.7, color=figures.backend_color(b), alpha=0.8,
                        label=f"{reference_label} (dashed)" if b == result.backends[-1] else None)
        for i, (v, vmax) in enumerate(zip(s["published us"], s["published max"], strict=True)):
            if np.isfinite(v):
                _pub_marker(ax, x[i], v, vmax, None if seen_pub else "report (edge: backend)",
                            color=figures.backend_color(b))
                seen_pub = True
    ax.set_xticks(x, PCT_NAMES)
    ax.set_yscale("log")
    ax.minorticks_off()  # minor tick labels of log axes cost seconds per figure in layout
    ax.set_title(test)


def fig_latency(result: StudyResult):
    """Figure 6: latency percentiles p50..p99.9 per workload and backend on the local disk."""
    lat = latency_table(result, "local")
    fig, axes = figures.figure(width="page", aspect=0.3, ncols=len(LOCAL_TESTS))
    fig.subplots_adjust(wspace=0.3)
    for ax, test in zip(np.ravel(axes), LOCAL_TESTS, strict=True):
        _percentile_lines(ax, lat, result, test)
    np.ravel(axes)[0].set_ylabel("latency per operation (us)")
    _legend(fig, axes)
    return fig


def fig_zippydb(result: StudyResult):
    """Figure 4: ZippyDB (mixgraph) MB/s and mean Get latency per backend, the report's beside."""
    z = zippydb_table(result).assign(g="mixgraph")
    pts = _case_points(result, "local", "mbps")
    fig, (a, b) = figures.figure(width="page", aspect=0.32, ncols=2)
    fig.subplots_adjust(wspace=0.3)
    _bars(a, z, result, ["mixgraph"], "g", points={(bk, "mixgraph"): v for (bk, t), v in pts.items()
                                                   if t == ZIPPY_TEST})
    a.set_xticks([])
    a.set_ylabel("MB/s (db_bench)")
    a.set_title("throughput")
    z2 = z.rename(columns={"rx.lat": "lat", "published latency us": "published lat"}).drop(
        columns=["published max"], errors="ignore")
    lpts = _case_points(result, "local", "rx.lat")
    _bars(b, z2, result, ["mixgraph"], "g", value="lat",
          points={(bk, "mixgraph"): v for (bk, t), v in lpts.items() if t == ZIPPY_TEST})
    b.set_xticks([])
    b.set_ylabel("mean Get latency (us)")
    b.set_title("latency")
    _legend(fig, np.array([a, b]))
    return fig


def fig_emulated_throughput(result: StudyResult):
    """Figures 10 and 11: MB/s of fillseq, readrandom, readseq per case (local, virtual, remote), engine."""
    t = emulated_table(result)
    cases = result.cases
    fig, axes = figures.figure(width="page", aspect=0.3, ncols=len(CLUSTER_TESTS))
    fig.subplots_adjust(wspace=0.3)
    for ax, test in zip(np.ravel(axes), CLUSTER_TESTS, strict=True):
        pts = {}
        for c in cases:
            for (b, tt), v in _case_points(result, c, "mbps").items():
                if tt == test:
                    pts[(b, c)] = v
        _bars(ax, t[t["test"] == test], result, cases, "case", points=pts)
        ax.set_title(test)
        ax.set_ylim(bottom=0)
    np.ravel(axes)[0].set_ylabel("MB/s (db_bench)")
    _legend(fig, axes)
    return fig


def fig_emulated_latency(result: StudyResult):
    """Figures 12 and 13: latency percentiles per emulated case (rows) and cluster workload (columns),
    engines only; the local case dashed in each panel, the report's numbers as diamonds."""
    cases = [c for c in result.cases if c != "local"] or ["local"]
    engines = result.frame["backend"].map(lambda b: not checks.is_default(b))
    ref = latency_table(result, "local", CLUSTER_TESTS) if cases != ["local"] else None
    if ref is not None:
        ref = ref[ref["backend"].map(lambda b: not checks.is_default(b))]
    fig, axes = figures.figure(width="page", aspect=0.26 * len(cases), nrows=len(cases),
                               ncols=len(CLUSTER_TESTS), squeeze=False, sharex=True)
    fig.subplots_adjust(wspace=0.25, hspace=0.3)
    for i, c in enumerate(cases):
        lat = latency_table(result, c, CLUSTER_TESTS)
        lat = lat[lat["backend"].isin(set(result.frame.loc[engines, "backend"]))]
        for j, test in enumerate(CLUSTER_TESTS):
            ax = axes[i][j]
            _percentile_lines(ax, lat, result, test, reference=ref)
            ax.set_title(f"{test}, {c}")
        axes[i][0].set_ylabel("latency (us)")
    _legend(fig, axes)
    return fig


# --------------------------------------------------------------------------- findings

def _fmt_range(vals: Iterable[float], fmt: str = ".1f") -> str:
    v = [x for x in vals if np.isfinite(x)]
    if not v:
        return "n/a"
    lo, hi = format(min(v), fmt), format(max(v), fmt)
    return lo if lo == hi else f"{lo} to {hi}"


def _by_backend(t: pd.DataFrame, col: str, fmt: str = ".1f") -> str:
    return ", ".join(f"{_engine(r['backend'])} {format(r[col], fmt)}" for _, r in t.iterrows()
                     if np.isfinite(r[col]))


def _pub_by_backend(t: pd.DataFrame, col: str = "published MB/s") -> str:
    seen, out = set(), []
    for _, r in t.iterrows():
        if not np.isfinite(r[col]):
            continue
        vmax = r.get("published max", np.nan)
        v = f"{r[col]:g}" + (f"-{vmax:g}" if np.isfinite(vmax) else "")
        who = r.get("published for") or _engine(r["backend"])
        key = (r.get("figure"), who, v)
        if key not in seen:
            seen.add(key)
            out.append(f"{who.replace('|', ' and ')} {v}")
    return ", ".join(out) if out else "none stated"


def findings(result: StudyResult) -> str:
    """What this run measured against the report, in Markdown bullets with the numbers."""
    lines = []
    thr = throughput_table(result, "local")
    for test in LOCAL_TESTS:
        t = thr[thr["test"] == test]
        if t.empty:
            continue
        best = t.loc[t["MB/s"].idxmax()]
        lines.append(f"- {test}, local: {_by_backend(t, 'MB/s')} MB/s (fastest {best['backend']}); "
                     f"the report (Figure 3): {_pub_by_backend(t)} MB/s.")
    lat = latency_table(result, "local")
    for test in LOCAL_TESTS:
        t = lat[lat["test"] == test]
        p50, p999 = t[t["percentile"] == "p50"], t[t["percentile"] == "p99.9"]
        if len(p50):
            lines.append(f"- {test} latency, local: p50 {_fmt_range(p50['us'], '.1f')} us, p99.9 "
                         f"{_fmt_range(p999['us'], '.1f')} us across backends.")
    z = zippydb_table(result)
    if len(z):
        lines.append(f"- ZippyDB mixgraph, local: {_by_backend(z, 'MB/s')} MB/s, mean Get latency "
                     f"{_by_backend(z, 'rx.lat')} us; the report (Figure 4): {_pub_by_backend(z)} MB/s, "
                     f"{_pub_by_backend(z, 'published latency us')} us.")
    if len(result.cases) > 1:
        e = emulated_table(result)
        for test in CLUSTER_TESTS:
            t = e[e["test"] == test]
            here, pub = [], []
            for c in result.cases:
                tc = t[t["case"] == c]
                if len(tc):
                    here.append(f"{c} {_by_backend(tc, 'MB/s')}")
                    if c != "local" and tc["published MB/s"].notna().any():
                        pub.append(f"{c} {_pub_by_backend(tc)}")
            lines.append(f"- {test} MB/s by case: " + "; ".join(here) + ". The report (Figure 10): "
                         + ("; ".join(pub) if pub else "none stated") + ".")
        if {"virtual", "remote"} <= set(result.cases):
            ch = change_table(result)
            for test in CLUSTER_TESTS:
                t = ch[ch["test"] == test]
                here = ", ".join(f"{_engine(r['backend'])} {r['change virtual->remote %']:+.0f}%"
                                 for _, r in t.iterrows())
                pub = ", ".join(f"{_engine(r['backend'])} {r['published direction']}"
                                + (f" {r['published %']:g}%" if np.isfinite(r["published %"]) else "")
                                for _, r in t.iterrows() if r["published direction"])
                lines.append(f"- {test}, virtual to remote: {here} here; the report (Figure 11): {pub}.")
    return "\n".join(lines)
