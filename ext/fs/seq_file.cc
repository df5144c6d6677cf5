// Sequential reads (WAL and MANIFEST recovery, backups): positioned reads at
// the file's own position, one request at a time.
#include <fcntl.h>
#include <unistd.h>

#include "executor.h"
#include "files.h"

namespace rxlab {

namespace {

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
    Engine* e = ts->ReadEngine(direct_);
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
    return DropPageCache(fs_, fd_, direct_, name_, offset, length);
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

}  // namespace

std::unique_ptr<FSSequentialFile> MakeSequentialFile(RxFileSystem* fs, std::string name, int fd,
                                                     bool direct) {
  return std::make_unique<RxSequentialFile>(fs, std::move(name), fd, direct);
}

}  // namespace rxlab
