"""A directory a DB cannot go to is said to be unwritable (or under a file), never a file system
without O_DIRECT: rxlab.core.sysinfo.dir_problem and direct_io_works, rxlab.core.params.db_dir.
Real paths: a file, a path under it, sysfs (which refuses new files even to root)."""
from __future__ import annotations

from pathlib import Path

import pytest

from rxlab.core import params, sysinfo

SYSFS = Path("/sys/rxlab-test-dir")


def test_a_writable_directory_has_no_problem(tmp_path):
    assert sysinfo.dir_problem(tmp_path) is None
    assert sysinfo.dir_problem(tmp_path / "not" / "yet") is None  # made when needed
    assert sysinfo.direct_io_works(tmp_path) is True  # ext4 here
    assert list(tmp_path.iterdir()) == []  # the probes leave nothing behind


def test_a_file_or_a_path_under_one(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    assert sysinfo.dir_problem(f) == f"{f} is a file, not a directory"
    assert sysinfo.dir_problem(f / "db") == f"{f} is a file, not a directory, so {f / 'db'} cannot be made"
    with pytest.raises(ValueError, match="is a file, not a directory"):
        sysinfo.direct_io_works(f / "db")


def test_an_unwritable_directory():
    why = sysinfo.dir_problem(SYSFS)
    assert why is not None and why.startswith("/sys (the nearest existing part of /sys/rxlab-test-dir) is "
                                              "not writable: ")
    with pytest.raises(ValueError, match="not writable") as e:
        sysinfo.direct_io_works(SYSFS)
    assert "O_DIRECT" not in str(e.value)


def test_a_study_parameter_names_the_cause(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(ValueError, match=r"^db_dir=.*: exists and is not a directory$"):
        params.db_dir(str(f))
    for value, need in ((str(f / "db"), True), (str(SYSFS), True), (str(SYSFS), False)):
        with pytest.raises(ValueError) as e:
            params.db_dir(value, need_direct_io=need)
        assert "O_DIRECT" not in str(e.value) and "choose a directory you can write" in str(e.value)
    assert params.db_dir(str(tmp_path / "new")) == str(tmp_path / "new")
