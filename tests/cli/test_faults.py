"""The faults a newcomer met, each ending in one line that names its cause: exit 2 for bad input, 130
for Ctrl-C, never a traceback. Real commands (subprocesses of the installed `rxlab`), real files.

| fault                                   | now                                                        |
| `rxlab show` of a missing run           | no run 'x' in ROOT                                         |
| ... of an empty directory               | run X: an empty directory, not a run                       |
| ... of a corrupt run.json               | run X: run.json is corrupt (not JSON: ...)                 |
| ... of an unreadable steps.parquet      | run X: steps.parquet is unreadable (...)                   |
| `rxlab runs` over such runs             | the others listed; each bad one named on stderr            |
| an unwritable --db (or a file parent)   | db=X: P is not writable / is a file (O_DIRECT on or off)   |
| no --benchmarks                         | what it would run, and the flag that runs it               |
| a DB already at --db                    | refused unless --use_existing_db says what to do           |
| Ctrl-C during a step                    | stops within a second, the partial run kept as failed, 130 |
| a DB on tmpfs                           | n/a and a note instead of NaN iops, reqsz, io.lat          |
"""
from __future__ import annotations

import concurrent.futures as cf
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers_cli import describe, run_cli, rxlab_cmd

from rxlab.bench import driver
from rxlab.core import store, sysinfo

pytestmark = pytest.mark.timeout(180)


def one_line(r: subprocess.CompletedProcess, prefix: str, *want: str, code: int = 2) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.returncode == code, describe(r)
    assert len(lines) == 1 and lines[0].startswith(prefix), describe(r)
    assert "Traceback" not in r.stderr
    for w in want:
        assert w in lines[0], f"{lines[0]!r} does not say {w!r}"
    return lines[0]


def digest(path: Path) -> dict:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def small_run(root: Path, db: Path, name: str = "small") -> Path:
    return driver.run(driver.RunSpec(db=str(db), name=name, num=3000, value_size=100, reads=500,
                                     cache_size=64 << 10, backend="posix"), root=root, progress=False)


# ------------------------------------------------------------------ unreadable runs


@pytest.fixture(scope="module")
def damaged_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    good = small_run(root, root.parent / "db-good", "good")
    (root / "emptyrun").mkdir()
    bad_json = root / "badjson"
    shutil.copytree(good, bad_json)
    (bad_json / "run.json").write_text('{"run_id": "badjson", "status": "comp')
    bad_steps = root / "badsteps"
    shutil.copytree(good, bad_steps)
    (bad_steps / "steps.parquet").write_bytes(b"")
    return root, good


@pytest.mark.parametrize(("run", "want"), [
    ("nope", "no run 'nope' in"),
    ("emptyrun", "run emptyrun: an empty directory, not a run"),
    ("badjson", "run badjson: run.json is corrupt (not JSON"),
    ("badsteps", "run badsteps: steps.parquet is unreadable"),
])
def test_show_names_what_is_wrong_with_a_run(damaged_store, run, want):
    root, _ = damaged_store
    r = run_cli("show", run, "--dir", root)
    one_line(r, "rxlab: ", want)
    assert r.stdout == ""


def test_runs_lists_the_readable_runs_and_names_the_others(damaged_store):
    root, good = damaged_store
    r = run_cli("runs", "--dir", root)
    assert r.returncode == 0, describe(r)
    assert good.name in r.stdout and "posix" in r.stdout and "fillseq,flush,readrandom" in r.stdout
    skipped = sorted(r.stderr.strip().splitlines())
    assert len(skipped) == 3, r.stderr
    assert all(line.startswith("rxlab: skipped run ") for line in skipped)
    as_json = run_cli("runs", "--dir", root, "--json")
    rows = json.loads(as_json.stdout)  # JSON only on stdout
    assert [row["run_id"] for row in rows] == [good.name]
    assert rows[0]["backend"] == "posix" and rows[0]["threads"] == 1 and rows[0]["qps"] > 0
    assert rows[0]["benchmarks"] == "fillseq,flush,readrandom" and rows[0]["wall_s"] > 0
    latest = run_cli("show", "--dir", root)  # `latest` by default
    assert latest.returncode == 0 and latest.stdout.startswith(f"run {good}"), describe(latest)


