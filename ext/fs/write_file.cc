// The write path: appends (WAL, MANIFEST, SST files from flush and
// compaction), syncs, truncation, preallocation and close.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "executor.h"
#include "files.h"
#include "testhooks.h"

namespace rxlab {

namespace {

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
        pending_base_(size),
        // Fixed for the file's life (the file system's parameters do not
        // change once it exists): each append reads this one flag, not the
        // parameters through the thread state's two loads.
        plain_pwrite_(!powerloss_ && fs->hot().enospc_after < 0 &&
                      (direct ? fs->hot().direct_pwrite : fs->hot().buffered_pwrite)) {}
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
    // The common append (no powerloss, no ENOSPC injection, written with
    // pwrite, aligned where O_DIRECT): one pwrite and its counters, and the
    // status built once, here, not returned up through WriteAt and Pwrite.
    // A pwrite that did not write it all leaves it to the general path
    // below, which writes the range again from its start (the same bytes at
    // the same offsets) and retries as it does.
    const char* p = data.data();
    const size_t n = data.size();
    if (plain_pwrite_ && (!direct_ || Aligned(offset, p, n))) {
      ThreadCounters* c = fs_->State()->counters.get();
      ssize_t w;
      if (!direct_) {
        SampledSyscallTimer t(c, kSys_pwrite64);
        w = pwrite(fd_, p, n, static_cast<off_t>(offset));
      } else {
        SyscallTimer t(c, kSys_pwrite64);
        w = pwrite(fd_, p, n, static_cast<off_t>(offset));
      }
      if (w == static_cast<ssize_t>(n)) {
        CountWrite(c, n);
        size_ = offset + n;
        return IOStatus::OK();
      }
      if (w < 0 && errno != EINTR && errno != EAGAIN) return ErrnoStatus("write", name_, errno);
      if (w < 0) c->Add(kEv_retries);
    }
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

  // As posix, closing makes nothing durable: RocksDB syncs what must be
  // before it closes (an SST's Sync and Fsync, a WAL's sync), and an fdatasync
  // here cost every closed WAL a flush of its pages. With powerloss=1 the
  // held bytes reach the page cache here, where a SIGKILL no longer loses
  // them and a power cut still would: posix's guarantee.
  IOStatus Close(const IOOptions&, IODebugContext*) override {
    if (fd_ < 0) return IOStatus::OK();
    IOStatus s = MakeDurable(false);
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
    return DropPageCache(fs_, fd_, direct_, name_, offset, length);
  }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }
  bool IsSyncThreadSafe() const override { return !powerloss_; }
  bool use_direct_io() const override { return direct_; }
  size_t GetRequiredBufferAlignment() const override { return align_; }

 private:
  IOStatus WriteAt(uint64_t offset, const char* data, size_t n) {
    ThreadState* ts = fs_->State();
    bool aligned = !direct_ || Aligned(offset, data, n);
    if (!aligned) return WriteBuffered(offset, data, n);
    if (!ts->WritesThroughEngine(direct_)) return Pwrite(ts, fd_, offset, data, n, !direct_);
    Engine* e = ts->SyncEngine(direct_);
    if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
    Job j;
    j.Init(Op::kWrite, fd_, -1, 0, offset, n, const_cast<char*>(data));
    j.direct = direct_;
    int rc = ts->RunOne(e, &j);
    if (rc < 0) return ErrnoStatus("write", name_, -rc);
    if (j.err) return ErrnoStatus("write", name_, static_cast<int>(-j.err));
    if (j.done != n) return IOStatus::IOError("write " + name_ + ": short write");
    return IOStatus::OK();
  }
  // One write with pwrite: the system call and the counters a request through
  // the posix engine would update, without the executor's request (perf put
  // 1% of fillseq's CPU in that machinery for each WAL append). Short writes
  // continue; EINTR and EAGAIN are retried, as the executor retries them.
  // sampled: a buffered append (the WAL's, one per write), timed one call in
  // SampledSyscallTimer::kEvery; an O_DIRECT write is the device's time and
  // is timed every call.
  RXLAB_HOT IOStatus Pwrite(ThreadState* ts, int fd, uint64_t offset, const char* data, size_t n,
                            bool sampled) {
    ThreadCounters* c = ts->counters.get();
    size_t done = 0;
    int retries = 0;
    while (done < n) {
      ssize_t w;
      if (sampled) {
        SampledSyscallTimer t(c, kSys_pwrite64);
        w = pwrite(fd, data + done, n - done, static_cast<off_t>(offset + done));
      } else {
        SyscallTimer t(c, kSys_pwrite64);
        w = pwrite(fd, data + done, n - done, static_cast<off_t>(offset + done));
      }
      if (w < 0 && (errno == EINTR || errno == EAGAIN) && ++retries < kMaxRetries) {
        c->Add(kEv_retries);
        continue;
      }
      if (w < 0) return ErrnoStatus("write", name_, errno);
      if (w == 0) return IOStatus::IOError("write " + name_ + ": short write");
      done += static_cast<size_t>(w);
    }
    CountWrite(c, n);
    return IOStatus::OK();
  }
  // What one write through the posix engine would count.
  static void CountWrite(ThreadCounters* c, size_t n) {
    c->Max(kEv_max_inflight, 1);
    c->Add(kEv_writes);
    c->Add(kEv_write_bytes, n);
  }
  // Whether O_DIRECT can take this write as it is.
  bool Aligned(uint64_t offset, const char* data, size_t n) const {
    return offset % align_ == 0 && n % align_ == 0 && reinterpret_cast<uintptr_t>(data) % align_ == 0;
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
    if (!ts->WritesThroughEngine(false)) {
      IOStatus s = Pwrite(ts, buffered_fd_, offset, data, n, false);
      if (!s.ok()) return s;
    } else {
      Engine* e = ts->SyncEngine(false);
      if (!e) return IOStatus::IOError("rxlab " + fs_->config().engine + ": " + ts->error);
      int rc = ts->RunOne(e, &j);
      if (rc < 0) return ErrnoStatus("write", name_, -rc);
      if (j.err) return ErrnoStatus("write", name_, static_cast<int>(-j.err));
    }
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

  // Write what powerloss=1 holds; with sync, fdatasync too.
  IOStatus MakeDurable(bool sync) {
    IOStatus s = WritePending();
    if (!s.ok()) return s;
    if (buffered_fd_ >= 0) {
      close(buffered_fd_);
      buffered_fd_ = -1;
    }
    if (sync) {
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
  const bool plain_pwrite_;
};

}  // namespace

std::unique_ptr<FSWritableFile> MakeWritableFile(RxFileSystem* fs, std::string name, int fd, bool direct,
                                                 uint64_t size, const FileOptions& o) {
  return std::make_unique<RxWritableFile>(fs, std::move(name), fd, direct, size, o);
}

}  // namespace rxlab
