#include "workloads.h"

#include <linux/perf_event.h>
#include <rocksdb/iostats_context.h>
#include <rocksdb/metadata.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/write_batch.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

namespace rxlab {
namespace {

enum OpType { kGet, kPut, kMultiGet, kSeek, kNext, kFlush, kCompact, kWait, kNumOps };
const char* const kOpNames[kNumOps] = {"get", "put", "multiget", "seek", "next", "flush", "compact",
                                       "wait"};

// splitmix64: small, fast, and good enough for picking keys.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t Next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * (1.0 / 9007199254740992.0); }
};

// The key generator of a worker: db_bench's Random64 (a 64-bit Mersenne
// Twister), so that the same seed gives the same key sequence as db_bench's
// GetRandomKey (Next() % num).
// Its 2.5 KB of state lives on the heap: on a reader's stack it pushed the
// thread's start out of the 8 KB that perf copies to unwind with DWARF.
struct KeyRng {
  std::unique_ptr<std::mt19937_64> gen;
  explicit KeyRng(uint64_t seed) : gen(std::make_unique<std::mt19937_64>(seed)) {}
  uint64_t Next() { return (*gen)(); }
};

// Values like db_bench's: a 1 MiB pool made of 100-byte fragments whose
// first ratio*100 bytes are random printable characters and the rest
// repeats them, so the data compresses to about `ratio`.
class ValuePool {
 public:
  ValuePool(double ratio, size_t max_len, uint64_t seed) {
    Rng r(seed);
    size_t size = std::max<size_t>(1 << 20, max_len);
    size_t raw = std::max<size_t>(1, static_cast<size_t>(100 * ratio));
    while (data_.size() < size) {
      std::string frag;
      for (size_t i = 0; i < raw; i++) frag.push_back(static_cast<char>(' ' + r.Next() % 95));
      while (frag.size() < 100) frag.append(frag, 0, std::min(raw, 100 - frag.size()));
      data_ += frag;
    }
  }
  rocksdb::Slice Get(size_t len) {
    if (pos_ + len > data_.size()) pos_ = 0;
    rocksdb::Slice s(data_.data() + pos_, len);
    pos_ += len;
    return s;
  }

