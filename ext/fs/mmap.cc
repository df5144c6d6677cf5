#include "mmap.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace rxlab {

using rocksdb::FileOptions;
using rocksdb::FSRandomAccessFile;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

std::string MmapReadConflict(const RxFileSystem& fs, const std::string& fname) {
  const HotParams& h = fs.hot();
  const std::string what = "memory-mapped reads (allow_mmap_reads, FileOptions::use_mmap_reads) of " +
                           fname + " on " + fs.uri();
  if (h.delay_us > 0)
    return what + ": they are page faults, not device reads, so delay_us cannot delay them; "
                  "turn one of the two off";
  if (h.any_read_fault && fs.FaultsApply(fname))
    return what + ": they are page faults, not device reads, so the fault_* options cannot act on "
                  "them; turn one of the two off (or narrow fault_files)";
  return "";
}

std::string MmapWriteConflict(const RxFileSystem& fs) {
  if (fs.config().Bool("powerloss"))
    return "memory-mapped writes (allow_mmap_writes, FileOptions::use_mmap_writes) on " + fs.uri() +
           ": powerloss=1 keeps unsynced bytes in process memory, and bytes copied into a shared "
           "mapping are in the page cache at once (a SIGKILL would not lose them); turn one of the two off";
  return "";
}

namespace {

class RxMmapReadableFile final : public FSRandomAccessFile {
 public:
  RxMmapReadableFile(RxFileSystem* fs, std::string name, int fd, char* base, size_t length)
      : fs_(fs), name_(std::move(name)), fd_(fd), base_(base), length_(length) {}
  ~RxMmapReadableFile() override {
    {
      SyscallTimer t(fs_->LocalCounters(), kSys_munmap);
      munmap(base_, length_);
    }
    close(fd_);
  }

  // RocksDB's contract for a mapped file: the result points into the mapping
  // (scratch may be null and is never written); reads past the end are
  // shortened; an offset past the end is an error (EINVAL), as in posix.
  IOStatus Read(uint64_t offset, size_t n, const IOOptions&, Slice* result, char*,
                IODebugContext*) const override {
    if (offset > length_) {
      *result = Slice();
      return ErrnoStatus("mmap read at offset " + std::to_string(offset) + " beyond the file's " +
                             std::to_string(length_) + " bytes",
                         name_, EINVAL);
    }
    if (n > length_ - offset) n = static_cast<size_t>(length_ - offset);
    *result = Slice(base_ + offset, n);
    ThreadCounters* c = fs_->LocalCounters();
    c->Add(kEv_mmap_reads);
    c->Add(kEv_mmap_read_bytes, n);
    return IOStatus::OK();
  }
  // MultiRead and ReadAsync: FSRandomAccessFile's, which call Read (no queue
  // depth to gain: every request is a pointer into the mapping).

  void Hint(AccessPattern pattern) override {
    int advice = POSIX_MADV_NORMAL;
    switch (pattern) {
      case kNormal: advice = POSIX_MADV_NORMAL; break;
      case kRandom: advice = POSIX_MADV_RANDOM; break;
      case kSequential: advice = POSIX_MADV_SEQUENTIAL; break;
      case kWillNeed: advice = POSIX_MADV_WILLNEED; break;
      case kWontNeed: advice = POSIX_MADV_DONTNEED; break;
    }
    SyscallTimer t(fs_->LocalCounters(), kSys_madvise);
    posix_madvise(base_, length_, advice);
  }

  IOStatus InvalidateCache(size_t offset, size_t length) override {
    SyscallTimer t(fs_->LocalCounters(), kSys_fadvise64);
    int r = posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                          POSIX_FADV_DONTNEED);
    return r == 0 ? IOStatus::OK() : ErrnoStatus("fadvise", name_, r);
  }

 private:
  RxFileSystem* fs_;
  std::string name_;
  int fd_;
  char* base_;
  size_t length_;
};

// PosixMmapFile's scheme: the file's tail is mapped a region at a time (64 KiB,
// doubling to 1 MiB), each region allocated with fallocate before it is mapped
// (a store to a page past the end of the file would be SIGBUS), appends are
// memcpy, and Close trims the file to what was written. Two departures, both
// where posix would write the wrong bytes: a reopened file is appended to
// (PosixMmapFile starts every file at offset 0, over a reopened file's
// contents), and Truncate truncates (PosixMmapFile ignores it).
class RxMmapWritableFile final : public FSWritableFile {
 public:
  RxMmapWritableFile(RxFileSystem* fs, std::string name, int fd, uint64_t start, const FileOptions& o)
      : FSWritableFile(o),
        fs_(fs),
        name_(std::move(name)),
        fd_(fd),
        page_(static_cast<size_t>(sysconf(_SC_PAGESIZE))),
        map_size_(Roundup(65536, page_)),
        keep_size_(o.fallocate_with_keep_size),
        size_(start) {}
  ~RxMmapWritableFile() override {
    if (fd_ >= 0) Close(IOOptions(), nullptr).PermitUncheckedError();
  }

