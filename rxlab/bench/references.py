"""Real fio and real db_bench, measured with rxlab's own system-side counters.

rxlab's numbers are only credible next to the tools everyone trusts, and the
comparison is only fair if both are measured the same way. So the
references run as subprocesses while a sampler thread records the device's
/proc/diskstats, /proc/stat and the child's /proc/PID/stat, and each result
is turned into step rows with the raw columns of rxlab.core.metrics: iops, reqsz
and io.lat come from the device over the tool's own measurement window, not
from the tool's claims.

Measurement windows. fio reports its statistics after ``ramp_time``, so the
device counters are taken over [end - runtime, end], with ``end`` the moment
the device's read (or write) counter last moved before fio's output
timestamp. db_bench prints a result line as each benchmark finishes, so a
benchmark's window is [line time - elapsed, line time]. Counters are
sampled every ``sample_interval`` seconds and interpolated linearly at the
window edges.

CPU. fio's usr_cpu/sys_cpu are percentages of the job's runtime, measured by
each job after the ramp (fio resets its rusage baseline when the ramp ends;
checked here against getrusage of the whole invocation), so CPU seconds =
pct / 100 * job_runtime. For db_bench the process CPU of
each benchmark comes from /proc/PID/stat samples (USER_HZ ticks, 10 ms
resolution here): use steps of a few seconds for CPU per op. The whole
invocation's CPU from getrusage(RUSAGE_CHILDREN) is kept beside it as a check.

db_bench's ``micros/op`` is thread time per op (the sum over threads of each
thread's elapsed time, divided by ops), while ``ops/sec`` is ops over wall
time: with N threads they differ by N. Both are kept
(``micros_per_op_thread``, ``qps``) and ``wall_s = ops / qps`` (the printed
seconds instead when the integer ops/sec is too coarse, e.g. compact).

Shared machines. /proc/diskstats is device-wide: another process's IO in
the window counts as the tool's. Every row records the device's activity
just before and after the tool ran (``bg_*``), and db_bench rows also carry
its own storage transfers from /proc/PID/io (``own_read_bytes``), which
nobody else can inflate.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from rxlab import _core
from rxlab.core import sysinfo
from rxlab.core.builds import active_build
from rxlab.core.metrics import PERCENTILES, percentile_column

# ------------------------------------------------------------------ sampler


class Sampler:
    """Background sampling of device, system and one process's CPU counters.

    Timestamps are wall-clock (time.time()) so they line up with fio's
    output timestamp and with the arrival time of db_bench's lines.
    """

    def __init__(self, disk: str | None, pid: int | None = None, interval: float = 0.02):
        self.disk = disk
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, dict]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        t = time.time()
        s: dict = {}
        if self.disk is not None:
            s.update({f"disk.{k}": v for k, v in sysinfo.diskstats(self.disk).items()})
        s.update({f"sys.{k}": v for k, v in sysinfo.proc_stat_cpu().items()})
        if self.pid is not None:
            p = sysinfo.proc_pid_cpu(self.pid)
            if p is not None:
                s.update({f"proc.{k}": v for k, v in p.items()})
            io = sysinfo.proc_pid_io(self.pid)
            if io is not None:
                s["proc.read_bytes"] = io.get("read_bytes", 0)
                s["proc.write_bytes"] = io.get("write_bytes", 0)
        self.samples.append((t, s))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def start(self) -> Sampler:
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="rxlab-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.sample()

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- reading
    def _all_series(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per-key (times, values), built once per new batch of samples."""
        n = len(self.samples)
        cached = getattr(self, "_cache", None)
        if cached is not None and cached[0] == n:
            return cached[1]
        cols: dict[str, tuple[list, list]] = {}
        for t, smp in self.samples[:n]:
            for k, v in smp.items():
                ts, vs = cols.setdefault(k, ([], []))
                ts.append(t)
                vs.append(v)
        out = {}
        for k, (ts, vs) in cols.items():
            v = np.asarray(vs, dtype="float64")
            if k.startswith("disk.") and k.endswith("_ms") and len(v) > 1:
                # 32-bit millisecond counters: unwrap before interpolating
                v = v + np.concatenate([[0], np.cumsum(np.diff(v) < 0)]) * 2.0**32
            out[k] = (np.asarray(ts), v)
        self._cache = (n, out)
        return out

    def _series(self, key: str) -> tuple[np.ndarray, np.ndarray]:
        return self._all_series().get(key, (np.array([]), np.array([])))

    def keys(self) -> list[str]:
        return list(self._all_series())

    def at(self, t: float) -> dict:
        """Counters interpolated at time t (NaN outside the sampled span of a key)."""
        out = {}
        for k, (ts, v) in self._all_series().items():
            if len(ts) == 0 or t < ts[0] - self.interval or t > ts[-1] + self.interval:
                out[k] = float("nan")
            else:
                out[k] = float(np.interp(t, ts, v))
        return out

    def window(self, t0: float, t1: float) -> dict:
        """Counter increases over [t0, t1]; gauges (in_flight) as the value at t1."""
        a, b = self.at(t0), self.at(t1)
        out = {}
        for k in b:
            out[k] = b[k] if k.endswith("in_flight") else b[k] - a[k]
        return out

    def last_change(self, key: str, before: float, horizon: float = 0.5) -> float | None:
        """Time of the last sample <= before+interval at which `key` increased, within horizon."""
        ts, v = self._series(key)
        idx = np.nonzero((np.diff(v) > 0) & (ts[1:] <= before + self.interval))[0] if len(ts) > 1 else []
        if len(idx) == 0:
            return None
        t = float(ts[idx[-1] + 1])
        return t if before - t <= horizon else None

    def timeseries(self, t0: float, t1: float, period: float = 1.0) -> list[dict]:
        """Per-period increases in [t0, t1], for warm-up and burst plots."""
        rows = []
        edges = [*np.arange(t0, t1, period), t1]
        for a, b in itertools.pairwise(edges):
            if b - a < period / 4 and rows:
                break
            d = self.window(a, b)
            row = {"t_s": round(float(a - t0), 6), "dt_s": float(b - a)}
            row.update({_ts_name(k): v for k, v in d.items() if _ts_name(k)})
            rows.append(row)
        return rows


