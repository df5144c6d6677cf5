#include "rxfs.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "mmap.h"
#include "testhooks.h"

namespace rxlab {

using rocksdb::FileOptions;
using rocksdb::FSRandomAccessFile;
using rocksdb::FSReadRequest;
using rocksdb::FSSequentialFile;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

std::atomic<bool> g_rocksdb_io_uring_enable{false};

IOStatus ErrnoStatus(const std::string& what, const std::string& file, int err) {
  std::string msg = what + " " + file + ": " + strerror(err);
  if (err == ENOSPC) return IOStatus::NoSpace(msg);
  if (err == ENOENT) return IOStatus::PathNotFound(msg);
  return IOStatus::IOError(msg);
}

namespace {

constexpr size_t kAlign = 4096;

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
size_t LogicalBlockSize(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return kAlign;
  static std::mutex mu;
  static std::unordered_map<dev_t, size_t> cache;
  std::lock_guard<std::mutex> l(mu);
  auto it = cache.find(st.st_dev);
  if (it != cache.end()) return it->second;
  size_t size = kAlign;
  std::string base = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                     std::to_string(minor(st.st_dev));
  // A partition has no queue/ of its own: its disk's is one level up.
  for (const char* q : {"/queue/logical_block_size", "/../queue/logical_block_size"}) {
    FILE* f = fopen((base + q).c_str(), "r");
    if (!f) continue;
    unsigned long v = 0;
    if (fscanf(f, "%lu", &v) == 1 && v >= 512 && (v & (v - 1)) == 0) size = v;
    fclose(f);
    break;
  }
  cache[st.st_dev] = size;
  return size;
}

}  // namespace

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
    if (hot->iopoll && !direct) {
      // Polled rings take O_DIRECT only: buffered files (WAL, MANIFEST) read
      // and write with pread/pwrite.
      if (!buffered) buffered = FindEngine("posix")->create(*cfg, counters.get(), &error);
      return buffered.get();
    }
    if (!sync) sync = def->create(*cfg, counters.get(), &error);
    return sync.get();
  }
  // Buffered writes through io_uring are punted to kernel workers on ext4
  // (measured: 55 us per WAL append against 1.6 us with pwrite), so unless
  // buffered_writes=engine they use pwrite; O_DIRECT writes stay on the engine.
  Engine* WriteEngine(Engine* e, bool direct) {
    if (direct || !hot->buffered_pwrite || e->synchronous()) return e;
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
      // EAGAIN from a saturated device can repeat; give up after many.
      if (++j->retries < 10000) return false;
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
    // repeat it. A delay needs the start for its deadline.
    const bool syscall_timed = e->synchronous() && hot->delay_us <= 0 && counters->enabled;
    uint64_t syscall_ns = 0;
    if (!syscall_timed) j->start_ns = MonoNs();
    if (j->io.op == Op::kRead) j->deadline_ns = Deadline(j->start_ns);
    IoReq* out = nullptr;
    for (;;) {
      QueueResult q = e->Queue(&j->io);
      if (q == QueueResult::kBusy) {  // ring shared with async reads
        if (j->start_ns == 0) j->start_ns = MonoNs();
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

  // Run jobs to completion on `e`: every one is queued before any is waited
  // for (up to the engine's depth), so MultiRead has real queue depth.
  int RunJobs(Engine* e, Job** jobs, int n) {
    std::deque<Job*> ready(jobs, jobs + n);
    std::vector<Job*> held;
    std::vector<IoReq*> out(static_cast<size_t>(std::max(e->Depth(), 1)));
    int inflight = 0, remaining = n;
    uint64_t max_inflight = 0;

    auto complete = [&](Job* j) {
      if (!OnAttempt(j)) {
        j->Arm();
        ready.push_back(j);
        return;
      }
      if (j->deadline_ns && MonoNs() < j->deadline_ns) {
        counters->Add(kEv_delayed);
        held.push_back(j);
        return;
      }
      Finish(j);
      remaining--;
    };
    auto release_held = [&](uint64_t now) {
      for (size_t i = 0; i < held.size();) {
        if (held[i]->deadline_ns <= now) {
          Finish(held[i]);
          remaining--;
          held[i] = held.back();
          held.pop_back();
        } else {
          i++;
        }
      }
    };

    while (remaining > 0) {
      bool queued = false;
      while (!ready.empty()) {
        Job* j = ready.front();
        if (j->start_ns == 0) {
          j->start_ns = MonoNs();
          if (j->io.op == Op::kRead) j->deadline_ns = Deadline(j->start_ns);
        }
        QueueResult q = e->Queue(&j->io);
        if (q == QueueResult::kBusy) break;
        ready.pop_front();
        if (q == QueueResult::kCompleted) {
          max_inflight = std::max<uint64_t>(max_inflight, 1);
          complete(j);
          // A synchronous engine's delay is served now, as a slow pread
          // would block the caller.
          if (!held.empty() && e->synchronous()) {
            uint64_t first = held.front()->deadline_ns;
            for (Job* h : held) first = std::min(first, h->deadline_ns);
            WaitUntil(first, spin_ns());
            release_held(MonoNs());
          }
        } else {
          inflight++;
          queued = true;
        }
      }
      if (static_cast<uint64_t>(inflight) > max_inflight) max_inflight = static_cast<uint64_t>(inflight);
      if (remaining == 0) break;
      // With everything submitted and no deadline pending, nothing can be
      // done before the whole batch is back: wait for all of it in one
      // system call (io_uring_submit_and_wait / io_getevents min_nr).
      bool wait_all = held.empty() && ready.empty();
      if (queued) {
        int rc = e->Commit(held.empty() ? (wait_all ? inflight : 1) : 0);
        if (rc < 0) return rc;
      }
      if (inflight > 0) {
        int64_t timeout = -1;
        if (!held.empty()) {
          uint64_t first = held.front()->deadline_ns;
          for (Job* h : held) first = std::min(first, h->deadline_ns);
          uint64_t now = MonoNs();
          timeout = first > now ? static_cast<int64_t>(first - now) : 0;
        }
        int got = e->Reap(wait_all ? inflight : 1, inflight, out.data(), timeout);
        if (got < 0 && got != -ETIME) return got;
        for (int k = 0; k < got; k++) {
          inflight--;
          complete(static_cast<Job*>(out[k]->job));
        }
      } else if (!held.empty() && ready.empty()) {
        uint64_t first = held.front()->deadline_ns;
        for (Job* h : held) first = std::min(first, h->deadline_ns);
        WaitUntil(first, spin_ns());
      }
      release_held(MonoNs());
    }
    counters->Max(kEv_max_inflight, max_inflight);
    return 0;
  }
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

namespace {

// Per-thread map from file-system id to this thread's state. The state is
// owned by the file system's registry; at thread exit the entry is removed
// (closing the thread's rings), its counters stay for aggregation.
struct TlsStates {
  std::unordered_map<uint64_t, std::weak_ptr<ThreadState>> map;
  ~TlsStates() {
    for (auto& [id, w] : map) {
      auto s = w.lock();
      if (!s) continue;
      auto r = s->reg.lock();
      if (!r) continue;
      std::lock_guard<std::mutex> l(r->mu);
      r->states.erase(std::remove(r->states.begin(), r->states.end(), s), r->states.end());
    }
  }
};
thread_local TlsStates t_states;
// The file system this thread used last and its state there: what every read
// asks first. Plain values, so the common case is a TLS load without
// TlsStates's first-use guard (it has a destructor).
thread_local uint64_t t_last_id = 0;
thread_local ThreadState* t_last = nullptr;

std::atomic<uint64_t> g_next_fs_id{1};
std::mutex g_live_mu;
std::vector<std::weak_ptr<RxFileSystem>> g_live;

}  // namespace

RXLAB_HOT ThreadState* RxFileSystem::State() {
  if (__builtin_expect(t_last_id == id_, 1)) return t_last;
  auto it = t_states.map.find(id_);
  std::shared_ptr<ThreadState> s = it == t_states.map.end() ? nullptr : it->second.lock();
  if (!s) {
    s = std::make_shared<ThreadState>();
    s->reg = reg_;
    s->cfg = &cfg_;
    s->hot = &hot_;
    s->def = def_;
    s->counters = std::make_shared<ThreadCounters>();
    s->counters->enabled = cfg_.Bool("counters");
    s->rng = static_cast<uint64_t>(cfg_.Int("fault_seed")) * 0x9E3779B97F4A7C15ull +
             static_cast<uint64_t>(gettid()) + 1;
    if (cfg_.Int("delay_us") > 0) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    {
      std::lock_guard<std::mutex> l(reg_->mu);
      reg_->states.push_back(s);
      reg_->counters.push_back(s->counters);
      reg_->threads_seen++;
    }
    // Drop entries of file systems that are gone.
    for (auto i = t_states.map.begin(); i != t_states.map.end();)
      i = i->second.expired() ? t_states.map.erase(i) : std::next(i);
    t_states.map[id_] = s;
  }
  t_last_id = id_;
  t_last = s.get();
  return s.get();
}

ThreadCounters* RxFileSystem::LocalCounters() { return State()->counters.get(); }

// ------------------------------------------------------------ files

namespace {

class RxRandomAccessFile final : public FSRandomAccessFile {
 public:
  RxRandomAccessFile(RxFileSystem* fs, std::string name, int fd, bool direct)
      : fs_(fs),
        name_(std::move(name)),
        fd_(fd),
        direct_(direct),
        faults_(fs->FaultsApply(name_)),
        logical_(direct ? LogicalBlockSize(fd) : kAlign),
        align_(direct ? fs->DirectAlignment(fd) : kAlign),
        learning_(direct && fs->AutoPageAlign() && align_.load() < kAlign) {
    slot_ = fs_->AllocSlot(&file_id_);
  }
  ~RxRandomAccessFile() override {
    fs_->FreeSlot(slot_, file_id_);
    close(fd_);
  }

  RXLAB_HOT IOStatus Read(uint64_t offset, size_t n, const IOOptions&, Slice* result, char* scratch,
                          IODebugContext*) const override {
    ThreadState* ts = fs_->State();
    Engine* e = ts->SyncEngine(direct_);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    Job j;
    Prep(&j, offset, n, scratch);
    int rc = ts->RunOne(e, &j);
    if (rc < 0) return ErrnoStatus("read", name_, -rc);
    if (j.err) {
      *result = Slice(scratch, 0);
      return ErrnoStatus("read", name_, static_cast<int>(-j.err));
    }
    *result = Slice(scratch, j.done);
    return IOStatus::OK();
  }

  IOStatus MultiRead(FSReadRequest* reqs, size_t num, const IOOptions&,
                     IODebugContext*) override {
    ThreadState* ts = fs_->State();
    Engine* e = ts->SyncEngine(direct_);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    ts->counters->Add(kEv_multireads);
    ts->counters->Add(kEv_multiread_reqs, num);
    std::vector<Job> jobs(num);
    std::vector<Job*> ptrs(num);
    for (size_t i = 0; i < num; i++) {
      Prep(&jobs[i], reqs[i].offset, reqs[i].len, reqs[i].scratch);
      ptrs[i] = &jobs[i];
    }
    int rc = ts->RunJobs(e, ptrs.data(), static_cast<int>(num));
    if (rc < 0) return ErrnoStatus("multiread", name_, -rc);
    for (size_t i = 0; i < num; i++) {
      reqs[i].result = Slice(reqs[i].scratch, jobs[i].err ? 0 : jobs[i].done);
      reqs[i].status = jobs[i].err ? ErrnoStatus("read", name_, static_cast<int>(-jobs[i].err))
                                   : IOStatus::OK();
    }
    return IOStatus::OK();
  }

  IOStatus ReadAsync(FSReadRequest& req, const IOOptions&, AsyncCallback cb, void* cb_arg,
                     void** io_handle, rocksdb::IOHandleDeleter* del_fn,
                     IODebugContext*) override {
    ThreadState* ts = fs_->State();
    Engine* e = direct_ || !fs_->hot().iopoll ? ts->AsyncEngine() : ts->SyncEngine(false);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    ts->counters->Add(kEv_read_async);
    auto* h = new AsyncHandle;
    h->cb = std::move(cb);
    h->cb_arg = cb_arg;
    h->ts = ts;
    Prep(&h->job, req.offset, req.len, req.scratch);
    h->job.handle = h;
    *io_handle = h;
    *del_fn = [](void* p) { delete static_cast<AsyncHandle*>(p); };
    if (e->synchronous()) {
      // A synchronous engine reads now (serving any delay now); the
      // callback is delivered by Poll, as for the others.
      Job* p = &h->job;
      int rc = ts->RunJobs(e, &p, 1);
      if (rc < 0) h->job.err = rc;
      h->job.finished = true;
      ts->counters->Add(kEv_async_completed);
      return IOStatus::OK();
    }
    h->job.start_ns = MonoNs();
    h->job.deadline_ns = ts->Deadline(h->job.start_ns);
    for (;;) {
      QueueResult q = e->Queue(&h->job.io);
      if (q == QueueResult::kQueued) break;
      // Ring full of earlier async reads: let Poll's machinery make room.
      PumpAsync(ts, e, true);
    }
    h->in_engine = true;
    ts->async_inflight.push_back(h);
    int rc = e->Commit(0);
    if (rc < 0) return ErrnoStatus("read_async submit", name_, -rc);
    return IOStatus::OK();
  }

  IOStatus Prefetch(uint64_t offset, size_t n, const IOOptions&, IODebugContext*) override {
    if (direct_) return IOStatus::OK();
    ThreadState* ts = fs_->State();
    SyscallTimer t(ts->counters.get(), kSys_readahead);
    if (readahead(fd_, static_cast<off64_t>(offset), n) != 0)
      return ErrnoStatus("readahead", name_, errno);
    return IOStatus::OK();
  }

  void Hint(AccessPattern pattern) override {
    if (direct_) return;
    int advice = POSIX_FADV_NORMAL;
    switch (pattern) {
      case kNormal: advice = POSIX_FADV_NORMAL; break;
      case kRandom: advice = POSIX_FADV_RANDOM; break;
      case kSequential: advice = POSIX_FADV_SEQUENTIAL; break;
      case kWillNeed: advice = POSIX_FADV_WILLNEED; break;
      case kWontNeed: advice = POSIX_FADV_DONTNEED; break;
    }
    SyscallTimer t(fs_->State()->counters.get(), kSys_fadvise64);
    posix_fadvise(fd_, 0, 0, advice);
  }

  IOStatus InvalidateCache(size_t offset, size_t length) override {
    if (direct_) return IOStatus::OK();
    SyscallTimer t(fs_->State()->counters.get(), kSys_fadvise64);
    int r = posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                          POSIX_FADV_DONTNEED);
    return r == 0 ? IOStatus::OK() : ErrnoStatus("fadvise", name_, r);
  }

  RXLAB_HOT bool use_direct_io() const override { return direct_; }
  RXLAB_HOT size_t GetRequiredBufferAlignment() const override {
    return align_.load(std::memory_order_relaxed);
  }

  // Reap completions of this thread's async ring; finished reads get their
  // callback unless aborted. block: wait for at least one event.
  static void PumpAsync(ThreadState* ts, Engine* e, bool block);

 private:
  RXLAB_HOT void Prep(Job* j, uint64_t off, size_t n, char* buf) const {
    j->Init(Op::kRead, fd_, slot_, file_id_, off, n, buf);
    j->direct = direct_;
    j->align = logical_;  // what the kernel requires of a resubmitted remainder
    j->faults = faults_;
    if (learning_.load(std::memory_order_relaxed)) Learn(off);
  }

  // buffer_align=auto. RocksDB allocates an O_DIRECT read's buffer with the
  // alignment the file asks (the logical block size, 512 here), so whether an
  // 8 KiB buffer spans 2 pages or 3 is up to malloc, process by process, and
  // the third page costs every read (here 5-10% fewer reads per second, in
  // bench-backends' posix against posix?buffer_align=0). Asking a page would
  // also round every read's offset and end to a page, reading more for blocks
  // that are not page-aligned. So a file asks a page only once its reads show
  // that this costs nothing: kPageStreak reads in a row at page offsets, as
  // every data block of a block_align SST is (otherwise 1 in 8 is). RocksDB
  // reads the alignment afresh on each read, and any page multiple is still
  // a multiple of the logical block size, so switching mid-life is safe.
  static constexpr int kPageStreak = 16;
  void Learn(uint64_t off) const {
    if (off % kAlign != 0) {
      streak_.store(0, std::memory_order_relaxed);
      return;
    }
    if (streak_.fetch_add(1, std::memory_order_relaxed) + 1 < kPageStreak) return;
    if (learning_.exchange(false)) {
      align_.store(kAlign, std::memory_order_relaxed);
      fs_->State()->counters->Add(kEv_page_aligned_files);
    }
  }

  RxFileSystem* fs_;
  std::string name_;
  int fd_;
  bool direct_;
  bool faults_;
  size_t logical_;
  mutable std::atomic<size_t> align_;
  mutable std::atomic<bool> learning_;
  mutable std::atomic<int> streak_{0};
  int slot_ = -1;
  uint64_t file_id_ = 0;
};

void DeliverAsync(ThreadState* ts, AsyncHandle* h) {
  h->job.finished = true;
  if (h->aborted) return;
  ts->counters->Add(kEv_async_completed);
  if (h->job.io.op == Op::kRead && !h->job.err) {
    ts->counters->Add(kEv_reads);
    ts->counters->Add(kEv_read_bytes, h->job.done);
    if (ts->counters->enabled) ts->counters->read_latency.Add(MonoNs() - h->job.start_ns);
  }
}

void RxRandomAccessFile::PumpAsync(ThreadState* ts, Engine* e, bool block) {
  IoReq* out[64];
  int64_t timeout = block ? -1 : 0;
  if (!ts->async_held.empty()) {
    uint64_t first = UINT64_MAX;
    for (AsyncHandle* h : ts->async_held) first = std::min(first, h->job.deadline_ns);
    uint64_t now = MonoNs();
    timeout = first > now ? static_cast<int64_t>(first - now) : 0;
  }
  bool any_inflight = false;
  for (AsyncHandle* h : ts->async_inflight) any_inflight |= h->in_engine;
  int got = 0;
  if (any_inflight) {
    got = e->Reap(block ? 1 : 0, 64, out, timeout);
    if (got < 0) got = 0;
  } else if (!ts->async_held.empty() && block) {
    uint64_t first = UINT64_MAX;
    for (AsyncHandle* h : ts->async_held) first = std::min(first, h->job.deadline_ns);
    WaitUntil(first, ts->spin_ns());
  }
  for (int k = 0; k < got; k++) {
    auto* h = static_cast<AsyncHandle*>(static_cast<Job*>(out[k]->job)->handle);
    if (!h->aborted && !ts->OnAttempt(&h->job)) {
      h->job.Arm();  // retry or remainder of a short read
      while (e->Queue(&h->job.io) != QueueResult::kQueued) e->Commit(0);
      e->Commit(0);
      continue;
    }
    if (h->aborted && h->job.io.res < 0 && h->job.err == 0) h->job.err = h->job.io.res;
    h->in_engine = false;
    ts->async_inflight.erase(std::find(ts->async_inflight.begin(), ts->async_inflight.end(), h));
    if (!h->aborted && h->job.deadline_ns && MonoNs() < h->job.deadline_ns) {
      ts->counters->Add(kEv_delayed);
      ts->async_held.push_back(h);
    } else {
      DeliverAsync(ts, h);
    }
  }
  uint64_t now = MonoNs();
  for (size_t i = 0; i < ts->async_held.size();) {
    AsyncHandle* h = ts->async_held[i];
    if (h->aborted || h->job.deadline_ns <= now) {
      ts->async_held[i] = ts->async_held.back();
      ts->async_held.pop_back();
      DeliverAsync(ts, h);
    } else {
      i++;
    }
  }
}

class RxSequentialFile final : public FSSequentialFile {
 public:
  RxSequentialFile(RxFileSystem* fs, std::string name, int fd, bool direct)
      : fs_(fs), name_(std::move(name)), fd_(fd), direct_(direct),
        align_(direct ? fs->DirectAlignment(fd) : kAlign) {}
  ~RxSequentialFile() override { close(fd_); }

  IOStatus Read(size_t n, const IOOptions& o, Slice* result, char* scratch,
                IODebugContext* dbg) override {
    IOStatus s = PositionedRead(pos_, n, o, result, scratch, dbg);
    if (s.ok()) pos_ += result->size();
    return s;
  }
  IOStatus PositionedRead(uint64_t offset, size_t n, const IOOptions&, Slice* result,
                          char* scratch, IODebugContext*) override {
    ThreadState* ts = fs_->State();
    Engine* e = ts->SyncEngine(direct_);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    Job j;
    j.Init(Op::kRead, fd_, -1, 0, offset, n, scratch);
    j.direct = direct_;
    j.align = align_;
    int rc = ts->RunOne(e, &j);
    if (rc < 0) return ErrnoStatus("read", name_, -rc);
    if (j.err) return ErrnoStatus("read", name_, static_cast<int>(-j.err));
    *result = Slice(scratch, j.done);
    return IOStatus::OK();
  }
  IOStatus Skip(uint64_t n) override {
    pos_ += n;
    return IOStatus::OK();
  }
  IOStatus InvalidateCache(size_t offset, size_t length) override {
    if (direct_) return IOStatus::OK();
    SyscallTimer t(fs_->State()->counters.get(), kSys_fadvise64);
    int r = posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                          POSIX_FADV_DONTNEED);
    return r == 0 ? IOStatus::OK() : ErrnoStatus("fadvise", name_, r);
  }
  bool use_direct_io() const override { return direct_; }
  size_t GetRequiredBufferAlignment() const override { return align_; }

 private:
  RxFileSystem* fs_;
  std::string name_;
  int fd_;
  bool direct_;
  size_t align_;
  uint64_t pos_ = 0;
};

// Writable file. With powerloss=1 the bytes not yet made durable stay in
// `pending_` (a contiguous range starting at pending_base_) and reach the
// file only at Sync/Fsync/RangeSync/Close: a SIGKILL loses them, as a power
// cut would lose what sat in the page cache.
class RxWritableFile final : public FSWritableFile {
 public:
  RxWritableFile(RxFileSystem* fs, std::string name, int fd, bool direct, uint64_t size,
                 const FileOptions& o)
      : FSWritableFile(o),
        fs_(fs),
        name_(std::move(name)),
        fd_(fd),
        direct_(direct),
        size_(size),
        powerloss_(fs->config().Bool("powerloss")),
        allow_fallocate_(o.allow_fallocate),
        keep_size_(o.fallocate_with_keep_size),
        align_(direct ? fs->DirectAlignment(fd) : kAlign),
        pending_base_(size) {}
  ~RxWritableFile() override {
    if (fd_ >= 0) Close(IOOptions(), nullptr).PermitUncheckedError();
  }

  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    return PositionedAppend(data, size_, o, dbg);
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const rocksdb::DataVerificationInfo&,
                  IODebugContext* dbg) override {
    return Append(data, o, dbg);
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions&,
                            IODebugContext*) override {
    IOStatus s;
    if (!fs_->CheckEnospc(data.size(), &s)) return s;
    if (powerloss_) {
      Hold(offset, data.data(), data.size());
    } else {
      s = WriteAt(offset, data.data(), data.size());
      if (!s.ok()) return s;
    }
    size_ = offset + data.size();
    return IOStatus::OK();
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            const rocksdb::DataVerificationInfo&, IODebugContext* dbg) override {
    return PositionedAppend(data, offset, o, dbg);
  }

  IOStatus Truncate(uint64_t size, const IOOptions&, IODebugContext*) override {
    if (powerloss_ && size >= pending_base_) {
      if (pending_.size() > size - pending_base_) pending_.resize(size - pending_base_);
      truncate_to_ = size;
    } else {
      if (powerloss_) {
        pending_.clear();
        pending_base_ = size;
      }
      SyscallTimer t(fs_->State()->counters.get(), kSys_ftruncate);
      if (ftruncate(fd_, static_cast<off_t>(size)) != 0) return ErrnoStatus("ftruncate", name_, errno);
    }
    size_ = size;
    return IOStatus::OK();
  }

  IOStatus Close(const IOOptions&, IODebugContext*) override {
    if (fd_ < 0) return IOStatus::OK();
    IOStatus s = MakeDurable(true);
    if (s.ok()) TrimPreallocation();
    if (close(fd_) != 0 && s.ok()) s = ErrnoStatus("close", name_, errno);
    fd_ = -1;
    return s;
  }
  IOStatus Flush(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  IOStatus Sync(const IOOptions&, IODebugContext*) override { return MakeDurable(true); }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override {
    IOStatus s = WritePending();
    if (!s.ok()) return s;
    SyscallTimer t(fs_->State()->counters.get(), kSys_fsync);
    if (fsync(fd_) != 0) return ErrnoStatus("fsync", name_, errno);
    return IOStatus::OK();
  }
  IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const IOOptions&,
                     IODebugContext*) override {
    if (powerloss_) return MakeDurable(true);
    SyscallTimer t(fs_->State()->counters.get(), kSys_sync_file_range);
    // strict_bytes_per_sync: from offset 0 and waiting for earlier writeback
    // first, so no more than bytes_per_sync is ever pending (as posix).
    int rc = strict_bytes_per_sync_
                 ? sync_file_range(fd_, 0, static_cast<off64_t>(offset + nbytes),
                                   SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE)
                 : sync_file_range(fd_, static_cast<off64_t>(offset), static_cast<off64_t>(nbytes),
                                   SYNC_FILE_RANGE_WRITE);
    if (rc != 0) return ErrnoStatus("sync_file_range", name_, errno);
    return IOStatus::OK();
  }
  // allow_fallocate=false bypasses preallocation; fallocate_with_keep_size
  // chooses whether it grows the file's size (then Close trims it).
  IOStatus Allocate(uint64_t offset, uint64_t len, const IOOptions&, IODebugContext*) override {
    if (!allow_fallocate_) return IOStatus::OK();
    SyscallTimer t(fs_->State()->counters.get(), kSys_fallocate);
    if (fallocate(fd_, keep_size_ ? FALLOC_FL_KEEP_SIZE : 0, static_cast<off_t>(offset),
                  static_cast<off_t>(len)) != 0 &&
        errno != EOPNOTSUPP)
      return ErrnoStatus("fallocate", name_, errno);
    return IOStatus::OK();
  }
  // A lifetime hint for the device (F_SET_RW_HINT), as posix passes it on.
  void SetWriteLifeTimeHint(rocksdb::Env::WriteLifeTimeHint hint) override {
    if (hint == write_hint_) return;
    uint64_t h = hint;
    if (fcntl(fd_, F_SET_RW_HINT, &h) == 0) write_hint_ = hint;
  }
  IOStatus InvalidateCache(size_t offset, size_t length) override {
    if (direct_) return IOStatus::OK();
    SyscallTimer t(fs_->State()->counters.get(), kSys_fadvise64);
    int r = posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                          POSIX_FADV_DONTNEED);
    return r == 0 ? IOStatus::OK() : ErrnoStatus("fadvise", name_, r);
  }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }
  bool IsSyncThreadSafe() const override { return !powerloss_; }
  bool use_direct_io() const override { return direct_; }
  size_t GetRequiredBufferAlignment() const override { return align_; }

 private:
  IOStatus WriteAt(uint64_t offset, const char* data, size_t n) {
    ThreadState* ts = fs_->State();
    bool aligned = !direct_ || (offset % align_ == 0 && n % align_ == 0 &&
                                reinterpret_cast<uintptr_t>(data) % align_ == 0);
    if (!aligned) return WriteBuffered(offset, data, n);
    Engine* e = ts->SyncEngine(direct_);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    Job j;
    j.Init(Op::kWrite, fd_, -1, 0, offset, n, const_cast<char*>(data));
    j.direct = direct_;
    int rc = ts->RunOne(ts->WriteEngine(e, direct_), &j);
    if (rc < 0) return ErrnoStatus("write", name_, -rc);
    if (j.err) return ErrnoStatus("write", name_, static_cast<int>(-j.err));
    if (j.done != n) return IOStatus::IOError("write " + name_ + ": short write");
    return IOStatus::OK();
  }
  // Unaligned bytes on an O_DIRECT file (powerloss flushes of a tail) go
  // through a second, buffered descriptor.
  IOStatus WriteBuffered(uint64_t offset, const char* data, size_t n) {
    if (buffered_fd_ < 0) {
      buffered_fd_ = open(name_.c_str(), O_WRONLY | O_CLOEXEC);
      if (buffered_fd_ < 0) return ErrnoStatus("open", name_, errno);
    }
    ThreadState* ts = fs_->State();
    Job j;
    j.Init(Op::kWrite, buffered_fd_, -1, 0, offset, n, const_cast<char*>(data));
    int rc = ts->RunOne(ts->WriteEngine(ts->SyncEngine(false), false), &j);
    if (rc < 0) return ErrnoStatus("write", name_, -rc);
    if (j.err) return ErrnoStatus("write", name_, static_cast<int>(-j.err));
    SyscallTimer t(ts->counters.get(), kSys_fdatasync);
    if (fdatasync(buffered_fd_) != 0) return ErrnoStatus("fdatasync", name_, errno);
    return IOStatus::OK();
  }

  // Preallocated space past the end (fallocate_with_keep_size=false grows
  // the size itself) is given back at close, as posix does: the size is set
  // to what was written and, where ftruncate left blocks past it, they are
  // punched out.
  void TrimPreallocation() {
    size_t block_size = 0, last_block = 0;
    GetPreallocationStatus(&block_size, &last_block);
    TestSyncPoint("PosixWritableFile::Close", &last_block);  // posix's point, posix's argument
    if (last_block == 0) return;
    SyscallTimer t(fs_->State()->counters.get(), kSys_ftruncate);
    if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) return;  // as posix: not an error
    struct stat st;
    if (allow_fallocate_ && fstat(fd_, &st) == 0 && st.st_blksize > 0 &&
        static_cast<uint64_t>((st.st_size + st.st_blksize - 1) / st.st_blksize) !=
            static_cast<uint64_t>(st.st_blocks / (st.st_blksize / 512)) &&
        block_size * last_block > size_)
      fallocate(fd_, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, static_cast<off_t>(size_),
                static_cast<off_t>(block_size * last_block - size_));
  }

  void Hold(uint64_t offset, const char* data, size_t n) {
    if (offset < pending_base_) {
      // Rewrite of bytes already durable (an O_DIRECT tail page): the
      // pending range now starts here.
      std::string tail;
      uint64_t end = offset + n;
      if (end < pending_base_ + pending_.size())
        tail = pending_.substr(static_cast<size_t>(end - pending_base_));
      pending_.assign(data, n);
      pending_ += tail;
      pending_base_ = offset;
      return;
    }
    size_t at = static_cast<size_t>(offset - pending_base_);
    if (pending_.size() < at + n) pending_.resize(at + n);
    memcpy(&pending_[at], data, n);
  }

  IOStatus WritePending() {
    if (!powerloss_ || (pending_.empty() && truncate_to_ == UINT64_MAX)) return IOStatus::OK();
    if (!pending_.empty()) {
      IOStatus s = direct_ ? WriteBuffered(pending_base_, pending_.data(), pending_.size())
                           : WriteAt(pending_base_, pending_.data(), pending_.size());
      if (!s.ok()) return s;
      pending_base_ += pending_.size();
      pending_.clear();
    }
    if (truncate_to_ != UINT64_MAX) {
      if (ftruncate(fd_, static_cast<off_t>(truncate_to_)) != 0)
        return ErrnoStatus("ftruncate", name_, errno);
      pending_base_ = truncate_to_;
      truncate_to_ = UINT64_MAX;
    }
    return IOStatus::OK();
  }

  IOStatus MakeDurable(bool data_only) {
    IOStatus s = WritePending();
    if (!s.ok()) return s;
    if (buffered_fd_ >= 0) {
      close(buffered_fd_);
      buffered_fd_ = -1;
    }
    if (data_only) {
      SyscallTimer t(fs_->State()->counters.get(), kSys_fdatasync);
      if (fdatasync(fd_) != 0) return ErrnoStatus("fdatasync", name_, errno);
    }
    return IOStatus::OK();
  }

  RxFileSystem* fs_;
  std::string name_;
  int fd_;
  int buffered_fd_ = -1;
  bool direct_;
  uint64_t size_;
  bool powerloss_;
  bool allow_fallocate_;
  bool keep_size_;
  size_t align_;
  std::string pending_;
  uint64_t pending_base_;
  uint64_t truncate_to_ = UINT64_MAX;
};

}  // namespace