# ------------------------------------------------------------------ the DB directory


def test_unwritable_db_is_said_to_be_unwritable_with_odirect_on_and_off(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    ro = Path("/sys/rxlab-test-db")  # sysfs refuses new files even to root
    assert sysinfo.dir_problem(ro), "sysfs accepted a file: no unwritable directory to test with"
    off = ["--use_direct_reads=false", "--use_direct_io_for_flush_and_compaction=false"]
    cases = [(a_file / "db", [], f"{a_file} is a file, not a directory"),
             (a_file / "db", off, f"{a_file} is a file, not a directory"),
             (a_file, off, f"{a_file} is a file, not a directory"),
             (ro, [], "/sys (the nearest existing part of /sys/rxlab-test-db) is not writable"),
             (ro, off, "is not writable: Permission denied")]
    with cf.ThreadPoolExecutor(max_workers=3) as ex:
        results = list(ex.map(lambda c: run_cli("bench", "--benchmarks=fillseq", "--num=100", f"--db={c[0]}",
                                                f"--runs_dir={tmp_path / 'runs'}", *c[1]), cases))
    for (_, _, want), r in zip(cases, results, strict=True):
        line = one_line(r, "rxlab bench: db=", want)
        assert "O_DIRECT" not in line
    assert not (tmp_path / "runs").exists()


# ------------------------------------------------------------------ what bench runs


def test_bench_without_benchmarks_says_what_it_would_run(tmp_path):
    db, runs = tmp_path / "db", tmp_path / "runs"
    r = run_cli("bench", f"--db={db}", f"--runs_dir={runs}", "--fs_uri=posix")
    one_line(r, "rxlab bench: no --benchmarks given: it would run fillseq,flush,readrandom with "
                "--num=1000000",
             f"--db={db}", "through posix", "add --benchmarks=fillseq,flush,readrandom")
    assert not db.exists() and not runs.exists()


def test_bench_never_writes_over_a_database_nobody_asked_to_replace(tmp_path):
    db, runs = tmp_path / "db", tmp_path / "runs"
    small_run(runs, db)
    before = digest(db)
    args = ("bench", "--num=3000", "--value_size=100", f"--db={db}", f"--runs_dir={runs}", "--fs_uri=posix")

    refused = run_cli(*args, "--benchmarks=fillseq")
    one_line(refused, "rxlab bench: ", f"--db={db} holds a database", "fillseq would write over it",
             "--use_existing_db=0", "--use_existing_db=1")
    assert digest(db) == before and len(store.list_runs(runs)) == 1

    # steps that work on the DB that is there use it
    reads = run_cli(*args, "--benchmarks=readrandom", "--reads=500", "--json")
    assert reads.returncode == 0, describe(reads)
    (rr,) = json.loads(reads.stdout)
    assert rr["found"] == rr["ops"] == 500

    # said explicitly, the DB is replaced
    replaced = run_cli(*args, "--benchmarks=fillseq", "--use_existing_db=0")
    assert replaced.returncode == 0, describe(replaced)
    assert "a new database at" in replaced.stdout and "replacing the one there" in replaced.stdout
    assert "defaults unlike db_bench's: --use_direct_reads=true (db_bench: false)" in replaced.stdout
    assert len(store.list_runs(runs)) == 3


def test_bench_never_deletes_a_directory_that_is_not_a_database(tmp_path):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "thesis.tex").write_text("precious")
    r = run_cli("bench", "--benchmarks=fillseq", "--num=100", f"--db={d}", "--use_existing_db=0",
                f"--runs_dir={tmp_path / 'runs'}")
    one_line(r, "rxlab bench: ", "not a RocksDB database", "choose a new or empty directory")
    assert (d / "thesis.tex").read_text() == "precious"


