"""The system side of a reference run: the device, the CPU and the child process sampled while a real
tool runs, and the counters over the tool's own measurement window (see rxlab.bench.references)."""
from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Mapping

import numpy as np

from rxlab.core import sysinfo


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


def disk_columns(d: Mapping | None) -> dict:
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


def background(sampler: Sampler, seconds: float, prefix: str = "bg") -> dict:
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


def device_of(path: str | os.PathLike) -> sysinfo.DeviceInfo:
    return sysinfo.device_for_path(path)
