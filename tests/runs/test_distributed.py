"""Sweeps on Dask distributed: two workers on loopback stand for two hosts (each with its own
host id and work directory). Real scheduler and worker processes, real notebook executions."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("distributed")
pytest.importorskip("papermill")
pytestmark = pytest.mark.timeout(300)

from rxlab.core import store  # noqa: E402
from rxlab.runs.sweep import point_dir  # noqa: E402

BIN = Path(sys.executable).parent


class Cluster:
    def __init__(self, base: Path):
        self.base = base
        self.file = base / "scheduler.json"
        self.procs: dict[str, subprocess.Popen] = {}
        self.scheduler = subprocess.Popen(
            [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(self.file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        self._wait(lambda: self.file.is_file() and json.loads(self.file.read_text() or "{}").get("address"))
        self.address = json.loads(self.file.read_text())["address"]

    def _wait(self, cond, timeout=60):
        t = time.monotonic()
        while not cond():
            if time.monotonic() - t > timeout:
                raise TimeoutError("the cluster did not come up")
            time.sleep(0.2)

    def start_worker(self, host_id: str) -> Path:
        work = self.base / host_id
        work.mkdir(exist_ok=True)
        env = {**os.environ, "RXLAB_WORKER_DIR": str(work)}
        with open(self.base / f"{host_id}.log", "w") as log:  # the child keeps its own descriptor
            self.procs[host_id] = subprocess.Popen(
                [str(BIN / "rxlab"), "worker", self.address, "--host-id", host_id], env=env, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True)
        return work

    def wait_workers(self, n: int):
        from distributed import Client

        with Client(self.address, timeout="20s") as c:
            self._wait(lambda: len(c.scheduler_info()["workers"]) == n)

    def kill(self, host_id: str):
        """Lose the host: SIGKILL the worker, its nanny and the point's processes at once."""
        os.killpg(self.procs[host_id].pid, signal.SIGKILL)
        self.procs[host_id].wait()

    def close(self):
        for p in [*self.procs.values(), self.scheduler]:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    c.start_worker("hostA")
    c.start_worker("hostB")
    c.wait_workers(2)
    yield c
    c.close()


def sweep_cmd(cluster, out, *backends, extra=()):
    return [str(BIN / "rxlab"), "sweep", "00", "-p", "scale", "smoke", "-p", "backend", *backends,
            "--scheduler", cluster.address, "--out", str(out), "--quiet", *extra]


def client_env(tmp_path):
    return {**os.environ, "RXLAB_RUNS": str(tmp_path / "client-runs"), "RXLAB_FIGURES": str(tmp_path / "figs")}


def test_a_sweep_runs_on_both_hosts_and_lands_in_the_clients_catalog(cluster, tmp_path):
    backends = ("posix", "libaio", "io_uring", "default")
    r = subprocess.run(sweep_cmd(cluster, tmp_path / "sweep", *backends), env=client_env(tmp_path),
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-2000:]
    df = pd.read_csv(tmp_path / "sweep" / "summary.csv")
    assert list(df["status"]) == ["ok"] * 4 and set(df["host"]) == {"hostA", "hostB"}
    cat = store.catalog(tmp_path / "client-runs")
    assert cat["run_id"].nunique() == 4                        # one run per point, all came back
    assert set(cat["host"]) == {"hostA", "hostB"}              # tagged with the host that ran it
    assert set(cat["backend"]) == set(backends)
    for b in backends:                                         # the executed notebooks too
        assert (point_dir(tmp_path / "sweep", {"scale": "smoke", "backend": b}) / "notebook.ipynb").is_file()
    assert not list((tmp_path / "figs").glob("*"))
    # the hosts side by side, as the toolchain post lays out its servers
    from rxlab.core import figures
    from rxlab.runs import distributed

    table = distributed.host_table(cat, "readrandom", "qps")
    assert set(table["host"]) == {"hostA", "hostB"} and table["n"].sum() == 4 and (table["qps"] > 0).all()
    fig = distributed.fig_hosts(table, "qps")
    assert [t.get_text().split("\n")[0] for t in fig.axes[0].get_xticklabels()] == list(dict.fromkeys(table["host"]))
    paths = figures.save(fig, "hosts_readrandom", runs=cat["run_id"].unique(), directory=tmp_path / "figs")
    assert paths["png"].stat().st_size > 0
    with pytest.raises(ValueError, match="^metric='nope': allowed are qps, iops"):
        distributed.host_table(cat, "readrandom", "nope")


def test_a_host_lost_mid_point_is_retried_elsewhere_never_half_recorded(cluster, tmp_path):
    backends = ("posix", "libaio", "io_uring")
    proc = subprocess.Popen(sweep_cmd(cluster, tmp_path / "sweep", *backends), env=client_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # wait until hostA is inside a point (its private work directory exists), then lose the host
    work = tmp_path / "hostA"
    t = time.monotonic()
    while not list(work.glob("rxlab-point-*")):
        assert time.monotonic() - t < 120 and proc.poll() is None, "hostA never started a point"
        time.sleep(0.05)
    time.sleep(1.0)
    cluster.kill("hostA")
    # the points hostA was in the middle of (a killed worker cannot clean up its work directories)
    interrupted = [json.loads(p.read_text())["point"] for p in work.glob("rxlab-point-*/point.json")]
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-2000:]
    df = pd.read_csv(tmp_path / "sweep" / "summary.csv")
    assert list(df["status"]) == ["ok"] * 3
    cat = store.catalog(tmp_path / "client-runs")
    assert cat["run_id"].nunique() == 3 and sorted(cat.groupby("run_id")["backend"].first()) == sorted(backends)
    # the point hostA was running when it died was run again, on hostB
    assert interrupted
    for point in interrupted:
        st = json.loads((point_dir(tmp_path / "sweep", point) / "status.json").read_text())
        assert st["status"] == "ok" and st["host"] == "hostB", st
    assert not [p for p in (tmp_path / "client-runs").iterdir() if p.name.startswith(".")]


def test_two_workers_on_one_host_are_refused(cluster, tmp_path):
    cluster.start_worker("hostA-twin")
    cluster.wait_workers(3)
    # the twin claims hostA's identity through the environment, as a second worker on hostA would
    cluster.kill("hostA-twin")
    env = {**os.environ, "RXLAB_HOST_ID": "hostA", "RXLAB_WORKER_DIR": str(tmp_path / "twin")}
    twin = subprocess.Popen([str(BIN / "dask"), "worker", cluster.address, "--nworkers", "1", "--nthreads", "1",
                             "--resources", "host=1", "--no-dashboard"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    cluster.procs["twin"] = twin
    cluster.wait_workers(3)
    r = subprocess.run(sweep_cmd(cluster, tmp_path / "sweep", "posix"), env=client_env(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    line = r.stderr.strip().splitlines()[-1]
    assert line.startswith("rxlab: workers ") and "both run on host 'hostA'" in line, r.stderr
