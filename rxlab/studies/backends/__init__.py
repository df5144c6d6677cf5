"""The lab report's backend study, run on this machine, its published numbers beside.

The seed (lab-report-disaggregated-rocksdb-backends.txt, "Disaggregated
RocksDB") runs db_bench's fillseq, fillrandom, readrandom, readseq and the
ZippyDB-like mixgraph on three pluggable file-system backends (POSIX, libaio,
io_uring) with 16-byte keys, 1000-byte values, a 2 MiB write buffer and
direct IO, on a local SSD (its Figures 3, 4 and 6) and on a cluster's
"virtual" and "remote" SSDs (Figures 10 to 13). Here: the local disk as it
is, and the two SSDs emulated with rxlab's per-read completion deadline
(`params.DEVICE_CASES`). Throughput is db_bench's MB/s (rxlab.core.metrics'
`mbps`), the report's unit.

params.py (Params, scale presets, device cases), study.py (plan, one run,
the tidy frame), tables.py, figures.py (a table and a drawing per figure),
findings.py.
"""
from rxlab.bench.driver import zippydb_options
from rxlab.studies.backends.result import BackendsResult
from rxlab.studies.backends.study import BackendsStudy, parts

STUDY = BackendsStudy()

__all__ = ["STUDY", "BackendsResult", "BackendsStudy", "parts", "zippydb_options"]
