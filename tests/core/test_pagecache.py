"""rxlab.core.pagecache on real files: RWF_NOWAIT reads tell whether a page is in the page cache
(EAGAIN when it is not), so they check what page_in and page_out did."""
from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from rxlab.core.pagecache import page_in, page_out


def cached(path: Path) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.preadv(fd, [bytearray(4096)], 0, os.RWF_NOWAIT)
        return True
    except OSError as e:
        if e.errno == errno.EOPNOTSUPP:
            pytest.skip(f"{path.parent}: this file system does not read with RWF_NOWAIT")
        if e.errno != errno.EAGAIN:
            raise
        return False
    finally:
        os.close(fd)


def test_page_out_then_page_in(tmp_path):
    db = tmp_path / "db"
    (db / "sub").mkdir(parents=True)
    files = [db / "000001.sst", db / "sub" / "MANIFEST"]
    for i, f in enumerate(files):
        f.write_bytes(os.urandom(64 << 10) * (i + 1))   # written just now: in the page cache, dirty
    assert page_out(db) == 2
    assert not any(cached(f) for f in files)
    assert page_in(db) == sum(f.stat().st_size for f in files)
    assert all(cached(f) for f in files)