// ------------------------------------------------------------ file system

std::shared_ptr<RxFileSystem> RxFileSystem::Create(const std::string& uri, std::string* err) {
  Config cfg;
  if (!ParseUri(uri, &cfg, err)) return nullptr;
  if (FindEngine(cfg.engine)->owns_fd_only) {
    *err = "engine '" + cfg.engine + "' moves the file offset, which RocksDB's threads share: it serves " +
           "rxlab fio only; use posix (pread/pwrite) for RocksDB";
    return nullptr;
  }
  auto fs = std::make_shared<RxFileSystem>(std::move(cfg));
  std::lock_guard<std::mutex> l(g_live_mu);
  g_live.erase(std::remove_if(g_live.begin(), g_live.end(), [](auto& w) { return w.expired(); }),
               g_live.end());
  g_live.push_back(fs);
  return fs;
}

std::vector<std::shared_ptr<RxFileSystem>> LiveFileSystems() {
  std::lock_guard<std::mutex> l(g_live_mu);
  std::vector<std::shared_ptr<RxFileSystem>> out;
  for (auto& w : g_live)
    if (auto s = w.lock()) out.push_back(s);
  return out;
}

RxFileSystem::RxFileSystem(Config cfg)
    : FileSystemWrapper(rocksdb::FileSystem::Default()),
      cfg_(std::move(cfg)),
      def_(FindEngine(cfg_.engine)),
      id_(g_next_fs_id.fetch_add(1)),
      reg_(std::make_shared<StateRegistry>()) {
  hot_.delay_us = cfg_.Int("delay_us");
  hot_.jitter_us = cfg_.Int("jitter_us");
  hot_.delay_spin_us = cfg_.Int("delay_spin_us");
  hot_.iopoll = cfg_.Bool("iopoll");
  hot_.buffered_pwrite = cfg_.Str("buffered_writes") == "pwrite";
  hot_.p_eio = cfg_.Double("fault_eio");
  hot_.p_eintr = cfg_.Double("fault_eintr");
  hot_.p_eagain = cfg_.Double("fault_eagain");
  hot_.p_short = cfg_.Double("fault_short_read");
  hot_.enospc_after = cfg_.Int("enospc_after");
  hot_.buffer_align =
      cfg_.Str("buffer_align") == "auto" ? kBufferAlignAuto : cfg_.Int("buffer_align");
  hot_.any_read_fault = hot_.p_eio > 0 || hot_.p_eintr > 0 || hot_.p_eagain > 0 || hot_.p_short > 0;
  if (cfg_.Bool("registered_files")) {
    int n = static_cast<int>(cfg_.Int("max_files"));
    for (int i = n - 1; i >= 0; i--) free_slots_.push_back(i);
  }
}

