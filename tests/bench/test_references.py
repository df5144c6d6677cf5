"""Real fio and real db_bench through rxlab.bench.references, on this machine's disk."""
from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from rxlab.bench import references  # noqa: E402
from rxlab.core import metrics, sysinfo  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def _frame(rows):
    return pd.DataFrame([{k: v for k, v in r.items() if k not in ("histograms", "timeseries")}
                         for r in rows])


# ---------------------------------------------------------------- parsing, known answers


def _job(name, ios, runtime_ms, usr, sys_, lat_mean_ns, bins, pct=None):
    return {"jobname": name, "job_runtime": runtime_ms, "usr_cpu": usr, "sys_cpu": sys_,
            "ctx": ios, "majf": 0, "minf": 10, "error": 0,
            "read": {"io_bytes": ios * 8192, "bw": 1.0, "iops": ios / (runtime_ms / 1000),
                     "runtime": runtime_ms, "total_ios": ios,
                     "slat_ns": {"mean": 0.0}, "lat_ns": {"mean": lat_mean_ns, "stddev": 1.0},
                     "clat_ns": {"mean": lat_mean_ns, "min": 1000, "max": 9000,
                                 "percentile": pct or {}, "bins": bins}},
            "write": {"total_ios": 0}}


def test_parse_fio_json_known_answer():
    j0 = _job("randread", 1000, 2000, 10.0, 40.0, 100_000, {"50000": 500, "150000": 500},
              {"50.000000": 50000, "99.000000": 150000})
    j1 = _job("randread", 3000, 2000, 5.0, 45.0, 60_000, {"50000": 3000})
    text = "fio: some note on stdout\n" + json.dumps({"timestamp_ms": 1_000_000, "jobs": [j0, j1]})
    rows = references.parse_fio_json(text)
    assert [r["job"] for r in rows] == ["0", "1", "total"]
    r0, _, tot = rows
    assert r0["ops"] == 1000 and r0["wall_s"] == 2.0
    assert r0["cpu_user_s"] == pytest.approx(0.2)   # 10 % of 2 s
    assert r0["cpu_sys_s"] == pytest.approx(0.8)
    assert r0["lat_mean_us"] == 100.0
    assert r0["p50_us"] == 50.0 and r0["p99_us"] == 150.0 and math.isnan(r0["p75_us"])
    assert tot["ops"] == 4000 and tot["fio_iops"] == pytest.approx(2000.0)
    assert tot["cpu_user_s"] == pytest.approx(0.3) and tot["cpu_sys_s"] == pytest.approx(1.7)
    assert tot["lat_mean_us"] == pytest.approx((1000 * 100 + 3000 * 60) / 4000)
    # percentiles of the merged bins: 3500 of 4000 at 50 us, 500 at 150 us
    assert tot["p50_us"] == 50.0 and tot["p75_us"] == 50.0 and tot["p90_us"] == 150.0
    assert sum(c for _, c in tot["histograms"]["read"]) == 4000
    assert tot["fio_timestamp_ms"] == 1_000_000


def test_fio_bins():
    for v in (1, 100, 127):
        assert references.fio_bin_upper_ns(v) == v + 1
    # 128..255 ns: width 2; a representative value sits mid-bucket
    assert references.fio_bin_upper_ns(129) == 130
    for v in (1_000, 61_184, 1_859_584, 10**9 + 7):
        up = references.fio_bin_upper_ns(v)
        width = 1 << (v.bit_length() - 1 - references.FIO_PLAT_BITS)
        assert up - width <= v < up
    assert references.fio_percentiles({}) [50.0] != references.fio_percentiles({})[50.0]  # NaN


# db_bench's own lines are longer than ours: two of them are spliced in
RR_LINE = ("readrandom   :     126.000 micros/op 15671 ops/sec 1.276 seconds 20000 operations;"
           "    1.7 MB/s (19990 of 20000 found)")
GET_HIST = ("rocksdb.db.get.micros P50 : 64.473424 P95 : 101.375122 P99 : 117.340426 "
            "P100 : 1088.000000 COUNT : 20000 SUM : 1264886")
