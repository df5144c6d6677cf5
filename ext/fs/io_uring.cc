// io_uring through liburing: one ring per engine instance (the adapter makes
// one per thread, and a second one per thread for async reads). Options:
// registered files (a sparse table; saves the per-call file lookup), fixed
// buffers (registered bounce buffers; RocksDB owns the read buffers, so a
// READ_FIXED read costs a copy out), SQPOLL (a kernel thread polls the
// submission queue: fewer syscalls, a core spent polling) and IOPOLL (polled
// completions; needs O_DIRECT and a device with poll queues) and
// DEFER_TASKRUN (with SINGLE_ISSUER: completions are posted only when the
// ring's own thread enters the kernel to wait for them, so a wait for n
// reads wakes the thread once, not once per completion; each ring here is
// used by the one thread that made it). spin_us: before sleeping for a
// completion, spin on the completion queue (a busy poll of the reader's own
// CPU, no system call): the reader never sleeps, so the context switch and
// the idle vCPU's wake-up leave the read's latency, and their CPU is spent
// spinning instead.
#include <dirent.h>
#include <liburing.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

#include "engine.h"

namespace rxlab {
namespace {

constexpr uint64_t kCancelTag = 1;  // user_data of cancel requests' own CQEs

class IoUringEngine final : public Engine {
 public:
  IoUringEngine(const Config& cfg, ThreadCounters* c)
      : depth_(static_cast<int>(cfg.Int("depth"))),
        sqpoll_(cfg.Bool("sqpoll")),
        iopoll_(cfg.Bool("iopoll")),
        defer_(cfg.Bool("defer_taskrun")),
        fixed_files_(cfg.Bool("registered_files")),
        fixed_bufs_(cfg.Bool("fixed_buffers")),
        buf_size_(static_cast<size_t>(cfg.Int("fixed_buf_kb")) * 1024),
        nslots_(static_cast<int>(cfg.Int("max_files"))),
        idle_ms_(static_cast<unsigned>(cfg.Int("sqpoll_idle_ms"))),
        spin_ns_(static_cast<uint64_t>(cfg.Int("spin_us")) * 1000),
        c_(c) {}

  ~IoUringEngine() override {
    if (ring_ok_) io_uring_queue_exit(&ring_);
    free(buf_area_);
  }

  std::string Init() {
    io_uring_params p{};
    if (sqpoll_) {
      p.flags |= IORING_SETUP_SQPOLL;
      p.sq_thread_idle = idle_ms_;
    }
    if (iopoll_) p.flags |= IORING_SETUP_IOPOLL;
    if (defer_) p.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
    // Room for every request plus its cancel.
    int rc = io_uring_queue_init_params(static_cast<unsigned>(depth_ * 2), &ring_, &p);
    if (rc < 0) return std::string("io_uring_queue_init: ") + strerror(-rc);
    ring_ok_ = true;
    if (fixed_files_) {
      rc = io_uring_register_files_sparse(&ring_, static_cast<unsigned>(nslots_));
      if (rc < 0) return std::string("io_uring registered_files: ") + strerror(-rc);
      slot_ids_ = std::vector<std::atomic<uint64_t>>(static_cast<size_t>(nslots_));
    }
    if (fixed_bufs_) {
      if (posix_memalign(&buf_area_, 4096, buf_size_ * static_cast<size_t>(depth_)) != 0)
        return "io_uring fixed_buffers: out of memory";
      std::vector<iovec> iov(static_cast<size_t>(depth_));
      for (int i = 0; i < depth_; i++) {
        iov[i].iov_base = static_cast<char*>(buf_area_) + buf_size_ * static_cast<size_t>(i);
        iov[i].iov_len = buf_size_;
        free_bufs_.push_back(i);
      }
      rc = io_uring_register_buffers(&ring_, iov.data(), static_cast<unsigned>(depth_));
      if (rc < 0)
        return std::string("io_uring fixed_buffers: register: ") + strerror(-rc) +
               " (RLIMIT_MEMLOCK too low?)";
    }
    return "";
  }

