"""Running one suite over one configuration: gtest processes, their JSON and console output, crashes
and hangs, skips; then every unit of a run."""
from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rxlab.bench.conformance.debug_build import debug_build, debug_record, plugin_for
from rxlab.bench.conformance.results import classify, counts, default_root, store
from rxlab.bench.conformance.suites import CONTROL, FILTER_BYTES, SUITES, Suite
from rxlab.core import engines as registry


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
        env["TEST_FS_URI"] = registry.fs_uri(config)
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
    tag = f"{suite.name}-{registry.engine(unit.config)}-{unit.shard}-"
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
        if cur and size + len(n) + 1 > FILTER_BYTES:
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
                                                 "build_seconds", "added", "tests", "cmake_flags")},
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
