// pybind11 bindings: thin. Logic lives in fs/ and bench/.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <rocksdb/iterator.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/version.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <ctime>
#include <exception>
#include <mutex>
#include <thread>

#include "bench/db.h"
#include "bench/rawio.h"
#include "bench/workloads.h"
#include "fs/rxfs.h"

namespace py = pybind11;
using rxlab::Database;

// RocksDB's posix file system uses io_uring for MultiRead/ReadAsync only if
// the program defines this; we do, and answer what the backend asked for
// ("default" no, "default?io_uring=1" yes), so both references are named.
extern "C" __attribute__((visibility("default"))) bool RocksDbIOUringEnable() {
  return rxlab::g_rocksdb_io_uring_enable.load();
}

namespace {

struct PyDatabase {
  std::unique_ptr<Database> d;

  Database& get() {
    if (!d || d->closed()) throw rxlab::DbError("database is closed");
    return *d;
  }
};

py::dict SnapshotToDict(const rxlab::CounterSnapshot& s, const std::string& uri) {
  py::dict out;
  for (const auto& [k, v] : s.values) out[py::str(k)] = v;
  out["threads"] = s.threads;
  out["uri"] = uri;
  py::list h;
  for (const auto& [lo, c] : s.read_latency) h.append(py::make_tuple(lo, c));
  out["read_latency_ns"] = h;
  return out;
}

rocksdb::ReadOptions MakeReadOptions(bool async_io, bool verify_checksums, size_t readahead) {
  rocksdb::ReadOptions ro;
  ro.async_io = async_io;
  ro.verify_checksums = verify_checksums;
  ro.readahead_size = readahead;
  return ro;
}

class PyIterator {
 public:
  PyIterator(std::shared_ptr<PyDatabase> db, rocksdb::Iterator* it) : db_(std::move(db)), it_(it) {}
  void Seek(const std::string& k) {
    py::gil_scoped_release nogil;
    it_->Seek(k);
  }
  void SeekToFirst() {
    py::gil_scoped_release nogil;
    it_->SeekToFirst();
  }
  void SeekToLast() {
    py::gil_scoped_release nogil;
    it_->SeekToLast();
  }
  void SeekForPrev(const std::string& k) {
    py::gil_scoped_release nogil;
    it_->SeekForPrev(k);
  }
  void Next() {
    py::gil_scoped_release nogil;
    it_->Next();
  }
  void Prev() {
    py::gil_scoped_release nogil;
    it_->Prev();
  }
  bool Valid() const { return it_->Valid(); }
  py::bytes Key() const { return py::bytes(it_->key().data(), it_->key().size()); }
  py::bytes Value() const { return py::bytes(it_->value().data(), it_->value().size()); }
  void Status() const { rxlab::Check(it_->status(), "iterator"); }
  void Close() { it_.reset(); }