_TS_KEYS = {
    "disk.reads": "disk_reads", "disk.read_sectors": "disk_read_sectors",
    "disk.read_ticks_ms": "disk_read_ticks_ms", "disk.writes": "disk_writes",
    "disk.write_sectors": "disk_write_sectors", "disk.in_flight": "disk_in_flight",
    "proc.user_s": "cpu_user_s", "proc.sys_s": "cpu_sys_s",
    "sys.user": "sys_user_s", "sys.system": "sys_system_s", "sys.iowait": "sys_iowait_s",
}


def _ts_name(k: str) -> str | None:
    return _TS_KEYS.get(k)


def _disk_columns(d: Mapping | None) -> dict:
    """Sampler window -> the raw disk_* and sys_* columns of a step row."""
    names = ("reads", "reads_merged", "read_sectors", "read_ticks_ms", "writes", "writes_merged",
             "write_sectors", "write_ticks_ms", "in_flight", "io_ticks_ms", "time_in_queue_ms")
    out: dict = {}
    for n in names:
        v = d.get(f"disk.{n}", float("nan")) if d else float("nan")
        out[f"disk_{n}"] = v
    for n in ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"):
        out[f"sys_{n}_s"] = d.get(f"sys.{n}", float("nan")) if d else float("nan")
    return out


def _background(sampler: Sampler, seconds: float, prefix: str = "bg") -> dict:
    """Device activity of everybody else during `seconds` before the tool starts.

    The device counters are device-wide: another process's IO in the window
    is counted as ours. This rate, recorded beside each row, says how much
    to trust iops/reqsz/io.lat on a shared machine (0 on a quiet one).
    """
    nan = float("nan")
    if seconds <= 0 or sampler.disk is None:
        return {f"{prefix}_s": 0.0, f"{prefix}_disk_reads_per_s": nan,
                f"{prefix}_disk_read_sectors_per_s": nan, f"{prefix}_disk_writes_per_s": nan}
    sampler.sample()
    t0 = time.time()
    time.sleep(seconds)
    t1 = time.time()
    sampler.sample()
    w = sampler.window(t0, t1)
    dt = t1 - t0
    return {f"{prefix}_s": dt, f"{prefix}_disk_reads_per_s": w["disk.reads"] / dt,
            f"{prefix}_disk_read_sectors_per_s": w["disk.read_sectors"] / dt,
            f"{prefix}_disk_writes_per_s": w["disk.writes"] / dt}


def _device(path: str | os.PathLike) -> sysinfo.DeviceInfo:
    return sysinfo.device_for_path(path)


