"""`rxlab conformance` (rxlab.bench.conformance): RocksDB's own test suites over the engines.

Bad input is one line and exit 2, before anything is built. The verdict logic
(a failure the control shares is RocksDB's, not the engine's) is checked on
rows; the runner itself on RocksDB's real env_basic_test from the Debug test
build (`make test` makes it before pytest; elsewhere these tests skip, naming
the command): a plain engine passes what the control passes, an engine whose
every read fails (fault_eio=1) is caught, and a test that hangs is killed,
failed, and the rest still run.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from rxlab.bench import conformance as cf

pytestmark = pytest.mark.timeout(900)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rxlab.cli", "conformance", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("args", "bad", "allowed"), [
    (["--engines", "posix,nvme"], "nvme", "posix, libaio, io_uring"),
    (["--engines", ""], "no engine", "posix, libaio, io_uring"),
    (["--suites", "db_basic_test,db_nosuch_test"], "db_nosuch_test", "env_basic_test, db_basic_test"),
    (["--engines", "io_uring?bogus=1"], "bogus", "allowed are"),
    (["--jobs", "0"], "--jobs 0", "at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(args, bad, allowed, tmp_path):
    r = _cli(*args, "--out", str(tmp_path))
    assert r.returncode == 2, r
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and bad in lines[0] and allowed in lines[0], r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
    assert not list(tmp_path.iterdir())  # refused before building or running anything


def test_help_names_every_option_with_its_default():
    r = _cli("--help")
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for opt in ("--engines", "--suites", "--jobs", "--full", "--filter", "--test-timeout", "--out",
                "--build-only"):
        assert opt in text
    assert "default: every engine of the registry" in text and f"(default: the {len(cf.DEFAULT_SUITES)} that --list marks" in text
    listed = _cli("--list").stdout.splitlines()
    assert [ln.split()[0] for ln in listed if "(default)" in ln] == list(cf.DEFAULT_SUITES)


def test_list_names_every_suite():
    r = _cli("--list")
    assert r.returncode == 0
    assert [ln.split()[0] for ln in r.stdout.splitlines()] == list(cf.SUITES)


def test_gtest_filter_semantics():
    m = cf.gtest_match
    assert m("A.b", "*") and m("A.b", "A.*") and not m("A.b", "B.*")
    assert m("A.b", "B.*:A.?") and not m("A.b", "*-A.b") and m("A.c", "*-A.b")
    assert m("P/A.b/3", "-P/A.b/1:P/A.b/2") and not m("P/A.b/1", "-P/A.b/1:P/A.b/2")


def test_parse_test_list():
    text = ("Note: Google Test filter = *\n"
            "DBBasicTest.\n  OpenReadOnly\n  CompactedDB\n"
            "DBBasicMultiConfigs/DBBasicMultiConfigs.\n"
            "  CompactBetweenSnapshots/0  # GetParam() = 0\n"
            "  CompactBetweenSnapshots/1  # GetParam() = 1\n")
    assert cf.parse_test_list(text) == [
        "DBBasicTest.OpenReadOnly", "DBBasicTest.CompactedDB",
        "DBBasicMultiConfigs/DBBasicMultiConfigs.CompactBetweenSnapshots/0",
        "DBBasicMultiConfigs/DBBasicMultiConfigs.CompactBetweenSnapshots/1"]


def _row(config, test, status, suite="db_basic_test"):
    return {"suite": suite, "config": config, "test": test, "key": test, "status": status,
            "seconds": 1.0, "message": ""}


def test_a_failure_the_control_shares_is_rocksdbs_not_the_engines():
    rows = cf.classify([
        _row("control", "T.a", "passed"), _row("posix", "T.a", "failed"),
        _row("control", "T.b", "failed"), _row("posix", "T.b", "failed"), _row("libaio", "T.b", "failed"),
        _row("control", "T.c", "passed"), _row("posix", "T.c", "skipped"), _row("libaio", "T.c", "passed"),
        _row("libaio", "T.a", "passed"),
    ])
    assert [(r["config"], r["test"]) for r in cf.engine_failures(rows)] == [("posix", "T.a")]
    n = cf.counts(rows)
    assert n[("db_basic_test", "posix")] == {"passed": 0, "failed": 1, "rocksdb": 1, "skipped": 1}
    assert n[("db_basic_test", "libaio")] == {"passed": 2, "failed": 0, "rocksdb": 1, "skipped": 0}
    assert n[("db_basic_test", "control")] == {"passed": 2, "failed": 1, "rocksdb": 0, "skipped": 0}
    table = cf.format_table(rows).splitlines()
    assert table[0].split() == ["suite", "control", "posix", "libaio"]
    assert table[1].split() == ["db_basic_test", "2/1/0", "0/1/1", "+1", "2/0/0", "+1"]


def test_env_basic_test_compares_custom_env_with_default_env():
    s = cf.SUITES["env_basic_test"]
    name = "EnvBasicTestWithParam.Basic/0"
    assert s.key("CustomEnv/" + name) == s.key("EnvDefault/" + name) == name
    assert cf.SUITES["db_basic_test"].key("A/B.c/1") == "A/B.c/1"


def test_a_debug_build_counts_only_what_build_json_lists(tmp_path):
    """build.json is written last: a directory without it (an interrupted build)
    holds nothing, and a listed binary that is missing is not counted."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "lib" / "librocksdb.so").write_bytes(b"")
    (tmp_path / "bin" / "env_basic_test").write_bytes(b"")
    assert cf.built_tests(tmp_path) == set()
    (tmp_path / "build.json").write_text(json.dumps({"tests": ["env_basic_test", "db_basic_test"]}))
    assert cf.built_tests(tmp_path) == {"env_basic_test"}
    (tmp_path / "lib" / "librocksdb.so").unlink()
    assert cf.built_tests(tmp_path) == set()


