// The file classes of the RocksDB adapter, one file each: random-access
// reads with async reads (read_file.cc), sequential reads (seq_file.cc) and
// writes (write_file.cc). rxfs.cc opens the descriptor and hands it over.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

#include "rxfs.h"

namespace rxlab {

// RocksDB's names that the adapter's files use, said once for all of them.
using rocksdb::FileOptions;
using rocksdb::FSRandomAccessFile;
using rocksdb::FSReadRequest;
using rocksdb::FSSequentialFile;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

std::unique_ptr<rocksdb::FSRandomAccessFile> MakeRandomAccessFile(RxFileSystem* fs, std::string name,
                                                                  int fd, bool direct);
std::unique_ptr<rocksdb::FSSequentialFile> MakeSequentialFile(RxFileSystem* fs, std::string name, int fd,
                                                              bool direct);
// size: where the first append goes (a reopened file's length).
std::unique_ptr<rocksdb::FSWritableFile> MakeWritableFile(RxFileSystem* fs, std::string name, int fd,
                                                          bool direct, uint64_t size,
                                                          const rocksdb::FileOptions& o);

// InvalidateCache of every file class: the page cache's copy of a range
// dropped (POSIX_FADV_DONTNEED), as posix does; nothing for an O_DIRECT file.
IOStatus DropPageCache(RxFileSystem* fs, int fd, bool direct, const std::string& name, size_t offset,
                       size_t length);

}  // namespace rxlab
