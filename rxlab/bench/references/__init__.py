"""Real fio and real db_bench, measured with rxlab's own system-side counters.

rxlab's numbers are only credible next to the tools everyone trusts, and the
comparison is only fair if both are measured the same way. So the
references run as subprocesses while a sampler thread records the device's
/proc/diskstats, /proc/stat and the child's /proc/PID/stat, and each result
is turned into step rows with the raw columns of rxlab.core.metrics: iops, reqsz
and io.lat come from the device over the tool's own measurement window, not
from the tool's claims.

Measurement windows. fio reports its statistics after ``ramp_time``, so the
device counters are taken over [end - runtime, end], with ``end`` the moment
the device's read (or write) counter last moved before fio's output
timestamp. db_bench prints a result line as each benchmark finishes, so a
benchmark's window is [line time - elapsed, line time]. Counters are
sampled every ``sample_interval`` seconds and interpolated linearly at the
window edges.

CPU. fio's usr_cpu/sys_cpu are percentages of the job's runtime, measured by
each job after the ramp (fio resets its rusage baseline when the ramp ends;
checked here against getrusage of the whole invocation), so CPU seconds =
pct / 100 * job_runtime. For db_bench the process CPU of
each benchmark comes from /proc/PID/stat samples (USER_HZ ticks, 10 ms
resolution here): use steps of a few seconds for CPU per op. The whole
invocation's CPU from getrusage(RUSAGE_CHILDREN) is kept beside it as a check.

db_bench's ``micros/op`` is thread time per op (the sum over threads of each
thread's elapsed time, divided by ops), while ``ops/sec`` is ops over wall
time: with N threads they differ by N. Both are kept
(``micros_per_op_thread``, ``qps``) and ``wall_s = ops / qps`` (the printed
seconds instead when the integer ops/sec is too coarse, e.g. compact).

Shared machines. /proc/diskstats is device-wide: another process's IO in
the window counts as the tool's. Every row records the device's activity
just before and after the tool ran (``bg_*``), and db_bench rows also carry
its own storage transfers from /proc/PID/io (``own_read_bytes``), which
nobody else can inflate.
"""
from rxlab.bench.references.real_db_bench import (
    db_bench_path,
    flag_list,
    parse_db_bench,
    plugin_path,
    run_db_bench,
)
from rxlab.bench.references.real_fio import (
    FIO_PLAT_BITS,
    fio_bin_upper_ns,
    fio_command,
    fio_percentiles,
    layout_file,
    parse_fio_json,
    run_fio,
)
from rxlab.bench.sampler import Sampler

__all__ = ["FIO_PLAT_BITS", "Sampler", "db_bench_path", "fio_bin_upper_ns", "fio_command", "fio_percentiles",
           "flag_list", "layout_file", "parse_db_bench", "parse_fio_json", "plugin_path", "run_db_bench",
           "run_fio"]
