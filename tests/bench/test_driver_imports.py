"""A process measured in turns starts with `from rxlab.bench import driver` in every session
(rxlab.bench.timed, rxlab.bench.ab): its start-up is time the session waits for, on a machine whose
cores the other contenders share. What only storing a run or reading published tables needs stays out
of that import."""
from __future__ import annotations

import subprocess
import sys

HEAVY = ("pandas", "pyarrow", "tqdm", "matplotlib", "scipy")


def test_the_driver_imports_no_pandas_pyarrow_or_tqdm():
    code = ("import sys\nfrom rxlab.bench import driver\n"
            f"print(' '.join(m for m in {HEAVY!r} if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "", f"rxlab.bench.driver pulls in {r.stdout.strip()}"


def test_the_functions_that_store_or_read_tables_still_get_them():
    """run() stores through rxlab.core.store and zippydb_options() reads the published flags: both
    import what they need when called."""
    from rxlab.bench import driver

    opts = driver.zippydb_options()
    assert opts["mix_get_ratio"] > 0 and "key_size" not in opts
