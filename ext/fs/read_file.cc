// Random-access reads: Read (one request), MultiRead (a batch kept in flight
// together), ReadAsync with the file system's Poll and AbortIO.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>

#include "executor.h"
#include "files.h"

namespace rxlab {

namespace {

// A MultiRead batch up to this many requests keeps its bookkeeping on the
// stack (RocksDB's MultiGet batches are 32 keys by default).
constexpr size_t kStackBatch = 64;

class RxRandomAccessFile final : public FSRandomAccessFile {
 public:
  RxRandomAccessFile(RxFileSystem* fs, std::string name, int fd, bool direct)
      : fs_(fs),
        name_(std::move(name)),
        fd_(fd),
        direct_(direct),
        faults_(fs->FaultsApply(name_)),
        logical_(direct ? LogicalBlockSize(fd) : kAlign),
        align_(direct ? fs->DirectAlignment(fd) : kAlign) {
    slot_ = fs_->AllocSlot(&file_id_);
  }
  ~RxRandomAccessFile() override {
    fs_->FreeSlot(slot_, file_id_);
    close(fd_);
  }

  RXLAB_HOT IOStatus Read(uint64_t offset, size_t n, const IOOptions&, Slice* result, char* scratch,
                          IODebugContext*) const override {
    ThreadState* ts = fs_->State();
    Engine* e = ts->ReadEngine(direct_);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    if (ts->PlainRead(e, faults_)) {
      int64_t got = ts->Pread(fd_, scratch, n, offset, direct_, logical_);
      *result = Slice(scratch, got < 0 ? 0 : static_cast<size_t>(got));
      return got < 0 ? ErrnoStatus("read", name_, static_cast<int>(-got)) : IOStatus::OK();
    }
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
    // An engine that reads a buffered file inside io_submit (libaio) reads the
    // batch one request after another anyway, and adds its round trip to
    // each: the batch takes the path of the reads RocksDB waits for one at a
    // time (ReadEngine: pread, unless buffered_reads=engine).
    if (!direct_ && e->buffered_in_submit()) e = ts->ReadEngine(false);
    if (ts->PlainRead(e, faults_)) {
      // One pread per request, as the posix engine would make them, without
      // a Job or the executor's loop (ThreadState::Pread: its rules and counts).
      for (size_t i = 0; i < num; i++) {
        int64_t got = ts->Pread(fd_, reqs[i].scratch, reqs[i].len, reqs[i].offset, direct_, logical_);
        reqs[i].result = Slice(reqs[i].scratch, got < 0 ? 0 : static_cast<size_t>(got));
        reqs[i].status = got < 0 ? ErrnoStatus("read", name_, static_cast<int>(-got)) : IOStatus::OK();
      }
      return IOStatus::OK();
    }
    // What the page cache holds is read now (buffered_batches=nowait); the
    // batch keeps only the rest, and with everything cached there is none.
    size_t* queue = nullptr;  // the requests the engine reads, by index
    size_t queued = 0;
    size_t on_stack[kStackBatch];
    std::vector<size_t> on_heap;
    if (Nowait(ts, e)) {
      queue = num <= kStackBatch ? on_stack : (on_heap.resize(num), on_heap.data());
      for (size_t i = 0; i < num; i++) {
        size_t done = 0;
        // (a try that found the file system cannot do it turns the rest off)
        bool finished = nowait_ok_.load(std::memory_order_relaxed) &&
                        TryNowait(ts, reqs[i].offset, reqs[i].len, reqs[i].scratch, &done);
        reqs[i].result = Slice(reqs[i].scratch, done);
        reqs[i].status = IOStatus::OK();
        if (!finished) queue[queued++] = i;
      }
      if (queued == 0) return IOStatus::OK();
    }
    const size_t n = queue ? queued : num;
    std::vector<Job> jobs(n);
    std::vector<Job*> ptrs(n);
    for (size_t k = 0; k < n; k++) {
      FSReadRequest& r = reqs[queue ? queue[k] : k];
      Prep(&jobs[k], r.offset, r.len, r.scratch);
      if (queue && !r.result.empty()) {  // nowait read the first part of it
        jobs[k].done = r.result.size();
        jobs[k].Arm();
      }
      ptrs[k] = &jobs[k];
    }
    int rc = ts->RunJobs(e, ptrs.data(), static_cast<int>(n));
    if (rc < 0) return ErrnoStatus("multiread", name_, -rc);
    for (size_t k = 0; k < n; k++) {
      FSReadRequest& r = reqs[queue ? queue[k] : k];
      r.result = Slice(r.scratch, jobs[k].err ? 0 : jobs[k].done);
      r.status = jobs[k].err ? ErrnoStatus("read", name_, static_cast<int>(-jobs[k].err)) : IOStatus::OK();
    }
    return IOStatus::OK();
  }