 private:
  std::shared_ptr<PyDatabase> db_;  // keeps the DB open while iterating
  std::unique_ptr<rocksdb::Iterator> it_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "rxlab's compiled core: RocksDB on rxlab IO backends";
  py::register_exception<rxlab::DbError>(m, "RocksDBError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const rxlab::InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.attr("rocksdb_version") = std::to_string(ROCKSDB_MAJOR) + "." +
                              std::to_string(ROCKSDB_MINOR) + "." + std::to_string(ROCKSDB_PATCH);
#ifdef RXLAB_ROCKSDB_PATH
  m.attr("rocksdb_build") = RXLAB_ROCKSDB_PATH;
#endif

  m.def("engines", [] {
    py::list out;
    for (const rxlab::EngineDef* e : rxlab::Engines()) {
      py::dict d;
      d["name"] = e->name;
      d["help"] = e->help;
      py::dict opts;
      for (const auto* list : {&rxlab::CommonOptions(), &e->options})
        for (const rxlab::OptionDef& o : *list) opts[o.name] = py::make_tuple(o.default_value, o.help);
      d["options"] = opts;
      d["rocksdb"] = !e->owns_fd_only;
      out.append(d);
    }
    return out;
  }, "The rxlab engines with their options: (default, help) by name; rocksdb: usable under RocksDB.");

  m.def("backends", [] {
    py::list out;
    out.append(rxlab::Config::kDefaultFs);
    for (const rxlab::EngineDef* e : rxlab::Engines())
      if (!e->owns_fd_only) out.append(e->name);
    return out;
  }, "The backends a RocksDB comparison runs on, in registry order: 'default' (RocksDB's own "
     "file system), then every rxlab engine RocksDB can use.");

  m.def("parse_uri", [](const std::string& uri) {
    rxlab::Config cfg;
    std::string err;
    if (!rxlab::ParseBackend(uri, &cfg, &err)) throw rxlab::InputError(err);
    py::dict d;
    d["engine"] = cfg.engine;
    d["uri"] = cfg.Uri();
    d["label"] = cfg.Label();
    d["options"] = cfg.values;
    std::map<std::string, std::string> set;
    for (const auto& [k, v] : cfg.values)
      if (cfg.defaults.at(k) != v) set[k] = v;
    d["set"] = set;
    d["is_default"] = cfg.is_default_fs();
    return d;
  }, py::arg("uri"),
     "Take a backend apart: 'posix', 'rxlab://io_uring?sqpoll=1', 'default', 'default?io_uring=1'. "
     "ValueError with a one-line reason if bad.");

  m.def("format_uri", [](const std::string& engine, const py::object& options, bool prefix) {
    std::string s = engine;
    char sep = engine.find('?') == std::string::npos ? '?' : '&';
    if (!options.is_none()) {
      for (auto [k, v] : py::cast<py::dict>(options)) {
        std::string val = py::isinstance<py::bool_>(v) ? (v.cast<bool>() ? "1" : "0")
                                                       : py::str(v).cast<std::string>();
        s += sep + py::str(k).cast<std::string>() + "=" + val;
        sep = '&';
      }
    }
    rxlab::Config cfg;
    std::string err;
    if (!rxlab::ParseBackend(s, &cfg, &err)) throw rxlab::InputError(err);
    return prefix ? cfg.Uri() : cfg.Label();
  }, py::arg("engine"), py::arg("options") = py::none(), py::arg("prefix") = true,
     "The canonical URI of an engine (or a URI) with options: options equal to their defaults "
     "dropped, the rest in name order; True/False as 1/0. ValueError with a one-line reason if bad.");

  py::class_<PyDatabase, std::shared_ptr<PyDatabase>>(m, "DB")
      .def(py::init([](const std::string& path, const std::string& backend,
                       const std::string& options, bool statistics, bool read_only) {
             auto p = std::make_shared<PyDatabase>();
             py::gil_scoped_release nogil;
             p->d = std::make_unique<Database>(path, backend, options, statistics, read_only);
             return p;
           }),
           py::arg("path"), py::arg("backend") = "posix", py::arg("options") = "",
           py::arg("statistics") = false, py::arg("read_only") = false)
      .def_property_readonly("path", [](PyDatabase& s) { return s.get().path(); })
      .def_property_readonly("backend", [](PyDatabase& s) { return s.get().backend().spec; })
      .def_property_readonly("closed", [](PyDatabase& s) { return !s.d || s.d->closed(); })
      .def_property_readonly("read_only", [](PyDatabase& s) { return s.get().read_only(); })
      .def("put", [](PyDatabase& s, const std::string& k, const std::string& v, bool sync) {
             auto& d = s.get();
             rocksdb::WriteOptions wo;
             wo.sync = sync;
             py::gil_scoped_release nogil;
             rxlab::Check(d.db()->Put(wo, k, v), "put");
           }, py::arg("key"), py::arg("value"), py::arg("sync") = false)
      .def("delete", [](PyDatabase& s, const std::string& k, bool sync) {
             auto& d = s.get();
             rocksdb::WriteOptions wo;
             wo.sync = sync;
             py::gil_scoped_release nogil;
             rxlab::Check(d.db()->Delete(wo, k), "delete");
           }, py::arg("key"), py::arg("sync") = false)
      .def("get", [](PyDatabase& s, const std::string& k, bool verify_checksums) -> py::object {
             auto& d = s.get();
             std::string v;
             rocksdb::Status st;
             {
               py::gil_scoped_release nogil;
               st = d.db()->Get(MakeReadOptions(false, verify_checksums, 0), k, &v);
             }
             if (st.IsNotFound()) return py::none();
             rxlab::Check(st, "get");
             return py::bytes(v);
           }, py::arg("key"), py::arg("verify_checksums") = true)
      .def("multi_get", [](PyDatabase& s, const std::vector<std::string>& keys, bool async_io,
                           bool optimize_multiget_for_io) {
             auto& d = s.get();
             size_t n = keys.size();
             std::vector<rocksdb::Slice> ks(keys.begin(), keys.end());
             std::vector<rocksdb::PinnableSlice> vals(n);
             std::vector<rocksdb::Status> sts(n);
             {
               py::gil_scoped_release nogil;
               auto ro = MakeReadOptions(async_io, true, 0);
               ro.optimize_multiget_for_io = optimize_multiget_for_io;
               d.db()->MultiGet(ro, d.db()->DefaultColumnFamily(), n, ks.data(), vals.data(),
                                sts.data());
             }
             py::list out;
             for (size_t i = 0; i < n; i++) {
               if (sts[i].IsNotFound()) {
                 out.append(py::none());
               } else {
                 rxlab::Check(sts[i], "multi_get");
                 out.append(py::bytes(vals[i].data(), vals[i].size()));
               }
             }
             return out;
           }, py::arg("keys"), py::arg("async_io") = false,
           py::arg("optimize_multiget_for_io") = true,
           "Batched MultiGet. Without coroutines RocksDB 9 ignores async_io here.")
      .def("scan", [](PyDatabase& s, py::object start, size_t count, bool reverse, bool async_io,
                      size_t readahead_size) {
             auto& d = s.get();
             std::vector<std::pair<std::string, std::string>> rows;
             {
               std::string st = start.is_none() ? "" : start.cast<std::string>();
               bool has_start = !start.is_none();
               py::gil_scoped_release nogil;
               std::unique_ptr<rocksdb::Iterator> it(
                   d.db()->NewIterator(MakeReadOptions(async_io, true, readahead_size)));
               if (reverse) {
                 has_start ? it->SeekForPrev(st) : it->SeekToLast();
               } else {
                 has_start ? it->Seek(st) : it->SeekToFirst();
               }
               for (; it->Valid() && rows.size() < count; reverse ? it->Prev() : it->Next())
                 rows.emplace_back(it->key().ToString(), it->value().ToString());
               rxlab::Check(it->status(), "scan");
             }
             py::list out;
             for (auto& [k, v] : rows) out.append(py::make_tuple(py::bytes(k), py::bytes(v)));
             return out;
           }, py::arg("start") = py::none(), py::arg("count") = static_cast<size_t>(-1),
           py::arg("reverse") = false, py::arg("async_io") = false, py::arg("readahead_size") = 0,
           "Up to `count` (key, value) pairs from `start` (or the first/last key).")
      .def("iterator", [](std::shared_ptr<PyDatabase> s, bool async_io, size_t readahead_size) {
             auto& d = s->get();
             return std::make_unique<PyIterator>(
                 s, d.db()->NewIterator(MakeReadOptions(async_io, true, readahead_size)));
           }, py::arg("async_io") = false, py::arg("readahead_size") = 0)
      .def("flush", [](PyDatabase& s, bool wait) {
             auto& d = s.get();
             rocksdb::FlushOptions fo;
             fo.wait = wait;
             py::gil_scoped_release nogil;
             rxlab::Check(d.db()->Flush(fo), "flush");
           }, py::arg("wait") = true)
      .def("compact", [](PyDatabase& s) {
             auto& d = s.get();
             rocksdb::CompactRangeOptions co;
             co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
             py::gil_scoped_release nogil;
             rxlab::Check(d.db()->CompactRange(co, nullptr, nullptr), "compact");
           }, "Compact the whole key range into the last level.")
      .def("wait_for_compaction", [](PyDatabase& s) {
             auto& d = s.get();
             py::gil_scoped_release nogil;
#if ROCKSDB_MAJOR >= 9
             rxlab::Check(d.db()->WaitForCompact(rocksdb::WaitForCompactOptions()), "wait_for_compaction");
#else
             // 7.x has no WaitForCompact: poll the properties it does have.
             uint64_t pending = 1, running = 1;
             while (pending || running) {
               d.db()->GetIntProperty("rocksdb.compaction-pending", &pending);
               d.db()->GetIntProperty("rocksdb.num-running-compactions", &running);
               if (pending || running) usleep(10000);
             }
#endif
           })
      .def("property", [](PyDatabase& s, const std::string& name) -> py::object {
             std::string v;
             if (!s.get().db()->GetProperty(name, &v)) return py::none();
             return py::str(v);
           }, py::arg("name"))
      .def("statistics", [](PyDatabase& s) {
             py::dict out;
             auto* st = s.get().statistics();
             if (!st) return out;
             for (const auto& [id, name] : rocksdb::TickersNameMap) out[py::str(name)] = st->getTickerCount(id);
             return out;
           }, "RocksDB Statistics tickers (empty unless opened with statistics=True).")
      .def("options", [](PyDatabase& s) {
             const auto& o = s.get().options();
             py::dict out;
             out["use_direct_reads"] = o.use_direct_reads;
             out["use_direct_io_for_flush_and_compaction"] = o.use_direct_io_for_flush_and_compaction;
             out["write_buffer_size"] = o.write_buffer_size;
             out["compaction_readahead_size"] = o.compaction_readahead_size;
             return out;
           })
      .def("counters", [](PyDatabase& s) -> py::dict {
             auto& d = s.get();
             if (!d.backend().rxfs) {
               py::dict out;
               out["uri"] = d.backend().spec;
               return out;
             }
             return SnapshotToDict(d.backend().rxfs->Counters(), d.backend().rxfs->uri());
           }, "Snapshot of the backend's counters (the default backend has none). Memory-mapped reads and "
              "appends (allow_mmap_reads/allow_mmap_writes) are counted apart, as mmap_reads, "
              "mmap_read_bytes, mmap_writes, mmap_write_bytes: not engine reads, not system calls.")
      .def("reset_counters", [](PyDatabase& s) {
             if (auto& fs = s.get().backend().rxfs) fs->ResetCounters();
           })
      .def("close", [](PyDatabase& s) {
             if (!s.d) return;
             py::gil_scoped_release nogil;
             s.d->Close();
           })
      .def("__enter__", [](std::shared_ptr<PyDatabase> s) { return s; })
      .def("__exit__", [](PyDatabase& s, py::object, py::object, py::object) {
             if (!s.d) return;
             py::gil_scoped_release nogil;
             s.d->Close();
           });

  m.def("tick_clock", [](double sleep_ms) {
    // The counters' clock against CLOCK_MONOTONIC over one sleep: the same
    // interval measured by both, as a SyscallTimer measures a system call.
    if (!(sleep_ms > 0 && sleep_ms <= 10000))
      throw py::value_error("tick_clock sleep_ms=" + py::str(py::float_(sleep_ms)).cast<std::string>() +
                            ": must be above 0 and at most 10000");
    rxlab::ThreadCounters c;
    uint64_t n0 = rxlab::MonoNs(), t0 = c.Ticks();
    {
      py::gil_scoped_release nogil;
      timespec ts{static_cast<time_t>(sleep_ms / 1000), static_cast<long>(std::fmod(sleep_ms, 1000.0) * 1e6)};
      while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
      }
    }
    uint64_t ticks_ns = c.NsSince(t0), mono_ns = rxlab::MonoNs() - n0;
    py::dict d;
    d["source"] = c.tsc ? "tsc" : "clock_gettime";
    d["ns_per_tick"] = c.tsc ? static_cast<double>(c.ns_per_tick_q32) / 4294967296.0 : 1.0;
    d["counters_ns"] = ticks_ns;
    d["monotonic_ns"] = mono_ns;
    return d;
  }, py::arg("sleep_ms") = 20.0);

