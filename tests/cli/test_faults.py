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
| `rxlab import` of a cut archive         | X: truncated archive (EOFError: ...); nothing was imported |
| ... of a damaged one (bad tar header)   | X: damaged archive (ReadError: bad checksum); nothing ...  |
| ... of a file that is no archive        | X: not an rxlab archive (ReadError: not a gzip file)       |
| several bad study parameters            | one line per bad value, unknown names first                |
| too little free space                   | needs about 16.6 MiB at X, only 1.00 MiB free (not 0.0 GiB)|
| a sweep client without its certificate  | tls://...: TLS needs a CA file and a client certificate... |
| ... a missing or malformed one          | client TLS ca-file X: no such file / not a CA certificate  |
| the same on `rxlab worker`              | worker TLS cert X with key Y: not a certificate and its key|
| SIGTERM or Ctrl-C to `rxlab worker`     | its dask worker stops too (none re-parented to PID 1)      |
"""
from __future__ import annotations

import concurrent.futures as cf
import glob
import gzip
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers_cli import describe, run_cli, rxlab_cmd

from rxlab.bench import driver
from rxlab.core import archive, store, sysinfo
from rxlab.core.study import check_space

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
    assert "-".join(good.name.split("-")[:2]) in r.stdout  # `run`: the id's unique prefix
    assert "posix" in r.stdout and "fillseq,flush,readrandom" in r.stdout
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


def _before_stacks(err: str) -> str:
    """What the process said before faulthandler's dump: a KeyboardInterrupt raised inside a finalizer
    is printed as "Exception ignored in ..." and lost, which would leave the step running."""
    return err.split("Fatal Python error", 1)[0].strip()[-2000:]


def _native_stacks(pid: int) -> str:
    """Every thread's native stack (gdb, where installed): where a C++ step waits, which faulthandler's
    Python frames cannot show. Each frame shortened to its function and library, so that every thread
    fits in the message."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return "gdb not installed"
    try:
        r = subprocess.run([gdb, "-p", str(pid), "-batch", "-ex", "thread apply all bt 12"],
                           capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return "gdb timed out"
    keep = []
    for ln in r.stdout.splitlines():
        if ln.startswith("Thread "):
            keep.append(ln.split(" (", 1)[0] + " " + ln.rsplit(" ", 1)[-1])
        elif ln.startswith("#"):
            # "#3  0x... in func (args) at file:line" or "... from lib": the function and where it lives
            m = re.match(r"#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)", ln)
            lib = re.search(r" from (\S+)$", ln)
            if m:
                keep.append(f"  #{m[1]} {m[2]}{' ' + lib[1].rsplit('/', 1)[-1] if lib else ''}")
    return "\n".join(keep) or (r.stderr.strip()[-500:] or "gdb printed nothing")


def test_ctrl_c_stops_the_step_within_a_second_and_keeps_the_run_as_failed(tmp_path):
    runs = tmp_path / "runs"
    earlier = small_run(runs, tmp_path / "db0", "earlier")
    before = digest(earlier)
    # A test run started in the background by a shell without job control (`make test &`, `nohup ... &`)
    # has SIGINT ignored; every child inherits that, and Python leaves an ignored SIGINT ignored, so
    # Ctrl-C would never reach the step (it failed so in three such runs and passed in the foreground).
    # A handler here (not SIG_IGN) makes it the default again in the child, whose exec resets handlers.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        p = subprocess.Popen([*rxlab_cmd(), "bench", "--benchmarks=fillseq,flush,readrandom", "--num=20000",
                              "--value_size=100", "--duration=30", f"--db={tmp_path / 'db'}",
                              f"--runs_dir={runs}", "--fs_uri=posix", "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONFAULTHANDLER": "1"})   # SIGABRT: every thread's stack
    finally:
        signal.signal(signal.SIGINT, previous)
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
            if time.monotonic() - t0 >= 5:      # a failure says what there was, and where the process hung
                alive = p.poll() is None
                native = _native_stacks(p.pid) if alive else ""   # the C++ threads, where gdb is installed
                if alive:
                    p.send_signal(signal.SIGABRT)       # the Python threads, from faulthandler, on stderr
                _, err = p.communicate(timeout=30)
                state = "still running" if alive else f"exited {p.returncode}"
                pytest.fail(f"no failed run 5 s after Ctrl-C (process {state}; runs: "
                            f"{sorted(d.name for d in runs.iterdir())}; parts: "
                            f"{sorted(Path(x).name for x in glob.glob(str(runs / '.tmp-*' / 'parts' / '*')))}"
                            f"; stderr before the stacks: {_before_stacks(err)!r}; the stacks: "
                            f"{err.strip()[-3000:]!r}; native stacks: {native[-12000:]!r})")
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


# ------------------------------------------------------------------ archives


@pytest.fixture(scope="module")
def study_archive(tmp_path_factory):
    """A real archive of one study's run (`rxlab archive`'s format), made once."""
    tmp = tmp_path_factory.mktemp("archive")
    small_run(tmp / "runs", tmp / "db", "arch-s1-posix")
    return archive.archive_study("s1", tmp / "runs", tmp / "s1.rxlab.tar.gz")


