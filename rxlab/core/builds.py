"""Release builds of RocksDB from Debian's verified upstream tarballs.

This module uses the standard library only: the set-up runs it with the
system Python (``python3 rxlab/core/builds.py build``) before the virtual
environment exists, and ``rxlab build-rocksdb`` / ``rxlab builds`` reuse it.

A build lives in ``$RXLAB_CACHE/rocksdb/<key>/`` (default cache
``~/.cache/rxlab``) with ``lib/``, ``include/``, ``bin/db_bench`` and
``build.json`` (version, compiler, flags, build time, patches applied). The key
names version, compiler, compiler major version, LTO and any extra compiler
flags (as a short hash), e.g. ``9.10.0-gcc12``, ``9.10.0-clang16-lto``,
``9.10.0-gcc12-f1a2b3c4d``. A finished build is reused, never silently rebuilt
(a different full compiler version is reported, not acted on);
``build.json`` is written last, so a directory without it is an interrupted
build and is redone. ``remove(key)`` deletes a build and its module.

Builds as an experiment variable: a process uses one RocksDB build (every
build's library has the same soname), so each build gets its own compiled
rxlab module and plugin in ``$RXLAB_CACHE/modules/<key>/`` (``build_module``,
the repository's CMakeLists.txt with ``-DRXLAB_ROCKSDB=<build>``), and a
process selects it by setting ``RXLAB_BUILD=<key>`` before ``import rxlab``
(``select_core``, called by rxlab/__init__.py). Without RXLAB_BUILD, rxlab
imports the editable install's module, compiled against the default build.
``active_build()`` is the build the imported module was compiled against, so
a run's fingerprint records the build that really ran.

Old versions that fail to compile with this machine's compilers get the
smallest patch kept in ``ext/rocksdb-patches/<version>/*.patch`` (applied in
name order, recorded in build.json with the first line of each patch's
header as the reason).
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

DEFAULT_VERSION = "9.10.0"
# Debian revision of each upstream version known to be in the source indexes.
# Others are discovered with apt-cache showsrc.
KNOWN_REVISIONS = {"7.8.3": "7.8.3-2", "9.10.0": "9.10.0-1", "9.11.2": "9.11.2-1"}
SUITES = ("bookworm", "trixie", "sid")
MIRROR = "http://deb.debian.org/debian"

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
REPO = Path(__file__).resolve().parents[2]  # stdlib only: not rxlab.core.paths (run before the venv)
PATCH_DIR = REPO / "ext" / "rocksdb-patches"
# Environment variable naming the build whose compiled module `import rxlab` loads.
BUILD_ENV = "RXLAB_BUILD"
# The compilers each toolchain uses (the gcc-vs-clang post's three builds).
TOOLCHAINS = {"gcc": ("gcc", False), "clang": ("clang", False), "clang+LTO": ("clang", True)}


class BuildError(RuntimeError):
    """A build step failed; the message is one line naming what and why."""


def cache_root() -> Path:
    return Path(os.environ.get("RXLAB_CACHE", Path.home() / ".cache" / "rxlab"))


@functools.cache
def _compiler(cc: str) -> tuple[str, str, str]:
    """(C compiler, C++ compiler, major version) for 'gcc' or 'clang'."""
    if cc == "gcc":
        c, cxx = "gcc", "g++"
    elif cc == "clang":
        c, cxx = _newest("clang"), _newest("clang++")
    else:
        raise BuildError(f"unknown compiler {cc!r}: allowed are gcc, clang")
    if shutil.which(cxx) is None:
        raise BuildError(f"compiler {cxx} not found: install it (make setup does for gcc; "
                         "clang: apt-get install clang-16 lld-16 llvm-16)")
    out = subprocess.run([cxx, "-dumpversion"], capture_output=True, text=True).stdout.strip()
    return c, cxx, out.split(".")[0]


def _newest(name: str) -> str:
    """clang-16 over clang-14 over clang, whichever exists."""
    for v in (19, 18, 17, 16, 15, 14):
        if shutil.which(f"{name}-{v}"):
            return f"{name}-{v}"
    return name


def flags_id(cxxflags: str = "") -> str:
    """'' for the standard flags, else '-f' and 8 hex digits of the extra flags."""
    extra = " ".join(cxxflags.split())
    return f"-f{hashlib.sha1(extra.encode()).hexdigest()[:8]}" if extra else ""


def build_key(version: str, cc: str = "gcc", lto: bool = False, cxxflags: str = "") -> str:
    """version-<cc><major>[-lto][-f<hash of extra flags>], e.g. 9.10.0-clang16-lto."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", str(version)):
        raise BuildError(f"version {version!r}: expected an upstream version such as 9.10.0")
    _, _, major = _compiler(cc)
    return f"{version}-{cc}{major}" + ("-lto" if lto else "") + flags_id(cxxflags)


