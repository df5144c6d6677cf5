// The RocksDB FileSystem over rxlab's engines: it opens files (metadata goes
// to the wrapped default file system) and hands each descriptor to its file
// class (files.h); the engines, per thread, are the executor's (executor.h).
#include "rxfs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "executor.h"
#include "files.h"
#include "mmap.h"

namespace rxlab {

std::atomic<bool> g_rocksdb_io_uring_enable{false};

IOStatus ErrnoStatus(const std::string& what, const std::string& file, int err) {
  std::string msg = what + " " + file + ": " + strerror(err);
  if (err == ENOSPC) return IOStatus::NoSpace(msg);
  if (err == ENOENT) return IOStatus::PathNotFound(msg);
  return IOStatus::IOError(msg);
}

namespace {

std::atomic<uint64_t> g_next_fs_id{1};
std::mutex g_live_mu;
std::vector<std::weak_ptr<RxFileSystem>> g_live;

}  // namespace

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
  hot_.buffered_pread = cfg_.Str("buffered_reads") == "pread";
  hot_.buffered_nowait = cfg_.Str("buffered_batches") == "nowait";
  hot_.direct_pwrite = cfg_.Str("direct_writes") == "pwrite";
  hot_.p_eio = cfg_.Double("fault_eio");
  hot_.p_eintr = cfg_.Double("fault_eintr");
  hot_.p_eagain = cfg_.Double("fault_eagain");
  hot_.p_short = cfg_.Double("fault_short_read");
  hot_.enospc_after = cfg_.Int("enospc_after");
  hot_.buffer_align =
      cfg_.Str("buffer_align") == "auto" ? kBufferAlignAuto : cfg_.Int("buffer_align");
  hot_.any_read_fault = hot_.p_eio > 0 || hot_.p_eintr > 0 || hot_.p_eagain > 0 || hot_.p_short > 0;
  registered_files_ = cfg_.Bool("registered_files");
  if (registered_files_) {
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
  if (hot_.buffer_align <= 0) return logical;  // 0 or auto
  return std::max(logical, static_cast<size_t>(hot_.buffer_align));
}

int RxFileSystem::AllocSlot(uint64_t* file_id) {
  *file_id = next_file_id_.fetch_add(1);
  if (!registered_files_) return -1;  // no slot table: opening a file takes no lock
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

bool RxFileSystem::CountTowardsEnospc(size_t n, IOStatus* s) {
  int64_t limit = hot_.enospc_after;
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
template <typename Base>
rocksdb::IOStatus RxFileSystem::OpenReadable(const std::string& f, const FileOptions& o,
                                             MakeFile<Base> make, std::unique_ptr<Base>* r) {
  const bool direct = o.use_direct_reads && !o.use_mmap_reads;
  int fd = open(f.c_str(), O_RDONLY | OpenFlags(o, direct));
  if (fd < 0) return OpenError(f, direct, errno);
  *r = make(this, f, fd, direct);
  return IOStatus::OK();
}

rocksdb::IOStatus RxFileSystem::NewSequentialFile(const std::string& f, const FileOptions& o,
                                                  std::unique_ptr<FSSequentialFile>* r,
                                                  IODebugContext*) {
  return OpenReadable(f, o, &MakeSequentialFile, r);
}

// use_mmap_reads: the file is mapped and read by page faults (mmap.cc), on
// every engine, as RocksDB's posix file system does whenever it is set.
rocksdb::IOStatus RxFileSystem::NewRandomAccessFile(const std::string& f, const FileOptions& o,
                                                    std::unique_ptr<FSRandomAccessFile>* r,
                                                    IODebugContext*) {
  if (!o.use_mmap_reads) return OpenReadable(f, o, &MakeRandomAccessFile, r);
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
  *r = MakeWritableFile(this, f, fd, direct, size, plain);
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

#if ROCKSDB_MAJOR >= 8
// Async reads only: RocksDB then sends ReadOptions::async_io scans to our
// ReadAsync. (No kFSBuffer: our reads land in RocksDB's buffers.)
RXLAB_HOT void RxFileSystem::SupportedOps(int64_t& supported_ops) {
  supported_ops = 1 << rocksdb::FSSupportedOps::kAsyncIO;
}
#endif

IOStatus DropPageCache(RxFileSystem* fs, int fd, bool direct, const std::string& name, size_t offset,
                       size_t length) {
  if (direct) return IOStatus::OK();
  SyscallTimer t(fs->State()->counters.get(), kSys_fadvise64);
  int r = posix_fadvise(fd, static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_DONTNEED);
  return r == 0 ? IOStatus::OK() : ErrnoStatus("fadvise", name, r);
}

}  // namespace rxlab
