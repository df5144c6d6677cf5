"""`rxlab conformance`: RocksDB's own test suites over rxlab's engines, and the table of what passed."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rxlab.bench.conformance import (
    DEFAULT_SUITES,
    SUITES,
    ConformanceError,
    debug_build,
    engine_failures,
    engine_names,
    load,
    plugin_for,
    report,
    run_suites,
)
from rxlab.bench.conformance.suites import check_engine_uris, parse_list
from rxlab.core import builds

TITLE = "RocksDB's own tests"


def add_parser(subparsers) -> argparse.ArgumentParser:
    """The `conformance` sub-command."""
    p = subparsers.add_parser(
        "conformance", help="RocksDB's own test suites over rxlab's engines (Debug test build, made once)",
        description="Run RocksDB's test suites over each engine (TEST_FS_URI=rxlab://ENGINE with the plugin "
                    "preloaded) and over RocksDB's own file system as the control; print suite x "
                    "configuration: passed/failed/skipped. Exit 1 if an engine fails a test the control "
                    "passes.")
    p.add_argument("--engines",
                   help="comma-separated engines, each with URI options if wanted (io_uring?fixed_buffers=1) "
                        "(default: every engine of the registry, `rxlab engines`)")
    p.add_argument("--suites", default=",".join(DEFAULT_SUITES),
                   help=f"comma-separated test suites, or 'all' (default: the {len(DEFAULT_SUITES)} that "
                        "--list marks (default), which fit CI's time)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                   help="test processes at once, and ninja's jobs for the build (default: the CPU count, "
                        f"{os.cpu_count() or 2})")
    p.add_argument("--full", action="store_true",
                   help="also the tests a suite leaves out by default for time (--list names them; "
                        "default: off)")
    p.add_argument("--filter", dest="test_filter", default=None,
                   help="only the tests that match this gtest filter, e.g. 'DBBasicTest.*' (default: all)")
    p.add_argument("--test-timeout", type=float, default=600,
                   help="seconds one test may run before it is killed and failed (default: 600)")
    p.add_argument("--out", default=None, help="where runs are stored (default: data/conformance or "
                                               "$RXLAB_CONFORMANCE)")
    p.add_argument("--build-only", action="store_true",
                   help="make the Debug test build and the plugin, run nothing (default: off)")
    p.add_argument("--show", nargs="?", const="latest", default=None, metavar="RUN",
                   help="print a stored run's table (the latest if no RUN is given) instead of running "
                        "(default: off)")
    p.add_argument("--list", action="store_true",
                   help="list the suites and what they exercise (default: off)")
    p.set_defaults(fn=run)
    return p


def run(args) -> int:
    """`rxlab conformance`: 0 when every engine passes what the control passes, 1 when not, 2 on bad input."""
    if args.list:
        for s in SUITES.values():
            print(f"{s.name:20} {'(default) ' if s.name in DEFAULT_SUITES else ''}{s.what}"
                  + (f"; without --full, not {s.heavy}: {s.heavy_why}" if s.heavy else ""))
        return 0
    root = Path(args.out) if args.out else None
    if args.show:
        try:
            rows, summary = load(None if args.show == "latest" else args.show, root)
        except FileNotFoundError as e:
            print(f"rxlab conformance: {e}", file=sys.stderr)
            return 2
        print(report(rows, summary))
        return 1 if engine_failures(rows) else 0
    try:
        every = engine_names()
        engines = parse_list(",".join(every) if args.engines is None else args.engines, every, "engine")
        suites = (list(SUITES) if args.suites.strip() == "all"
                  else parse_list(args.suites, list(SUITES), "suite"))
        if args.jobs < 1:
            raise ValueError(f"--jobs {args.jobs}: must be at least 1")
        if args.test_timeout <= 0:
            raise ValueError(f"--test-timeout {args.test_timeout:g}: must be positive")
        check_engine_uris(engines)
    except ValueError as e:
        print(f"rxlab conformance: {e}", file=sys.stderr)
        return 2
    try:
        if args.build_only:
            prefix = debug_build(suites, jobs=args.jobs)
            print(f"Debug test build: {prefix}\nplugin: {plugin_for(prefix, jobs=args.jobs)}")
            return 0
        rows, summary, path = run_suites(suites, engines, jobs=args.jobs, test_timeout=args.test_timeout,
                                         test_filter=args.test_filter, full=args.full, root=root,
                                         build_jobs=args.jobs)
    except (builds.BuildError, ConformanceError) as e:
        print(f"rxlab conformance: {e}", file=sys.stderr)
        return 1
    print(report(rows, summary, path))
    return 1 if engine_failures(rows) or summary["errors"] else 0