def build_dir(version: str = DEFAULT_VERSION, cc: str = "gcc", lto: bool = False,
              cxxflags: str = "") -> Path:
    return cache_root() / "rocksdb" / build_key(version, cc, lto, cxxflags)


def toolchain(rec: dict) -> str:
    """gcc, clang or clang+LTO: the post's name for a build record's toolchain."""
    return rec.get("cc", "gcc") + ("+LTO" if rec.get("lto") else "")


def is_complete(prefix: Path) -> bool:
    return (prefix / "build.json").is_file() and (prefix / "bin" / "db_bench").is_file()


def list_builds() -> list[dict]:
    """Every finished build in the cache, with its record and size on disk."""
    root = cache_root() / "rocksdb"
    out = []
    for d in sorted(root.glob("*")) if root.is_dir() else []:
        if not is_complete(d):
            continue
        rec = json.loads((d / "build.json").read_text())
        rec["size_mb"] = round(sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 2**20, 1)
        rec["path"] = str(d)
        rec["toolchain"] = toolchain(rec)
        mod = module_record(d.name)
        rec["module"] = "installed" if d == installed_build() else ("compiled" if mod else "none")
        out.append(rec)
    return out


def get_build(key: str) -> dict:
    """The record of a finished build, or a one-line BuildError naming the builds there are."""
    d = cache_root() / "rocksdb" / str(key)
    if not is_complete(d):
        have = ", ".join(b["key"] for b in list_builds()) or "none"
        raise BuildError(f"no finished build {key!r} in {d.parent}: have {have}")
    rec = json.loads((d / "build.json").read_text())
    rec["path"] = str(d)
    rec["toolchain"] = toolchain(rec)
    return rec


def compile_build() -> Path:
    """The build the extension compiles against: $RXLAB_ROCKSDB or the default."""
    env = os.environ.get("RXLAB_ROCKSDB")
    if env:
        return Path(env)
    return build_dir(DEFAULT_VERSION, "gcc", False)


def installed_build() -> Path:
    """The build the editable install's module is compiled against.

    Its build tree's ninja file holds the path compiled in as RXLAB_ROCKSDB_PATH
    (the module's `rocksdb_build`); without a build tree, the compile default.
    """
    for f in sorted((REPO / "build").glob("*/build.ninja")):
        m = re.search(r'RXLAB_ROCKSDB_PATH=\\?"([^"\\]+)', f.read_text(errors="replace"))
        if m:
            return Path(m.group(1))
    return compile_build()


def active_build() -> Path:
    """The build this process's RocksDB comes from.

    The imported module's (it records the build it was compiled against);
    before `import rxlab`, the build $RXLAB_BUILD selects, else the one the
    extension compiles against.
    """
    core = sys.modules.get("rxlab._core")
    path = getattr(core, "rocksdb_build", None)
    if path:
        return Path(path)
    key = os.environ.get(BUILD_ENV, "").strip()
    if key:
        return cache_root() / "rocksdb" / key
    return compile_build()


# ---------------------------------------------------------------- a module per build


def modules_root() -> Path:
    return cache_root() / "modules"


def module_dir(key: str) -> Path:
    return modules_root() / key


