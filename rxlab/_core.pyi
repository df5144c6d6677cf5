"""Type stub of the compiled module (ext/module.cc). tests/test_backends.py checks it names what the module has."""
from collections.abc import Sequence
from types import TracebackType
from typing import Any

rocksdb_version: str
rocksdb_build: str

class RocksDBError(RuntimeError): ...

def engines() -> list[dict[str, Any]]:
    """Each engine: name, help, options {name: (default, help)}, rocksdb (usable under RocksDB)."""

def backends() -> list[str]:
    """The backends a RocksDB comparison runs on, in registry order: 'default' (RocksDB's own
    file system), then every rxlab engine RocksDB can use."""

def parse_uri(uri: str) -> dict[str, Any]:
    """Take a backend apart: 'posix', 'rxlab://io_uring?sqpoll=1', 'default', 'default?io_uring=1'.

    Returns engine, uri (canonical: 'rxlab://io_uring?sqpoll=1'; 'default?io_uring=1'), label (the
    same without 'rxlab://'), options (every declared option, defaulted, as strings), set (the
    options that differ from their defaults) and is_default (RocksDB's own file system). ValueError
    with a one-line reason if bad."""

def format_uri(engine: str, options: dict[str, Any] | None = None, prefix: bool = True) -> str:
    """The canonical URI of an engine (or a URI) with options: options equal to their defaults
    dropped, the rest in name order; True/False as 1/0. prefix=False gives the label
    ('io_uring?sqpoll=1'). ValueError with a one-line reason if bad."""

def tick_clock(sleep_ms: float = 20.0) -> dict[str, Any]:
    """The counters' clock (source "tsc" or "clock_gettime", ns_per_tick) and one sleep of sleep_ms
    measured by it (counters_ns) and by CLOCK_MONOTONIC (monotonic_ns)."""

def sampled_timer(calls: int, sleep_us: float = 200.0) -> dict[str, Any]:
    """The sampled system-call timer around `calls` sleeps: every (one call in it is timed), count and
    ns (what the counters kept), monotonic_ns (each call's own duration)."""

def counter_cost_ns(iterations: int = 2000000) -> float:
    """Nanoseconds the counters add per device read."""

def step_names() -> list[str]:
    """db_bench benchmarks the driver runs."""

def run_step(db: DB, spec: dict[str, Any]) -> dict[str, Any]:
    """Run one db_bench step in C++ threads (GIL released); `calls_by_cpu[i]` counts the calls
    that returned on CPU i."""

def rawio(filename: str, engine: str = "posix", rw: str = "randread", bs: int = 8192, size: int = 0,
          direct: bool = True, iodepth: int = 1, numjobs: int = 1, runtime: float = 10.0,
          seed: int = 1, iodepth_batch_submit: int = 1,
          iodepth_batch_complete_max: int = 1, thinktime: float = 0.0,
          thinktime_spin: float = 0.0, cpus_split: bool = False,
          blockalign: int = 0) -> dict[str, Any]:
    """rxlab's fio: IO through an rxlab engine, measured like RocksDB; each job's
    `ios_by_cpu[i]` counts the IOs it completed on CPU i. Random offsets are
    multiples of blockalign (0: bs)."""

class Iterator:
    def seek(self, key: str | bytes) -> None: ...
    def seek_to_first(self) -> None: ...
    def seek_to_last(self) -> None: ...
    def seek_for_prev(self, key: str | bytes) -> None: ...
    def next(self) -> None: ...
    def prev(self) -> None: ...
    def valid(self) -> bool: ...
    def key(self) -> bytes: ...
    def value(self) -> bytes: ...
    def status(self) -> None:
        """Raises RocksDBError if the iterator failed."""
    def close(self) -> None: ...

class DB:
    def __init__(self, path: str, backend: str = "posix", options: str = "", statistics: bool = False,
                 read_only: bool = False) -> None: ...
    @property
    def path(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def closed(self) -> bool: ...
    @property
    def read_only(self) -> bool: ...
    def put(self, key: str | bytes, value: str | bytes, sync: bool = False) -> None: ...
    def delete(self, key: str | bytes, sync: bool = False) -> None: ...
    def get(self, key: str | bytes, verify_checksums: bool = True) -> bytes | None: ...
    def multi_get(self, keys: Sequence[str | bytes], async_io: bool = False,
                  optimize_multiget_for_io: bool = True) -> list[bytes | None]:
        """Batched MultiGet. Without coroutines RocksDB 9 ignores async_io here."""
    def scan(self, start: str | bytes | None = None, count: int = ..., reverse: bool = False,
             async_io: bool = False, readahead_size: int = 0) -> list[tuple[bytes, bytes]]:
        """Up to `count` (key, value) pairs from `start` (or the first/last key)."""
    def iterator(self, async_io: bool = False, readahead_size: int = 0) -> Iterator: ...
    def flush(self, wait: bool = True) -> None: ...
    def compact(self) -> None: ...
    def wait_for_compaction(self) -> None: ...
    def property(self, name: str) -> str | None: ...
    def statistics(self) -> dict[str, int]: ...
    def options(self) -> dict[str, str]: ...
    def counters(self) -> dict[str, Any]:
        """The backend's counters, summed over threads: reads, read_bytes, writes, write_bytes (engine
        requests), sys.NAME.count and sys.NAME.ns per system call, multireads, read_async, retries, ...,
        read_latency_ns (histogram), uri, threads. Memory-mapped files (allow_mmap_reads,
        allow_mmap_writes) are counted apart: mmap_reads/mmap_read_bytes and mmap_writes/mmap_write_bytes
        are page-fault reads and memcpy appends, never engine requests nor system calls; the mappings'
        own calls are sys.mmap, sys.munmap, sys.msync, sys.madvise. The default backend has only uri."""
    def reset_counters(self) -> None: ...
    def close(self) -> None: ...
    def __enter__(self) -> DB: ...
    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...
