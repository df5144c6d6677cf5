"""The `rxlab` command."""
from __future__ import annotations

import argparse
import json
import sys


def _plugin_path(a):
    from .backends_bench import plugin_path

    print(plugin_path())


def _rocksdb(a):
    from . import builds

    prefix = builds.active_build()
    rec = json.loads((prefix / "build.json").read_text()) if (prefix / "build.json").is_file() else {}
    try:
        from . import _core

        module = f"compiled against {_core.rocksdb_build} (RocksDB {_core.rocksdb_version})"
    except ImportError as e:
        module = f"not importable: {e}"
    print(f"active build: {prefix}")
    for k in ("version", "compiler", "compiler_version", "lto", "cxxflags_release", "build_seconds",
              "built_at", "patches", "source"):
        if k in rec:
            print(f"  {k}: {rec[k]}")
    if rec:
        print(f"  cmake flags: {' '.join(rec['cmake_flags'])}")
    print(f"  library: {prefix / 'lib'}\n  headers: {prefix / 'include'}\n  db_bench: {prefix / 'bin' / 'db_bench'}")
    print(f"  rxlab._core: {module}")


def _builds(a):
    from . import builds

    for rec in builds.list_builds():
        print(f"{rec['key']:24} {rec['size_mb']:8.1f} MB  {rec['build_seconds'] / 60:5.1f} min  "
              f"{' '.join(f for f in rec['cmake_flags'] if 'COMPILER' in f or 'INTERPROC' in f)}")


def _build_rocksdb(a):
    from . import builds

    print(builds.build(a.version, a.cc, a.lto, a.jobs, a.force))


def _engines(a):
    from . import _core

    for e in _core.engines():
        print(f"{e['name']}: {e['help']}")
        for name, (default, help_) in e["options"].items():
            print(f"    {name}={default:<8} {help_}")


def _compare(a):
    from .compare import compare

    df = compare(a.scale, quiet=a.quiet)
    print(df.round(1).to_string(index=False))


def _bench_backends(a):
    from pathlib import Path

    from .backends_bench import Bench, default_root, summarize

    root = Path(a.dir) if a.dir else default_root()
    b = Bench(root, size_gib=a.size_gib, duration=a.duration, repeats=a.repeats, quiet=a.quiet)
    df = b.main()
    out = root / "backends-bench.csv"
    df.to_csv(out, index=False)
    print(summarize(df))
    print(f"\nper-repetition rows: {out}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="rxlab", description="A research workbench for RocksDB IO performance.")
    sub = ap.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    sub.add_parser("plugin-path", help="path of the db_bench plugin (LD_PRELOAD it)").set_defaults(fn=_plugin_path)
    sub.add_parser("rocksdb", help="the active RocksDB build").set_defaults(fn=_rocksdb)
    sub.add_parser("builds", help="RocksDB builds in the cache").set_defaults(fn=_builds)
    sub.add_parser("engines", help="IO engines and their URI options").set_defaults(fn=_engines)

    b = sub.add_parser("build-rocksdb", help="build RocksDB from Debian's source tarball into the cache")
    b.add_argument("--version", default="9.10.0")
    b.add_argument("--cc", default="gcc", choices=["gcc", "clang"])
    b.add_argument("--lto", action="store_true")
    b.add_argument("--jobs", type=int)
    b.add_argument("--force", action="store_true", help="rebuild even if the build exists")
    b.set_defaults(fn=_build_rocksdb)

    c = sub.add_parser("compare", help="load a DB through each backend (db_bench + plugin), print a table")
    c.add_argument("--scale", default="small", choices=["smoke", "small"])
    c.add_argument("--quiet", action="store_true")
    c.set_defaults(fn=_compare)

    bb = sub.add_parser("bench-backends", help="the backends benchmark (>= 2 GiB DB; about 20 minutes)")
    bb.add_argument("--dir", help="where the DBs live (default data/bench or $RXLAB_BENCH_DIR)")
    bb.add_argument("--size-gib", type=float, default=2.2)
    bb.add_argument("--duration", type=int, default=10, help="seconds per measurement")
    bb.add_argument("--repeats", type=int, default=3)
    bb.add_argument("--quiet", action="store_true")
    bb.set_defaults(fn=_bench_backends)

    a = ap.parse_args(argv)
    try:
        a.fn(a)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        msg = str(e).strip().splitlines()
        print(f"rxlab: {msg[0] if msg else type(e).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