  m.def("sampled_timer", [](int calls, double sleep_us) {
    // SampledSyscallTimer around `calls` sleeps, each also measured by
    // CLOCK_MONOTONIC: what the counters kept (count, ns) beside every call's
    // own duration, so that which calls were timed, and how they were scaled,
    // can be checked.
    if (calls < 1 || calls > 100000 || !(sleep_us > 0 && sleep_us <= 100000))
      throw py::value_error("sampled_timer calls=" + std::to_string(calls) +
                            ", sleep_us=" + py::str(py::float_(sleep_us)).cast<std::string>() +
                            ": calls must be 1 to 100000 and sleep_us above 0, at most 100000");
    rxlab::ThreadCounters c;
    std::vector<uint64_t> each(static_cast<size_t>(calls));
    {
      py::gil_scoped_release nogil;
      for (auto& d : each) {
        uint64_t n0 = rxlab::MonoNs();
        {
          rxlab::SampledSyscallTimer t(&c, rxlab::kSys_pwrite64);
          timespec ts{0, static_cast<long>(sleep_us * 1000)};  // at most 0.1 s
          while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
          }
        }
        d = rxlab::MonoNs() - n0;
      }
    }
    py::dict d;
    d["every"] = rxlab::SampledSyscallTimer::kEvery;
    d["count"] = c.sys_count[rxlab::kSys_pwrite64].load();
    d["ns"] = c.sys_ns[rxlab::kSys_pwrite64].load();
    d["monotonic_ns"] = each;
    return d;
  }, py::arg("calls"), py::arg("sleep_us") = 200.0);

