// libaio: Linux native AIO through io_submit/io_getevents. The raw system
// calls are used (not libaio's wrappers) so that every call is one counted
// syscall. Truly asynchronous only for O_DIRECT files; buffered requests
// complete inside io_submit.
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "engine.h"

namespace rxlab {
namespace {

long IoSetup(unsigned nr, aio_context_t* ctx) { return syscall(SYS_io_setup, nr, ctx); }
long IoDestroy(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx); }
long IoSubmit(aio_context_t ctx, long n, iocb** v) { return syscall(SYS_io_submit, ctx, n, v); }
long IoGetevents(aio_context_t ctx, long min, long max, io_event* ev, timespec* ts) {
  return syscall(SYS_io_getevents, ctx, min, max, ev, ts);
}
long IoCancel(aio_context_t ctx, iocb* cb, io_event* ev) {
  return syscall(SYS_io_cancel, ctx, cb, ev);
}

class LibaioEngine final : public Engine {
 public:
  LibaioEngine(int depth, ThreadCounters* c)
      : Engine(/*synchronous=*/false, /*plain_pread=*/false, /*buffered_in_submit=*/true),
        depth_(depth),
        c_(c) {
    iocbs_.resize(depth);
    free_.reserve(depth);
    for (int i = depth - 1; i >= 0; i--) free_.push_back(i);
    events_.resize(depth);
  }
  ~LibaioEngine() override {
    if (ctx_) IoDestroy(ctx_);
  }
  int Init() {
    long r = IoSetup(static_cast<unsigned>(depth_), &ctx_);
    return r < 0 ? -errno : 0;
  }

  QueueResult Queue(IoReq* r) override {
    if (free_.empty()) return QueueResult::kBusy;
    int i = free_.back();
    free_.pop_back();
    iocb& cb = iocbs_[i];
    memset(&cb, 0, sizeof(cb));
    cb.aio_fildes = static_cast<uint32_t>(r->fd);
    cb.aio_lio_opcode = r->op == Op::kRead ? IOCB_CMD_PREAD : IOCB_CMD_PWRITE;
    cb.aio_buf = reinterpret_cast<uint64_t>(r->buf);
    cb.aio_nbytes = r->len;
    cb.aio_offset = static_cast<int64_t>(r->offset);
    cb.aio_data = reinterpret_cast<uint64_t>(r);
    r->owner = reinterpret_cast<void*>(static_cast<intptr_t>(i));
    pending_.push_back(&cb);
    return QueueResult::kQueued;
  }

  int Commit(int) override {
    size_t done = 0;
    while (done < pending_.size()) {
      long n;
      {
        SyscallTimer t(c_, kSys_io_submit);
        n = IoSubmit(ctx_, static_cast<long>(pending_.size() - done), pending_.data() + done);
      }
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        int err = -errno;
        // Fail the rest: they complete at once with the error.
        for (size_t k = done; k < pending_.size(); k++) {
          auto* r = reinterpret_cast<IoReq*>(pending_[k]->aio_data);
          r->res = err;
          failed_.push_back(r);
        }
        break;
      }
      done += static_cast<size_t>(n);
    }
    pending_.clear();
    return 0;
  }

  int Reap(int min, int max, IoReq** out, int64_t timeout_ns) override {
    int got = 0;
    while (!failed_.empty() && got < max) {
      IoReq* r = failed_.back();
      failed_.pop_back();
      Release(r);
      out[got++] = r;
    }
    if (got >= max || (got >= min && got > 0)) return got;
    timespec ts{}, *tsp = nullptr;
    if (timeout_ns >= 0) {
      ts.tv_sec = timeout_ns / 1000000000;
      ts.tv_nsec = timeout_ns % 1000000000;
      tsp = &ts;
    }
    long want = max - got;
    long n;
    for (;;) {
      {
        SyscallTimer t(c_, kSys_io_getevents);
        n = IoGetevents(ctx_, min > got ? min - got : 0, want, events_.data(), tsp);
      }
      if (n < 0 && errno == EINTR) continue;
      break;
    }
    if (n < 0) return got ? got : -errno;
    for (long k = 0; k < n; k++) {
      auto* r = reinterpret_cast<IoReq*>(events_[k].data);
      r->res = events_[k].res;
      Release(r);
      out[got++] = r;
    }
    if (got == 0 && timeout_ns >= 0) return -ETIME;
    return got;
  }

  void Cancel(IoReq* r) override {
    io_event ev;
    // Linux AIO can rarely cancel file IO; on success the event is not
    // delivered by io_getevents, so complete it here.
    int i = static_cast<int>(reinterpret_cast<intptr_t>(r->owner));
    if (IoCancel(ctx_, &iocbs_[i], &ev) == 0) {
      r->res = -ECANCELED;
      failed_.push_back(r);
    }
  }

  int Depth() const override { return depth_; }

 private:
  void Release(IoReq* r) { free_.push_back(static_cast<int>(reinterpret_cast<intptr_t>(r->owner))); }

  int depth_;
  ThreadCounters* c_;
  aio_context_t ctx_ = 0;
  std::vector<iocb> iocbs_;
  std::vector<int> free_;
  std::vector<iocb*> pending_;
  std::vector<IoReq*> failed_;
  std::vector<io_event> events_;
};

std::string Check(const Config& cfg) {
  aio_context_t ctx = 0;
  if (IoSetup(static_cast<unsigned>(cfg.Int("depth")), &ctx) < 0)
    return std::string("libaio: io_setup failed: ") + strerror(errno) +
           " (check /proc/sys/fs/aio-max-nr)";
  IoDestroy(ctx);
  return "";
}

std::unique_ptr<Engine> Create(const Config& cfg, ThreadCounters* c, std::string* err) {
  auto e = std::make_unique<LibaioEngine>(static_cast<int>(cfg.Int("depth")), c);
  if (int rc = e->Init(); rc < 0) {
    *err = std::string("libaio: io_setup failed: ") + strerror(-rc);
    return nullptr;
  }
  return e;
}

}  // namespace

extern const EngineDef kLibaioEngine = {
    "libaio", "Linux AIO (io_submit/io_getevents); asynchronous for O_DIRECT files", {}, Check,
    Create};

}  // namespace rxlab
