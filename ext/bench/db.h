// A RocksDB database opened on a named backend: "default" (RocksDB's own
// file system; "default?io_uring=1" makes RocksDbIOUringEnable() answer true,
// as it does inside db_bench) or an rxlab engine URI ("posix",
// "rxlab://io_uring?registered_files=1", ...). Options are RocksDB's own
// option string, parsed by RocksDB.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>
#include <rocksdb/statistics.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "../fs/rxfs.h"

namespace rxlab {

// Bad input from the user (a backend, an option string): one line.
struct InputError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// RocksDB or the OS refused (open failed, IO error).
struct DbError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Backend {
  std::string spec;                    // as given
  std::shared_ptr<rocksdb::FileSystem> fs;
  std::shared_ptr<RxFileSystem> rxfs;  // null for default
  bool default_io_uring = false;
};

// Parse a backend spec; throws InputError with a one-line message.
Backend MakeBackend(const std::string& spec);

class Database {
 public:
  // read_only: DB::OpenForReadOnly, as db_bench --readonly (no lock, so several processes can
  // read one DB at once; writes fail with NotSupported).
  Database(const std::string& path, const std::string& backend, const std::string& options,
           bool statistics, bool read_only = false);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  rocksdb::DB* db() const { return db_; }
  const rocksdb::Options& options() const { return options_; }
  const Backend& backend() const { return backend_; }
  rocksdb::Statistics* statistics() const { return options_.statistics.get(); }
  const std::string& path() const { return path_; }
  void Close();
  bool closed() const { return db_ == nullptr; }
  bool read_only() const { return read_only_; }

 private:
  std::string path_;
  Backend backend_;
  std::unique_ptr<rocksdb::Env> env_;
  rocksdb::Options options_;
  rocksdb::DB* db_ = nullptr;
  bool read_only_ = false;
};

// Throw DbError for a non-OK status.
void Check(const rocksdb::Status& s, const char* what);

}  // namespace rxlab
