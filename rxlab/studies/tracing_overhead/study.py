"""What tracing costs: the lab report's Figure 5 on this machine, and strace against rxlab's counters.

The lab report (lab-report-disaggregated-rocksdb-backends.txt, section 6.1,
Figure 5) runs db_bench on its posix, libaio and io_uring backends with no
tracing, under ``perf`` and under ``strace``, and finds that strace cuts
throughput by about an order of magnitude (posix and libaio: above 80 MB/s
untraced, around 10 MB/s under strace) while perf costs little. rxlab counts
the data path's syscalls in process instead (`counters=1` of every engine);
this module measures what that costs next to the two external tools, and
checks that the in-process counts are the ones strace sees.

A tracer must wrap a whole process, so every configuration is one run of the
stock release db_bench (references.run_db_bench) through rxlab's plugin, on a fresh
DB: ``fillseq`` (or the chosen fills), ``flush``, then the read workloads,
with the report's static settings (16-byte keys, 1000-byte values, a 2 MiB
write buffer, O_DIRECT reads, flushes and compactions). Tracers:

* ``none``: counters=0 (rxlab's engines count nothing), no external tool.
* ``counters``: counters=1, the in-process counters written as JSON at exit.
* ``perf``: counters=0 under ``perf record -e cpu-clock -F <freq> -g`` (a
  software event: sampling works in these VMs; hardware events do not, see
  `tool_status`).
* ``strace``: counters=1 under ``strace -c -f`` (all syscalls counted, as the
  report's ``strace -c``), so strace's counts and rxlab's come from one run.

``default`` (RocksDB's own file system, no plugin) has no counters: it runs
``none``, ``perf`` and ``strace`` only. LD_PRELOAD reaches db_bench only,
never the tracer. Each repetition runs every (backend, tracer) pair once, the
order rotated from one repetition to the next. Every run is stored (steps
from db_bench's result lines; the strace summary, the counters JSON and the
log attached), and `syscall_table` reads the attachments back.

Under a tracer the process that references.run_db_bench samples is the tracer, not
db_bench, so the per-step CPU columns of traced runs are left empty (NaN);
throughput (ops over wall time, and db_bench's own MB/s) is what this study
compares.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
from tqdm import tqdm

from rxlab.bench import references
from rxlab.bench.references import plugin_path
from rxlab.core import figures, metrics, published, stats, store, sysinfo
from rxlab.core import params as checks
from rxlab.core.builds import active_build
from rxlab.core.store import RunWriter

__all__ = [
    "BACKENDS", "DATA_SYSCALLS", "PUBLISHED", "SCALES", "SEED_FILE", "TOLERANCE", "TRACERS", "WORKLOADS",
    "Params", "Settings", "StudyResult", "agreement", "compare_syscalls", "fig_overhead", "fig_syscalls",
    "fig_throughput", "findings", "fs_uri", "load_counters", "load_study", "overhead_table",
    "parse_strace_summary", "parse_strace_table", "plan", "published_rows", "run_study", "study_frame",
    "syscall_summary", "syscall_table", "throughput_table", "tool_status",
]

SEED_FILE = "lab-report-disaggregated-rocksdb-backends.txt"
PUBLISHED = (f"{SEED_FILE}: lab_throughput (Figure 5)", f"{SEED_FILE}: lab_statements (5.2.1)")
RUN_PREFIX = "tracing-"

BACKENDS = ("default", "posix", "libaio", "io_uring")
TRACERS = ("none", "counters", "perf", "strace")
FILLS = ("fillseq", "fillrandom")
READS = ("readrandom", "readseq")
WORKLOADS = (*FILLS, *READS)

# The data path's read and write syscalls (rxlab's counter names, strace's names).
DATA_SYSCALLS = ("pread64", "pwrite64", "io_submit", "io_getevents", "io_uring_enter")
# The issue's claim: strace's and rxlab's counts of those agree within 1%. A criterion, not a result.
TOLERANCE = 0.01

# The report's static db_bench settings (5.2.1, data/published/lab_statements.csv).
KEY_SIZE = 16
VALUE_SIZE = 1000
WRITE_BUFFER = 2 << 20
MIB = 1 << 20


# --------------------------------------------------------------------------- strace and counters

_STRACE_COLUMNS = ("pct_time", "seconds", "usecs_per_call", "calls", "errors", "syscall")


def parse_strace_table(text: str) -> pd.DataFrame:
    """`strace -c`'s summary as a frame: pct_time, seconds, usecs_per_call, calls, errors, syscall.

    Rows look like ' 93.35    0.155517           7     20024       3 pwrite64'
    (the errors column may be empty); the header, rules and 'total' row are left out.
    """
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 5 or parts[-1] == "total" or line.lstrip().startswith(("%", "-")):
            continue
        try:
            pct, secs = float(parts[0]), float(parts[1])
            usecs, calls = int(parts[2]), int(parts[3])
        except ValueError:
            continue
        errors = int(parts[4]) if len(parts) == 6 else 0
        rows.append({"pct_time": pct, "seconds": secs, "usecs_per_call": usecs, "calls": calls,
                     "errors": errors, "syscall": parts[-1]})
    return pd.DataFrame(rows, columns=list(_STRACE_COLUMNS))


def parse_strace_summary(text: str) -> dict[str, int]:
    """Calls per syscall from `strace -c`'s summary table (see parse_strace_table)."""
    t = parse_strace_table(text)
    return {str(s): int(c) for s, c in zip(t["syscall"], t["calls"], strict=True)}


