// db_bench's workloads, run in-process by C++ threads (the caller releases
// the GIL). Names and meanings follow db_bench; keys are laid out as
// db_bench lays them out (8-byte big-endian index, '0'-padded to key_size),
// so a DB loaded by one can be read by the other.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../fs/histogram.h"
#include "db.h"

namespace rxlab {

struct StepSpec {
  std::string name;            // db_bench benchmark name
  int64_t num = 1000000;       // keys in the key space
  int64_t ops = -1;            // per thread; -1: num for fills, num for reads
  double duration = 0;         // seconds per step; 0: run `ops`
  int threads = 1;
  int key_size = 16;
  int value_size = 100;
  double compression_ratio = 0.5;
  int batch_size = 1;          // MultiGet keys per call; write batch entries
  int seek_nexts = 0;
  bool reverse_iterator = false;
  bool async_io = false;
  bool multiread_batched = false;
  bool optimize_multiget_for_io = true;
  int64_t multiread_stride = 0;
  bool verify_checksums = true;
  int64_t readahead_size = 0;
  bool sync = false;
  bool disable_wal = false;
  int64_t write_rate_limit = 0;  // bytes/s of the writer in *whilewriting
  int perf_level = 1;            // rocksdb::PerfLevel (1 = off, 2 = counts, 3+ = timers)
  // perf_event software (and hardware) counters per thread. Enabled task
  // events add work to every context switch of the thread, so they can be
  // turned off to measure what they cost.
  bool perf_events = false;
  // fio's cpus_allowed_policy=split: worker i pinned to the i-th allowed CPU.
  bool cpus_split = false;
  // Keys as db_bench draws them: thread i of a step draws from std::mt19937_64
  // (db_bench's Random64) seeded with seed + first_thread + 1 + i, where
  // first_thread counts the threads that earlier steps of the run started
  // (db_bench's total_thread_count_). With the same --seed, both tools read and
  // write the same keys in the same order. 0 is a seed like any other here
  // (db_bench takes the time instead): runs stay reproducible.
  uint64_t seed = 0;
  int64_t first_thread = 0;
  // mixgraph (db_bench's names; defaults: the lab report's ZippyDB values)
  double mix_get_ratio = 0.85, mix_put_ratio = 0.14, mix_seek_ratio = 0.01;
  double keyrange_dist_a = 14.18, keyrange_dist_b = -2.917, keyrange_dist_c = 0.0164,
         keyrange_dist_d = -0.08082;
  int64_t keyrange_num = 30;
  double value_k = 0.2615, value_sigma = 25.45, iter_k = 2.517, iter_sigma = 14.236;
  double sine_a = 1000, sine_b = 0.000073, sine_c = 0, sine_d = 4500;
  double sine_mix_rate_interval_milliseconds = 0;  // 0: no sine rate control
  bool sine_mix_rate = false;
  int64_t mix_max_value_size = 1024;
  int64_t mix_max_scan_len = 10000;
  // A file the workers keep their operations done in, two int64 per worker
  // (slots 2i and 2i+1: worker i's operations and the bytes they moved, as
  // db_bench counts them), stored as they go: a parent that stops and continues
  // this process in slices (rxlab.bench.turns) reads the operations of each
  // slice there; a later step naming the same file continues its counts.
  // "": none.
  std::string progress_file;
};

struct OpHistogram {
  std::string op;
  uint64_t count = 0, sum_ns = 0, max_ns = 0;
  std::vector<std::pair<uint64_t, uint64_t>> buckets;  // (lower ns, count), non-empty only
  std::map<std::string, double> percentiles_us;        // p50, p75, p90, p95, p99, p99.9, p99.99
};

struct StepResult {
  std::string name;
  int64_t ops = 0;          // operations (keys for MultiGet)
  int64_t calls = 0;        // API calls (MultiGet batches count once)
  int64_t found = 0;
  int64_t bytes = 0;        // key+value bytes read or written
  double wall_s = 0;
  double start_mono_s = 0;  // CLOCK_MONOTONIC, to line up with system samples
  // CPU of the worker threads alone (getrusage RUSAGE_THREAD around each
  // one's loop): process CPU minus this is the harness's own (the waiting
  // main thread, the Python sampler, setup and teardown).
  double worker_user_s = 0, worker_sys_s = 0;
  double worker_run_delay_s = 0;  // the workers' time waiting for a CPU (-1: the kernel does not say)
  // API calls by the CPU their worker was on when the call returned (index = CPU): where a
  // blocking read's reader was woken, against the CPU that takes the disk's interrupt.
  std::vector<int64_t> calls_by_cpu;
  std::vector<OpHistogram> histograms;
  std::map<std::string, uint64_t> perf_context;     // summed over worker threads
  std::map<std::string, uint64_t> iostats_context;
  std::map<std::string, int64_t> perf_events;       // -1: unavailable here
  std::vector<std::pair<double, int64_t>> ops_series;  // (mono seconds, ops so far), 1 Hz
  std::vector<std::string> notes;
  int64_t writer_ops = 0;   // the background writer of *whilewriting
};

// Run one step. Throws InputError for an unknown step or a bad spec.
// `cancel`, when given, stops the step soon after it turns true: every worker
// checks it before each operation, a manual compaction is cancelled through
// RocksDB's CompactRangeOptions::canceled, waitforcompaction waits in slices.
// The result then holds what was done (the caller discards it on Ctrl-C).
StepResult RunStep(Database& db, const StepSpec& spec, std::atomic<bool>* cancel = nullptr);

// The names RunStep accepts (db_bench's benchmarks).
const std::vector<std::string>& StepNames();

// db_bench's key layout.
void MakeKey(uint64_t index, int key_size, char* out);

}  // namespace rxlab
