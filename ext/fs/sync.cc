// sync: lseek then read/write, as fio's sync engine does it (fio's psync is
// our posix). Two system calls per random IO where pread needs one, so the
// baseline's kernel CPU per read is fio's own. The seek moves the offset of
// the file description, which threads sharing a descriptor would race on:
// only rxlab fio, whose every job opens its own, may use this engine (the
// RocksDB adapter refuses it).
#include <unistd.h>

#include <cerrno>

#include "engine.h"

namespace rxlab {
namespace {

class SyncEngine final : public SynchronousEngine {
 public:
  explicit SyncEngine(ThreadCounters* c) : c_(c) {}

  QueueResult Queue(IoReq* r) override {
    // fio skips the seek when the file offset is already where the IO
    // starts (sequential IO); so do we.
    if (r->fd != fd_ || r->offset != pos_) {
      off_t at;
      {
        SyscallTimer t(c_, kSys_lseek);
        at = lseek(r->fd, static_cast<off_t>(r->offset), SEEK_SET);
      }
      if (at < 0) {
        r->res = -errno;
        fd_ = -1;
        return QueueResult::kCompleted;
      }
    }
    ssize_t n;
    if (r->op == Op::kRead) {
      SyscallTimer t(c_, kSys_read);
      n = read(r->fd, r->buf, r->len);
    } else {
      SyscallTimer t(c_, kSys_write);
      n = write(r->fd, r->buf, r->len);
    }
    r->res = n < 0 ? -errno : n;
    // A failed transfer leaves the offset unknown: seek next time.
    fd_ = n < 0 ? -1 : r->fd;
    pos_ = r->offset + static_cast<uint64_t>(n < 0 ? 0 : n);
    return QueueResult::kCompleted;
  }

 private:
  ThreadCounters* c_;
  int fd_ = -1;
  uint64_t pos_ = 0;
};

std::string Check(const Config&) { return ""; }

std::unique_ptr<Engine> Create(const Config&, ThreadCounters* c, std::string*) {
  return std::make_unique<SyncEngine>(c);
}

}  // namespace

extern const EngineDef kSyncEngine = {
    "sync", "lseek + read/write, fio's sync engine (rxlab fio only: it moves the shared file offset)", {},
    Check, Create, /*owns_fd_only=*/true};

}  // namespace rxlab
