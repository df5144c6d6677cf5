// Memory-mapped files, for every engine: RocksDB's FileOptions::use_mmap_reads
// (DBOptions::allow_mmap_reads) and use_mmap_writes (allow_mmap_writes), with
// the semantics of its posix file system (env/io_posix.cc: PosixMmapReadableFile
// and PosixMmapFile). Their bytes move by page faults and memcpy, not by
// requests an engine could queue, so they are written once, here, beside the
// adapter (files.h), and no engine is involved. A mapped read hands RocksDB a
// pointer into the mapping (its scratch buffer may be null): a reader that
// relies on that gets "Bad address" from any pread-based file.
//
// Counted apart from the engines' IO: events mmap_reads, mmap_read_bytes,
// mmap_writes, mmap_write_bytes; system calls sys.mmap, sys.munmap, sys.msync,
// sys.madvise (plus the fallocate, fsync and fdatasync that every writable
// file counts).
#pragma once

#include <memory>
#include <string>

#include "rxfs.h"

namespace rxlab {

// Why this file system cannot serve memory-mapped reads of `fname`: a one-line
// reason naming the option that conflicts, or "" when it can. delay_us and
// the read-fault options act on device reads, and a mapped read is a page
// fault that never reaches the engine: serving it would silently drop the
// delay or the fault, so the open is refused instead.
std::string MmapReadConflict(const RxFileSystem& fs, const std::string& fname);

// The same for memory-mapped writes (powerloss=1 holds unsynced bytes in
// process memory; bytes copied into a shared mapping are in the page cache
// at once and survive a SIGKILL).
std::string MmapWriteConflict(const RxFileSystem& fs);

// Map all of `fd` (open O_RDONLY on fname) for reading. Takes ownership of fd
// (closed on error too).
rocksdb::IOStatus NewMmapReadableFile(RxFileSystem* fs, const std::string& fname, int fd,
                                      std::unique_ptr<rocksdb::FSRandomAccessFile>* r);

// True where RocksDB's posix file system maps files for writing: ext4, xfs and
// tmpfs, whose fallocate reserves a mapped region's blocks quickly (elsewhere
// it writes with write(2), and so do we). It decides once per process, on the
// first file; this asks per file, which gives the same answer on one file
// system. Also false with allow_fallocate=false (see mmap.cc).
bool MmapWritesSupported(int fd, const rocksdb::FileOptions& o);

// A file written through shared mappings of its tail. fd is open O_RDWR;
// `start` is where the first Append writes (0, or the size of a reopened file).
std::unique_ptr<rocksdb::FSWritableFile> NewMmapWritableFile(RxFileSystem* fs, const std::string& fname,
                                                             int fd, uint64_t start,
                                                             const rocksdb::FileOptions& o);

}  // namespace rxlab
