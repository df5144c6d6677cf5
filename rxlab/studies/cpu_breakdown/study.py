"""Where RocksDB's CPU goes in a point query: the flamegraph table of the gcc/clang post, measured here.

The seed (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang", section *Flamegraphs*) summarises flamegraphs of readrandom,
readrandom2 and readrandom3 (the IO-efficiency seed's tests, blog-2025-10-23)
as the percentage of samples in nine parts of the call stack: libc+kernel,
checksum, IndexBlockIter::SeekImpl, DataBlockIter::SeekImpl, the LRU block
cache, bloom filters, BinarySearchIndexReader::NewIterator, file picking and
the rest. This module produces that table from fresh samples:

* Sampling: `perf.Profiler` runs `perf record -e cpu-clock` (a software event: the
  hardware counters of these VMs do not exist, see `perf.perf_support`) on this
  process (`-p <pid>`), started with its events disabled and switched on and
  off through perf's control FIFO exactly around one step, so only the read
  step is sampled. The driver's C++ threads are created inside the step and
  inherit the events.
* Stacks: `perf.perf_script` + `perf.parse_script` + `perf.fold` turn perf.data into folded
  stacks (one line per distinct stack, root first, ``;``-separated, then the
  sample count), written by this module, not by FlameGraph's scripts.
  `perf.folded_stacks(perf_data)` is that whole path in one call, for any notebook.
* Categories: `RULES`, an explicit table of symbol patterns, and `categorize`
  (the precedence is documented there). `breakdown` gives the seed's table.
* Cross-check: each profiled step is followed by the same step unprofiled at
  PerfContext level 5 (timers and CPU timers), and `crosscheck` puts the
  sampled CPU per query of a part of the stack beside the PerfContext timer
  that RocksDB keeps for the same code (get_cpu_nanos, block_read_cpu_time,
  block_checksum_time, block_seek_nanos) and process CPU from getrusage.

The DB is built by the IO-efficiency sequence (driver.SEQUENCES["io_efficiency"]
through `io_efficiency.sequence`) with ioeff's scale presets, so the three tests read
the trees the first seed describes: readrandom a tree of several levels with
bloom filters, readrandom2 one level after a full compaction, readrandom3 the
same without bloom filters.

What the local build gives (checked by `perf.symbol_report` and the tests): the
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

import dataclasses
import json
import os
import re
import secrets
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rxlab.bench import driver, perf
from rxlab.core import figures, metrics, published, store, sysinfo
from rxlab.core import params as checks
from rxlab.core.builds import active_build
from rxlab.studies.io_efficiency import study as io_efficiency

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
    "Rule",
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
    "kernel_breakdown",
    "kernel_findings",
    "kernel_per_query",
    "kernel_rule_table",
    "load_study",
    "per_query",
    "plan",
    "pooled_folded",
    "rule_table",
    "run_study",
    "sample_summary",
    "timer_cost",
    "top_symbols",
]

SEED_FILE = "blog-2025-12-01-rocksdb-gcc-vs-clang-and-more.txt"
IOEFF_SEED = io_efficiency.SEED_FILE
PUBLISHED = (f"{SEED_FILE}: gccclang_flamegraph (Flamegraphs: percentage of samples)",
             f"{IOEFF_SEED}: readrandom, readrandom2, readrandom3 (the tests)")
SEED_TESTS = io_efficiency.SEED_TESTS            # readrandom, readrandom2, readrandom3
CATEGORIES = ("libc+k", "checksm", "IBI:Sk", "DBI:Sk", "LRU", "bloom", "BSI", "File", "other")
OUTSIDE = "outside"                      # samples of threads that did not run the reads
RUN_PREFIX = "cpu-"
STUDY_TAG = "cpu_breakdown"
PROFILE, TIMERS = "profile", "timers"    # the two kinds of read step
TIMER_PERF_LEVEL = 5                     # kEnableTimeAndCPUTimeExceptForMutex: timers and CPU timers
PROFILE_PERF_LEVEL = 1                   # kDisable, db_bench's default: no timer cost in the profile
REPEATS = {"smoke": 1, "small": 2, "full": 3}
SMOKE_DURATION = 0.5                     # seconds per read step at smoke (ioeff's is 1 s): CI's budget


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
    rows = [("libc+k", f"leaf frame tagged {perf.KERNEL_TAG} or {perf.SYSLIB_TAG}", _CATEGORY_MEANING["libc+k"])]
    rows += [(r.category, r.pattern, r.covers) for r in RULES]
    rows.append(("other", "(no rule matched)", _CATEGORY_MEANING["other"]))
    return pd.DataFrame(rows, columns=["category", "symbol pattern", "covers"])


def categorize(frames_leaf_first: Iterable[str], rules: Iterable[Rule] = RULES) -> str:
    """The category of one stack, frames given leaf first (see RULES for the precedence)."""
    frames = list(frames_leaf_first)
    if not frames:
        return "other"
    if perf.is_system_frame(frames[0]):
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
        root, frames = perf.split_stack(stack)
        out[categorize(frames, rules) if root == perf.READER_ROOT else OUTSIDE] += n
    return out


def _inclusive(folded: Mapping[str, int], pattern: str) -> int:
    """Reader samples with a frame matching `pattern` anywhere in the stack."""
    rx = re.compile(pattern)
    return sum(n for stack, n in folded.items()
               if stack.startswith(perf.READER_ROOT + ";") and any(rx.search(f) for f in stack.split(";")[1:]))


def stack_stats(folded: Mapping[str, int]) -> dict:
    """Samples, reader samples, and the share of reader stacks that reach the thread's start."""
    total = sum(folded.values())
    reader = {k: v for k, v in folded.items() if k.startswith(perf.READER_ROOT + ";")}
    n = sum(reader.values())
    whole = sum(v for k, v in reader.items() if k.split(";")[1].removesuffix(perf.SYSLIB_TAG) in perf.THREAD_ROOTS)
    kernel = sum(v for k, v in reader.items() if k.endswith(perf.KERNEL_TAG))
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
        root, frames = perf.split_stack(stack)
        if root != perf.READER_ROOT:
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
    rows += [(c, "(no rule matched)" if c == KERNEL_OTHER else f"leaf frame tagged {perf.SYSLIB_TAG}", m)
             for c, m in _KERNEL_MEANING.items()]
    return pd.DataFrame(rows, columns=["part", "kernel symbol pattern (any frame)", "covers"])


