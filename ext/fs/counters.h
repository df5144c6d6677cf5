// Per-thread IO counters of the rxlab file systems. Each thread writes its
// own block (no sharing, no locked instructions); readers aggregate on
// demand. Syscalls are counted by the engines that issue them, so the counts
// can be checked against strace.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "histogram.h"

namespace rxlab {

// System calls of the data path, by name as strace prints them.
#define RXLAB_SYSCALLS(X) \
  X(pread64)              \
  X(preadv2)              \
  X(pwrite64)             \
  X(io_submit)            \
  X(io_getevents)         \
  X(io_uring_enter)       \
  X(fsync)                \
  X(fdatasync)            \
  X(sync_file_range)      \
  X(ftruncate)            \
  X(fallocate)            \
  X(readahead)            \
  X(fadvise64)           \
  X(lseek)               \
  X(read)                \
  X(write)               \
  X(mmap)                \
  X(munmap)              \
  X(msync)               \
  X(madvise)

enum Sys : int {
#define RXLAB_ENUM(n) kSys_##n,
  RXLAB_SYSCALLS(RXLAB_ENUM)
#undef RXLAB_ENUM
      kNumSys
};
extern const char* const kSysNames[kNumSys];

// Event counters that are not syscalls (adapter level).
// The first three are what every read updates (one cache line with the
// block's header, see ThreadCounters).
// mmap_*: reads and appends of memory-mapped files (RocksDB's allow_mmap_reads
// and allow_mmap_writes). They are memory copies and page faults, not system
// calls and not engine requests, so they are counted apart from reads/writes;
// the mappings' own system calls are sys.mmap, sys.munmap, sys.msync and
// sys.madvise.
#define RXLAB_EVENTS(X)                                                      \
  X(reads) X(read_bytes) X(max_inflight) X(writes) X(write_bytes)            \
  X(multireads) X(multiread_reqs) X(read_async) X(polls) X(aborts)           \
  X(async_completed) X(retries) X(short_reads) X(faults_injected) X(delayed) \
  X(fixed_buf_reads) X(nowait_queued)                                        \
  X(mmap_reads) X(mmap_read_bytes) X(mmap_writes) X(mmap_write_bytes)

enum Event : int {
#define RXLAB_ENUM(n) kEv_##n,
  RXLAB_EVENTS(RXLAB_ENUM)
#undef RXLAB_ENUM
      kNumEvents
};
extern const char* const kEventNames[kNumEvents];

inline uint64_t MonoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The clock of the counters' durations (system calls, read latency). Where
// the kernel's clocksource is the TSC (it has then checked that the TSC is
// invariant and synchronised across CPUs), a duration is two rdtsc: ~12 ns and
// no memory access. clock_gettime reads the vDSO's data page, and right after
// a blocking read that page and the call's code are cold: perf put 0.35 us
// per db_bench read in the two clock reads of each pread (2026-11-26), 1% of
// the CPU per query. Elsewhere it falls back to CLOCK_MONOTONIC. Deadlines
// (delay_us) always use MonoNs.
struct TickClock {
  bool tsc = false;
  uint64_t ns_per_tick_q32 = 1ull << 32;  // ns = ticks * this >> 32
};
extern const TickClock g_tick_clock;  // engines.cc: calibrated once at load;
                                      // ThreadCounters keeps a copy

// CPU seconds of the calling thread, user or system (getrusage RUSAGE_THREAD).
inline double ThreadCpuSeconds(bool user) {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  const timeval& t = user ? ru.ru_utime : ru.ru_stime;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
}

// Seconds the calling thread has spent runnable but waiting for a CPU: the
// scheduler's run_delay, second field of /proc/thread-self/schedstat. It is
// the part of a blocking read's latency that is neither CPU nor device: the
// wake-up after completion waits for a free core. -1 when the kernel lacks
// CONFIG_SCHED_INFO.
inline double ThreadRunDelaySeconds() {
  int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[128];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  char* end = nullptr;
  strtoull(buf, &end, 10);  // time on a CPU, ns
  if (end == buf) return -1;
  char* p = end;
  unsigned long long delay = strtoull(p, &end, 10);
  if (end == p) return -1;
  return static_cast<double>(delay) / 1e9;
}

// Count n events on the CPU the calling thread runs on now (sched_getcpu reads
// it from rseq: 4.1-4.5 ns per call on these VMs, glibc 2.36, against 80 us or
// more per query). Called when a blocking call returns, it says where
// the thread was woken: on the CPU that took the disk's interrupt, or on
// another one through an inter-processor wake-up that no CPU, run-queue or
// disk counter sees (the remote wake-up of rxlab.placement).
inline void CountCpu(std::vector<int64_t>& by_cpu, int64_t n) {
  int cpu = sched_getcpu();
  if (cpu < 0) return;
  if (static_cast<size_t>(cpu) >= by_cpu.size()) by_cpu.resize(static_cast<size_t>(cpu) + 1);
  by_cpu[static_cast<size_t>(cpu)] += n;
}

// fio's cpus_allowed_policy=split for worker `index`: pin the calling
// thread to the index-th CPU (round robin) of the process's allowed set.
// Unpinned, this VM's scheduler keeps two blocking readers on the vCPU that
// takes the disk's interrupt, where each waits ~20 us per read for the
// other. Returns the CPU, or -1 if affinity cannot be set.
inline int PinThreadSplit(int index) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  int n = CPU_COUNT(&allowed);
  if (n <= 0) return -1;
  int want = index % n;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed) || want-- > 0) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0 ? cpu : -1;
  }
  return -1;
}