# ------------------------------------------------------------------ fio

FIO_PLAT_BITS = 6  # fio's histogram: 64 linear buckets per power of two (stat.h)


def fio_bin_upper_ns(v: int) -> int:
    """Upper edge (ns) of the fio json+ bin whose representative value is v.

    fio's plat_idx_to_val returns the middle of a bucket: exact values below
    128 ns, then buckets 2**(msb-6) wide.
    """
    if v < (1 << (FIO_PLAT_BITS + 1)):
        return v + 1
    error_bits = v.bit_length() - 1 - FIO_PLAT_BITS
    base = 1 << (error_bits + FIO_PLAT_BITS)
    k = (v - base) >> error_bits
    return base + ((k + 1) << error_bits)


def fio_percentiles(bins: Mapping[int, int], percentiles=PERCENTILES) -> dict[float, float]:
    """Percentiles (ns) from json+ bins exactly as fio computes them (calc_clat_percentiles).

    The first bin whose cumulative count reaches p/100 * N gives its
    representative value. Summing jobs' bins gives the combined percentiles
    that fio itself prints with group_reporting.
    """
    items = sorted((int(k), int(c)) for k, c in bins.items())
    n = sum(c for _, c in items)
    out = {p: float("nan") for p in percentiles}
    if n == 0:
        return out
    cum, j, ps = 0, 0, sorted(percentiles)
    for v, c in items:
        cum += c
        while j < len(ps) and cum >= ps[j] / 100.0 * n:
            out[ps[j]] = float(v)
            j += 1
        if j == len(ps):
            break
    return out


def _fio_hist(bins: Mapping) -> list[tuple[float, int]]:
    items = sorted((int(v), int(c)) for v, c in bins.items())
    return [(fio_bin_upper_ns(v) / 1000.0, c) for v, c in items]


def _ddir(job: dict, rw: str | None) -> str:
    if rw is not None:
        return "write" if ("write" in rw and "read" not in rw) or rw in ("trim", "randtrim") else "read"
    return "read" if job["read"]["total_ios"] or not job["write"]["total_ios"] else "write"


def parse_fio_json(text: str, rw: str | None = None) -> list[dict]:
    """fio --output-format=json (or json+) -> one row per job plus a 'total' row.

    Rows carry the measured data direction's numbers (reads for randread):
    ops = IOs completed after the ramp, wall_s = the job's runtime, fio's
    own iops, latency mean (lat_ns: submission to completion) and clat
    percentiles in microseconds, and CPU seconds from usr_cpu/sys_cpu. The
    total row sums ops, iops and CPU, takes the longest runtime and weights
    the latency mean by ops; its percentiles come from the summed json+
    bins when fio printed them (NaN otherwise, unless there is one job).
    Device columns are not in here: they are the caller's measurement.
    """
    # fio may print notes before the JSON object on the same stream
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in fio output: " + text[:200])
    d = json.loads(text[start:])
    jobs = d.get("jobs") or []
    if not jobs:
        raise ValueError("fio JSON has no jobs")
    rows, all_bins = [], {}
    have_bins = True
    for i, job in enumerate(jobs):
        dd = _ddir(job, rw)
        s = job[dd]
        ops = int(s["total_ios"])
        runtime_ms = int(s.get("runtime") or job.get("job_runtime") or 0)
        job_rt_ms = int(job.get("job_runtime") or runtime_ms)
        clat = s.get("clat_ns") or {}
        lat = s.get("lat_ns") or {}
        row = {
            "name": job.get("jobname", "fio"), "job": str(i), "source": "fio", "ddir": dd,
            "ops": ops, "wall_s": runtime_ms / 1000.0,
            "fio_iops": float(s["iops"]), "fio_bw_kib_s": float(s.get("bw", float("nan"))),
            "io_bytes": int(s.get("io_bytes", 0)),
            "lat_mean_us": float(lat.get("mean", float("nan"))) / 1000.0,
            "clat_mean_us": float(clat.get("mean", float("nan"))) / 1000.0,
            "slat_mean_us": float((s.get("slat_ns") or {}).get("mean", float("nan"))) / 1000.0,
            "lat_stddev_us": float(lat.get("stddev", float("nan"))) / 1000.0,
            "min_us": float(clat.get("min", float("nan"))) / 1000.0,
            "max_us": float(clat.get("max", float("nan"))) / 1000.0,
            "cpu_user_s": float(job["usr_cpu"]) / 100.0 * job_rt_ms / 1000.0,
            "cpu_sys_s": float(job["sys_cpu"]) / 100.0 * job_rt_ms / 1000.0,
            "fio_usr_cpu_pct": float(job["usr_cpu"]), "fio_sys_cpu_pct": float(job["sys_cpu"]),
            "job_runtime_s": job_rt_ms / 1000.0,
            "ctx": int(job.get("ctx", 0)), "majf": int(job.get("majf", 0)), "minf": int(job.get("minf", 0)),
            "error": int(job.get("error", 0)),
        }
        pct = clat.get("percentile") or {}
        for p in PERCENTILES:
            key = f"{p:.6f}"
            row[percentile_column(p)] = float(pct[key]) / 1000.0 if key in pct else float("nan")
        bins = clat.get("bins")
        if bins:
            row["histograms"] = {dd: _fio_hist(bins)}
            for k, c in bins.items():
                all_bins[int(k)] = all_bins.get(int(k), 0) + int(c)
        else:
            have_bins = False
        rows.append(row)
    total = _fio_total(rows, all_bins if have_bins else None)
    total["fio_timestamp_ms"] = d.get("timestamp_ms")
    for r in rows:
        r["fio_timestamp_ms"] = d.get("timestamp_ms")
    return [*rows, total]


