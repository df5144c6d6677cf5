"""The parity matrix's rows: every workload rxlab runs, as db_bench benchmark chains, with the lab
report's values.

A row is one db_bench invocation whose last benchmark is measured; the benchmarks before it
prepare its state in the same process (a fill before `flush`, `compact` and `overwrite`: the
DB starts empty every run, so every contender writes its own DB from the same start). The
timed rows that need a loaded DB (`readwhilewriting`, `mixgraph`) load it in a process of its
own first (`prepare`), since db_bench's --duration would cut a fill in the same process short.
The pure readers (readrandom, readseq, seekrandom, multireadrandom) read one DB that RocksDB's
own file system loaded once (fillseq, then a full compaction), opened read-only, so they all
read the same files.

The lab report's values (its section 5.2: 16-byte keys, 1,000-byte values, a 2 MiB write
buffer, direct IO; its ZippyDB mixgraph command from data/published/flags.csv) are the
options every row shares; a row adds only what its benchmark needs, stated with it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rxlab.bench.driver import LAB_REPORT, MULTIGET_BATCH
from rxlab.core import published

# Identical for every engine and every row (stated once in the output); direct IO and sync are the
# matrix's own dimensions, and db_bench's defaults hold for everything not named here.
COMMON = {
    "key_size": 16,
    "value_size": 1000,
    "write_buffer_size": 2 << 20,
    "compression_type": "none",
    "cache_size": 8 << 20,
    "bloom_bits": 10,
    "disable_wal": "false",  # WAL on
    "histogram": 0,
    "statistics": 0,
}


# The rows in the matrix's order (`rows()` builds them; the names alone need no published table).
NAMES = ("fillseq", "fillrandom", "overwrite", "flush", "compact", "readrandom", "readseq", "seekrandom",
         "multireadrandom", "readwhilewriting", "mixgraph")


@dataclass(frozen=True)
class Row:
    """One workload: db_bench `chain` (the last benchmark is measured), the benchmarks a process of
    their own runs before it on the same DB (`prepare`), whether it reads the shared loaded DB
    read-only (`reads_loaded`), runs for --duration seconds (`timed`) or over every key once, and its
    own options."""

    name: str
    chain: tuple[str, ...]
    prepare: tuple[str, ...] = ()
    reads_loaded: bool = False
    timed: bool = False
    flags: dict = field(default_factory=dict)
    why: str = ""


def zippydb_flags() -> dict:
    """The lab report's ZippyDB mixgraph command's options (data/published/flags.csv), without the
    ones the matrix sets itself (benchmarks, fs_uri, direct IO, num and reads)."""
    f = published.load("flags")
    f = f[(f["source"] == LAB_REPORT) & (f["table"] == "5.2.2 ZippyDB mixgraph command")]
    skip = {"benchmarks", "fs_uri", "use_direct_reads", "use_direct_io_for_flush_and_compaction", "num",
            "reads"}
    return {r.flag: r.value for r in f.itertuples() if r.flag not in skip}


def rows() -> dict[str, Row]:
    """The rows in the matrix's order."""
    out = [
        Row("fillseq", ("fillseq",)),
        Row("fillrandom", ("fillrandom",)),
        Row("overwrite", ("fillseq", "overwrite")),
        # every key in the memtable, then one flush: the flush's own time and CPU
        Row("flush", ("fillrandom", "flush"),
            flags={"write_buffer_size": 1 << 30, "max_write_buffer_number": 2,
                   "disable_auto_compactions": "true"},
            why="a 1 GiB memtable so the fill stays in memory and the flush writes it all"),
        # L0 files from the 2 MiB write buffer, then one full compaction
        Row("compact", ("fillrandom", "compact"), flags={"disable_auto_compactions": "true"},
            why="auto compactions off so the fill leaves every file for the measured compaction"),
        Row("readrandom", ("readrandom",), reads_loaded=True, timed=True),
        Row("readseq", ("readseq",), reads_loaded=True),
        Row("seekrandom", ("seekrandom",), reads_loaded=True, timed=True, flags={"seek_nexts": 10}),
        Row("multireadrandom", ("multireadrandom",), reads_loaded=True, timed=True,
            flags={"batch_size": MULTIGET_BATCH, "multiread_batched": "true"}),
        Row("readwhilewriting", ("readwhilewriting",), prepare=("fillseq",), timed=True),
        Row("mixgraph", ("mixgraph",), prepare=("fillrandom",), timed=True, flags=zippydb_flags(),
            why="the lab report's ZippyDB command (its 48-byte keys, 256 MiB cache and key-range model)"),
    ]
    assert tuple(r.name for r in out) == NAMES
    return {r.name: r for r in out}
