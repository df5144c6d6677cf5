"""The compaction-readahead study of the second seed, run on this machine under a memory limit.

The seed (blog-2024-01-08, "Explaining changes in RocksDB performance for
IO-bound workloads") runs db_bench's overwrite step (write-only, limited by
how fast compaction keeps up) with buffered IO and compaction_readahead_size
0 (the default before RocksDB 8.7), 512 KiB, 1 MiB and 2 MiB (the default
since 8.7), and shows throughput, read MB/s and the average read request
size (iostat's rareq-sz) per setting. Its point: the best setting depends on
the device's max_sectors_kb (128 KiB for its RAID device, 1280 KiB for the
SSDs beneath).

Here the settings run in turns (rxlab.core.turns_plan): every setting's
overwrite throughput over the base's (the first setting, 0 by default) with
a 95% interval, the base run twice a turn as the A/A control, until resolved
or the budget is spent.

params.py (Params, COMPARE, scale presets, the device and memory cgroup
here), overwrite.py and child.py (a run's overwrite step in a
memory-limited child process), columns.py (the derived columns; the
page-cache hit ratio defined once), study.py (one turn's plan, one run, the
tidy frame), tables.py (the comparisons, the runs turn by turn, ...),
figures.py (a table and a drawing per figure), findings.py.
"""
from rxlab.studies.compaction_readahead.result import ReadaheadResult
from rxlab.studies.compaction_readahead.study import ReadaheadStudy

STUDY = ReadaheadStudy()

__all__ = ["STUDY", "ReadaheadResult", "ReadaheadStudy"]
