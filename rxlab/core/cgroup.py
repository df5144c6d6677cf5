"""Memory cgroups for one child process: whether they can be made here, and one of its own.

A buffered-IO measurement means nothing if the page cache holds the whole
database, so a study can run its step in a child whose memory cgroup caps
what the page cache may keep (page cache is charged to the group). v1
(/sys/fs/cgroup/memory, what these VMs mount) and v2 are both handled.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CgroupSupport", "MemoryCgroup", "cgroup_support"]


@dataclass(frozen=True)
class CgroupSupport:
    """Whether a memory cgroup can be made here: version 1 or 2, the parent directory, or why not."""

    version: int | None
    parent: Path | None
    reason: str

    @property
    def available(self) -> bool:
        return self.version is not None


def cgroup_support() -> CgroupSupport:
    """Probe the memory controller: root, then v2 (/sys/fs/cgroup/cgroup.controllers) or v1 (.../memory).

    The child's cgroup goes under the cgroup this process is in (so whatever
    limits that one has still apply), never at the hierarchy's root.
    """
    if os.geteuid() != 0:
        return CgroupSupport(None, None, "not root: cannot create a memory cgroup")
    own = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        own[ctrls] = path
    v2root = Path("/sys/fs/cgroup")
    if (v2root / "cgroup.controllers").is_file():
        # v2 lets only leaf cgroups hold processes, and ours holds this one: the child's cgroup is a
        # sibling of ours (the parent enables memory for its children when ours lists it). Untested
        # here: this machine mounts v1.
        mine = v2root / own.get("", "/").lstrip("/")
        cf = mine / "cgroup.controllers"
        ctrls = cf.read_text().split() if cf.is_file() else []
        if "memory" not in ctrls:
            return CgroupSupport(None, None, f"cgroup v2: the memory controller is not available in {mine}")
        parent = mine.parent if mine != v2root else v2root
        return CgroupSupport(2, parent, f"cgroup v2 under {parent}")
    v1root = Path("/sys/fs/cgroup/memory")
    if (v1root / "memory.limit_in_bytes").is_file():
        rel = next((p for c, p in own.items() if "memory" in c.split(",")), "/")
        parent = v1root / rel.lstrip("/")
        if not (parent / "memory.limit_in_bytes").is_file():
            parent = v1root
        return CgroupSupport(1, parent, f"cgroup v1 under {parent}")
    return CgroupSupport(None, None, "no memory controller (neither /sys/fs/cgroup/cgroup.controllers "
                                     "nor /sys/fs/cgroup/memory)")


class MemoryCgroup:
    """A memory cgroup of its own for one child process: create, limit, stat, remove.

    v1: memory.limit_in_bytes, memory.stat, memory.max_usage_in_bytes,
    memory.failcnt, memory.oom_control; v2: memory.max, memory.stat,
    memory.peak, memory.events. `remove()` empties it first (v1:
    memory.force_empty) so its page cache does not linger in the parent.
    """

    def __init__(self, support: CgroupSupport, name: str, limit: int):
        if not support.available:
            raise RuntimeError(f"no memory cgroup: {support.reason}")
        self.version = support.version
        self.path = support.parent / name
        self.limit = int(limit)
        if self.version == 2:
            sub = support.parent / "cgroup.subtree_control"
            if "memory" not in sub.read_text().split():
                try:
                    sub.write_text("+memory")
                except OSError as e:
                    raise RuntimeError(f"cgroup v2: cannot enable the memory controller below "
                                       f"{support.parent} ({e.strerror})") from None
        self.path.mkdir()
        try:
            self._write("memory.max" if self.version == 2 else "memory.limit_in_bytes", str(self.limit))
        except OSError:
            self.path.rmdir()
            raise

    @classmethod
    def existing(cls, path: str | os.PathLike, version: int | None) -> MemoryCgroup:
        """A cgroup made by another process (the parent of a measured child), to read its stat."""
        cg = cls.__new__(cls)
        cg.version, cg.path, cg.limit = version, Path(path), -1
        return cg

    def _write(self, name: str, value: str) -> None:
        (self.path / name).write_text(value)

    def _read(self, name: str) -> str:
        return (self.path / name).read_text()

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def stat(self) -> dict:
        """memory.stat as numbers, plus usage, peak, limit and failure/OOM counts."""
        out = {k: int(v) for k, v in (line.split() for line in self._read("memory.stat").splitlines())}
        if self.version == 1:
            out["usage"] = int(self._read("memory.usage_in_bytes"))
            out["peak"] = int(self._read("memory.max_usage_in_bytes"))
            out["failcnt"] = int(self._read("memory.failcnt"))
            oom = dict(line.split() for line in self._read("memory.oom_control").splitlines())
            out["oom_kill"] = int(oom.get("oom_kill", 0))
        else:
            out["usage"] = int(self._read("memory.current"))
            out["peak"] = int(self._read("memory.peak")) if (self.path / "memory.peak").exists() else -1
            ev = dict(line.split() for line in self._read("memory.events").splitlines())
            out["failcnt"] = int(ev.get("max", 0))
            out["oom_kill"] = int(ev.get("oom_kill", 0))
        out["limit"] = self.limit
        return out

    def remove(self) -> None:
        if not self.path.exists():
            return
        if self.version == 1:
            with contextlib.suppress(OSError):  # best effort: rmdir reparents what is left
                self._write("memory.force_empty", "0")
        for _ in range(50):  # the child has exited; the kernel may need a moment to release it
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
        self.path.rmdir()
