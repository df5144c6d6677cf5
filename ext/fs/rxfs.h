// The RocksDB FileSystem over rxlab's engines. Metadata operations go to the
// wrapped default file system; the data path (random, sequential and
// writable files) goes through the engine named in the URI, with per-thread
// engines and counters.
#pragma once

#include <rocksdb/file_system.h>
#include <rocksdb/version.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine.h"

namespace rxlab {

// The ReadAsync callback lost its const in RocksDB 9.
#if ROCKSDB_MAJOR >= 9
using AsyncCallback = std::function<void(rocksdb::FSReadRequest&, void*)>;
#else
using AsyncCallback = std::function<void(const rocksdb::FSReadRequest&, void*)>;
#endif

struct ThreadState;
struct StateRegistry;

// Aggregated counters: totals by name and the device-read latency histogram.
struct CounterSnapshot {
  std::map<std::string, uint64_t> values;       // events and sys.<name>.count/.ns
  std::vector<std::pair<uint64_t, uint64_t>> read_latency;  // (bucket lower ns, count)
  uint64_t threads = 0;
  std::string ToJson(const std::string& uri) const;
};

// buffer_align=auto, as HotParams holds it.
constexpr int64_t kBufferAlignAuto = -1;

// The options the data path consults on every request, parsed once (a
// string lookup per read showed up in profiles).
struct HotParams {
  int64_t delay_us = 0, jitter_us = 0, delay_spin_us = 30;
  bool iopoll = false;
  bool buffered_pwrite = true;  // buffered_writes=pwrite
  bool buffered_pread = true;   // buffered_reads=pread
  bool buffered_nowait = true;  // buffered_batches=nowait
  bool direct_pwrite = true;    // direct_writes=pwrite
  double p_eio = 0, p_eintr = 0, p_eagain = 0, p_short = 0;
  bool any_read_fault = false;
  int64_t enospc_after = -1;
  // 0 and kBufferAlignAuto: the device's logical block size.
  int64_t buffer_align = -1;
};

class RxFileSystem : public rocksdb::FileSystemWrapper {
 public:
  // Parse a URI and build the file system; nullptr and a one-line *err on a
  // bad engine, option or value.
  static std::shared_ptr<RxFileSystem> Create(const std::string& uri, std::string* err);

  explicit RxFileSystem(Config cfg);
  ~RxFileSystem() override;

  static const char* kClassName() { return "rxlab"; }
  const char* Name() const override { return kClassName(); }

  rocksdb::IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Poll(std::vector<void*>& io_handles, size_t min_completions) override;
  rocksdb::IOStatus AbortIO(std::vector<void*>& io_handles) override;
#if ROCKSDB_MAJOR >= 8  // FSSupportedOps arrived after 7.x
  void SupportedOps(int64_t& supported_ops) override;
#endif

  const Config& config() const { return cfg_; }
  const HotParams& hot() const { return hot_; }
  std::string uri() const { return cfg_.Uri(); }
  CounterSnapshot Counters() const;
  void ResetCounters();

  // Internals shared with the file classes.
  ThreadState* State();
  ThreadCounters* LocalCounters();  // this thread's counter block (mmap.cc)
  int AllocSlot(uint64_t* file_id);
  void FreeSlot(int slot, uint64_t file_id);
  bool CheckEnospc(size_t n, rocksdb::IOStatus* s) {
    return hot_.enospc_after < 0 || CountTowardsEnospc(n, s);  // inline: every append asks
  }
  bool FaultsApply(const std::string& fname) const;
  // The O_DIRECT alignment a file on fd asks of RocksDB for its whole life
  // (buffer_align, or the device's logical block size for 0 and auto).
  size_t DirectAlignment(int fd) const;

 private:
  template <typename Base>
  using MakeFile = std::unique_ptr<Base> (*)(RxFileSystem*, std::string, int, bool);
  template <typename Base>
  rocksdb::IOStatus OpenReadable(const std::string& f, const rocksdb::FileOptions& o,
                                 MakeFile<Base> make, std::unique_ptr<Base>* r);
  // How a writable file is opened, as RocksDB's posix file system does:
  // kCreate truncates; kReopen appends after what the file holds; kReuse (a
  // recycled WAL, already renamed) writes over it from offset 0.
  enum class WriteOpen { kCreate, kReopen, kReuse };
  rocksdb::IOStatus OpenWritable(const std::string& f, const rocksdb::FileOptions& o,
                                 WriteOpen how, std::unique_ptr<rocksdb::FSWritableFile>* r);

  bool CountTowardsEnospc(size_t n, rocksdb::IOStatus* s);

  Config cfg_;
  HotParams hot_;
  const EngineDef* def_;
  uint64_t id_;
  std::shared_ptr<StateRegistry> reg_;
  bool registered_files_ = false;
  std::mutex slot_mu_;
  std::vector<int> free_slots_;
  std::atomic<uint64_t> next_file_id_{1};
  std::atomic<int64_t> bytes_written_{0};
};

// An IOStatus for a failed system call: "what file: strerror(err)", NoSpace
// and PathNotFound where the errno says so.
rocksdb::IOStatus ErrnoStatus(const std::string& what, const std::string& file, int err);

// Every live rxlab file system in the process (the plugin writes their
// counters at exit).
std::vector<std::shared_ptr<RxFileSystem>> LiveFileSystems();

// The flag behind RocksDbIOUringEnable(), which RocksDB's own posix file
// system asks (at each file open) before using io_uring for MultiRead and
// ReadAsync. The Python module defines the symbol; the plugin does not
// (db_bench has its own).
extern std::atomic<bool> g_rocksdb_io_uring_enable;

}  // namespace rxlab