def _fio_total(rows: list[dict], bins: dict | None) -> dict:
    ops = sum(r["ops"] for r in rows)
    total = {
        "name": rows[0]["name"] if len({r["name"] for r in rows}) == 1 else "fio", "job": "total",
        "source": "fio", "ddir": rows[0]["ddir"], "ops": ops,
        "wall_s": max(r["wall_s"] for r in rows),
        "fio_iops": sum(r["fio_iops"] for r in rows),
        "fio_bw_kib_s": sum(r["fio_bw_kib_s"] for r in rows),
        "io_bytes": sum(r["io_bytes"] for r in rows),
        "lat_mean_us": (sum(r["lat_mean_us"] * r["ops"] for r in rows) / ops) if ops else float("nan"),
        "clat_mean_us": (sum(r["clat_mean_us"] * r["ops"] for r in rows) / ops) if ops else float("nan"),
        "slat_mean_us": (sum(r["slat_mean_us"] * r["ops"] for r in rows) / ops) if ops else float("nan"),
        "min_us": min(r["min_us"] for r in rows), "max_us": max(r["max_us"] for r in rows),
        "cpu_user_s": sum(r["cpu_user_s"] for r in rows), "cpu_sys_s": sum(r["cpu_sys_s"] for r in rows),
        "job_runtime_s": max(r["job_runtime_s"] for r in rows),
        "ctx": sum(r["ctx"] for r in rows), "majf": sum(r["majf"] for r in rows),
        "minf": sum(r["minf"] for r in rows), "error": max(r["error"] for r in rows),
        "numjobs": len(rows),
    }
    if bins is not None:
        pv = fio_percentiles(bins)
        for p in PERCENTILES:
            total[percentile_column(p)] = pv[p] / 1000.0
        total["histograms"] = {total["ddir"]: _fio_hist(bins)}
    else:
        for p in PERCENTILES:
            col = percentile_column(p)
            total[col] = rows[0][col] if len(rows) == 1 else float("nan")
    return total


def _size_bytes(size: str | int) -> int:
    if isinstance(size, int):
        return size
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*", str(size).lower())
    if not m:
        raise ValueError(f"size {size!r}: expected a number with an optional k/m/g/t suffix")
    mult = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[m.group(2)]
    return int(float(m.group(1)) * mult)


def _opts(extra) -> list[str]:
    if extra is None:
        return []
    if isinstance(extra, Mapping):
        return [f"--{k}={v}" if v is not None else f"--{k}" for k, v in extra.items()]
    if isinstance(extra, str):
        return shlex.split(extra)
    return [str(x) for x in extra]