# ---------------------------------------------------------------- the real suites


def _debug_build():
    try:
        prefix = cf.debug_dir(*cf.active_version())
    except Exception as e:  # no compiler, no build: say why
        pytest.skip(f"no Debug test build: {e}")
    if "env_basic_test" not in cf.built_tests(prefix):
        pytest.skip(f"no Debug test build with env_basic_test in {prefix}: run "
                    "`rxlab conformance --build-only` (make test does)")
    return prefix


def test_env_basic_test_over_posix_and_a_failing_engine(tmp_path):
    """The control and plain posix pass env_basic_test; posix with every read
    failing (fault_eio=1) fails tests the control passes, and the run says so."""
    _debug_build()
    rows, _, path = cf.run_suites(["env_basic_test"], ["posix", "posix?fault_eio=1"], jobs=2,
                                        root=tmp_path, progress=False)
    by = {c: [r for r in rows if r["config"] == c] for c in ("control", "posix", "posix?fault_eio=1")}
    assert len(by["control"]) == 8 and len(by["posix"]) == len(by["control"])  # 4 + 4 TEST_Ps
    assert {r["key"] for r in by["posix"]} == {r["key"] for r in by["control"]}
    assert all(r["test"].startswith("CustomEnv/") for r in by["posix"])
    assert all(r["status"] == "passed" for r in by["control"] + by["posix"]), \
        [r for r in rows if r["status"] != "passed"]
    bad = cf.engine_failures(rows)
    assert bad and {r["config"] for r in bad} == {"posix?fault_eio=1"}
    assert any("Input/output error" in r["message"] or "IO error" in r["message"] for r in bad), bad
    # Stored complete, with the failing processes' logs; --show prints it and exits 1.
    assert path.parent == tmp_path and (path / "results.csv").is_file() and list((path / "logs").iterdir())
    rows2, summary2 = cf.load(root=tmp_path)
    assert len(rows2) == len(rows) and summary2["suites"] == ["env_basic_test"]
    r = _cli("--show", "--out", str(tmp_path))
    assert r.returncode == 1 and "env_basic_test" in r.stdout and "engine failure" in r.stdout, r


def test_a_hung_test_is_killed_and_the_rest_still_run(tmp_path):
    """A watchdog kills the process of a test that outlives --test-timeout; the
    test is failed and the tests after it run in a new process. The hang is
    real: every device read of posix?delay_us=60000000 takes a minute."""
    prefix = _debug_build()
    unit = cf.Unit(cf.SUITES["env_basic_test"], "posix?delay_us=60000000")
    plugin = cf.plugin_for(prefix)
    t0 = time.monotonic()
    cf.run_unit(unit, prefix / "bin" / "env_basic_test", plugin, tmp_path, test_timeout=3,
                test_filter="*.ReadWrite/*:*.MakeDir/*")
    assert time.monotonic() - t0 < 50
    res = {r["test"].split(".")[-1]: r for r in unit.rows}
    assert set(res) == {"ReadWrite/0", "MakeDir/0"}, unit.rows
    assert res["ReadWrite/0"]["status"] == "failed" and "timed out after 3 s" in res["ReadWrite/0"]["message"]
    assert res["MakeDir/0"]["status"] == "passed", unit.rows  # ran after the kill, in a new process
    assert not unit.error
