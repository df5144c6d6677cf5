// The engine registry, the options every engine shares, and URI parsing.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <sstream>

#include "engine.h"

namespace rxlab {

extern const EngineDef kPosixEngine;
extern const EngineDef kLibaioEngine;
extern const EngineDef kIoUringEngine;
extern const EngineDef kSyncEngine;

const std::vector<const EngineDef*>& Engines() {
  static const std::vector<const EngineDef*> all = {
      &kPosixEngine,
      &kLibaioEngine,
      &kIoUringEngine,
      &kSyncEngine,
  };
  return all;
}

const EngineDef* FindEngine(const std::string& name) {
  for (const EngineDef* e : Engines())
    if (name == e->name) return e;
  return nullptr;
}

const std::vector<OptionDef>& CommonOptions() {
  static const std::vector<OptionDef> opts = {
      {"depth", "64", "requests in flight per ring/context (MultiRead batches beyond it are split)"},
      {"delay_us", "0", "completion deadline per device read: it completes no earlier than submission + delay"},
      {"jitter_us", "0", "uniform random +/- added to delay_us per read"},
      {"delay_spin_us", "30", "spin (not sleep) the last part of a delay, for precision; costs CPU"},
      {"counters", "1", "count reads, writes and syscalls (0 = off, to measure their cost)"},
      {"counters_path", "", "write the counters as JSON here at process exit (plugin)"},
      {"powerloss", "0", "keep data not yet synced in process memory, so SIGKILL loses it"},
      {"fault_short_read", "0", "probability that a read returns fewer bytes than asked"},
      {"fault_eintr", "0", "probability that a read fails with EINTR (must be retried)"},
      {"fault_eagain", "0", "probability that a read fails with EAGAIN (must be retried)"},
      {"fault_eio", "0", "probability that a read fails with EIO"},
      {"fault_files", "", "apply read faults only to files whose name ends with this"},
      {"fault_seed", "1", "seed of the fault injection's random numbers"},
      {"enospc_after", "-1", "fail writes with ENOSPC once this many bytes were written (-1 = never)"},
      {"buffered_writes", "pwrite", "buffered (non-O_DIRECT) writes: pwrite, or engine (through this engine)"},
      {"buffered_reads", "pread",
       "buffered (non-O_DIRECT) reads RocksDB waits for one at a time: pread, or engine (through this "
       "engine); so are libaio's MultiRead batches and async reads (Linux AIO reads a buffered file inside "
       "io_submit); io_uring's: buffered_batches"},
      {"buffered_batches", "nowait",
       "buffered (non-O_DIRECT) MultiRead batches and async reads on a queueing engine (io_uring): nowait "
       "(each request first tries preadv2 with RWF_NOWAIT; only what the page cache cannot serve at once is "
       "queued) or engine (every request queued)"},
      {"direct_writes", "pwrite",
       "O_DIRECT writes (flush, compaction): pwrite, or engine (through this engine: a submit/reap round "
       "trip per write, as RocksDB waits for each)"},
      {"buffer_align", "auto",
       "O_DIRECT alignment asked of RocksDB (buffers, offsets, sizes); 0 = the device's logical block size, "
       "as RocksDB's own file system; 4096 keeps an 8 KiB read buffer on 2 pages, not 3; auto = the "
       "logical block size (a file no longer switches to a page mid-life: that corrupted compaction "
       "readahead)"},
  };
  return opts;
}

uint64_t NowNs() { return MonoNs(); }

namespace {

bool KernelClockIsTsc() {
  FILE* f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) return false;
  char name[32] = {};
  bool tsc = fscanf(f, "%31s", name) == 1 && strcmp(name, "tsc") == 0;
  fclose(f);
  return tsc;
}

// Ticks of the TSC per CLOCK_MONOTONIC ns, over 2 ms of spinning at load (the
// clock reads' own jitter, tens of ns, is then 1e-5 of the span).
TickClock Calibrate() {
  TickClock c;
#if defined(__x86_64__)
  if (!KernelClockIsTsc()) return c;
  uint64_t n0 = MonoNs(), t0 = __builtin_ia32_rdtsc(), n1, t1;
  do {
    n1 = MonoNs();
    t1 = __builtin_ia32_rdtsc();
  } while (n1 - n0 < 2000000);
  if (t1 <= t0) return c;
  c.ns_per_tick_q32 = static_cast<uint64_t>((static_cast<unsigned __int128>(n1 - n0) << 32) / (t1 - t0));
  c.tsc = c.ns_per_tick_q32 > 0;
#endif
  return c;
}

}  // namespace