def layout_file(filename: str | os.PathLike, size: str | int, fio: str = "fio") -> bool:
    """Write the file fully (O_DIRECT, 1 MiB writes) unless it already has `size` bytes.

    Done as its own fio invocation so that the layout's writes and the
    writeback they trigger stay out of the measured run, and with real data:
    reads of unwritten extents never reach the device.
    """
    nbytes = _size_bytes(size)
    p = Path(filename)
    if p.exists() and p.stat().st_size >= nbytes and p.stat().st_blocks * 512 >= nbytes:
        return False
    p.parent.mkdir(parents=True, exist_ok=True)
    cmd = [fio, "--name=layout", f"--filename={p}", f"--size={nbytes}", "--rw=write", "--bs=1m",
           "--direct=1", "--ioengine=sync", "--end_fsync=1", "--output-format=json"]
    r = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"fio layout of {p} failed (exit {r.returncode}): {r.stderr.strip()[-500:]}")
    return True


def fio_command(filename, rw="randread", bs="8k", size="2g", direct=1, ioengine="sync", iodepth=1,
                numjobs=1, runtime=10, ramp_time=1, extra=None, *, name=None, time_based=True,
                output=None, fio="fio") -> list[str]:
    cmd = [fio, f"--name={name or rw}", f"--filename={filename}", f"--rw={rw}", f"--bs={bs}",
           f"--size={size}", f"--direct={int(direct)}", f"--ioengine={ioengine}",
           f"--iodepth={iodepth}", f"--numjobs={numjobs}", f"--runtime={runtime}",
           f"--ramp_time={ramp_time}", "--group_reporting=0", "--output-format=json+",
           "--percentile_list=" + ":".join(f"{p:g}" for p in PERCENTILES)]
    if time_based:
        cmd.append("--time_based=1")
    if output is not None:
        cmd.append(f"--output={output}")
    return cmd + _opts(extra)


def run_fio(filename, rw="randread", bs="8k", size="2g", direct=1, ioengine="sync", iodepth=1,
            numjobs=1, runtime=10, ramp_time=1, extra=None, *, name=None, time_based=True,
            layout=True, json_out=None, sample_interval=0.02, background_s=0.3,
            fio="fio") -> list[dict]:
    """Run real fio and return its rows (one per job, then 'total') in the step schema.

    The total row carries the device counters of the file's disk over the
    measured window (per-job rows cannot: the device is shared) and the
    whole invocation's CPU from getrusage of the children. ``json_out``
    keeps fio's raw JSON (to attach to a run). Every row records the
    device's background activity in the ``background_s`` before fio started
    and after it ended (``bg_disk_*_per_s``, ``bg_after_disk_*_per_s``): the
    device counters are device-wide, so another process's IO during the
    window would be counted as fio's.
    """
    if shutil.which(fio) is None:
        raise FileNotFoundError(f"fio not found ({fio}): apt-get install fio")
    if layout and "read" in rw:
        layout_file(filename, size, fio=fio)
    dev = _device(filename)
    with tempfile.TemporaryDirectory(prefix="rxlab-fio-") as td:
        out = Path(json_out) if json_out is not None else Path(td) / "fio.json"
        cmd = fio_command(filename, rw, bs, size, direct, ioengine, iodepth, numjobs, runtime, ramp_time,
                          extra, name=name, time_based=time_based, output=out, fio=fio)
        ru0 = sysinfo.rusage()
        with Sampler(dev.disk, interval=sample_interval) as sampler:
            bg = _background(sampler, background_s)
            t_start = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            t_end = time.time()
            bg.update(_background(sampler, background_s, "bg_after"))
        ru = sysinfo.rusage_delta(ru0, sysinfo.rusage())
        if r.returncode != 0:
            raise RuntimeError(f"fio failed (exit {r.returncode}): {shlex.join(cmd)}\n"
                               f"{r.stderr.strip()[-2000:]}")
        text = out.read_text()
    rows = parse_fio_json(text, rw)
    total = rows[-1]
    # The window: fio's stats cover `runtime` ending when the last job stopped.
    t_hint = (total.get("fio_timestamp_ms") or t_end * 1000) / 1000.0
    key = "disk.reads" if total["ddir"] == "read" else "disk.writes"
    active_end = sampler.last_change(key, t_hint) if dev.disk else None
    w_end = active_end if active_end is not None else t_hint
    w_start = w_end - total["wall_s"]
    window = sampler.window(w_start, w_end)
    config = {"engine": ioengine, "rw": rw, "bs": bs, "bs_bytes": _size_bytes(bs), "size": str(size),
              "iodepth": iodepth, "numjobs": numjobs, "direct": int(direct), "runtime_s": runtime,
              "ramp_s": ramp_time, "filename": str(filename), "device": dev.disk,
              "command": shlex.join(cmd)}
    for row in rows:
        row.update(config)
        row.update(bg)
        if row is total:
            row.update(_disk_columns(window if dev.disk else None))
            row["window_end_source"] = "device activity" if active_end is not None else "fio timestamp"
            row["proc_cpu_user_s"] = ru["children_user_s"]
            row["proc_cpu_sys_s"] = ru["children_sys_s"]
            row["proc_wall_s"] = t_end - t_start
            row["timeseries"] = sampler.timeseries(w_start, w_end)
        else:
            row.update(_disk_columns(None))
    return rows


