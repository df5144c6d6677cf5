"""RocksDB builds: the active one, the cache of others (a build is a variable of a study), the plugin."""
from __future__ import annotations

import json

import rxlab
from rxlab.bench.references import plugin_path
from rxlab.core import builds

TITLE = "RocksDB builds"


def add_parser(sub) -> None:
    sub.add_parser("rocksdb", help="the active RocksDB build: version, compiler, flags, paths",
                   description="The RocksDB build this process uses (RXLAB_BUILD=KEY selects another "
                               "from `rxlab builds`).").set_defaults(fn=_rocksdb)
    sub.add_parser("builds", help="the RocksDB builds in the cache: key, toolchain, size, build time, module",
                   description="RocksDB builds in the cache ($RXLAB_CACHE, default ~/.cache/rxlab)."
                   ).set_defaults(fn=_builds)
    b = sub.add_parser("build-rocksdb", help="build RocksDB from Debian's checksum-verified source tarball "
                                             "into the cache (15-40 min on 2 cores)",
                       description="Build a RocksDB release (shared library and db_bench) into the cache. "
                                   "A finished build is reused, never silently rebuilt.")
    b.add_argument("--version", default="9.10.0", help="RocksDB version (Debian has 7.8.3, 9.10.0, 9.11.2)")
    b.add_argument("--cc", default="gcc", choices=["gcc", "clang"],
                   help="compiler (clang: clang, lld and llvm of one version; make toolchains installs them)")
    b.add_argument("--lto", action="store_true", help="link-time optimization (part of the build's key)")
    b.add_argument("--jobs", type=int, help="parallel compile jobs (default: the CPUs)")
    b.add_argument("--force", action="store_true", help="rebuild even if the build exists")
    b.add_argument("--cxxflags", default="", help="extra compiler flags (part of the build's key)")
    b.set_defaults(fn=_build_rocksdb)
    rb = sub.add_parser("remove-build", help="delete a build (and its module) from the cache")
    rb.add_argument("key", help="a key from `rxlab builds`, e.g. 9.10.0-clang16")
    rb.set_defaults(fn=_remove_build)
    bm = sub.add_parser("build-module", help="compile rxlab's module and plugin against a build "
                                             "(then RXLAB_BUILD=KEY selects it; about 1 min)")
    bm.add_argument("key", help="a key from `rxlab builds`, e.g. 9.10.0-clang16-lto")
    bm.add_argument("--jobs", type=int, help="parallel compile jobs (default: the CPUs)")
    bm.set_defaults(fn=_build_module)
    sub.add_parser("plugin-path", help="path of the db_bench plugin (LD_PRELOAD it; then "
                                       "--fs_uri=rxlab://ENGINE)").set_defaults(fn=_plugin_path)


def _plugin_path(a) -> int:
    print(plugin_path())
    return 0


def _rocksdb(a) -> int:
    core = rxlab._core  # loaded first: the active build is the one of the module this process loads
    prefix = builds.active_build()
    rec = json.loads((prefix / "build.json").read_text()) if (prefix / "build.json").is_file() else {}
    module = f"compiled against {core.rocksdb_build} (RocksDB {core.rocksdb_version})"
    print(f"active build: {prefix}")
    for k in ("version", "compiler", "compiler_version", "lto", "cxxflags_release", "build_seconds",
              "built_at", "patches", "source"):
        if k in rec:
            print(f"  {k}: {rec[k]}")
    if rec:
        print(f"  cmake flags: {' '.join(rec['cmake_flags'])}")
    print(f"  library: {prefix / 'lib'}\n  headers: {prefix / 'include'}\n"
          f"  db_bench: {prefix / 'bin' / 'db_bench'}")
    print(f"  rxlab._core: {module}")
    return 0


def _builds(a) -> int:
    print(builds.format_builds(builds.list_builds()))
    return 0


def _build_rocksdb(a) -> int:
    print(builds.build(a.version, a.cc, a.lto, a.jobs, a.force, a.cxxflags))
    return 0


def _remove_build(a) -> int:
    print(f"removed {builds.remove(a.key)}")
    return 0


def _build_module(a) -> int:
    print(builds.ensure_module(a.key, a.jobs) or f"{a.key}: the installed module's build")
    return 0
