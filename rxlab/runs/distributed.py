"""Sweeps on a Dask distributed cluster: one grid point per host at a time.

A benchmark needs its host to itself, so every grid point asks for the
resource ``host=1`` and every host offers it once. Dask's resources belong to
a worker *process*, not to a machine: run exactly one worker process per
host, with one thread (``rxlab worker`` does: ``dask worker --nworkers 1
--nthreads 1 --resources host=1``). `check_cluster` refuses a cluster where
a host runs two such workers or a worker lacks the resource.

A point runs on the worker in a child process (a notebook kernel and its
native code must not share the worker's process; a crash stays a failed
point). Its runs are written to a staging store private to the point and
handed back only when the point has finished: as a tar stream in the task's
result (the client unpacks them into its own store), or moved into a shared
store path that every host mounts. A worker lost in the middle of a point
therefore leaves nothing in any catalog; Dask reschedules the point on
another worker (up to ``distributed.scheduler.allowed-failures`` times), and
a point that cannot finish is reported failed while the rest of the sweep
goes on.

Security: the scheduler address may be ``tls://``; TLS certificates are
Dask's own configuration (``distributed.comm.tls.*`` in ~/.config/dask/ or
``DASK_DISTRIBUTED__COMM__TLS__...``), which both client and workers read.
`check_tls` loads them before Dask does, so a missing or unreadable one is
refused in one line that names it. `run_worker` runs ``dask worker`` as
rxlab worker's child and stops it when rxlab worker is stopped.
"""
from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rxlab.core import figures, metrics, store, sysinfo
from rxlab.core.paths import REPO
from rxlab.runs.notebooks import resolve_notebook
from rxlab.runs.sweep import (
    _read_status,
    _slug,
    _write_status,
    check_names,
    default_sweep_dir,
    grid,
    point_dir,
    run_point,
    summary,
)

RESOURCE = "host"
LOCAL = "local"


def worker_identity() -> dict:
    """What a worker reports about itself (run on the worker)."""
    return {"host_id": sysinfo.host_id(), "hostname": os.uname().nodename, "pid": os.getpid(),
            "repo": str(REPO)}


def check_cluster(client) -> dict[str, dict]:
    """Workers by address; refuse (one line) a cluster that could run two benchmarks on one host."""
    info = client.scheduler_info(n_workers=-1)["workers"] if _takes_n_workers(client) else \
        client.scheduler_info()["workers"]
    if not info:
        raise RuntimeError("the cluster has no workers: start one per host with `rxlab worker SCHEDULER`")
    missing = [a for a, w in info.items() if w.get("resources", {}).get(RESOURCE, 0) != 1]
    if missing:
        raise RuntimeError(f"worker {missing[0]} does not offer resource {RESOURCE}=1: start workers with "
                           f"`rxlab worker` or `dask worker --nworkers 1 --nthreads 1 --resources {RESOURCE}=1`")
    ids = client.run(worker_identity)
    seen: dict[str, str] = {}
    for addr, ident in ids.items():
        if ident["host_id"] in seen:
            raise RuntimeError(f"workers {seen[ident['host_id']]} and {addr} both run on host "
                               f"{ident['host_id']!r}: run one worker process per host (--nworkers 1)")
        seen[ident["host_id"]] = addr
    return ids


def _takes_n_workers(client) -> bool:

    return "n_workers" in inspect.signature(client.scheduler_info).parameters