  IOStatus Append(const Slice& data, const IOOptions&, IODebugContext*) override {
    IOStatus s;
    if (!fs_->CheckEnospc(data.size(), &s)) return s;
    const char* src = data.data();
    size_t left = data.size();
    while (left > 0) {
      if (base_ == nullptr || dst_ == limit_) {
        s = Unmap();
        if (s.ok()) s = MapNewRegion();
        if (!s.ok()) return s;
      }
      size_t n = std::min(left, static_cast<size_t>(limit_ - dst_));
      memcpy(dst_, src, n);
      dst_ += n;
      src += n;
      left -= n;
      size_ += n;
    }
    ThreadCounters* c = fs_->LocalCounters();
    c->Add(kEv_mmap_writes);
    c->Add(kEv_mmap_write_bytes, data.size());
    return IOStatus::OK();
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const rocksdb::DataVerificationInfo&,
                  IODebugContext* dbg) override {
    return Append(data, o, dbg);
  }
  // PositionedAppend: FSWritableFile's NotSupported, as PosixMmapFile (RocksDB
  // uses it for O_DIRECT files only, and a mapped file is never one).

  IOStatus Truncate(uint64_t size, const IOOptions&, IODebugContext*) override {
    if (size == size_) return IOStatus::OK();  // what WritableFileWriter asks at close
    IOStatus s = Unmap();
    if (!s.ok()) return s;
    SyscallTimer t(fs_->LocalCounters(), kSys_ftruncate);
    if (ftruncate(fd_, static_cast<off_t>(size)) != 0) return ErrnoStatus("ftruncate", name_, errno);
    size_ = size;
    return IOStatus::OK();
  }

