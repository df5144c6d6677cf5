"""The build cache: where each RocksDB build and its compiled module live, their keys and records."""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

DEFAULT_VERSION = "9.10.0"
REPO = Path(__file__).resolve().parents[3]  # stdlib only: not rxlab.core.paths (run before the venv)
PATCH_DIR = REPO / "ext" / "rocksdb-patches"
# The compilers each toolchain uses (the gcc-vs-clang post's three builds).
TOOLCHAINS = {"gcc": ("gcc", False), "clang": ("clang", False), "clang+LTO": ("clang", True)}


class BuildError(RuntimeError):
    """A build step failed; the message is one line naming what and why."""


def cache_root() -> Path:
    return Path(os.environ.get("RXLAB_CACHE", Path.home() / ".cache" / "rxlab"))


@functools.cache
def compiler_for(cc: str) -> tuple[str, str, str]:
    """(C compiler, C++ compiler, major version) for 'gcc' or 'clang'."""
    if cc == "gcc":
        c, cxx = "gcc", "g++"
    elif cc == "clang":
        c, cxx = _newest("clang"), _newest("clang++")
    else:
        raise BuildError(f"unknown compiler {cc!r}: allowed are gcc, clang")
    if shutil.which(cxx) is None:
        raise BuildError(f"compiler {cxx} not found: install it (make setup does for gcc; "
                         "clang: make toolchains, or bash .ci/deps.sh toolchains)")
    out = subprocess.run([cxx, "-dumpversion"], capture_output=True, text=True, check=False).stdout.strip()
    return c, cxx, out.split(".")[0]


def _newest(name: str) -> str:
    """The newest versioned clang (clang-19 over clang-16 ...) that exists, else plain clang."""
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
    _, _, major = compiler_for(cc)
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


def modules_root() -> Path:
    return cache_root() / "modules"


def module_dir(key: str) -> Path:
    return modules_root() / key


def module_record(key: str) -> dict | None:
    """module.json of a build's compiled module, None when there is none."""
    d = module_dir(key)
    f = d / "module.json"
    if not f.is_file() or not sorted(d.glob("_core*.so")):
        return None
    return json.loads(f.read_text())


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
    """`rxlab builds`: key, toolchain, size, build time (`4.5+`: minutes after resuming an interrupted
    build), module, flags and patches."""
    lines = [f"{'key':26} {'toolchain':10} {'size':>9} {'built in':>8}  {'module':9} flags"]
    for r in recs:
        flags = [f.removeprefix("-D") for f in r.get("cmake_flags", [])
                 if any(k in f for k in ("COMPILER=", "INTERPROC", "_FLAGS=", "LINKER"))]
        pt = [p["patch"] if isinstance(p, dict) else p for p in r.get("patches", [])]
        mins = r["build_seconds"] / 60
        # a resumed build's seconds are the resumed part's only: marked, not passed off as the whole
        mark = "+" if r.get("resumed") else "m"
        lines.append(f"{r['key']:26} {r['toolchain']:10} {r['size_mb']:7.1f}MB {mins:6.1f}{mark}"
                     f"  {r['module']:9} {r.get('compiler_version', '')}; {' '.join(flags)}"
                     + (f"; patches: {', '.join(pt)}" if pt else ""))
    return "\n".join(lines)
