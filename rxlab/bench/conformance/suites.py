"""RocksDB's test suites rxlab runs over its engines, what each exercises, and the input checks."""
from __future__ import annotations

import dataclasses

from rxlab.core import engines as registry


def engine_names() -> list[str]:
    """The engines the suites run over: every engine of the registry that RocksDB runs on (rxlab's
    "sync" engine moves the shared file offset: rxlab fio only)."""
    return registry.names()

CONTROL = "control"


@dataclasses.dataclass(frozen=True)
class Suite:
    """One of RocksDB's test binaries (its name is its CMake target).

    engine_filter: the gtest filter of the tests that run over TEST_FS_URI;
    control_filter: the same tests on RocksDB's own file system. They differ
    only where the suite instantiates its tests under another name for a
    custom file system (env_basic_test: CustomEnv/ against EnvDefault/).
    shards: processes one configuration's run is split into (the long suites,
    so that --jobs keeps every core busy to the end).
    seconds: test-process seconds per configuration measured here (2 CPUs,
    Debug build, --jobs 2), to start the longest first.
    heavy, heavy_why: a gtest pattern of tests left out unless --full, and why.
    """

    name: str
    what: str
    engine_filter: str = "*"
    control_filter: str = "*"
    shards: int = 1
    seconds: float = 60
    heavy: str = ""
    heavy_why: str = ""

    def key(self, test: str) -> str:
        """The name a test has on every configuration (the instantiation prefix
        dropped where engine and control name it differently)."""
        if self.engine_filter != self.control_filter and "/" in test:
            return test.split("/", 1)[1]
        return test


SUITES = {s.name: s for s in (
    Suite("env_basic_test", "the Env/FileSystem API: files, directories, locks, sizes, reads and writes",
          engine_filter="CustomEnv/*", control_filter="EnvDefault/*", seconds=1),
    Suite("db_basic_test", "open, get, put, multiget, snapshots, iterators over many option configurations "
          "(PlainTable with mmap reads among them)", shards=2, seconds=90,
          heavy="DBBasicTestDeadline/DBBasicTestDeadline.IteratorDeadline/*",
          heavy_why="3 parameterized cases iterating under RocksDB's delay-injecting DeadlineFS wrapped "
          "around the engine, half the suite's time (95 s per configuration)"),
    Suite("db_io_failure_test", "IO errors injected under the DB: ENOSPC, failed syncs, dropped writes",
          seconds=60),
    Suite("db_wal_test", "the WAL: recovery, recycling (ReuseWritableFile), preallocation, truncation, "
          "sync modes", shards=2, seconds=30,
          heavy="Wal/*", heavy_why="1280 parameterized WAL-corruption recovery cases, 90% of the suite's "
          "time (5-8 min per configuration)"),
    Suite("db_flush_test", "flushes, atomic flush, flush errors", shards=2, seconds=31),
    Suite("db_iterator_test", "iterators, readahead, async_io prefetching (ReadAsync, Poll)", shards=2,
          seconds=380),
    Suite("prefetch_test", "FilePrefetchBuffer over the file system: readahead, async prefetch, Poll, "
          "AbortIO", shards=2, seconds=75),
    Suite("db_log_iter_test", "reading WAL files while they are written", seconds=15),
    Suite("db_secondary_test", "a secondary instance tailing the primary's MANIFEST and WAL", seconds=17),
    Suite("db_sst_test", "SST files: deletion, SstFileManager, rate-limited deletes, external files",
          seconds=25),
    Suite("db_test2", "a broad DB suite: compaction, compression, readahead, direct IO", shards=3,
          seconds=600),
    Suite("db_compaction_test", "compactions of every style, with direct IO and readahead", shards=4,
          seconds=900),
)}
# The suites `make test` runs: as many as fit CI's time (docs/conformance.md
# has each suite's measured time per configuration).
DEFAULT_SUITES = ("env_basic_test", "db_basic_test", "db_io_failure_test", "db_wal_test", "db_flush_test",
                  "prefetch_test", "db_log_iter_test", "db_secondary_test", "db_sst_test")

# A gtest filter longer than this is split over several processes
# (MAX_ARG_STRLEN is 128 KiB).
FILTER_BYTES = 60000


class ConformanceError(RuntimeError):
    """A step failed; the message is one line."""


# ---------------------------------------------------------------- input


def parse_list(value: str, allowed, what: str) -> list[str]:
    """A comma-separated list checked against `allowed`; one-line ValueError naming the bad value."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ValueError(f"no {what} given: allowed are {', '.join(allowed)}")
    for v in items:
        base = registry.engine(v) if what == "engine" else v
        if base not in allowed:
            raise ValueError(f"unknown {what} '{v}': allowed are {', '.join(allowed)}")
    return list(dict.fromkeys(items))


def check_engine_uris(engines: list[str]) -> None:
    """Engine options (e.g. io_uring?fixed_buffers=1) checked by rxlab's own URI parser."""
    if not any("?" in e for e in engines):
        return
    for e in engines:
        try:
            registry.check(e)
        except ValueError as err:
            raise ValueError(f"engine '{e}': {err}") from None