  QueueResult Queue(IoReq* r) override {
    if (inflight_ + queued_ >= depth_) return QueueResult::kBusy;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return QueueResult::kBusy;
    int fd = r->fd;
    bool fixed_file = false;
    if (fixed_files_ && r->slot >= 0 && r->slot < nslots_) {
      auto& id = slot_ids_[static_cast<size_t>(r->slot)];
      if (id.load(std::memory_order_acquire) != r->file_id) {
        int f = r->fd;
        if (io_uring_register_files_update(&ring_, static_cast<unsigned>(r->slot), &f, 1) == 1)
          id.store(r->file_id, std::memory_order_release);
      }
      if (id.load(std::memory_order_acquire) == r->file_id) {
        fd = r->slot;
        fixed_file = true;
      }
    }
    r->fixed_buf = -1;
    if (fixed_bufs_ && r->len <= buf_size_ && !free_bufs_.empty()) {
      int b = free_bufs_.back();
      free_bufs_.pop_back();
      r->fixed_buf = b;
      char* bb = Buf(b);
      if (r->op == Op::kRead) {
        io_uring_prep_read_fixed(sqe, fd, bb, static_cast<unsigned>(r->len), r->offset, b);
        if (c_) c_->Add(kEv_fixed_buf_reads);
      } else {
        memcpy(bb, r->buf, r->len);
        io_uring_prep_write_fixed(sqe, fd, bb, static_cast<unsigned>(r->len), r->offset, b);
      }
    } else if (r->op == Op::kRead) {
      io_uring_prep_read(sqe, fd, r->buf, static_cast<unsigned>(r->len), r->offset);
    } else {
      io_uring_prep_write(sqe, fd, r->buf, static_cast<unsigned>(r->len), r->offset);
    }
    if (fixed_file) sqe->flags |= IOSQE_FIXED_FILE;
    io_uring_sqe_set_data(sqe, r);
    queued_++;
    return QueueResult::kQueued;
  }

  int Commit(int wait_nr) override {
    if (queued_ == 0 && wait_nr == 0) return 0;
    // liburing enters the kernel when it has something to submit (with
    // SQPOLL: only if the poller sleeps) or something to wait for.
    bool enters = wait_nr > 0 || (queued_ > 0 && (!sqpoll_ || (IO_URING_READ_ONCE(*ring_.sq.kflags) &
                                                               IORING_SQ_NEED_WAKEUP)));
    int rc;
    for (;;) {
      uint64_t t0 = enters && c_ && c_->enabled ? c_->Ticks() : 0;
      // With spin_us the wait is Reap's: it spins before it sleeps.
      rc = wait_nr > 0 && spin_ns_ == 0 ? io_uring_submit_and_wait(&ring_, static_cast<unsigned>(wait_nr))
                                        : io_uring_submit(&ring_);
      if (t0) c_->Syscall(kSys_io_uring_enter, c_->NsSince(t0));
      if (rc == -EINTR) continue;
      break;
    }
    if (rc < 0) return rc;
    inflight_ += queued_;
    queued_ = 0;
    return 0;
  }

  int Reap(int min, int max, IoReq** out, int64_t timeout_ns) override {
    int got = 0;
    bool waited = false, flushed = false, spun = false;
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      while (got < max && io_uring_peek_cqe(&ring_, &cqe) == 0) {
        got += Take(cqe, out + got);
      }
      if (got == 0 && min == 0 && defer_ && !flushed && inflight_ > 0) {
        // Deferred completions are posted only inside io_uring_enter: a
        // caller that will not wait (a non-blocking Poll) would otherwise
        // see none. A caller that got some, or will wait, needs no extra call.
        SyscallTimer t(c_, kSys_io_uring_enter);
        io_uring_get_events(&ring_);
        flushed = true;
        continue;
      }
      if (got >= max || got >= min || (waited && timeout_ns >= 0)) break;
      if (inflight_ == 0) break;
      if (spin_ns_ > 0 && !spun) {
        // Completions of regular-file reads reach the CQ through task work that
        // the kernel runs on this thread's next return to user space (the
        // completion's interrupt, or the IPI that kicks a running task), so a
        // user-space spin sees them without entering the kernel.
        spun = true;
        uint64_t limit = timeout_ns >= 0 ? std::min<uint64_t>(spin_ns_, static_cast<uint64_t>(timeout_ns))
                                         : spin_ns_;
        uint64_t end = MonoNs() + limit;
        while (!io_uring_cq_ready(&ring_) && MonoNs() < end) __builtin_ia32_pause();
        if (io_uring_cq_ready(&ring_)) {
          spun = false;  // the next wait spins again
          continue;
        }
      }
      int rc;
      {
        SyscallTimer t(c_, kSys_io_uring_enter);
        if (timeout_ns < 0) {
          rc = io_uring_wait_cqe(&ring_, &cqe);
        } else {
          __kernel_timespec ts{timeout_ns / 1000000000, timeout_ns % 1000000000};
          rc = io_uring_wait_cqe_timeout(&ring_, &cqe, &ts);
        }
      }
      waited = true;
      if (rc == -EINTR) continue;
      if (rc < 0 && rc != -ETIME) return got ? got : rc;
    }
    if (got == 0 && timeout_ns >= 0 && inflight_ > 0) return -ETIME;
    return got;
  }

  void Cancel(IoReq* r) override {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return;
    io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(r), 0);
    io_uring_sqe_set_data64(sqe, kCancelTag);
    queued_++;
    cancels_++;
  }

  int Depth() const override { return depth_; }

  void SetFileSlot(int slot, int fd, uint64_t file_id) override {
    if (!fixed_files_ || slot < 0 || slot >= nslots_) return;
    int f = fd;
    io_uring_register_files_update(&ring_, static_cast<unsigned>(slot), &f, 1);
    slot_ids_[static_cast<size_t>(slot)].store(fd < 0 ? 0 : file_id, std::memory_order_release);
  }

