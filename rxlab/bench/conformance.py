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
from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import datetime as _dt
import fnmatch
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rxlab import builds

# The engines RocksDB can run on (rxlab's "sync" engine moves the shared file
# offset: rxlab fio only).
ENGINES = ("posix", "libaio", "io_uring")
CONTROL = "control"


@dataclasses.dataclass(frozen=True)
class Suite:
    """One of RocksDB's test binaries (its name is its CMake target).

    engine_filter: the gtest filter of the tests that run over TEST_FS_URI;
    control_filter: the same tests on RocksDB's own file system. They differ
    only where the suite instantiates its tests under another name for a
    custom file system (env_basic_test: CustomEnv/ against EnvDefault/).
    shards: processes one configuration's run is split into (the long suites,
    so that --jobs keeps every core busy to the end).
    seconds: test-process seconds per configuration measured here (2 CPUs,
    Debug build, --jobs 2), to start the longest first.
    heavy, heavy_why: a gtest pattern of tests left out unless --full, and why.
    """

    name: str
    what: str
    engine_filter: str = "*"
    control_filter: str = "*"
    shards: int = 1
    seconds: float = 60
    heavy: str = ""
    heavy_why: str = ""

    def key(self, test: str) -> str:
        """The name a test has on every configuration (the instantiation prefix
        dropped where engine and control name it differently)."""
        if self.engine_filter != self.control_filter and "/" in test:
            return test.split("/", 1)[1]
        return test


SUITES = {s.name: s for s in (
    Suite("env_basic_test", "the Env/FileSystem API: files, directories, locks, sizes, reads and writes",
          engine_filter="CustomEnv/*", control_filter="EnvDefault/*", seconds=1),
    Suite("db_basic_test", "open, get, put, multiget, snapshots, iterators over many option configurations "
          "(PlainTable with mmap reads among them)", shards=2, seconds=240),
    Suite("db_io_failure_test", "IO errors injected under the DB: ENOSPC, failed syncs, dropped writes",
          seconds=60),
    Suite("db_wal_test", "the WAL: recovery, recycling (ReuseWritableFile), preallocation, truncation, "
          "sync modes", shards=2, seconds=30,
          heavy="Wal/*", heavy_why="1280 parameterized WAL-corruption recovery cases, 90% of the suite's "
          "time (5-8 min per configuration)"),
    Suite("db_flush_test", "flushes, atomic flush, flush errors", shards=2, seconds=31),
    Suite("db_iterator_test", "iterators, readahead, async_io prefetching (ReadAsync, Poll)", shards=2,
          seconds=380),
    Suite("prefetch_test", "FilePrefetchBuffer over the file system: readahead, async prefetch, Poll, "
          "AbortIO", shards=2, seconds=75),
    Suite("db_log_iter_test", "reading WAL files while they are written", seconds=15),
    Suite("db_secondary_test", "a secondary instance tailing the primary's MANIFEST and WAL", seconds=17),
    Suite("db_sst_test", "SST files: deletion, SstFileManager, rate-limited deletes, external files",
          seconds=25),
    Suite("db_test2", "a broad DB suite: compaction, compression, readahead, direct IO", shards=3,
          seconds=600),
    Suite("db_compaction_test", "compactions of every style, with direct IO and readahead", shards=4,
          seconds=900),
)}
# The suites `make test` runs: as many as fit CI's time (docs/conformance.md
# has each suite's measured time per configuration).
DEFAULT_SUITES = ("env_basic_test", "db_basic_test", "db_io_failure_test", "db_wal_test", "db_flush_test",
                  "prefetch_test", "db_log_iter_test", "db_secondary_test", "db_sst_test")

# A gtest filter longer than this is split over several processes
# (MAX_ARG_STRLEN is 128 KiB).
_FILTER_BYTES = 60000


class ConformanceError(RuntimeError):
    """A step failed; the message is one line."""


# ---------------------------------------------------------------- input