# ------------------------------------------------------------------ db_bench

_RESULT_RE = re.compile(
    r"^(?P<name>\S+)\s*:\s*(?P<micros>[\d.]+|nan|inf|-nan) micros/op (?P<qps>\d+) ops/sec "
    r"(?P<secs>[\d.]+) seconds (?P<ops>\d+) operations;\s*(?P<extra>.*)$")
_HIST_HDR_RE = re.compile(r"^Microseconds per (?P<op>\w+):\s*$")
_COUNT_RE = re.compile(r"^Count: (?P<count>\d+) Average: (?P<avg>[\d.]+)\s+StdDev: (?P<sd>[\d.]+)")
_MINMAX_RE = re.compile(r"^Min: (?P<min>\d+)\s+Median: (?P<med>[\d.]+)\s+Max: (?P<max>\d+)")
_PCT_RE = re.compile(r"P(?P<p>[\d.]+): (?P<v>[\d.]+)")
_BUCKET_RE = re.compile(r"^[\[(]\s*(?P<lo>\d+),\s*(?P<hi>\d+)\s*\]\s+(?P<count>\d+)\s")
_TICKER_RE = re.compile(r"^(?P<name>rocksdb\.[\w.\-]+) COUNT : (?P<count>\d+)\s*$")
_HSTAT_RE = re.compile(r"^(?P<name>rocksdb\.[\w.\-]+) (?P<rest>P50 : .*)$")
_FOUND_RE = re.compile(r"\((?P<found>\d+) of (?P<of>\d+) found\)")
_MBS_RE = re.compile(r"(?P<mbs>[\d.]+) MB/s")
_VERSION_RE = re.compile(r"^RocksDB:\s+version (?P<v>\S+)")


