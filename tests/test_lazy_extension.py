"""rxlab.core and rxlab.bench import without the compiled extension, which loads on first use.

Each check runs in a fresh interpreter, so that no earlier test has loaded rxlab._core already.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Every module of the two lowest layers, imported one after the other; `out` says what was imported and
# whether rxlab._core got loaded on the way (each test adds to it and prints it).
IMPORT_ALL = r"""
import importlib, json, pkgutil, sys
import rxlab.bench, rxlab.core
names = []
for pkg in (rxlab.core, rxlab.bench):
    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        if m.name.rsplit(".", 1)[-1] == "__main__":
            continue  # a command-line entry point runs when imported
        importlib.import_module(m.name)
        names.append(m.name)
out = {"modules": names, "core_loaded": "rxlab._core" in sys.modules}
"""

# The extension made unfindable: the import system is asked for rxlab._core and refuses it.
HIDE = r"""
import sys
class Hidden:
    def find_spec(self, name, path=None, target=None):
        if name == "rxlab._core":
            raise ImportError("rxlab._core hidden by the test")
sys.meta_path.insert(0, Hidden())
"""


def _python(code: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RXLAB_BUILD"}
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_core_and_bench_import_with_the_extension_hidden_and_asking_for_it_says_so():
    got = _python(HIDE + IMPORT_ALL + r"""
try:
    rxlab.parse_uri("posix")
except ImportError as e:
    out["error"] = str(e)
print(json.dumps(out))
""")
    assert "rxlab.core.metrics" in got["modules"] and "rxlab.bench.driver" in got["modules"]
    assert len(got["modules"]) > 40, got["modules"]
    assert got["core_loaded"] is False
    assert got["error"] == "rxlab._core hidden by the test"


def test_the_extension_loads_on_first_use():
    got = _python(IMPORT_ALL + r"""
from rxlab.core import engines
out["engines"] = [e["name"] for e in engines.engines()]
out["after"] = "rxlab._core" in sys.modules
out["same"] = rxlab.DB is sys.modules["rxlab._core"].DB
print(json.dumps(out))
""")
    assert got["core_loaded"] is False
    assert got["after"] is True and got["same"] is True
    assert {"default", "posix", "io_uring"} <= set(got["engines"])