def parse_list(value: str, allowed, what: str) -> list[str]:
    """A comma-separated list checked against `allowed`; one-line ValueError naming the bad value."""
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ValueError(f"no {what} given: allowed are {', '.join(allowed)}")
    for v in items:
        base = v.split("?", 1)[0] if what == "engine" else v
        if base not in allowed:
            raise ValueError(f"unknown {what} '{v}': allowed are {', '.join(allowed)}")
    return list(dict.fromkeys(items))


def check_engine_uris(engines: list[str]) -> None:
    """Engine options (e.g. io_uring?fixed_buffers=1) checked by rxlab's own URI parser."""
    if not any("?" in e for e in engines):
        return
    from rxlab import parse_uri

    for e in engines:
        try:
            parse_uri("rxlab://" + e)
        except ValueError as err:
            raise ValueError(f"engine '{e}': {err}") from None


# ---------------------------------------------------------------- the Debug build

# The release flags with tests on: Debug (assertions and SyncPoint), the
# test targets defined (WITH_TESTS, WITH_ALL_TESTS), no db_bench.
_REPLACED = ("-DCMAKE_BUILD_TYPE=", "-DWITH_TESTS=", "-DWITH_BENCHMARK_TOOLS=")
DEBUG_CMAKE_FLAGS = [*(f for f in builds.CMAKE_FLAGS if not f.startswith(_REPLACED)),
                     "-DCMAKE_BUILD_TYPE=Debug", "-DWITH_TESTS=ON", "-DWITH_ALL_TESTS=ON",
                     "-DWITH_BENCHMARK_TOOLS=OFF"]


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
        builds._ninja_with_progress(["ninja", "-j", str(jobs), *need], bdir, log)
        _install_tests(bdir, prefix, prefix, need)
        rec["tests"] = sorted(have | set(need))
        rec.setdefault("added", []).append({"tests": need, "seconds": round(time.time() - t0)})
        _write_record(prefix, rec)
        return prefix
    return _full_debug_build(prefix, tree, version, cc, sorted(have | set(need)), jobs=jobs)


