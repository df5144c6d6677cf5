"""The Debug test build of RocksDB in the cache (made once, completed with test binaries as needed)
and the plugin compiled against it."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rxlab.bench.conformance.suites import ConformanceError
from rxlab.core import builds

# The release flags with tests on: Debug (assertions and SyncPoint), the
# test targets defined (WITH_TESTS, WITH_ALL_TESTS), no db_bench.
_REPLACED = ("-DCMAKE_BUILD_TYPE=", "-DWITH_TESTS=", "-DWITH_BENCHMARK_TOOLS=")
# Debug's own flags without -g: the suites need the assertions and SyncPoint (NDEBUG off), not debug
# information, which makes the compile slower and the link several times slower (410 MB with it).
# A unity build (CMake compiles 8 sources as one unit): at -O0 the time goes to parsing RocksDB's
# headers again for every source, and RocksDB keeps its sources compilable together (its Makefile's
# unity.cc and unity_test). The release build, which the measurements use, is built as RocksDB's is.
DEBUG_CMAKE_FLAGS = [*(f for f in builds.CMAKE_FLAGS if not f.startswith(_REPLACED)),
                     "-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_C_FLAGS_DEBUG=-O0", "-DCMAKE_CXX_FLAGS_DEBUG=-O0",
                     "-DCMAKE_UNITY_BUILD=ON",
                     "-DWITH_TESTS=ON", "-DWITH_ALL_TESTS=ON", "-DWITH_BENCHMARK_TOOLS=OFF"]


def active_version() -> tuple[str, str]:
    """(RocksDB version, compiler family) of the active release build."""
    prefix = builds.active_build()
    f = prefix / "build.json"
    if f.is_file():
        rec = json.loads(f.read_text())
        return rec["version"], rec.get("cc", "gcc")
    m = re.match(r"(\d+\.\d+\.\d+)-([a-z]+)", prefix.name)
    return (m.group(1), re.sub(r"\d+$", "", m.group(2))) if m else (builds.DEFAULT_VERSION, "gcc")


def debug_key(version: str, cc: str = "gcc") -> str:
    return builds.build_key(version, cc)


def debug_dir(version: str, cc: str = "gcc") -> Path:
    return builds.cache_root() / "rocksdb-debug" / debug_key(version, cc)


def debug_record(prefix: Path) -> dict | None:
    """build.json of a finished Debug build, None when there is none (or it is unusable)."""
    f = prefix / "build.json"
    if not f.is_file() or not (prefix / "lib" / "librocksdb.so").exists():
        return None
    return json.loads(f.read_text())


def built_tests(prefix: Path) -> set[str]:
    """The test binaries a finished Debug build holds (listed in build.json and present)."""
    rec = debug_record(prefix)
    if rec is None:
        return set()
    return {t for t in rec.get("tests", []) if (prefix / "bin" / t).is_file()}


def _install_tests(bdir: Path, dest: Path, prefix: Path, tests: list[str]) -> None:
    """Copy test binaries out of the build tree, pointed at the build's lib/ (each atomically)."""
    (dest / "bin").mkdir(parents=True, exist_ok=True)
    for t in tests:
        tmp = dest / "bin" / f".{t}.tmp"
        shutil.copy2(bdir / t, tmp)
        # The tree's RUNPATH names the tree; the copy must load the installed library.
        if shutil.which("patchelf"):
            subprocess.run(["patchelf", "--set-rpath", str(prefix / "lib"), str(tmp)], check=False)
        tmp.replace(dest / "bin" / t)


def _write_record(prefix: Path, rec: dict) -> None:
    tmp = prefix / ".build.json.tmp"
    tmp.write_text(json.dumps(rec, indent=1) + "\n")
    tmp.replace(prefix / "build.json")


def debug_build(suites: list[str], version: str | None = None, cc: str | None = None,
                jobs: int | None = None) -> Path:
    """The Debug test build holding the binaries of `suites`, built or completed as needed."""
    if version is None or cc is None:
        v, c = active_version()
        version, cc = version or v, cc or c
    prefix = debug_dir(version, cc)
    have = built_tests(prefix)
    need = sorted(set(suites) - have)
    if not need:
        return prefix
    rec = debug_record(prefix)
    jobs = jobs or os.cpu_count() or 2
    tree = builds.cache_root() / "rocksdb-build" / (prefix.name + "-debug")
    bdir = tree / "build"
    if rec is not None and rec.get("tree") == str(tree) and (bdir / "build.ninja").is_file():
        # Add the missing test binaries to a finished build: the library and
        # the test utilities are already compiled in the kept tree.
        log = tree / "build.log"
        print(f"adding {', '.join(need)} to the RocksDB {version} Debug test build (log {log})",
              file=sys.stderr)
        t0 = time.time()
        builds.ninja_with_progress(["ninja", "-j", str(jobs), *need], bdir, log)
        _install_tests(bdir, prefix, prefix, need)
        rec["tests"] = sorted(have | set(need))
        rec.setdefault("added", []).append({"tests": need, "seconds": round(time.time() - t0)})
        _write_record(prefix, rec)
        return prefix
    return _full_debug_build(prefix, tree, version, cc, sorted(have | set(need)), jobs=jobs)