// What a read touches comes first: after a blocking read every line and
// page of this block is likely cold, so a read's updates share as few as
// possible (the histogram's totals lead it; its buckets follow).
struct ThreadCounters {
  bool enabled = true;
  bool tsc = g_tick_clock.tsc;  // the clock's, copied: no global to load per read
  uint64_t ns_per_tick_q32 = g_tick_clock.ns_per_tick_q32;
  uint64_t last_syscall_ns = 0;  // duration of this thread's last timed system call
  uint32_t sampled_calls = 0;    // calls seen by SampledSyscallTimer: which one is timed next
  std::atomic<uint64_t> events[kNumEvents] = {};
  std::atomic<uint64_t> sys_count[kNumSys] = {};
  std::atomic<uint64_t> sys_ns[kNumSys] = {};
  LatencyHistogram read_latency;  // device read, submit to completion, ns

  uint64_t Ticks() const {
#if defined(__x86_64__)
    if (__builtin_expect(tsc, 1)) return __builtin_ia32_rdtsc();
#endif
    return MonoNs();
  }
  uint64_t NsSince(uint64_t t0) const {
    uint64_t t = Ticks();
    if (t <= t0) return 0;
    if (!tsc) return t - t0;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(t - t0) * ns_per_tick_q32) >> 32);
  }

  void Add(Event e, uint64_t d = 1) {
    if (!enabled) return;
    auto& a = events[e];
    a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  void Max(Event e, uint64_t v) {
    if (!enabled) return;
    if (v > events[e].load(std::memory_order_relaxed)) events[e].store(v, std::memory_order_relaxed);
  }
  void Syscall(Sys s, uint64_t ns) {
    auto& c = sys_count[s];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    auto& t = sys_ns[s];
    t.store(t.load(std::memory_order_relaxed) + ns, std::memory_order_relaxed);
    last_syscall_ns = ns;
  }
  // A call counted, its time not taken (SampledSyscallTimer), or taken and
  // standing for `every` calls.
  void SyscallSampled(Sys s, uint64_t ns, uint32_t every) {
    auto& c = sys_count[s];
    c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (!every) return;
    auto& t = sys_ns[s];
    t.store(t.load(std::memory_order_relaxed) + ns * every, std::memory_order_relaxed);
  }
};

// Times one system call into a counter block; free when counting is off.
class SyscallTimer {
 public:
  SyscallTimer(ThreadCounters* c, Sys s) : c_(c && c->enabled ? c : nullptr), s_(s) {
    if (c_) t0_ = c_->Ticks();
  }
  ~SyscallTimer() {
    if (c_) c_->Syscall(s_, c_->NsSince(t0_));
  }

 private:
  ThreadCounters* c_;
  Sys s_;
  uint64_t t0_ = 0;
};

// Counts every call and times one in kEvery, for the system calls that are
// many and cheap: a buffered append is a page-cache copy, once per WAL write,
// and two TSC reads around each are a share of a small write's CPU that a
// profile sees (docs/concepts/engines.md, the write path). A timed call
// stands for kEvery calls, so the time counted estimates the whole; the
// first call of a thread is timed, and its last kEvery - 1 calls may be
// counted in the estimate or left out of it.
class SampledSyscallTimer {
 public:
  static constexpr uint32_t kEvery = 8;
  SampledSyscallTimer(ThreadCounters* c, Sys s) : c_(c && c->enabled ? c : nullptr), s_(s) {
    if (c_ && c_->sampled_calls++ % kEvery == 0) {
      timed_ = true;
      t0_ = c_->Ticks();
    }
  }
  ~SampledSyscallTimer() {
    if (c_) c_->SyscallSampled(s_, timed_ ? c_->NsSince(t0_) : 0, timed_ ? kEvery : 0);
  }

 private:
  ThreadCounters* c_;
  Sys s_;
  bool timed_ = false;
  uint64_t t0_ = 0;
};

}  // namespace rxlab
