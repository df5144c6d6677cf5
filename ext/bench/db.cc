#include "db.h"

#include <rocksdb/convenience.h>
#include <rocksdb/table.h>

namespace rxlab {

void Check(const rocksdb::Status& s, const char* what) {
  if (!s.ok()) throw DbError(std::string(what) + ": " + s.ToString());
}

Backend MakeBackend(const std::string& spec) {
  Backend b;
  b.spec = spec;
  Config cfg;
  std::string err;
  if (!ParseBackend(spec, &cfg, &err)) throw InputError("backend '" + spec + "': " + err);
  if (cfg.is_default_fs()) {
    b.default_io_uring = cfg.Bool("io_uring");
    b.fs = rocksdb::FileSystem::Default();
    return b;
  }
  b.rxfs = RxFileSystem::Create(spec, &err);
  if (!b.rxfs) throw InputError("backend '" + spec + "': " + err);
  b.fs = b.rxfs;
  return b;
}

Database::Database(const std::string& path, const std::string& backend,
                   const std::string& options, bool statistics, bool read_only)
    : path_(path), backend_(MakeBackend(backend)), read_only_(read_only) {
  rocksdb::ConfigOptions cfg;
  cfg.ignore_unknown_options = false;
  cfg.input_strings_escaped = false;
  rocksdb::Options base;
  base.create_if_missing = true;
  rocksdb::Status s = rocksdb::GetOptionsFromString(cfg, base, options, &options_);
  if (!s.ok()) throw InputError("RocksDB options '" + options + "': " + s.ToString());
  // Measured: with no_block_cache=true in the option string the DB still got
  // RocksDB's default 32 MiB block cache (block.cache.data.hit tickers, and
  // ~30 MB of a small DB served without device reads). The reader uses any
  // cache it is given, so drop it when the options say there is none.
  if (options_.table_factory) {
    auto* t = options_.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
    if (t && t->no_block_cache) t->block_cache.reset();
  }
  // Process-wide: RocksDB's posix file system asks at each file open.
  g_rocksdb_io_uring_enable = backend_.default_io_uring;
  env_ = rocksdb::NewCompositeEnv(backend_.fs);
  options_.env = env_.get();
  if (statistics && !options_.statistics) options_.statistics = rocksdb::CreateDBStatistics();
  if (read_only) options_.create_if_missing = false;
  s = read_only ? rocksdb::DB::OpenForReadOnly(options_, path, &db_)
                : rocksdb::DB::Open(options_, path, &db_);
  if (!s.ok()) {
    db_ = nullptr;
    throw DbError("open " + path + " on " + backend + ": " + s.ToString());
  }
}

void Database::Close() {
  if (!db_) return;
  rocksdb::Status s = db_->Close();
  delete db_;
  db_ = nullptr;
  Check(s, "close");
}

Database::~Database() {
  if (db_) {
    db_->Close().PermitUncheckedError();
    delete db_;
  }
}

}  // namespace rxlab