 private:
  char* Buf(int i) { return static_cast<char*>(buf_area_) + buf_size_ * static_cast<size_t>(i); }

  int Take(io_uring_cqe* cqe, IoReq** out) {
    uint64_t tag = io_uring_cqe_get_data64(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    inflight_--;
    if (tag == kCancelTag) {
      cancels_--;
      return 0;
    }
    auto* r = reinterpret_cast<IoReq*>(tag);
    r->res = res;
    if (r->fixed_buf >= 0) {
      if (r->op == Op::kRead && res > 0) memcpy(r->buf, Buf(r->fixed_buf), static_cast<size_t>(res));
      free_bufs_.push_back(r->fixed_buf);
      r->fixed_buf = -1;
    }
    *out = r;
    return 1;
  }

  int depth_;
  bool sqpoll_, iopoll_, defer_, fixed_files_, fixed_bufs_;
  size_t buf_size_;
  int nslots_;
  unsigned idle_ms_;
  uint64_t spin_ns_;
  ThreadCounters* c_;
  io_uring ring_{};
  bool ring_ok_ = false;
  int queued_ = 0, inflight_ = 0, cancels_ = 0;
  void* buf_area_ = nullptr;
  std::vector<int> free_bufs_;
  std::vector<std::atomic<uint64_t>> slot_ids_;
};

bool AnyPolledDevice() {
  DIR* d = opendir("/sys/block");
  if (!d) return false;
  bool any = false;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(std::string("/sys/block/") + e->d_name + "/queue/io_poll");
    int v = 0;
    if (f >> v && v == 1) any = true;
  }
  closedir(d);
  return any;
}

std::string Check(const Config& cfg) {
  if (cfg.Bool("defer_taskrun") && cfg.Bool("sqpoll"))
    return "io_uring: defer_taskrun=1 cannot be combined with sqpoll=1 (the kernel runs a SQPOLL ring's "
           "completions in its poller thread)";
  if (cfg.Int("spin_us") < 0 || cfg.Int("spin_us") > 1000000)
    return "io_uring: spin_us=" + cfg.Str("spin_us") + " must be between 0 and 1000000";
  if (cfg.Int("spin_us") > 0 && cfg.Bool("defer_taskrun"))
    return "io_uring: spin_us cannot be combined with defer_taskrun=1 (deferred completions are posted "
           "only inside io_uring_enter, so a spin in user space would never see them)";
  if (cfg.Bool("iopoll") && !AnyPolledDevice())
    return "io_uring: iopoll=1 needs a block device with polled queues, and no device here has "
           "any (/sys/block/*/queue/io_poll are all 0; NVMe needs nvme.poll_queues > 0)";
  if (cfg.Int("fixed_buf_kb") < 4 || cfg.Int("fixed_buf_kb") > 16384)
    return "io_uring: fixed_buf_kb=" + cfg.Str("fixed_buf_kb") + " must be between 4 and 16384";
  if (cfg.Int("max_files") < 1 || cfg.Int("max_files") > 65536)
    return "io_uring: max_files=" + cfg.Str("max_files") + " must be between 1 and 65536";
  IoUringEngine probe(cfg, nullptr);
  std::string err = probe.Init();
  return err.empty() ? "" : err + " (is io_uring enabled? see /proc/sys/kernel/io_uring_disabled)";
}

std::unique_ptr<Engine> Create(const Config& cfg, ThreadCounters* c, std::string* err) {
  auto e = std::make_unique<IoUringEngine>(cfg, c);
  *err = e->Init();
  if (!err->empty()) return nullptr;
  return e;
}

}  // namespace

extern const EngineDef kIoUringEngine = {
    "io_uring",
    "io_uring via liburing, one ring per thread (and one more for async reads)",
    {
        {"sqpoll", "0", "kernel thread polls the submission queue (costs a core while busy)"},
        {"sqpoll_idle_ms", "1000", "idle time before the SQPOLL thread sleeps"},
        {"registered_files", "0", "register files with the ring (saves the per-call fd lookup)"},
        {"fixed_buffers", "0", "registered bounce buffers (READ_FIXED + a copy into RocksDB's buffer)"},
        {"fixed_buf_kb", "128", "size of each registered buffer; larger requests skip them"},
        {"max_files", "4096", "slots in the registered-file table"},
        {"iopoll", "0", "polled completions (needs O_DIRECT and a device with poll queues)"},
        {"defer_taskrun", "0", "SINGLE_ISSUER + DEFER_TASKRUN: one wake-up per wait, not per completion"},
        {"spin_us", "0", "spin on the completion queue up to this long before sleeping (busy-polls the "
                         "reader's CPU)"},
    },
    Check,
    Create};

}  // namespace rxlab