def load_counters(path: str | os.PathLike) -> dict:
    """The counters JSON the plugin writes at exit (uri, threads, counters, read_latency_ns)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"the plugin wrote no counters file at {p}")
    data = json.loads(p.read_text())
    missing = [k for k in ("uri", "threads", "counters", "read_latency_ns") if k not in data]
    if missing:
        raise ValueError(f"counters JSON {p} lacks {missing}: has {sorted(data)}")
    return data


def counted_syscalls(counters: Mapping) -> dict[str, int]:
    """{syscall: calls} from a counters dict ('sys.NAME.count' keys)."""
    return {k[4:-6]: int(v) for k, v in counters.items() if k.startswith("sys.") and k.endswith(".count")}


_CMP_COLUMNS = ("syscall", "strace", "rxlab", "diff", "rel_diff", "data_path", "compared")


def compare_syscalls(traced: Mapping[str, int], counters: Mapping | None,
                     compared: Sequence[str] | None = None) -> pd.DataFrame:
    """strace's calls against rxlab's per syscall: strace, rxlab, diff, rel_diff, data_path, compared.

    Rows: every syscall rxlab counts (its counters' names) and every data-path
    syscall strace saw. ``rel_diff`` = (rxlab - strace) / strace (NaN when
    strace saw none). ``compared`` marks the rows the agreement is judged on:
    by default the data path's read and write syscalls (DATA_SYSCALLS) that
    rxlab issued, so a pread64 of the dynamic loader (strace sees two per
    start, rxlab's libaio never preads) is shown but not judged; pass
    ``compared`` to name them. ``counters`` None (RocksDB's own file system)
    gives the strace column only.
    """
    ours = counted_syscalls(counters) if counters is not None else {}
    names = sorted(set(ours) | {n for n in DATA_SYSCALLS if traced.get(n, 0)},
                   key=lambda n: (DATA_SYSCALLS.index(n) if n in DATA_SYSCALLS else len(DATA_SYSCALLS), n))
    rows = []
    for n in names:
        s = int(traced.get(n, 0))
        o = ours.get(n) if counters is not None else None
        judged = (n in compared) if compared is not None else (n in DATA_SYSCALLS and bool(o))
        rows.append({"syscall": n, "strace": s, "rxlab": np.nan if o is None else int(o),
                     "diff": np.nan if o is None else int(o) - s,
                     "rel_diff": (o - s) / s if (o is not None and s) else np.nan,
                     "data_path": n in DATA_SYSCALLS, "compared": bool(judged and counters is not None)})
    out = pd.DataFrame(rows, columns=list(_CMP_COLUMNS))
    return out[(out["strace"] > 0) | (out["rxlab"].fillna(0) > 0)].reset_index(drop=True)


def agreement(table: pd.DataFrame, tolerance: float = TOLERANCE) -> dict:
    """Of the compared rows: how many, the worst |rel_diff|, and whether all are within `tolerance`.

    A compared row where strace saw no call counts as a disagreement (inf).
    """
    c = table[table["compared"]]
    rel = c["rel_diff"].astype(float).abs().where(c["strace"] > 0, np.inf)
    worst = float(rel.max()) if len(rel) else float("nan")
    return {"rows": len(c), "worst_abs_rel_diff": worst, "tolerance": tolerance,
            "within": bool(len(c)) and bool((rel <= tolerance).all())}


# --------------------------------------------------------------------------- tools

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


# --------------------------------------------------------------------------- parameters

@dataclass(frozen=True)
class Scale:
    num: int            # keys written by the fill
    reads: int          # operations of each read workload
    cache_size: int     # block cache bytes
    repeats: int
    background_s: float  # references.run_db_bench's device background window before/after


SCALES = {
    # seconds: a 2 MB DB, a 1 MiB cache (reads still reach the device), one repetition
    "smoke": Scale(num=2_000, reads=2_000, cache_size=1 * MIB, repeats=1, background_s=0.0),
    # minutes: 100 MB, an 8 MiB cache; three repetitions (strace makes the fill ~10x slower)
    "small": Scale(num=100_000, reads=20_000, cache_size=8 * MIB, repeats=3, background_s=0.2),
    # the largest that keeps the strace runs to minutes: 1 GB, an 8 MiB cache
    "full": Scale(num=1_000_000, reads=100_000, cache_size=8 * MIB, repeats=3, background_s=0.3),
}


@dataclass(frozen=True)
class Settings:
    """A scale resolved: what a study will run."""

    scale: str
    num: int
    reads: int
    cache_size: int
    repeats: int
    perf_freq: int
    background_s: float
    db_bytes: int
    work_dir: str
    tools: dict

    def table(self) -> pd.DataFrame:
        rows = [("keys (num)", f"{self.num:,}"), ("key / value bytes", f"{KEY_SIZE} / {VALUE_SIZE}"),
                ("DB size (keys x (key + value))", f"{self.db_bytes / MIB:.0f} MiB"),
                ("write buffer", f"{WRITE_BUFFER // MIB} MiB"),
                ("operations per read workload", f"{self.reads:,}"),
                ("block cache", f"{self.cache_size / MIB:g} MiB"), ("repeats", str(self.repeats)),
                ("perf sampling frequency", f"{self.perf_freq} Hz (cpu-clock, call graphs)"),
                ("work directory", self.work_dir)]
        rows += [(f"tool: {k}", v) for k, v in self.tools.items()]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


@dataclass
class Params(checks.Checked):
    """The study's parameters (the notebook's papermill parameters).

    backends: default and rxlab engine URIs (posix, libaio, io_uring,
    io_uring?registered_files=1 ...; counters options are the study's own).
    tracers: none, counters, perf, strace. workloads: db_bench benchmarks
    (fillseq, fillrandom, readrandom, readseq); every run starts with the
    fills given (fillseq if none) and a flush. scale: smoke | small | full.
    repeats, num, reads: None takes the scale's. perf_freq: perf's sampling
    frequency in Hz. db_dir: where the DBs go (None: $TMPDIR; O_DIRECT needed).
    """

    backends: list = field(default_factory=lambda: list(BACKENDS))
    tracers: list = field(default_factory=lambda: list(TRACERS))
    workloads: list = field(default_factory=lambda: ["fillseq", "readrandom"])
    scale: str = "small"
    repeats: int | None = None
    num: int | None = None
    reads: int | None = None
    perf_freq: int = 999
    db_dir: str | None = None

    def __post_init__(self):
        bs = checks.backend_list("backends", self.backends)
        for b in bs:
            q = b.removeprefix("rxlab://").partition("?")[2]
            if any(p.split("=")[0] in ("counters", "counters_path") for p in q.split("&") if p):
                checks.fail("backends", self.backends, "counters and counters_path are set by the tracer "
                                                       "(none, counters, perf, strace): leave them out")
        self.backends = bs
        tr = checks.as_list(self.tracers)
        if not tr or len(set(tr)) != len(tr) or not all(t in TRACERS for t in tr):
            checks.fail("tracers", self.tracers, f"expected a non-empty list of distinct names from "
                                                 f"{', '.join(TRACERS)}")
        self.tracers = list(tr)
        wl = checks.as_list(self.workloads)
        if not wl or len(set(wl)) != len(wl) or not all(w in WORKLOADS for w in wl):
            checks.fail("workloads", self.workloads, f"expected a non-empty list of distinct db_bench "
                                                     f"benchmarks from {', '.join(WORKLOADS)}")
        self.workloads = list(wl)
        checks.choice("scale", self.scale, tuple(SCALES))
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 100):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..100")
        for name in ("num", "reads"):
            v = getattr(self, name)
            if v is not None and not (checks.is_int(v) and 100 <= v <= 100_000_000):
                checks.fail(name, v, "expected None (the scale's) or an integer 100..100000000")
        if not (checks.is_int(self.perf_freq) and 1 <= self.perf_freq <= 10_000):
            checks.fail("perf_freq", self.perf_freq, "expected an integer 1..10000 (Hz)")
        self.db_dir = checks.db_dir(self.db_dir)
        for tool in ("perf", "strace"):
            if tool in self.tracers and shutil.which(tool) is None:
                checks.fail("tracers", self.tracers, f"{tool} is not installed here; install it or drop "
                                                     f"{tool!r} from tracers")

    def settings(self, probe: bool = True) -> Settings:
        sc = SCALES[self.scale]
        num = self.num if self.num is not None else sc.num
        work = Path(self.db_dir) if self.db_dir is not None else Path(tempfile.gettempdir())
        reads = self.reads if self.reads is not None else sc.reads
        repeats = self.repeats if self.repeats is not None else sc.repeats
        return Settings(scale=self.scale, num=int(num), reads=int(reads), cache_size=sc.cache_size,
                        repeats=repeats,
                        perf_freq=int(self.perf_freq), background_s=sc.background_s,
                        db_bytes=int(num) * (KEY_SIZE + VALUE_SIZE), work_dir=str(work),
                        tools=tool_status(self.perf_freq) if probe else {})

    def benchmarks(self) -> list[str]:
        """db_bench's --benchmarks of every run: the fills (fillseq if none), flush, the reads."""
        fills = [w for w in self.workloads if w in FILLS] or ["fillseq"]
        return [*fills, "flush", *(w for w in self.workloads if w in READS)]


# --------------------------------------------------------------------------- running

def _is_default(b: str) -> bool:
    return checks.is_default(b)


def applies(backend: str, tracer: str) -> bool:
    """RocksDB's own file system has no rxlab counters: no `counters` configuration for it."""
    return not (_is_default(backend) and tracer == "counters")


_rot = stats.rotate


def plan(params: Params) -> pd.DataFrame:
    """The runs in execution order: rep, backend, tracer.

    Each repetition runs every (backend, tracer) pair, backends outer; both
    orders rotate by one from a repetition to the next, so no configuration
    always runs first or last.
    """
    rows = []
    for rep in range(params.settings(probe=False).repeats):
        for b in _rot(params.backends, rep):
            for t in _rot(params.tracers, rep):
                if applies(b, t):
                    rows.append({"rep": rep, "backend": b, "tracer": t})
    return pd.DataFrame(rows, columns=["rep", "backend", "tracer"])


def fs_uri(backend: str, tracer: str, counters_path: str | os.PathLike | None = None) -> str | None:
    """The --fs_uri of a configuration (None for RocksDB's own file system).

    counters=1 for `counters` and `strace` (strace's counts are compared with
    them), counters=0 otherwise.
    """
    if _is_default(backend):
        return None
    uri = backend if backend.startswith("rxlab://") else f"rxlab://{backend}"
    on = tracer in ("counters", "strace")
    uri += ("&" if "?" in uri else "?") + f"counters={int(on)}"
    if on and counters_path is not None:
        uri += f"&counters_path={counters_path}"
    return uri


def _default_flags(backend: str) -> dict:
    """default?io_uring=0|1 is db_bench's --io_uring_enabled (its default is true)."""
    q = backend.removeprefix("rxlab://").partition("?")[2]
    return {"io_uring_enabled": "false" if q == "io_uring=0" else "true"} if q else {}


def db_bench_flags(params: Params, s: Settings, db: Path, rep: int) -> dict:
    return {"db": str(db), "benchmarks": ",".join(params.benchmarks()), "num": s.num, "reads": s.reads,
            "key_size": KEY_SIZE, "value_size": VALUE_SIZE, "write_buffer_size": WRITE_BUFFER,
            "cache_size": s.cache_size, "use_direct_reads": "true",
            "use_direct_io_for_flush_and_compaction": "true", "seed": rep + 1}


def tracer_prefix(tracer: str, out: Path, perf_freq: int) -> list[str]:
    """The command in front of db_bench: [] for none and counters."""
    if tracer == "perf":
        return ["perf", "record", "-e", "cpu-clock", "-F", str(perf_freq), "-g", "-o", str(out), "--"]
    if tracer == "strace":
        return ["strace", "-c", "-f", "-o", str(out), "--"]
    return []


def _wrapper(path: Path, prefix: Sequence[str], db_bench: Path, preload: str | None) -> Path:
    """A script that runs db_bench under `prefix`, LD_PRELOAD given to db_bench only.

    references.run_db_bench runs `stdbuf -oL <script>`: stdbuf's own preload (line
    buffering) is kept for db_bench and taken from the tracer.
    """
    pre = "${LD_PRELOAD:+$LD_PRELOAD:}" + shlex.quote(preload) if preload else '"$LD_PRELOAD"'
    prefix = list(prefix)
    if prefix[0] == "strace":  # strace -E sets it for the traced program: no env process in the counts
        run = f'{shlex.join(prefix[:-1])} -E LD_PRELOAD="$P" -- {shlex.quote(str(db_bench))}'
    else:
        run = f'{shlex.join(prefix)} env LD_PRELOAD="$P" {shlex.quote(str(db_bench))}'
    body = ("#!/bin/sh\n# rxlab.studies.tracing_overhead: the tracer wraps db_bench; only db_bench gets the preload\n"
            f'P={pre}\nunset LD_PRELOAD\nexec {run} "$@"\n')
    path.write_text(body)
    path.chmod(0o755)
    return path


def _perf_samples(log: str) -> int | None:
    m = re.search(r"\((\d+) samples\)", log)
    return int(m.group(1)) if m else None


def _run_name(study: str, rep: int, backend: str, tracer: str) -> str:
    return f"{RUN_PREFIX}{study}-r{rep}-{_slug(backend)}-{tracer}"


def _slug(b: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", b.removeprefix("rxlab://")).strip("_")


_NAME_RE = re.compile(r"^tracing-(?P<study>\d{8}T\d{6}[0-9a-f]{4})-r(?P<rep>\d+)-(?P<bslug>.+)-"
                      r"(?P<tracer>none|counters|perf|strace)$")


def run_one(params: Params, s: Settings, *, study: str, rep: int, backend: str, tracer: str, work: Path,
            root: Path, fingerprint: dict | None = None) -> Path:
    """One db_bench run of a configuration on a fresh DB, stored with its tracer's output attached.

    `fingerprint`: the environment record of the work directory, taken once
    per study by run_study (taken here when None).
    """

    cdir = work / f"{_slug(backend)}-{tracer}-r{rep}"
    shutil.rmtree(cdir, ignore_errors=True)
    cdir.mkdir(parents=True)
    db, cpath, log = cdir / "db", cdir / "counters.json", cdir / "db_bench.log"
    trace_out = cdir / ("strace.txt" if tracer == "strace" else "perf.data")
    uri = fs_uri(backend, tracer, cpath)
    flags = db_bench_flags(params, s, db, rep)
    if uri is not None:
        flags["fs_uri"] = uri
    else:
        flags.update(_default_flags(backend))
    preload = str(plugin_path()) if uri is not None else None
    db_bench = references.db_bench_path()
    prefix = tracer_prefix(tracer, trace_out, s.perf_freq)
    env: dict[str, str] = {}
    program = db_bench
    if prefix:
        program = _wrapper(cdir / "run.sh", prefix, db_bench, preload)
    elif preload:
        env["LD_PRELOAD"] = preload
    fp = fingerprint if fingerprint is not None else environment(cdir)
    spec = {"name": _run_name(study, rep, backend, tracer), "tool": "db_bench", "study": study, "rep": rep,
            "backend": backend, "tracer": tracer, "fs_uri": uri, "scale": s.scale, "num": s.num,
            "reads": s.reads, "cache_size": s.cache_size,
            "perf_freq": s.perf_freq if tracer == "perf" else None,
            "tracer_command": shlex.join(prefix) if prefix else "", "flags": flags,
            "preload": preload}
    try:
        with RunWriter(root, spec, fp) as w:
            rows = references.run_db_bench(program, flags, env=env, background_s=s.background_s, log_path=log,
                                     timeout=3600)
            for r in rows:
                r.update({"backend": backend, "tracer": tracer, "rep": rep})
                if prefix:  # the sampled process was the tracer, not db_bench
                    for k in ("cpu_user_s", "cpu_sys_s", "own_read_bytes", "own_write_bytes"):
                        r[k] = float("nan")
                    r["cpu_source"] = "none: the sampled process was the tracer"
                w.add_step(r)
            w.attach(log)
            if tracer == "strace":
                w.attach(trace_out)
            if cpath.is_file():
                w.attach(cpath)
            elif tracer in ("counters", "strace") and uri is not None:
                raise RuntimeError(f"the plugin wrote no counters file at {cpath}")
            if tracer == "perf":
                samples = _perf_samples(log.read_text())
                info = {"samples": samples, "perf_data_bytes": trace_out.stat().st_size
                        if trace_out.is_file() else None, "event": "cpu-clock", "freq_hz": s.perf_freq}
                (cdir / "perf.json").write_text(json.dumps(info) + "\n")
                w.attach(cdir / "perf.json")
    finally:
        shutil.rmtree(cdir, ignore_errors=True)
    return w.path


def environment(path: Path) -> dict:
    """sysinfo.fingerprint of `path` with the active RocksDB build's record."""

    build = active_build()
    rec = json.loads((build / "build.json").read_text()) if (build / "build.json").is_file() else {}
    return sysinfo.fingerprint(path, rocksdb_build=rec)


@dataclass
class StudyResult:
    """A study's runs and one tidy frame of their db_bench steps (see study_frame)."""

    study: str
    frame: pd.DataFrame
    runs: list[Path]
    root: Path
    params: Params | None = None
    settings: Settings | None = None
    elapsed_s: float | None = None

    @property
    def backends(self) -> list[str]:
        return list(dict.fromkeys(self.frame["backend"]))

    @property
    def tracers(self) -> list[str]:
        return [t for t in TRACERS if t in set(self.frame["tracer"])]


_new_study_id = stats.new_study_id


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True,
              settings: Settings | None = None) -> StudyResult:
    """Run the plan and store every run under `root` (the store's default); DBs are deleted."""

    s = settings or params.settings()
    root = Path(root) if root is not None else store.default_root()
    study = _new_study_id()
    work = Path(tempfile.mkdtemp(prefix="rxlab-tracing-", dir=params.db_dir))
    steps = plan(params)
    runs: list[Path] = []
    t0 = time.monotonic()
    try:
        fp = environment(work)
        bar = tqdm(steps.itertuples(index=False), total=len(steps), desc=f"tracing {params.scale}",
                   unit="run", disable=not progress)
        for r in bar:
            bar.set_postfix_str(f"rep {r.rep} {r.backend} {r.tracer}")
            runs.append(run_one(params, s, study=study, rep=r.rep, backend=r.backend, tracer=r.tracer,
                                work=work, root=root, fingerprint=fp))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    frame = study_frame(store.catalog(root, runs=runs))
    return StudyResult(study=study, frame=frame, runs=runs, root=root, params=params, settings=s,
                       elapsed_s=time.monotonic() - t0)


_KEYS = ["study", "rep", "backend", "tracer", "test", "run_id"]


def study_frame(cat: pd.DataFrame) -> pd.DataFrame:
    """One row per db_bench step of the study's runs: keys, qps (rxlab.core.metrics) and db_bench's MB/s."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=[*_KEYS, "qps", "mb_per_s"])
    m = cat["run_name"].astype(str).str.extract(_NAME_RE)
    cat, m = cat[m["study"].notna()].copy(), m[m["study"].notna()]
    if cat.empty:
        return pd.DataFrame(columns=[*_KEYS, "qps", "mb_per_s"])
    derived = metrics.seed_columns(cat)
    keys = pd.DataFrame({"study": m["study"], "rep": m["rep"].astype(int), "backend": cat["spec.backend"],
                         "tracer": m["tracer"], "test": derived["test"], "run_id": cat["run_id"]},
                        index=cat.index)
    raw = cat.drop(columns=[c for c in (*derived.columns, "backend", "tracer", "rep", "run_id")
                            if c in cat.columns])
    out = pd.concat([keys, derived.drop(columns=["test"]), raw], axis=1)
    return out.sort_values(["study", "rep"], kind="stable").reset_index(drop=True)  # runs in execution order


def load_study(root: str | os.PathLike | None = None, study: str | None = None) -> StudyResult | None:
    """The latest study in the store (runs named tracing-*), or the one with id `study`; None if none."""
    root = Path(root) if root is not None else store.default_root()
    cat = store.catalog(root)
    if cat.empty or "run_name" not in cat.columns:
        return None
    frame = study_frame(cat[cat["run_name"].astype(str).str.startswith(RUN_PREFIX)])
    if frame.empty:
        return None
    sid = study if study is not None else sorted(frame["study"].unique())[-1]
    f = frame[frame["study"] == sid].reset_index(drop=True)
    if f.empty:
        return None
    return StudyResult(study=str(sid), frame=f, runs=[root / r for r in f["run_id"].unique()], root=root)


# --------------------------------------------------------------------------- tables

def _measured(frame: pd.DataFrame) -> pd.DataFrame:
    """The workload steps (flush is bookkeeping, not a throughput)."""
    return frame[frame["test"].isin(WORKLOADS)]


def throughput_table(result: StudyResult) -> pd.DataFrame:
    """Per workload, backend and tracer: median qps and db_bench MB/s over the repetitions, their range."""
    f = _measured(result.frame)
    g = f.groupby(["test", "backend", "tracer"], sort=False)
    t = g.agg(qps=("qps", "median"), qps_min=("qps", "min"), qps_max=("qps", "max"),
              mb_per_s=("mb_per_s", "median"), n=("qps", "size")).reset_index()
    order = {"test": WORKLOADS, "backend": result.backends, "tracer": TRACERS}
    for col, vals in order.items():
        t[col] = pd.Categorical(t[col], [v for v in vals if v in set(t[col])], ordered=True)
    return t.sort_values(["test", "backend", "tracer"]).reset_index(drop=True).astype(
        {"test": str, "backend": str, "tracer": str})


def overhead_table(result: StudyResult) -> pd.DataFrame:
    """Throughput under each tracer relative to `none` of the same repetition, workload and backend.

    Columns: test, backend, tracer, rel (median over repetitions of qps / qps
    untraced), rel_min, rel_max, slowdown (1 / rel), n. Each ratio pairs runs
    of one repetition, so drift of the machine between repetitions cancels.
    """
    f = _measured(result.frame)
    base = f[f["tracer"] == "none"].set_index(["rep", "test", "backend"])["qps"]
    rows = []
    for (test, b, tr), g in f[f["tracer"] != "none"].groupby(["test", "backend", "tracer"], sort=False):
        ratios = [r.qps / base[(r.rep, test, b)] for r in g.itertuples() if (r.rep, test, b) in base.index]
        if not ratios:
            continue
        med = float(np.median(ratios))
        rows.append({"test": test, "backend": b, "tracer": tr, "rel": med, "rel_min": min(ratios),
                     "rel_max": max(ratios), "slowdown": 1 / med if med else np.nan, "n": len(ratios)})
    cols = ["test", "backend", "tracer", "rel", "rel_min", "rel_max", "slowdown", "n"]
    t = pd.DataFrame(rows, columns=cols)
    if t.empty:
        return t
    t["_w"] = t["test"].map({w: i for i, w in enumerate(WORKLOADS)})
    t["_b"] = t["backend"].map({b: i for i, b in enumerate(result.backends)})
    t["_t"] = t["tracer"].map({x: i for i, x in enumerate(TRACERS)})
    return t.sort_values(["_w", "_b", "_t"]).drop(columns=["_w", "_b", "_t"]).reset_index(drop=True)


def syscall_table(result: StudyResult) -> pd.DataFrame:
    """strace's and rxlab's syscall counts of every strace run: one row per run and syscall.

    Read back from each run's attachments (strace.txt, counters.json), so a
    stored study gives the same table. Columns: rep, backend, run_id, then
    compare_syscalls' columns.
    """
    out = []
    strace_runs = result.frame[result.frame["tracer"] == "strace"].drop_duplicates("run_id")
    for r in strace_runs.itertuples():
        d = result.root / r.run_id / "attachments"
        traced = parse_strace_summary((d / "strace.txt").read_text())
        counters = load_counters(d / "counters.json")["counters"] if (d / "counters.json").is_file() else None
        t = compare_syscalls(traced, counters)
        t.insert(0, "run_id", r.run_id)
        t.insert(0, "backend", r.backend)
        t.insert(0, "rep", r.rep)
        out.append(t)
    cols = ["rep", "backend", "run_id", *_CMP_COLUMNS]
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=cols)


def syscall_summary(table: pd.DataFrame, backends: Sequence[str] | None = None) -> pd.DataFrame:
    """Per backend and syscall, summed over the repetitions: strace, rxlab, rel_diff; the worst run's.

    `within_1pct` answers the issue's claim per compared row (NaN where not
    compared); `judged` says whether the row is one of the data path's read
    and write syscalls that rxlab issued.
    """
    if table.empty:
        return pd.DataFrame(columns=["backend", "syscall", "strace", "rxlab", "rel_diff",
                                     "worst_run_rel_diff", "runs", "judged", "within_1pct"])
    rows = []
    for (b, sc), g in table.groupby(["backend", "syscall"], sort=False):
        s = int(g["strace"].sum())
        has = g["rxlab"].notna().all()
        o = float(g["rxlab"].sum()) if has else np.nan
        rel = (o - s) / s if has and s else np.nan
        worst = g["rel_diff"].iloc[int(np.nanargmax(g["rel_diff"].abs().to_numpy()))] \
            if g["rel_diff"].notna().any() else np.nan
        judged = bool(g["compared"].all())
        w = agreement(g)
        rows.append({"backend": b, "syscall": sc, "strace": s, "rxlab": o, "rel_diff": rel,
                     "worst_run_rel_diff": worst, "runs": len(g), "judged": judged,
                     "within_1pct": w["within"] if judged else np.nan})
    t = pd.DataFrame(rows)
    order = list(backends) if backends is not None else list(dict.fromkeys(table["backend"]))
    t["_b"] = t["backend"].map({b: i for i, b in enumerate(order)})
    t["_s"] = t["syscall"].map(lambda n: DATA_SYSCALLS.index(n) if n in DATA_SYSCALLS else len(DATA_SYSCALLS))
    return t.sort_values(["_b", "_s", "syscall"]).drop(columns=["_b", "_s"]).reset_index(drop=True)


def published_rows() -> pd.DataFrame:
    """The report's Figure 5 numbers (lab_throughput): setup, engine, tracing, value, qualifier (MB/s)."""
    p = published.load("lab_throughput")
    p = p[p["table"] == "Figure 5"]
    return p[["table", "workload", "engine", "tracing", "value", "value_max", "unit", "qualifier"]] \
        .reset_index(drop=True)


def published_beside(tp: pd.DataFrame) -> pd.DataFrame:
    """The local median MB/s of posix and libaio without tracing and under strace, beside the report's."""
    pub = published_rows()
    rows = []
    for p in pub.itertuples():
        engines = str(p.engine).split("|")
        hedge = f"{p.qualifier} " if isinstance(p.qualifier, str) and p.qualifier != "nan" else ""
        tracer = {"none": "none", "strace": "strace", "perf": "perf"}.get(str(p.tracing), str(p.tracing))
        for test in tp["test"].unique():
            loc = tp[(tp["test"] == test) & tp["backend"].isin(engines) & (tp["tracer"] == tracer)]
            for r in loc.itertuples():
                rows.append({"test": test, "backend": r.backend, "tracer": tracer,
                             "local_mb_per_s": r.mb_per_s,
                             "published_mb_per_s": f"{hedge}{p.value:g}",
                             "published_workload": "not stated"})
    return pd.DataFrame(rows, columns=["test", "backend", "tracer", "local_mb_per_s", "published_mb_per_s",
                                       "published_workload"])


# --------------------------------------------------------------------------- figures

TRACER_STYLE = {"none": {"hatch": "", "alpha": 1.0, "marker": "o"},
                "counters": {"hatch": "..", "alpha": 0.85, "marker": "o"},
                "perf": {"hatch": "//", "alpha": 0.7, "marker": "s"},
                "strace": {"hatch": "xx", "alpha": 0.45, "marker": "X"}}


def _grouped_bars(ax, t: pd.DataFrame, value: str, backends, tracers, *, lo: str | None = None,
                  hi: str | None = None):
    """Bars per backend (colour) and tracer (hatch), with a min..max line when lo/hi are given."""
    width = 0.8 / max(len(tracers), 1)
    for j, tr in enumerate(tracers):
        for i, b in enumerate(backends):
            r = t[(t["backend"] == b) & (t["tracer"] == tr)]
            if r.empty:
                continue
            x = i - 0.4 + width * (j + 0.5)
            st = TRACER_STYLE[tr]
            ax.bar(x, float(r[value].iloc[0]), width * 0.92, color=figures.backend_color(b),
                   alpha=st["alpha"], hatch=st["hatch"], edgecolor="#333333", lw=0.4)
            if lo and hi:
                ax.plot([x, x], [float(r[lo].iloc[0]), float(r[hi].iloc[0])], color="#222222", lw=0.7)
    ax.set_xticks(range(len(backends)), backends)


def _tracer_handles(tracers, kind: str = "bar"):

    if kind == "bar":
        return [Patch(facecolor="#bbbbbb", edgecolor="#333333", hatch=TRACER_STYLE[t]["hatch"],
                      alpha=TRACER_STYLE[t]["alpha"], label=t) for t in tracers]
    return [Line2D([], [], ls="", marker=TRACER_STYLE[t]["marker"], color="#555555", label=t)
            for t in tracers]


def fig_throughput(result: StudyResult, tp: pd.DataFrame | None = None):
    """db_bench's MB/s per backend and tracer, one panel per workload; the report's Figure 5 numbers beside.

    The report does not say which workload its Figure 5 ran, so its numbers
    get a panel of their own (posix and libaio together, as its text gives them).
    """
    tp = throughput_table(result) if tp is None else tp
    tests = [w for w in WORKLOADS if w in set(tp["test"])]
    pub = published_rows()
    ratios = [1.0] * len(tests) + [0.45]
    fig, axes = figures.figure(width="page", aspect=0.34, ncols=len(tests) + 1, squeeze=False,
                               gridspec_kw={"width_ratios": ratios})
    for ax, test in zip(axes[0][:-1], tests, strict=True):
        t = tp[tp["test"] == test].assign(lo=lambda d: d["mb_per_s"] * d["qps_min"] / d["qps"],
                                          hi=lambda d: d["mb_per_s"] * d["qps_max"] / d["qps"])
        _grouped_bars(ax, t, "mb_per_s", result.backends, result.tracers, lo="lo", hi="hi")
        ax.set_title(f"{test}, here")
    axes[0][0].set_ylabel("db_bench MB/s")
    fig.legend(handles=_tracer_handles(result.tracers), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncols=len(result.tracers), fontsize=6)
    ax = axes[0][-1]
    for i, p in enumerate(pub.itertuples()):
        st = TRACER_STYLE.get(str(p.tracing), TRACER_STYLE["none"])
        ax.bar(i, p.value, 0.7, color=figures.BACKEND_COLORS["published"], alpha=st["alpha"] * 0.8,
               hatch=st["hatch"], edgecolor="#333333", lw=0.4)
        ax.annotate(f"{p.qualifier} {p.value:g}", (i, p.value), xytext=(0, 2), textcoords="offset points",
                    ha="center", fontsize=6)
    ax.set_xticks(range(len(pub)), [str(t) for t in pub["tracing"]])
    ax.set_title("the report, posix|libaio\n(workload not stated)", fontsize=7)
    return fig


def fig_overhead(result: StudyResult, ot: pd.DataFrame | None = None):
    """Throughput under each tracer relative to untraced (log scale), per workload and backend.

    Markers: medians over the repetitions (lines: min..max). The report's
    Figure 5 ratio for posix and libaio (around 10 MB/s under strace against
    more than 80 untraced: less than 1/8 kept) is the dotted line.
    """
    ot = overhead_table(result) if ot is None else ot
    tests = [w for w in WORKLOADS if w in set(ot["test"])]
    tracers = [t for t in result.tracers if t != "none"]
    fig, axes = figures.figure(width="page", aspect=0.34, ncols=max(len(tests), 1), squeeze=False,
                               sharey=True)
    pub = published_rows().set_index("tracing")["value"]
    width = 0.8 / max(len(tracers), 1)
    for ax, test in zip(axes[0], tests, strict=True):
        o = ot[ot["test"] == test]
        for j, tr in enumerate(tracers):
            for i, b in enumerate(result.backends):
                r = o[(o["backend"] == b) & (o["tracer"] == tr)]
                if r.empty:
                    continue
                x = i - 0.4 + width * (j + 0.5)
                ax.plot([x, x], [r["rel_min"].iloc[0], r["rel_max"].iloc[0]], color="#222222", lw=0.7)
                ax.plot(x, r["rel"].iloc[0], TRACER_STYLE[tr]["marker"], color=figures.backend_color(b), ms=5,
                        mec="#222222", mew=0.4)
        ax.set_yscale("log")

        ax.yaxis.set_major_locator(FixedLocator([0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.axhline(1.0, color="#555555", lw=0.6)
        if {"none", "strace"} <= set(pub.index):
            r = float(pub["strace"]) / float(pub["none"])
            ax.axhline(r, color=figures.BACKEND_COLORS["published"], ls=":", lw=0.8)
            ax.annotate(f"report, posix|libaio, strace: ~{pub['strace']:g} of >{pub['none']:g} MB/s",
                        (len(result.backends) - 0.5, r), xytext=(-2, -2), textcoords="offset points",
                        ha="right", va="top", fontsize=5.5)
        ax.set_xticks(range(len(result.backends)), result.backends)
        ax.set_xlim(-0.5, len(result.backends) - 0.5)
        ax.set_title(test)
    axes[0][0].set_ylabel("throughput / untraced")
    if tracers:
        axes[0][-1].legend(handles=_tracer_handles(tracers, "marker"), loc="upper left",
                           bbox_to_anchor=(1.0, 1.0), fontsize=6)  # beside the axes: clear of the report's line
    return fig


def fig_syscalls(summary: pd.DataFrame):
    """Left: calls per data-path syscall, strace and rxlab, per backend. Right: rxlab / strace - 1 (%)."""
    shown = (summary["strace"] >= 100) | (summary["rxlab"] > 0)  # not the loader's two preads
    s = summary[summary["syscall"].isin(DATA_SYSCALLS) & shown]
    fig, (a1, a2) = figures.figure(width="page", aspect=0.36, ncols=2)
    x = np.arange(len(s))
    colors = [figures.backend_color(b) for b in s["backend"]]
    a1.bar(x - 0.2, s["strace"], 0.4, color=colors, alpha=0.45, hatch="xx", edgecolor="#333333", lw=0.4)
    a1.bar(x + 0.2, s["rxlab"].fillna(0), 0.4, color=colors, edgecolor="#333333", lw=0.4)
    a1.set_xticks(x, [f"{r.backend} {r.syscall}" for r in s.itertuples()], rotation=45, ha="right",
                  fontsize=5.5)
    a1.set_ylabel("calls (all repetitions)")

    a1.legend(handles=[Patch(facecolor="#bbbbbb", alpha=0.45, hatch="xx", edgecolor="#333333",
                             label="strace -c -f"),
                       Patch(facecolor="#bbbbbb", edgecolor="#333333", label="rxlab counters")], fontsize=6)
    a1.set_title("data-path syscalls (default: strace only)")
    j = s[s["judged"]]
    xj = np.arange(len(j))
    a2.axhspan(-100 * TOLERANCE, 100 * TOLERANCE, color="#dddddd", lw=0, label="within 1%")
    a2.axhline(0, color="#555555", lw=0.6)
    a2.plot(xj, 100 * j["rel_diff"].astype(float), "o", color="#222222", label="all repetitions")
    a2.plot(xj, 100 * j["worst_run_rel_diff"].astype(float), "x", color="#d55e00", label="worst run")
    a2.set_xticks(xj, [f"{r.backend} {r.syscall}" for r in j.itertuples()], rotation=45, ha="right",
                  fontsize=5.5)
    worst = float(np.nanmax(np.abs(100 * j["worst_run_rel_diff"].astype(float)))) if len(j) else 0.0
    lim = max(2 * 100 * TOLERANCE, 1.3 * worst)
    a2.set_ylim(-lim, lim)
    a2.set_ylabel("rxlab / strace - 1 (%)")
    a2.set_title("agreement of the syscalls rxlab issued")
    a2.legend(fontsize=6, loc="lower right")
    return fig


# --------------------------------------------------------------------------- findings

def findings(result: StudyResult, tp: pd.DataFrame, ot: pd.DataFrame, summary: pd.DataFrame) -> str:
    """The study's results in a few Markdown bullets, with their numbers."""
    lines = []
    for test in [w for w in WORKLOADS if w in set(ot["test"])]:
        o = ot[ot["test"] == test]
        parts = []
        for tr in ("strace", "perf", "counters"):
            g = o[o["tracer"] == tr]
            if len(g):
                parts.append(f"{tr} keeps {_rng(100 * g['rel'], '.0f')}% of the untraced throughput "
                             f"({', '.join(f'{r.backend} {100 * r.rel:.0f}%' for r in g.itertuples())})")
        if parts:
            lines.append(f"- **{test}**: " + "; ".join(parts) + ".")
        spread = []
        for tr in ("strace", "perf", "counters"):
            g = o[o["tracer"] == tr]
            if len(g) and int(g["n"].min()) > 1:
                slower = int((g["rel_max"] < 1).sum())
                faster = int((g["rel_min"] > 1).sum())
                spread.append(f"{tr}: slower than untraced in every repetition on {slower} of {len(g)} "
                              "backends"
                              + (f", faster on {faster}" if faster else "")
                              + (f", within the run-to-run spread on {len(g) - slower - faster}"
                                 if len(g) - slower - faster else ""))
        if spread:
            lines.append(f"  - {test}, repetition by repetition: " + "; ".join(spread) + ".")
    pub = published_rows().set_index("tracing")
    if {"none", "strace"} <= set(pub.index):
        s = ot[(ot["tracer"] == "strace") & ot["backend"].isin(["posix", "libaio"])]
        if len(s):
            lines.append(f"- The report: posix and libaio {pub.loc['none', 'qualifier']} "
                         f"{pub.loc['none', 'value']:g} MB/s untraced, {pub.loc['strace', 'qualifier']} "
                         f"{pub.loc['strace', 'value']:g} MB/s under strace (at most "
                         f"{pub.loc['strace', 'value'] / pub.loc['none', 'value']:.0%} kept, "
                         "workload not stated). "
                         f"Here posix and libaio keep {_rng(100 * s['rel'], '.0f')}% under strace "
                         f"(a slowdown of {_rng(s['slowdown'], '.1f')}x).")
    judged = summary[summary["judged"]]
    if len(judged):
        worst = judged.loc[judged["worst_run_rel_diff"].abs().idxmax()]
        ok = bool(judged["within_1pct"].all())
        lines.append(f"- Syscall counts: {len(judged)} data-path read/write syscall counts "
                     "(backend x syscall, "
                     f"{int(judged['runs'].max())} run(s) each) compared; "
                     f"{'all agree' if ok else 'NOT all agree'} within {TOLERANCE:.0%} between strace and "
                     f"rxlab's counters; the largest difference of a single run is "
                     f"{100 * worst['worst_run_rel_diff']:+.3f}% "
                     f"({worst['backend']} {worst['syscall']}: strace {int(worst['strace']):,}, rxlab "
                     f"{int(worst['rxlab']):,} over all runs).")
        differ = summary["rxlab"].notna() & (summary["strace"] != summary["rxlab"])
        other = summary[~summary["judged"] & differ]
        if len(other):
            lines.append("- Not judged (outside rxlab's data path, or not issued by it): "
                         + "; ".join(f"{r.backend} {r.syscall} strace {int(r.strace):,} vs rxlab "
                                     f"{int(r.rxlab):,}" for r in other.itertuples()) + ".")
    return "\n".join(lines)


def _rng(v, fmt: str) -> str:
    v = pd.to_numeric(pd.Series(v)).dropna()
    if v.empty:
        return "n/a"
    lo, hi = v.min(), v.max()
    return f"{lo:{fmt}}" if f"{lo:{fmt}}" == f"{hi:{fmt}}" else f"{lo:{fmt}} to {hi:{fmt}}"
