// The executor's batch path and the per-thread state's lookup.
#include "executor.h"

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <deque>
#include <unordered_map>

namespace rxlab {

int ThreadState::RunJobs(Engine* e, Job** jobs, int n) {
  std::deque<Job*> ready(jobs, jobs + n);
  std::vector<Job*> held;
  std::vector<IoReq*> out(static_cast<size_t>(std::max(e->Depth(), 1)));
  int inflight = 0, remaining = n;
  uint64_t max_inflight = 0;

  auto complete = [&](Job* j) {
    if (!OnAttempt(j)) {
      j->Arm();
      ready.push_back(j);
      return;
    }
    if (j->deadline_ns && MonoNs() < j->deadline_ns) {
      counters->Add(kEv_delayed);
      held.push_back(j);
      return;
    }
    Finish(j);
    remaining--;
  };
  auto release_held = [&](uint64_t now) {
    for (size_t i = 0; i < held.size();) {
      if (held[i]->deadline_ns <= now) {
        Finish(held[i]);
        remaining--;
        held[i] = held.back();
        held.pop_back();
      } else {
        i++;
      }
    }
  };

  while (remaining > 0) {
    bool queued = false;
    while (!ready.empty()) {
      Job* j = ready.front();
      // As in RunOne: the start is read only by the counters and a delay.
      if (j->start_ns == 0 && (counters->enabled || hot->delay_us > 0)) {
        j->start_ns = MonoNs();
        if (j->io.op == Op::kRead) j->deadline_ns = Deadline(j->start_ns);
      }
      QueueResult q = e->Queue(&j->io);
      if (q == QueueResult::kBusy) break;
      ready.pop_front();
      if (q == QueueResult::kCompleted) {
        max_inflight = std::max<uint64_t>(max_inflight, 1);
        complete(j);
        // A synchronous engine's delay is served now, as a slow pread
        // would block the caller.
        if (!held.empty() && e->synchronous()) {
          uint64_t first = held.front()->deadline_ns;
          for (Job* h : held) first = std::min(first, h->deadline_ns);
          WaitUntil(first, spin_ns());
          release_held(MonoNs());
        }
      } else {
        inflight++;
        queued = true;
      }
    }
    if (static_cast<uint64_t>(inflight) > max_inflight) max_inflight = static_cast<uint64_t>(inflight);
    if (remaining == 0) break;
    // With everything submitted and no deadline pending, nothing can be
    // done before the whole batch is back: wait for all of it in one
    // system call (io_uring_submit_and_wait / io_getevents min_nr).
    bool wait_all = held.empty() && ready.empty();
    if (queued) {
      int rc = e->Commit(held.empty() ? (wait_all ? inflight : 1) : 0);
      if (rc < 0) return rc;
    }
    if (inflight > 0) {
      int64_t timeout = -1;
      if (!held.empty()) {
        uint64_t first = held.front()->deadline_ns;
        for (Job* h : held) first = std::min(first, h->deadline_ns);
        uint64_t now = MonoNs();
        timeout = first > now ? static_cast<int64_t>(first - now) : 0;
      }
      int got = e->Reap(wait_all ? inflight : 1, inflight, out.data(), timeout);
      if (got < 0 && got != -ETIME) return got;
      for (int k = 0; k < got; k++) {
        inflight--;
        complete(static_cast<Job*>(out[k]->job));
      }
    } else if (!held.empty() && ready.empty()) {
      uint64_t first = held.front()->deadline_ns;
      for (Job* h : held) first = std::min(first, h->deadline_ns);
      WaitUntil(first, spin_ns());
    }
    release_held(MonoNs());
  }
  counters->Max(kEv_max_inflight, max_inflight);
  return 0;
}

// The logical block size of the device holding fd (what O_DIRECT requires),
// as RocksDB's own posix file system reports it; 4096 if unknown.
size_t LogicalBlockSize(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return kAlign;
  static std::mutex mu;
  static std::unordered_map<dev_t, size_t> cache;
  std::lock_guard<std::mutex> l(mu);
  auto it = cache.find(st.st_dev);
  if (it != cache.end()) return it->second;
  size_t size = kAlign;
  std::string base = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                     std::to_string(minor(st.st_dev));
  // A partition has no queue/ of its own: its disk's is one level up.
  for (const char* q : {"/queue/logical_block_size", "/../queue/logical_block_size"}) {
    FILE* f = fopen((base + q).c_str(), "r");
    if (!f) continue;
    unsigned long v = 0;
    if (fscanf(f, "%lu", &v) == 1 && v >= 512 && (v & (v - 1)) == 0) size = v;
    fclose(f);
    break;
  }
  cache[st.st_dev] = size;
  return size;
}

namespace {

// Per-thread map from file-system id to this thread's state. The state is
// owned by the file system's registry; at thread exit the entry is removed
// (closing the thread's rings), its counters stay for aggregation.
struct TlsStates {
  std::unordered_map<uint64_t, std::weak_ptr<ThreadState>> map;
  ~TlsStates() {
    for (auto& [id, w] : map) {
      auto s = w.lock();
      if (!s) continue;
      auto r = s->reg.lock();
      if (!r) continue;
      std::lock_guard<std::mutex> l(r->mu);
      r->states.erase(std::remove(r->states.begin(), r->states.end(), s), r->states.end());
    }
  }
};
thread_local TlsStates t_states;
// The file system this thread used last and its state there: what every read
// and append asks first. Plain values, so the common case is a TLS load
// without TlsStates's first-use guard (it has a destructor); one struct, so
// that in a dlopen'd module it is one __tls_get_addr call, not one per value.
struct LastState {
  uint64_t id = 0;
  ThreadState* state = nullptr;
};
thread_local LastState t_last;

}  // namespace

RXLAB_HOT ThreadState* RxFileSystem::State() {
  LastState& last = t_last;
  if (__builtin_expect(last.id == id_, 1)) return last.state;
  auto it = t_states.map.find(id_);
  std::shared_ptr<ThreadState> s = it == t_states.map.end() ? nullptr : it->second.lock();
  if (!s) {
    s = std::make_shared<ThreadState>();
    s->reg = reg_;
    s->cfg = &cfg_;
    s->hot = &hot_;
    s->def = def_;
    s->counters = std::make_shared<ThreadCounters>();
    s->counters->enabled = cfg_.Bool("counters");
    s->rng = static_cast<uint64_t>(cfg_.Int("fault_seed")) * 0x9E3779B97F4A7C15ull +
             static_cast<uint64_t>(gettid()) + 1;
    if (cfg_.Int("delay_us") > 0) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    {
      std::lock_guard<std::mutex> l(reg_->mu);
      reg_->states.push_back(s);
      reg_->counters.push_back(s->counters);
      reg_->threads_seen++;
    }
    // Drop entries of file systems that are gone.
    for (auto i = t_states.map.begin(); i != t_states.map.end();)
      i = i->second.expired() ? t_states.map.erase(i) : std::next(i);
    t_states.map[id_] = s;
  }
  last.id = id_;
  last.state = s.get();
  return s.get();
}

ThreadCounters* RxFileSystem::LocalCounters() { return State()->counters.get(); }

}  // namespace rxlab
