"""The RocksDB wiki's asynchronous-IO page, run on this machine, the page's results beside.

The page (rocksdb-wiki-asynchronous-io.txt) measures two things with
db_bench on remote flash: MultiGet (multireadrandom, batch_size=8,
multiread_stride=40000, 4 threads) in three implementations (single-file, the
default; single-level and multi-level, async IO across files through C++
coroutines), and long scans (seekrandom, seek_nexts=65536) with and without
async prefetch. It prints micros/op and the P50/P95/P99 of
rocksdb.db.multiget.micros. This study is that, with what these builds can do:

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

Each step row records whether its reads overlapped (overlap.py) and never
says so when the counters do not show it.

Every difference the study reports is measured in turns (rxlab.core.turns_plan):
each turn runs every backend at every delay once and posix, the synchronous
read path and the base of every delay's comparisons, twice (the A/A control).
Each backend's MB/s per read step over posix's, and within a backend MultiGet
over the Get loop and async_io on over off, are ratios with a 95% interval
over turns, resolved to the target or said not to be (tables comparisons and
effects, the figures, the findings).

The reference configurations "default" and "default?io_uring=1" are
RocksDB's own posix file system: RocksDB uses io_uring for MultiRead and
ReadAsync only if the program defines RocksDbIOUringEnable() returning true.
rxlab's extension defines it (ext/module.cc) and answers what the backend
URI asked: false for "default" (MultiRead is a loop of pread, ReadAsync is
refused and the prefetch falls back to synchronous reads), true for
"default?io_uring=1" (what db_bench does by default, --io_uring_enabled=true).

params.py (Params, scale presets, what each backend is, what is compared),
study.py (the build, one turn's plan, one run, the tidy frame), overlap.py
(the verdict), tables.py, figures.py (a table and a drawing per figure),
findings.py.
"""
from rxlab.studies.async_io.result import AsyncIOResult
from rxlab.studies.async_io.study import AsyncIOStudy

STUDY = AsyncIOStudy()

__all__ = ["STUDY", "AsyncIOResult", "AsyncIOStudy"]