 private:
  std::string data_;
  size_t pos_ = 0;
};

// perf_event counters of the calling thread.
class PerfEvents {
 public:
  struct Def {
    const char* name;
    uint32_t type;
    uint64_t config;
  };
  static const std::vector<Def>& Defs() {
    static const std::vector<Def> d = {
        {"task_clock_ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK},
        {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
        {"cpu_migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
        {"page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
        {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
        {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
    };
    return d;
  }
  PerfEvents() {
    for (const Def& d : Defs()) {
      perf_event_attr a{};
      a.size = sizeof(a);
      a.type = d.type;
      a.config = d.config;
      a.disabled = 1;
      a.exclude_hv = 1;
      int fd = static_cast<int>(syscall(SYS_perf_event_open, &a, 0, -1, -1, 0));
      fds_.push_back(fd);
    }
  }
  ~PerfEvents() {
    for (int fd : fds_)
      if (fd >= 0) close(fd);
  }
  void Start() {
    for (int fd : fds_)
      if (fd >= 0) ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  // -1 where the machine has no such counter (no PMU in a VM, paranoid).
  std::vector<int64_t> Stop() {
    std::vector<int64_t> v;
    for (int fd : fds_) {
      uint64_t x = 0;
      if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) == 0 && read(fd, &x, sizeof(x)) == sizeof(x))
        v.push_back(static_cast<int64_t>(x));
      else
        v.push_back(-1);
    }
    return v;
  }

 private:
  std::vector<int> fds_;
};

// "name = value, name = value" (RocksDB's ToString of its contexts).
void ParseCounters(const std::string& s, std::map<std::string, uint64_t>* out) {
  size_t i = 0;
  while (i < s.size()) {
    size_t eq = s.find(" = ", i);
    if (eq == std::string::npos) break;
    size_t end = s.find(',', eq);
    if (end == std::string::npos) end = s.size();
    std::string name = s.substr(i, eq - i);
    while (!name.empty() && name.front() == ' ') name.erase(0, 1);
    std::string val = s.substr(eq + 3, end - eq - 3);
    char* e = nullptr;
    unsigned long long v = strtoull(val.c_str(), &e, 10);
    if (e != val.c_str() && name.find('@') == std::string::npos && name != "thread_pool_id")
      (*out)[name] += v;
    i = end + 1;
  }
}

struct ThreadOut {
  int64_t ops = 0, calls = 0, found = 0, bytes = 0;
  double user_s = 0, sys_s = 0;  // this worker's own CPU during fn
  double run_delay_s = -1;       // its time waiting for a CPU during fn (-1: unknown)
  bool pin_failed = false;       // cpus_split asked for and sched_setaffinity refused
  std::unique_ptr<LatencyHistogram> hist[kNumOps];
  std::map<std::string, uint64_t> perf_context, iostats;
  std::vector<int64_t> events;
  std::vector<int64_t> calls_by_cpu;  // see StepResult
  std::atomic<int64_t> progress{0};  // read by the 1 Hz sampler
  // This worker's pair of slots in the progress file (StepSpec::progress_file), and what they held when
  // the step began (an earlier step's counts).
  int64_t* shared = nullptr;
  int64_t shared_ops = 0, shared_bytes = 0;
  void Publish() {
    progress.store(ops, std::memory_order_relaxed);
    if (shared) {
      __atomic_store_n(shared + 1, shared_bytes + bytes, __ATOMIC_RELAXED);
      __atomic_store_n(shared, shared_ops + ops, __ATOMIC_RELAXED);
    }
  }
  ThreadOut() {
    for (auto& h : hist) h = std::make_unique<LatencyHistogram>();
  }
};

// StepSpec::progress_file mapped shared, two int64 slots per worker (its
// operations, and the bytes they moved as db_bench counts them): another
// process reads it between this one's slices. The slots are plain stores of
// each worker's counts; a reader that has stopped the process (all its
// threads) sees every store made before the stop. A step that names a file
// an earlier step left with as many slots continues its counts (a scan that
// starts over at the first key is one measurement, not a reset); a file of
// another size starts from zero.
class ProgressFile {
 public:
  ProgressFile(const std::string& path, int workers) {
    if (path.empty()) return;
    size_ = 2 * sizeof(int64_t) * static_cast<size_t>(workers);
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct stat st {};
    bool fresh = fd >= 0 && (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) != size_);
    if (fd < 0 || (fresh && (ftruncate(fd, 0) != 0 || ftruncate(fd, static_cast<off_t>(size_)) != 0))) {
      int e = errno;
      if (fd >= 0) close(fd);
      throw InputError("progress_file '" + path + "': " + std::strerror(e));
    }
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) throw InputError("progress_file '" + path + "': mmap: " + std::strerror(e));
    slots_ = static_cast<int64_t*>(p);
  }
  ~ProgressFile() {
    if (slots_) munmap(slots_, size_);
  }
  ProgressFile(const ProgressFile&) = delete;
  ProgressFile& operator=(const ProgressFile&) = delete;
  int64_t* slot(int i) const { return slots_ ? slots_ + 2 * i : nullptr; }

 private:
  int64_t* slots_ = nullptr;
  size_t size_ = 0;
};

class Runner {
 public:
  Runner(Database& db, const StepSpec& s, std::atomic<bool>* cancel)
      : db_(db), s_(s), ro_(), wo_(), cancel_(cancel) {
    ro_.verify_checksums = s.verify_checksums;
    ro_.async_io = s.async_io;
    ro_.readahead_size = static_cast<size_t>(s.readahead_size);
    ro_.optimize_multiget_for_io = s.optimize_multiget_for_io;
    wo_.sync = s.sync;
    wo_.disableWAL = s.disable_wal;
    readers_first_tid_ = s.name == "readwhilewriting" || s.name == "seekrandomwhilewriting" ? 1 : 0;
  }

  // Run fn(thread index, out) on n threads; the caller samples progress.
  void Parallel(int n, const std::function<void(int, ThreadOut&)>& fn, StepResult* res,
                const std::function<void()>& extra = nullptr) {
    outs_.clear();
    ProgressFile shared(s_.progress_file, n);  // outlives the workers: they are joined below
    for (int i = 0; i < n; i++) {
      outs_.push_back(std::make_unique<ThreadOut>());
      if (int64_t* slot = shared.slot(i)) {
        outs_.back()->shared = slot;
        outs_.back()->shared_ops = slot[0];
        outs_.back()->shared_bytes = slot[1];
      }
    }
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> ts;
    for (int i = 0; i < n; i++) {
      ts.emplace_back([&, i] {
        ThreadOut& o = *outs_[i];
        if (s_.cpus_split && PinThreadSplit(i) < 0) o.pin_failed = true;
        rocksdb::SetPerfLevel(static_cast<rocksdb::PerfLevel>(s_.perf_level));
        rocksdb::get_perf_context()->Reset();
        rocksdb::get_iostats_context()->Reset();
        std::optional<PerfEvents> pe;
        if (s_.perf_events) pe.emplace();
        ready++;
        while (!go.load()) std::this_thread::yield();
        if (pe) pe->Start();
        double u0 = ThreadCpuSeconds(true), s0 = ThreadCpuSeconds(false), q0 = ThreadRunDelaySeconds();
        fn(i, o);
        o.user_s = ThreadCpuSeconds(true) - u0;
        o.sys_s = ThreadCpuSeconds(false) - s0;
        if (q0 >= 0) o.run_delay_s = ThreadRunDelaySeconds() - q0;
        if (pe) o.events = pe->Stop();
        if (s_.perf_level > 1) {
          ParseCounters(rocksdb::get_perf_context()->ToString(true), &o.perf_context);
          ParseCounters(rocksdb::get_iostats_context()->ToString(true), &o.iostats);
        }
        rocksdb::SetPerfLevel(rocksdb::kDisable);
        {
          std::lock_guard<std::mutex> g(done_mu_);
          done_++;
        }
        done_cv_.notify_all();
      });
    }
    while (ready.load() < n) std::this_thread::yield();
    std::thread writer;
    if (extra) writer = std::thread(extra);
    uint64_t t0 = MonoNs();
    res->start_mono_s = static_cast<double>(t0) / 1e9;
    go = true;
    // 1 Hz series of completed operations (warm-up and stalls show up).
    uint64_t next = t0 + 1000000000ull;
    // The main thread sleeps until the next second or the last worker's end
    // (not a polling loop: its wake-ups would be CPU charged to the step).
    {
      std::unique_lock<std::mutex> lk(done_mu_);
      while (done_.load() < n) {
        std::chrono::steady_clock::time_point at{std::chrono::nanoseconds(next)};
        done_cv_.wait_until(lk, at, [&] { return done_.load() >= n; });
        uint64_t now = MonoNs();
        if (now >= next) {
          int64_t sum = 0;
          for (auto& o : outs_) sum += o->progress.load(std::memory_order_relaxed);
          res->ops_series.emplace_back(static_cast<double>(now) / 1e9, sum);
          next += 1000000000ull;
        }
      }
    }
    for (auto& t : ts) t.join();
    res->wall_s = static_cast<double>(MonoNs() - t0) / 1e9;
    stop_writer_ = true;
    if (writer.joinable()) writer.join();
    Collect(res);
  }

  bool Cancelled() const { return cancel_ && cancel_->load(std::memory_order_relaxed); }
  bool Done(const ThreadOut& o, int64_t limit, uint64_t deadline) const {
    if (Cancelled()) return true;
    if (deadline) return MonoNs() >= deadline;
    return o.calls >= limit;
  }
  uint64_t Deadline() const {
    return s_.duration > 0 ? MonoNs() + static_cast<uint64_t>(s_.duration * 1e9) : 0;
  }
  int64_t ReadLimit() const { return s_.ops >= 0 ? s_.ops : s_.num; }

  static void Timed(ThreadOut& o, OpType op, uint64_t t0) { o.hist[op]->Add(MonoNs() - t0); }
  // A lookup's outcome: found and bytes, or an error that ends the step.
  static void CountLookup(ThreadOut& o, const rocksdb::Status& st, size_t key_size, size_t value_size,
                          const char* what) {
    if (st.ok()) {
      o.found++;
      o.bytes += static_cast<int64_t>(key_size + value_size);
    } else if (!st.IsNotFound()) {
      Check(st, what);
    }
  }
  // One API call of n operations done; the 1 Hz sampler reads progress.
  static void EndCall(ThreadOut& o, int64_t n) {
    o.ops += n;
    o.calls++;
    CountCpu(o.calls_by_cpu, 1);
    o.Publish();
  }

  std::string& Key(std::string& buf, uint64_t i) const {
    buf.resize(static_cast<size_t>(s_.key_size));
    MakeKey(i, s_.key_size, &buf[0]);
    return buf;
  }

  // ---- workloads ----

  void Fill(int t, ThreadOut& o, bool sequential) {
    KeyRng r(KeySeed(t));
    ValuePool vals(s_.compression_ratio, static_cast<size_t>(s_.value_size), ValueSeed(t) ^ 0x5555);
    int64_t per = s_.ops >= 0 ? s_.ops : s_.num / s_.threads;
    int64_t first = sequential ? static_cast<int64_t>(t) * (s_.num / s_.threads) : 0;
    uint64_t deadline = Deadline();
    std::string key;
    rocksdb::WriteBatch batch;
    int64_t i = 0;
    while (!Cancelled() && !(deadline ? MonoNs() >= deadline : i >= per)) {
      batch.Clear();
      // db_bench draws, per batch, which of its DBs to write (one here) before the keys;
      // drawing it too keeps a seed's key sequence db_bench's.
      if (!sequential) r.Next();
      uint64_t t0 = MonoNs();
      for (int b = 0; b < s_.batch_size && (deadline || i < per); b++, i++) {
        uint64_t k = sequential ? static_cast<uint64_t>(first + i) % static_cast<uint64_t>(s_.num)
                                : r.Next() % static_cast<uint64_t>(s_.num);
        Key(key, k);
        rocksdb::Status st = batch.Put(key, vals.Get(static_cast<size_t>(s_.value_size)));
        o.bytes += s_.key_size + s_.value_size;
        o.ops++;
      }
      Check(db_.db()->Write(wo_, &batch), "write");
      Timed(o, kPut, t0);
      EndCall(o, 0);  // ops were counted per entry of the batch
    }
  }

  void ReadRandom(int t, ThreadOut& o) {
    KeyRng r(KeySeed(t + readers_first_tid_));
    uint64_t deadline = Deadline();
    std::string key;
    rocksdb::PinnableSlice val;
    while (!Done(o, ReadLimit(), deadline)) {
      r.Next();  // db_bench draws which of its DBs to read (one here) before the key
      Key(key, r.Next() % static_cast<uint64_t>(s_.num));
      val.Reset();
      uint64_t t0 = MonoNs();
      rocksdb::Status st = db_.db()->Get(ro_, db_.db()->DefaultColumnFamily(), key, &val);
      Timed(o, kGet, t0);
      CountLookup(o, st, key.size(), val.size(), "get");
      EndCall(o, 1);
    }
  }

  void MultiRead(int t, ThreadOut& o) {
    KeyRng r(KeySeed(t));
    uint64_t deadline = Deadline();
    size_t n = static_cast<size_t>(s_.batch_size);
    std::vector<std::string> keys(n);
    std::vector<rocksdb::Slice> ks(n);
    std::vector<rocksdb::PinnableSlice> vals(n);
    std::vector<rocksdb::Status> sts(n);
    std::vector<std::string> strvals;
    int64_t limit = ReadLimit() / static_cast<int64_t>(n) + (ReadLimit() % static_cast<int64_t>(n) ? 1 : 0);
    const uint64_t num = static_cast<uint64_t>(s_.num), stride = static_cast<uint64_t>(s_.multiread_stride);
    while (!Done(o, limit, deadline)) {
      uint64_t base = r.Next() % num;
      // db_bench: a strided batch that would run past the last key starts earlier instead.
      if (stride && base + (n - 1) * stride >= num) base = num > n * stride ? num - n * stride : 0;
      for (size_t i = 0; i < n; i++) {
        uint64_t k = stride ? (base + i * stride) % num : (i == 0 ? base : r.Next() % num);
        Key(keys[i], k);
        ks[i] = keys[i];
        vals[i].Reset();
      }
      uint64_t t0 = MonoNs();
      if (s_.multiread_batched) {
        db_.db()->MultiGet(ro_, db_.db()->DefaultColumnFamily(), n, ks.data(), vals.data(), sts.data());
      } else {
        sts = db_.db()->MultiGet(ro_, ks, &strvals);
      }
      Timed(o, kMultiGet, t0);
      for (size_t i = 0; i < n; i++)
        CountLookup(o, sts[i], ks[i].size(),
                    sts[i].ok() ? (s_.multiread_batched ? vals[i].size() : strvals[i].size()) : 0, "multiget");
      EndCall(o, static_cast<int64_t>(n));
    }
  }

  void SeekRandom(int t, ThreadOut& o) {
    KeyRng r(KeySeed(t + readers_first_tid_));
    uint64_t deadline = Deadline();
    std::string key;
    while (!Done(o, ReadLimit(), deadline)) {
      Key(key, r.Next() % static_cast<uint64_t>(s_.num));
      uint64_t t0 = MonoNs();
      // A new iterator per seek, as db_bench does without a tailing iterator.
      std::unique_ptr<rocksdb::Iterator> it(db_.db()->NewIterator(ro_));
      if (s_.reverse_iterator)
        it->SeekForPrev(key);
      else
        it->Seek(key);
      if (it->Valid() && it->key() == rocksdb::Slice(key)) o.found++;
      for (int j = 0; j < s_.seek_nexts && it->Valid(); j++) {
        o.bytes += static_cast<int64_t>(it->key().size() + it->value().size());
        if (s_.reverse_iterator)
          it->Prev();
        else
          it->Next();
      }
      Check(it->status(), "seek");
      Timed(o, kSeek, t0);
      EndCall(o, 1);
    }
  }

  void ReadSeq(int t, ThreadOut& o, bool reverse) {
    uint64_t deadline = Deadline();
    std::unique_ptr<rocksdb::Iterator> it(db_.db()->NewIterator(ro_));
    uint64_t t0 = MonoNs();
    reverse ? it->SeekToLast() : it->SeekToFirst();
    Timed(o, kSeek, t0);
    while (it->Valid() && !Done(o, ReadLimit(), deadline)) {
      o.bytes += static_cast<int64_t>(it->key().size() + it->value().size());
      o.found++;
      t0 = MonoNs();
      reverse ? it->Prev() : it->Next();
      Timed(o, kNext, t0);
      o.ops++;
      o.calls++;
      CountCpu(o.calls_by_cpu, 1);
      if ((o.ops & 1023) == 0) o.Publish();
    }
    o.Publish();
    Check(it->status(), "iterate");
  }

  // db_bench's mixgraph: Get/Put/Seek by ratio, value sizes and scan lengths
  // from Pareto distributions; keys uniform unless key_dist_a/b are set.
  void MixGraph(int t, ThreadOut& o) {
    KeyRng r(KeySeed(t));
    ValuePool vals(s_.compression_ratio, static_cast<size_t>(s_.mix_max_value_size), ValueSeed(t) ^ 0x77);
    double sum = s_.mix_get_ratio + s_.mix_put_ratio + s_.mix_seek_ratio;
    int b0 = static_cast<int>(std::ceil(1000 * s_.mix_get_ratio / sum));
    int b1 = b0 + static_cast<int>(std::ceil(1000 * s_.mix_put_ratio / sum));
    int range = b1 + static_cast<int>(std::ceil(1000 * s_.mix_seek_ratio / sum));
    uint64_t deadline = Deadline();
    uint64_t start = MonoNs();
    std::string key;
    rocksdb::PinnableSlice val;
    double rate = 0;  // ops/s under --sine_mix_rate
    uint64_t last_rate = 0, next_op = MonoNs();
    while (!Done(o, ReadLimit(), deadline)) {
      r.Next();  // db_bench's choice of DB, as in ReadRandom
      uint64_t rnd = r.Next();
      uint64_t v = rnd % static_cast<uint64_t>(s_.num);
      double u = static_cast<double>(v) / static_cast<double>(s_.num);
      Key(key, v);
      if (s_.sine_mix_rate) {
        uint64_t now = MonoNs();
        if (last_rate == 0 || now - last_rate > static_cast<uint64_t>(s_.sine_mix_rate_interval_milliseconds * 1e6)) {
          double x = static_cast<double>(now - start) / 1e9;
          rate = s_.sine_a * std::sin(s_.sine_b * x + s_.sine_c) + s_.sine_d;
          last_rate = now;
        }
        if (rate > 0) {
          next_op += static_cast<uint64_t>(1e9 / rate * s_.threads);
          while (MonoNs() < next_op) std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
      }
      int type_pos = static_cast<int>(v % static_cast<uint64_t>(range));
      uint64_t t0 = MonoNs();
      if (type_pos < b0) {
        val.Reset();
        rocksdb::Status st = db_.db()->Get(ro_, db_.db()->DefaultColumnFamily(), key, &val);
        Timed(o, kGet, t0);
        CountLookup(o, st, key.size(), val.size(), "get");
      } else if (type_pos < b1) {
        int64_t size = Pareto(u, s_.value_k, s_.value_sigma);
        if (size < 10) size = 10;
        if (size > s_.mix_max_value_size) size %= s_.mix_max_value_size;
        Check(db_.db()->Put(wo_, key, vals.Get(static_cast<size_t>(size))), "put");
        Timed(o, kPut, t0);  // db_bench's mixgraph counts the bytes of Gets and scans only
      } else {
        std::unique_ptr<rocksdb::Iterator> it(db_.db()->NewIterator(ro_));
        it->Seek(key);
        if (it->Valid() && it->key() == rocksdb::Slice(key)) o.found++;
        int64_t len = Pareto(u, s_.iter_k, s_.iter_sigma) % s_.mix_max_scan_len;
        for (int64_t j = 0; j < len && it->Valid(); j++) {
          o.bytes += static_cast<int64_t>(it->key().size() + it->value().size());
          it->Next();
        }
        Check(it->status(), "seek");
        Timed(o, kSeek, t0);
      }
      EndCall(o, 1);
    }
  }

  // The rate-limited writer of readwhilewriting / seekrandomwhilewriting.
  void Writer() {
    KeyRng r(KeySeed(0));  // db_bench's writer is thread 0 of the step, its readers 1..n
    ValuePool vals(s_.compression_ratio, static_cast<size_t>(s_.value_size), ValueSeed(1000));
    std::string key;
    uint64_t t0 = MonoNs();
    int64_t bytes = 0;
    while (!stop_writer_.load() && done_.load() < s_.threads) {
      Key(key, r.Next() % static_cast<uint64_t>(s_.num));
      Check(db_.db()->Put(wo_, key, vals.Get(static_cast<size_t>(s_.value_size))), "put");
      writer_ops_++;
      bytes += s_.key_size + s_.value_size;
      if (s_.write_rate_limit > 0) {
        // Token bucket: sleep until the bytes written fit the rate. A writer
        // held back (a write stall, or the process stopped between slices)
        // keeps at most kBurst of credit, as RocksDB's rate limiter keeps no
        // more than a refill period: otherwise it would write the whole
        // pause's bytes at once when it runs again.
        constexpr double kBurst = 0.1;
        double due = static_cast<double>(bytes) / static_cast<double>(s_.write_rate_limit);
        double now = static_cast<double>(MonoNs() - t0) / 1e9;
        if (due > now) {
          std::this_thread::sleep_for(std::chrono::duration<double>(due - now));
        } else if (now - due > kBurst) {
          t0 += static_cast<uint64_t>((now - due - kBurst) * 1e9);
        }
      }
    }
  }

  void Single(OpType op, StepResult* res, const std::function<void()>& fn) {
    outs_.clear();
    outs_.push_back(std::make_unique<ThreadOut>());
    uint64_t t0 = MonoNs();
    res->start_mono_s = static_cast<double>(t0) / 1e9;
    fn();
    outs_[0]->hist[op]->Add(MonoNs() - t0);
    outs_[0]->ops = outs_[0]->calls = 1;
    res->wall_s = static_cast<double>(MonoNs() - t0) / 1e9;
    Collect(res);
  }

  int64_t writer_ops() const { return writer_ops_.load(); }

 private:
  // db_bench's thread seed: seed + the thread's running number in the run (from 1).
  uint64_t KeySeed(int tid) const {
    return s_.seed + static_cast<uint64_t>(s_.first_thread) + 1 + static_cast<uint64_t>(tid);
  }
  uint64_t ValueSeed(int t) const { return (s_.seed ? s_.seed : 0x2545F4914F6CDD1Dull) + static_cast<uint64_t>(t) * 7919; }

  static int64_t Pareto(double u, double k, double sigma) {
    if (u <= 0) u = 1e-12;
    double x = k == 0.0 ? -sigma * std::log(u) : sigma * (std::pow(u, -k) - 1) / k;
    return static_cast<int64_t>(std::ceil(x));
  }

  void Collect(StepResult* res) {
    LatencyHistogram merged[kNumOps];
    std::vector<int64_t> ev(PerfEvents::Defs().size(), 0);
    std::vector<bool> avail(ev.size(), true);
    bool pin_failed = false;
    for (auto& o : outs_) {
      pin_failed = pin_failed || o->pin_failed;
      res->ops += o->ops;
      res->calls += o->calls;
      res->found += o->found;
      res->bytes += o->bytes;
      res->worker_user_s += o->user_s;
      res->worker_sys_s += o->sys_s;
      res->worker_run_delay_s = (o->run_delay_s < 0 || res->worker_run_delay_s < 0)
                                    ? -1
                                    : res->worker_run_delay_s + o->run_delay_s;
      for (int i = 0; i < kNumOps; i++) merged[i].Merge(*o->hist[i]);
      if (res->calls_by_cpu.size() < o->calls_by_cpu.size()) res->calls_by_cpu.resize(o->calls_by_cpu.size());
      for (size_t c = 0; c < o->calls_by_cpu.size(); c++) res->calls_by_cpu[c] += o->calls_by_cpu[c];
      for (auto& [k, v] : o->perf_context) res->perf_context[k] += v;
      for (auto& [k, v] : o->iostats) res->iostats_context[k] += v;
      for (size_t i = 0; i < o->events.size(); i++) {
        if (o->events[i] < 0) avail[i] = false;
        else ev[i] += o->events[i];
      }
    }
    if (pin_failed)
      res->notes.push_back("cpus_allowed_policy=split: sched_setaffinity failed, the workers ran unpinned");
    if (!outs_.empty() && !outs_[0]->events.empty())
      for (size_t i = 0; i < ev.size(); i++) res->perf_events[PerfEvents::Defs()[i].name] = avail[i] ? ev[i] : -1;
    for (int i = 0; i < kNumOps; i++) {
      if (merged[i].count() == 0) continue;
      OpHistogram h;
      h.op = kOpNames[i];
      h.count = merged[i].count();
      h.sum_ns = merged[i].sum();
      h.max_ns = merged[i].max();
      for (int b = 0; b < LatencyHistogram::kBuckets; b++)
        if (uint64_t c = merged[i].bucket(b)) h.buckets.emplace_back(LatencyHistogram::Lower(b), c);
      for (auto [name, q] : {std::pair<const char*, double>{"p50", 0.5}, {"p75", 0.75}, {"p90", 0.9},
                             {"p95", 0.95}, {"p99", 0.99}, {"p99.9", 0.999}, {"p99.99", 0.9999}})
        h.percentiles_us[name] = merged[i].Percentile(q) / 1000.0;
      res->histograms.push_back(std::move(h));
    }
  }

  Database& db_;
  const StepSpec& s_;
  rocksdb::ReadOptions ro_;
  rocksdb::WriteOptions wo_;
  std::vector<std::unique_ptr<ThreadOut>> outs_;
  std::atomic<int> done_{0};
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  std::atomic<bool> stop_writer_{false};
  std::atomic<int64_t> writer_ops_{0};
  int readers_first_tid_ = 0;  // 1 where a writer is thread 0 of the step, as in db_bench
  std::atomic<bool>* cancel_ = nullptr;  // Ctrl-C: see RunStep
};

void CompactL0(Database& db) {
  rocksdb::ColumnFamilyMetaData meta;
  db.db()->GetColumnFamilyMetaData(&meta);
  std::vector<std::string> files;
  for (const auto& lvl : meta.levels)
    if (lvl.level == 0)
      for (const auto& f : lvl.files) files.push_back(f.db_path + "/" + f.name);
  if (files.empty()) return;
  Check(db.db()->CompactFiles(rocksdb::CompactionOptions(), files, 1), "compact0");
}

void WaitForCompaction(Database& db, const std::atomic<bool>* cancel) {
  auto cancelled = [&] { return cancel && cancel->load(std::memory_order_relaxed); };
#if ROCKSDB_MAJOR >= 9
  // In slices of 100 ms, so that a cancel is seen within one.
  rocksdb::WaitForCompactOptions wo;
  wo.timeout = std::chrono::milliseconds(100);
  while (!cancelled()) {
    rocksdb::Status st = db.db()->WaitForCompact(wo);
    if (!st.IsTimedOut()) {
      Check(st, "waitforcompaction");
      return;
    }
  }
#else
  uint64_t pending = 1, running = 1;
  while ((pending || running) && !cancelled()) {
    db.db()->GetIntProperty("rocksdb.compaction-pending", &pending);
    db.db()->GetIntProperty("rocksdb.num-running-compactions", &running);
    if (pending || running) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
#endif
}

}  // namespace

void MakeKey(uint64_t index, int key_size, char* out) {
  int n = std::min(key_size, 8);
  for (int i = 0; i < n; i++) out[i] = static_cast<char>((index >> ((n - i - 1) * 8)) & 0xFF);
  if (key_size > n) memset(out + n, '0', static_cast<size_t>(key_size - n));
}

const std::vector<std::string>& StepNames() {
  static const std::vector<std::string> names = {
      "fillseq", "fillrandom", "overwrite", "readrandom", "readseq", "readreverse", "seekrandom",
      "multireadrandom", "readwhilewriting", "seekrandomwhilewriting", "mixgraph", "flush",
      "compact", "compact0", "waitforcompaction"};
  return names;
}

StepResult RunStep(Database& db, const StepSpec& s, std::atomic<bool>* cancel) {
  if (std::find(StepNames().begin(), StepNames().end(), s.name) == StepNames().end()) {
    std::string all;
    for (auto& n : StepNames()) all += (all.empty() ? "" : ", ") + n;
    throw InputError("unknown step '" + s.name + "': allowed are " + all);
  }
  if (s.threads < 1 || s.threads > 1024) throw InputError("threads=" + std::to_string(s.threads) + " must be 1..1024");
  if (s.num < 1) throw InputError("num=" + std::to_string(s.num) + " must be at least 1");
  if (s.key_size < 8) throw InputError("key_size=" + std::to_string(s.key_size) + " must be at least 8");
  if (s.value_size < 0) throw InputError("value_size must be >= 0");
  if (s.batch_size < 1) throw InputError("batch_size=" + std::to_string(s.batch_size) + " must be at least 1");
  if (s.perf_level < 1 || s.perf_level > 6) throw InputError("perf_level=" + std::to_string(s.perf_level) + " must be 1..6");
  if (db.closed()) throw DbError("database is closed");
  StepResult res;
  res.name = s.name;
  Runner r(db, s, cancel);
  const std::string& n = s.name;
  if (n == "fillseq" || n == "fillrandom" || n == "overwrite") {
    bool seq = n == "fillseq";
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { r.Fill(t, o, seq); }, &res);
  } else if (n == "readrandom") {
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { r.ReadRandom(t, o); }, &res);
  } else if (n == "multireadrandom") {
    if (s.async_io)
      res.notes.push_back("async_io has no effect on MultiGet in RocksDB 9 without coroutines "
                          "(USE_COROUTINES, folly); this build has none, so no overlap across files happened");
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { r.MultiRead(t, o); }, &res);
  } else if (n == "seekrandom") {
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { r.SeekRandom(t, o); }, &res);
  } else if (n == "readseq" || n == "readreverse") {
    bool rev = n == "readreverse";
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { r.ReadSeq(t, o, rev); }, &res);
  } else if (n == "readwhilewriting" || n == "seekrandomwhilewriting") {
    bool seek = n == "seekrandomwhilewriting";
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { seek ? r.SeekRandom(t, o) : r.ReadRandom(t, o); }, &res,
               [&] { r.Writer(); });
    res.writer_ops = r.writer_ops();
    res.notes.push_back("ops, latency and CPU counters are the readers'; the writer did " +
                        std::to_string(res.writer_ops) + " puts");
  } else if (n == "mixgraph") {
    res.notes.push_back("keys uniform over num: db_bench ignores keyrange_dist_* unless key_dist_a/b "
                        "are set, and the ZippyDB command sets neither");
    if (!s.sine_mix_rate && s.sine_mix_rate_interval_milliseconds > 0)
      res.notes.push_back("sine_* parameters act only with sine_mix_rate=true (as in db_bench)");
    r.Parallel(s.threads, [&](int t, ThreadOut& o) { r.MixGraph(t, o); }, &res);
  } else if (n == "flush") {
    r.Single(kFlush, &res, [&] { Check(db.db()->Flush(rocksdb::FlushOptions()), "flush"); });
  } else if (n == "compact") {
    r.Single(kCompact, &res, [&] {
      rocksdb::CompactRangeOptions co;
      co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
      co.canceled = cancel;
      Check(db.db()->CompactRange(co, nullptr, nullptr), "compact");
    });
  } else if (n == "compact0") {
    r.Single(kCompact, &res, [&] { CompactL0(db); });
  } else if (n == "waitforcompaction") {
    r.Single(kWait, &res, [&] { WaitForCompaction(db, cancel); });
  }
  return res;
}

}  // namespace rxlab
