"""The machine side of a measurement, read from /proc and /sys.

A RocksDB number means nothing without the device, kernel and CPU it was
measured on, and the seeds' storage columns (iops, reqsz, io.lat) come from
the kernel's block-layer counters of the device that holds the data, not
from what the program believes it read. This module finds that device from a
path, snapshots its counters, the system-wide and process CPU counters, and
records the environment fingerprint that goes into every run.json.

Standard library only, so the pure-Python references and the C++ driver's
Python side can both use it without the compiled extension. One module per
job: ``device`` (the device and mount of a path), ``diskstats`` (block-layer
counters), ``cpu`` (system and process CPU and IO), ``probes`` (perf events,
io_uring), ``fingerprint`` (what run.json records), ``checks`` (can a
directory hold a DB).
"""
from rxlab.core.sysinfo.checks import dir_problem, direct_io_works
from rxlab.core.sysinfo.cpu import (
    CLK_TCK,
    PROC_STAT_FIELDS,
    proc_pid_cpu,
    proc_pid_io,
    proc_stat_cpu,
    proc_stat_delta,
    rusage,
    rusage_delta,
)
from rxlab.core.sysinfo.device import (
    DeviceInfo,
    device_for_path,
    device_kind,
    existing_parent,
    mount_for_path,
    mounts,
    read_file,
    read_int,
    work_space,
)
from rxlab.core.sysinfo.diskstats import DISKSTATS_FIELDS, GAUGES, all_diskstats, diskstats, diskstats_delta
from rxlab.core.sysinfo.fingerprint import fingerprint, git_info, host_id, rxlab_version
from rxlab.core.sysinfo.probes import io_uring_status, perf_hw_counters, perf_sw_counters

__all__ = [
    "CLK_TCK", "DISKSTATS_FIELDS", "GAUGES", "PROC_STAT_FIELDS", "DeviceInfo", "all_diskstats",
    "device_for_path", "device_kind", "dir_problem", "direct_io_works", "diskstats", "diskstats_delta",
    "existing_parent", "fingerprint", "git_info", "host_id", "io_uring_status", "mount_for_path", "mounts",
    "perf_hw_counters", "perf_sw_counters", "proc_pid_cpu", "proc_pid_io", "proc_stat_cpu", "proc_stat_delta",
    "read_file", "read_int", "rusage", "rusage_delta", "rxlab_version", "work_space",
]