  IOStatus ReadAsync(FSReadRequest& req, const IOOptions&, AsyncCallback cb, void* cb_arg,
                     void** io_handle, rocksdb::IOHandleDeleter* del_fn,
                     IODebugContext*) override {
    ThreadState* ts = fs_->State();
    Engine* e = direct_ || !fs_->hot().iopoll ? ts->AsyncEngine() : ts->SyncEngine(false);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    // As MultiRead: libaio would read a buffered file inside io_submit and
    // then still need io_getevents, so the read is a pread now (buffered_reads).
    if (!direct_ && e->buffered_in_submit() && fs_->hot().buffered_pread) e = ts->Posix();
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
    if (Nowait(ts, e)) {
      if (TryNowait(ts, req.offset, req.len, req.scratch, &h->job.done)) {
        // The page cache held it: read now, the callback delivered by Poll.
        h->job.finished = true;
        ts->counters->Add(kEv_async_completed);
        return IOStatus::OK();
      }
      h->job.Arm();  // the engine reads the rest
    }
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
    return DropPageCache(fs_, fd_, direct_, name_, offset, length);
  }

  RXLAB_HOT bool use_direct_io() const override { return direct_; }
  RXLAB_HOT size_t GetRequiredBufferAlignment() const override {
    return align_;
  }

  // Reap completions of this thread's async ring; finished reads get their
  // callback unless aborted. block: wait for at least one event.
  static void PumpAsync(ThreadState* ts, Engine* e, bool block);

 private:
  // Whether this file's buffered requests on `e` are first tried with
  // RWF_NOWAIT (ThreadState::NowaitFirst), while the file system takes it.
  bool Nowait(const ThreadState* ts, const Engine* e) const {
    return !direct_ && nowait_ok_.load(std::memory_order_relaxed) && ts->NowaitFirst(e, faults_);
  }
  // Read `n` bytes at `off` with ThreadState::PreadNowait. True: finished
  // (all read, or EOF; the read counted); false: the engine reads it from
  // *done on (nowait_queued counts those). A short read is tried once more,
  // which tells EOF (0) from a page not cached (EAGAIN): only the latter is
  // queued.
  bool TryNowait(ThreadState* ts, uint64_t off, size_t n, char* buf, size_t* done) {
    ThreadCounters* c = ts->counters.get();
    uint64_t ns = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
      int64_t got = ts->PreadNowait(fd_, buf + *done, n - *done, off + *done);
      ns += c->last_syscall_ns;
      if (got < 0) {
        // EAGAIN: not cached. Anything else (EOPNOTSUPP: the file system
        // cannot read without waiting; ENOSYS; an IO error) turns this file's
        // tries off: its reads are the engine's from now on, which reports a
        // real error again.
        if (got != -EAGAIN && got != -EINTR) nowait_ok_.store(false, std::memory_order_relaxed);
        break;
      }
      *done += static_cast<size_t>(got);
      if (got == 0 || *done == n) {
        ts->CountRead(*done, ns);
        return true;
      }
    }
    c->Add(kEv_nowait_queued);
    return false;
  }

  RXLAB_HOT void Prep(Job* j, uint64_t off, size_t n, char* buf) const {
    j->Init(Op::kRead, fd_, slot_, file_id_, off, n, buf);
    j->direct = direct_;
    j->align = logical_;  // what the kernel requires of a resubmitted remainder
    j->faults = faults_;
  }

  RxFileSystem* fs_;
  std::string name_;
  int fd_;
  bool direct_;
  bool faults_;
  size_t logical_;
  // Fixed at open: RocksDB's FilePrefetchBuffer keeps data placed for the
  // alignment it was filled with, so a file that changed it mid-life had its
  // compaction reads fail their checksums (docs/concepts/engines.md).
  const size_t align_;
  int slot_ = -1;
  uint64_t file_id_ = 0;
  std::atomic<bool> nowait_ok_{true};  // false once preadv2 failed otherwise than EAGAIN
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

}  // namespace

std::unique_ptr<FSRandomAccessFile> MakeRandomAccessFile(RxFileSystem* fs, std::string name, int fd,
                                                         bool direct) {
  return std::make_unique<RxRandomAccessFile>(fs, std::move(name), fd, direct);
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

}  // namespace rxlab
