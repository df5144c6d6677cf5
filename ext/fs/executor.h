// The executor of the RocksDB adapter: one logical request (Job) carried to
// completion on an engine across short transfers and retried errors, and the
// per-thread state that owns each thread's engines and counters. RunOne is the
// one-request path (Read, a write), and Pread its rules for a read that one
// pread serves with nothing around it; RunJobs keeps a batch in flight
// together (MultiRead). Per-thread, so no lock is taken on the IO path.
#pragma once

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "rxfs.h"

namespace rxlab {

constexpr size_t kAlign = 4096;
// EINTR and EAGAIN are retried; EAGAIN from a saturated device can repeat, so
// an IO gives up after this many (RunOne, Pread and the file's own pwrite).
constexpr int kMaxRetries = 10000;

// One logical request, carried to completion across short transfers and
// retried errors.
struct Job {
  IoReq io;
  char* base = nullptr;
  uint64_t offset = 0;
  size_t len = 0;
  size_t done = 0;
  int64_t err = 0;
  bool direct = false;
  size_t align = kAlign;  // O_DIRECT granularity of the file's device
  bool faults = false;    // read-fault injection applies to this file
  int retries = 0;
  uint64_t start_ns = 0;
  uint64_t deadline_ns = 0;
  bool finished = false;
  void* handle = nullptr;  // the AsyncHandle of an async read

  void Init(Op op, int fd, int slot, uint64_t file_id, uint64_t off, size_t n, char* buf) {
    io = IoReq{};
    io.op = op;
    io.fd = fd;
    io.slot = slot;
    io.file_id = file_id;
    io.job = this;
    base = buf;
    offset = off;
    len = n;
    done = 0;
    err = 0;
    retries = 0;
    start_ns = 0;
    deadline_ns = 0;
    finished = false;
    Arm();
  }
  void Arm() {
    io.offset = offset + done;
    io.len = len - done;
    io.buf = base + done;
    io.res = 0;
  }
};

// The logical block size of the device holding fd (what O_DIRECT requires),
// as RocksDB's own posix file system reports it; 4096 if unknown.
size_t LogicalBlockSize(int fd);

// ------------------------------------------------------------ thread state

struct AsyncHandle;

struct ThreadState {
  std::weak_ptr<StateRegistry> reg;
  std::shared_ptr<ThreadCounters> counters;
  const Config* cfg = nullptr;
  const HotParams* hot = nullptr;
  const EngineDef* def = nullptr;
  std::unique_ptr<Engine> sync, async, buffered;
  std::string error;
  uint64_t rng = 0;
  // Async reads submitted and not yet finished (posted by ReadAsync).
  std::vector<AsyncHandle*> async_inflight;
  std::vector<AsyncHandle*> async_held;

  RXLAB_HOT Engine* SyncEngine(bool direct) {
    // Polled rings take O_DIRECT only: buffered files (WAL, MANIFEST) read
    // and write with pread/pwrite.
    if (hot->iopoll && !direct) return Posix();
    if (!sync) sync = def->create(*cfg, counters.get(), &error);
    return sync.get();
  }
  // The engine for a read RocksDB waits for (Read, a sequential file's
  // read). On a buffered file the page cache serves it inside the call, so
  // an asynchronous engine has nothing to overlap and adds its round trip:
  // libaio completes a buffered request inside io_submit and still needs
  // io_getevents, io_uring a request and a completion around io_uring_enter.
  // Such reads therefore use the posix engine (pread, through the executor:
  // faults, delays and counters as before) unless buffered_reads=engine.
  // MultiRead's batches and ReadAsync keep the engine: there requests do
  // overlap.
  RXLAB_HOT Engine* ReadEngine(bool direct) {
    return !direct && hot->buffered_pread ? Posix() : SyncEngine(direct);
  }
  // Whether a write goes through the engine. RocksDB writes a file one request
  // at a time and waits for each (WritableFileWriter), so an asynchronous
  // engine has nothing to overlap: its write is a pwrite's work plus a
  // submit/reap round trip (libaio's io_submit blocks for an O_DIRECT append
  // on ext4, then io_getevents collects it), and ext4 punts buffered io_uring
  // writes to kernel workers (55 us per WAL append against 1.6 us with
  // pwrite). Writes therefore use pwrite unless buffered_writes=engine or
  // direct_writes=engine, and a thread that only writes that way never sets
  // up a ring or an AIO context. The pwrite path is the file's own
  // (write_file.cc): no request, no engine.
  bool WritesThroughEngine(bool direct) const {
    return !(direct ? hot->direct_pwrite : hot->buffered_pwrite);
  }
  Engine* Posix() {
    if (!buffered) buffered = FindEngine("posix")->create(*cfg, counters.get(), &error);
    return buffered.get();
  }
  Engine* AsyncEngine() {
    if (!async) async = def->create(*cfg, counters.get(), &error);
    return async.get();
  }
  double Rand() {  // xorshift64*, per thread: no shared state on the hot path
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return static_cast<double>((rng * 2685821657736338717ull) >> 11) * (1.0 / 9007199254740992.0);
  }

