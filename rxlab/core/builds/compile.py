"""A release build of RocksDB (shared library and db_bench) into the cache."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from rxlab.core.builds.cache import (
    DEFAULT_VERSION,
    BuildError,
    build_dir,
    cache_root,
    compiler_for,
    is_complete,
)
from rxlab.core.builds.commands import full_version, ninja_with_progress, run_logged
from rxlab.core.builds.source import unpack_source

# RocksDB options that every rxlab build uses. USE_RTTI=ON: a release build is
# otherwise -fno-rtti and RTTI-compiled FileSystemWrapper subclasses (pybind11
# code) fail to load on a missing typeinfo symbol.
CMAKE_FLAGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DUSE_RTTI=ON",
    "-DWITH_LIBURING=ON",
    "-DWITH_GFLAGS=ON",
    "-DWITH_LZ4=ON",
    "-DWITH_ZSTD=ON",
    "-DWITH_SNAPPY=ON",
    "-DWITH_TESTS=OFF",
    "-DWITH_BENCHMARK_TOOLS=ON",
    "-DWITH_TOOLS=OFF",
    "-DWITH_CORE_TOOLS=OFF",
    "-DFAIL_ON_WARNINGS=OFF",
    "-DPORTABLE=1",
    # CMake 4 refuses projects that declare a minimum below 3.5 (old
    # third-party modules do); harmless on older CMake.
    "-DCMAKE_POLICY_VERSION_MINIMUM=3.5",
]
TARGETS = ["rocksdb-shared", "db_bench"]


def build(version: str = DEFAULT_VERSION, cc: str = "gcc", lto: bool = False,
          jobs: int | None = None, force: bool = False, cxxflags: str = "") -> Path:
    """Build RocksDB `version` (shared library + db_bench) into the cache.

    lto: clang's link-time optimisation (CMake's IPO: -flto=thin) with lld and
    llvm-ar/llvm-ranlib of the same LLVM version. cxxflags: extra C/C++ flags
    (part of the key). A finished build is returned as it is unless `force`.
    """
    if lto and cc != "clang":
        raise BuildError(f"--lto with cc={cc}: LTO builds use clang with lld (the post's clang+LTO)")
    prefix = build_dir(version, cc, lto, cxxflags)
    c, cxx, major = compiler_for(cc)
    if is_complete(prefix) and not force:
        rec = json.loads((prefix / "build.json").read_text())
        now = full_version(cxx)
        note = "" if rec.get("compiler_version") == now else \
            f" (built by {rec.get('compiler_version')}; {cxx} is now {now}; --force rebuilds)"
        print(f"RocksDB {version} ({prefix.name}) already built: {prefix}{note}", file=sys.stderr)
        return prefix
    work = cache_root() / "rocksdb-build" / prefix.name
    log = work / "build.log"
    print(f"building RocksDB {version} with {cxx} {major}{' + LTO' if lto else ''} "
          f"(6 to 20 minutes on 2 cores, by the host; log {log})", file=sys.stderr)
    flags = [*CMAKE_FLAGS, f"-DCMAKE_C_COMPILER={c}", f"-DCMAKE_CXX_COMPILER={cxx}"]
    extra = " ".join(cxxflags.split())
    if extra:
        flags += [f"-DCMAKE_C_FLAGS={extra}", f"-DCMAKE_CXX_FLAGS={extra}"]
    if lto:
        # LTO objects are LLVM bitcode: llvm-ar/llvm-ranlib and lld of the same LLVM
        # (the post's clang+LTO). A plain clang build links the shared library with
        # the system linker; static archives are not part of TARGETS.
        ver = cxx.rsplit("-", 1)[-1] if "-" in cxx else ""
        sfx = f"-{ver}" if ver.isdigit() else ""
        for tool in ("llvm-ar", "llvm-ranlib", "ld.lld"):
            if not shutil.which(tool + sfx):
                raise BuildError(f"{tool + sfx} not found: apt-get install -y lld{sfx} llvm{sfx}")
        flags += ["-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON",
                  f"-DCMAKE_AR={shutil.which('llvm-ar' + sfx)}",
                  f"-DCMAKE_RANLIB={shutil.which('llvm-ranlib' + sfx)}",
                  f"-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld{sfx}",
                  f"-DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld{sfx}"]
    bdir = work / "build"
    t0 = time.time()
    # An interrupted build (Ctrl-C, a killed session) resumes: the tree configured with the same flags
    # is kept, and ninja compiles only what is missing. Anything else starts from a fresh tree.
    configured = work / "configured.json"
    done = json.loads(configured.read_text()) if configured.is_file() else None
    resumed = done and done.get("flags") == flags and (bdir / "build.ninja").is_file() and not force
    if resumed:
        tarball, src, patches = Path(done["tarball"]), Path(done["src"]), done["patches"]
        print(f"resuming the interrupted build in {bdir}", file=sys.stderr)
    else:
        tarball, src, patches = unpack_source(version, work)
        run_logged(["cmake", "-S", str(src), "-B", str(bdir), "-G", "Ninja", *flags], "cmake configure",
                   log=log)
        configured.write_text(json.dumps({"flags": flags, "tarball": str(tarball), "src": str(src),
                                          "patches": patches}))
    jobs = jobs or os.cpu_count() or 2
    ninja_with_progress(["ninja", "-j", str(jobs), *TARGETS], bdir, log)
    seconds = time.time() - t0

    # Install by hand: `cmake --install` would build every target (static too).
    tmp = prefix.with_name(prefix.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    (tmp / "lib").mkdir(parents=True)
    (tmp / "bin").mkdir()
    for so in bdir.glob("librocksdb.so*"):
        if so.is_symlink():
            os.symlink(os.readlink(so), tmp / "lib" / so.name)
        else:
            shutil.copy2(so, tmp / "lib" / so.name)
    shutil.copy2(bdir / "db_bench", tmp / "bin" / "db_bench")
    shutil.copytree(src / "include", tmp / "include")
    # db_bench finds the library through its build-tree RUNPATH; point it at ours.
    if shutil.which("patchelf"):
        subprocess.run(["patchelf", "--set-rpath", str(prefix / "lib"), str(tmp / "bin" / "db_bench")],
                       check=False)
    record = {
        "version": version, "cc": cc, "compiler": cxx, "compiler_version": full_version(cxx),
        "lto": lto, "key": prefix.name, "cmake_flags": flags, "targets": TARGETS,
        "cxxflags_release": "-O3 -DNDEBUG", "cxxflags_extra": extra, "patches": patches,
        "source": tarball.name, "jobs": jobs,
        "build_seconds": round(seconds), "resumed": bool(resumed),
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if prefix.exists():
        shutil.rmtree(prefix)
    tmp.rename(prefix)
    (prefix / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print(f"RocksDB {version} built in {seconds / 60:.1f} min: {prefix}", file=sys.stderr)
    return prefix