RxFileSystem::~RxFileSystem() {
  std::lock_guard<std::mutex> l(reg_->mu);
  reg_->states.clear();
}

size_t RxFileSystem::DirectAlignment(int fd) const {
  // RocksDB aligns O_DIRECT buffers, offsets and sizes to what a file asks. The
  // logical block size (512 on virtio) leaves a buffer's page offset to where
  // malloc put it, so an 8 KiB read spans 3 pages in 7 of 8 placements and 2 in
  // the eighth, from process to process; buffer_align fixes the placement.
  size_t logical = LogicalBlockSize(fd);
  if (hot_.buffer_align <= 0) return logical;  // 0, or auto (a file may ask a page later)
  return std::max(logical, static_cast<size_t>(hot_.buffer_align));
}

int RxFileSystem::AllocSlot(uint64_t* file_id) {
  *file_id = next_file_id_.fetch_add(1);
  std::lock_guard<std::mutex> l(slot_mu_);
  if (free_slots_.empty()) return -1;  // table full: this file goes unregistered
  int s = free_slots_.back();
  free_slots_.pop_back();
  return s;
}

void RxFileSystem::FreeSlot(int slot, uint64_t file_id) {
  if (slot < 0) return;
  {
    // Clear the slot in every thread's rings, so that the ring does not keep
    // the closed file open and a later file never reads through it.
    std::lock_guard<std::mutex> l(reg_->mu);
    for (auto& s : reg_->states) {
      if (s->sync) s->sync->SetFileSlot(slot, -1, file_id);
      if (s->async) s->async->SetFileSlot(slot, -1, file_id);
    }
  }
  std::lock_guard<std::mutex> l(slot_mu_);
  free_slots_.push_back(slot);
}

