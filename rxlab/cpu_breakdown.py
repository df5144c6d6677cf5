"""Where RocksDB's CPU goes in a point query: the flamegraph table of the gcc/clang post, measured here.

The seed (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang", section *Flamegraphs*) summarises flamegraphs of readrandom,
readrandom2 and readrandom3 (the IO-efficiency seed's tests, blog-2025-10-23)
as the percentage of samples in nine parts of the call stack: libc+kernel,
checksum, IndexBlockIter::SeekImpl, DataBlockIter::SeekImpl, the LRU block
cache, bloom filters, BinarySearchIndexReader::NewIterator, file picking and
the rest. This module produces that table from fresh samples:

* Sampling: `Profiler` runs `perf record -e cpu-clock` (a software event: the
  hardware counters of these VMs do not exist, see `perf_support`) on this
  process (`-p <pid>`), started with its events disabled and switched on and
  off through perf's control FIFO exactly around one step, so only the read
  step is sampled. The driver's C++ threads are created inside the step and
  inherit the events.
* Stacks: `perf_script` + `parse_script` + `fold` turn perf.data into folded
  stacks (one line per distinct stack, root first, ``;``-separated, then the
  sample count), written by this module, not by FlameGraph's scripts.
  `folded_stacks(perf_data)` is that whole path in one call, for any notebook.
* Categories: `RULES`, an explicit table of symbol patterns, and `categorize`
  (the precedence is documented there). `breakdown` gives the seed's table.
* Cross-check: each profiled step is followed by the same step unprofiled at
  PerfContext level 5 (timers and CPU timers), and `crosscheck` puts the
  sampled CPU per query of a part of the stack beside the PerfContext timer
  that RocksDB keeps for the same code (get_cpu_nanos, block_read_cpu_time,
  block_checksum_time, block_seek_nanos) and process CPU from getrusage.

The DB is built by the IO-efficiency sequence (driver.SEQUENCES["io_efficiency"]
through `ioeff.sequence`) with ioeff's scale presets, so the three tests read
the trees the first seed describes: readrandom a tree of several levels with
bloom filters, readrandom2 one level after a full compaction, readrandom3 the
same without bloom filters.

What the local build gives (checked by `symbol_report` and the tests): the
RocksDB library is a Release build with its full symbol table (not stripped)
and no DWARF debug information, compiled with frame pointers
(-fno-omit-frame-pointer, RocksDB's CMake default outside Debug) but with
-momit-leaf-frame-pointer, and libc and rxlab's extension have no frame
pointers. Frame-pointer stacks therefore lose the caller of every leaf
function and stop at the first libc or extension frame (the kernel's read
path then has no RocksDB caller); DWARF unwinding (`--call-graph dwarf`) gives
whole stacks and is the default. Without debug information there are no
inlined frames: code inlined into a caller counts as the caller's.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import re
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from . import figures, ioeff, metrics, published, store
from . import params as checks

__all__ = [
    "CATEGORIES",
    "CROSSCHECKS",
    "KERNEL_CATEGORIES",
    "KERNEL_RULES",
    "PUBLISHED",
    "RULES",
    "SEED_FILE",
    "SEED_TESTS",
    "CpuResult",
    "Params",
    "PerfSupport",
    "Profiler",
    "Rule",
    "Sample",
    "breakdown",
    "breakdown_table",
    "categorize",
    "categorize_kernel",
    "crosscheck",
    "fig_breakdown",
    "fig_crosscheck",
    "fig_kernel_per_query",
    "fig_per_query",
    "findings",
    "fold",
    "folded_stacks",
    "kernel_breakdown",
    "kernel_findings",
    "kernel_per_query",
    "kernel_rule_table",
    "load_study",
    "parse_script",
    "per_query",
    "perf_script",
    "perf_support",
    "plan",
    "pooled_folded",
    "read_folded",
    "rule_table",
    "run_study",
    "sample_summary",
    "symbol_report",
    "timer_cost",
    "top_symbols",
    "write_folded",
]

SEED_FILE = "blog-2025-12-01-rocksdb-gcc-vs-clang-and-more.txt"
IOEFF_SEED = ioeff.SEED_FILE
PUBLISHED = (f"{SEED_FILE}: gccclang_flamegraph (Flamegraphs: percentage of samples)",
             f"{IOEFF_SEED}: readrandom, readrandom2, readrandom3 (the tests)")
SEED_TESTS = ioeff.SEED_TESTS            # readrandom, readrandom2, readrandom3
CATEGORIES = ("libc+k", "checksm", "IBI:Sk", "DBI:Sk", "LRU", "bloom", "BSI", "File", "other")
OUTSIDE = "outside"                      # samples of threads that did not run the reads
READER_ROOT = "reader"                   # root frame of the folded stacks of the reading threads
RUN_PREFIX = "cpu-"
STUDY_TAG = "cpu_breakdown"
PROFILE, TIMERS = "profile", "timers"    # the two kinds of read step
TIMER_PERF_LEVEL = 5                     # kEnableTimeAndCPUTimeExceptForMutex: timers and CPU timers
PROFILE_PERF_LEVEL = 1                   # kDisable, db_bench's default: no timer cost in the profile
REPEATS = {"smoke": 1, "small": 2, "full": 3}
SMOKE_DURATION = 0.5                     # seconds per read step at smoke (ioeff's is 1 s): CI's budget
PERF = "perf"


# --------------------------------------------------------------------------- perf on this machine

@dataclass(frozen=True)
class PerfSupport:
    """What perf can do here: the binary, cpu-clock sampling, hardware counters, kernel symbols."""

    path: str | None
    version: str
    cpu_clock: bool
    hardware: bool
    hardware_detail: str
    paranoid: int | None
    kptr_restrict: int | None
    root: bool

    @property
    def kernel_sampled(self) -> bool:
        """Kernel stacks are sampled (root, or perf_event_paranoid below 2)."""
        return self.root or (self.paranoid is not None and self.paranoid < 2)

    def table(self) -> pd.DataFrame:
        rows = [("perf", f"{self.path} ({self.version})" if self.path else "not installed"),
                ("cpu-clock (software event)", "works" if self.cpu_clock else "does not work"),
                ("cycles, instructions (hardware)", "available" if self.hardware else
                 f"not available: {self.hardware_detail}"),
                ("kernel.perf_event_paranoid", str(self.paranoid)),
                ("kernel.kptr_restrict", str(self.kptr_restrict)),
                ("kernel stacks sampled", "yes" if self.kernel_sampled else "no (not root, paranoid >= 2)")]
        return pd.DataFrame(rows, columns=["item", "here"]).set_index("item")


def _run(cmd: list, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """A command's output as text; the caller judges the exit status."""
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout, **kw)


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _perf_stat(perf: str, event: str) -> tuple[bool, str]:
    """Count `event` over `true`; (counted, perf's word for it)."""
    try:
        p = _run([perf, "stat", "-x,", "-e", event, "--", "true"], timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    text = (p.stderr or "").strip()
    for line in text.splitlines():
        if event in line:
            value = line.split(",")[0]
            if value.startswith("<"):
                return False, value.strip("<>")
            return p.returncode == 0, "counted"
    return False, text.splitlines()[-1] if text else f"perf stat exited {p.returncode}"


@lru_cache(maxsize=1)
def perf_support() -> PerfSupport:
    """Probe perf once per process (never raises: what does not work is reported)."""
    perf = shutil.which(PERF)
    paranoid = _read_int("/proc/sys/kernel/perf_event_paranoid")
    kptr = _read_int("/proc/sys/kernel/kptr_restrict")
    if perf is None:
        return PerfSupport(None, "", False, False, "perf is not installed", paranoid, kptr, os.geteuid() == 0)
    try:
        version = _run([perf, "--version"], timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        version = "?"
    cpu, _ = _perf_stat(perf, "cpu-clock")
    hw, detail = _perf_stat(perf, "cycles")
    return PerfSupport(perf, version, cpu, hw, detail, paranoid, kptr, os.geteuid() == 0)


def symbol_report(library: str | os.PathLike | None = None) -> pd.DataFrame:
    """What the RocksDB library offers a profiler: symbols, debug info, frame pointers.

    Frame pointers are judged from the code: the share of function entries
    (symbols of type T/t in the symbol table) that start with `push %rbp; mov
    %rsp,%rbp` among those in a sample of 2000.
    """
    lib = Path(library) if library is not None else _rocksdb_library()
    rows = [("library", str(lib))]
    sections = _run(["readelf", "-S", "-W", str(lib)]).stdout
    rows.append(("full symbol table (.symtab)", "yes" if ".symtab" in sections else "no (stripped)"))
    rows.append(("DWARF debug info (.debug_info)", "yes" if ".debug_info" in sections else "no"))
    rows.append(("unwind tables (.eh_frame)", "yes" if ".eh_frame" in sections else "no"))
    dyn = _run(["nm", "-D", "--defined-only", str(lib)]).stdout
    rows.append(("exported symbols (nm -D)", f"{len(dyn.splitlines()):,}"))
    rows.append(("functions with a frame pointer prologue", f"{_frame_pointer_share(lib):.0%}"))
    return pd.DataFrame(rows, columns=["item", "here"]).set_index("item")


def _rocksdb_library() -> Path:
    from .builds import active_build

    libs = sorted((active_build() / "lib").glob("librocksdb.so.*"), key=lambda p: len(p.name))
    if not libs:
        raise FileNotFoundError(f"no librocksdb.so.* in {active_build() / 'lib'}")
    return libs[-1]


def _frame_pointer_share(lib: Path, sample: int = 2000) -> float:
    out = _run(["nm", "--defined-only", str(lib)]).stdout
    addrs = sorted({int(parts[0], 16) for parts in (ln.split(" ", 2) for ln in out.splitlines())
                    if len(parts) == 3 and parts[1] in ("T", "t")})
    if not addrs:
        return float("nan")
    # LOAD segments: virtual address -> file offset
    ph = _run(["readelf", "-l", "-W", str(lib)]).stdout
    loads = [(int(m[1], 16), int(m[2], 16), int(m[3], 16))
             for m in re.finditer(r"LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", ph)]
    data = lib.read_bytes()
    pick = addrs[:: max(1, len(addrs) // sample)][:sample]
    prologue, endbr = b"\x55\x48\x89\xe5", b"\xf3\x0f\x1e\xfa"   # push %rbp; mov %rsp,%rbp / endbr64
    hits = n = 0
    for a in pick:
        seg = next(((off, va) for off, va, size in loads if va <= a < va + size), None)
        if seg is None:
            continue
        o = a - seg[1] + seg[0]
        code = data[o:o + 8]
        n += 1
        hits += code[:4] == prologue or (code[:4] == endbr and code[4:8] == prologue)
    return hits / n if n else float("nan")


# --------------------------------------------------------------------------- recording

class Profiler:
    """`perf record -e cpu-clock -g` on a running process, on only while the block runs.

        with Profiler(os.getpid(), workdir) as prof:
            session.run_step(step)
        folded = folded_stacks(prof.data)

    perf starts with its events disabled (`-D -1`) and is switched on and off
    through its control FIFO; each switch waits for perf's acknowledgement, so
    the samples cover the block and nothing before or after. call_graph:
    "dwarf" (copies `dwarf_stack` bytes of each thread's stack: whole stacks
    without frame pointers; perf's default of 8 KiB reaches the thread's start
    in only about 15% of RocksDB's read stacks here, 16 KiB in all) or "fp"
    (frame pointers: cheap, truncated here).
    """

    def __init__(self, pid: int, directory: str | os.PathLike, *, call_graph: str = "dwarf",
                 frequency: int = 999, dwarf_stack: int = 16384, timeout: float = 30.0):
        support = perf_support()
        if support.path is None:
            raise RuntimeError("perf is not installed (.ci/deps.sh installs it)")
        if not support.cpu_clock:
            raise RuntimeError("perf cannot count the cpu-clock software event here")
        if call_graph not in ("dwarf", "fp"):
            raise ValueError(f"call_graph={call_graph!r}: allowed are dwarf, fp")
        self.pid, self.call_graph, self.frequency = int(pid), call_graph, int(frequency)
        self.dir = Path(directory)
        self.data = self.dir / "perf.data"
        self.timeout = timeout
        self._cg = f"dwarf,{int(dwarf_stack)}" if call_graph == "dwarf" else "fp"
        self._proc: subprocess.Popen | None = None
        self._ctl = self._ack = -1
        self._log = self.dir / "perf-record.log"

    def command(self, ctl: Path, ack: Path) -> list[str]:
        return [perf_support().path, "record", "-e", "cpu-clock", "-F", str(self.frequency), "--call-graph",
                self._cg, "-p", str(self.pid), "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-N", "-B",
                "-o", str(self.data)]

    def start(self) -> Profiler:
        self.dir.mkdir(parents=True, exist_ok=True)
        ctl, ack = self.dir / "perf.ctl", self.dir / "perf.ack"
        for f in (ctl, ack):
            f.unlink(missing_ok=True)
            os.mkfifo(f)
        self._ack = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        with open(self._log, "w") as log:
            self._proc = subprocess.Popen(self.command(ctl, ack), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while True:  # perf opens the control FIFO for reading when it is ready
            try:
                self._ctl = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._abort()
                raise RuntimeError(f"perf record did not start: {self._log_tail()}")
            time.sleep(0.005)
        self._send("enable")
        return self

    def _send(self, cmd: str) -> None:
        os.write(self._ctl, f"{cmd}\n".encode())
        got, deadline = b"", time.monotonic() + self.timeout
        while b"ack" not in got:
            left = deadline - time.monotonic()
            if left <= 0 or (self._proc is not None and self._proc.poll() is not None):
                self._abort()
                raise RuntimeError(f"perf record did not acknowledge {cmd!r}: {self._log_tail()}")
            r, _, _ = select.select([self._ack], [], [], min(left, 0.2))
            if r:
                with contextlib.suppress(BlockingIOError):
                    got += os.read(self._ack, 64)

    def stop(self) -> Path:
        """Disable the events, end perf (SIGINT) and check that it wrote its data."""
        try:
            self._send("disable")
        finally:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=self.timeout * 4) if proc is not None else 0
            except subprocess.TimeoutExpired:
                self._abort()
                raise RuntimeError("perf record did not exit after SIGINT") from None
            self._close()
        if rc not in (0, -signal.SIGINT) or not self.data.is_file():
            raise RuntimeError(f"perf record failed (exit {rc}): {self._log_tail()}")
        return self.data

    def _abort(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close()

    def _close(self) -> None:
        for fd in (self._ctl, self._ack):
            if fd >= 0:
                os.close(fd)
        self._ctl = self._ack = -1

    def _log_tail(self, n: int = 400) -> str:
        try:
            return self._log.read_text(errors="replace")[-n:].strip().replace("\n", " | ")
        except OSError:
            return ""

    def __enter__(self) -> Profiler:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.stop()
        else:
            self._abort()
        return False


# --------------------------------------------------------------------------- stacks

@dataclass(frozen=True)
class Sample:
    """One perf sample: thread name and id, period (ns of cpu-clock), frames leaf first (annotated)."""

    comm: str
    tid: int
    period: int
    frames: tuple[str, ...]


KERNEL_TAG, SYSLIB_TAG = "_[k]", "_[libc]"
# System libraries that the seed's libc+k counts with the kernel: libc, the dynamic
# linker (__tls_get_addr), libm, libstdc++ and libgcc (operator new, unwinding), the vDSO.
_SYSLIB = re.compile(r"(^\[vdso\]$|/(libc|libm|libpthread|librt|libdl|ld-linux[^/]*|libstdc\+\+|libgcc_s)"
                     r"(\.so|-)[^/]*$)")
_ROCKSDB_DSO = re.compile(r"/librocksdb\.so")
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<tid>\d+)\s+(?P<period>\d+)\s*:?\s*$")
_THREAD_ROOTS = ("start_thread", "clone3", "clone", "_start", "__libc_start_main")


def frame_name(sym: str, dso: str) -> str:
    """The frame as folded stacks spell it: kernel frames end in _[k], system-library frames in
    _[libc] (FlameGraph's convention for the kernel), unknown symbols become [<library file>]."""
    dso = dso.strip()
    if sym in ("", "[unknown]"):
        base = Path(dso).name if dso and dso != "[unknown]" else "unknown"
        sym = f"[{base}]"
    sym = sym.replace(";", ":")
    if dso.startswith("[") and dso not in ("[unknown]", "[vdso]"):
        return sym + KERNEL_TAG
    if _SYSLIB.search(dso):
        return sym + SYSLIB_TAG
    return sym


def perf_script(data: str | os.PathLike, timeout: float = 600) -> str:
    """`perf script` of a perf.data, the fields this module parses (no inline expansion: it is slow
    and the RocksDB build has no debug information to expand from)."""
    perf = perf_support().path
    if perf is None:
        raise RuntimeError("perf is not installed (.ci/deps.sh installs it)")
    p = _run([perf, "script", "-i", str(data), "-F", "comm,tid,period,ip,sym,dso", "--no-inline"],
             timeout=timeout, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"perf script failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return p.stdout


def parse_script(text: str) -> list[Sample]:
    """Samples from `perf script -F comm,tid,period,ip,sym,dso` output (blank-line separated)."""
    out: list[Sample] = []
    head: re.Match | None = None
    frames: list[str] = []

    def flush():
        if head is not None:
            out.append(Sample(head["comm"], int(head["tid"]), int(head["period"]), tuple(frames)))

    for line in text.splitlines():
        if not line.strip():
            flush()
            head, frames = None, []
        elif not line[0].isspace():
            flush()
            head, frames = _HEADER.match(line), []
        elif head is not None:
            parts = line.strip().split(None, 1)
            rest = parts[1] if len(parts) > 1 else ""
            sym, sep, dso = rest.rpartition(" (")
            if not sep:
                sym, dso = rest, ""
            frames.append(frame_name(sym, dso.removesuffix(")")))
    flush()
    return out


def is_system_frame(frame: str) -> bool:
    return frame.endswith(KERNEL_TAG) or frame.endswith(SYSLIB_TAG)


def reader_threads(samples: Iterable[Sample]) -> set[int]:
    """Threads that ran RocksDB code in the step (a rocksdb:: frame), RocksDB's own background
    threads (named rocksdb:*) excepted: the threads that did the reads."""
    return {s.tid for s in samples
            if not s.comm.startswith("rocksdb:") and any(f.startswith("rocksdb::") for f in s.frames)}


def fold(samples: Iterable[Sample], readers: set[int] | None = None) -> dict[str, int]:
    """Folded stacks: "root;frame;...;leaf" -> samples. The root frame is "reader" for the threads
    that did the reads (`reader_threads`) and the thread name (comm) for any other thread."""
    samples = list(samples)
    readers = reader_threads(samples) if readers is None else readers
    c: Counter = Counter()
    for s in samples:
        root = READER_ROOT if s.tid in readers else s.comm.replace(";", ":").replace(" ", "_")
        c[";".join((root, *reversed(s.frames)))] += 1
    return dict(c)


def folded_stacks(data: str | os.PathLike) -> dict[str, int]:
    """perf.data -> folded stacks (perf script, parse, fold): the function other notebooks reuse."""
    return fold(parse_script(perf_script(data)))


def write_folded(folded: Mapping[str, int], path: str | os.PathLike) -> Path:
    """One "stack count" line per stack, most samples first (FlameGraph's input format)."""
    p = Path(path)
    p.write_text("".join(f"{k} {v}\n" for k, v in sorted(folded.items(), key=lambda kv: (-kv[1], kv[0]))))
    return p


def read_folded(path: str | os.PathLike) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            stack, _, n = line.rpartition(" ")
            out[stack] = out.get(stack, 0) + int(n)
    return out


def _split(stack: str) -> tuple[str, list[str]]:
    """(root, frames leaf first) of a folded stack."""
    parts = stack.split(";")
    return parts[0], parts[:0:-1]


# --------------------------------------------------------------------------- categories

@dataclass(frozen=True)
class Rule:
    category: str
    pattern: str      # a regular expression searched in the frame's symbol
    covers: str       # what it stands for, in the seed's words where it has them

    @property
    def regex(self) -> re.Pattern:
        return _compiled(self.pattern)


@cache
def _compiled(p: str) -> re.Pattern:
    return re.compile(p)


# The rule table. A sample is assigned by `categorize`: libc+k when its leaf frame is in the
# kernel or a system library; otherwise the category of the innermost frame (closest to the
# leaf) that matches a rule, rules tried in this order for that frame; otherwise "other".
RULES: tuple[Rule, ...] = (
    Rule("checksm", r"VerifyBlockChecksum|ComputeBuiltinChecksum|crc32c|XXH3|XXH64|XXH32|xxhash|Checksum",
         "verify a data block's checksum after the read (crc32c, XXH3)"),
    Rule("IBI:Sk", r"IndexBlockIter::|BlockIter<rocksdb::IndexValue>",
         "IndexBlockIter::SeekImpl and the index block's binary search"),
    Rule("DBI:Sk", r"DataBlockIter::Seek|BlockIter<rocksdb::Slice>::(BinarySeek|FindKeyAfterBinarySeek)",
         "DataBlockIter::SeekImpl (SeekForGetImpl with a hash index)"),
    Rule("LRU", r"lru_cache::|LRUCache|LRUHandle|clock_cache::|ClockCache|HyperClock|ShardedCache|"
                r"CacheWithSecondaryAdapter|BlockBasedTable::(LookupFromCache|PutDataBlockToCache|"
                r"UpdateCache\w*Metrics|GetEntryFromCache)",
         "look up and insert blocks in the block cache (LRU or clock), update its metrics"),
    Rule("bloom", r"FilterBlockReader|FilterKeyMayMatch|KeyMayMatch|PrefixMayMatch|FastLocalBloom|"
                  r"BloomFilter|BloomBits|FilterBitsReader|Ribbon",
         "check bloom filters (FullFilterBlockReader::MayMatch, FastLocalBloomImpl); without a filter, "
         "BlockBasedTable::FullFilterKeyMayMatch still runs to find none"),
    Rule("BSI", r"BinarySearchIndexReader", "BinarySearchIndexReader::NewIterator"),
    Rule("File", r"FilePicker|FindFileInRange|FdWithKeyRange|GetNextFile",
         "FilePicker::GetNextFile, FindFileInRange"),
)
_CATEGORY_MEANING = {
    "libc+k": "time in libc + kernel: leaf frame in the kernel, the vDSO, libc, ld.so, libm, libstdc++, "
              "libgcc",
    "other": "every other sample of the reading threads: DBImpl::Get, Version::Get, TableCache::Get, "
             "BlockBasedTable::Get, block fetching, the file system, the driver loop",
}


def rule_table() -> pd.DataFrame:
    """The rules in precedence order, with libc+k and other, for a notebook."""
    rows = [("libc+k", f"leaf frame tagged {KERNEL_TAG} or {SYSLIB_TAG}", _CATEGORY_MEANING["libc+k"])]
    rows += [(r.category, r.pattern, r.covers) for r in RULES]
    rows.append(("other", "(no rule matched)", _CATEGORY_MEANING["other"]))
    return pd.DataFrame(rows, columns=["category", "symbol pattern", "covers"])


def categorize(frames_leaf_first: Iterable[str], rules: Iterable[Rule] = RULES) -> str:
    """The category of one stack, frames given leaf first (see RULES for the precedence)."""
    frames = list(frames_leaf_first)
    if not frames:
        return "other"
    if is_system_frame(frames[0]):
        return "libc+k"
    rules = tuple(rules)
    for f in frames:
        for r in rules:
            if r.regex.search(f):
                return r.category
    return "other"


def breakdown(folded: Mapping[str, int], rules: Iterable[Rule] = RULES) -> pd.Series:
    """Samples per category of the reading threads (CATEGORIES order), plus `outside`: the
    samples of every other thread (the Python sampler, the main thread, background threads)."""
    out = pd.Series(0, index=[*CATEGORIES, OUTSIDE], dtype="int64")
    rules = tuple(rules)
    for stack, n in folded.items():
        root, frames = _split(stack)
        out[categorize(frames, rules) if root == READER_ROOT else OUTSIDE] += n
    return out


def _inclusive(folded: Mapping[str, int], pattern: str) -> int:
    """Reader samples with a frame matching `pattern` anywhere in the stack."""
    rx = re.compile(pattern)
    return sum(n for stack, n in folded.items()
               if stack.startswith(READER_ROOT + ";") and any(rx.search(f) for f in stack.split(";")[1:]))


def stack_stats(folded: Mapping[str, int]) -> dict:
    """Samples, reader samples, and the share of reader stacks that reach the thread's start."""
    total = sum(folded.values())
    reader = {k: v for k, v in folded.items() if k.startswith(READER_ROOT + ";")}
    n = sum(reader.values())
    whole = sum(v for k, v in reader.items() if k.split(";")[1].removesuffix(SYSLIB_TAG) in _THREAD_ROOTS)
    kernel = sum(v for k, v in reader.items() if k.endswith(KERNEL_TAG))
    rocks = sum(v for k, v in reader.items() if "rocksdb::" in k)
    return {"samples": total, "reader_samples": n, "outside_samples": total - n,
            "whole_stack_pct": 100.0 * whole / n if n else np.nan,
            "kernel_leaf_pct": 100.0 * kernel / n if n else np.nan,
            "with_rocksdb_frame_pct": 100.0 * rocks / n if n else np.nan}


def top_symbols(folded: Mapping[str, int], category: str | None = None, n: int = 15,
                rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """Leaf (self) symbols of the reader samples, optionally of one category, most samples first."""
    rules = tuple(rules)
    c: Counter = Counter()
    total = 0
    for stack, k in folded.items():
        root, frames = _split(stack)
        if root != READER_ROOT:
            continue
        total += k
        if category is None or categorize(frames, rules) == category:
            c[frames[0] if frames else "?"] += k
    rows = [(s, k, 100.0 * k / total if total else np.nan) for s, k in c.most_common(n)]
    return pd.DataFrame(rows, columns=["leaf symbol", "samples", "pct of reader samples"])


# --------------------------------------------------------------------------- inside libc+k

# The seed's libc+k is one bar; on a virtual machine it is the largest part of a read's CPU and
# most of it is not the read path itself. KERNEL_RULES split it. Unlike RULES (innermost match),
# a kernel sample takes the first category in this order that matches any kernel frame of its
# stack: an interrupt that lands inside the read path is the interrupt's time, the doorbell
# write inside the block layer is the doorbell's, the page pinning inside iomap is pinning's,
# ext4 under io_uring's read is ext4's.
# Kernel function names are matched from their start (no tag), kernel frames only.
KERNEL_RULES: tuple[Rule, ...] = (
    Rule("irq", r"^(common_interrupt|asm_common_interrupt|sysvec_|asm_sysvec_|__sysvec_|handle_softirqs|"
                r"__do_softirq|irq_exit|__irq_exit|handle_edge_irq|handle_irq|vring_interrupt|vp_interrupt|"
                r"vm_interrupt)",
         "interrupts and softirqs taken while the reader was on the CPU: the disk's completions "
         "(virtio-blk), timers, wake-ups of other threads"),
    Rule("doorbell", r"^(iowrite16|iowrite32|vp_notify|vm_notify|virtqueue_notify|virtqueue_kick)",
         "the virtio doorbell: the register write that tells the host a request is queued; in a VM it "
         "exits to the hypervisor, and that time is charged to the reader"),
    Rule("switch", r"^(finish_task_switch|__schedule|schedule$|schedule_timeout|io_schedule|__switch_to|"
                   r"prepare_task_switch|context_switch|psi_|pick_next|put_prev|dequeue_|enqueue_|"
                   r"update_curr|__update_load|update_load|set_next_entity)",
         "context switches: the reader giving up the CPU for its read and being switched back in "
         "(interrupts are re-enabled at the end of the switch, so samples held back while they were off "
         "land there)"),
    Rule("faults", r"^(asm_exc_page_fault|exc_page_fault|do_user_addr_fault|handle_mm_fault|"
                   r"__handle_mm_fault|do_anonymous_page|do_fault$|clear_page)",
         "page faults of the reader (first touch of new heap or buffer pages)"),
    Rule("gup", r"^(gup_|__gup|pin_user_pages|get_user_pages|internal_get_user_pages|bio_iov_iter_get_pages|"
                r"__bio_iov_iter_get_pages|iov_iter_extract_pages|iov_iter_get_pages|unpin_user|"
                r"bio_release_pages|try_grab)",
         "pinning the user buffer for O_DIRECT and releasing it (io_uring fixed buffers skip it)"),
    Rule("block", r"^(blk_|__blk|bio_|__bio|submit_bio|dd_|__dd|virtio_queue_rq|virtblk_|virtqueue_add|"
                  r"virtqueue_get_buf|detach_buf|__sg_|sg_|mempool_|rq_qos|__rq_qos|wbt_|elv_|kyber_|bfq_)",
         "the block layer, the I/O scheduler and the virtio-blk driver: request set-up, scatter lists, "
         "completion"),
    Rule("fs", r"^(ext4_|iomap_|__iomap|vfs_|ksys_|filemap_|__filemap|file_|touch_atime|atime_|fdget|__fget|"
               r"fget|fput|rw_verify_area|security_file|generic_file|kiocb_|xas_)",
         "ext4, iomap's direct-IO path and the VFS (file lookup, checks, atime)"),
    Rule("async", r"^(io_uring|__io_uring|io_submit_sqes|io_issue_sqe|io_read|io_rw|io_cqring|io_req|__io_|"
                  r"io_do_iopoll|io_sq_|aio_|__x64_sys_io_|do_io_getevents|read_events|lookup_ioctx|"
                  r"io_submit_one)",
         "io_uring's and libaio's own work (submission and completion queues, request set-up; the "
         "file system and block layer beneath it count as theirs)"),
    Rule("syscall", r"^(entry_SYSCALL|do_syscall_64|syscall_|__x64_sys_|x64_sys_call|exit_to_user_mode|"
                    r"__rseq|rseq_|switch_fpu|fpregs|restore_fpregs|arch_exit_to_user)",
         "system call entry and exit"),
)
KERNEL_OTHER, LIBC = "kernel other", "libc"
KERNEL_CATEGORIES = (*(r.category for r in KERNEL_RULES), KERNEL_OTHER, LIBC)
_KERNEL_MEANING = {
    KERNEL_OTHER: "every other kernel sample (memory allocation, timers, locks outside the paths above)",
    LIBC: "leaf in a system library, not the kernel: malloc/free, memcpy, the vDSO clock, pthread",
}


def kernel_rule_table() -> pd.DataFrame:
    """KERNEL_RULES in precedence order, then kernel other and libc, for a notebook."""
    rows = [(r.category, r.pattern, r.covers) for r in KERNEL_RULES]
    rows += [(c, "(no rule matched)" if c == KERNEL_OTHER else f"leaf frame tagged {SYSLIB_TAG}", m)
             for c, m in _KERNEL_MEANING.items()]
    return pd.DataFrame(rows, columns=["part", "kernel symbol pattern (any frame)", "covers"])


def categorize_kernel(frames_leaf_first: Iterable[str], rules: Iterable[Rule] = KERNEL_RULES) -> str | None:
    """The part of libc+k of one stack (frames leaf first), or None if its leaf is not a system
    frame (the sample is RocksDB's or the program's own, not libc+k)."""
    frames = list(frames_leaf_first)
    if not frames or not is_system_frame(frames[0]):
        return None
    kernel = [f.removesuffix(KERNEL_TAG) for f in frames if f.endswith(KERNEL_TAG)]
    if not frames[0].endswith(KERNEL_TAG):
        return LIBC
    for r in rules:
        if any(r.regex.search(f) for f in kernel):
            return r.category
    return KERNEL_OTHER


def kernel_breakdown(folded: Mapping[str, int], rules: Iterable[Rule] = KERNEL_RULES) -> pd.Series:
    """Samples of the reading threads' libc+k, per part (KERNEL_CATEGORIES order)."""
    out = pd.Series(0, index=list(KERNEL_CATEGORIES), dtype="int64")
    rules = tuple(rules)
    for stack, n in folded.items():
        root, frames = _split(stack)
        if root != READER_ROOT:
            continue
        part = categorize_kernel(frames, rules)
        if part is not None:
            out[part] += n
    return out


# --------------------------------------------------------------------------- parameters

@dataclass
class Params(checks.Checked):
    """The study's parameters (the notebook's papermill parameters).

    backend: default (RocksDB's own posix file system, as the seed's db_bench
    used) or an rxlab engine URI. threads: clients of the read steps.
    scale: smoke | small | full (ioeff's presets: DB size, cache, durations).
    call_graph: dwarf | fp. frequency: samples per second per thread.
    repeats: profiled and timed step pairs per test (None: the scale's).
    duration: seconds per read step (None: the scale's). value_size, db_size,
    db_dir: as in rxlab.ioeff.
    """

    backend: str = "default"
    threads: int = 1
    scale: str = "small"
    call_graph: str = "dwarf"
    frequency: int = 999
    repeats: int | None = None
    duration: float | None = None
    value_size: int = 400
    db_size: int | str | None = None
    db_dir: str | None = None

    def __post_init__(self):
        self.backend = checks.backend(self.backend)
        if not (checks.is_int(self.threads) and 1 <= self.threads <= 64):
            checks.fail("threads", self.threads, "expected an integer 1..64")
        self.threads = int(self.threads)
        checks.choice("scale", self.scale, tuple(ioeff.SCALES))
        checks.choice("call_graph", self.call_graph, ("dwarf", "fp"))
        if not (checks.is_int(self.frequency) and 10 <= self.frequency <= 10_000):
            checks.fail("frequency", self.frequency, "expected samples per second, an integer 10..10000")
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 20):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..20")
        self.db_dir = checks.db_dir(self.db_dir)
        self.ioeff_params()  # value_size, duration, db_size and the free disk, checked by ioeff

    def ioeff_params(self) -> ioeff.Params:
        """The IO-efficiency study's parameters that build the same DB (one client count, block_align)."""
        return ioeff.Params(backend=self.backend, threads=[self.threads], scale=self.scale,
                            db_dir=self.db_dir,
                            block_align=[True], repeats=1, value_size=self.value_size,
                            duration=self.duration, db_size=self.db_size)

    def settings(self) -> ioeff.Settings:
        s = self.ioeff_params().settings()
        repeats = self.repeats if self.repeats is not None else REPEATS[self.scale]
        if self.scale == "smoke" and self.duration is None:
            s = dataclasses.replace(s, duration=SMOKE_DURATION,
                                    revrange_duration=min(s.revrange_duration, SMOKE_DURATION))
        return dataclasses.replace(s, repeats=repeats)

    def table(self) -> pd.DataFrame:
        s = self.settings()
        t = s.table().drop(index=["fio runtime (+ ramp)", "fio file", "repeats"], errors="ignore")
        extra = pd.DataFrame(
            [("read steps per test", f"{s.repeats} profiled + {s.repeats} timed (PerfContext level "
                                     f"{TIMER_PERF_LEVEL})"),
             ("sampling", f"perf record -e cpu-clock -F {self.frequency} --call-graph {self.call_graph}"),
             ("backend", self.backend), ("clients", str(self.threads))],
            columns=["setting", "value"]).set_index("setting")
        return pd.concat([t, extra])


# --------------------------------------------------------------------------- running

def steps(settings: ioeff.Settings) -> list[dict]:
    """The IO-efficiency sequence, each seed test run `repeats` times as a profiled step
    (PerfContext off, as db_bench by default) followed by a timed step (PerfContext level 5)."""
    from . import driver

    out: list[dict] = []
    for s in driver.expand(ioeff.sequence(settings)):
        if s.get("name") == "readrandom" and s.get("label") in SEED_TESTS:
            for rep in range(settings.repeats):
                out.append({**s, "cpu_mode": PROFILE, "cpu_rep": rep, "perf_level": PROFILE_PERF_LEVEL})
                out.append({**s, "cpu_mode": TIMERS, "cpu_rep": rep, "perf_level": TIMER_PERF_LEVEL})
        else:
            out.append(s)
    return out


def plan(params: Params) -> pd.DataFrame:
    """The steps of the study's one run, in order: label, benchmark, mode, repetition, threads."""
    rows = []
    for s in steps(params.settings()):
        if "reopen" in s:
            rows.append({"step": "reopen", "benchmark": "", "mode": f"reopen {s['reopen']}", "rep": None,
                         "threads": None})
        else:
            rows.append({"step": s.get("label", s["name"]), "benchmark": s["name"],
                         "mode": s.get("cpu_mode", ""),
                         "rep": s.get("cpu_rep"), "threads": s.get("threads", params.threads)})
    return pd.DataFrame(rows)


def _profile_dir() -> Path:
    """Where perf.data goes: memory (/dev/shm) when it can, so perf does not write to the DB's disk."""
    shm = Path("/dev/shm")
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())
    return Path(tempfile.mkdtemp(prefix="rxlab-cpu-", dir=base))


@dataclass
class CpuResult:
    """A study: its run, the step rows with the seeds' columns, and the folded stacks by (test, rep)."""

    run: Path
    frame: pd.DataFrame
    folded: dict
    params: Params | None = None
    elapsed_s: float | None = None

    @property
    def runs(self) -> list[Path]:
        return [self.run]

    @property
    def backend(self) -> str:
        return str(self.frame["backend"].dropna().iloc[0]) if "backend" in self.frame.columns else ""

    @property
    def call_graph(self) -> str:
        col = self.frame.get("cpu.call_graph")
        return str(col.dropna().iloc[0]) if col is not None and col.notna().any() else ""


def run_study(params: Params, root: str | os.PathLike | None = None, progress: bool = True) -> CpuResult:
    """Build the DB, run the sequence with the read steps profiled and timed, store one run."""
    import json

    from tqdm import tqdm

    from . import driver, sysinfo
    from .builds import active_build

    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    sid = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
    work = Path(tempfile.mkdtemp(prefix="rxlab-cpu-db-", dir=params.db_dir))
    spec = driver.RunSpec(
        db=str(work / "db"), name=f"{RUN_PREFIX}{sid}", backend=params.backend, steps=steps(s), num=s.num,
        key_size=ioeff.KEY_SIZE, value_size=params.value_size, threads=params.threads, duration=s.duration,
        block_size=ioeff.BLOCK_BYTES, block_align=True, compression="none", cache_size=s.cache_size,
        write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
        max_bytes_for_level_base=s.max_bytes_for_level_base, perf_level=PROFILE_PERF_LEVEL,
        scale=params.scale)
    t0 = time.monotonic()
    support = perf_support()
    if support.path is None or not support.cpu_clock:
        raise RuntimeError("perf with the cpu-clock event is needed: " + support.hardware_detail)
    try:
        driver.validate(spec)
        seq = driver.expand(spec.steps)
        build = active_build()
        rec = (build / "build.json").read_text() if (build / "build.json").is_file() else "{}"
        fp = sysinfo.fingerprint(spec.db, rocksdb_build=json.loads(rec))
        run_spec = {**spec.to_dict(), "study": STUDY_TAG, "call_graph": params.call_graph,
                    "frequency": params.frequency, "repeats": s.repeats,
                    "perf": dataclasses.asdict(support)}
        sess = driver.Session(spec)
        try:
            with store.RunWriter(root, run_spec, fp) as w:
                for i, step in enumerate(tqdm(seq, desc=spec.name, disable=not progress, unit="step")):
                    if "reopen" in step:
                        sess.close()
                        sess = driver.Session(spec, bloom_bits=step["reopen"].get("bloom_bits"))
                        continue
                    row = _step(sess, step, i, params, w)
                    row["step_index"] = i
                    w.add_step(row)
        finally:
            sess.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    res = load_study(root, run=w.path)
    res.params, res.elapsed_s = params, time.monotonic() - t0
    return res


def _step(sess, step: Mapping, index: int, params: Params, writer: store.RunWriter) -> dict:
    mode = step.get("cpu_mode")
    extra = {"cpu.mode": mode or "", "cpu.rep": step.get("cpu_rep", -1),
             "cpu.perf_level": step.get("perf_level", sess.spec.perf_level)}
    if mode != PROFILE:
        return {**sess.run_step(step), **extra}
    tmp = _profile_dir()
    try:
        prof = Profiler(os.getpid(), tmp, call_graph=params.call_graph, frequency=params.frequency)
        with prof:
            row = sess.run_step(step)
        samples = parse_script(perf_script(prof.data))
        folded = fold(samples)
        name = f"step{index:02d}-{step.get('label', step['name'])}-r{step.get('cpu_rep', 0)}.folded"
        writer.attach(write_folded(folded, tmp / name))
        periods = [x.period for x in samples]
        extra.update({"cpu.folded": name, "cpu.call_graph": params.call_graph,
                      "cpu.frequency": params.frequency,
                      "cpu.period_ns": float(np.mean(periods)) if periods else np.nan,
                      "cpu.sampled_ns": float(np.sum(periods)) if periods else 0.0})
        extra.update({f"cpu.{k}": v for k, v in stack_stats(folded).items()})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return {**row, **extra}


def load_study(root: str | os.PathLike | None = None,
               run: str | os.PathLike | None = None) -> CpuResult | None:
    """A stored study (the latest complete one when `run` is None), folded stacks re-read."""
    root = Path(root) if root is not None else store.default_root()
    if run is None:
        cat = store.catalog(root)
        if cat.empty or "spec.study" not in cat.columns:
            return None
        cat = cat[cat["spec.study"] == STUDY_TAG]
        if cat.empty:
            return None
        run = cat["run_id"].iloc[-1]
    path = Path(run) if Path(run).is_dir() else root / str(run)
    cat = store.catalog(root, runs=[path])
    frame = pd.concat([cat, metrics.seed_columns(cat).drop(columns=["test"])], axis=1)
    frame["test"] = frame["name"].astype(str)
    folded = {}
    for _, r in frame[frame.get("cpu.mode", pd.Series("", index=frame.index)) == PROFILE].iterrows():
        folded[(r["test"], int(r["cpu.rep"]))] = read_folded(path / "attachments" / r["cpu.folded"])
    return CpuResult(run=path, frame=frame, folded=folded)


# --------------------------------------------------------------------------- tables

def _published() -> pd.DataFrame:
    p = published.load("gccclang_flamegraph")
    return p.rename(columns={"pct": "pct_published"})[["category", "meaning", "test", "pct_published"]]


def breakdown_long(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """One row per test, repetition and category: samples and percent of the reader samples."""
    rows = []
    for (test, rep), folded in result.folded.items():
        b = breakdown(folded, rules)
        reader = int(b[list(CATEGORIES)].sum())
        for c in CATEGORIES:
            rows.append({"test": test, "rep": rep, "category": c, "samples": int(b[c]),
                         "pct": 100.0 * b[c] / reader if reader else np.nan})
    return pd.DataFrame(rows, columns=["test", "rep", "category", "samples", "pct"])


def breakdown_table(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """The seed's table: percent of samples per category and test, here (samples of the
    repetitions pooled) and published, side by side; rows in the seed's order."""
    long = breakdown_long(result, rules)
    pooled = long.groupby(["test", "category"], sort=False)["samples"].sum().unstack("category")
    pooled = pooled.reindex(columns=list(CATEGORIES), fill_value=0)
    pct = pooled.div(pooled.sum(axis=1), axis=0) * 100.0
    pub = _published().pivot(index="category", columns="test", values="pct_published")
    cols = {}
    for t in SEED_TESTS:
        cols[(t, "here")] = pct.loc[t] if t in pct.index else pd.Series(np.nan, index=list(CATEGORIES))
        cols[(t, "seed")] = pub[t] if t in pub.columns else np.nan
    out = pd.DataFrame(cols).reindex(list(CATEGORIES))
    out.columns = pd.MultiIndex.from_tuples(out.columns, names=["test", "source"])
    out.index.name = "category"
    return out


def pooled_folded(result: CpuResult, test: str) -> dict[str, int]:
    """The folded stacks of every profiled repetition of one test, summed."""
    out: Counter = Counter()
    for (t, _), folded in result.folded.items():
        if t == test:
            out.update(folded)
    return dict(out)


def sample_summary(result: CpuResult) -> pd.DataFrame:
    """Per profiled step: QPS, samples, how many came from the reading threads, stack quality."""
    f = result.frame[result.frame["cpu.mode"] == PROFILE]
    cols = ["test", "cpu.rep", "qps", "cpu.samples", "cpu.reader_samples",
            "cpu.outside_samples", "cpu.whole_stack_pct", "cpu.with_rocksdb_frame_pct", "cpu.kernel_leaf_pct"]
    out = f[[c for c in cols if c in f.columns]].copy()
    return out.rename(columns=lambda c: c.removeprefix("cpu.")).reset_index(drop=True)


# (label, reader-stack pattern measured by sampling, PerfContext counter, what the counter times)
CROSSCHECKS = (
    ("DBImpl::Get", r"^rocksdb::DBImpl::Get$", "get_cpu_nanos", "thread CPU time in DB::Get"),
    ("block reads", r"^rocksdb::RandomAccessFileReader::(Read|MultiRead)$", "block_read_cpu_time",
     "thread CPU time of the block reads (file system and kernel)"),
    ("checksum", r"^rocksdb::VerifyBlockChecksum$", "block_checksum_time",
     "wall time of VerifyBlockChecksum (CPU-bound)"),
    ("block seeks", r"^rocksdb::(DataBlockIter|IndexBlockIter|MetaBlockIter)::SeekImpl$", "block_seek_nanos",
     "wall time of Data/Index/MetaBlockIter::SeekImpl (CPU-bound)"),
)


def crosscheck(result: CpuResult) -> pd.DataFrame:
    """Microseconds per query of parts of the stack, from the samples (profiled steps: samples with
    the frame x sample period / queries) and from RocksDB's PerfContext (the timed steps), plus
    the process CPU per query (getrusage, rxlab.metrics' cpuPer) against all samples of the step.
    Medians over the repetitions."""
    f = result.frame
    rows = []
    for test in SEED_TESTS:
        prof = f[(f["test"] == test) & (f["cpu.mode"] == PROFILE)]
        timed = f[(f["test"] == test) & (f["cpu.mode"] == TIMERS)]
        if prof.empty:
            continue
        per_rep = []
        for _, r in prof.iterrows():
            folded = result.folded[(test, int(r["cpu.rep"]))]
            us = float(r["cpu.period_ns"]) / 1e3 / float(r["ops"])
            per_rep.append({"all samples": sum(folded.values()) * us,
                            **{lab: _inclusive(folded, pat) * us for lab, pat, _, _ in CROSSCHECKS}})
        samp = pd.DataFrame(per_rep).median()
        rows.append({"test": test, "quantity": "process CPU", "sampled_us": samp["all samples"],
                     "perfcontext_us": np.nan, "rusage_us": float(prof["cpuPer"].median()),
                     "counter": "getrusage (cpuPer)", "counter_measures": "process user + system CPU"})
        for lab, _, counter, what in CROSSCHECKS:
            col = f"pc.{counter}"
            pc = (pd.to_numeric(timed[col], errors="coerce").fillna(0) / timed["ops"] / 1e3).median() \
                if col in timed.columns and len(timed) else np.nan
            rows.append({"test": test, "quantity": lab, "sampled_us": samp[lab], "perfcontext_us": pc,
                         "rusage_us": np.nan, "counter": col, "counter_measures": what})
    out = pd.DataFrame(rows)
    ref = out["perfcontext_us"].fillna(out["rusage_us"])
    out["sampled / counter"] = out["sampled_us"] / ref
    return out


def timer_cost(result: CpuResult) -> pd.DataFrame:
    """QPS and CPU per query of the profiled steps (perf sampling, PerfContext off) and the timed
    steps (no sampling, PerfContext level 5): what each instrument costs. Medians."""
    f = result.frame[result.frame["cpu.mode"].isin([PROFILE, TIMERS])]
    g = f.groupby(["test", "cpu.mode"])[["qps", "cpuPer", "usPer", "syPer"]].median().unstack("cpu.mode")
    g.columns = [f"{a} {b}" for a, b in g.columns]
    return g.reindex([t for t in SEED_TESTS if t in g.index])


# --------------------------------------------------------------------------- findings

def findings(table: pd.DataFrame, cross: pd.DataFrame, summary: pd.DataFrame,
             result: CpuResult | None = None) -> str:
    """What the tables show, in Markdown bullets with their numbers (with `result`: the largest
    libc+k leaves of readrandom too)."""
    lines = []
    for t in SEED_TESTS:
        if (t, "here") not in table.columns or table[(t, "here")].isna().all():
            continue
        here, seed = table[(t, "here")], table[(t, "seed")]
        d = (here - seed).abs().sort_values(ascending=False)
        big = ", ".join(f"{c} {here[c]:.1f}% vs {seed[c]:.1f}%" for c in d.index[:3])
        lines.append(f"- {t}: libc+k {here['libc+k']:.1f}% of the reading threads' samples here, "
                     f"{seed['libc+k']:.1f}% in the seed; bloom {here['bloom']:.1f}% "
                     f"(seed {seed['bloom']:.1f}%), other {here['other']:.1f}% (seed {seed['other']:.1f}%). "
                     f"Largest differences: {big}.")
    if len(summary):
        lines.append(f"- {int(summary['samples'].sum()):,} samples in {len(summary)} profiled steps; "
                     f"{summary['reader_samples'].sum() / summary['samples'].sum():.1%} from the reading "
                     f"threads; {summary['whole_stack_pct'].median():.0f}% of their stacks reach the "
                     f"thread's start (median over steps).")
    if result is not None and any(t == "readrandom" for t, _ in result.folded):
        top = top_symbols(pooled_folded(result, "readrandom"), "libc+k", n=3)
        lines.append("- The largest libc+k leaves in readrandom, % of the reading threads' samples: "
                     + ", ".join(f"`{r['leaf symbol']}` {r['pct of reader samples']:.1f}%"
                                 for _, r in top.iterrows()) + ".")
    c = cross[cross["quantity"] == "DBImpl::Get"]
    if len(c):
        lines.append("- Sampled CPU in DBImpl::Get against RocksDB's get_cpu_nanos, us per query: "
                     + "; ".join(f"{r.test} {r.sampled_us:.1f} vs {r.perfcontext_us:.1f}"
                                 for r in c.itertuples()) + ".")
    p = cross[cross["quantity"] == "process CPU"]
    if len(p):
        lines.append("- All samples against getrusage's process CPU, us per query: "
                     + "; ".join(f"{r.test} {r.sampled_us:.1f} vs {r.rusage_us:.1f}" for r in p.itertuples())
                     + ".")
    return "\n".join(lines)


# --------------------------------------------------------------------------- figures

def fig_breakdown(table: pd.DataFrame, backend: str = "default"):
    """Percent of samples per category, one panel per test: here (the backend's colour) and the seed
    (outlined in the published colour)."""
    fig, axes = figures.figure("page", aspect=0.36, ncols=len(SEED_TESTS), sharex=True, sharey=True)
    cats = list(CATEGORIES)
    y = np.arange(len(cats))
    h = 0.38
    for ax, t in zip(np.atleast_1d(axes), SEED_TESTS, strict=True):
        ax.barh(y - h / 2, table[(t, "here")].to_numpy(float), h, color=figures.backend_color(backend),
                label=f"here ({backend})")
        ax.barh(y + h / 2, table[(t, "seed")].to_numpy(float), h, color="white",
                edgecolor=figures.BACKEND_COLORS["published"], linewidth=0.7, label="seed")
        ax.set_title(t)
        ax.set_yticks(y, cats)
        ax.invert_yaxis()
        ax.set_xlabel("% of samples")
    np.atleast_1d(axes)[0].legend(loc="lower right")
    fig.tight_layout()
    return fig


def fig_crosscheck(cross: pd.DataFrame, backend: str = "default"):
    """Sampled CPU per query against the counters (PerfContext timers, getrusage), per test."""
    fig, axes = figures.figure("page", aspect=0.34, ncols=len(SEED_TESTS), sharey=True)
    quantities = list(dict.fromkeys(cross["quantity"]))
    x = np.arange(len(quantities))
    w = 0.38
    for ax, t in zip(np.atleast_1d(axes), SEED_TESTS, strict=True):
        c = cross[cross["test"] == t].set_index("quantity").reindex(quantities)
        ref = c["perfcontext_us"].fillna(c["rusage_us"])
        ax.bar(x - w / 2, c["sampled_us"].to_numpy(float), w, color=figures.backend_color(backend),
               label="perf samples")
        ax.bar(x + w / 2, ref.to_numpy(float), w, color="#8c8c8c", label="PerfContext / getrusage")
        ax.set_xticks(x, quantities, rotation=30, ha="right")
        ax.set_title(t)
    np.atleast_1d(axes)[0].set_ylabel("us per query")
    fig.tight_layout()
    # above the panels: inside any panel it covers the tall process-CPU bars
    handles, labels = np.atleast_1d(axes)[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2)
    return fig


def per_query(result: CpuResult, rules: Iterable[Rule] = RULES) -> pd.DataFrame:
    """CPU microseconds per query in each category (reader samples x period / queries), medians."""
    long = breakdown_long(result, rules)
    f = result.frame[result.frame["cpu.mode"] == PROFILE].set_index(["test", "cpu.rep"])
    us = [float(f.loc[(r.test, r.rep), "cpu.period_ns"]) / 1e3 / float(f.loc[(r.test, r.rep), "ops"])
          for r in long.itertuples()]
    long = long.assign(us_per_query=np.array(us) * long["samples"].to_numpy(float))
    out = long.groupby(["test", "category"], sort=False)["us_per_query"].median().unstack("category")
    return out.reindex(index=[t for t in SEED_TESTS if t in out.index], columns=list(CATEGORIES))


def kernel_per_query(result: CpuResult, rules: Iterable[Rule] = KERNEL_RULES) -> pd.DataFrame:
    """libc+k split into its parts (KERNEL_RULES), CPU microseconds per query, medians over the
    repetitions; one row per test, plus `libc+k` (their sum) and `reads per query` (device
    reads / queries of the step: the doorbell and the switch happen once per device read)."""
    f = result.frame[result.frame["cpu.mode"] == PROFILE].set_index(["test", "cpu.rep"])
    rows = []
    for (test, rep), folded in result.folded.items():
        r = f.loc[(test, rep)]
        us = float(r["cpu.period_ns"]) / 1e3 / float(r["ops"])
        b = kernel_breakdown(folded, rules) * us
        reads = float(r["iops"]) / float(r["qps"]) if float(r.get("qps") or 0) > 0 else np.nan
        rows.append({"test": test, "rep": rep, **b.to_dict(), "libc+k": float(b.sum()),
                     "reads per query": reads})
    cols = [*KERNEL_CATEGORIES, "libc+k", "reads per query"]
    if not rows:
        return pd.DataFrame(columns=cols)
    out = pd.DataFrame(rows).groupby("test", sort=False)[cols].median()
    return out.reindex([t for t in SEED_TESTS if t in out.index])


def kernel_findings(kpq: pd.DataFrame) -> str:
    """The largest parts of libc+k per test, in Markdown bullets with their numbers."""
    lines = []
    for test, r in kpq.iterrows():
        parts = r[list(KERNEL_CATEGORIES)].sort_values(ascending=False)
        total = float(r["libc+k"])
        if not total > 0:
            continue
        top = ", ".join(f"{c} {v:.1f} us ({100 * v / total:.0f}%)" for c, v in parts.head(3).items())
        read_path = float(r[["gup", "block", "async", "fs", "syscall"]].sum())
        lines.append(f"- {test}: libc+k {total:.1f} us per query; largest parts {top}; the read path "
                     f"proper (syscall, fs, block, pinning, async) {read_path:.1f} us; "
                     f"{r['reads per query']:.2f} device reads per query.")
    return "\n".join(lines)


def fig_kernel_per_query(kpq: pd.DataFrame):
    """Stacked CPU us per query of the parts of libc+k, one bar per test."""
    fig, ax = figures.figure("column", aspect=0.8)
    y = np.arange(len(kpq))
    left = np.zeros(len(kpq))
    colors = ("#d62728", "#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#2ca02c", "#17becf", "#e377c2",
              "#bcbd22", "#7f7f7f", "#d9d9d9")
    for c, color in zip(KERNEL_CATEGORIES, colors, strict=True):
        v = kpq[c].fillna(0).to_numpy(float)
        ax.barh(y, v, left=left, color=color, label=c)
        left += v
    ax.set_yticks(y, list(kpq.index))
    ax.invert_yaxis()
    ax.set_xlabel("libc+k CPU us per query (reading threads)")
    ax.legend(ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=6)
    fig.tight_layout()
    return fig


# categories, not backends: a palette of its own (tab10), other in light grey
_CATEGORY_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#bcbd22",
                    "#d9d9d9")


def fig_per_query(result: CpuResult):
    """Stacked CPU us per query by category for each test (here only: the seed gives percentages)."""
    pq = per_query(result)
    fig, ax = figures.figure("column", aspect=0.8)
    left = np.zeros(len(pq))
    for i, c in enumerate(CATEGORIES):
        v = pq[c].fillna(0).to_numpy(float)
        ax.barh(np.arange(len(pq)), v, left=left, color=_CATEGORY_COLORS[i], label=c)
        left += v
    ax.set_yticks(np.arange(len(pq)), list(pq.index))
    ax.invert_yaxis()
    ax.set_xlabel("CPU us per query (reading threads)")
    ax.legend(ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=6)
    fig.tight_layout()
    return fig
