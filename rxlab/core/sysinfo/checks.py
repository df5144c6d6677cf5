"""Whether a directory can hold a DB: writable, enough room, O_DIRECT."""
from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from rxlab.core.sysinfo.device import existing_parent


def dir_problem(path: str | os.PathLike) -> str | None:
    """Why no directory can be made or written at `path`, in a few words; None when it can.

    A path under a file, a directory this user may not write, a read-only
    file system: each is said for what it is, so that no caller mistakes it
    for a file system without O_DIRECT (what direct_io_works answers).
    """
    p = Path(os.path.abspath(os.fspath(path)))
    base = existing_parent(p)
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
    base = existing_parent(path)
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
