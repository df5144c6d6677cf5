"""Real fio: its command line, its JSON output as step rows with the device's counters over fio's window."""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from rxlab.bench.sampler import Sampler, background, device_of, disk_columns
from rxlab.core import sysinfo
from rxlab.core.metrics import PERCENTILES, percentile_column

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
    dev = device_of(filename)
    with tempfile.TemporaryDirectory(prefix="rxlab-fio-") as td:
        out = Path(json_out) if json_out is not None else Path(td) / "fio.json"
        cmd = fio_command(filename, rw, bs, size, direct, ioengine, iodepth, numjobs, runtime, ramp_time,
                          extra, name=name, time_based=time_based, output=out, fio=fio)
        ru0 = sysinfo.rusage()
        with Sampler(dev.disk, interval=sample_interval) as sampler:
            bg = background(sampler, background_s)
            t_start = time.time()
            r = subprocess.run(cmd, capture_output=True, text=True, check=False)
            t_end = time.time()
            bg.update(background(sampler, background_s, "bg_after"))
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
            row.update(disk_columns(window if dev.disk else None))
            row["window_end_source"] = "device activity" if active_end is not None else "fio timestamp"
            row["proc_cpu_user_s"] = ru["children_user_s"]
            row["proc_cpu_sys_s"] = ru["children_sys_s"]
            row["proc_wall_s"] = t_end - t_start
            row["timeseries"] = sampler.timeseries(w_start, w_end)
        else:
            row.update(disk_columns(None))
    return rows
