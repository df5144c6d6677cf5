"""The symbol rules: which part of the call stack a sample of a reading thread belongs to.

The seed's flamegraph table (the gcc/clang post, section *Flamegraphs*)
splits the samples of readrandom, readrandom2 and readrandom3 into nine
parts of the call stack: libc+kernel, checksum, IndexBlockIter::SeekImpl,
DataBlockIter::SeekImpl, the LRU block cache, bloom filters,
BinarySearchIndexReader::NewIterator, file picking and the rest. The post
does not say how it assigned a sample whose stack crosses two of them; the
precedence here is explicit: `RULES` and `categorize`. `KERNEL_RULES` split
the seed's one libc+k bar into its parts (interrupts, the virtio doorbell,
context switches, the block layer, ...), which on a virtual machine are
most of a read's CPU.

The folded stacks come from rxlab.bench.perf (root first, ';'-separated, the
reading threads under the root `reader`, kernel frames tagged `_[k]`, system
libraries `_[libc]`).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache

import numpy as np
import pandas as pd

from rxlab.bench import perf

CATEGORIES = ("libc+k", "checksm", "IBI:Sk", "DBI:Sk", "LRU", "bloom", "BSI", "File", "other")
OUTSIDE = "outside"                      # samples of threads that did not run the reads


@dataclass(frozen=True)
class Rule:
    """One row of a rule table: a category and the symbol pattern that puts a frame in it."""

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
    tags = f"leaf frame tagged {perf.KERNEL_TAG} or {perf.SYSLIB_TAG}"
    rows = [("libc+k", tags, _CATEGORY_MEANING["libc+k"])]
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


def inclusive(folded: Mapping[str, int], pattern: str) -> int:
    """Reader samples with a frame matching `pattern` anywhere in the stack."""
    rx = re.compile(pattern)
    return sum(n for stack, n in folded.items()
               if stack.startswith(perf.READER_ROOT + ";")
               and any(rx.search(f) for f in stack.split(";")[1:]))


def stack_stats(folded: Mapping[str, int]) -> dict:
    """Samples, reader samples, and the share of reader stacks that reach the thread's start."""
    total = sum(folded.values())
    reader = {k: v for k, v in folded.items() if k.startswith(perf.READER_ROOT + ";")}
    n = sum(reader.values())
    whole = sum(v for k, v in reader.items()
                if k.split(";")[1].removesuffix(perf.SYSLIB_TAG) in perf.THREAD_ROOTS)
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