DB_BENCH_SAMPLE = f"""\
Set seed to 1 because --seed was 0
DB path: [/tmp/x]
fillseq      :       3.627 micros/op 275630 ops/sec 0.073 seconds 20000 operations;   30.5 MB/s
Microseconds per write:
Count: 20000 Average: 3.6209  StdDev: 56.39
Min: 2  Median: 2.0000  Max: 4549
Percentiles: P50: 2.00 P75: 2.74 P99: 8.01 P99.9: 43.92 P99.99: 4400.00
------------------------------------------------------
(       1,       2 ]    10177  50.885%  50.885% ##########
(       2,       3 ]     9823  49.115% 100.000% ##########

flush memtable
DB path: [/tmp/x]
{RR_LINE}

Microseconds per read:
Count: 20000 Average: 63.8091  StdDev: 18.84
Min: 28  Median: 64.6760  Max: 1089
Percentiles: P50: 64.68 P75: 73.26 P99: 121.04 P99.9: 223.33 P99.99: 725.00
------------------------------------------------------
(      22,      34 ]       16   0.080%   0.080%
(      34,      51 ]    19984  99.920% 100.000% ###################

STATISTICS:
rocksdb.block.cache.miss COUNT : 12
rocksdb.bytes.read COUNT : 2000000
{GET_HIST}
"""


def test_db_bench_wall_time_of_a_slow_step():
    line = "compact      : 3012345.000 micros/op 0 ops/sec 3.012 seconds 1 operations;"
    (row,) = references.parse_db_bench(line)
    assert row["wall_s"] == 3.012 and row["wall_s_from"] == "seconds" and row["qps"] == 0


def test_parse_db_bench_known_answer():
    rows = references.parse_db_bench(DB_BENCH_SAMPLE)
    assert [r["name"] for r in rows] == ["fillseq", "readrandom"]
    fill, rr = rows
    assert fill["ops"] == 20000 and fill["qps"] == 275630
    assert fill["wall_s"] == pytest.approx(20000 / 275630)
    assert fill["mb_per_s"] == 30.5 and "found" not in fill
    assert fill["hist_op"] == "write" and fill["lat_mean_us"] == 3.6209
    assert fill["histograms"] == {"write": [(2.0, 10177), (3.0, 9823)]}
    # micros/op is thread time: 126 us per op at 15671 ops/s means 2 threads busy
    assert rr["micros_per_op_thread"] == 126.0 and rr["qps"] == 15671
    assert rr["micros_per_op_thread"] * rr["ops"] / 1e6 / rr["wall_s"] == pytest.approx(1.97, abs=0.01)
    assert (rr["found"], rr["found_of"]) == (19990, 20000)
    assert rr["p50_us"] == 64.68 and rr["p99.9_us"] == 223.33 and rr["p99.99_us"] == 725.0
    assert math.isnan(rr["p90_us"])  # db_bench does not print P90
    assert rr["max_us"] == 1089 and rr["read.min_us"] == 28 and rr["read.count"] == 20000
    assert sum(c for _, c in rr["histograms"]["read"]) == 20000
    # --statistics is printed once for the whole invocation
    assert "rocksdb.block.cache.miss" not in fill
    assert rr["rocksdb.block.cache.miss"] == 12 and rr["statistics_scope"] == "invocation"
    assert rr["rocksdb.db.get.micros.p50"] == pytest.approx(64.473424)
    assert rr["rocksdb.db.get.micros.count"] == 20000 and rr["rocksdb.db.get.micros.sum"] == 1264886
    derived = metrics.seed_columns(_frame(rows))
    assert derived["qps"].tolist() == pytest.approx([275630, 15671])


# ---------------------------------------------------------------- real fio


@pytest.fixture(scope="module")
def fio_file(tmp_path_factory):
    # the module's tmp dir is on the machine's disk (/tmp here), not tmpfs: check
    d = tmp_path_factory.mktemp("fio")
    dev = sysinfo.device_for_path(d)
    if dev.disk is None:
        d = REPO / "data"
    return d / "rxlab-test-fio.dat"


@pytest.fixture(scope="module")
def fio_runs(fio_file, tmp_path_factory):
    out = {}
    raw = tmp_path_factory.mktemp("fio-json") / "sync.json"
    try:
        out["sync"] = references.run_fio(fio_file, size="64m", runtime=2, ramp_time=1, ioengine="sync",
                                   iodepth=1, json_out=raw)
        out["io_uring"] = references.run_fio(fio_file, size="64m", runtime=2, ramp_time=1,
                                       ioengine="io_uring", iodepth=8)
    finally:
        fio_file.unlink(missing_ok=True)
    out["raw"] = raw.read_text()
    return out


