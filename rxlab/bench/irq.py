"""The disk's interrupts per CPU: which CPU a blocking reader is woken on.

A blocking read ends with the device's interrupt on one CPU and a wake-up of
the reader there or, by an inter-processor wake-up, on another. The driver
and rxlab's fio record, per step, which CPU took the interrupts and how many
of the reader's calls returned on it (`IrqWindow`); the placement study and
the measurements in turns pin readers to that CPU (`busiest_irq_cpu`).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rxlab.core import sysinfo

__all__ = ["IrqWindow", "busiest_irq_cpu", "device_irqs", "interrupt_counts"]


def device_irqs(path: str | os.PathLike) -> list[int]:
    """The interrupt numbers of the device holding `path` (its PCI function's MSI vectors), or []."""
    disk = sysinfo.device_for_path(path).disk
    if not disk:
        return []
    node = Path(os.path.realpath(f"/sys/block/{disk}/device"))
    for d in (node, *node.parents):
        msi = d / "msi_irqs"
        if msi.is_dir():
            return sorted(int(p.name) for p in msi.iterdir() if p.name.isdigit())
        if d == Path("/sys/devices"):
            break
    return []


def interrupt_counts(irqs: Sequence[int], text: str | None = None) -> np.ndarray:
    """Interrupts so far per CPU, summed over `irqs` (from /proc/interrupts, or `text`)."""
    lines = (text if text is not None else Path("/proc/interrupts").read_text()).splitlines()
    ncpu = len(lines[0].split())
    total = np.zeros(ncpu, dtype=np.int64)
    want = {f"{i}:" for i in irqs}
    for line in lines[1:]:
        f = line.split()
        if f and f[0] in want:
            total += np.array([int(x) for x in f[1:1 + ncpu]], dtype=np.int64)
    return total


def busiest_irq_cpu(path: str | os.PathLike) -> int | None:
    """The CPU that has taken most of the interrupts of the device holding `path` since boot
    (None when they cannot be found): where a pinned blocking reader wakes up cheapest."""
    irqs = device_irqs(path)
    counts = interrupt_counts(irqs) if irqs else np.zeros(0)
    return int(np.argmax(counts)) if counts.sum() > 0 else None


class IrqWindow:
    """The device's interrupts per CPU over a window (a step, a fio run): which CPU took them,
    and how many of a reader's blocking calls returned on that CPU.

    `columns(by_cpu)` turns the workers' counts per CPU (calls for RocksDB steps, IOs for fio,
    counted when the call returned: where the reader was woken) into the stored columns
    irq_cpu, calls_on_irq_cpu and calls_counted; rxlab.core.metrics derives awayShare from them.
    Without a device's interrupts (a tmpfs, no MSI vectors) the columns are None.
    """

    def __init__(self, path: str | os.PathLike):
        self.irqs = device_irqs(path)
        self.before = interrupt_counts(self.irqs) if self.irqs else None

    def columns(self, by_cpu: Sequence[int]) -> dict:
        counted = int(sum(by_cpu))
        out = {"irq_cpu": None, "calls_on_irq_cpu": None, "calls_counted": counted}
        if self.before is None:
            return out
        delta = interrupt_counts(self.irqs) - self.before
        if delta.sum() <= 0:
            return out
        cpu = int(np.argmax(delta))
        out["irq_cpu"] = cpu
        out["calls_on_irq_cpu"] = int(by_cpu[cpu]) if cpu < len(by_cpu) else 0
        return out
