"""A DB's files in or out of the page cache: read once through it (`page_in`), or written back and
dropped from it (`page_out`), for measurements that must start warm or cold."""
from __future__ import annotations

import os
from pathlib import Path


def page_in(db: Path) -> int:
    """Read every file under `db` once through the page cache; returns the bytes read."""
    n = 0
    for f in sorted(Path(db).rglob("*")):
        if f.is_file():
            with f.open("rb", buffering=0) as fh:
                while chunk := fh.read(8 << 20):
                    n += len(chunk)
    return n


def page_out(db: Path) -> int:
    """Drop every file under `db` from the page cache: fdatasync first, since only clean pages are
    dropped, then fadvise(DONTNEED). Only these files' pages, not the machine's. Returns the files."""
    n = 0
    for f in sorted(Path(db).rglob("*")):
        if f.is_file():
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
            n += 1
    return n