def _full_debug_build(prefix: Path, tree: Path, version: str, cc: str, tests: list[str], *,
                      jobs: int) -> Path:
    c, cxx, major = builds.compiler_for(cc)
    log = tree / "build.log"
    print(f"building RocksDB {version} Debug with {', '.join(tests)} ({cxx} {major}; about 7 minutes "
          f"on 2 cores and under a minute more per test binary; log {log})", file=sys.stderr)
    tarball, src, patches = builds.unpack_source(version, tree)
    flags = [*DEBUG_CMAKE_FLAGS, f"-DCMAKE_C_COMPILER={c}", f"-DCMAKE_CXX_COMPILER={cxx}"]
    bdir = tree / "build"
    t0 = time.time()
    builds.run_logged(["cmake", "-S", str(src), "-B", str(bdir), "-G", "Ninja", *flags], "cmake configure (Debug)",
                log=log)
    builds.ninja_with_progress(["ninja", "-j", str(jobs), "rocksdb-shared", *tests], bdir, log)
    seconds = time.time() - t0

    # Installed by hand, as the release build: lib/, include/, bin/, then build.json.
    tmp = prefix.with_name(prefix.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "lib").mkdir(parents=True)
    for so in bdir.glob("librocksdb.so*"):
        if so.is_symlink():
            os.symlink(os.readlink(so), tmp / "lib" / so.name)
        else:
            shutil.copy2(so, tmp / "lib" / so.name)
    shutil.copytree(src / "include", tmp / "include")
    _install_tests(bdir, tmp, prefix, tests)
    if prefix.exists():
        shutil.rmtree(prefix)
    tmp.rename(prefix)
    _write_record(prefix, {
        "version": version, "cc": cc, "compiler": cxx, "compiler_version": builds.full_version(cxx),
        "key": prefix.name, "build_type": "Debug", "cmake_flags": flags, "tests": tests,
        "patches": patches, "source": tarball.name, "jobs": jobs, "tree": str(tree),
        "build_seconds": round(seconds), "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    print(f"RocksDB {version} Debug test build in {seconds / 60:.1f} min: {prefix}", file=sys.stderr)
    return prefix


def plugin_for(prefix: Path, python: str | None = None, jobs: int | None = None) -> Path:
    """rxlab's plugin compiled against the Debug build at `prefix` (incremental: ninja
    does nothing when ext/ did not change)."""
    python = python or sys.executable
    out = builds.modules_root() / (prefix.name + "-debug")
    bdir = out / "build"
    bdir.mkdir(parents=True, exist_ok=True)
    log = out / "build.log"
    r = subprocess.run([python, "-c", "import pybind11; print(pybind11.get_cmake_dir())"],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise ConformanceError(f"{python} has no pybind11 (pip install pybind11): the plugin's CMake "
                               "project needs it")
    tools = Path(python).parent
    cmake = str(tools / "cmake") if (tools / "cmake").exists() else (shutil.which("cmake") or "cmake")
    ninja = str(tools / "ninja") if (tools / "ninja").exists() else (shutil.which("ninja") or "ninja")
    # A build directory configured from another checkout (or another venv's cmake) is made anew: its
    # ninja file would re-run a cmake that may be gone, on sources that are not these.
    cache = bdir / "CMakeCache.txt"
    text = cache.read_text() if cache.is_file() else ""
    used = re.search(r"^CMAKE_COMMAND:INTERNAL=(.*)$", text, re.M)
    configured = (f"CMAKE_HOME_DIRECTORY:INTERNAL={builds.REPO}\n" in text and used is not None
                  and Path(used.group(1)).is_file())
    if not configured and bdir.exists():
        shutil.rmtree(bdir)
        bdir.mkdir(parents=True)
    if not (bdir / "build.ninja").is_file():
        print(f"compiling rxlab's plugin against {prefix} (log {log})", file=sys.stderr)
        builds.run_logged([cmake, "-S", str(builds.REPO), "-B", str(bdir), "-G", "Ninja",
                     f"-DCMAKE_MAKE_PROGRAM={ninja}", "-DCMAKE_BUILD_TYPE=Release",
                     f"-DRXLAB_ROCKSDB={prefix}",
                     f"-DPython_EXECUTABLE={python}", f"-Dpybind11_DIR={r.stdout.strip()}"],
                    f"cmake configure of the plugin against {prefix.name} (Debug)", log=log)
    builds.run_logged([ninja, "-C", str(bdir), "-j", str(jobs or os.cpu_count() or 2), "rxlab_plugin"],
                f"compiling the plugin against {prefix.name} (Debug)", log=log)
    return bdir / "librxlab_plugin.so"
