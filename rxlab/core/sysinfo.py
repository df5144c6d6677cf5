"""The machine side of a measurement, read from /proc and /sys.

A RocksDB number means nothing without the device, kernel and CPU it was
measured on, and the seeds' storage columns (iops, reqsz, io.lat) come from
the kernel's block-layer counters of the device that holds the data, not
from what the program believes it read. This module finds that device from a
path, snapshots its counters, the system-wide and process CPU counters, and
records the environment fingerprint that goes into every run.json.

Standard library only, so the pure-Python references and the C++ driver's
Python side can both use it without the compiled extension.
"""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import json
import os
import platform
import re
import resource
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

from rxlab.core.paths import REPO

# ------------------------------------------------------------------ device


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """The block device and mount that hold a path.

    ``partition`` is the node whose st_dev the path has (vda1, dm-0, or the
    whole disk vda when the filesystem sits on the disk itself); ``disk`` is
    the whole disk whose queue settings and /proc/diskstats line describe the
    IO. For device-mapper and md nodes the node itself is the disk: its
    diskstats line counts the IO the filesystem issued, before it fans out.
    ``disk`` is None when the filesystem has no block device (tmpfs,
    overlay), in which case there are no device counters to read.
    """
    path: str
    partition: str | None
    disk: str | None
    majmin: str
    model: str
    max_sectors_kb: int | None
    max_hw_sectors_kb: int | None
    logical_block_size: int | None
    scheduler: str
    rotational: bool | None
    mount_point: str
    mount_source: str
    fstype: str
    mount_options: str
    super_options: str

    def asdict(self) -> dict:
        return dataclasses.asdict(self)


def _read(path: str | Path, default: str | None = None) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _read_int(path: str | Path) -> int | None:
    s = _read(path)
    try:
        return int(s) if s is not None else None
    except ValueError:
        return None


def work_space(db_dir: str | os.PathLike | None) -> tuple[Path, int]:
    """Where a study's DB goes (db_dir, or the temporary directory) and the bytes free there."""

    work = Path(db_dir) if db_dir is not None else Path(tempfile.gettempdir())
    return work, shutil.disk_usage(_existing(work)).free


def _existing(path: str | os.PathLike) -> Path:
    """The path itself or its nearest existing parent (the DB may not exist yet)."""
    p = Path(os.path.abspath(os.fspath(path)))
    while not p.exists():
        if p.parent == p:
            break
        p = p.parent
    return p


