"""The configurations the study reads the DB under: the ladder of one change per rung, and side references.

The LADDER is a sequence of configurations, each one change on top of the
one before: the seed's setting through rxlab's posix engine, then RocksDB's
own work (Statistics off, no checksum check, no bloom filter probe, no block
cache), then the engine (no counters, io_uring, registered files and fixed
buffers, DEFER_TASKRUN). The best rung is the one with the highest io.eff,
not necessarily the last: a change can cost here what it saves elsewhere.

The SIDE configurations are one change on top of a rung each and are
references rather than improvements: RocksDB's own file system, index and
filter blocks in the block cache (the other placement), and two that
busy-poll (an SQPOLL kernel thread, a reader spinning on its completion
queue), whose CPU is shown beside them (`host_cpuPer`, the whole machine's
busy CPU per query).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CONFIGS", "LADDER", "SIDE", "Config", "short_label"]


@dataclass(frozen=True)
class Config:
    """One configuration: a backend URI, RunSpec fields and options of the read step."""

    name: str
    change: str                                   # what it changes, in words
    backend: str = "posix"
    spec: Mapping = field(default_factory=dict)   # RunSpec fields (statistics, bloom_bits, options, ...)
    step: Mapping = field(default_factory=dict)   # read-step fields (verify_checksums, ...)
    busy_polls: bool = False

    @property
    def on_ladder(self) -> bool:
        return any(c.name == self.name for c in LADDER)


def _ladder() -> list[Config]:
    """Each rung is the previous one plus one change (names say the change)."""
    rungs = [
        ("seed", "the seed's setting through rxlab's posix engine (pread), Statistics on", {}),
        ("statistics off", "RocksDB Statistics off (every ticker and histogram update is CPU)",
         {"spec": {"statistics": False}}),
        ("no checksum check", "ReadOptions::verify_checksums=false (no block checksum per read)",
         {"step": {"verify_checksums": False}}),
        ("no bloom probe", "no filter policy: after the compaction every key read exists, so the bloom "
         "probe cannot save a read", {"spec": {"bloom_bits": 0}}),
        ("no block cache", "no block cache (no_block_cache=true): with a hit ratio near 0 its lookup, insert "
         "and eviction per query are pure CPU; index and filter stay in the table readers",
         {"spec": {"cache_size": 0}}),
        ("engine counters off", "rxlab's engine counters off (counters=0)", {"backend": "posix?counters=0"}),
        ("io_uring", "the io_uring engine instead of pread", {"backend": "io_uring?counters=0"}),
        ("registered files + fixed buffers", "io_uring with registered files and fixed buffers "
         "(no fd lookup, no page pinning per read)",
         {"backend": "io_uring?counters=0&registered_files=1&fixed_buffers=1"}),
        ("defer taskrun", "io_uring's SINGLE_ISSUER + DEFER_TASKRUN: a read's completion is posted when "
         "its thread waits for it, without a task-work wake-up of its own",
         {"backend": "io_uring?counters=0&registered_files=1&fixed_buffers=1&defer_taskrun=1"}),
    ]
    out, backend, spec, step = [], "posix", {}, {}
    for name, change, d in rungs:
        backend = d.get("backend", backend)
        spec = {**spec, **d.get("spec", {})}
        step = {**step, **d.get("step", {})}
        out.append(Config(name, change, backend, dict(spec), dict(step)))
    return out


LADDER = _ladder()
SIDE = [
    Config("default file system", "RocksDB's own file system (the reference; pread)", "default"),
    Config("index+filter in cache", "index and filter blocks in the 8 MiB block cache, where they compete "
           "with data blocks (cache_index_and_filter_blocks=true)",
           spec={"options": "block_based_table_factory={cache_index_and_filter_blocks=true}"}),
    # on the rung before defer taskrun: the kernel refuses DEFER_TASKRUN with SQPOLL
    Config("sqpoll", "registered files + fixed buffers with an SQPOLL thread (busy-polls a core: see "
           "host_cpuPer)", LADDER[-2].backend + "&sqpoll=1", spec=dict(LADDER[-2].spec),
           step=dict(LADDER[-2].step), busy_polls=True),
    # also on the rung before defer taskrun: deferred completions are posted only inside
    # io_uring_enter, where a spinning reader never goes
    Config("spin", "registered files + fixed buffers, the reader spinning on the completion queue "
           "instead of sleeping (spin_us=500: no context switch, no idle vCPU to wake; busy-polls the "
           "reader's own CPU)", LADDER[-2].backend + "&spin_us=500", spec=dict(LADDER[-2].spec),
           step=dict(LADDER[-2].step), busy_polls=True),
]
CONFIGS = {c.name: c for c in (*LADDER, *SIDE)}

_SHORT = {"registered files + fixed buffers": "reg. files + fixed bufs",
          "index+filter in cache": "index+filter cached"}


def short_label(name: str) -> str:
    """A configuration's name short enough for a figure's tick label."""
    return _SHORT.get(name, name)
