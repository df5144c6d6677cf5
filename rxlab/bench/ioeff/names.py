"""The first seed's names: its tests, block size, the fio tools beside RocksDB and their run kinds.

io.eff's denominator is FIO_TOOL, rxlab's fio left to the scheduler (sync,
queue depth 1, 8 KiB O_DIRECT random reads, numjobs = clients). Two more fio
runs go beside it and are never a baseline: FIO_AWAY_TOOL, the same run
placed away from the CPU that takes the disk's interrupts (its reads are
woken by an inter-processor wake-up, which informs rxlab.core.model's
remote_us), and FIO_UNALIGNED_TOOL, fio reading the way RocksDB reads
without block_align (blocks a little over 8 KiB, bs=8704, that start
anywhere in a page, blockalign=512), run only where block_align off is
studied.
"""
from __future__ import annotations

from rxlab.core import model

SEED_FILE = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
# The published tables behind the figures (for the figures' JSON sidecars).
PUBLISHED = (f"{SEED_FILE}: ioeff_fio", f"{SEED_FILE}: ioeff_db_bench", f"{SEED_FILE}: ioeff_efficiency",
             f"{SEED_FILE}: ioeff_model")
SEED_TESTS = model.SEED_TESTS          # readrandom, readrandom2, readrandom3
BLOCK_BYTES = 8192                     # the seed's block size and fio's bs
KEY_SIZE = 16                          # db_bench's default key size (the driver's RunSpec default)

FIO_TOOL = "rxlab-fio"
FIO_AWAY_TOOL = "rxlab-fio-away"
FIO_UNALIGNED_TOOL = "rxlab-fio-unaligned"
UNALIGNED_BS, UNALIGNED_ALIGN = BLOCK_BYTES + 512, 512
# run kind (the run name's suffix) of each fio tool
FIO_KINDS = {FIO_TOOL: "fio", FIO_AWAY_TOOL: "fioaway", FIO_UNALIGNED_TOOL: "fio512"}
DB_TOOL = "rocksdb"
RUN_PREFIX = "ioeff-"

# A study's frame's keys, first in every row.
KEYS = ["study", "rep", "tool", "backend", "threads", "block_align", "delay_us", "test", "run_id"]
