"""Which RocksDB build a process uses: the compiled module RXLAB_BUILD selects, the build that ran."""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from rxlab.core.builds.cache import cache_root, installed_build, module_dir

# Environment variable naming the build whose compiled module rxlab._core loads (on first use).
BUILD_ENV = "RXLAB_BUILD"


def active_build() -> Path:
    """The build this process's RocksDB comes from.

    The loaded module's (it records the build it was compiled against);
    before rxlab._core is loaded (on first use), the build $RXLAB_BUILD
    selects, else the one the installed module is compiled against.
    """
    core = sys.modules.get("rxlab._core")
    path = getattr(core, "rocksdb_build", None)
    if path:
        return Path(path)
    key = os.environ.get(BUILD_ENV, "").strip()
    if key:
        return cache_root() / "rocksdb" / key
    return installed_build()


def select_core() -> str | None:
    """Load build $RXLAB_BUILD's compiled module as rxlab._core (called by rxlab/__init__.py).

    Returns the module's path, or None when RXLAB_BUILD is unset (the editable
    install's module is imported as usual). A key without a compiled module is
    refused unless it is the installed module's build.
    """
    key = os.environ.get(BUILD_ENV, "").strip()
    if not key or "rxlab._core" in sys.modules:
        return None
    sos = sorted(module_dir(key).glob("_core*.so"))
    if not sos:
        if (cache_root() / "rocksdb" / key) == installed_build():
            return None
        raise ImportError(f"{BUILD_ENV}={key}: no compiled rxlab module for that build in "
                          f"{module_dir(key)}: run `rxlab build-module {key}`")
    spec = importlib.util.spec_from_file_location("rxlab._core", sos[0])
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["rxlab._core"] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules["rxlab._core"]
        raise
    if "rxlab" in sys.modules:
        sys.modules["rxlab"]._core = mod  # what the import system does for a loaded submodule
    return str(sos[0])