  m.def("counter_cost_ns", [](int iterations) {
    // What the counters add to one device read: the syscall timer (two clock
    // reads), the read/byte events and the latency histogram, with counting
    // on minus the same path with counting off.
    auto run = [&](bool enabled) {
      rxlab::ThreadCounters c;
      c.enabled = enabled;
      uint64_t t0 = rxlab::MonoNs();
      for (int i = 0; i < iterations; i++) {
        {
          rxlab::SyscallTimer t(&c, rxlab::kSys_pread64);
          asm volatile("" ::: "memory");
        }
        c.Add(rxlab::kEv_reads);
        c.Add(rxlab::kEv_read_bytes, 8192);
        if (c.enabled) c.read_latency.Add(45000 + static_cast<uint64_t>(i & 1023));
      }
      return static_cast<double>(rxlab::MonoNs() - t0) / iterations;
    };
    py::gil_scoped_release nogil;
    run(true);  // warm up
    double on = run(true), off = run(false);
    return on - off;
  }, py::arg("iterations") = 2000000, "Nanoseconds the counters add per device read.");

  m.def("step_names", [] { return rxlab::StepNames(); }, "db_bench benchmarks the driver runs.");

  m.def("run_step", [](PyDatabase& s, const py::dict& d) {
    rxlab::StepSpec sp;
    for (auto item : d) {
      std::string k = py::str(item.first);
      py::handle v = item.second;
#define RX_FIELD(f) \
  if (k == #f) {     \
    sp.f = v.cast<decltype(sp.f)>(); \
    continue;        \
  }
      RX_FIELD(name) RX_FIELD(num) RX_FIELD(ops) RX_FIELD(duration) RX_FIELD(threads)
      RX_FIELD(key_size) RX_FIELD(value_size) RX_FIELD(compression_ratio) RX_FIELD(batch_size)
      RX_FIELD(seek_nexts) RX_FIELD(reverse_iterator) RX_FIELD(async_io) RX_FIELD(multiread_batched)
      RX_FIELD(optimize_multiget_for_io) RX_FIELD(multiread_stride) RX_FIELD(verify_checksums)
      RX_FIELD(readahead_size) RX_FIELD(sync) RX_FIELD(disable_wal) RX_FIELD(write_rate_limit)
      RX_FIELD(perf_level) RX_FIELD(perf_events) RX_FIELD(cpus_split) RX_FIELD(seed) RX_FIELD(first_thread)
      RX_FIELD(mix_get_ratio) RX_FIELD(mix_put_ratio)
      RX_FIELD(mix_seek_ratio) RX_FIELD(keyrange_dist_a) RX_FIELD(keyrange_dist_b)
      RX_FIELD(keyrange_dist_c) RX_FIELD(keyrange_dist_d) RX_FIELD(keyrange_num) RX_FIELD(value_k)
      RX_FIELD(value_sigma) RX_FIELD(iter_k) RX_FIELD(iter_sigma) RX_FIELD(sine_a) RX_FIELD(sine_b)
      RX_FIELD(sine_c) RX_FIELD(sine_d) RX_FIELD(sine_mix_rate)
      RX_FIELD(sine_mix_rate_interval_milliseconds) RX_FIELD(mix_max_value_size)
      RX_FIELD(mix_max_scan_len) RX_FIELD(progress_file)
#undef RX_FIELD
      throw rxlab::InputError("unknown step option '" + k + "'");
    }
    auto& d0 = s.get();
    rxlab::StepResult r;
    // The step runs on its own thread; this one waits with the GIL released and,
    // every 50 ms, takes it to let Python see a signal (Ctrl-C). On one, the step is
    // cancelled (its workers stop before their next operation), joined, and the
    // signal's exception (KeyboardInterrupt) raised here instead of a result.
    std::atomic<bool> cancel{false};
    bool interrupted = false;
    PyObject *etype = nullptr, *evalue = nullptr, *etb = nullptr;
    {
      py::gil_scoped_release nogil;
      std::mutex mu;
      std::condition_variable cv;
      bool done = false;
      std::exception_ptr err;
      std::thread runner([&] {
        try {
          r = rxlab::RunStep(d0, sp, &cancel);
        } catch (...) {
          err = std::current_exception();
        }
        {
          std::lock_guard<std::mutex> g(mu);
          done = true;
        }
        cv.notify_all();
      });
      std::unique_lock<std::mutex> lk(mu);
      while (!done) {
        if (cv.wait_for(lk, std::chrono::milliseconds(50), [&] { return done; }) || interrupted) continue;
        lk.unlock();
        {
          py::gil_scoped_acquire gil;
          if (PyErr_CheckSignals() != 0) {
            interrupted = true;
            cancel = true;
            PyErr_Fetch(&etype, &evalue, &etb);
          }
        }
        lk.lock();
      }
      lk.unlock();
      runner.join();
      if (err && !interrupted) std::rethrow_exception(err);
    }
    if (interrupted) {
      PyErr_Restore(etype, evalue, etb);
      throw py::error_already_set();
    }
    py::dict out;
    out["name"] = r.name;
    out["ops"] = r.ops;
    out["calls"] = r.calls;
    out["found"] = r.found;
    out["bytes"] = r.bytes;
    out["wall_s"] = r.wall_s;
    out["start_mono_s"] = r.start_mono_s;
    out["worker_user_s"] = r.worker_user_s;
    out["worker_sys_s"] = r.worker_sys_s;
    if (r.worker_run_delay_s >= 0) out["worker_run_delay_s"] = r.worker_run_delay_s;
    else out["worker_run_delay_s"] = py::none();
    out["writer_ops"] = r.writer_ops;
    py::list hs;
    for (auto& h : r.histograms) {
      py::dict hd;
      hd["op"] = h.op;
      hd["count"] = h.count;
      hd["sum_ns"] = h.sum_ns;
      hd["max_ns"] = h.max_ns;
      hd["buckets"] = h.buckets;
      hd["percentiles_us"] = h.percentiles_us;
      hs.append(hd);
    }
    out["histograms"] = hs;
    out["perf_context"] = r.perf_context;
    out["iostats_context"] = r.iostats_context;
    out["perf_events"] = r.perf_events;
    out["ops_series"] = r.ops_series;
    out["calls_by_cpu"] = r.calls_by_cpu;
    out["notes"] = r.notes;
    return out;
  }, py::arg("db"), py::arg("spec"), "Run one db_bench step in C++ threads (GIL released); Ctrl-C stops it within about 50 ms "
     "of the workers' current operations and raises KeyboardInterrupt.");