  uint64_t spin_ns() const { return static_cast<uint64_t>(hot->delay_spin_us) * 1000; }
  uint64_t Deadline(uint64_t start) {
    int64_t d = hot->delay_us;
    if (d <= 0) return 0;
    int64_t j = hot->jitter_us;
    double us = static_cast<double>(d);
    if (j > 0) us += (Rand() * 2.0 - 1.0) * static_cast<double>(j);
    return start + static_cast<uint64_t>(us * 1000.0);
  }

  // Apply injected faults to a completed read attempt, as the kernel could
  // have returned them.
  RXLAB_HOT void InjectReadFault(Job* j) {
    if (!hot->any_read_fault || !j->faults || j->io.op != Op::kRead || j->io.res <= 0) return;
    double p;
    if ((p = hot->p_eio) > 0 && Rand() < p) {
      j->io.res = -EIO;
    } else if ((p = hot->p_eintr) > 0 && Rand() < p) {
      j->io.res = -EINTR;
    } else if ((p = hot->p_eagain) > 0 && Rand() < p) {
      j->io.res = -EAGAIN;
    } else if ((p = hot->p_short) > 0 && Rand() < p) {
      int64_t half = j->io.res / 2;
      if (j->direct) half -= half % static_cast<int64_t>(j->align);
      if (half <= 0) return;
      j->io.res = half;
    } else {
      return;
    }
    counters->Add(kEv_faults_injected);
  }

  // Account for one completed attempt. Returns true when the job is finished
  // (data complete, EOF or a final error); false when it must be queued again.
  RXLAB_HOT bool OnAttempt(Job* j) {
    InjectReadFault(j);
    int64_t res = j->io.res;
    if (res == -EINTR || res == -EAGAIN) {
      counters->Add(kEv_retries);
      if (++j->retries < kMaxRetries) return false;
      j->err = res;
      return true;
    }
    if (res < 0) {
      j->err = res;
      return true;
    }
    if (res == 0) return true;  // EOF
    j->done += static_cast<size_t>(res);
    if (j->done >= j->len) return true;
    if (j->io.op == Op::kRead) {
      // O_DIRECT: a transfer that is not a multiple of the block is EOF.
      if (j->direct && res % static_cast<int64_t>(j->align) != 0) return true;
      counters->Add(kEv_short_reads);
    }
    return false;
  }

  // latency_ns: the read's latency when the caller measured it (0: now - start).
  RXLAB_HOT void Finish(Job* j, uint64_t latency_ns = 0) {
    j->finished = true;
    if (j->io.op == Op::kRead) {
      counters->Add(kEv_reads);
      counters->Add(kEv_read_bytes, j->done);
      if (counters->enabled) counters->read_latency.Add(latency_ns ? latency_ns : MonoNs() - j->start_ns);
    } else {
      counters->Add(kEv_writes);
      counters->Add(kEv_write_bytes, j->done);
    }
  }

  // One request (Read, a write): the common case, without the batch
  // machinery's allocations.
  RXLAB_HOT int RunOne(Engine* e, Job* j) {
    // A synchronous engine's read is one timed system call (pread): its timer
    // is the read's latency, and two more clock reads per read would only
    // repeat it. A delay needs the start for its deadline; with the counters
    // off and no delay nothing reads it, and the clock is not read.
    const bool syscall_timed = e->synchronous() && hot->delay_us <= 0 && counters->enabled;
    uint64_t syscall_ns = 0;
    if (!syscall_timed && (counters->enabled || hot->delay_us > 0)) j->start_ns = MonoNs();
    if (j->io.op == Op::kRead) j->deadline_ns = Deadline(j->start_ns);
    IoReq* out = nullptr;
    for (;;) {
      QueueResult q = e->Queue(&j->io);
      if (q == QueueResult::kBusy) {  // ring shared with async reads
        return RunJobs(e, &j, 1);
      }
      if (q == QueueResult::kCompleted && syscall_timed) syscall_ns += counters->last_syscall_ns;
      if (q == QueueResult::kQueued) {
        counters->Max(kEv_max_inflight, 1);
        int rc = e->Commit(1);
        if (rc < 0) return rc;
        int got;
        while ((got = e->Reap(1, 1, &out, -1)) == 0) {
        }
        if (got < 0) return got;
      } else {
        counters->Max(kEv_max_inflight, 1);
      }
      if (OnAttempt(j)) break;
      j->Arm();
    }
    if (j->deadline_ns && MonoNs() < j->deadline_ns) {
      counters->Add(kEv_delayed);
      WaitUntil(j->deadline_ns, spin_ns());
    }
    Finish(j, syscall_timed ? std::max<uint64_t>(syscall_ns, 1) : 0);
    return 0;
  }