def _pack(paths: Sequence[Path]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for p in paths:
            tar.add(p, arcname=p.name)
    return buf.getvalue()


def _unpack(blob: bytes, root: Path) -> list[str]:
    """Runs from a tar stream into `root`, each complete or absent (extracted beside, then renamed)."""
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".tmp-unpack-", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
            tar.extractall(staging, filter="data")
        out = []
        for p in sorted(staging.iterdir()):
            dest = root / p.name
            if not dest.exists():
                os.replace(p, dest)
            out.append(str(dest))
        return out
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def execute_point(notebook: str, point: Mapping, *, shared_store: str | None = None,
                  timeout_s: float | None = None) -> dict:
    """The task a worker runs: the point in a child process, into a private staging store.

    Returns the point's status, with `runs_tar` (the runs packed) or, with a
    shared store, the runs moved there. Runs of a failed point come back too:
    each is complete in itself and the status says the point failed.
    """
    base = Path(os.environ.get("RXLAB_WORKER_DIR") or tempfile.gettempdir())
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="rxlab-point-", dir=base))
    (work / "point.json").write_text(json.dumps({"notebook": notebook, "point": dict(point)}))  # post-mortems
    try:
        staging, sweep_dir = work / "runs", work / "sweep"
        args = {"notebook": notebook, "point": dict(point), "sweep_dir": str(sweep_dir),
                "runs_root": str(staging), "timeout_s": timeout_s}
        proc = subprocess.run([sys.executable, "-m", "rxlab.runs.distributed", "--point", json.dumps(args)],
                              capture_output=True, text=True, check=False)
        st = _read_status(point_dir(sweep_dir, point))
        if st is None:  # the child died before it could write a status
            tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            st = {"point": _slug(point), "notebook": notebook, "parameters": dict(point), "status": "failed",
                  "seconds": 0.0, "output": "", "runs": [], "error": f"point process: {tail}", "figures": []}
        st.update(worker_identity())
        nb = point_dir(sweep_dir, point) / "notebook.ipynb"
        st["notebook_ipynb"] = nb.read_bytes() if nb.is_file() else b""
        runs = [Path(r) for r in st.get("runs", [])]
        if shared_store:
            moved = []
            for r in runs:
                dest = Path(shared_store) / r.name
                shutil.move(str(r), str(dest.parent / (".tmp-move-" + r.name)))
                os.replace(dest.parent / (".tmp-move-" + r.name), dest)
                moved.append(str(dest))
            st["runs"] = moved
        else:
            st["runs_tar"] = _pack(runs)
        return st
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _client(scheduler: str):
    from distributed import Client, LocalCluster  # noqa: PLC0415 - dask is optional (the [dist] extra)

    if scheduler == LOCAL:
        cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, resources={RESOURCE: 1},
                               dashboard_address=None)
        return Client(cluster), cluster
    check_tls(scheduler, "client")
    return Client(scheduler, timeout="30s"), None


# --------------------------------------------------------------------------- TLS, checked before Dask

# rxlab worker's options after `--` that name TLS files, and where Dask's configuration holds each
# (`distributed.comm.tls.<key>`; the worker's and the client's certificate and key are their own).
_TLS_OPTIONS = {"--tls-ca-file": "ca-file", "--tls-cert": "cert", "--tls-key": "key"}


def _option(args: Sequence[str], name: str) -> str | None:
    """The value of `--name VALUE` or `--name=VALUE` in args (the last one given), else None."""
    value = None
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(name + "="):
            value = a.split("=", 1)[1]
    return value


def tls_files(role: str, args: Sequence[str] = ()) -> dict[str, str | None]:
    """The TLS files a `role` ("client" or "worker") would use: ca-file, cert, key; each from the
    command line's --tls-* options (a worker's), else Dask's configuration, else None."""
    import dask  # noqa: PLC0415 - dask is optional (the [dist] extra)
    import distributed  # noqa: F401, PLC0415 - loads distributed's configuration defaults

    out = {}
    for opt, key in _TLS_OPTIONS.items():
        conf = f"distributed.comm.tls.{key}" if key == "ca-file" else f"distributed.comm.tls.{role}.{key}"
        out[key] = _option(args, opt) or dask.config.get(conf, None)
    return out


def scheduler_address(scheduler_file: str | os.PathLike | None) -> str | None:
    """The address a Dask scheduler file holds (None when there is no such file yet: a worker waits)."""
    try:
        return json.loads(Path(scheduler_file).read_text()).get("address") if scheduler_file else None
    except (OSError, ValueError, AttributeError):
        return None


def check_tls(address: str | None, role: str, args: Sequence[str] = ()) -> None:
    """For a tls:// address, refuse in one line a missing certificate or one that cannot be loaded
    (Dask would fail later with `TypeError: TLS expects a ssl_context...` or a traceback of its own)."""
    if not str(address or "").startswith("tls://"):
        return
    import ssl  # noqa: PLC0415 - only for TLS

    files = tls_files(role, args)
    config = (f"Dask's configuration: distributed.comm.tls.ca-file and distributed.comm.tls.{role}.cert "
              "(and .key) in ~/.config/dask/*.yaml or DASK_DISTRIBUTED__COMM__TLS__... "
              "(docs/howto/sweep-tls.md)")
    where = ("`rxlab worker ADDRESS -- --tls-ca-file CA --tls-cert CERT --tls-key KEY` or " + config
             if role == "worker" else config)
    missing = [k for k in ("ca-file", "cert") if not files[k]]
    if missing:
        raise ValueError(f"{address}: TLS needs a CA file and a {role} certificate, and no "
                         f"{' or '.join(missing)} is given; give them with {where}")
    for key, path in files.items():
        why = _file_problem(path) if path else None
        if why:
            raise ValueError(f"{role} TLS {key} {path}: {why}")
    try:
        ctx = ssl.create_default_context(cafile=files["ca-file"])
    except (ssl.SSLError, OSError) as e:
        raise ValueError(f"{role} TLS ca-file {files['ca-file']}: not a CA certificate (PEM) "
                         f"({_ssl_reason(e)})") from None
    try:
        ctx.load_cert_chain(files["cert"], files["key"])
    except (ssl.SSLError, OSError) as e:
        key = f" with key {files['key']}" if files["key"] else ""
        raise ValueError(f"{role} TLS cert {files['cert']}{key}: not a certificate and its key (PEM) "
                         f"({_ssl_reason(e)})") from None