def ext_sources_id() -> str:
    """A hash of what the module is compiled from (ext/ and CMakeLists.txt)."""
    h = hashlib.sha1()
    files = sorted(p for p in (REPO / "ext").rglob("*") if p.is_file() and p.suffix in (".cc", ".h", ".hpp"))
    for p in [REPO / "CMakeLists.txt", *files]:
        h.update(str(p.relative_to(REPO)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def module_record(key: str) -> dict | None:
    """module.json of a build's compiled module, None when there is none."""
    d = module_dir(key)
    f = d / "module.json"
    if not f.is_file() or not sorted(d.glob("_core*.so")):
        return None
    return json.loads(f.read_text())


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
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"{python} has no pybind11 (pip install pybind11): the module cannot be compiled")
    tools = Path(python).parent
    cmake = str(tools / "cmake") if (tools / "cmake").exists() else (shutil.which("cmake") or "cmake")
    ninja = str(tools / "ninja") if (tools / "ninja").exists() else (shutil.which("ninja") or "ninja")
    t0 = time.time()
    _run([cmake, "-S", str(REPO), "-B", str(bdir), "-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}",
          "-DCMAKE_BUILD_TYPE=Release", f"-DRXLAB_ROCKSDB={rec['path']}",
          f"-DPython_EXECUTABLE={python}", f"-Dpybind11_DIR={r.stdout.strip()}"],
         f"cmake configure of the module for {key}", log=log)
    _run([ninja, "-C", str(bdir), "-j", str(jobs or os.cpu_count() or 2), "_core", "rxlab_plugin"],
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


# ---------------------------------------------------------------- source


def _apt_opts(aptdir: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={aptdir / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={aptdir / 'lists'}",
        "-o", f"Dir::Cache={aptdir / 'cache'}",
        "-o", "APT::Get::List-Cleanup=0",
    ]


def _private_apt() -> tuple[Path, list[str]]:
    aptdir = cache_root() / "apt"
    (aptdir / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (aptdir / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    src = aptdir / "sources.list"
    text = "".join(f"deb-src {MIRROR} {s} main\n" for s in SUITES)
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    opts = _apt_opts(aptdir)
    stamp = aptdir / "updated"
    if not stamp.exists() or time.time() - stamp.stat().st_mtime > 7 * 86400:
        _run(["apt-get", *opts, "-q", "update"], "apt-get update (private source lists)")
        stamp.touch()
    return aptdir, opts


def available_versions() -> dict[str, str]:
    """Upstream version -> Debian revision, from the private source indexes."""
    _, opts = _private_apt()
    out = subprocess.run(["apt-cache", *opts, "showsrc", "rocksdb"],
                         capture_output=True, text=True).stdout
    found = {}
    for m in re.finditer(r"^Version: (\S+)$", out, re.M):
        rev = m.group(1)
        found[rev.split("-")[0].split(":")[-1]] = rev
    return found


def fetch_source(version: str) -> Path:
    """The verified upstream tarball for `version`, downloaded by apt."""
    srcdir = cache_root() / "src"
    srcdir.mkdir(parents=True, exist_ok=True)
    tars = sorted(srcdir.glob(f"rocksdb_{version}.orig.tar.*"))
    if tars:
        return tars[0]
    rev = KNOWN_REVISIONS.get(version) or available_versions().get(version)
    if rev is None:
        have = ", ".join(sorted(available_versions())) or "none"
        raise BuildError(f"RocksDB {version} is not in Debian's source indexes: available {have}")
    _, opts = _private_apt()
    # --tar-only: the .dsc of trixie and sid is not served here; apt still
    # verifies the tarball against the signed index's checksums.
    _run(["apt-get", *opts, "source", "--download-only", "--tar-only", f"rocksdb={rev}"],
         f"apt-get source rocksdb={rev}", cwd=srcdir)
    tars = sorted(srcdir.glob(f"rocksdb_{version}.orig.tar.*"))
    if not tars:
        raise BuildError(f"apt-get source rocksdb={rev} left no tarball in {srcdir}")
    return tars[0]


# ---------------------------------------------------------------- build


def _run(cmd: list[str], what: str, cwd: Path | None = None, log: Path | None = None) -> None:
    if log is None:
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines()[-5:]
            raise BuildError(f"{what} failed (exit {r.returncode}): " + " | ".join(tail))
        return
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        fh.flush()
        r = subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        tail = log.read_text().strip().splitlines()[-8:]
        raise BuildError(f"{what} failed (exit {r.returncode}), log {log}: " + " | ".join(tail))


def _ninja_with_progress(cmd: list[str], cwd: Path, log: Path) -> None:
    """Run ninja, print a progress line from its [done/total] status."""
    tty = sys.stderr.isatty()
    last_pct = -1
    start = time.time()
    with open(log, "a") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n")
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env={**os.environ, "NINJA_STATUS": "[%f/%t] "})
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            m = re.match(r"\[(\d+)/(\d+)\]", line)
            if not m:
                continue
            done, total = int(m.group(1)), int(m.group(2))
            pct = 100 * done // max(total, 1)
            mins = (time.time() - start) / 60
            if tty:
                sys.stderr.write(f"\r  compiling RocksDB: {pct:3d}% ({done}/{total}, {mins:.1f} min)")
                sys.stderr.flush()
            elif pct >= last_pct + 5:
                sys.stderr.write(f"  compiling RocksDB: {pct:3d}% ({done}/{total}, {mins:.1f} min)\n")
                sys.stderr.flush()
                last_pct = pct
        rc = proc.wait()
    if tty:
        sys.stderr.write("\n")
    if rc != 0:
        errs = [ln for ln in log.read_text().splitlines() if "error" in ln.lower()][-5:]
        hint = ""
        if any("<cstdint>" in e or "does not name a type" in e or "was not declared" in e for e in errs):
            hint = (" | this compiler needs a missing include: put the smallest patch in "
                    f"{PATCH_DIR}/<version>/ (see its README) and build again")
        raise BuildError(f"ninja failed (exit {rc}), log {log}: " + " | ".join(errs) + hint)


def _apply_patches(srcdir: Path, version: str, log: Path) -> list[str]:
    """The smallest patches kept in ext/rocksdb-patches/<version>/, in name order."""
    applied = []
    for p in patches_for(version):
        _run(["patch", "-p1", "--forward", "-i", str(p)], f"patch {p.name}", cwd=srcdir, log=log)
        applied.append({"patch": p.name, "reason": patch_reason(p)})
    return applied


def patches_for(version: str) -> list[Path]:
    pdir = PATCH_DIR / version
    return sorted(pdir.glob("*.patch")) if pdir.is_dir() else []


def patch_reason(p: Path) -> str:
    """The first non-empty line of a patch's header (before the first ---)."""
    for line in p.read_text(errors="replace").splitlines():
        if line.startswith(("---", "diff ")):
            break
        if line.strip():
            return line.strip().removeprefix("Subject:").strip()
    return ""


def unpack_source(version: str, work: Path) -> tuple[Path, Path, list]:
    """A fresh build tree: `work` emptied, the verified source tarball unpacked in it and rxlab's
    patches applied (logged to work/build.log). Returns (tarball, source dir, patches applied)."""
    tarball = fetch_source(version)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    with tarfile.open(tarball) as tf:
        top = tf.getnames()[0].split("/")[0]
        tf.extractall(work, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(work)
    src = work / top
    return tarball, src, _apply_patches(src, version, work / "build.log")


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
    c, cxx, major = _compiler(cc)
    if is_complete(prefix) and not force:
        rec = json.loads((prefix / "build.json").read_text())
        now = _full_version(cxx)
        note = "" if rec.get("compiler_version") == now else \
            f" (built by {rec.get('compiler_version')}; {cxx} is now {now}; --force rebuilds)"
        print(f"RocksDB {version} ({prefix.name}) already built: {prefix}{note}", file=sys.stderr)
        return prefix
    work = cache_root() / "rocksdb-build" / prefix.name
    log = work / "build.log"
    print(f"building RocksDB {version} with {cxx} {major}{' + LTO' if lto else ''} "
          f"(about 20 minutes on 2 cores; log {log})", file=sys.stderr)
    tarball, src, patches = unpack_source(version, work)
    flags = list(CMAKE_FLAGS) + [f"-DCMAKE_C_COMPILER={c}", f"-DCMAKE_CXX_COMPILER={cxx}"]
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
    _run(["cmake", "-S", str(src), "-B", str(bdir), "-G", "Ninja", *flags], "cmake configure",
         log=log)
    jobs = jobs or os.cpu_count() or 2
    _ninja_with_progress(["ninja", "-j", str(jobs), *TARGETS], bdir, log)
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
        "version": version, "cc": cc, "compiler": cxx, "compiler_version": _full_version(cxx),
        "lto": lto, "key": prefix.name, "cmake_flags": flags, "targets": TARGETS,
        "cxxflags_release": "-O3 -DNDEBUG", "cxxflags_extra": extra, "patches": patches,
        "source": tarball.name, "jobs": jobs,
        "build_seconds": round(seconds), "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if prefix.exists():
        shutil.rmtree(prefix)
    tmp.rename(prefix)
    (prefix / "build.json").write_text(json.dumps(record, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    print(f"RocksDB {version} built in {seconds / 60:.1f} min: {prefix}", file=sys.stderr)
    return prefix


def _full_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True).stdout
    return out.splitlines()[0] if out else "unknown"


def remove(key: str) -> Path:
    """Delete build `key` and its compiled module (never the installed module's build)."""
    d = cache_root() / "rocksdb" / key
    if not key or "/" in key or not d.is_dir():
        have = ", ".join(b["key"] for b in list_builds()) or "none"
        raise BuildError(f"no build {key!r} in the cache: have {have}")
    if d == installed_build():
        raise BuildError(f"build {key!r} is the one rxlab's installed module uses: rebuild rxlab "
                         "against another build (RXLAB_ROCKSDB=... make ext) before removing it")
    shutil.rmtree(module_dir(key), ignore_errors=True)
    shutil.rmtree(d)
    return d


def format_builds(recs: list[dict]) -> str:
    """`rxlab builds`: key, toolchain, size, build time, module, flags and patches."""
    lines = [f"{'key':26} {'toolchain':10} {'size':>9} {'built in':>8}  {'module':9} flags"]
    for r in recs:
        flags = [f.removeprefix("-D") for f in r.get("cmake_flags", [])
                 if any(k in f for k in ("COMPILER=", "INTERPROC", "_FLAGS=", "LINKER"))]
        pt = [p["patch"] if isinstance(p, dict) else p for p in r.get("patches", [])]
        mins = r["build_seconds"] / 60
        lines.append(f"{r['key']:26} {r['toolchain']:10} {r['size_mb']:7.1f}MB {mins:6.1f}m"
                     f"  {r['module']:9} {r.get('compiler_version', '')}; {' '.join(flags)}"
                     + (f"; patches: {', '.join(pt)}" if pt else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="builds.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--version", default=DEFAULT_VERSION)
    b.add_argument("--cc", default="gcc", choices=["gcc", "clang"])
    b.add_argument("--lto", action="store_true")
    b.add_argument("--jobs", type=int)
    b.add_argument("--force", action="store_true")
    b.add_argument("--cxxflags", default="", help="extra compiler flags (part of the key)")
    sub.add_parser("path", help="the build the extension compiles against")
    sub.add_parser("list")
    rm = sub.add_parser("remove")
    rm.add_argument("key")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "build":
            print(build(a.version, a.cc, a.lto, a.jobs, a.force, a.cxxflags))
        elif a.cmd == "path":
            print(compile_build())
        elif a.cmd == "remove":
            print(f"removed {remove(a.key)}")
        else:
            print(format_builds(list_builds()))
    except BuildError as e:
        print(f"rxlab: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
