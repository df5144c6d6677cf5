// rxlab's fio: reads (or writes) of `bs` bytes over a file through the same
// engines as RocksDB, numjobs threads each keeping iodepth requests in
// flight, measured the same way (latency histogram, per-thread CPU). It is
// the denominator of io.eff.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../fs/histogram.h"

namespace rxlab {

struct RawIoSpec {
  std::string filename;
  std::string engine_uri = "posix";  // an rxlab URI: posix, libaio, io_uring?...
  std::string rw = "randread";       // randread, read, randwrite, write
  size_t bs = 8192;
  // fio's blockalign: random offsets are multiples of this (0: bs). 512 with
  // bs=8704 reads like RocksDB without block_align: blocks that straddle pages.
  size_t blockalign = 0;
  uint64_t size = 0;                 // bytes of the file used (0: its size)
  bool direct = true;
  int iodepth = 1;
  int numjobs = 1;
  double runtime = 10;               // seconds
  uint64_t seed = 1;
  int batch_submit = 1;              // fio's iodepth_batch_submit
  // fio's iodepth_batch_complete_max (fio's default: 1). Reaping one
  // completion at a time and resubmitting its slot at once keeps the queue
  // full; reaping all that are ready resubmits them in a burst, and the
  // last slot of a burst of 32 sat idle for ~30 submit calls (measured at
  // qd32 libaio: 27 in flight by Little's law and 9% fewer IOPS than fio).
  int batch_complete = 1;
  // fio's thinktime and thinktime_spin (us): before each IO after the
  // first, the job spins for thinktime_spin, then sleeps for the rest of
  // thinktime. Spinning stands in for the CPU work a query does between
  // reads, so one client's CPU load can be set apart from its IO.
  double thinktime_us = 0;
  double thinktime_spin_us = 0;
  bool cpus_split = false;           // fio's cpus_allowed_policy=split
};

struct RawIoJob {
  uint64_t ios = 0, bytes = 0;
  double seconds = 0;
  double cpu_user_s = 0, cpu_sys_s = 0;  // this thread's (RUSAGE_THREAD)
  double run_delay_s = -1;               // its time waiting for a CPU (-1: unknown)
  uint64_t lat_count = 0, lat_sum_ns = 0, lat_max_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> lat_buckets;  // (lower ns, count)
  uint64_t syscalls = 0;
  int cpu = -1;                          // the CPU it was pinned to (cpus_split), else -1
  std::vector<int64_t> ios_by_cpu;       // completed IOs by the CPU the job was on when it reaped them
};

struct RawIoResult {
  std::vector<RawIoJob> jobs;
  double start_mono_s = 0, wall_s = 0;
};

// Throws InputError on a bad spec, DbError on an IO error.
RawIoResult RunRawIo(const RawIoSpec& spec);

}  // namespace rxlab