def _file_problem(path: str) -> str | None:
    if not os.path.exists(path):
        return "no such file"
    if not os.path.isfile(path):
        return "not a file"
    return None if os.access(path, os.R_OK) else "not readable"


def _ssl_reason(e: BaseException) -> str:
    return getattr(e, "reason", None) or getattr(e, "strerror", None) or type(e).__name__


def sweep_distributed(notebook: str | Path, params: Mapping[str, Sequence], scheduler: str = LOCAL, *,
                      sweep_dir: str | Path | None = None, runs_root: str | Path | None = None,
                      shared_store: str | Path | None = None, force: bool = False,
                      timeout_s: float | None = None, progress: bool = True) -> pd.DataFrame:
    """Submit the grid's points to a Dask cluster (`local`: a one-worker cluster on this machine)."""
    from distributed import as_completed  # noqa: PLC0415 - dask is optional (the [dist] extra)


    path = resolve_notebook(notebook)
    check_names(path, params)
    points = grid(params)
    sdir = Path(sweep_dir) if sweep_dir is not None else default_sweep_dir(path)
    sdir.mkdir(parents=True, exist_ok=True)
    root = Path(runs_root) if runs_root is not None else store.default_root()
    client, cluster = _client(scheduler)
    statuses: dict[str, dict] = {}
    try:
        check_cluster(client)
        futures = {}
        for point in points:
            old = _read_status(point_dir(sdir, point))
            if not force and old and old.get("status") == "ok" and old.get("parameters") == dict(point):
                statuses[_slug(point)] = {**old, "skipped": True}
                continue
            # the notebook goes by name: each worker runs its own checkout's copy
            fut = client.submit(execute_point, path.stem, dict(point), resources={RESOURCE: 1}, pure=False,
                                shared_store=str(shared_store) if shared_store else None, timeout_s=timeout_s,
                                key=f"rxlab-point-{_slug(point)}-{os.urandom(4).hex()}")
            futures[fut] = point
        bar = tqdm(total=len(futures), desc=f"sweep {path.stem} on {scheduler}", unit="point",
                   disable=not progress)
        for fut in as_completed(futures):
            point = futures[fut]
            d = point_dir(sdir, point)
            d.mkdir(parents=True, exist_ok=True)
            try:
                st = fut.result()
            except Exception as e:  # KilledWorker: the point's workers died; nothing of it was recorded
                st = {"point": _slug(point), "notebook": path.stem, "parameters": dict(point), "status": "failed",
                      "seconds": 0.0, "output": "", "runs": [], "figures": [], "host_id": "",
                      "error": f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}"}
            blob = st.pop("runs_tar", None)
            if blob is not None:
                st["runs"] = _unpack(blob, root)
            nb = st.pop("notebook_ipynb", b"")
            if nb:
                (d / "notebook.ipynb").write_bytes(nb)
                st["output"] = str(d / "notebook.ipynb")
            st["host"] = st.get("host_id", "")
            _write_status(d, st)
            statuses[_slug(point)] = st
            bar.update(1)
            bar.set_postfix_str(f"{st['status']} on {st['host'] or '?'}")
            summary([statuses[_slug(p)] for p in points if _slug(p) in statuses]).to_csv(
                sdir / "summary.csv", index=False)
        bar.close()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    df = summary([statuses[_slug(p)] for p in points])
    df.to_csv(sdir / "summary.csv", index=False)
    return df


