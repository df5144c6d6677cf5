// Shared library that registers the rxlab:// file systems in RocksDB's object
// registry when it is loaded, so the db_bench of the same RocksDB build runs
// on them without a rebuild:
//   LD_PRELOAD=$(rxlab plugin-path) db_bench --fs_uri=rxlab://io_uring ...
// Options go in the URI: --fs_uri='rxlab://io_uring?registered_files=1'.
// Counters are written as JSON to counters_path= or $RXLAB_COUNTERS when
// RocksDB lets the file system go, or at exit.
#include <rocksdb/utilities/object_registry.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fs/rxfs.h"

#define RXLAB_STR2(x) #x
#define RXLAB_STR(x) RXLAB_STR2(x)

namespace {

std::mutex g_mu;
// Every file system the factory made, by weak reference: a process that makes
// many (RocksDB's tests make one per test) must not keep them all, with their
// threads' rings and AIO contexts: held for good, they took all of
// fs.aio-max-nr (65536) after about 190 tests of one db_wal_test process,
// and every later libaio test failed in io_setup. The vector itself is deliberately
// never freed: destroying it during exit races with RocksDB's own static
// destructors.
struct Owned {
  std::weak_ptr<rxlab::RxFileSystem> fs;
  bool written = false;
};
auto* g_owned = new std::vector<Owned>();

void WriteCountersOf(rxlab::RxFileSystem& fs) {
  std::string path = fs.config().Str("counters_path");
  const char* env = getenv("RXLAB_COUNTERS");
  if (path.empty() && env) path = env;
  if (path.empty()) return;
  FILE* f = fopen(path.c_str(), "w");
  if (!f) {
    fprintf(stderr, "rxlab: cannot write counters to %s\n", path.c_str());
    return;
  }
  std::string json = fs.Counters().ToJson(fs.uri());
  fprintf(f, "%s\n", json.c_str());
  fclose(f);
}

// At exit: the counters of the file systems still alive (the others wrote
// theirs when RocksDB let them go).
void WriteCounters() {
  std::lock_guard<std::mutex> l(g_mu);
  for (auto& o : *g_owned) {
    auto fs = o.fs.lock();
    if (fs && !o.written) {
      o.written = true;
      WriteCountersOf(*fs);
    }
  }
}

// The guard RocksDB keeps owns this thin holder, and through it the file
// system; when RocksDB lets it go, the counters are written (the file
// system is still alive in this destructor's body).
class Holder : public rocksdb::FileSystemWrapper {
 public:
  explicit Holder(std::shared_ptr<rxlab::RxFileSystem> fs) : FileSystemWrapper(fs), fs_(fs.get()) {}
  ~Holder() override {
    std::lock_guard<std::mutex> l(g_mu);
    for (auto& o : *g_owned) {
      if (!o.written && o.fs.lock().get() == fs_) {
        o.written = true;
        WriteCountersOf(*fs_);
      }
    }
    // Drop the entries of file systems that are gone.
    g_owned->erase(std::remove_if(g_owned->begin(), g_owned->end(),
                                  [](const Owned& o) { return o.written || o.fs.expired(); }),
                   g_owned->end());
  }
  const char* Name() const override { return "rxlab"; }

 private:
  rxlab::RxFileSystem* fs_;
};

rocksdb::FileSystem* Factory(const std::string& uri, std::unique_ptr<rocksdb::FileSystem>* guard,
                             std::string* errmsg) {
  std::string err;
  auto fs = rxlab::RxFileSystem::Create(uri, &err);
  if (!fs) {
    // db_bench dies without a word on a factory error: say it here.
    fprintf(stderr, "rxlab: %s\n", err.c_str());
    *errmsg = err;
    return nullptr;
  }
  {
    std::lock_guard<std::mutex> l(g_mu);
    g_owned->push_back({fs});
  }
  guard->reset(new Holder(fs));
  return guard->get();
}

struct Registrar {
  Registrar() {
    rocksdb::ObjectLibrary::Default()->AddFactory<rocksdb::FileSystem>(
        rocksdb::ObjectLibrary::PatternEntry("rxlab", true).AddSeparator("://", false), Factory);
    atexit(WriteCounters);
  }
} g_registrar;

}  // namespace

// Lets a program that dlopen()s the plugin check it is the right library.
extern "C" __attribute__((visibility("default"))) const char* rxlab_plugin_version() {
  return RXLAB_STR(ROCKSDB_MAJOR) "." RXLAB_STR(ROCKSDB_MINOR) "." RXLAB_STR(ROCKSDB_PATCH);
}
