"""Release builds of RocksDB from Debian's verified upstream tarballs.

This module uses the standard library only: the set-up runs it with the
system Python (``python3 rxlab/builds.py build``) before the virtual
environment exists, and ``rxlab build-rocksdb`` / ``rxlab builds`` reuse it.

A build lives in ``$RXLAB_CACHE/rocksdb/<key>/`` (default cache
``~/.cache/rxlab``) with ``lib/``, ``include/``, ``bin/db_bench`` and
``build.json`` (version, compiler, flags, build time). The key names version,
compiler, compiler major version and LTO, e.g. ``9.10.0-gcc12``. A finished
build is reused, never silently rebuilt; ``build.json`` is written last, so a
directory without it is an interrupted build and is redone.
"""
from __future__ import annotations

import argparse
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
PATCH_DIR = Path(__file__).resolve().parent.parent / "ext" / "rocksdb-patches"


class BuildError(RuntimeError):
    """A build step failed; the message is one line naming what and why."""


def cache_root() -> Path:
    return Path(os.environ.get("RXLAB_CACHE", Path.home() / ".cache" / "rxlab"))


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


def build_key(version: str, cc: str = "gcc", lto: bool = False) -> str:
    _, _, major = _compiler(cc)
    return f"{version}-{cc}{major}" + ("-lto" if lto else "")


def build_dir(version: str = DEFAULT_VERSION, cc: str = "gcc", lto: bool = False) -> Path:
    return cache_root() / "rocksdb" / build_key(version, cc, lto)


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
        out.append(rec)
    return out


def active_build() -> Path:
    """The build the extension compiles against: $RXLAB_ROCKSDB or the default."""
    env = os.environ.get("RXLAB_ROCKSDB")
    if env:
        return Path(env)
    return build_dir(DEFAULT_VERSION, "gcc", False)


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
        raise BuildError(f"ninja failed (exit {rc}), log {log}: " + " | ".join(errs))


def _apply_patches(srcdir: Path, version: str, log: Path) -> list[str]:
    """The smallest patches kept in ext/rocksdb-patches/<version>/, in name order."""
    applied = []
    pdir = PATCH_DIR / version
    for p in sorted(pdir.glob("*.patch")) if pdir.is_dir() else []:
        _run(["patch", "-p1", "-i", str(p)], f"patch {p.name}", cwd=srcdir, log=log)
        applied.append(p.name)
    return applied


def build(version: str = DEFAULT_VERSION, cc: str = "gcc", lto: bool = False,
          jobs: int | None = None, force: bool = False) -> Path:
    """Build RocksDB `version` (shared library + db_bench) into the cache."""
    prefix = build_dir(version, cc, lto)
    if is_complete(prefix) and not force:
        print(f"RocksDB {version} ({prefix.name}) already built: {prefix}", file=sys.stderr)
        return prefix
    c, cxx, major = _compiler(cc)
    tarball = fetch_source(version)
    work = cache_root() / "rocksdb-build" / prefix.name
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    log = work / "build.log"
    print(f"building RocksDB {version} with {cxx} {major}{' + LTO' if lto else ''} "
          f"(about 20 minutes on 2 cores; log {log})", file=sys.stderr)
    with tarfile.open(tarball) as tf:
        top = tf.getnames()[0].split("/")[0]
        tf.extractall(work, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(work)
    src = work / top
    patches = _apply_patches(src, version, log)
    flags = list(CMAKE_FLAGS) + [f"-DCMAKE_C_COMPILER={c}", f"-DCMAKE_CXX_COMPILER={cxx}"]
    if lto:
        ver = cxx.rsplit("-", 1)[-1] if "-" in cxx else ""
        sfx = f"-{ver}" if ver.isdigit() else ""
        flags += ["-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=ON",
                  f"-DCMAKE_AR={shutil.which('llvm-ar' + sfx) or 'llvm-ar'}",
                  f"-DCMAKE_RANLIB={shutil.which('llvm-ranlib' + sfx) or 'llvm-ranlib'}",
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
        "cxxflags_release": "-O3 -DNDEBUG", "patches": patches, "source": tarball.name,
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
    d = cache_root() / "rocksdb" / key
    if not d.is_dir():
        have = ", ".join(b["key"] for b in list_builds()) or "none"
        raise BuildError(f"no build {key!r} in the cache: have {have}")
    shutil.rmtree(d)
    return d


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="builds.py", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--version", default=DEFAULT_VERSION)
    b.add_argument("--cc", default="gcc", choices=["gcc", "clang"])
    b.add_argument("--lto", action="store_true")
    b.add_argument("--jobs", type=int)
    b.add_argument("--force", action="store_true")
    sub.add_parser("path")
    sub.add_parser("list")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "build":
            print(build(a.version, a.cc, a.lto, a.jobs, a.force))
        elif a.cmd == "path":
            print(active_build())
        else:
            for rec in list_builds():
                print(f"{rec['key']:24} {rec['size_mb']:8.1f} MB  {rec['build_seconds'] / 60:5.1f} min  "
                      f"{rec['path']}")
    except BuildError as e:
        print(f"rxlab: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
