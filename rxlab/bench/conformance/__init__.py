"""RocksDB's own test suites over rxlab's engines: the FileSystem contract, checked by RocksDB's tests.

RocksDB's tests built on DBTestBase, and env_basic_test's CustomEnv cases,
open their file system from ``TEST_FS_URI`` (test_util/testutil.cc,
CreateEnvFromSystem). With rxlab's plugin preloaded (``LD_PRELOAD``),
``TEST_FS_URI=rxlab://ENGINE`` runs them over that engine. They need a Debug
build (SyncPoint, which many tests drive, is compiled out under NDEBUG) and a
plugin compiled against that same build.

``rxlab conformance``:

1. makes the Debug test build of the active RocksDB version in the cache,
   ``$RXLAB_CACHE/rocksdb-debug/<version>-<cc><major>/`` (``include/``,
   ``lib/librocksdb.so``, ``bin/<test>``, ``build.json`` written last and
   listing the test binaries it holds, so an interrupted build is redone and
   never taken for complete). Only the test binaries of the suites asked for
   are built; the build tree is kept in ``rocksdb-build/<key>-debug/`` so a
   suite added later costs its own binary, not another library;
2. compiles the plugin against it (the repository's CMakeLists.txt with
   ``-DRXLAB_ROCKSDB=<the Debug build>``) into ``modules/<key>-debug/``;
3. runs each suite over each engine and over RocksDB's own file system (the
   control: no TEST_FS_URI, no plugin), one process per (suite, configuration,
   shard), ``--jobs`` at a time, each with its own ``TEST_TMPDIR``; per-test
   results from gtest's JSON output and its console log (gtest 1.8.1 has no
   skip status: RocksDB's ROCKSDB_GTEST_SKIP/BYPASS print "SKIPPED:" or
   "BYPASSED:" inside a passing test, and a crash or a hang leaves no JSON: the
   test that was running is failed and the rest rerun in a new process);
4. stores the result in ``data/conformance/<run id>/`` (``results.csv``: one
   row per test and configuration; ``summary.json``: the builds, the counts and
   the times), written under ``.tmp-<id>`` and renamed when complete, as the
   results store does. Not in the results store itself: its catalog turns
   runs' steps into the seeds' metrics, and a test verdict is not a
   measurement step;
5. prints the table suite x configuration: passed/failed/skipped. A test that
   fails on the control too is RocksDB's own failure here (this machine, this
   build) and is not counted against an engine; the exit status is 1 when an
   engine fails a test the control passes.
"""
from rxlab.bench.conformance.debug_build import (
    active_version,
    built_tests,
    debug_build,
    debug_dir,
    plugin_for,
)
from rxlab.bench.conformance.results import (
    classify,
    counts,
    engine_failures,
    format_table,
    load,
    report,
    store,
)
from rxlab.bench.conformance.runner import Unit, gtest_match, parse_test_list, run_suites, run_unit
from rxlab.bench.conformance.suites import (
    CONTROL,
    DEFAULT_SUITES,
    SUITES,
    ConformanceError,
    Suite,
    engine_names,
)

__all__ = ["CONTROL", "DEFAULT_SUITES", "SUITES", "ConformanceError", "Suite", "Unit",
           "active_version", "built_tests", "classify", "counts", "debug_build", "debug_dir",
           "engine_failures", "engine_names", "format_table", "gtest_match", "load", "parse_test_list",
           "plugin_for", "report", "run_suites", "run_unit", "store"]
