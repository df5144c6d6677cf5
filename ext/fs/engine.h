// One small interface that every IO engine implements, shaped like fio's
// struct ioengine_ops: queue a request, commit what is queued, reap
// completions, cancel. A synchronous engine (posix) does the IO inside
// Queue() and answers kCompleted; the others answer kQueued and complete in
// Reap(). The RocksDB adapter (executor.h and the file classes of files.h)
// turns Read, MultiRead, ReadAsync/Poll and the write calls into these
// operations once, for every engine.
//
// Adding an engine: a new file that defines one EngineDef, plus one line in
// engines.cc (and the file in CMakeLists.txt's rxfs list).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "counters.h"

namespace rxlab {

// The functions of a synchronous read's path, from RocksDB's call to the
// system call. GCC puts them in .text.hot, which the linker lays out
// together: scattered over the library, they touched six code pages per
// read, each a likely iTLB miss after the blocking read before it.
#define RXLAB_HOT __attribute__((hot))

enum class Op : uint8_t { kRead, kWrite };

// One IO request. Owned by the caller; the engine only keeps a pointer to it
// while it is in flight.
struct IoReq {
  Op op = Op::kRead;
  int fd = -1;
  // Registered-file slot and the id of the file that owns it (io_uring
  // registered files); -1 when the file has no slot.
  int slot = -1;
  uint64_t file_id = 0;
  uint64_t offset = 0;
  size_t len = 0;
  char* buf = nullptr;

  // Set by the engine at completion: bytes transferred or -errno.
  int64_t res = 0;

  // Bookkeeping of the adapter's executor.
  uint64_t submit_ns = 0;
  uint64_t deadline_ns = 0;
  int fixed_buf = -1;  // io_uring bounce buffer in use, -1 if none
  void* owner = nullptr;  // the engine's own bookkeeping
  void* job = nullptr;    // the adapter's request that this IO belongs to
};

enum class QueueResult { kCompleted, kQueued, kBusy };

class Engine {
 public:
  virtual ~Engine() = default;
  // Queue one request. kCompleted: done now, res is set. kQueued: will be
  // returned by Reap() after Commit(). kBusy: commit and reap first.
  virtual QueueResult Queue(IoReq* r) = 0;
  // Hand every queued request to the kernel; if wait_nr > 0, also wait for
  // that many completions in the same system call where the engine can.
  // Returns 0 or -errno.
  virtual int Commit(int wait_nr) = 0;
  // Collect completions: at least `min` (blocking up to timeout_ns, -1 =
  // forever, 0 = poll), at most `max`, into out[]. Returns the number
  // collected or -errno (-ETIME on timeout with nothing collected).
  virtual int Reap(int min, int max, IoReq** out, int64_t timeout_ns) = 0;
  // Ask the kernel to cancel an in-flight request. Its completion is still
  // delivered by Reap (possibly with -ECANCELED).
  virtual void Cancel(IoReq* /*r*/) {}
  // How many requests may be in flight at once.
  virtual int Depth() const = 0;
  // Point registered-file slot `slot` at `fd` (-1 to clear). Only engines
  // with registered files do anything; may be called from another thread.
  virtual void SetFileSlot(int /*slot*/, int /*fd*/, uint64_t /*file_id*/) {}
  // True if Queue() always completes the request itself. Not virtual: the
  // executor asks on every request, and a call to a constant is a cost a
  // page-cache read has no wait to hide in
  // (docs/findings/2026-12-07-plain-read.md).
  bool synchronous() const { return synchronous_; }
  // True if Queue() of a read is one pread(2) and nothing else (posix): the
  // adapter may then make that call itself (ThreadState::Pread).
  bool plain_pread() const { return plain_pread_; }
  // True if a request on a buffered (non-O_DIRECT) file is done inside its
  // submission (libaio: Linux AIO is asynchronous only with O_DIRECT), so
  // requests queued together are not in flight together.
  bool buffered_in_submit() const { return buffered_in_submit_; }