def worker_command(scheduler: str | None, host_id: str | None = None, scheduler_file: str | None = None,
                   extra: Sequence[str] = ()) -> tuple[list[str], dict]:
    """The `dask worker` command line and environment for one host's single worker."""
    if bool(scheduler) == bool(scheduler_file):
        raise ValueError("give exactly one of: the scheduler's address (tcp://HOST:PORT), --scheduler-file FILE")
    dask = shutil.which("dask", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    if dask is None:
        raise RuntimeError("dask is not installed: pip install 'rxlab[dist]'")
    hid = host_id or sysinfo.host_id()
    cmd = [dask, "worker", *([scheduler] if scheduler else ["--scheduler-file", str(scheduler_file)]),
           "--nworkers", "1", "--nthreads", "1", "--resources", f"{RESOURCE}=1", "--name", hid,
           "--no-dashboard", *extra]
    return cmd, {**os.environ, "RXLAB_HOST_ID": hid}


def _stop_with_parent() -> None:
    """In the worker's child, before exec: the kernel sends it SIGTERM when rxlab worker dies, even by
    SIGKILL (Linux's PR_SET_PDEATHSIG), so no `dask worker` is left connected to the scheduler."""
    import ctypes  # noqa: PLC0415 - Linux only, in the child

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


def run_worker(cmd: Sequence[str], env: Mapping[str, str], grace_s: float = 30) -> int:
    """Run `dask worker` until it exits; SIGTERM and SIGINT to rxlab stop it (Dask closes the worker
    and leaves the scheduler), SIGKILL after `grace_s` if it has not exited by then. Both are passed
    on as SIGTERM: dask worker treats the two alike once it runs, and a dask worker still importing
    its modules dies quietly on SIGTERM, where SIGINT prints a KeyboardInterrupt traceback.

    Returns its exit code, or 128 + the signal's number when a signal stopped rxlab worker."""
    # its own session: a terminal's Ctrl-C reaches rxlab worker alone, which passes it on once
    proc = subprocess.Popen(list(cmd), env=dict(env), start_new_session=True,
                            preexec_fn=_stop_with_parent)  # noqa: PLW1509 - no threads started yet
    got: list[tuple[int, float]] = []

    def forward(signum, _frame):
        got.append((signum, time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)

    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while True:
            try:
                code = proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if got and time.monotonic() - got[0][1] > grace_s:
                    proc.kill()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if proc.poll() is None:  # an exception here: never leave the child behind
            proc.kill()
            proc.wait()
    if got:
        sig = got[0][0]
        print(f"rxlab worker: stopped by {signal.Signals(sig).name}; its dask worker (pid {proc.pid}) "
              f"exited with {code}", file=sys.stderr)
        return 128 + sig
    return code


def _child(argv: Sequence[str]) -> int:
    """`python -m rxlab.runs.distributed --point JSON`: run one point here (the worker's child process)."""

    args = json.loads(argv[1])
    run_point(args["notebook"], args["point"], args["sweep_dir"], runs_root=args["runs_root"],
              timeout_s=args["timeout_s"], host=sysinfo.host_id())
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--point":
        sys.exit(_child(sys.argv[1:]))
    print("usage: python -m rxlab.runs.distributed --point JSON (used by sweep workers)", file=sys.stderr)
    sys.exit(2)


# --------------------------------------------------------------------------- comparing hosts

def host_table(cat: pd.DataFrame, step: str, metric: str = "qps", by: str = "backend") -> pd.DataFrame:
    """One step's metric (a column of rxlab.core.metrics.seed_columns) per host and `by`: median, min, max, n.

    `cat` is a catalog (rxlab.core.store.catalog) holding runs of several hosts,
    as a distributed sweep leaves them; each host is described by its
    fingerprint (cpu_model, cores, kernel) so the table says what it compares.
    """

    rows = cat[cat["name"] == step]
    if rows.empty:
        raise ValueError(f"step={step!r}: not in these runs; they have {', '.join(sorted(cat['name'].unique()))}")
    values = metrics.seed_columns(rows)
    if metric not in values:
        raise ValueError(f"metric={metric!r}: allowed are {', '.join(c for c in values.columns if c != 'test')}")
    df = rows[["host", by, "cpu_model", "cores", "kernel"]].assign(value=values[metric])
    out = (df.groupby(["host", by], dropna=False)
             .agg(median=("value", "median"), min=("value", "min"), max=("value", "max"), n=("value", "size"),
                  cpu_model=("cpu_model", "first"), cores=("cores", "first"), kernel=("kernel", "first"))
             .reset_index())
    return out.rename(columns={"median": metric})


def fig_hosts(table: pd.DataFrame, metric: str = "qps", by: str = "backend"):
    """Bars per `by`, one group per host (as the toolchain post lays out its small / Arm / big servers);
    whiskers span the repetitions."""


    fig, ax = figures.figure()
    hosts = list(dict.fromkeys(table["host"]))
    keys = list(dict.fromkeys(table[by]))
    width = 0.8 / max(1, len(keys))
    for j, k in enumerate(keys):
        sub = table[table[by] == k].set_index("host").reindex(hosts)
        x = np.arange(len(hosts)) + (j - (len(keys) - 1) / 2) * width
        err = np.vstack([sub[metric] - sub["min"], sub["max"] - sub[metric]])
        ax.bar(x, sub[metric], width, yerr=err, capsize=2, label=str(k),
               color=figures.backend_color(str(k)) if by == "backend" else None)
    labels = [f"{h}\n{int(c)} cores" if pd.notna(c) else h
              for h, c in zip(hosts, table.groupby("host", sort=False)["cores"].first().reindex(hosts))]
    ax.set_xticks(range(len(hosts)), labels)
    ax.set_ylabel(metric)
    ax.legend(ncol=min(4, len(keys)))
    return fig