def _full_debug_build(prefix: Path, tree: Path, version: str, cc: str, tests: list[str], *,
                      jobs: int) -> Path:
    c, cxx, major = builds._compiler(cc)
    tarball = builds.fetch_source(version)
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    log = tree / "build.log"
    print(f"building RocksDB {version} Debug with {', '.join(tests)} ({cxx} {major}; about 20 minutes "
          f"on 2 cores and 1-2 more per test binary; log {log})", file=sys.stderr)
    with tarfile.open(tarball) as tf:
        top = tf.getnames()[0].split("/")[0]
        tf.extractall(tree, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(tree)
    src = tree / top
    patches = builds._apply_patches(src, version, log)
    flags = [*DEBUG_CMAKE_FLAGS, f"-DCMAKE_C_COMPILER={c}", f"-DCMAKE_CXX_COMPILER={cxx}"]
    bdir = tree / "build"
    t0 = time.time()
    builds._run(["cmake", "-S", str(src), "-B", str(bdir), "-G", "Ninja", *flags], "cmake configure (Debug)",
                log=log)
    builds._ninja_with_progress(["ninja", "-j", str(jobs), "rocksdb-shared", *tests], bdir, log)
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
        "version": version, "cc": cc, "compiler": cxx, "compiler_version": builds._full_version(cxx),
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
    if not (bdir / "build.ninja").is_file():
        print(f"compiling rxlab's plugin against {prefix} (log {log})", file=sys.stderr)
        builds._run([cmake, "-S", str(builds.REPO), "-B", str(bdir), "-G", "Ninja",
                     f"-DCMAKE_MAKE_PROGRAM={ninja}", "-DCMAKE_BUILD_TYPE=Release",
                     f"-DRXLAB_ROCKSDB={prefix}",
                     f"-DPython_EXECUTABLE={python}", f"-Dpybind11_DIR={r.stdout.strip()}"],
                    f"cmake configure of the plugin against {prefix.name} (Debug)", log=log)
    builds._run([ninja, "-C", str(bdir), "-j", str(jobs or os.cpu_count() or 2), "rxlab_plugin"],
                f"compiling the plugin against {prefix.name} (Debug)", log=log)
    return bdir / "librxlab_plugin.so"


# ---------------------------------------------------------------- running the suites


@dataclasses.dataclass
class Unit:
    """One process's worth: a suite on one configuration, one shard of its tests."""

    suite: Suite
    config: str          # an engine (URI without rxlab://) or CONTROL
    shard: int = 0
    shards: int = 1
    seconds: float = 0.0
    rows: list = dataclasses.field(default_factory=list)
    error: str = ""
    log: Path | None = None  # the processes' console output

    @property
    def label(self) -> str:
        s = f" (shard {self.shard + 1}/{self.shards})" if self.shards > 1 else ""
        return f"{self.suite.name} on {self.config}{s}"


def unit_env(config: str, plugin: Path | None, tmpdir: Path) -> dict:
    """The environment of a test process: the control gets none of ours."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEST_FS_URI", "TEST_ENV_URI", "LD_PRELOAD", "MEM_ENV", "ENCRYPTED_ENV",
                        "GTEST_TOTAL_SHARDS", "GTEST_SHARD_INDEX", "GTEST_FILTER", "RXLAB_COUNTERS")}
    env["TEST_TMPDIR"] = str(tmpdir)
    if config != CONTROL:
        env["TEST_FS_URI"] = "rxlab://" + config
        env["LD_PRELOAD"] = str(plugin)
    return env


def parse_test_list(text: str) -> list[str]:
    """Full test names from `--gtest_list_tests` (comments such as '# GetParam() = 3' dropped)."""
    names, case = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith(("Note:", "[")):
            continue
        body = line.split("#", 1)[0].rstrip()
        if not line.startswith(" "):
            case = body.strip()
        elif case:
            names.append(case + body.strip())
    return names


def gtest_match(name: str, filt: str) -> bool:
    """gtest's --gtest_filter semantics: POSITIVE[-NEGATIVE], ':'-separated patterns with * and ?."""
    pos, _, neg = filt.partition("-")
    pos = pos or "*"

    def hit(pats: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in pats.split(":") if p)

    return hit(pos) and not (neg and hit(neg))


# The console lines of gtest 1.8.1 (no colour: stdout is a pipe), searched
# anywhere in a line (a test's own output may lack its newline). A failed
# parameterized test is "[  FAILED  ] A/B.C/3, where GetParam() = 3 (12 ms)";
# the summary at the end repeats failures without the time, and is ignored.
def _disabled(name: str) -> bool:
    """gtest lists DISABLED_ tests (of a case or a test) but never runs them."""
    return any(part.startswith("DISABLED_") for part in re.split(r"[./]", name))


_RUN = re.compile(r"\[ RUN      \] (\S+)$")
_OK = re.compile(r"\[       OK \] (\S+) \((\d+) ms\)$")
_FAILED = re.compile(r"\[  FAILED  \] ([^\s,]+)(?:, where .*)? \((\d+) ms\)$")
_SKIP = re.compile(r"(SKIPPED|BYPASSED): ?(.*)")


class _Run:
    """One test process: console lines parsed as they come, a watchdog on the running test."""

    def __init__(self, cmd: list[str], env: dict, log, test_timeout: float):
        self.results: dict[str, dict] = {}
        self.current: str | None = None
        self.started = 0.0
        self.timed_out: str | None = None
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, errors="replace", start_new_session=True)
        self._log = log
        self._timeout = test_timeout
        self._lock = threading.Lock()
        self._done = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self) -> None:
        while not self._done.wait(1.0):
            with self._lock:
                if self.current and time.monotonic() - self.started > self._timeout:
                    self.timed_out = self.current
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(self.proc.pid, signal.SIGKILL)
                    return

    def wait(self) -> int:
        assert self.proc.stdout is not None
        skip: str | None = None
        for raw in self.proc.stdout:
            self._log.write(raw)
            line = raw.rstrip("\n")
            m = _RUN.search(line)
            if m:
                with self._lock:
                    self.current, self.started = m.group(1), time.monotonic()
                skip = None
                continue
            m = _SKIP.search(line)
            if m and self.current:
                skip = f"{m.group(1)}: {m.group(2)}"
                continue
            ok, failed = _OK.search(line), _FAILED.search(line)
            m = ok or failed
            if m and m.group(1) == self.current:
                self.results[self.current] = {
                    "status": ("skipped" if skip else "passed") if ok else "failed",
                    "seconds": int(m.group(2)) / 1000, "message": skip or ""}
                with self._lock:
                    self.current = None
        self.proc.stdout.close()
        rc = self.proc.wait()
        self._done.set()
        return rc


