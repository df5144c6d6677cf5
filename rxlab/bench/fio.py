"""rxlab's fio: the raw-IO baseline through rxlab's own engines.

Random (or sequential) reads or writes of `bs` bytes over a file, O_DIRECT by
default, `numjobs` threads each keeping `iodepth` requests in flight, for
`runtime` seconds after `ramp_time`. It is measured the way RocksDB steps
are (latency histogram, per-thread CPU, the device's /proc/diskstats), and
it is the denominator of io.eff. fio's engine names are accepted and do what
fio's do: sync is lseek + read (rxlab's sync engine), psync is pread (posix),
libaio and io_uring are ours.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

import rxlab
from rxlab.bench.irq import IrqWindow
from rxlab.core import metrics, sysinfo
from rxlab.core.cpus import CPUS_ALLOWED_POLICIES, affinity, parse_cpus
from rxlab.core.store import RunWriter
from rxlab.core.units import parse_size

__all__ = ["CPUS_ALLOWED_POLICIES", "ENGINES", "RW", "affinity", "engine_uri", "layout", "parse_cpus",
           "parse_size", "run", "run_stored", "scratch_file", "store_rows"]

ENGINES = {"sync": "sync", "psync": "posix", "posix": "posix", "libaio": "libaio", "io_uring": "io_uring"}
RW = ("randread", "read", "randwrite", "write")


@contextlib.contextmanager
def scratch_file(directory=None, name: str = "rawio"):
    """A file path for one measurement, `<name>-<pid>.data` in `directory` (created if needed;
    default: a new temporary directory); the file, and a temporary directory, are removed after."""

    temp = directory is None
    work = Path(tempfile.mkdtemp(prefix=f"rxlab-{name}-")) if temp else Path(directory)
    work.mkdir(parents=True, exist_ok=True)
    f = work / f"{name}-{os.getpid()}.data"
    try:
        yield f
    finally:
        f.unlink(missing_ok=True)
        if temp:
            shutil.rmtree(work, ignore_errors=True)


def layout(filename: str | os.PathLike, size: int, quiet: bool = True) -> bool:
    """Create or extend `filename` to `size` bytes of real (non-sparse) data.

    Reads of a sparse hole never reach the device, so the file is written.
    Returns True if it wrote anything.
    """
    p = Path(filename)
    have = p.stat().st_size if p.exists() else 0
    if have >= size:
        return False
    chunk = os.urandom(1 << 20)
    with open(p, "ab") as f:
        while have < size:
            n = min(len(chunk), size - have)
            f.write(chunk[:n])
            have += n
        f.flush()
        os.fsync(f.fileno())
    return True


def engine_uri(ioengine: str, options: str = "") -> str:
    if ioengine not in ENGINES:
        raise ValueError(f"ioengine={ioengine!r}: allowed are {', '.join(ENGINES)}")
    base = ENGINES[ioengine]
    return f"{base}?{options}" if options else base


def run(filename, rw: str = "randread", bs="8k", size="2g", direct: bool = True, ioengine: str = "sync",
        iodepth: int = 1, numjobs: int = 1, runtime: float = 10, ramp_time: float = 1,
        engine_options: str = "", seed: int = 1, iodepth_batch_submit: int = 1,
        iodepth_batch_complete_max: int = 1, thinktime: float = 0, thinktime_spin: float = 0,
        cpus_allowed_policy: str = "shared", cpus_allowed: str | None = None,
        blockalign=None) -> list[dict]:
    """Run the raw-IO benchmark; one row per job plus a total row (job='total').

    ``blockalign`` is fio's: random offsets are multiples of it (default: bs).
    bs=8704 with blockalign=512 reads the way RocksDB does without
    block_align, a block a little over 8 KiB that starts anywhere in a page.

    ``iodepth_batch_submit`` and ``iodepth_batch_complete_max`` mean what
    they mean in fio and default to fio's defaults (1 and 1): each IO is
    submitted as it is queued, and each wait reaps one completion, so its
    slot is refilled at once and the queue stays at iodepth.
    ``thinktime`` and ``thinktime_spin`` (us) are fio's too: before each IO
    after the first a job spins for thinktime_spin and sleeps the rest of
    thinktime. The spin is CPU work without IO (it is in cpuPer, not in the
    IO latency): it sets how busy each client keeps its CPU.
    ``cpus_allowed_policy`` is fio's: "shared" leaves the jobs to the
    scheduler, "split" pins job i to the i-th CPU the jobs may use.
    ``cpus_allowed`` (fio's, e.g. "1" or "0,2-3") is the set the jobs may use
    (default: this thread's own affinity).
    """


    if rw not in RW:
        raise ValueError(f"rw={rw!r}: allowed are {', '.join(RW)}")
    bs_b, size_b = parse_size(bs), parse_size(size)
    uri = engine_uri(ioengine, engine_options)
    rxlab._core.parse_uri(uri)
    if runtime <= 0:
        raise ValueError(f"runtime={runtime}: must be > 0 seconds")
    if ramp_time < 0:
        raise ValueError(f"ramp_time={ramp_time}: must be >= 0 seconds")
    # The C++ side checks these too, but only after the file is laid out (2 GiB by default).
    if bs_b < 512 or bs_b > 64 << 20 or (direct and bs_b % 512):
        raise ValueError(f"bs={bs_b}: must be 512 B..64 MiB, a multiple of 512 with direct=1")
    try:
        align_b = bs_b if blockalign is None else parse_size(blockalign)
    except ValueError:
        align_b = -1
    if align_b < 512 or align_b > bs_b or align_b % 512:
        raise ValueError(f"blockalign={blockalign}: must be a multiple of 512 B, at most bs ({bs_b})")
    if not 1 <= int(iodepth) <= 4096:
        raise ValueError(f"iodepth={iodepth}: must be 1..4096")
    if not 1 <= int(numjobs) <= 256:
        raise ValueError(f"numjobs={numjobs}: must be 1..256")
    for name, v in (("iodepth_batch_submit", iodepth_batch_submit),
                    ("iodepth_batch_complete_max", iodepth_batch_complete_max)):
        if not 1 <= int(v) <= int(iodepth):
            raise ValueError(f"{name}={v}: must be 1..iodepth ({iodepth})")
    if not 0 <= float(thinktime) <= 1e6:
        raise ValueError(f"thinktime={thinktime}: must be 0..1000000 us")
    if not 0 <= float(thinktime_spin) <= float(thinktime):
        raise ValueError(f"thinktime_spin={thinktime_spin}: must be 0..thinktime ({thinktime} us)")
    if cpus_allowed_policy not in CPUS_ALLOWED_POLICIES:
        raise ValueError(f"cpus_allowed_policy={cpus_allowed_policy!r}: allowed are "
                         f"{', '.join(CPUS_ALLOWED_POLICIES)}")
    cpus = parse_cpus(cpus_allowed) if cpus_allowed is not None else None
    if size_b < bs_b:
        raise ValueError(f"size={size_b}: smaller than bs={bs_b}")
    layout(filename, size_b)
    args = {"filename": str(filename), "engine": uri, "rw": rw, "bs": bs_b, "size": size_b,
            "direct": bool(direct), "iodepth": int(iodepth), "numjobs": int(numjobs), "seed": seed,
            "iodepth_batch_submit": int(iodepth_batch_submit),
            "iodepth_batch_complete_max": int(iodepth_batch_complete_max),
            "thinktime": float(thinktime), "thinktime_spin": float(thinktime_spin),
            "cpus_split": cpus_allowed_policy == "split", "blockalign": align_b}
    with affinity(cpus):  # the jobs' threads inherit the caller's affinity
        if ramp_time > 0:
            rxlab._core.rawio(**args, runtime=float(ramp_time))
        dev = sysinfo.device_for_path(filename)
        d0 = sysinfo.diskstats(dev.disk) if dev.disk else None
        c0 = sysinfo.proc_stat_cpu()
        irq = IrqWindow(filename)
        res = rxlab._core.rawio(**args, runtime=float(runtime))
    d1 = sysinfo.diskstats(dev.disk) if dev.disk else None
    c1 = sysinfo.proc_stat_cpu()
    name = f"fio-{ioengine}"
    common = {"name": name, "tool": "rxlab-fio", "ioengine": ioengine, "engine_uri": uri, "rw": rw,
              "bs": bs_b, "blockalign": align_b, "iodepth": iodepth, "numjobs": numjobs,
              "direct": bool(direct),
              "iodepth_batch_submit": int(iodepth_batch_submit),
              "iodepth_batch_complete_max": int(iodepth_batch_complete_max),
              "thinktime": float(thinktime), "thinktime_spin": float(thinktime_spin),
              "cpus_allowed_policy": cpus_allowed_policy,
              "cpus_allowed": ",".join(map(str, sorted(cpus))) if cpus else None}
    rows, merged = [], {}
    ncpu = max((len(j["ios_by_cpu"]) for j in res["jobs"]), default=0)
    for j, job in enumerate(res["jobs"]):
        buckets = [(lo / 1000.0, c) for lo, c in job["lat_buckets"]]
        for lo, c in buckets:
            merged[lo] = merged.get(lo, 0) + c
        rows.append({**common, "job": str(j), "ops": job["ios"], "bytes": job["bytes"],
                     "wall_s": job["seconds"], "cpu_user_s": job["cpu_user_s"],
                     "cpu_sys_s": job["cpu_sys_s"], "worker_run_delay_s": job["run_delay_s"],
                     "syscalls": job["syscalls"], "cpu": job["cpu"],
                     **irq.columns(job["ios_by_cpu"]),
                     "lat_mean_us": job["lat_sum_ns"] / max(job["lat_count"], 1) / 1000.0,
                     "max_us": job["lat_max_ns"] / 1000.0,
                     **metrics.histogram_percentiles(buckets),
                     "histograms": {"read" if "read" in rw else "write": buckets}})
    jobs = res["jobs"]
    total_lat = sum(j["lat_sum_ns"] for j in jobs) / max(sum(j["lat_count"] for j in jobs), 1) / 1000.0
    total = {**common, "job": "total", "ops": sum(j["ios"] for j in jobs),
             "bytes": sum(j["bytes"] for j in jobs), "wall_s": res["wall_s"],
             "cpu_user_s": sum(j["cpu_user_s"] for j in jobs), "cpu_sys_s": sum(j["cpu_sys_s"] for j in jobs),
             "worker_run_delay_s": (None if any(j["run_delay_s"] is None for j in jobs)
                                    else sum(j["run_delay_s"] for j in jobs)),
             "syscalls": sum(j["syscalls"] for j in jobs), "lat_mean_us": total_lat,
             **irq.columns(np.sum([np.pad(j["ios_by_cpu"], (0, ncpu - len(j["ios_by_cpu"])))
                                   for j in jobs], axis=0) if jobs else []),
             "max_us": max(j["lat_max_ns"] for j in jobs) / 1000.0,
             **metrics.histogram_percentiles(sorted(merged.items())),
             "histograms": {"read" if "read" in rw else "write": sorted(merged.items())}}
    if d0 is not None:
        dd = sysinfo.diskstats_delta(d0, d1)
        for k in ("reads", "read_sectors", "read_ticks_ms", "writes", "write_sectors", "write_ticks_ms"):
            total[f"disk_{k}"] = dd.get(k)
    for k, v in sysinfo.proc_stat_delta(c0, c1).items():
        total[f"system_cpu.{k}"] = v
    rows.append(total)
    return rows


def run_stored(root, filename, meta: dict, **kw) -> Path:
    """run() and store it as a run of its own (a study's fio baseline).

    The stored spec is `meta` (name, study labels) plus fio's options as
    given in `kw`, the engine URI as `backend` and the file; tool defaults to
    rxlab-fio. Returns the run's directory.
    """
    return store_rows(root, filename, run(filename, **kw), {"tool": "rxlab-fio", **meta}, **kw)


def store_rows(root, filename, rows: list[dict], meta: dict, **kw) -> Path:
    """Store fio rows (rxlab's or real fio's, one per job and a total) as one run.

    The spec is `meta` (tool, name, study labels) plus fio's options as given
    in `kw`, the engine URI as `backend` and the file. Returns the run's directory.
    """

    spec = {**meta, **{k: v for k, v in kw.items() if k != "engine_options"},
            "backend": engine_uri(kw.get("ioengine", "sync"), kw.get("engine_options", "")),
            "filename": str(filename)}
    with RunWriter(root, spec, sysinfo.fingerprint(filename)) as w:
        for r in rows:
            w.add_step(r)
    return w.path