bool RxFileSystem::CheckEnospc(size_t n, IOStatus* s) {
  int64_t limit = hot_.enospc_after;
  if (limit < 0) return true;
  int64_t before = bytes_written_.fetch_add(static_cast<int64_t>(n));
  if (before + static_cast<int64_t>(n) <= limit) return true;
  *s = IOStatus::NoSpace("write: " + std::string(strerror(ENOSPC)) + " (rxlab enospc_after=" +
                         cfg_.Str("enospc_after") + ")");
  return false;
}

bool RxFileSystem::FaultsApply(const std::string& fname) const {
  const std::string& suffix = cfg_.Str("fault_files");
  return suffix.empty() ||
         (fname.size() >= suffix.size() && fname.compare(fname.size() - suffix.size(), suffix.size(), suffix) == 0);
}

namespace {
// set_fd_cloexec: whether a child process inherits the descriptor (as posix).
int OpenFlags(const FileOptions& o, bool direct) {
  return (o.set_fd_cloexec ? O_CLOEXEC : 0) | (direct ? O_DIRECT : 0);
}

IOStatus OpenError(const std::string& f, bool direct, int err) {
  if (direct && err == EINVAL)
    return IOStatus::NotSupported("open " + f + ": O_DIRECT is not supported by this file system");
  return ErrnoStatus("open", f, err);
}
}  // namespace