  IOStatus Close(const IOOptions&, IODebugContext*) override {
    if (fd_ < 0) return IOStatus::OK();
    IOStatus s = Unmap();
    // The last region was allocated past what was written: trim it.
    if (s.ok() && mapped_) {
      SyscallTimer t(fs_->LocalCounters(), kSys_ftruncate);
      if (ftruncate(fd_, static_cast<off_t>(size_)) != 0) s = ErrnoStatus("ftruncate", name_, errno);
    }
    if (close(fd_) != 0 && s.ok()) s = ErrnoStatus("close", name_, errno);
    fd_ = -1;
    return s;
  }
  IOStatus Flush(const IOOptions&, IODebugContext*) override { return IOStatus::OK(); }
  // As posix: the file's data (fdatasync), then msync of what this region
  // holds that was not synced yet.
  IOStatus Sync(const IOOptions&, IODebugContext*) override {
    {
      SyscallTimer t(fs_->LocalCounters(), kSys_fdatasync);
      if (fdatasync(fd_) != 0) return ErrnoStatus("fdatasync", name_, errno);
    }
    return Msync();
  }
  IOStatus Fsync(const IOOptions&, IODebugContext*) override {
    {
      SyscallTimer t(fs_->LocalCounters(), kSys_fsync);
      if (fsync(fd_) != 0) return ErrnoStatus("fsync", name_, errno);
    }
    return Msync();
  }
  uint64_t GetFileSize(const IOOptions&, IODebugContext*) override { return size_; }
  IOStatus InvalidateCache(size_t offset, size_t length) override {
    SyscallTimer t(fs_->LocalCounters(), kSys_fadvise64);
    int r = posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(length),
                          POSIX_FADV_DONTNEED);
    return r == 0 ? IOStatus::OK() : ErrnoStatus("fadvise", name_, r);
  }
  // Mapped files exist only with allow_fallocate (MmapWritesSupported).
  IOStatus Allocate(uint64_t offset, uint64_t len, const IOOptions&, IODebugContext*) override {
    SyscallTimer t(fs_->LocalCounters(), kSys_fallocate);
    if (fallocate(fd_, keep_size_ ? FALLOC_FL_KEEP_SIZE : 0, static_cast<off_t>(offset),
                  static_cast<off_t>(len)) != 0)
      return ErrnoStatus("fallocate", name_, errno);
    return IOStatus::OK();
  }

 private:
  static size_t Roundup(size_t x, size_t y) { return ((x + y - 1) / y) * y; }

  IOStatus Unmap() {
    if (base_ == nullptr) return IOStatus::OK();
    {
      SyscallTimer t(fs_->LocalCounters(), kSys_munmap);
      if (munmap(base_, static_cast<size_t>(limit_ - base_)) != 0) return ErrnoStatus("munmap", name_, errno);
    }
    base_ = limit_ = dst_ = last_sync_ = nullptr;
    if (map_size_ < (1u << 20)) map_size_ *= 2;
    return IOStatus::OK();
  }

  // Map the region that holds offset size_ (mappings start on a page).
  IOStatus MapNewRegion() {
    const uint64_t at = size_ - size_ % page_;
    {
      // Mode 0, not FALLOC_FL_KEEP_SIZE: the mapped pages must be inside the
      // file, and reserved (a store to a page the file system cannot back is
      // SIGBUS). Close trims the file. allow_fallocate=false never gets
      // here: MmapWritesSupported declines the mapping then.
      SyscallTimer t(fs_->LocalCounters(), kSys_fallocate);
      int rc = fallocate(fd_, 0, static_cast<off_t>(at), static_cast<off_t>(map_size_));
      if (rc != 0) rc = posix_fallocate(fd_, static_cast<off_t>(at), static_cast<off_t>(map_size_));
      if (rc != 0) return ErrnoStatus("fallocate for an mmap write", name_, rc == -1 ? errno : rc);
    }
    void* p;
    {
      SyscallTimer t(fs_->LocalCounters(), kSys_mmap);
      p = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(at));
    }
    if (p == MAP_FAILED) return ErrnoStatus("mmap for writing", name_, errno);
    mapped_ = true;
    base_ = static_cast<char*>(p);
    limit_ = base_ + map_size_;
    dst_ = base_ + (size_ - at);
    last_sync_ = dst_;
    return IOStatus::OK();
  }

  IOStatus Msync() {
    if (base_ == nullptr || dst_ == last_sync_) return IOStatus::OK();
    // The pages holding the first and the last byte not yet synced.
    size_t p1 = static_cast<size_t>(last_sync_ - base_);
    p1 -= p1 % page_;
    size_t p2 = static_cast<size_t>(dst_ - base_ - 1);
    p2 -= p2 % page_;
    last_sync_ = dst_;
    SyscallTimer t(fs_->LocalCounters(), kSys_msync);
    if (msync(base_ + p1, p2 - p1 + page_, MS_SYNC) != 0) return ErrnoStatus("msync", name_, errno);
    return IOStatus::OK();
  }

  RxFileSystem* fs_;
  std::string name_;
  int fd_;
  const size_t page_;
  size_t map_size_;
  const bool keep_size_;
  uint64_t size_;  // bytes in the file as written (the mapped region runs past it)
  bool mapped_ = false;
  char* base_ = nullptr;       // the mapped region
  char* limit_ = nullptr;      // its end
  char* dst_ = nullptr;        // where the next byte goes
  char* last_sync_ = nullptr;  // synced up to here
};

}  // namespace

IOStatus NewMmapReadableFile(RxFileSystem* fs, const std::string& fname, int fd,
                             std::unique_ptr<FSRandomAccessFile>* r) {
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return ErrnoStatus("fstat", fname, err);
  }
  // An empty file cannot be mapped (EINVAL): RocksDB's posix file system then
  // fails the open, and so does this one, with the same errno.
  const size_t length = static_cast<size_t>(st.st_size);
  void* base;
  {
    SyscallTimer t(fs->LocalCounters(), kSys_mmap);
    base = mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  }
  if (base == MAP_FAILED) {
    int err = errno;
    close(fd);
    return ErrnoStatus("mmap for reading", fname, err);
  }
  r->reset(new RxMmapReadableFile(fs, fname, fd, static_cast<char*>(base), length));
  return IOStatus::OK();
}

bool MmapWritesSupported(int fd, const FileOptions& o) {
  // PosixMmapFile skips its region's fallocate when allow_fallocate=false and
  // then maps pages past the end of the file: the first store is SIGBUS.
  // Without the reservation mapped writes are unsafe, so they are declined
  // as on a file system without fast fallocate.
  if (!o.allow_fallocate) return false;
  struct statfs s;
  if (fstatfs(fd, &s) != 0) return false;
  switch (s.f_type) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3 (one magic)
    case XFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
      return true;
    default:
      return false;
  }
}

std::unique_ptr<FSWritableFile> NewMmapWritableFile(RxFileSystem* fs, const std::string& fname, int fd,
                                                    uint64_t start, const FileOptions& o) {
  return std::make_unique<RxMmapWritableFile>(fs, fname, fd, start, o);
}

}  // namespace rxlab
