"""The IO-efficiency study of the first seed, run on this machine, published numbers beside.

The seed (blog-2025-10-23, "How efficient is RocksDB for IO-bound, point-query
workloads?") defines IO efficiency as RocksDB's storage read IOPS over fio's at
the same concurrency (fio sync, queue depth 1, 8 KiB O_DIRECT random reads),
runs the db_bench sequence fillseq, revrange, overwritesome, flush_mt_l0,
readrandom, compact, readrandom2, readrandom3 at 1 and 6 users with
block_align on and off, and prints its tables. This folder is that study,
measured in turns (docs/methods/resolution.md): io.eff and block_align's
effect are ratios with 95% intervals, the A/A control beside.

params.py (Params, scale presets and the turns' budget, tool names, what is
compared), study.py (one turn's plan, one run, the tidy frame, `matching`
for `load`), tables.py (the seed's tables with its column names, the
comparisons), figures.py (a table and a drawing per figure), findings.py.
"""
from rxlab.studies.io_efficiency.params import (
    BLOCK_BYTES,
    KEY_SIZE,
    SCALES,
    SEED_FILE,
    SEED_TESTS,
    Params,
    Settings,
    with_delay,
)
from rxlab.studies.io_efficiency.result import IoEfficiencyResult
from rxlab.studies.io_efficiency.study import IoEfficiencyStudy, matching, same_as, sequence

STUDY = IoEfficiencyStudy()

__all__ = ["BLOCK_BYTES", "KEY_SIZE", "SCALES", "SEED_FILE", "SEED_TESTS", "STUDY", "IoEfficiencyResult",
           "IoEfficiencyStudy", "Params", "Settings", "matching", "same_as", "sequence", "with_delay"]
