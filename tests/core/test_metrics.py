"""rxlab.core.metrics against the first seed's own tables (known answers)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rxlab.core import metrics  # noqa: E402

# The seed's fio rows (fio --ioengine=sync --iodepth=1 --bs=8k O_DIRECT).
FIO = {1: {"iops": 9884, "usPer": 1.351, "syPer": 9.565, "cpuPer": 10.916, "lat": 101.61},
       6: {"iops": 43782, "usPer": 1.379, "syPer": 10.642, "cpuPer": 12.022, "lat": 136.35}}
# The seed's db_bench tables with block_align, and its io.eff / us.inc / cpu.inc tables.
# clients: [(qps, iops, reqsz, usPer, syPer, cpuPer, rx.lat, io.lat, test, io.eff, us.inc, cpu.inc)]
ROCKSDB = {
    1: [(8282, 8350, 8.5, 11.643, 7.602, 19.246, 120.74, 101, "readrandom", 0.844, 10.292, 8.330),
        (8394, 8327, 8.7, 9.997, 8.525, 18.523, 119.13, 105, "readrandom2", 0.842, 8.646, 7.607),
        (8522, 8400, 8.2, 8.732, 8.718, 17.450, 117.34, 100, "readrandom3", 0.849, 7.381, 6.534)],
    6: [(38391, 38628, 8.1, 14.645, 7.291, 21.936, 156.27, 134, "readrandom", 0.882, 13.266, 9.914),
        (39359, 38623, 8.3, 10.449, 9.346, 19.795, 152.43, 144, "readrandom2", 0.882, 9.070, 7.773),
        (39669, 38874, 8.0, 9.459, 9.850, 19.309, 151.24, 140, "readrandom3", 0.887, 8.080, 7.287)],
}


def raw_row(name, qps, iops, reqsz, us_per, sy_per, rx_lat, io_lat, wall_s=600.0, write_sectors=0):
    """The raw counters a driver would have recorded for a seed table row."""
    ops = qps * wall_s
    reads = iops * wall_s
    return {
        "name": name, "ops": ops, "wall_s": wall_s, "lat_mean_us": rx_lat,
        "cpu_user_s": us_per * ops / 1e6, "cpu_sys_s": sy_per * ops / 1e6,
        "disk_reads": reads, "disk_read_sectors": reqsz * 1024 / 512 * reads,
        "disk_read_ticks_ms": io_lat * reads / 1000,
        "disk_writes": 0, "disk_write_sectors": write_sectors, "disk_write_ticks_ms": 0,
    }


def fio_raw(clients):
    f = FIO[clients]
    # for fio, ops = reads and the device saw the same reads
    return raw_row("fio", f["iops"], f["iops"], 8.0, f["usPer"], f["syPer"], f["lat"], f["lat"] - 10)


def rocksdb_raw(clients):
    return pd.DataFrame([raw_row(t[8], *t[:3], t[3], t[4], t[6], t[7]) for t in ROCKSDB[clients]])


@pytest.mark.parametrize("clients", [1, 6])
def test_seed_columns_reproduce_the_seed_table(clients):
    got = metrics.seed_columns(rocksdb_raw(clients))
    assert list(got.columns[: len(metrics.SEED_COLUMNS)]) == list(metrics.SEED_COLUMNS)
    for i, t in enumerate(ROCKSDB[clients]):
        row = got.iloc[i]
        expect = dict(zip(metrics.SEED_COLUMNS, t[:9], strict=True))
        for col, val in expect.items():
            if col == "test":
                assert row[col] == val
            elif col != "cpuPer":
                assert row[col] == pytest.approx(val, rel=1e-9), col
        # cpuPer is usPer + syPer; the seed's printed cpuPer agrees to its rounding
        assert row["cpuPer"] == pytest.approx(t[5], abs=0.0015)


@pytest.mark.parametrize("clients", [1, 6])
def test_efficiency_reproduces_the_seed(clients):
    got = metrics.efficiency(rocksdb_raw(clients), fio_raw(clients))
    for i, t in enumerate(ROCKSDB[clients]):
        io_eff, us_inc, cpu_inc = t[9:]
        # the seed truncates io.eff to 3 decimals (8350/9884 = 0.84480 is printed 0.844)
        assert math.floor(got["io.eff"].iloc[i] * 1000) / 1000 == pytest.approx(io_eff, abs=1e-12)
        assert got["us.inc"].iloc[i] == pytest.approx(us_inc, abs=1e-9)
        # the seed subtracts its printed cpuPer values; ours is usPer + syPer exactly
        assert got["cpu.inc"].iloc[i] == pytest.approx(cpu_inc, abs=0.0015)


def test_seed_fio_row_numbers():
    fio = metrics.seed_columns(fio_raw(1)).iloc[0]
    assert fio["iops"] == pytest.approx(9884)
    assert fio["qps"] == pytest.approx(9884)
    assert fio["usPer"] == pytest.approx(1.351)
    assert fio["syPer"] == pytest.approx(9.565)
    assert fio["cpuPer"] == pytest.approx(10.916)
    assert fio["reqsz"] == pytest.approx(8.0)
    assert pytest.approx(0.8448, abs=1e-4) == 8350 / 9884


def test_baseline_may_be_published_derived_values():
    derived = {"iops": 9884, "usPer": 1.351, "cpuPer": 10.916}
    got = metrics.efficiency(rocksdb_raw(1), derived)
    assert got["io.eff"].iloc[0] == pytest.approx(8350 / 9884)
    assert got["us.inc"].iloc[2] == pytest.approx(8.732 - 1.351)
    # and the rows may be derived (published tables) too
    pub = pd.DataFrame([dict(zip(metrics.SEED_COLUMNS, t[:9], strict=True)) for t in ROCKSDB[1]])
    got2 = metrics.efficiency(pub, derived)
    assert got2["cpu.inc"].tolist() == pytest.approx([8.330, 7.607, 6.534], abs=1e-9)


def test_units_on_a_hand_computed_step():
    row = {"name": "readrandom", "ops": 1000, "wall_s": 2.0, "lat_mean_us": 50.0,
           "cpu_user_s": 0.010, "cpu_sys_s": 0.005, "disk_reads": 400, "disk_read_sectors": 400 * 16,
           "disk_read_ticks_ms": 20, "disk_writes": 3, "disk_write_sectors": 2 * 2048,
           "disk_write_ticks_ms": 1, "bytes": 1000 * 4194, "vcsw": 730}
    got = metrics.seed_columns(row).iloc[0]
    assert got["sleepsPer"] == pytest.approx(0.73)  # 730 of the 1000 ops slept
    assert np.isnan(got["unclockedPer"])  # no per-thread perf clock in this row
    clocked = {**row, "worker_cpu_user_s": 0.010, "worker_cpu_sys_s": 0.030, "perf.task_clock_ns": 31e6}
    assert metrics.seed_columns(clocked).iloc[0]["unclockedPer"] == pytest.approx(9.0)  # (40 - 31) ms / 1000
    assert np.isnan(got["awayShare"])  # no per-CPU counts in this row
    woken = {**row, "irq_cpu": 1, "calls_on_irq_cpu": 600, "calls_counted": 1000}
    assert metrics.seed_columns(woken).iloc[0]["awayShare"] == pytest.approx(0.4)
    assert np.isnan(got["stealPer"])  # no /proc/stat window in this row
    stolen = metrics.seed_columns([{**row, "system_cpu.steal": 0.003}, {**row, "sys_steal_s": 0.002}])
    assert stolen["stealPer"].tolist() == pytest.approx([3.0, 2.0])  # 3 ms over 1000 ops; real tools' name
    assert got["qps"] == 500
    assert got["iops"] == 200
    assert got["reqsz"] == 8.0          # 16 sectors x 512 B = 8 KB
    assert got["usPer"] == pytest.approx(10.0)
    assert got["syPer"] == pytest.approx(5.0)
    assert got["cpuPer"] == pytest.approx(15.0)
    assert got["rx.lat"] == 50.0
    assert got["io.lat"] == pytest.approx(50.0)   # 20 ms / 400 reads
    assert got["wmbps"] == pytest.approx(1.0)     # 2 MiB in 2 s
    assert got["mbps"] == pytest.approx(1000 * 4194 / 2**20 / 2)   # db_bench's MB/s of the ops' bytes
    assert got["test"] == "readrandom"


def test_zero_denominators_give_nan_not_inf():
    rows = pd.DataFrame([
        {"name": "cached", "ops": 100, "wall_s": 1.0, "lat_mean_us": 1.0, "cpu_user_s": 0.0,
         "cpu_sys_s": 0.0, "disk_reads": 0, "disk_read_sectors": 0, "disk_read_ticks_ms": 0,
         "disk_writes": 0, "disk_write_sectors": 0, "disk_write_ticks_ms": 0},
        {"name": "empty", "ops": 0, "wall_s": 0.0, "lat_mean_us": np.nan, "cpu_user_s": 0.1,
         "cpu_sys_s": 0.1, "disk_reads": 5, "disk_read_sectors": 40, "disk_read_ticks_ms": 1,
         "disk_writes": 0, "disk_write_sectors": 0, "disk_write_ticks_ms": 0},
    ])
    got = metrics.seed_columns(rows)
    assert not np.isinf(got.select_dtypes("number").to_numpy()).any()
    assert math.isnan(got.loc[0, "reqsz"]) and math.isnan(got.loc[0, "io.lat"])
    assert got.loc[0, "iops"] == 0 and got.loc[0, "qps"] == 100
    assert math.isnan(got.loc[1, "qps"]) and math.isnan(got.loc[1, "usPer"])
    assert got.loc[1, "reqsz"] == pytest.approx(4.0)
    eff = metrics.efficiency(rows, {"iops": 0, "usPer": 1, "cpuPer": 2})
    assert eff["io.eff"].isna().all()


def test_missing_counters_are_nan_and_inputs_accepted_in_every_shape():
    row = {"name": "x", "ops": 10, "wall_s": 1.0}
    for shape in (row, pd.Series(row), [row], pd.DataFrame([row])):
        got = metrics.seed_columns(shape)
        assert got["qps"].iloc[0] == 10
        assert got[["iops", "reqsz", "usPer", "io.lat", "rx.lat"]].isna().all(axis=None)


def test_index_preserved_and_baseline_must_be_one_row():
    df = rocksdb_raw(1).set_axis([10, 20, 30])
    got = metrics.seed_columns(df)
    assert list(got.index) == [10, 20, 30]
    with pytest.raises(ValueError, match="one row"):
        metrics.efficiency(df, pd.DataFrame([fio_raw(1), fio_raw(1)]))
    one = metrics.efficiency(df, pd.DataFrame([fio_raw(1)]))
    assert one["io.eff"].iloc[0] == pytest.approx(8350 / 9884)


def test_percentile_column_names():
    assert metrics.PERCENTILE_COLUMNS == ("p50_us", "p75_us", "p90_us", "p95_us", "p99_us", "p99.9_us",
                                          "p99.99_us", "max_us")
    assert set(metrics.RAW_COLUMNS) >= {"ops", "wall_s", "disk_reads", "cpu_user_s"}