// As posix: use_mmap_reads wins over use_direct_reads (a mapped file is read
// through the page cache), for sequential files too, which are never mapped.
template <typename File, typename Base>
rocksdb::IOStatus RxFileSystem::OpenReadable(const std::string& f, const FileOptions& o,
                                             std::unique_ptr<Base>* r) {
  const bool direct = o.use_direct_reads && !o.use_mmap_reads;
  int fd = open(f.c_str(), O_RDONLY | OpenFlags(o, direct));
  if (fd < 0) return OpenError(f, direct, errno);
  r->reset(new File(this, f, fd, direct));
  return IOStatus::OK();
}

rocksdb::IOStatus RxFileSystem::NewSequentialFile(const std::string& f, const FileOptions& o,
                                                  std::unique_ptr<FSSequentialFile>* r,
                                                  IODebugContext*) {
  return OpenReadable<RxSequentialFile>(f, o, r);
}

// use_mmap_reads: the file is mapped and read by page faults (mmap.cc), on
// every engine, as RocksDB's posix file system does whenever it is set.
rocksdb::IOStatus RxFileSystem::NewRandomAccessFile(const std::string& f, const FileOptions& o,
                                                    std::unique_ptr<FSRandomAccessFile>* r,
                                                    IODebugContext*) {
  if (!o.use_mmap_reads) return OpenReadable<RxRandomAccessFile>(f, o, r);
  std::string why = MmapReadConflict(*this, f);
  if (!why.empty()) return IOStatus::NotSupported(why);
  int fd = open(f.c_str(), O_RDONLY | OpenFlags(o, false));
  if (fd < 0) return OpenError(f, false, errno);
  return NewMmapReadableFile(this, f, fd, r);
}