def _first_failure(gtest_json: Path) -> dict[str, str]:
    """Test name -> first line of its first failure, from gtest's JSON output."""
    out: dict[str, str] = {}
    try:
        data = json.loads(gtest_json.read_text())
    except (OSError, ValueError):
        return out
    for case in data.get("testsuites", []):
        for t in case.get("testsuite", []):
            fails = t.get("failures") or []
            if fails:
                msg = fails[0].get("failure", "").strip().splitlines()
                # The build tree's absolute paths say nothing: keep file:line.
                text = re.sub(r"/\S*/([^/\s:]+:\d+)", r"\1", " | ".join(msg[:3]))
                out[f"{case['name']}.{t['name']}"] = text[:400]
    return out


def run_unit(unit: Unit, binary: Path, plugin: Path | None, work: Path, *, test_timeout: float,
             test_filter: str | None = None, full: bool = False, max_restarts: int = 25) -> Unit:
    """Run one unit's tests; a crash or a hung test fails that test and the rest go on in a new process."""
    t0 = time.time()
    suite = unit.suite
    tag = f"{suite.name}-{unit.config.split('?')[0]}-{unit.shard}-"
    tmpdir = Path(tempfile.mkdtemp(prefix=tag, dir=work))
    env = unit_env(unit.config, plugin, tmpdir / "db")
    (tmpdir / "db").mkdir()
    filt = suite.control_filter if unit.config == CONTROL else suite.engine_filter
    lst = subprocess.run([str(binary), "--gtest_list_tests", f"--gtest_filter={filt}"], env=env,
                         capture_output=True, text=True, errors="replace", timeout=300, check=False)
    if lst.returncode != 0:
        unit.error = f"--gtest_list_tests failed (exit {lst.returncode}): " + \
            " | ".join((lst.stderr or lst.stdout).strip().splitlines()[-3:])
        unit.seconds = time.time() - t0
        shutil.rmtree(tmpdir, ignore_errors=True)
        return unit
    # The user's filter is applied here: gtest cannot AND two filters.
    names = [n for n in parse_test_list(lst.stdout)
             if not _disabled(n) and (not test_filter or gtest_match(n, test_filter)
                                      or gtest_match(suite.key(n), test_filter))
             and (full or not suite.heavy or not gtest_match(n, suite.heavy))]
    names = names[unit.shard::unit.shards]
    results: dict[str, dict] = {}
    pending = list(names)
    restarts = 0
    log_path = unit.log = tmpdir.with_suffix(".log")
    with open(log_path, "w") as log:
        while pending and restarts <= max_restarts and not unit.error:
            for i, batch in enumerate(_batches(pending)):
                jpath = tmpdir / f"gtest-{restarts}-{i}.json"
                run = _Run([str(binary), f"--gtest_filter={':'.join(batch)}", f"--gtest_output=json:{jpath}"],
                           env, log, test_timeout)
                rc = run.wait()
                fails = _first_failure(jpath)
                for name, r in run.results.items():
                    if r["status"] == "failed" and name in fails:
                        r["message"] = fails[name]
                    results[name] = r
                if run.current:  # died inside a test: a crash or the watchdog; the rest run again
                    why = (f"timed out after {test_timeout:.0f} s (killed)" if run.timed_out == run.current
                           else f"crashed ({_exit_text(rc)})")
                    results[run.current] = {"status": "failed", "seconds": time.monotonic() - run.started,
                                            "message": why}
                    shutil.rmtree(tmpdir / "db", ignore_errors=True)  # what the killed test left
                    (tmpdir / "db").mkdir()
                    continue
                for n in batch:
                    if n not in results and run.results:
                        results[n] = {"status": "failed", "seconds": 0.0,
                                      "message": "no result in gtest's output"}
                if not run.results:
                    # Nothing ran: the process cannot start (a plugin that does not load, ...).
                    log.flush()
                    tail = log_path.read_text(errors="replace").strip().splitlines()[-3:]
                    unit.error = f"no test ran ({_exit_text(rc)}): " + " | ".join(tail)
                    break
                elif rc < 0 or rc not in (0, 1) or (rc == 1 and not any(
                        r["status"] == "failed" for r in run.results.values())):
                    # Every test reported, yet the process ended badly (a crash at exit).
                    unit.error = f"the test process ended with {_exit_text(rc)} after its tests"
            pending = [n for n in pending if n not in results]
            restarts += 1
    for n in names:
        r = results.get(n) or {"status": "failed", "seconds": 0.0,
                               "message": "not run: " + (unit.error or "too many crashes")}
        unit.rows.append({"suite": suite.name, "config": unit.config, "test": n, "key": suite.key(n), **r})
    unit.seconds = time.time() - t0
    shutil.rmtree(tmpdir, ignore_errors=True)
    return unit