  m.def("rawio", [](const std::string& filename, const std::string& engine, const std::string& rw,
                    size_t bs, uint64_t size, bool direct, int iodepth, int numjobs, double runtime,
                    uint64_t seed, int iodepth_batch_submit, int iodepth_batch_complete_max,
                    double thinktime, double thinktime_spin, bool cpus_split, size_t blockalign) {
    rxlab::RawIoSpec sp{filename, engine, rw, bs, blockalign, size, direct, iodepth, numjobs, runtime, seed,
                        iodepth_batch_submit, iodepth_batch_complete_max, thinktime, thinktime_spin,
                        cpus_split};
    rxlab::RawIoResult r;
    {
      py::gil_scoped_release nogil;
      r = rxlab::RunRawIo(sp);
    }
    py::list jobs;
    for (auto& j : r.jobs) {
      py::dict d;
      d["ios"] = j.ios;
      d["bytes"] = j.bytes;
      d["seconds"] = j.seconds;
      d["cpu_user_s"] = j.cpu_user_s;
      d["cpu_sys_s"] = j.cpu_sys_s;
      if (j.run_delay_s >= 0) d["run_delay_s"] = j.run_delay_s;
      else d["run_delay_s"] = py::none();
      d["lat_count"] = j.lat_count;
      d["lat_sum_ns"] = j.lat_sum_ns;
      d["lat_max_ns"] = j.lat_max_ns;
      d["lat_buckets"] = j.lat_buckets;
      d["syscalls"] = j.syscalls;
      if (j.cpu >= 0) d["cpu"] = j.cpu;
      else d["cpu"] = py::none();
      d["ios_by_cpu"] = j.ios_by_cpu;
      jobs.append(d);
    }
    py::dict out;
    out["jobs"] = jobs;
    out["start_mono_s"] = r.start_mono_s;
    out["wall_s"] = r.wall_s;
    return out;
  }, py::arg("filename"), py::arg("engine") = "posix", py::arg("rw") = "randread",
     py::arg("bs") = 8192, py::arg("size") = 0, py::arg("direct") = true, py::arg("iodepth") = 1,
     py::arg("numjobs") = 1, py::arg("runtime") = 10.0, py::arg("seed") = 1,
     py::arg("iodepth_batch_submit") = 1, py::arg("iodepth_batch_complete_max") = 1,
     py::arg("thinktime") = 0.0, py::arg("thinktime_spin") = 0.0, py::arg("cpus_split") = false,
     py::arg("blockalign") = 0, "rxlab's fio: IO through an rxlab engine, measured like RocksDB.");

  py::class_<PyIterator>(m, "Iterator")
      .def("seek", &PyIterator::Seek)
      .def("seek_to_first", &PyIterator::SeekToFirst)
      .def("seek_to_last", &PyIterator::SeekToLast)
      .def("seek_for_prev", &PyIterator::SeekForPrev)
      .def("next", &PyIterator::Next)
      .def("prev", &PyIterator::Prev)
      .def("valid", &PyIterator::Valid)
      .def("key", &PyIterator::Key)
      .def("value", &PyIterator::Value)
      .def("status", &PyIterator::Status)
      .def("close", &PyIterator::Close);
}