const TickClock g_tick_clock = Calibrate();

void WaitUntil(uint64_t deadline, uint64_t spin_ns) {
  uint64_t now = MonoNs();
  if (deadline > now + spin_ns) {
    uint64_t t = deadline - spin_ns;
    timespec ts{static_cast<time_t>(t / 1000000000), static_cast<long>(t % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
    }
  }
  while (MonoNs() < deadline) {
  }
}

const char* const kSysNames[kNumSys] = {
#define RXLAB_NAME(n) #n,
    RXLAB_SYSCALLS(RXLAB_NAME)
#undef RXLAB_NAME
};
const char* const kEventNames[kNumEvents] = {
#define RXLAB_NAME(n) #n,
    RXLAB_EVENTS(RXLAB_NAME)
#undef RXLAB_NAME
};

const std::string& Config::Str(const std::string& key) const {
  static const std::string empty;
  auto it = values.find(key);
  return it == values.end() ? empty : it->second;
}
int64_t Config::Int(const std::string& key) const { return strtoll(Str(key).c_str(), nullptr, 10); }
double Config::Double(const std::string& key) const { return strtod(Str(key).c_str(), nullptr); }
bool Config::Bool(const std::string& key) const { return Int(key) != 0; }

std::string Config::Uri() const { return is_default_fs() ? Label() : "rxlab://" + Label(); }

std::string Config::Label() const {
  std::string u = engine;
  char sep = '?';
  for (const auto& [k, v] : values) {
    auto d = defaults.find(k);
    if (d != defaults.end() && d->second == v) continue;
    u += sep + k + "=" + v;
    sep = '&';
  }
  return u;
}

namespace {

std::string AllowedEngines() {
  std::string s;
  for (const EngineDef* e : Engines()) s += (s.empty() ? "" : ", ") + std::string(e->name);
  return s;
}

bool IsNonNegInt(const std::string& v) {
  return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos && v.size() < 10;
}

enum class Kind { kInt, kNonNegInt, kBool, kProb, kString };

Kind KindOf(const std::string& name) {
  // buffer_align (auto, 0 or a power of two) is checked after parsing.
  if (name == "counters_path" || name == "fault_files" || name == "buffered_writes" || name == "direct_writes" ||
      name == "buffered_reads" || name == "buffered_batches" ||
      name == "buffer_align")
    return Kind::kString;
  if (name.rfind("fault_", 0) == 0 && name != "fault_seed") return Kind::kProb;
  if (name == "enospc_after") return Kind::kInt;
  if (name == "counters" || name == "powerloss" || name == "sqpoll" || name == "iopoll" ||
      name == "io_uring" ||
      name == "registered_files" || name == "fixed_buffers")
    return Kind::kBool;
  return Kind::kNonNegInt;
}

bool CheckValue(const std::string& k, const std::string& v, std::string* err) {
  char* end = nullptr;
  switch (KindOf(k)) {
    case Kind::kString:
      return true;
    case Kind::kBool:
      if (v == "0" || v == "1") return true;
      *err = "option " + k + "='" + v + "' must be 0 or 1";
      return false;
    case Kind::kProb: {
      double d = strtod(v.c_str(), &end);
      if (!v.empty() && *end == '\0' && d >= 0.0 && d <= 1.0) return true;
      *err = "option " + k + "='" + v + "' must be a probability between 0 and 1";
      return false;
    }
    case Kind::kInt: {
      strtoll(v.c_str(), &end, 10);
      if (!v.empty() && *end == '\0') return true;
      *err = "option " + k + "='" + v + "' must be an integer";
      return false;
    }
    case Kind::kNonNegInt: {
      long long x = strtoll(v.c_str(), &end, 10);
      if (!v.empty() && *end == '\0' && x >= 0) return true;
      *err = "option " + k + "='" + v + "' must be a non-negative integer";
      return false;
    }
  }
  return true;
}

}  // namespace

namespace {

// "rxlab://NAME?QUERY" (prefix optional) into NAME and QUERY.
void SplitUri(const std::string& uri, std::string* name, std::string* query) {
  std::string rest = uri;
  const std::string prefix = "rxlab://";
  if (rest.rfind(prefix, 0) == 0) rest = rest.substr(prefix.size());
  *name = rest.substr(0, rest.find('?'));
  *query = rest.size() > name->size() ? rest.substr(name->size() + 1) : "";
}

// Fill cfg->values from the declared options' defaults, then from the query.
bool ParseOptions(const std::string& uri, const std::string& name, const std::string& query,
                  std::initializer_list<const std::vector<OptionDef>*> lists, Config* cfg,
                  std::string* err) {
  cfg->engine = name;
  cfg->values.clear();
  std::string allowed;
  for (const auto* list : lists)
    for (const OptionDef& o : *list) {
      cfg->values[o.name] = o.default_value;
      allowed += (allowed.empty() ? "" : ", ") + std::string(o.name);
    }
  cfg->defaults = cfg->values;
  std::stringstream ss(query);
  std::string kv;
  while (std::getline(ss, kv, '&')) {
    if (kv.empty()) continue;
    auto eq = kv.find('=');
    if (eq == std::string::npos) {
      *err = "option '" + kv + "' in '" + uri + "' has no value: write NAME=VALUE";
      return false;
    }
    std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (cfg->values.count(k) == 0) {
      *err = "unknown option '" + k + "' for engine " + name + ": allowed are " + allowed;
      return false;
    }
    if (!CheckValue(k, v, err)) return false;
    cfg->values[k] = v;
  }
  return true;
}

}  // namespace

const std::vector<OptionDef>& DefaultFsOptions() {
  static const std::vector<OptionDef> opts = {
      {"io_uring", "0",
       "RocksDbIOUringEnable() answers 1: RocksDB's posix file system batches MultiRead and ReadAsync "
       "through its own io_uring"},
  };
  return opts;
}

bool ParseBackend(const std::string& uri, Config* cfg, std::string* err) {
  std::string name, query;
  SplitUri(uri, &name, &query);
  if (name != Config::kDefaultFs) return ParseUri(uri, cfg, err);
  return ParseOptions(uri, name, query, {&DefaultFsOptions()}, cfg, err);
}

bool ParseUri(const std::string& uri, Config* cfg, std::string* err) {
  std::string name, query;
  SplitUri(uri, &name, &query);
  const EngineDef* def = FindEngine(name);
  if (def == nullptr) {
    *err = "unknown engine '" + name + "' in '" + uri + "': allowed are " + AllowedEngines() +
           " (RocksDB's own file system is 'default')";
    return false;
  }
  if (!ParseOptions(uri, name, query, {&CommonOptions(), &def->options}, cfg, err)) return false;
  if (cfg->Int("depth") < 1 || cfg->Int("depth") > 4096) {
    *err = "option depth=" + cfg->Str("depth") + " must be between 1 and 4096";
    return false;
  }
  for (const char* k : {"buffered_writes", "direct_writes"})
    if (cfg->Str(k) != "pwrite" && cfg->Str(k) != "engine") {
      *err = std::string("option ") + k + "='" + cfg->Str(k) + "' must be pwrite or engine";
      return false;
    }
  if (cfg->Str("buffered_reads") != "pread" && cfg->Str("buffered_reads") != "engine") {
    *err = "option buffered_reads='" + cfg->Str("buffered_reads") + "' must be pread or engine";
    return false;
  }
  if (cfg->Str("buffered_batches") != "nowait" && cfg->Str("buffered_batches") != "engine") {
    *err = "option buffered_batches='" + cfg->Str("buffered_batches") + "' must be nowait or engine";
    return false;
  }
  const int64_t align = cfg->Int("buffer_align");
  if (cfg->Str("buffer_align") != "auto" &&
      (!IsNonNegInt(cfg->Str("buffer_align")) ||
       (align != 0 && (align < 512 || align > (1 << 20) || (align & (align - 1)) != 0)))) {
    *err = "option buffer_align=" + cfg->Str("buffer_align") +
           " must be auto, 0 (the device's logical block size) or a power of two from 512 to 1048576";
    return false;
  }
  if (cfg->Int("jitter_us") > cfg->Int("delay_us")) {
    *err = "option jitter_us=" + cfg->Str("jitter_us") + " must not exceed delay_us=" +
           cfg->Str("delay_us");
    return false;
  }
  if (def->check) {
    std::string why = def->check(*cfg);
    if (!why.empty()) {
      *err = why;
      return false;
    }
  }
  return true;
}

}  // namespace rxlab