def _check_fio_total(rows, iodepth):
    tot = rows[-1]
    assert tot["job"] == "total" and tot["iodepth"] == iodepth and tot["error"] == 0
    assert tot["ops"] > 1000
    # fio's clat samples and its IO count differ by at most the IOs in flight at the end
    assert abs(sum(c for _, c in tot["histograms"]["read"]) - tot["ops"]) <= iodepth * tot["numjobs"]
    assert tot["cpu_user_s"] > 0 and tot["cpu_sys_s"] > 0
    # fio's job CPU (after the ramp) is part of the whole invocation's CPU
    assert tot["cpu_user_s"] + tot["cpu_sys_s"] < tot["proc_cpu_user_s"] + tot["proc_cpu_sys_s"]
    pcts = [tot[metrics.percentile_column(p)] for p in metrics.PERCENTILES]
    assert pcts == sorted(pcts)
    # percentiles are fio's bucket values (1/64 relative resolution); max is exact
    assert tot["max_us"] >= pcts[-1] * (1 - 1 / 64)
    seed = metrics.seed_columns(_frame(rows)).iloc[-1]
    # the device saw what fio says it did: one 8 KiB read per IO, in the same window.
    # diskstats are device-wide and this disk is shared: other processes' reads
    # (measured just before, bg_disk_reads_per_s) can only add to ours.
    bg = max(tot["bg_disk_reads_per_s"], tot["bg_after_disk_reads_per_s"])
    assert seed["iops"] >= 0.95 * tot["fio_iops"]
    assert seed["qps"] == pytest.approx(tot["fio_iops"], rel=0.01)
    if bg < 0.005 * tot["fio_iops"]:  # quiet before and after: the exact checks hold
        assert seed["iops"] == pytest.approx(tot["fio_iops"], rel=0.05)
        assert seed["reqsz"] == pytest.approx(8.0, abs=0.1)
        # device latency is below fio's: fio's includes the syscall and completion path
        assert 0 < seed["io.lat"] < seed["rx.lat"]
    # fio is its own perfect baseline
    eff = metrics.efficiency(_frame(rows).iloc[[-1]], tot)
    assert eff["io.eff"].iloc[0] == pytest.approx(1.0) and eff["cpu.inc"].iloc[0] == pytest.approx(0.0)
    assert tot["timeseries"] and tot["timeseries"][0]["disk_reads"] > 0
    return seed


@needs_fio
def test_fio_sync_qd1(fio_runs):
    rows = fio_runs["sync"]
    assert [r["job"] for r in rows] == ["0", "total"]
    seed = _check_fio_total(rows, 1)
    assert rows[0]["engine"] == "sync" and rows[0]["ops"] == rows[-1]["ops"]
    # per-job rows have no device counters: the device is shared by all jobs
    assert math.isnan(rows[0]["disk_reads"])
    assert seed["cpuPer"] > 1.0  # a syscall per read costs microseconds


@needs_fio
def test_fio_io_uring_qd8(fio_runs):
    rows = fio_runs["io_uring"]
    seed = _check_fio_total(rows, 8)
    sync = metrics.seed_columns(_frame(fio_runs["sync"])).iloc[-1]
    assert seed["iops"] > sync["iops"]  # 8 reads in flight beat 1 on this device


@needs_fio
def test_percentiles_from_bins_equal_fios_own(fio_runs):
    d = json.loads(fio_runs["raw"][fio_runs["raw"].find("{"):])
    clat = d["jobs"][0]["read"]["clat_ns"]
    mine = references.fio_percentiles(clat["bins"])
    for p in metrics.PERCENTILES:
        assert mine[p] == clat["percentile"][f"{p:.6f}"]
    assert sum(clat["bins"].values()) == d["jobs"][0]["read"]["total_ios"]


# ---------------------------------------------------------------- real db_bench


def _db_bench():
    path = references.db_bench_path()
    if not path.is_file():
        pytest.skip(f"release db_bench not built at {path}: run `make rocksdb`")
    return path


