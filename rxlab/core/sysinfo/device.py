"""The block device and mount that hold a path: model, queue settings, scheduler, file system, options."""
from __future__ import annotations

import dataclasses
import os
import re
import shutil
import tempfile
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class DeviceInfo:
    """The block device and mount that hold a path.

    ``partition`` is the node whose st_dev the path has (vda1, dm-0, or the
    whole disk vda when the filesystem sits on the disk itself); ``disk`` is
    the whole disk whose queue settings and /proc/diskstats line describe the
    IO. For device-mapper and md nodes the node itself is the disk: its
    diskstats line counts the IO the filesystem issued, before it fans out.
    ``disk`` is None when the filesystem has no block device (tmpfs,
    overlay), in which case there are no device counters to read. ``kind``
    says what sort of device it is in words (`device_kind`).
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
    kind: str = "unknown"

    def asdict(self) -> dict:
        return dataclasses.asdict(self)


def read_file(path: str | Path, default: str | None = None) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def read_int(path: str | Path) -> int | None:
    s = read_file(path)
    try:
        return int(s) if s is not None else None
    except ValueError:
        return None


def work_space(db_dir: str | os.PathLike | None) -> tuple[Path, int]:
    """Where a study's DB goes (db_dir, or the temporary directory) and the bytes free there."""

    work = Path(db_dir) if db_dir is not None else Path(tempfile.gettempdir())
    return work, shutil.disk_usage(existing_parent(work)).free


def existing_parent(path: str | os.PathLike) -> Path:
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
    p = str(existing_parent(path).resolve())
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
        s = read_file(disk / f)
        if s:
            return s
    parts = []
    drv = read_file(disk / "device/uevent") or ""
    m = re.search(r"^DRIVER=(\S+)", drv, re.M)
    if m:
        parts.append(m.group(1))
    vendor = read_file(disk / "device/vendor")
    if vendor:
        parts.append(f"vendor {vendor}")
    serial = read_file(disk / "serial") or read_file(disk / "device/serial")
    if serial:
        parts.append(f"serial {serial}")
    dm = read_file(disk / "dm/name")
    if dm:
        parts.append(f"device-mapper {dm}")
    return ", ".join(parts) if parts else "unknown"


# Whole-disk name prefixes and the kind of device they are (the kernel's naming conventions).
_KINDS = (("nvme", "NVMe SSD"), ("vd", "virtio disk (virtual machine)"), ("xvd", "Xen virtual disk"),
          ("dm-", "device-mapper volume"), ("md", "software RAID (md)"), ("loop", "loop device (a file)"),
          ("nbd", "network block device"), ("rbd", "Ceph RBD (network)"), ("zram", "compressed RAM disk"),
          ("mmcblk", "SD/eMMC card"), ("pmem", "persistent memory"))


def device_kind(disk: str | None, rotational: bool | None, fstype: str = "") -> str:
    """The kind of device a disk is, in words: "NVMe SSD", "virtio disk (virtual machine)", "SATA/SCSI
    SSD" or "... HDD" from the queue's rotational flag, or what holds a file system without one."""
    if disk is None:
        return f"no block device ({fstype or 'unknown file system'})"
    for prefix, kind in _KINDS:
        if disk.startswith(prefix):
            return kind
    if disk.startswith(("sd", "hd")):
        return "SATA/SCSI " + ("HDD" if rotational else "SSD" if rotational is False else "disk")
    return "unknown"


def _scheduler(disk: Path) -> str:
    s = read_file(disk / "queue/scheduler") or ""
    m = re.search(r"\[([^\]]+)\]", s)
    return m.group(1) if m else (s or "unknown")


def device_for_path(path: str | os.PathLike) -> DeviceInfo:
    """The partition, whole disk and mount holding `path` (or its nearest existing parent).

    st_dev -> /sys/dev/block/MAJ:MIN -> partition -> parent disk. When st_dev
    is an anonymous device (btrfs subvolumes, overlay) the mount's source
    (/dev/xxx) is tried next.
    """
    p = existing_parent(path)
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
            super_options=mnt["super_options"], kind=device_kind(None, None, mnt["fstype"]))
    disk = _disk_of(node)
    rot = read_int(disk / "queue/rotational")
    return DeviceInfo(
        path=str(path), partition=node.name, disk=disk.name, majmin=majmin, model=_model(disk),
        max_sectors_kb=read_int(disk / "queue/max_sectors_kb"),
        max_hw_sectors_kb=read_int(disk / "queue/max_hw_sectors_kb"),
        logical_block_size=read_int(disk / "queue/logical_block_size"),
        scheduler=_scheduler(disk), rotational=None if rot is None else bool(rot),
        mount_point=mnt["mount_point"], mount_source=mnt["source"], fstype=mnt["fstype"],
        mount_options=mnt["mount_options"], super_options=mnt["super_options"],
        kind=device_kind(disk.name, None if rot is None else bool(rot)))
