#include "rawio.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "../fs/engine.h"
#include "db.h"

namespace rxlab {
namespace {

struct Slot {
  IoReq io;
  uint64_t deadline = 0;
};

void RunJob(const RawIoSpec& s, const Config& cfg, int job, uint64_t file_size, RawIoJob* out,
            std::string* error) {
  ThreadCounters counters;
  std::string err;
  if (s.cpus_split && (out->cpu = PinThreadSplit(job)) < 0) {
    *error = std::string("cpus_allowed_policy=split: sched_setaffinity: ") + strerror(errno);
    return;
  }
  const EngineDef* def = FindEngine(cfg.engine);
  std::unique_ptr<Engine> e = def->create(cfg, &counters, &err);
  if (!e) {
    *error = err;
    return;
  }
  bool writes = s.rw == "randwrite" || s.rw == "write";
  bool random = s.rw == "randread" || s.rw == "randwrite";
  int fd = open(s.filename.c_str(), (writes ? O_WRONLY : O_RDONLY) | O_CLOEXEC | (s.direct ? O_DIRECT : 0));
  if (fd < 0) {
    *error = "open " + s.filename + ": " + strerror(errno);
    return;
  }
  int depth = std::min(s.iodepth, e->Depth());
  std::vector<Slot> slots(static_cast<size_t>(depth));
  // Every slot's buffer starts on a page, whatever bs is: where a buffer sits in its page
  // changes a read's cost (see read_file.cc on buffer_align).
  const size_t stride = (s.bs + 4095) / 4096 * 4096;
  char* bufs = nullptr;
  if (posix_memalign(reinterpret_cast<void**>(&bufs), 4096, stride * static_cast<size_t>(depth)) != 0) {
    close(fd);
    *error = "out of memory";
    return;
  }
  memset(bufs, 0x5a, stride * static_cast<size_t>(depth));
  int64_t delay = cfg.Int("delay_us"), jitter = cfg.Int("jitter_us");
  uint64_t spin = static_cast<uint64_t>(cfg.Int("delay_spin_us")) * 1000;
  if (delay > 0) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  // Random offsets step by blockalign; sequential IO steps by bs.
  const uint64_t step = s.blockalign ? s.blockalign : s.bs;
  uint64_t blocks = file_size / s.bs;
  const uint64_t offsets = (file_size - s.bs) / step + 1;
  uint64_t rng = s.seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(job) * 7919 + 1;
  auto next_rand = [&] {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ull;
  };
  uint64_t seq = static_cast<uint64_t>(job) * (blocks / static_cast<uint64_t>(std::max(1, s.numjobs)));
  LatencyHistogram hist;
  std::vector<Slot*> free_slots, held;
  for (auto& sl : slots) {
    sl.io.fd = fd;
    sl.io.len = s.bs;
    sl.io.op = writes ? Op::kWrite : Op::kRead;
    sl.io.buf = bufs + static_cast<size_t>(&sl - slots.data()) * stride;
    sl.io.job = &sl;
    free_slots.push_back(&sl);
  }
  std::vector<IoReq*> reaped(static_cast<size_t>(depth));
  double u0 = ThreadCpuSeconds(true), s0 = ThreadCpuSeconds(false), q0 = ThreadRunDelaySeconds();
  uint64_t t0 = MonoNs(), end = t0 + static_cast<uint64_t>(s.runtime * 1e9);
  int inflight = 0, since_submit = 0;
  uint64_t issued = 0;
  const uint64_t think_ns = static_cast<uint64_t>(s.thinktime_us * 1000);
  const uint64_t think_spin_ns = static_cast<uint64_t>(s.thinktime_spin_us * 1000);
  if (think_ns > think_spin_ns) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  auto think = [&] {
    uint64_t t = MonoNs();
    while (MonoNs() - t < think_spin_ns) {
    }
    if (think_ns > think_spin_ns) WaitUntil(t + think_ns, 0);
  };
  auto finish = [&](Slot* sl, uint64_t now) {
    if (sl->io.res < 0 && sl->io.res != -EINTR && sl->io.res != -EAGAIN && error->empty())
      *error = std::string("io error: ") + strerror(static_cast<int>(-sl->io.res));
    hist.Add(now - sl->io.submit_ns);
    CountCpu(out->ios_by_cpu, 1);
    out->ios++;
    out->bytes += sl->io.res > 0 ? static_cast<uint64_t>(sl->io.res) : 0;
    free_slots.push_back(sl);
  };
  while (error->empty()) {
    uint64_t now = MonoNs();
    bool running = now < end;
    // Release requests whose emulated device deadline has passed.
    for (size_t i = 0; i < held.size();) {
      if (held[i]->deadline <= now) {
        finish(held[i], now);
        held[i] = held.back();
        held.pop_back();
      } else {
        i++;
      }
    }
    if (!running && inflight == 0 && held.empty()) break;
    bool queued = false;
    // Re-check the clock per request: a synchronous engine completes inside
    // Queue() and hands its slot straight back.
    while (!free_slots.empty() && MonoNs() < end) {
      if (think_ns > 0 && issued > 0) {
        think();
        if (MonoNs() >= end) break;
      }
      Slot* sl = free_slots.back();
      sl->io.offset = random ? next_rand() % offsets * step : (seq++ % blocks) * s.bs;
      sl->io.res = 0;
      sl->io.submit_ns = MonoNs();
      if (delay > 0) {
        double d = static_cast<double>(delay);
        if (jitter > 0)
          d += (static_cast<double>(next_rand() >> 11) / 9007199254740992.0 * 2 - 1) * static_cast<double>(jitter);
        sl->deadline = sl->io.submit_ns + static_cast<uint64_t>(d * 1000);
      } else {
        sl->deadline = 0;
      }
      QueueResult q = e->Queue(&sl->io);
      if (q == QueueResult::kBusy) break;
      free_slots.pop_back();
      issued++;
      if (q == QueueResult::kCompleted) {
        uint64_t t = MonoNs();
        if (sl->deadline > t) {
          // A synchronous engine blocks for the emulated latency too.
          WaitUntil(sl->deadline, spin);
          t = MonoNs();
        }
        finish(sl, t);
      } else {
        inflight++;
        queued = true;
        // fio's iodepth_batch_submit=1: each IO goes to the kernel as soon
        // as it is queued, which keeps a virtio device's pipeline staggered.
        if (++since_submit >= s.batch_submit) {
          e->Commit(0);
          since_submit = 0;
          queued = false;
        }
      }
    }
    // Submit at once and wait separately (as fio does): waiting for a
    // completion in the submitting call hands the device whole bursts,
    // which a virtio backend then completes together (measured: 32 IOs per
    // io_uring_enter and 18% fewer IOPS than fio at qd32).
    if (queued) {
      e->Commit(0);
      since_submit = 0;
    }
    if (inflight > 0) {
      int64_t timeout = -1;
      if (!held.empty()) {
        uint64_t first = UINT64_MAX;
        for (Slot* h : held) first = std::min(first, h->deadline);
        uint64_t t = MonoNs();
        timeout = first > t ? static_cast<int64_t>(first - t) : 0;
      }
      int n = e->Reap(1, std::min(inflight, s.batch_complete), reaped.data(), timeout);
      uint64_t t = MonoNs();
      for (int k = 0; k < n; k++) {
        inflight--;
        Slot* sl = static_cast<Slot*>(reaped[static_cast<size_t>(k)]->job);
        if (sl->deadline > t)
          held.push_back(sl);
        else
          finish(sl, t);
      }
    } else if (!held.empty()) {
      uint64_t first = UINT64_MAX;
      for (Slot* h : held) first = std::min(first, h->deadline);
      WaitUntil(first, spin);
    }
  }
  out->seconds = static_cast<double>(MonoNs() - t0) / 1e9;
  out->cpu_user_s = ThreadCpuSeconds(true) - u0;
  out->cpu_sys_s = ThreadCpuSeconds(false) - s0;
  if (q0 >= 0) out->run_delay_s = ThreadRunDelaySeconds() - q0;
  out->lat_count = hist.count();
  out->lat_sum_ns = hist.sum();
  out->lat_max_ns = hist.max();
  for (int b = 0; b < LatencyHistogram::kBuckets; b++)
    if (uint64_t c = hist.bucket(b)) out->lat_buckets.emplace_back(LatencyHistogram::Lower(b), c);
  for (int i = 0; i < kNumSys; i++) out->syscalls += counters.sys_count[i].load();
  free(bufs);
  close(fd);
}

}  // namespace

RawIoResult RunRawIo(const RawIoSpec& s) {
  if (s.rw != "randread" && s.rw != "read" && s.rw != "randwrite" && s.rw != "write")
    throw InputError("rw='" + s.rw + "': allowed are randread, read, randwrite, write");
  if (s.bs < 512 || s.bs > (64u << 20) || (s.direct && s.bs % 512 != 0))
    throw InputError("bs=" + std::to_string(s.bs) + ": must be 512 B..64 MiB, a multiple of 512 with direct=1");
  if (s.blockalign && (s.blockalign < 512 || s.blockalign > s.bs || s.blockalign % 512 != 0))
    throw InputError("blockalign=" + std::to_string(s.blockalign) + ": must be a multiple of 512 B, at most bs");
  if (s.iodepth < 1 || s.iodepth > 4096) throw InputError("iodepth=" + std::to_string(s.iodepth) + ": must be 1..4096");
  if (s.numjobs < 1 || s.numjobs > 256) throw InputError("numjobs=" + std::to_string(s.numjobs) + ": must be 1..256");
  if (s.runtime <= 0) throw InputError("runtime must be > 0 seconds");
  if (s.batch_submit < 1 || s.batch_submit > s.iodepth)
    throw InputError("iodepth_batch_submit=" + std::to_string(s.batch_submit) + ": must be 1..iodepth (" +
                     std::to_string(s.iodepth) + ")");
  if (s.batch_complete < 1 || s.batch_complete > s.iodepth)
    throw InputError("iodepth_batch_complete_max=" + std::to_string(s.batch_complete) +
                     ": must be 1..iodepth (" + std::to_string(s.iodepth) + ")");
  if (!(s.thinktime_us >= 0 && s.thinktime_us <= 1e6))
    throw InputError("thinktime=" + std::to_string(s.thinktime_us) + ": must be 0..1000000 us");
  if (!(s.thinktime_spin_us >= 0 && s.thinktime_spin_us <= s.thinktime_us))
    throw InputError("thinktime_spin=" + std::to_string(s.thinktime_spin_us) + ": must be 0..thinktime (" +
                     std::to_string(s.thinktime_us) + " us)");
  Config cfg;
  std::string err;
  if (!ParseUri(s.engine_uri, &cfg, &err)) throw InputError("ioengine '" + s.engine_uri + "': " + err);
  if (cfg.Int("depth") < s.iodepth) cfg.values["depth"] = std::to_string(s.iodepth);
  struct stat st;
  if (stat(s.filename.c_str(), &st) != 0) throw InputError("filename=" + s.filename + ": " + strerror(errno));
  uint64_t size = s.size ? s.size : static_cast<uint64_t>(st.st_size);
  if (size > static_cast<uint64_t>(st.st_size))
    throw InputError("size=" + std::to_string(size) + " is larger than " + s.filename + " (" +
                     std::to_string(st.st_size) + " bytes): lay the file out first");
  if (size < s.bs) throw InputError("file " + s.filename + " is smaller than bs");
  RawIoResult res;
  res.jobs.resize(static_cast<size_t>(s.numjobs));
  std::vector<std::string> errors(static_cast<size_t>(s.numjobs));
  std::vector<std::thread> ts;
  uint64_t t0 = MonoNs();
  res.start_mono_s = static_cast<double>(t0) / 1e9;
  for (int j = 0; j < s.numjobs; j++)
    ts.emplace_back(RunJob, std::cref(s), std::cref(cfg), j, size, &res.jobs[static_cast<size_t>(j)],
                    &errors[static_cast<size_t>(j)]);
  for (auto& t : ts) t.join();
  res.wall_s = static_cast<double>(MonoNs() - t0) / 1e9;
  for (auto& e : errors)
    if (!e.empty()) throw DbError("rxlab fio: " + e);
  return res;
}

}  // namespace rxlab