  // Whether a read RocksDB waits for can be one Pread: its engine's read is a
  // plain pread (posix; every engine's buffered reads, ReadEngine) and nothing
  // is applied around it (no delay, no injected fault on this file).
  RXLAB_HOT bool PlainRead(const Engine* e, bool file_faults) const {
    return e->plain_pread() && hot->delay_us <= 0 && !(file_faults && hot->any_read_fault);
  }

  // RunOne's rules (OnAttempt, Finish) for such a read, without a Job, an
  // engine call or the loop's set-up: a read from the page cache waits for
  // nothing, so what the adapter does around the call is all that separates
  // it from RocksDB's own file system (docs/findings/2026-12-07-plain-read.md).
  // Returns the bytes read (short only at EOF) or -errno; the read is counted
  // either way, as RunOne's Finish counts it.
  RXLAB_HOT int64_t Pread(int fd, char* buf, size_t n, uint64_t offset, bool direct, size_t align) {
    ThreadCounters* c = counters.get();
    size_t done = 0;
    uint64_t ns = 0;
    int64_t err = 0;
    int retries = 0;
    for (;;) {
      ssize_t r;
      {
        SyscallTimer t(c, kSys_pread64);
        r = pread(fd, buf + done, n - done, static_cast<off_t>(offset + done));
      }
      ns += c->last_syscall_ns;
      if (r < 0) {
        err = -errno;
        if (err != -EINTR && err != -EAGAIN) break;
        c->Add(kEv_retries);
        if (++retries < kMaxRetries) continue;
        break;
      }
      if (r == 0) break;  // EOF
      done += static_cast<size_t>(r);
      if (done >= n) break;
      // O_DIRECT: a transfer that is not a multiple of the block is EOF.
      if (direct && r % static_cast<ssize_t>(align) != 0) break;
      c->Add(kEv_short_reads);
    }
    CountRead(done, ns);
    return err ? err : static_cast<int64_t>(done);
  }

  // Finish's counts for a read the caller made itself in `ns` (Pread, PreadNowait).
  RXLAB_HOT void CountRead(size_t bytes, uint64_t ns) {
    ThreadCounters* c = counters.get();
    c->Max(kEv_max_inflight, 1);
    c->Add(kEv_reads);
    c->Add(kEv_read_bytes, bytes);
    if (c->enabled) c->read_latency.Add(std::max<uint64_t>(ns, 1));
  }

  // Whether a buffered request of a batch or an async read on engine `e` is
  // first tried with PreadNowait (buffered_batches=nowait). Only a queueing
  // engine whose requests the kernel keeps in flight together (io_uring) gains:
  // a request the page cache serves at once costs more through its ring (a
  // submission entry, io_uring's request set-up, a completion entry) than one
  // pread, and only the requests the cache cannot serve gain from the ring
  // (docs/findings/2026-12-07-nowait-batches.md). Not with a delay or injected
  // faults: those belong to the engine's requests.
  RXLAB_HOT bool NowaitFirst(const Engine* e, bool file_faults) const {
    return hot->buffered_nowait && !e->synchronous() && !e->buffered_in_submit() && hot->delay_us <= 0 &&
           !(file_faults && hot->any_read_fault);
  }

  // One preadv2(RWF_NOWAIT) of a buffered file: the bytes the page cache
  // holds from `offset` on, read now without waiting for the device (short:
  // the next page is not cached, or EOF; 0: EOF), or -EAGAIN when not even
  // the first page is, or -errno (EOPNOTSUPP: the file system cannot read
  // without waiting; ENOSYS before Linux 4.6). Counted as a system call only: the caller counts the
  // read (CountRead, or Finish once the engine has the rest).
  RXLAB_HOT int64_t PreadNowait(int fd, char* buf, size_t n, uint64_t offset) {
    iovec v{buf, n};
    ssize_t r;
    {
      SyscallTimer t(counters.get(), kSys_preadv2);
      r = preadv2(fd, &v, 1, static_cast<off_t>(offset), RWF_NOWAIT);
    }
    return r < 0 ? -errno : r;
  }

  // Run jobs to completion on `e`: every one is queued before any is waited
  // for (up to the engine's depth), so MultiRead has real queue depth (executor.cc).
  int RunJobs(Engine* e, Job** jobs, int n);
};

struct AsyncHandle {
  Job job;
  AsyncCallback cb;
  void* cb_arg = nullptr;
  ThreadState* ts = nullptr;
  bool in_engine = false;
  bool aborted = false;
  bool callback_done = false;
};

struct StateRegistry {
  std::mutex mu;
  std::vector<std::shared_ptr<ThreadState>> states;
  std::vector<std::shared_ptr<ThreadCounters>> counters;
  uint64_t threads_seen = 0;
};

}  // namespace rxlab