def test_db_bench_fillseq_flush_readrandom(tmp_path):
    db_bench = _db_bench()
    db = tmp_path / "db"
    log = tmp_path / "db_bench.log"
    # no block cache and O_DIRECT reads: every Get reads one block from the device
    flags = {"benchmarks": "fillseq,flush,readrandom", "num": 20000, "db": db, "histogram": 1,
             "statistics": 1, "use_direct_reads": True, "cache_size": 0, "compression_type": "none",
             "threads": 1, "seed": 42}
    rows = references.run_db_bench(db_bench, flags, log_path=log, timeout=120)
    assert [r["name"] for r in rows] == ["fillseq", "readrandom"]  # flush prints no result line
    fill, rr = rows
    assert fill["ops"] == rr["ops"] == 20000
    assert rr["found"] == 20000
    assert rr["rocksdb_version"] and rr["rocksdb_version"][0].isdigit()
    assert rr["device"] == sysinfo.device_for_path(db).disk
    assert rr["wall_s"] == pytest.approx(rr["db_bench_seconds"], abs=0.002)
    assert rr["statistics_scope"] == "invocation"
    assert rr["rocksdb.db.get.micros.count"] == 20000
    sst_reads = rr["rocksdb.sst.read.micros.count"]
    assert sst_reads >= 20000
    seed = metrics.seed_columns(_frame(rows)).set_index("test")
    # block reads RocksDB made are device reads the kernel counted, in readrandom's window
    # (plus whatever else reads this shared disk meanwhile: bg_disk_reads_per_s before the run)
    bg = max(rr["bg_disk_reads_per_s"], rr["bg_after_disk_reads_per_s"])
    assert rr["disk_reads"] >= 0.9 * 20000
    # db_bench's own transfers (/proc/PID/io) cannot be inflated by others: at least a
    # 4 KiB block per Get, and all of them seen by the device
    assert rr["own_read_bytes"] >= 0.95 * 20000 * 4096
    assert rr["disk_read_sectors"] * 512 >= 0.95 * rr["own_read_bytes"]
    assert seed.loc["readrandom", "cpuPer"] > 0
    if bg * rr["wall_s"] < 200:  # quiet before and after: the exact checks hold
        assert rr["disk_reads"] <= 1.1 * 20000
        # 4 KiB blocks uncompressed: a direct read covers the block, rounded to the logical block size
        assert 4.0 <= seed.loc["readrandom", "reqsz"] <= 8.5
        assert seed.loc["readrandom", "io.lat"] < seed.loc["readrandom", "rx.lat"]
        assert fill["disk_reads"] < 0.05 * rr["disk_reads"]
    # the per-benchmark process CPU is within the invocation's
    step_cpu = rr["cpu_user_s"] + rr["cpu_sys_s"]
    assert step_cpu <= rr["invocation.cpu_user_s"] + rr["invocation.cpu_sys_s"] + 0.02
    assert sum(c for _, c in rr["histograms"]["read"]) == 20000
    assert "readrandom" in log.read_text()


def test_db_bench_failure_is_reported(tmp_path):
    db_bench = _db_bench()
    with pytest.raises(RuntimeError, match="unknown benchmark 'nosuch'"):
        references.run_db_bench(db_bench, ["--benchmarks=nosuch", f"--db={tmp_path / 'db'}", "--num=10"],
                          timeout=60)
    with pytest.raises(RuntimeError, match="compression type 'bogus'"):
        references.run_db_bench(db_bench, {"benchmarks": "fillseq", "db": tmp_path / "db", "num": 10,
                                     "compression_type": "bogus"}, timeout=60)
    with pytest.raises(FileNotFoundError, match="db_bench not found"):
        references.run_db_bench(tmp_path / "no-db_bench", {})


@needs_fio
def test_reference_rows_land_in_the_store(fio_runs, tmp_path):
    from rxlab.core import store

    fp = sysinfo.fingerprint(tmp_path)
    with store.RunWriter(tmp_path / "runs", {"name": "fio refs", "backend": "fio"}, fp) as w:
        for rows in (fio_runs["sync"], fio_runs["io_uring"]):
            for r in rows:
                w.add_step(r)
    run = store.load_run(w.run_id, root=tmp_path / "runs")
    assert len(run.steps) == 4 and set(run.histograms["op"]) == {"read"}
    assert len(run.timeseries) >= 2
    cat = store.catalog(tmp_path / "runs")
    totals = cat[cat["job"] == "total"].reset_index(drop=True)
    view = store.seed_view(totals, baseline=totals.iloc[0])
    assert view["io.eff"].iloc[0] == pytest.approx(1.0)
    assert view["host"].iloc[0] == fp["hostname"]