rocksdb::IOStatus RxFileSystem::OpenWritable(const std::string& f, const FileOptions& o,
                                             WriteOpen how, std::unique_ptr<FSWritableFile>* r) {
  // As posix: use_mmap_writes wins over use_direct_writes, and a mapping
  // needs the file open for reading too.
  const bool mmap = o.use_mmap_writes;
  const bool direct = o.use_direct_writes && !mmap;
  if (mmap) {
    std::string why = MmapWriteConflict(*this);
    if (!why.empty()) return IOStatus::NotSupported(why);
  }
  int flags = (mmap ? O_RDWR : O_WRONLY) | OpenFlags(o, direct);
  if (how == WriteOpen::kCreate) flags |= O_CREAT | O_TRUNC;
  if (how == WriteOpen::kReopen) flags |= O_CREAT;
  int fd = open(f.c_str(), flags, 0644);
  if (fd < 0) return OpenError(f, direct, errno);
  // The first byte written goes after a reopened file's contents, and over a
  // reused (recycled) file's from offset 0, as posix's write(2) on an
  // O_APPEND and a plain descriptor put them.
  uint64_t size = 0;
  if (how == WriteOpen::kReopen) {
    struct stat st;
    if (fstat(fd, &st) == 0) size = static_cast<uint64_t>(st.st_size);
  }
  if (mmap && MmapWritesSupported(fd, o)) {
    *r = NewMmapWritableFile(this, f, fd, size, o);
    return IOStatus::OK();
  }
  FileOptions plain = o;
  plain.use_mmap_writes = false;
  r->reset(new RxWritableFile(this, f, fd, direct, size, plain));
  return IOStatus::OK();
}

