// The counters of a file system: every thread's block summed on demand.
#include <algorithm>

#include "executor.h"

namespace rxlab {

CounterSnapshot RxFileSystem::Counters() const {
  CounterSnapshot snap;
  LatencyHistogram hist;
  std::vector<uint64_t> ev(kNumEvents, 0), sc(kNumSys, 0), sn(kNumSys, 0);
  {
    std::lock_guard<std::mutex> l(reg_->mu);
    snap.threads = reg_->threads_seen;
    for (auto& c : reg_->counters) {
      for (int i = 0; i < kNumEvents; i++) {
        uint64_t v = c->events[i].load(std::memory_order_relaxed);
        ev[i] = i == kEv_max_inflight ? std::max(ev[i], v) : ev[i] + v;
      }
      for (int i = 0; i < kNumSys; i++) {
        sc[i] += c->sys_count[i].load(std::memory_order_relaxed);
        sn[i] += c->sys_ns[i].load(std::memory_order_relaxed);
      }
      hist.Merge(c->read_latency);
    }
  }
  for (int i = 0; i < kNumEvents; i++) snap.values[kEventNames[i]] = ev[i];
  for (int i = 0; i < kNumSys; i++) {
    snap.values[std::string("sys.") + kSysNames[i] + ".count"] = sc[i];
    snap.values[std::string("sys.") + kSysNames[i] + ".ns"] = sn[i];
  }
  for (int i = 0; i < LatencyHistogram::kBuckets; i++)
    if (uint64_t c = hist.bucket(i)) snap.read_latency.emplace_back(LatencyHistogram::Lower(i), c);
  return snap;
}

void RxFileSystem::ResetCounters() {
  std::lock_guard<std::mutex> l(reg_->mu);
  for (auto& c : reg_->counters) {
    for (auto& a : c->events) a.store(0, std::memory_order_relaxed);
    for (auto& a : c->sys_count) a.store(0, std::memory_order_relaxed);
    for (auto& a : c->sys_ns) a.store(0, std::memory_order_relaxed);
    c->read_latency.Reset();
  }
}

std::string CounterSnapshot::ToJson(const std::string& uri) const {
  std::string s = "{\"uri\": \"" + uri + "\", \"threads\": " + std::to_string(threads) +
                  ", \"counters\": {";
  bool first = true;
  for (const auto& [k, v] : values) {
    s += (first ? "\"" : ", \"") + k + "\": " + std::to_string(v);
    first = false;
  }
  s += "}, \"read_latency_ns\": [";
  first = true;
  for (const auto& [lo, c] : read_latency) {
    s += (first ? "[" : ", [") + std::to_string(lo) + ", " + std::to_string(c) + "]";
    first = false;
  }
  return s + "]}";
}

}  // namespace rxlab