def _bad_header(tar_bytes: bytes, member: int) -> bytes:
    """The tar stream with the checksum field of its `member`-th header (0: the first) spoiled."""
    data = bytearray(tar_bytes)
    offset = 0
    for _ in range(member):  # each member: a 512-byte header, then its data rounded up to 512 bytes
        size = int(data[offset + 124:offset + 136].rstrip(b"\0 ") or b"0", 8)
        offset += 512 + (size + 511) // 512 * 512
    data[offset + 148:offset + 156] = b"0000000\0"
    return bytes(data)


@pytest.mark.parametrize(("damage", "want"), [
    ("cut", "truncated archive (EOFError: Compressed file ended before the end-of-stream marker"),
    ("first header", "damaged archive (ReadError: bad checksum); nothing was imported"),
    ("later header", "damaged archive ("),  # ReadError, or a listing that stops early: by Python version
])
def test_import_of_a_truncated_or_damaged_archive_is_one_line_and_imports_nothing(study_archive, tmp_path,
                                                                                   damage, want):
    blob = study_archive.read_bytes()
    bad = tmp_path / "bad.rxlab.tar.gz"
    if damage == "cut":
        bad.write_bytes(blob[:len(blob) // 2])
    else:
        raw = gzip.decompress(blob)
        bad.write_bytes(gzip.compress(_bad_header(raw, 0 if damage == "first header" else 3)))
    r = run_cli("import", bad, "--runs", tmp_path / "runs")
    one_line(r, f"rxlab: {bad}: ", want)
    assert not [p for p in (tmp_path / "runs").glob("*")], "something was imported"
    good = run_cli("import", study_archive, "--runs", tmp_path / "runs")  # the archive itself loads
    assert good.returncode == 0 and re.search(r"arch-s1-posix +imported", good.stdout), describe(good)


# ------------------------------------------------------------------ study parameters, free space


def test_several_bad_study_parameters_are_named_one_line_each(tmp_path):
    r = run_cli("study", "run", "io_efficiency", "--scale", "smoke", "--runs", tmp_path / "runs",
                "-p", "colour=red", "-p", "backend=nosuch", "-p", "threads=0", "-p", "value_size=-1")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and "Traceback" not in r.stderr, describe(r)
    assert len(lines) == 4 and all(ln.startswith("rxlab: ") for ln in lines), describe(r)
    assert lines[0].startswith("rxlab: unknown parameter 'colour': allowed are scale, target, budget, ")
    assert "backend, threads" in lines[0]
    assert lines[1].startswith("rxlab: backend='nosuch': ")
    assert lines[2].startswith("rxlab: threads=0: expected a non-empty list of distinct")
    assert lines[3].startswith("rxlab: value_size=-1: expected an integer 1..")
    assert not (tmp_path / "runs").exists()


def test_free_space_is_said_in_a_unit_that_shows_it(tmp_path):
    # a study's check, given the free bytes: MiB and KiB where the sizes are small, never "0.0 GiB"
    with pytest.raises(ValueError, match=r"^scale='smoke': needs about 40\.0 MiB free at /w, only 12\.0 KiB "
                                         r"free; choose another db_dir or a smaller db_size$"):
        check_space("smoke", 40 << 20, Path("/w"), 12 << 10, smaller="db_size")
    # bench's check on a real 1 MiB file system (tmpfs, in a mount namespace of its own: nothing is left
    # mounted whatever happens)
    mnt = tmp_path / "small"
    mnt.mkdir()
    cmd = " ".join([*rxlab_cmd(), "bench", "--benchmarks=fillseq", "--num=100000", "--value_size=100",
                    f"--db={mnt}/db", f"--runs_dir={tmp_path / 'runs'}", "--use_direct_reads=false",
                    "--use_direct_io_for_flush_and_compaction=false"])
    mount = f"mount -t tmpfs -o size=1m rxlab-test {mnt}"
    probe = subprocess.run(["unshare", "-m", "sh", "-c", mount], capture_output=True, text=True,
                           check=False) if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip(f"no private tmpfs here (unshare -m and mount, as root): "
                    f"{probe and probe.stderr.strip()}")
    r = subprocess.run(["unshare", "-m", "sh", "-c", f"{mount} && {cmd}"], capture_output=True, text=True,
                       timeout=120, check=False)
    one_line(r, "rxlab bench: num=100000: needs about 16.6 MiB at ", "only 1.00 MiB free")
    assert "0.0 GiB" not in r.stderr


# ------------------------------------------------------------------ TLS, sweep client and worker


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A self-signed certificate and its key for 127.0.0.1, and a file that is no certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")
    key, cert = d / "key.pem", d / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    junk = d / "junk.pem"
    junk.write_text("not a certificate\n")
    return {"cert": cert, "key": key, "junk": junk, "missing": d / "missing.pem", "dir": d}


def no_dask_tls(tmp_path: Path, **tls) -> dict:
    """The environment without the user's Dask configuration, with the TLS settings `tls` (ca_file,
    client__cert, ...) given as Dask's environment variables."""
    conf = tmp_path / "dask-config"
    conf.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    env["DASK_CONFIG"] = str(conf)
    env.update({f"DASK_DISTRIBUTED__COMM__TLS__{k.upper()}": str(v) for k, v in tls.items()})
    return env


def run_with(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([*rxlab_cmd(), *map(str, args)], capture_output=True, text=True, timeout=120,
                          check=False, env=env)


def test_a_sweep_client_without_its_tls_certificate_is_one_line(certs, tmp_path):
    pytest.importorskip("distributed")
    args = ("sweep", "00", "--scheduler", "tls://127.0.0.1:9", "--out", tmp_path / "sweep", "--quiet")
    cases = [({}, "rxlab: tls://127.0.0.1:9: TLS needs a CA file and a client certificate, and no ca-file "
                  "or cert is given; give them with Dask's configuration: distributed.comm.tls.ca-file"),
             ({"ca_file": certs["missing"], "client__cert": certs["cert"]},
              f"rxlab: client TLS ca-file {certs['missing']}: no such file"),
             ({"ca_file": certs["cert"], "client__cert": certs["junk"], "client__key": certs["key"]},
              f"rxlab: client TLS cert {certs['junk']} with key {certs['key']}: not a certificate and its "
              "key")]
    for tls, want in cases:
        one_line(run_with(no_dask_tls(tmp_path, **tls), *args), want)


def test_a_worker_without_its_tls_certificate_is_one_line(certs, tmp_path):
    pytest.importorskip("distributed")
    env = no_dask_tls(tmp_path)
    worker = ("worker", "tls://127.0.0.1:9", "--host-id", "t1", "--")
    c, k = certs["cert"], certs["key"]
    cases = [((), "rxlab: tls://127.0.0.1:9: TLS needs a CA file and a worker certificate, and no ca-file or "
                  "cert is given; give them with `rxlab worker ADDRESS -- --tls-ca-file CA"),
             (("--tls-ca-file", certs["missing"], "--tls-cert", c, "--tls-key", k),
              f"rxlab: worker TLS ca-file {certs['missing']}: no such file"),
             ((f"--tls-ca-file={certs['junk']}", "--tls-cert", c, "--tls-key", k),
              f"rxlab: worker TLS ca-file {certs['junk']}: not a CA certificate (PEM)"),
             (("--tls-ca-file", c, "--tls-cert", c, "--tls-key", certs["dir"]),
              f"rxlab: worker TLS key {certs['dir']}: not a file")]
    for opts, want in cases:
        one_line(run_with(env, *worker, *opts), want)


# ------------------------------------------------------------------ the worker's dask child


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """A real Dask scheduler on loopback (its scheduler file), stopped at the end."""
    pytest.importorskip("distributed")
    d = tmp_path_factory.mktemp("scheduler")
    sched_file = d / "scheduler.json"
    dask = Path(rxlab_cmd()[0]).parent / "dask"
    proc = subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                             "--scheduler-file", str(sched_file)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (sched_file.is_file() and json.loads(sched_file.read_text() or "{}").get("address")):
            assert proc.poll() is None and time.monotonic() < deadline, "the scheduler did not come up"
            time.sleep(0.2)
        yield json.loads(sched_file.read_text())["address"]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_worker_stops_its_dask_worker(scheduler, tmp_path, sig):
    psutil = pytest.importorskip("psutil")
    from distributed import Client  # noqa: PLC0415 - the `dist` extra (the scheduler fixture skips without it)

    log = tmp_path / "worker.log"
    with log.open("w") as fh, Client(scheduler, timeout="30s") as client:
        p = subprocess.Popen([*rxlab_cmd(), "worker", scheduler, "--host-id", f"sig-{sig.name}"], stdout=fh,
                             stderr=fh, text=True, env=no_dask_tls(tmp_path))
        try:
            deadline = time.monotonic() + 120
            while not client.scheduler_info()["workers"]:  # connected to the scheduler
                assert p.poll() is None, log.read_text()
                assert time.monotonic() < deadline, f"the worker never joined: {log.read_text()}"
                time.sleep(0.3)
            children = psutil.Process(p.pid).children(recursive=True)  # dask worker (a nanny), its worker
            (dask_worker,) = psutil.Process(p.pid).children()
            assert len(children) >= 2, children
            p.send_signal(sig)
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        _, alive = psutil.wait_procs(children, timeout=10)
        deadline = time.monotonic() + 30
        while client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.3)
        left = client.scheduler_info()["workers"]
    err = log.read_text()
    assert not alive, f"left running after {sig.name}: {[(c.pid, c.cmdline()) for c in alive]}"
    assert not left, f"still connected to the scheduler after {sig.name}: {list(left)}"
    assert p.returncode == 128 + sig, (p.returncode, err[-2000:])
    assert f"rxlab worker: stopped by {sig.name}; its dask worker (pid {dask_worker.pid})" in err
    assert "Traceback" not in err, err[-3000:]
