"""What the kernel allows here: perf events (software, hardware) and io_uring, each with the reason."""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

from rxlab.core.sysinfo.device import read_file

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
        paranoid = read_file("/proc/sys/kernel/perf_event_paranoid", "?")
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
    disabled = read_file("/proc/sys/kernel/io_uring_disabled")
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