# ------------------------------------------------------------------ Ctrl-C


def test_ctrl_c_stops_the_step_within_a_second_and_keeps_the_run_as_failed(tmp_path):
    runs = tmp_path / "runs"
    earlier = small_run(runs, tmp_path / "db0", "earlier")
    before = digest(earlier)
    p = subprocess.Popen([*rxlab_cmd(), "bench", "--benchmarks=fillseq,flush,readrandom", "--num=20000",
                          "--value_size=100", "--duration=30", f"--db={tmp_path / 'db'}",
                          f"--runs_dir={runs}", "--fs_uri=posix", "--quiet"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(glob.glob(str(runs / ".tmp-*" / "parts" / "*-step.parquet"))) < 2:  # fillseq, flush done
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline, "the first steps never finished"
            time.sleep(0.02)
        time.sleep(1.0)  # in readrandom's 30 seconds
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        while not glob.glob(str(runs / ".failed-*" / "run.json")):
            assert time.monotonic() - t0 < 5, "no failed run 5 s after Ctrl-C"
            time.sleep(0.005)
        stopped = time.monotonic() - t0
        out, err = p.communicate(timeout=30)
        exited = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    print(f"\nCtrl-C: the run was kept as failed {stopped * 1000:.0f} ms after SIGINT, the process exited "
          f"after {exited * 1000:.0f} ms")
    assert p.returncode == 130, (out, err)
    assert stopped < 1.0, f"the step stopped {stopped:.2f} s after Ctrl-C"
    assert "Traceback" not in err
    (failed,) = [d for d in runs.iterdir() if d.name.startswith(".failed-")]
    assert err.strip().splitlines() == [f"rxlab bench: interrupted; the partial run is kept as failed in "
                                        f"{failed}; earlier runs are untouched"]
    run = store.load_run(failed)
    assert run.status == "failed" and run.meta["error"]["type"] == "KeyboardInterrupt"
    assert run.steps["name"].tolist() == ["fillseq", "flush"]
    assert digest(earlier) == before
    assert store.list_runs(runs)["run_id"].tolist() == [earlier.name]


# ------------------------------------------------------------------ tmpfs


def test_a_db_without_a_block_device_says_so_instead_of_nan(tmp_path):
    shm = Path("/dev/shm")
    if not shm.is_dir() or sysinfo.device_for_path(shm).disk:
        pytest.skip("no tmpfs at /dev/shm")
    db = shm / f"rxlab-test-{os.getpid()}"
    odirect = [] if sysinfo.direct_io_works(shm) else ["--use_direct_reads=false",
                                                       "--use_direct_io_for_flush_and_compaction=false"]
    try:
        r = run_cli("bench", "--benchmarks=fillseq,flush,readrandom", "--num=3000", "--reads=500",
                    "--value_size=100", f"--db={db}", f"--runs_dir={tmp_path / 'runs'}", *odirect)
        j = run_cli("show", "latest", "--dir", tmp_path / "runs", "--json")
    finally:
        shutil.rmtree(db, ignore_errors=True)
    assert r.returncode == 0, describe(r)
    note = f"no block device under {db} (tmpfs file system): iops, reqsz and io.lat"
    assert f"  {note}" in r.stdout  # the header
    assert f"note: {note}" in r.stdout and "(n/a above)" in r.stdout  # under the table
    table = r.stdout[r.stdout.index("      qps"):].splitlines()
    assert table[0].split() == ["qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat",
                                "test"]
    rr = table[3].split()
    assert rr[1] == rr[2] == rr[7] == "n/a" and rr[-1] == "readrandom" and "nan" not in r.stdout.lower()
    steps = json.loads(j.stdout)["steps"]
    assert all(note in s["notes"] for s in steps)
    assert all(s["iops"] is None for s in steps)
