// Shared library that registers the rxlab:// file systems in RocksDB's object
// registry when it is loaded, so the db_bench of the same RocksDB build runs
// on them without a rebuild:
//   LD_PRELOAD=$(rxlab plugin-path) db_bench --fs_uri=rxlab://io_uring ...
// Options go in the URI: --fs_uri='rxlab://io_uring?registered_files=1'.
// Counters are written as JSON at exit to counters_path= or $RXLAB_COUNTERS.
#include <rocksdb/utilities/object_registry.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fs/rxfs.h"

#define RXLAB_STR2(x) #x
#define RXLAB_STR(x) RXLAB_STR2(x)

namespace {

// The guard RocksDB keeps owns this thin holder; the file system itself stays
// alive until exit so its counters can be written.
class Holder : public rocksdb::FileSystemWrapper {
 public:
  explicit Holder(std::shared_ptr<rocksdb::FileSystem> fs) : FileSystemWrapper(std::move(fs)) {}
  const char* Name() const override { return "rxlab"; }
};

std::mutex g_mu;
// Deliberately never freed: destroying RocksDB objects during exit races
// with RocksDB's own static destructors.
auto* g_owned = new std::vector<std::shared_ptr<rxlab::RxFileSystem>>();

void WriteCounters() {
  std::lock_guard<std::mutex> l(g_mu);
  const char* env = getenv("RXLAB_COUNTERS");
  for (auto& fs : *g_owned) {
    std::string path = fs->config().Str("counters_path");
    if (path.empty() && env) path = env;
    if (path.empty()) continue;
    // Several file systems in one process: number the files after the first.
    FILE* f = fopen(path.c_str(), "w");
    if (!f) {
      fprintf(stderr, "rxlab: cannot write counters to %s\n", path.c_str());
      continue;
    }
    std::string json = fs->Counters().ToJson(fs->uri());
    fprintf(f, "%s\n", json.c_str());
    fclose(f);
  }
}

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
    g_owned->push_back(fs);
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