def _unescape_mount(s: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \ooo octal
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def mounts() -> list[dict]:
    """/proc/self/mountinfo as dicts (see proc(5) for the field layout)."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        f = left.split()
        r = right.split()
        if len(f) < 6 or len(r) < 2:
            continue
        out.append({
            "mount_id": int(f[0]), "majmin": f[2], "root": _unescape_mount(f[3]),
            "mount_point": _unescape_mount(f[4]), "mount_options": f[5],
            "fstype": r[0], "source": _unescape_mount(r[1]),
            "super_options": r[2] if len(r) > 2 else "",
        })
    return out


def mount_for_path(path: str | os.PathLike) -> dict:
    """The mount holding `path`: longest mount-point prefix, last mounted wins."""
    p = str(_existing(path).resolve())
    best, best_len = None, -1
    for m in mounts():
        mp = m["mount_point"]
        # later entries in mountinfo shadow earlier ones at the same point: >=
        if (p == mp or p.startswith(mp.rstrip("/") + "/")) and len(mp) >= best_len:
            best, best_len = m, len(mp)
    if best is None:
        raise RuntimeError(f"no mount found for {p} in /proc/self/mountinfo")
    return best


def _sysfs_node(majmin: str) -> Path | None:
    link = Path("/sys/dev/block") / majmin
    return link.resolve() if link.exists() else None


def _disk_of(node: Path) -> Path:
    """Partition -> its parent disk; a whole disk, dm-N or mdN -> itself."""
    if (node / "partition").exists():
        return node.parent
    return node


def _model(disk: Path) -> str:
    """Device model as the kernel knows it; virtio disks have none, say what they are."""
    for f in ("device/model", "device/name"):
        s = _read(disk / f)
        if s:
            return s
    parts = []
    drv = _read(disk / "device/uevent") or ""
    m = re.search(r"^DRIVER=(\S+)", drv, re.M)
    if m:
        parts.append(m.group(1))
    vendor = _read(disk / "device/vendor")
    if vendor:
        parts.append(f"vendor {vendor}")
    serial = _read(disk / "serial") or _read(disk / "device/serial")
    if serial:
        parts.append(f"serial {serial}")
    dm = _read(disk / "dm/name")
    if dm:
        parts.append(f"device-mapper {dm}")
    return ", ".join(parts) if parts else "unknown"


def _scheduler(disk: Path) -> str:
    s = _read(disk / "queue/scheduler") or ""
    m = re.search(r"\[([^\]]+)\]", s)
    return m.group(1) if m else (s or "unknown")


def device_for_path(path: str | os.PathLike) -> DeviceInfo:
    """The partition, whole disk and mount holding `path` (or its nearest existing parent).

    st_dev -> /sys/dev/block/MAJ:MIN -> partition -> parent disk. When st_dev
    is an anonymous device (btrfs subvolumes, overlay) the mount's source
    (/dev/xxx) is tried next.
    """
    p = _existing(path)
    st = os.stat(p)
    majmin = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    mnt = mount_for_path(p)
    node = _sysfs_node(majmin)
    if node is None and mnt["source"].startswith("/dev/"):
        try:
            sst = os.stat(os.path.realpath(mnt["source"]))
            alt = f"{os.major(sst.st_rdev)}:{os.minor(sst.st_rdev)}"
            node = _sysfs_node(alt)
            if node is not None:
                majmin = alt
        except OSError:
            node = None
    if node is None:
        return DeviceInfo(
            path=str(path), partition=None, disk=None, majmin=majmin, model="none (no block device)",
            max_sectors_kb=None, max_hw_sectors_kb=None, logical_block_size=None,
            scheduler="none", rotational=None, mount_point=mnt["mount_point"],
            mount_source=mnt["source"], fstype=mnt["fstype"], mount_options=mnt["mount_options"],
            super_options=mnt["super_options"])
    disk = _disk_of(node)
    rot = _read_int(disk / "queue/rotational")
    return DeviceInfo(
        path=str(path), partition=node.name, disk=disk.name, majmin=majmin, model=_model(disk),
        max_sectors_kb=_read_int(disk / "queue/max_sectors_kb"),
        max_hw_sectors_kb=_read_int(disk / "queue/max_hw_sectors_kb"),
        logical_block_size=_read_int(disk / "queue/logical_block_size"),
        scheduler=_scheduler(disk), rotational=None if rot is None else bool(rot),
        mount_point=mnt["mount_point"], mount_source=mnt["source"], fstype=mnt["fstype"],
        mount_options=mnt["mount_options"], super_options=mnt["super_options"])


# ------------------------------------------------------------------ diskstats

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


# ------------------------------------------------------------------ CPU

CLK_TCK = os.sysconf("SC_CLK_TCK")
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
                    "guest", "guest_nice")


def proc_stat_cpu() -> dict:
    """System-wide CPU seconds since boot from the `cpu` line of /proc/stat.

    Units are USER_HZ ticks (SC_CLK_TCK, 100 here): a 10 ms resolution, so
    short windows need the per-process rusage for precision. guest time is
    already included in user (and guest_nice in nice); it is reported, not
    to be added again.
    """
    with open("/proc/stat") as fh:
        f = fh.readline().split()
    assert f[0] == "cpu", f
    vals = [int(x) / CLK_TCK for x in f[1:]]
    return dict(zip(PROC_STAT_FIELDS, vals, strict=False))  # older kernels have fewer


def proc_stat_delta(before: dict, after: dict) -> dict:
    d = {k: after[k] - before[k] for k in after if k in before}
    busy = sum(d.get(k, 0.0) for k in ("user", "nice", "system", "irq", "softirq", "steal"))
    d["busy"] = busy
    d["total"] = busy + d.get("idle", 0.0) + d.get("iowait", 0.0)
    return d


def proc_pid_cpu(pid: int) -> dict | None:
    """utime/stime (seconds, all threads) of a live process from /proc/PID/stat."""
    try:
        s = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'
    f = s[s.rindex(")") + 2:].split()
    # fields 14 and 15 of proc(5) are f[11], f[12] here (f[0] is field 3)
    return {"user_s": int(f[11]) / CLK_TCK, "sys_s": int(f[12]) / CLK_TCK,
            "minflt": int(f[7]), "majflt": int(f[9])}


def proc_pid_io(pid: int) -> dict | None:
    """/proc/PID/io of a live process: read_bytes/write_bytes are what it made the
    storage layer transfer (O_DIRECT included, page-cache hits excluded), so unlike
    the device-wide diskstats they are not polluted by other processes' IO."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    return {k: int(v) for k, v in (line.split(": ") for line in text.splitlines() if ": " in line)}


def _ru(who) -> dict:
    r = resource.getrusage(who)
    return {"user_s": r.ru_utime, "sys_s": r.ru_stime, "nvcsw": r.ru_nvcsw, "nivcsw": r.ru_nivcsw,
            "minflt": r.ru_minflt, "majflt": r.ru_majflt, "maxrss_kb": r.ru_maxrss,
            "inblock": r.ru_inblock, "oublock": r.ru_oublock}


def rusage() -> dict:
    """Process and waited-for children resource usage (microsecond CPU resolution).

    Children counts include grandchildren once their parent waited for them
    (fio's job processes count toward fio, and fio toward us, after exit).
    """
    out = {f"self_{k}": v for k, v in _ru(resource.RUSAGE_SELF).items()}
    out.update({f"children_{k}": v for k, v in _ru(resource.RUSAGE_CHILDREN).items()})
    out["time_s"] = time.monotonic()
    return out


def rusage_delta(before: dict, after: dict) -> dict:
    # maxrss is a high-water mark, not a counter
    return {k: (after[k] if k.endswith("maxrss_kb") else after[k] - before[k])
            for k in after if k in before}


# ------------------------------------------------------------------ probes

# perf_event_open and io_uring_setup syscall numbers by machine.
_SYS_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241, "i686": 336, "riscv64": 241, "ppc64le": 319,
                        "s390x": 331}
