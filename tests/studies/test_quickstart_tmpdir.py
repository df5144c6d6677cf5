"""The start-here notebook's temporary directory (quickstart Params.work_dir) goes with its process:
each papermill run of notebook 00 used to leave a 17 MB /tmp/rxlab-start-* folder behind. A db_dir the
user gave is left alone. (tests/test_readme.py checks the same over a real papermill run.)"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = ("from rxlab.studies import quickstart as q; import sys; "
         "p = q.Params.checked(scale='smoke', db_dir=sys.argv[1] or None); w = p.work_dir(); "
         "(w / 'db').mkdir(parents=True); (w / 'db' / 'f').write_bytes(b'x' * 4096); print(w)")


def test_the_temporary_work_dir_is_removed_at_exit():
    r = subprocess.run([sys.executable, "-c", CHILD, ""], capture_output=True, text=True, check=True,
                       timeout=60)
    work = Path(r.stdout.strip().splitlines()[-1])
    assert work.name.startswith("rxlab-start-")
    assert not work.exists()


def test_a_given_db_dir_stays(tmp_path):
    mine = tmp_path / "mine"
    r = subprocess.run([sys.executable, "-c", CHILD, str(mine)], capture_output=True, text=True, check=True,
                       timeout=60)
    assert Path(r.stdout.strip().splitlines()[-1]) == mine
    assert (mine / "db" / "f").is_file()
