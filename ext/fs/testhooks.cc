#include "testhooks.h"

#include <dlfcn.h>
#include <rocksdb/slice.h>

namespace rxlab {

namespace {

// rocksdb::SyncPoint::GetInstance() and SyncPoint::Process(const Slice&, void*),
// by their mangled names (Itanium ABI: `this` is the first argument).
using GetInstanceFn = void* (*)();
using ProcessFn = void (*)(void*, const rocksdb::Slice&, void*);

struct SyncPointApi {
  void* instance = nullptr;
  ProcessFn process = nullptr;
  SyncPointApi() {
    auto get = reinterpret_cast<GetInstanceFn>(dlsym(RTLD_DEFAULT, "_ZN7rocksdb9SyncPoint11GetInstanceEv"));
    auto proc = reinterpret_cast<ProcessFn>(dlsym(RTLD_DEFAULT, "_ZN7rocksdb9SyncPoint7ProcessERKNS_5SliceEPv"));
    if (get && proc) {
      instance = get();
      process = proc;
    }
  }
};

}  // namespace

void TestSyncPoint(const char* name, void* arg) {
  static const SyncPointApi api;
  if (api.process) api.process(api.instance, rocksdb::Slice(name), arg);
}

}  // namespace rxlab