_SYS_IO_URING_SETUP = 425  # the same on every architecture (added after the syscall table unification)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def _errname(e: int) -> str:
    return f"{errno.errorcode.get(e, str(e))} ({os.strerror(e)})"


def _perf_probe(type_: int, config: int) -> str:
    nr = _SYS_PERF_EVENT_OPEN.get(platform.machine())
    if nr is None:
        return f"unknown (no perf_event_open number for {platform.machine()})"
    # struct perf_event_attr, PERF_ATTR_SIZE_VER0 = 64 bytes: type u32, size u32,
    # config u64, sample_period u64, sample_type u64, read_format u64, flags u64 ...
    buf = ctypes.create_string_buffer(64)
    flags = (1 << 0) | (1 << 5) | (1 << 6)  # disabled, exclude_kernel, exclude_hv
    struct.pack_into("=IIQQQQQ", buf, 0, type_, 64, config, 0, 0, 0, flags)
    fd = _libc.syscall(ctypes.c_long(nr), ctypes.byref(buf), ctypes.c_int(0), ctypes.c_int(-1),
                       ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd >= 0:
        os.close(fd)
        return "available"
    e = ctypes.get_errno()
    if e in (errno.ENOENT, errno.EOPNOTSUPP, errno.ENODEV):
        return f"unavailable: {_errname(e)}"
    if e in (errno.EACCES, errno.EPERM):
        paranoid = _read("/proc/sys/kernel/perf_event_paranoid", "?")
        return f"not permitted: {_errname(e)}, perf_event_paranoid={paranoid}"
    return f"unavailable: {_errname(e)}"


def perf_hw_counters() -> str:
    """'available' or why not, from perf_event_open(PERF_COUNT_HW_INSTRUCTIONS)."""
    return _perf_probe(0, 1)  # PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS


def perf_sw_counters() -> str:
    """Same for PERF_COUNT_SW_TASK_CLOCK (works in VMs without a PMU)."""
    return _perf_probe(1, 1)  # PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK


def io_uring_status() -> str:
    """'available' or why not, by calling io_uring_setup(1, params) and closing the ring."""
    disabled = _read("/proc/sys/kernel/io_uring_disabled")
    params = (ctypes.c_uint8 * 120)()  # struct io_uring_params, zeroed
    fd = _libc.syscall(ctypes.c_long(_SYS_IO_URING_SETUP), ctypes.c_uint(1), ctypes.byref(params))
    if fd >= 0:
        os.close(fd)
        return "available" + (f" (io_uring_disabled={disabled})" if disabled not in (None, "0") else "")
    e = ctypes.get_errno()
    if e == errno.ENOSYS:
        return f"unavailable: {_errname(e)}, kernel built without io_uring"
    if e == errno.EPERM:
        return f"unavailable: {_errname(e)}, io_uring_disabled={disabled}"
    return f"unavailable: {_errname(e)}"


# ------------------------------------------------------------------ fingerprint


def _cpu_model() -> str:
    text = _read("/proc/cpuinfo") or ""
    for key in ("model name", "Model", "cpu model", "Processor"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m.group(1).strip()
    return platform.processor() or "unknown"


def _cpufreq() -> dict:
    d = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    if not d.is_dir():
        return {"cpufreq_driver": "unavailable", "cpufreq_governor": "unavailable",
                "cpufreq_min_khz": None, "cpufreq_max_khz": None}
    return {"cpufreq_driver": _read(d / "scaling_driver", "unavailable"),
            "cpufreq_governor": _read(d / "scaling_governor", "unavailable"),
            "cpufreq_min_khz": _read_int(d / "scaling_min_freq"),
            "cpufreq_max_khz": _read_int(d / "scaling_max_freq")}


def _meminfo_kb(key: str) -> int | None:
    m = re.search(rf"^{key}:\s+(\d+) kB", _read("/proc/meminfo") or "", re.M)
    return int(m.group(1)) if m else None


def _own_cgroup_dirs() -> list[str]:
    """This process's memory cgroup directories, innermost first (v2 unified, then v1 memory)."""
    dirs = []
    for line in (_read("/proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if parts[0] == "0" and parts[1] == "":
            base = "/sys/fs/cgroup"
        elif "memory" in parts[1].split(","):
            base = "/sys/fs/cgroup/memory"
        else:
            continue
        p = Path(base + parts[2])
        while True:  # a limit can be set on any ancestor: walk up to the root
            dirs.append(str(p))
            if str(p) == base or p.parent == p:
                break
            p = p.parent
    return dirs


def _cgroup_memory_limit() -> int | None:
    """The tightest memory limit over this process's cgroup and its ancestors, in bytes; None if unlimited."""
    limits = []
    for d in _own_cgroup_dirs():
        for f in ("memory.max", "memory.limit_in_bytes"):
            s = _read(f"{d}/{f}")
            if s and s != "max":
                try:
                    v = int(s)
                except ValueError:
                    continue
                if v < 2**62:
                    limits.append(v)
    return min(limits) if limits else None




def rxlab_version() -> str:
    try:
        return version("rxlab")
    except Exception:
        m = re.search(r'^version\s*=\s*"([^"]+)"', _read(REPO / "pyproject.toml") or "", re.M)
        return m.group(1) if m else "unknown"


def git_info(repo: Path = REPO) -> dict:
    """Commit and dirtiness of the checkout (read-only git calls: no index refresh)."""
    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", "--no-optional-locks", "-C", str(repo), *args],
                               capture_output=True, text=True, timeout=10, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return r.stdout.strip() if r.returncode == 0 else None
    commit = git("rev-parse", "HEAD") if (repo / ".git").exists() else None
    if commit is None:
        return {"git_commit": "unknown", "git_dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": bool(status) if status is not None else None}


def host_id() -> str:
    """The name a host goes by in a sweep: $RXLAB_HOST_ID (`rxlab worker --host-id`), else its hostname."""
    return os.environ.get("RXLAB_HOST_ID") or socket.gethostname()


def fingerprint(db_path: str | os.PathLike | None = None, rocksdb_build: dict | None = None) -> dict:
    """The environment a run was measured in, for run.json.

    ``rocksdb_build`` is the build record the caller used (build.json of the
    RocksDB build, or the version of a packaged library); rxlab does not
    guess it. ``db_path`` names the storage whose device is described.
    """
    u = platform.uname()
    fp: dict = {
        "hostname": socket.gethostname(),
        "host_id": host_id(),
        "kernel": u.release, "kernel_version": u.version, "machine": u.machine,
        "os": _os_release(),
        "cpu_model": _cpu_model(),
        **_cpufreq(),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)),
        "memory_kb": _meminfo_kb("MemTotal"),
        "cgroup_memory_limit": _cgroup_memory_limit(),
        "clk_tck": CLK_TCK,
        "python": sys.version.split()[0],
        "rxlab_version": rxlab_version(),
        **git_info(),
        "perf_hw_counters": perf_hw_counters(),
        "perf_sw_counters": perf_sw_counters(),
        "io_uring": io_uring_status(),
        "fio": _tool_version(["fio", "--version"]),
        "captured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "device": device_for_path(db_path).asdict() if db_path is not None else None,
        "rocksdb_build": rocksdb_build,
    }
    json.dumps(fp)  # fail here, not at the end of a run, if something is not serialisable
    return fp


def _os_release() -> str:
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', _read("/etc/os-release") or "", re.M)
    return m.group(1) if m else "unknown"


def _tool_version(cmd: list[str]) -> str:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "not found"
    return (r.stdout or r.stderr).strip().splitlines()[0] if r.returncode == 0 else "not found"


def dir_problem(path: str | os.PathLike) -> str | None:
    """Why no directory can be made or written at `path`, in a few words; None when it can.

    A path under a file, a directory this user may not write, a read-only
    file system: each is said for what it is, so that no caller mistakes it
    for a file system without O_DIRECT (what direct_io_works answers).
    """
    p = Path(os.path.abspath(os.fspath(path)))
    base = _existing(p)
    if not base.is_dir():
        return f"{base} is a file, not a directory" + ("" if base == p else f", so {p} cannot be made")
    probe = base / f".rxlab-probe-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except OSError as e:
        where = "" if base == p else f" (the nearest existing part of {p})"
        return f"{base}{where} is not writable: {os.strerror(e.errno)}"
    os.close(fd)
    with contextlib.suppress(OSError):
        probe.unlink()
    return None


def direct_io_works(path: str | os.PathLike) -> bool:
    """Can a file next to `path` be opened with O_DIRECT?

    False only when the file system refuses O_DIRECT (EINVAL). A path where
    nothing can be written raises ValueError naming why (dir_problem), never
    False: an unwritable directory is not a file system without O_DIRECT.
    """
    why = dir_problem(path)
    if why:
        raise ValueError(why)
    base = _existing(path)
    probe = base / f".rxlab-odirect-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o600)
        os.close(fd)
        return True
    except OSError as e:
        if e.errno == errno.EINVAL:
            return False
        raise ValueError(f"{base}: cannot create a file there: {os.strerror(e.errno)}") from None
    finally:
        with contextlib.suppress(OSError):
            probe.unlink()
