"""`rxlab worker SCHEDULER -- OPTIONS`: everything after `--` goes to `dask worker` as it is.

The documented case is TLS: a real scheduler on loopback that speaks only TLS, and a worker started
with `rxlab worker ... -- --tls-ca-file ... --tls-cert ... --tls-key ... --memory-limit 1GiB`: it
joins, under its host id, with the resource host=1 and the memory limit it was given.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytestmark = pytest.mark.timeout(180)

from distributed import Client  # noqa: E402
from distributed.security import Security  # noqa: E402

BIN = Path(sys.executable).parent


def run_cli(*args, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "rxlab"), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, check=False)


def test_the_command_line_passes_everything_after_the_dashes(tmp_path):
    r = run_cli("worker", "tls://10.0.0.1:8786", "--host-id", "h1", "--dry-run", "--",
                "--tls-ca-file", "ca.pem", "--host", "127.0.0.1", "--memory-limit", "1GiB")
    assert r.returncode == 0, r.stderr
    cmd = r.stdout.split()
    assert Path(cmd[0]).name == "dask" and cmd[1:3] == ["worker", "tls://10.0.0.1:8786"]
    assert " --nworkers 1 --nthreads 1 --resources host=1 --name h1 " in r.stdout
    # after rxlab's own options, in order and as given (--host is dask's here, not --host-id)
    assert cmd[-6:] == ["--tls-ca-file", "ca.pem", "--host", "127.0.0.1", "--memory-limit", "1GiB"]


def test_dashes_belong_to_worker_only(tmp_path):
    r = run_cli("runs", "--dir", tmp_path, "--", "--json")
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "rxlab: '--' passes options on only for `rxlab worker`, not `rxlab runs` "
        "(`rxlab --help` says what is allowed)"]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_a_worker_joins_a_tls_scheduler_with_options_after_the_dashes(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    sched_file = tmp_path / "scheduler.json"
    procs = []
    try:
        procs.append(subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "tls://127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(sched_file), *tls], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        deadline = time.monotonic() + 60
        while not (sched_file.is_file() and json.loads(sched_file.read_text() or "{}").get("address")):
            assert time.monotonic() < deadline, "the scheduler did not come up"
            time.sleep(0.2)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tls://")
        log = open(tmp_path / "worker.log", "w")  # noqa: SIM115 - the child keeps its own descriptor
        procs.append(subprocess.Popen([str(BIN / "rxlab"), "worker", address, "--host-id", "tls-host", "--",
                                       *tls, "--memory-limit", "1GiB"], stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True, env={**os.environ}))
        log.close()
        sec = Security(tls_ca_file=str(cert), tls_client_cert=str(cert), tls_client_key=str(key),
                       require_encryption=True)
        with Client(address, security=sec, timeout="30s") as c:
            while not c.scheduler_info()["workers"]:
                assert time.monotonic() < deadline + 60, (tmp_path / "worker.log").read_text()[-2000:]
                time.sleep(0.3)
            (addr, w), = c.scheduler_info()["workers"].items()
        assert addr.startswith("tls://127.0.0.1:")
        assert w["name"] == "tls-host" and w["resources"] == {"host": 1}
        assert w["memory_limit"] == 1 << 30  # an option after `--`, applied by dask worker
        assert w["nthreads"] == 1
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait()