def categorize_kernel(frames_leaf_first: Iterable[str], rules: Iterable[Rule] = KERNEL_RULES) -> str | None:
    """The part of libc+k of one stack (frames leaf first), or None if its leaf is not a system
    frame (the sample is RocksDB's or the program's own, not libc+k)."""
    frames = list(frames_leaf_first)
    if not frames or not perf.is_system_frame(frames[0]):
        return None
    kernel = [f.removesuffix(perf.KERNEL_TAG) for f in frames if f.endswith(perf.KERNEL_TAG)]
    if not frames[0].endswith(perf.KERNEL_TAG):
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
        root, frames = perf.split_stack(stack)
        if root != perf.READER_ROOT:
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
    db_dir: as in rxlab.studies.io_efficiency.
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
        checks.choice("scale", self.scale, tuple(io_efficiency.SCALES))
        checks.choice("call_graph", self.call_graph, ("dwarf", "fp"))
        if not (checks.is_int(self.frequency) and 10 <= self.frequency <= 10_000):
            checks.fail("frequency", self.frequency, "expected samples per second, an integer 10..10000")
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 20):
            checks.fail("repeats", self.repeats, "expected None (the scale's) or an integer 1..20")
        self.db_dir = checks.db_dir(self.db_dir)
        self.ioeff_params()  # value_size, duration, db_size and the free disk, checked by ioeff

    def ioeff_params(self) -> io_efficiency.Params:
        """The IO-efficiency study's parameters that build the same DB (one client count, block_align)."""
        return io_efficiency.Params(backend=self.backend, threads=[self.threads], scale=self.scale,
                            db_dir=self.db_dir,
                            block_align=[True], repeats=1, value_size=self.value_size,
                            duration=self.duration, db_size=self.db_size)

    def settings(self) -> io_efficiency.Settings:
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

def steps(settings: io_efficiency.Settings) -> list[dict]:
    """The IO-efficiency sequence, each seed test run `repeats` times as a profiled step
    (PerfContext off, as db_bench by default) followed by a timed step (PerfContext level 5)."""

    out: list[dict] = []
    for s in driver.expand(io_efficiency.sequence(settings)):
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



    s = params.settings()
    root = Path(root) if root is not None else store.default_root()
    sid = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + secrets.token_hex(2)
    work = Path(tempfile.mkdtemp(prefix="rxlab-cpu-db-", dir=params.db_dir))
    spec = driver.RunSpec(
        db=str(work / "db"), name=f"{RUN_PREFIX}{sid}", backend=params.backend, steps=steps(s), num=s.num,
        key_size=io_efficiency.KEY_SIZE, value_size=params.value_size, threads=params.threads, duration=s.duration,
        block_size=io_efficiency.BLOCK_BYTES, block_align=True, compression="none", cache_size=s.cache_size,
        write_buffer_size=s.write_buffer_size, target_file_size_base=s.target_file_size_base,
        max_bytes_for_level_base=s.max_bytes_for_level_base, perf_level=PROFILE_PERF_LEVEL,
        scale=params.scale)
    t0 = time.monotonic()
    support = perf.perf_support()
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
        prof = perf.Profiler(os.getpid(), tmp, call_graph=params.call_graph, frequency=params.frequency)
        with prof:
            row = sess.run_step(step)
        samples = perf.parse_script(perf.perf_script(prof.data))
        folded = perf.fold(samples)
        name = f"step{index:02d}-{step.get('label', step['name'])}-r{step.get('cpu_rep', 0)}.folded"
        writer.attach(perf.write_folded(folded, tmp / name))
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
        folded[(r["test"], int(r["cpu.rep"]))] = perf.read_folded(path / "attachments" / r["cpu.folded"])
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
    the process CPU per query (getrusage, rxlab.core.metrics' cpuPer) against all samples of the step.
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
