"""`python3 -m rxlab.core.builds build|path|list|remove`: the set-up's entry point, before the venv."""
from __future__ import annotations

import argparse
import sys

from rxlab.core.builds.cache import (
    DEFAULT_VERSION,
    BuildError,
    compile_build,
    format_builds,
    list_builds,
    remove,
)
from rxlab.core.builds.compile import build


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m rxlab.core.builds", description=__doc__.splitlines()[0])
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
