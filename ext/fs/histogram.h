// Log-linear latency histogram (HDR-style): 32 linear sub-buckets per power
// of two, so every bucket is within about 3% of its values, from 1 ns to
// 2^40 ns. One writer thread, lock-free readers (relaxed atomics: a snapshot
// taken while it is written can be off by the few samples in flight).
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace rxlab {

class LatencyHistogram {
 public:
  static constexpr int kSubBits = 5;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 40;
  static constexpr int kBuckets = (kMaxExp - kSubBits + 2) * kSub;

  static int Index(uint64_t v) {
    if (v < static_cast<uint64_t>(kSub)) return static_cast<int>(v);
    int e = 63 - __builtin_clzll(v);
    if (e > kMaxExp) return kBuckets - 1;
    int m = static_cast<int>((v >> (e - kSubBits)) & (kSub - 1));
    return (e - kSubBits + 1) * kSub + m;
  }
  // Smallest value that lands in bucket i.
  static uint64_t Lower(int i) {
    if (i < kSub) return static_cast<uint64_t>(i);
    int e = i / kSub + kSubBits - 1;
    uint64_t m = static_cast<uint64_t>(i % kSub);
    return (static_cast<uint64_t>(kSub) + m) << (e - kSubBits);
  }
  static uint64_t Upper(int i) { return i + 1 < kBuckets ? Lower(i + 1) : Lower(i) * 2; }

  void Add(uint64_t v) {
    Bump(counts_[Index(v)], 1);
    Bump(count_, 1);
    Bump(sum_, v);
    if (v > max_.load(std::memory_order_relaxed)) max_.store(v, std::memory_order_relaxed);
  }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  uint64_t bucket(int i) const { return counts_[i].load(std::memory_order_relaxed); }

  // Add another histogram into this one (aggregation across threads).
  void Merge(const LatencyHistogram& o) {
    for (int i = 0; i < kBuckets; i++) {
      uint64_t c = o.bucket(i);
      if (c) counts_[i].fetch_add(c, std::memory_order_relaxed);
    }
    count_.fetch_add(o.count(), std::memory_order_relaxed);
    sum_.fetch_add(o.sum(), std::memory_order_relaxed);
    if (o.max() > max()) max_.store(o.max(), std::memory_order_relaxed);
  }
  void Reset() {
    for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
    count_ = 0;
    sum_ = 0;
    max_ = 0;
  }
  // Value at quantile q (0..1), interpolated inside the bucket.
  double Percentile(double q) const {
    uint64_t n = count();
    if (n == 0) return 0.0;
    double target = q * static_cast<double>(n);
    uint64_t seen = 0;
    for (int i = 0; i < kBuckets; i++) {
      uint64_t c = bucket(i);
      if (c == 0) continue;
      if (static_cast<double>(seen + c) >= target) {
        double frac = (target - static_cast<double>(seen)) / static_cast<double>(c);
        double lo = static_cast<double>(Lower(i)), hi = static_cast<double>(Upper(i));
        double v = lo + frac * (hi - lo);
        return v > static_cast<double>(max()) ? static_cast<double>(max()) : v;
      }
      seen += c;
    }
    return static_cast<double>(max());
  }

 private:
  // Single writer: a plain load+store is enough and avoids a locked add.
  static void Bump(std::atomic<uint64_t>& a, uint64_t d) {
    a.store(a.load(std::memory_order_relaxed) + d, std::memory_order_relaxed);
  }
  // The totals first: every Add touches them and one bucket, and after the
  // 9 KiB of buckets they would be on a third page.
  std::atomic<uint64_t> count_{0}, sum_{0}, max_{0};
  std::atomic<uint64_t> counts_[kBuckets] = {};
};

}  // namespace rxlab
