"""rxlab's compiled module and plugin, built against one RocksDB build (a module per build)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rxlab.core.builds.cache import REPO, BuildError, get_build, installed_build, module_dir, module_record
from rxlab.core.builds.commands import run_logged


def ext_sources_id() -> str:
    """A hash of what the module is compiled from (ext/ and CMakeLists.txt)."""
    h = hashlib.sha1()
    files = sorted(p for p in (REPO / "ext").rglob("*") if p.is_file() and p.suffix in (".cc", ".h", ".hpp"))
    for p in [REPO / "CMakeLists.txt", *files]:
        h.update(str(p.relative_to(REPO)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def module_current(key: str) -> bool:
    rec = module_record(key)
    return rec is not None and rec.get("ext_sources") == ext_sources_id()


def build_module(key: str, jobs: int | None = None, python: str | None = None) -> Path:
    """Compile rxlab's module and plugin against build `key` into modules/<key>/.

    CMake and ninja from the repository's CMakeLists.txt with
    -DRXLAB_ROCKSDB=<the build>; incremental, so a module whose sources did not
    change is not recompiled. `python` must have pybind11 (default: this one).
    """
    rec = get_build(key)
    python = python or sys.executable
    out = module_dir(key)
    bdir = out / "build"
    bdir.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    r = subprocess.run([python, "-c", "import pybind11; print(pybind11.get_cmake_dir())"],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise BuildError(f"{python} has no pybind11 (pip install pybind11): the module cannot be compiled")
    tools = Path(python).parent
    cmake = str(tools / "cmake") if (tools / "cmake").exists() else (shutil.which("cmake") or "cmake")
    ninja = str(tools / "ninja") if (tools / "ninja").exists() else (shutil.which("ninja") or "ninja")
    t0 = time.time()
    run_logged([cmake, "-S", str(REPO), "-B", str(bdir), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
          "-DCMAKE_BUILD_TYPE=Release", f"-DRXLAB_ROCKSDB={rec['path']}",
          f"-DPython_EXECUTABLE={python}", f"-Dpybind11_DIR={r.stdout.strip()}"],
         f"cmake configure of the module for {key}", log=log)
    run_logged([ninja, "-C", str(bdir), "-j", str(jobs or os.cpu_count() or 2), "_core", "rxlab_plugin"],
         f"compiling the module for {key}", log=log)
    for f in [*bdir.glob("_core*.so"), bdir / "librxlab_plugin.so"]:
        tmp = out / (f.name + ".tmp")
        shutil.copy2(f, tmp)
        tmp.replace(out / f.name)   # atomic: a running process keeps its mapped copy
    (out / "module.json").write_text(json.dumps({
        "key": key, "rocksdb_build": rec["path"], "ext_sources": ext_sources_id(),
        "python": python, "compile_seconds": round(time.time() - t0, 1),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, indent=1) + "\n")
    return out


def ensure_module(key: str, jobs: int | None = None) -> Path | None:
    """The module directory of build `key` (compiled or brought up to date); None
    when `key` is the build of the editable install's module."""
    if Path(get_build(key)["path"]) == installed_build():
        return None
    if not module_current(key):
        build_module(key, jobs)
    return module_dir(key)