 protected:
  Engine() = default;
  Engine(bool synchronous, bool plain_pread, bool buffered_in_submit = false)
      : synchronous_(synchronous), plain_pread_(plain_pread), buffered_in_submit_(buffered_in_submit) {}

 private:
  bool synchronous_ = false;
  bool plain_pread_ = false;
  bool buffered_in_submit_ = false;
};

// An engine whose Queue() always does the IO itself (posix, sync): nothing is
// ever queued, so committing and reaping have nothing to do.
class SynchronousEngine : public Engine {
 public:
  int Commit(int) override { return 0; }
  int Reap(int, int, IoReq**, int64_t) override { return 0; }
  int Depth() const override { return 1; }

 protected:
  explicit SynchronousEngine(bool plain_pread = false) : Engine(true, plain_pread) {}
};

// Options in a URI, with their parsed values. Every option an engine or the
// adapter accepts is declared with a default and a one-line help.
struct OptionDef {
  const char* name;
  const char* default_value;
  const char* help;
};

class Config {
 public:
  std::string engine;
  std::map<std::string, std::string> values;  // every declared option, defaulted

  const std::string& Str(const std::string& key) const;
  int64_t Int(const std::string& key) const;
  double Double(const std::string& key) const;
  bool Bool(const std::string& key) const;
  // Canonical form: the options that differ from their defaults, in name
  // order. "rxlab://ENGINE?k=v&k=v"; RocksDB's own file system is "default"
  // or "default?io_uring=1" (no prefix: it is not an rxlab URI).
  std::string Uri() const;
  // The same without "rxlab://": "posix", "io_uring?sqpoll=1", "default".
  std::string Label() const;
  bool is_default_fs() const { return engine == kDefaultFs; }
  std::map<std::string, std::string> defaults;

  static constexpr const char* kDefaultFs = "default";
};

struct EngineDef {
  const char* name;
  const char* help;
  std::vector<OptionDef> options;
  // Check what can be checked before any file is opened (kernel support,
  // device capabilities). Empty string = fine, else a one-line reason.
  std::string (*check)(const Config& cfg);
  // One engine instance per thread (and a second one for async reads).
  std::unique_ptr<Engine> (*create)(const Config& cfg, ThreadCounters* counters,
                                    std::string* err);
  // True if the engine needs a file descriptor of its own (it moves the file
  // offset): rxlab fio only, never RocksDB, whose threads share one.
  bool owns_fd_only = false;
};

// The registry (engines.cc).
const std::vector<const EngineDef*>& Engines();
const EngineDef* FindEngine(const std::string& name);

// Options every engine accepts (the adapter implements them).
const std::vector<OptionDef>& CommonOptions();

// Parse "rxlab://ENGINE?k=v&k=v" (the "rxlab://" prefix is optional).
// On error returns false and a one-line message naming the bad part and what
// is allowed.
bool ParseUri(const std::string& uri, Config* cfg, std::string* err);

// ParseUri, and also RocksDB's own file system: "default" or
// "default?io_uring=0|1" (whether RocksDbIOUringEnable() answers true), as
// Config engine "default" with the one option io_uring. The one place where a
// backend string is taken apart (the Python module and the driver use it).
bool ParseBackend(const std::string& uri, Config* cfg, std::string* err);

// The options of the "default" backend.
const std::vector<OptionDef>& DefaultFsOptions();

// Monotonic clock in nanoseconds.
uint64_t NowNs();

// Wait until `deadline` (monotonic ns): sleep, then spin the last `spin_ns`
// for precision (the caller sets its timer slack to 1 ns). Spinning costs
// CPU that getrusage counts: delay_spin_us=0 trades precision for CPU
// figures free of it.
void WaitUntil(uint64_t deadline, uint64_t spin_ns);

}  // namespace rxlab
