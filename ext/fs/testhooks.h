// RocksDB's own tests steer its posix file system through sync points
// (test_util/sync_point.h, compiled into Debug builds only and not a public
// header): db_wal_test, for one, stops PosixWritableFile::Close from trimming
// a WAL's preallocated space to leave the file a crash would leave. Where an
// rxlab file does what posix does at such a point, it offers the same point
// under the same name and argument, so those tests steer it the same way and
// check its behaviour rather than failing on a premise they could not set up.
//
// The SyncPoint is found at run time in the process's librocksdb; in a
// release build (no SyncPoint) TestSyncPoint does nothing.
#pragma once

namespace rxlab {

void TestSyncPoint(const char* name, void* arg);

}  // namespace rxlab