rocksdb::IOStatus RxFileSystem::NewWritableFile(const std::string& f, const FileOptions& o,
                                                std::unique_ptr<FSWritableFile>* r,
                                                IODebugContext*) {
  return OpenWritable(f, o, WriteOpen::kCreate, r);
}

rocksdb::IOStatus RxFileSystem::ReopenWritableFile(const std::string& f, const FileOptions& o,
                                                   std::unique_ptr<FSWritableFile>* r,
                                                   IODebugContext*) {
  return OpenWritable(f, o, WriteOpen::kReopen, r);
}

rocksdb::IOStatus RxFileSystem::ReuseWritableFile(const std::string& f, const std::string& old,
                                                  const FileOptions& o,
                                                  std::unique_ptr<FSWritableFile>* r,
                                                  IODebugContext* dbg) {
  IOStatus s = target()->RenameFile(old, f, IOOptions(), dbg);
  if (!s.ok()) return s;
  return OpenWritable(f, o, WriteOpen::kReuse, r);
}

rocksdb::IOStatus RxFileSystem::Poll(std::vector<void*>& io_handles, size_t /*min_completions*/) {
  ThreadState* ts = State();
  ts->counters->Add(kEv_polls);
  Engine* e = ts->AsyncEngine();
  for (void* p : io_handles) {
    auto* h = static_cast<AsyncHandle*>(p);
    if (h == nullptr) continue;
    while (!h->job.finished) RxRandomAccessFile::PumpAsync(ts, e, true);
    if (!h->callback_done && !h->aborted) {
      h->callback_done = true;
      FSReadRequest req;
      req.offset = h->job.offset;
      req.len = h->job.len;
      req.scratch = h->job.base;
      req.result = Slice(h->job.base, h->job.err ? 0 : h->job.done);
      req.status = h->job.err ? ErrnoStatus("read_async", "", static_cast<int>(-h->job.err))
                              : IOStatus::OK();
      h->cb(req, h->cb_arg);
    }
  }
  return IOStatus::OK();
}