def parse_db_bench(text: str) -> list[dict]:
    """db_bench stdout -> one row per benchmark result line.

    Each row: name, ops, qps (ops/sec, wall clock), micros_per_op_thread
    (db_bench's micros/op: thread time per op), db_bench_seconds (elapsed,
    printed to 1 ms), wall_s = ops / qps (or the printed seconds when the
    integer ops/sec is the coarser of the two: ``wall_s_from``), found /
    found_of, mb_per_s, and
    with --histogram=1 the latency histogram of each op type (``histograms``)
    with count, mean, stddev, min, max and P50..P99.99 (columns
    ``p50_us``... for the op with the most samples, ``<op>.p50_us``... for
    each). lat_mean_us is the histogram's mean, else micros/op.

    --statistics is printed once, at the end of the whole invocation, with
    counters accumulated over every benchmark run in it. Its tickers
    (``rocksdb.*`` columns) and histogram summaries (``rocksdb.*.p50`` ...
    ``.count``, ``.sum``) go on the last row, with ``statistics_scope``
    'step' when the invocation had one result and 'invocation' otherwise.
    """
    rows: list[dict] = []
    version = None
    hist_op = None
    stats: dict = {}
    in_stats = False
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _VERSION_RE.match(line)
        if m:
            version = m.group("v")
            continue
        m = _RESULT_RE.match(line)
        if m:
            hist_op = None
            in_stats = False
            ops, qps, secs = int(m.group("ops")), int(m.group("qps")), float(m.group("secs"))
            extra = m.group("extra").strip()
            # ops/sec is printed truncated to an integer, seconds to 1 ms: take
            # ops / qps unless the truncation costs more than the rounding
            # (slow single-op steps such as compact: "0 ops/sec")
            by_qps = qps > 0 and (secs == 0 or 1 / qps <= 0.0005 / secs)
            row = {"name": m.group("name"), "source": "db_bench", "ops": ops, "qps": qps,
                   "micros_per_op_thread": float(m.group("micros")),
                   "db_bench_seconds": secs,
                   "wall_s": ops / qps if by_qps else secs,
                   "wall_s_from": "ops/qps" if by_qps else "seconds",
                   "message": extra}
            fm = _FOUND_RE.search(extra)
            if fm:
                row["found"], row["found_of"] = int(fm.group("found")), int(fm.group("of"))
            mm = _MBS_RE.search(extra)
            if mm:
                row["mb_per_s"] = float(mm.group("mbs"))
            row["histograms"] = {}
            row["_hstats"] = {}
            rows.append(row)
            continue
        if line.startswith("STATISTICS:"):
            in_stats = True
            hist_op = None
            continue
        if in_stats:
            m = _TICKER_RE.match(line)
            if m:
                stats[m.group("name")] = int(m.group("count"))
                continue
            m = _HSTAT_RE.match(line)
            if m:
                parts = re.findall(r"(P\d+|COUNT|SUM) : ([\d.]+)", m.group("rest"))
                for k, v in parts:
                    stats[f"{m.group('name')}.{k.lower()}"] = float(v) if k.startswith("P") else int(float(v))
                continue
        m = _HIST_HDR_RE.match(line)
        if m and rows:
            hist_op = m.group("op")
            rows[-1]["histograms"][hist_op] = []
            rows[-1]["_hstats"][hist_op] = {}
            continue
        if hist_op is not None and rows:
            hs = rows[-1]["_hstats"][hist_op]
            if (m := _COUNT_RE.match(line)):
                hs.update(count=int(m.group("count")), mean_us=float(m.group("avg")),
                          stddev_us=float(m.group("sd")))
            elif (m := _MINMAX_RE.match(line)):
                hs.update(min_us=float(m.group("min")), median_us=float(m.group("med")),
                          max_us=float(m.group("max")))
            elif line.startswith("Percentiles:"):
                for pm in _PCT_RE.finditer(line):
                    hs[percentile_column(float(pm.group("p")))] = float(pm.group("v"))
            elif (m := _BUCKET_RE.match(line)):
                rows[-1]["histograms"][hist_op].append((float(m.group("hi")), int(m.group("count"))))
    for row in rows:
        hstats = row.pop("_hstats")
        row["rocksdb_version"] = version
        main = max(hstats, key=lambda op: hstats[op].get("count", 0)) if hstats else None
        for op, hs in hstats.items():
            for k, v in hs.items():
                row[f"{op}.{k}"] = v
        if main is not None:
            hs = hstats[main]
            row["hist_op"] = main
            row["lat_mean_us"] = hs.get("mean_us", row["micros_per_op_thread"])
            for p in PERCENTILES:
                row[percentile_column(p)] = hs.get(percentile_column(p), float("nan"))
            row["max_us"] = hs.get("max_us", float("nan"))
        else:
            row["lat_mean_us"] = row["micros_per_op_thread"]
        if not row["histograms"]:
            del row["histograms"]
    if rows and stats:
        rows[-1].update(stats)
        rows[-1]["statistics_scope"] = "step" if len(rows) == 1 else "invocation"
    return rows


def db_bench_path() -> Path:
    """The release db_bench of the active RocksDB build."""
    return active_build() / "bin" / "db_bench"


def _flag_list(flags) -> list[str]:
    if isinstance(flags, Mapping):
        out = []
        for k, v in flags.items():
            val = ("true" if v else "false") if isinstance(v, bool) else v
            out.append(f"--{k}={val}")
        return out
    if isinstance(flags, str):
        return shlex.split(flags)
    return [str(f) for f in flags]


def _flag_value(args: Sequence[str], name: str) -> str | None:
    val = None
    for a in args:
        if a.startswith(f"--{name}="):
            val = a.split("=", 1)[1]
    return val


