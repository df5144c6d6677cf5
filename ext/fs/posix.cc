// posix: pread/pwrite. Synchronous: Queue() does the IO, so a MultiRead on
// this engine is a loop of blocking reads, the serial baseline.
#include <unistd.h>

#include <cerrno>

#include "engine.h"

namespace rxlab {
namespace {

class PosixEngine final : public SynchronousEngine {
 public:
  explicit PosixEngine(ThreadCounters* c) : SynchronousEngine(/*plain_pread=*/true), c_(c) {}

  RXLAB_HOT QueueResult Queue(IoReq* r) override {
    ssize_t n;
    if (r->op == Op::kRead) {
      SyscallTimer t(c_, kSys_pread64);
      n = pread(r->fd, r->buf, r->len, static_cast<off_t>(r->offset));
    } else {
      SyscallTimer t(c_, kSys_pwrite64);
      n = pwrite(r->fd, r->buf, r->len, static_cast<off_t>(r->offset));
    }
    r->res = n < 0 ? -errno : n;
    return QueueResult::kCompleted;
  }

 private:
  ThreadCounters* c_;
};

std::string Check(const Config&) { return ""; }

std::unique_ptr<Engine> Create(const Config&, ThreadCounters* c, std::string*) {
  return std::make_unique<PosixEngine>(c);
}

}  // namespace

extern const EngineDef kPosixEngine = {
    "posix", "pread/pwrite, one request at a time (the serial baseline)", {}, Check, Create};

}  // namespace rxlab