rocksdb::IOStatus RxFileSystem::AbortIO(std::vector<void*>& io_handles) {
  ThreadState* ts = State();
  ts->counters->Add(kEv_aborts);
  Engine* e = ts->AsyncEngine();
  bool any = false;
  for (void* p : io_handles) {
    auto* h = static_cast<AsyncHandle*>(p);
    if (h == nullptr || h->job.finished) continue;
    h->aborted = true;
    if (h->in_engine) {
      e->Cancel(&h->job.io);
      any = true;
    }
  }
  if (any) e->Commit(0);
  for (void* p : io_handles) {
    auto* h = static_cast<AsyncHandle*>(p);
    if (h == nullptr) continue;
    while (!h->job.finished) RxRandomAccessFile::PumpAsync(ts, e, true);
    h->callback_done = true;  // an aborted read never calls back
  }
  return IOStatus::OK();
}

#if ROCKSDB_MAJOR >= 8
// Async reads only: RocksDB then sends ReadOptions::async_io scans to our
// ReadAsync. (No kFSBuffer: our reads land in RocksDB's buffers.)
RXLAB_HOT void RxFileSystem::SupportedOps(int64_t& supported_ops) {
  supported_ops = 1 << rocksdb::FSSupportedOps::kAsyncIO;
}
#endif

// ------------------------------------------------------------ counters

CounterSnapshot RxFileSystem::Counters() const {
  CounterSnapshot snap;
  LatencyHistogram hist;
  std::vector<uint64_t> ev(kNumEvents, 0), sc(kNumSys, 0), sn(kNumSys, 0);
  {
    std::lock_guard<std::mutex> l(reg_->mu);
    snap.threads = reg_->threads_seen;
    for (auto& c : reg_->counters) {
      for (int i = 0; i < kNumEvents; i++) {
        uint64_t v = c->events[i].load(std::memory_order_relaxed);
        ev[i] = i == kEv_max_inflight ? std::max(ev[i], v) : ev[i] + v;
      }
      for (int i = 0; i < kNumSys; i++) {
        sc[i] += c->sys_count[i].load(std::memory_order_relaxed);
        sn[i] += c->sys_ns[i].load(std::memory_order_relaxed);
      }
      hist.Merge(c->read_latency);
    }
  }
  for (int i = 0; i < kNumEvents; i++) snap.values[kEventNames[i]] = ev[i];
  for (int i = 0; i < kNumSys; i++) {
    snap.values[std::string("sys.") + kSysNames[i] + ".count"] = sc[i];
    snap.values[std::string("sys.") + kSysNames[i] + ".ns"] = sn[i];
  }
  for (int i = 0; i < LatencyHistogram::kBuckets; i++)
    if (uint64_t c = hist.bucket(i)) snap.read_latency.emplace_back(LatencyHistogram::Lower(i), c);
  return snap;
}

void RxFileSystem::ResetCounters() {
  std::lock_guard<std::mutex> l(reg_->mu);
  for (auto& c : reg_->counters) {
    for (auto& a : c->events) a.store(0, std::memory_order_relaxed);
    for (auto& a : c->sys_count) a.store(0, std::memory_order_relaxed);
    for (auto& a : c->sys_ns) a.store(0, std::memory_order_relaxed);
    c->read_latency.Reset();
  }
}

std::string CounterSnapshot::ToJson(const std::string& uri) const {
  std::string s = "{\"uri\": \"" + uri + "\", \"threads\": " + std::to_string(threads) +
                  ", \"counters\": {";
  bool first = true;
  for (const auto& [k, v] : values) {
    s += (first ? "\"" : ", \"") + k + "\": " + std::to_string(v);
    first = false;
  }
  s += "}, \"read_latency_ns\": [";
  first = true;
  for (const auto& [lo, c] : read_latency) {
    s += (first ? "[" : ", [") + std::to_string(lo) + ", " + std::to_string(c) + "]";
    first = false;
  }
  return s + "]}";
}

}  // namespace rxlab
