"""/proc/diskstats of a disk and deltas between snapshots: the seeds' iops, reqsz and io.lat."""
from __future__ import annotations

from rxlab.core.sysinfo.device import DeviceInfo

# Field order of /proc/diskstats after major, minor and name
# (Documentation/admin-guide/iostats.rst). Kernels before 4.18 stop after
# time_in_queue_ms, before 5.5 after discard_ticks_ms.
DISKSTATS_FIELDS = (
    "reads", "reads_merged", "read_sectors", "read_ticks_ms",
    "writes", "writes_merged", "write_sectors", "write_ticks_ms",
    "in_flight", "io_ticks_ms", "time_in_queue_ms",
    "discards", "discards_merged", "discard_sectors", "discard_ticks_ms",
    "flushes", "flush_ticks_ms",
)
GAUGES = frozenset({"in_flight"})
# The kernel prints the millisecond fields as `unsigned int` (block/genhd.c,
# diskstats_show), so they wrap at 2**32 ms (49.7 days of busy time); request
# and sector counts are unsigned long.
_WRAP32 = frozenset(f for f in DISKSTATS_FIELDS if f.endswith("_ms"))


def _disk_name(disk) -> str:
    if isinstance(disk, DeviceInfo):
        if disk.disk is None:
            raise ValueError(f"{disk.path} is on {disk.fstype} ({disk.mount_source}), "
                             "which has no block device: no diskstats to read")
        return disk.disk
    return str(disk)


def diskstats(disk) -> dict:
    """Counters of one device from /proc/diskstats (disk name or DeviceInfo)."""
    name = _disk_name(disk)
    with open("/proc/diskstats") as fh:
        for line in fh:
            f = line.split()
            if len(f) >= 7 and f[2] == name:
                vals = [int(x) for x in f[3:3 + len(DISKSTATS_FIELDS)]]
                return dict(zip(DISKSTATS_FIELDS, vals, strict=False))
    raise KeyError(f"device {name!r} not in /proc/diskstats")


def all_diskstats() -> dict[str, dict]:
    out = {}
    with open("/proc/diskstats") as fh:
        for line in fh:
            f = line.split()
            if len(f) >= 7:
                out[f[2]] = dict(zip(DISKSTATS_FIELDS, (int(x) for x in f[3:]), strict=False))
    return out


def diskstats_delta(before: dict, after: dict) -> dict:
    """after - before for counters; in_flight is a gauge and keeps its after value."""
    out = {}
    for k, a in after.items():
        if k in GAUGES:
            out[k] = a
        elif k in before:
            d = a - before[k]
            if d < 0 and k in _WRAP32:
                d += 2**32
            out[k] = d
    return out
