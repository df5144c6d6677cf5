"""What tracing costs: the lab report's Figure 5 on this machine, and strace against rxlab's counters.

The lab report (lab-report-disaggregated-rocksdb-backends.txt, section 6.1,
Figure 5) runs db_bench on its posix, libaio and io_uring backends with no
tracing, under ``perf`` and under ``strace``, and finds that strace cuts
throughput by about an order of magnitude (posix and libaio: above 80 MB/s
untraced, around 10 MB/s under strace) while perf costs little. rxlab counts
the data path's syscalls in process instead (`counters=1` of every engine);
this study measures what that costs next to the two external tools, and
checks that the in-process counts are the ones strace sees.

params.py (Params, scale presets, the tools here), tracers.py (db_bench's
flags and the tracer around it), syscalls.py (strace's summary against the
counters), study.py (plan, one run, the tidy frame), tables.py, figures.py
(a table and a drawing per figure), findings.py.
"""
from rxlab.studies.tracing_overhead.result import TracingResult
from rxlab.studies.tracing_overhead.study import TracingStudy
from rxlab.studies.tracing_overhead.syscalls import agreement, compare_syscalls, parse_strace_summary

STUDY = TracingStudy()

__all__ = ["STUDY", "TracingResult", "TracingStudy", "agreement", "compare_syscalls", "parse_strace_summary"]
