"""Real db_bench: its flags, its output (result lines, histograms, statistics) as step rows, and the
rxlab plugin that gives a stock db_bench rxlab's engines."""
from __future__ import annotations

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

import rxlab
from rxlab.bench.sampler import Sampler, background, device_of, disk_columns
from rxlab.core import sysinfo
from rxlab.core.builds import active_build
from rxlab.core.metrics import PERCENTILES, percentile_column

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


def flag_list(flags) -> list[str]:
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
                                "`make rocksdb`")
    args = flag_list(flags)
    db = _flag_value(args, "db") or f"/tmp/rocksdbtest-{os.getuid()}/dbbench"
    dev = device_of(db)
    cmd = [str(db_bench), *args]
    if shutil.which("stdbuf"):
        cmd = ["stdbuf", "-oL", *cmd]  # db_bench flushes after each result; this covers the rest
    full_env = {**os.environ, **(env or {})}
    lines: list[tuple[float, str]] = []
    ru0 = sysinfo.rusage()
    with tempfile.TemporaryFile("w+") as err:
        sampler = Sampler(dev.disk, interval=sample_interval)
        sampler.start()
        bg = background(sampler, background_s)
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
                bg.update(background(sampler, background_s, "bg_after"))
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
        row.update(disk_columns(w if dev.disk else None))
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

    here = Path(rxlab._core.__file__).resolve().parent
    for cand in [here / "librxlab_plugin.so", *sorted((here.parent / "build").glob("*/librxlab_plugin.so"))]:
        if cand.is_file():
            return cand
    raise FileNotFoundError("librxlab_plugin.so not found next to rxlab/_core: run `make ext`")