def _batches(names: list[str]) -> list[list[str]]:
    out, cur, size = [], [], 0
    for n in names:
        if cur and size + len(n) + 1 > _FILTER_BYTES:
            out.append(cur)
            cur, size = [], 0
        cur.append(n)
        size += len(n) + 1
    return out + ([cur] if cur else [])


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            return signal.Signals(-rc).name
        except ValueError:
            return f"signal {-rc}"
    return f"exit {rc}"


# ---------------------------------------------------------------- verdicts


def classify(rows: list[dict]) -> list[dict]:
    """Mark each engine failure that the control shares as RocksDB's own ("rocksdb": True)."""
    control_failed = {(r["suite"], r["key"]) for r in rows
                      if r["config"] == CONTROL and r["status"] == "failed"}
    for r in rows:
        r["rocksdb"] = r["status"] == "failed" and (r["suite"], r["key"]) in control_failed
    return rows


def counts(rows: list[dict]) -> dict[tuple[str, str], dict[str, int]]:
    """(suite, config) -> passed, failed (not RocksDB's own), rocksdb (failed on the control too), skipped."""
    out: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"passed": 0, "failed": 0, "rocksdb": 0,
                                                                       "skipped": 0})
    for r in rows:
        c = out[(r["suite"], r["config"])]
        if r["status"] == "failed":
            c["rocksdb" if r["rocksdb"] and r["config"] != CONTROL else "failed"] += 1
        else:
            c[r["status"]] += 1
    return out


def engine_failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["config"] != CONTROL and r["status"] == "failed" and not r["rocksdb"]]


def format_table(rows: list[dict], seconds: dict[tuple[str, str], float] | None = None) -> str:
    """suite x configuration: passed/failed/skipped (+N: failures the control shares, not counted)."""
    suites = list(dict.fromkeys(r["suite"] for r in rows))
    configs = [CONTROL] + [c for c in dict.fromkeys(r["config"] for r in rows) if c != CONTROL]
    cnt = counts(rows)
    cells = {}
    for s in suites:
        for c in configs:
            if (s, c) not in cnt:
                cells[s, c] = "-"
                continue
            k = cnt[(s, c)]
            cell = f"{k['passed']}/{k['failed']}/{k['skipped']}"
            if k["rocksdb"]:
                cell += f" +{k['rocksdb']}"
            if seconds and (s, c) in seconds:
                cell += f" {seconds[(s, c)]:.0f}s"
            cells[s, c] = cell
    w0 = max([len("suite")] + [len(s) for s in suites])
    ws = {c: max([len(c)] + [len(cells[s, c]) for s in suites]) for c in configs}
    lines = [f"{'suite':{w0}}  " + "  ".join(f"{c:{ws[c]}}" for c in configs)]
    for s in suites:
        lines.append(f"{s:{w0}}  " + "  ".join(f"{cells[s, c]:{ws[c]}}" for c in configs))
    lines.append("cells: passed/failed/skipped; +N: failed on the control too (RocksDB's own failures here, "
                 "not counted against the engine)" + ("; s: seconds of test processes" if seconds else ""))
    return "\n".join(lines)