def run_db_bench(db_bench, flags, env=None, *, timeout: float | None = None,
                 sample_interval: float = 0.02, background_s: float = 0.3,
                 log_path=None) -> list[dict]:
    """Run db_bench with `flags` (dict or list of --flag=value) and return its rows.

    Each row gets its benchmark's own window of device counters (from the DB
    path's disk), system CPU and db_bench's process CPU, plus the whole
    invocation's CPU (``invocation.*``, getrusage of the child) as a check.
    ``log_path`` keeps the full stdout and stderr. ``bg_disk_*_per_s`` and
    ``bg_after_disk_*_per_s`` are the device's activity in the ``background_s``
    before db_bench started and after it ended; ``own_read_bytes`` and
    ``own_write_bytes`` are db_bench's own storage transfers from
    /proc/PID/io, which other processes cannot inflate.
    """
    db_bench = Path(db_bench)
    if not db_bench.is_file():
        raise FileNotFoundError(f"db_bench not found at {db_bench}: build it with "
                                "`python3 rxlab/core/builds.py build`")
    args = _flag_list(flags)
    db = _flag_value(args, "db") or f"/tmp/rocksdbtest-{os.getuid()}/dbbench"
    dev = _device(db)
    cmd = [str(db_bench), *args]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL", *cmd]  # db_bench flushes after each result; this covers the rest
    full_env = {**os.environ, **(env or {})}
    lines: list[tuple[float, str]] = []
    ru0 = sysinfo.rusage()
    with tempfile.TemporaryFile("w+") as err:
        sampler = Sampler(dev.disk, interval=sample_interval)
        sampler.start()
        bg = _background(sampler, background_s)
        t0 = time.time()
        try:
            with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                  env=full_env) as proc:
                sampler.pid = proc.pid
                assert proc.stdout is not None
                watchdog = threading.Timer(timeout, proc.kill) if timeout is not None else None
                if watchdog is not None:
                    watchdog.start()
                try:
                    for line in proc.stdout:
                        lines.append((time.time(), line))
                    rc = proc.wait()
                finally:
                    if watchdog is not None:
                        watchdog.cancel()
            if watchdog is not None and rc == -9 and time.time() - t0 >= timeout:
                raise TimeoutError(f"db_bench exceeded {timeout} s and was killed: {shlex.join(cmd)}")
            t1 = time.time()
            if rc == 0:
                bg.update(_background(sampler, background_s, "bg_after"))
        finally:
            sampler.stop()
        err.seek(0)
        stderr = err.read()
    ru = sysinfo.rusage_delta(ru0, sysinfo.rusage())
    stdout = "".join(line for _, line in lines)
    if log_path is not None:
        Path(log_path).write_text(f"$ {shlex.join(cmd)}\n{stdout}\n--- stderr\n{stderr}")
    if rc != 0:
        tail = (stderr.strip() or stdout.strip())[-2000:]
        raise RuntimeError(f"db_bench failed (exit {rc}): {shlex.join(cmd)}\n{tail}")
    rows = parse_db_bench(stdout)
    vm = re.search(r"^RocksDB:\s+version (\S+)", stderr, re.M)  # db_bench prints its header to stderr
    for row in rows:
        if row.get("rocksdb_version") is None and vm:
            row["rocksdb_version"] = vm.group(1)
    result_times = [t for t, line in lines if _RESULT_RE.match(line.rstrip())]
    for row, t_line in zip(rows, result_times, strict=True):
        w0, w1 = t_line - row["wall_s"], t_line
        w = sampler.window(w0, w1)
        row.update(_disk_columns(w if dev.disk else None))
        row["cpu_user_s"] = w.get("proc.user_s", float("nan"))
        row["cpu_sys_s"] = w.get("proc.sys_s", float("nan"))
        row["cpu_source"] = "/proc/pid/stat ticks"
        # db_bench's own storage transfers (not polluted by other processes, unlike disk_*)
        row["own_read_bytes"] = w.get("proc.read_bytes", float("nan"))
        row["own_write_bytes"] = w.get("proc.write_bytes", float("nan"))
        row.update(bg)
        row["timeseries"] = sampler.timeseries(w0, w1)
        if len(rows) == 1:  # the whole invocation's context switches: start-up adds a few hundred
            row.setdefault("vcsw", ru["children_nvcsw"])
            row.setdefault("ivcsw", ru["children_nivcsw"])
        row.update({"invocation.cpu_user_s": ru["children_user_s"],
                    "invocation.cpu_sys_s": ru["children_sys_s"], "invocation.wall_s": t1 - t0,
                    "db": db, "device": dev.disk,
                    "command": shlex.join(cmd[2:] if cmd[0] == "stdbuf" else cmd)})
    return rows


def plugin_path() -> Path:
    """The plugin library installed beside the compiled module."""

    here = Path(_core.__file__).resolve().parent
    for cand in [here / "librxlab_plugin.so", *sorted((here.parent / "build").glob("*/librxlab_plugin.so"))]:
        if cand.is_file():
            return cand
    raise FileNotFoundError("librxlab_plugin.so not found next to rxlab/_core: run `make ext`")