# ---------------------------------------------------------------- storage


def default_root() -> Path:
    """$RXLAB_CONFORMANCE, else data/conformance in the repository."""
    env = os.environ.get("RXLAB_CONFORMANCE")
    return Path(env) if env else builds.REPO / "data" / "conformance"


def store(rows: list[dict], summary: dict, root: Path, logs: dict[str, Path] | None = None) -> Path:
    """results.csv, summary.json and logs/ under root/.tmp-<id>, renamed to root/<id> when complete."""
    run_id = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)
    tmp = root / f".tmp-{run_id}"
    tmp.mkdir(parents=True)
    fields = ["suite", "config", "test", "status", "rocksdb", "seconds", "message"]
    with open(tmp / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "seconds": round(r["seconds"], 3)})
    (tmp / "summary.json").write_text(json.dumps({**summary, "run_id": run_id}, indent=1) + "\n")
    for name, src in (logs or {}).items():
        (tmp / "logs").mkdir(exist_ok=True)
        if src.is_file():
            shutil.copyfile(src, tmp / "logs" / name)
    for p in (tmp / "results.csv", tmp / "summary.json"):
        with open(p, "rb") as fh:
            os.fsync(fh.fileno())
    final = root / run_id
    tmp.rename(final)
    return final


def load(run: str | Path | None = None, root: Path | None = None) -> tuple[list[dict], dict]:
    """(rows, summary) of a stored run: a path, a run id, or the latest one."""
    root = root or default_root()
    if run is None:
        done = sorted(p for p in root.glob("*") if p.is_dir() and not p.name.startswith("."))
        if not done:
            raise FileNotFoundError(f"no conformance run in {root}: run `rxlab conformance`")
        path = done[-1]
    else:
        path = Path(run) if Path(run).is_dir() else root / str(run)
    with open(path / "results.csv", newline="") as f:
        rows = [{**r, "seconds": float(r["seconds"]), "rocksdb": r["rocksdb"] == "True"}
                for r in csv.DictReader(f)]
    return rows, json.loads((path / "summary.json").read_text())


# ---------------------------------------------------------------- the command


def run_suites(suites: list[str], engines: list[str], *, jobs: int = 2, test_timeout: float = 600,
               test_filter: str | None = None, full: bool = False, root: Path | None = None,
               progress: bool = True, build_jobs: int | None = None) -> tuple[list[dict], dict, Path]:
    """Build what is missing, run every suite on the control and each engine, store and return the result."""
    prefix = debug_build(suites, jobs=build_jobs)
    plugin = plugin_for(prefix, jobs=build_jobs)
    rec = debug_record(prefix) or {}
    units = [Unit(SUITES[s], cfg, i, SUITES[s].shards)
             for s in suites for cfg in [CONTROL, *engines] for i in range(SUITES[s].shards)]
    # The longest first, so that the last processes to finish are short ones.
    units.sort(key=lambda u: -u.suite.seconds / u.shards)
    work = Path(tempfile.mkdtemp(prefix="rxlab-conformance-"))
    t0 = time.time()
    lock = threading.Lock()

    def one(u: Unit) -> Unit:
        run_unit(u, prefix / "bin" / u.suite.name, plugin if u.config != CONTROL else None, work,
                 test_timeout=test_timeout, test_filter=test_filter, full=full)
        if progress:
            st = defaultdict(int)
            for r in u.rows:
                st[r["status"]] += 1
            with lock:
                print(f"  {u.label}: {st['passed']} passed, {st['failed']} failed, {st['skipped']} skipped "
                      f"({u.seconds:.0f} s){'  ' + u.error if u.error else ''}", file=sys.stderr, flush=True)
        return u

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            done = list(ex.map(one, units))
        rows = classify([r for u in done for r in u.rows])
        seconds: dict[str, float] = defaultdict(float)
        for u in done:
            seconds[f"{u.suite.name}|{u.config}"] += u.seconds
        summary = {
            "rocksdb": {k: rec.get(k) for k in ("version", "key", "compiler_version", "build_type",
                                                 "build_seconds", "added", "tests")},
            "debug_build": str(prefix), "plugin": str(plugin), "engines": engines, "suites": suites,
            "jobs": jobs, "test_filter": test_filter, "full": full,
            "left_out": {} if full else {s: f"{SUITES[s].heavy}: {SUITES[s].heavy_why}"
                                         for s in suites if SUITES[s].heavy},
            "wall_seconds": round(time.time() - t0, 1),
            "unit_seconds": {k: round(v, 1) for k, v in seconds.items()},
            "errors": [f"{u.label}: {u.error}" for u in done if u.error],
            "kernel": os.uname().release, "cpus": os.cpu_count(),
            "counts": {f"{s}|{c}": v for (s, c), v in counts(rows).items()},
        }
        # The console output of every process that failed a test or ended badly.
        bad = {(r["suite"], r["config"]) for r in rows if r["status"] == "failed"}
        logs = {re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{u.suite.name}-{u.config}-{u.shard}") + ".log": u.log
                for u in done if u.log and ((u.suite.name, u.config) in bad or u.error)}
        path = store(rows, summary, root or default_root(), logs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rows, summary, path


def _seconds_by_cell(summary: dict) -> dict[tuple[str, str], float]:
    return {tuple(k.split("|", 1)): v for k, v in summary.get("unit_seconds", {}).items()}


def report(rows: list[dict], summary: dict, path: Path | None = None, max_lines: int = 40) -> str:
    """The table, then the engine failures and RocksDB's own failures, by test."""
    out = [format_table(rows, _seconds_by_cell(summary))]
    bad = engine_failures(rows)
    if bad:
        out.append(f"\n{len(bad)} engine failure(s) (the control passed these):")
        out += [f"  {r['config']:10} {r['suite']}: {r['test']}  {r['message']}" for r in bad[:max_lines]]
        if len(bad) > max_lines:
            out.append(f"  ... and {len(bad) - max_lines} more (results.csv)")
    own = [r for r in rows if r["config"] == CONTROL and r["status"] == "failed"]
    if own:
        out.append("\nRocksDB's own failures here (failed on the control, its own file system):")
        out += [f"  {r['suite']}: {r['test']}  {r['message']}" for r in own[:max_lines]]
    for s, why in summary.get("left_out", {}).items():
        out.append(f"left out of {s} (--full runs them): {why}")
    for e in summary.get("errors", []):
        out.append(f"error: {e}")
    if path:
        out.append(f"\nresults: {path}")
    return "\n".join(out)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """The `conformance` sub-command."""
    p = subparsers.add_parser(
        "conformance", help="RocksDB's own test suites over rxlab's engines (Debug test build, made once)",
        description="Run RocksDB's test suites over each engine (TEST_FS_URI=rxlab://ENGINE with the plugin "
                    "preloaded) and over RocksDB's own file system as the control; print suite x "
                    "configuration: passed/failed/skipped. Exit 1 if an engine fails a test the control "
                    "passes.")
    p.add_argument("--engines", default=",".join(ENGINES),
                   help="comma-separated engines, each with URI options if wanted (io_uring?fixed_buffers=1) "
                        f"(default: {','.join(ENGINES)})")
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
        engines = parse_list(args.engines, ENGINES, "engine")
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
