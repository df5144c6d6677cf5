"""The published tables: transcription against the seeds, and the loader."""

from __future__ import annotations

import csv
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT.parent / "shared" / "seeds"

try:
    from rxlab.core import published
except (ImportError, OSError):
    # rxlab/__init__.py may import the compiled extension before it is built;
    # published.py needs nothing from it, so load the file on its own.
    _spec = importlib.util.spec_from_file_location("rxlab_published", ROOT / "rxlab" / "published.py")
    published = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(published)

pytestmark = pytest.mark.filterwarnings("error")

IOEFF = "blog-2025-10-23-rocksdb-io-efficiency-point-queries.txt"
GCC = "blog-2025-12-01-rocksdb-gcc-vs-clang-and-more.txt"
WIKI = "rocksdb-wiki-asynchronous-io.txt"
LAB = "lab-report-disaggregated-rocksdb-backends.txt"
RA = "blog-2024-01-08-rocksdb-compaction-readahead.txt"


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    # Check the repository's CSVs, whatever RXLAB_DATA the caller has set.
    monkeypatch.delenv("RXLAB_DATA", raising=False)


def one(name: str, column: str, **where):
    df = published.load(name)
    for key, val in where.items():
        df = df[df[key] == val]
    assert len(df) == 1, f"{name} {where}: {len(df)} rows"
    return df[column].iloc[0]


# (table, column, expected, row selector): values read off the seed documents.
VALUES = [
    ("ioeff_fio", "iops", 9884, {"numjobs": 1}),
    ("ioeff_fio", "cpuPer", 12.022, {"numjobs": 6}),
    ("ioeff_fio", "lat.us", 101.61, {"numjobs": 1}),
    ("ioeff_db_bench", "qps", 8282, {"table": "db_bench 1 user", "test": "readrandom"}),
    ("ioeff_db_bench", "io.lat", 140, {"table": "db_bench 6 users", "test": "readrandom3"}),
    ("ioeff_db_bench", "usPer", 14.645, {"table": "db_bench 6 users", "test": "readrandom"}),
    ("ioeff_db_bench", "reqsz", 8.9, {"table": "block_align disabled", "test": "readrandom"}),
    ("ioeff_db_bench", "rx.lat", 127.12, {"table": "block_align disabled", "test": "readrandom2"}),
    ("ioeff_efficiency", "io.eff", 0.844, {"users": 1, "test": "readrandom"}),
    ("ioeff_efficiency", "us.inc", 13.266, {"users": 6, "test": "readrandom"}),
    ("ioeff_efficiency", "cpu.inc", 7.287, {"users": 6, "test": "readrandom3"}),
    ("ioeff_model", "predicted_iops", 9063, {"test": "readrandom"}),
    ("ioeff_model", "predicted_iops", 9124, {"test": "readrandom2"}),
    ("ioeff_model", "predicted_iops", 9214, {"test": "readrandom3"}),
    ("ioeff_model", "measured_iops", 8327, {"test": "readrandom2"}),
    ("gccclang_flamegraph", "pct", 18.35, {"category": "bloom", "test": "readrandom"}),
    ("gccclang_flamegraph", "pct", 50.92, {"category": "libc+k", "test": "readrandom3"}),
    ("gccclang_flamegraph", "pct", 0, {"category": "bloom", "test": "readrandom3"}),
    ("gccclang_relative_qps", "pct", 15, {"server": "pn53", "test": "fillseq", "compiler": "clang+LTO"}),
    (
        "gccclang_statements",
        "value",
        22.69,
        {
            "quantity": "share of flamegraph samples from page fault handling",
            "condition": "example flamegraph",
        },
    ),
    ("asyncio_results", "value", 507.533, {"table": "MultiGet multi-level", "metric": "micros/op"}),
    (
        "asyncio_results",
        "value",
        29329.444444,
        {"table": "MultiGet single-file", "metric": "rocksdb.db.multiget.micros P99"},
    ),
    ("asyncio_results", "value", 326.2, {"table": "Scan with async scan", "metric": "MB/s"}),
    ("asyncio_db_structure", "size_bytes", 1515327216, {"level": 3}),
    (
        "lab_throughput",
        "value",
        240.5,
        {"table": "Figure 10", "setup": "virtual", "workload": "fillseq", "engine": "libaio"},
    ),
    ("lab_throughput", "value", 131, {"table": "Figure 4", "engine": "posix"}),
    (
        "lab_latency",
        "value",
        242.49,
        {"setup": "remote", "workload": "readrandom", "engine": "posix", "statistic": "p99.9"},
    ),
    (
        "lab_latency",
        "value",
        31.06,
        {"setup": "virtual", "workload": "fillseq", "engine": "io_uring", "statistic": "p50"},
    ),
    ("lab_throughput_change", "pct", 38, {"workload": "readseq", "engine": "posix"}),
    ("readahead_statements", "value", 128, {"condition": "SW RAID device (md2)"}),
    ("hardware", "cpu", "Ryzen 7 7840HS", {"source": IOEFF}),
]


@pytest.mark.parametrize(
    ("name", "column", "expected", "where"), VALUES, ids=[f"{v[0]}-{v[1]}-{v[2]}" for v in VALUES]
)
def test_value_from_seed(name, column, expected, where):
    got = one(name, column, **where)
    if isinstance(expected, str):
        assert got == expected
    else:
        assert got == pytest.approx(expected, abs=1e-9)


def test_block_align_enabled_equals_one_user_table():
    df = published.load("ioeff_db_bench")
    cols = ["test", "qps", "iops", "reqsz", "usPer", "syPer", "cpuPer", "rx.lat", "io.lat"]
    a = df[df.table == "db_bench 1 user"][cols].reset_index(drop=True)
    b = df[df.table == "block_align enabled"][cols].reset_index(drop=True)
    assert a.equals(b)


@pytest.mark.parametrize("users", [1, 6])
def test_efficiency_tables_agree_with_fio_and_db_bench(users):
    """io.eff, us.inc and cpu.inc are derived in the post: a typo would break this."""
    fio = published.load("ioeff_fio").set_index("numjobs").loc[users]
    db = published.load("ioeff_db_bench")
    db = db[db.table == f"db_bench {users} user{'s' if users > 1 else ''}"].set_index("test")
    eff = published.load("ioeff_efficiency")
    eff = eff[eff.users == users].set_index("test")
    assert sorted(eff.index) == sorted(db.index) == ["readrandom", "readrandom2", "readrandom3"]
    for test, row in eff.iterrows():
        assert row["us.inc"] == pytest.approx(db.loc[test, "usPer"] - fio["usPer"], abs=1.5e-3)
        assert row["cpu.inc"] == pytest.approx(db.loc[test, "cpuPer"] - fio["cpuPer"], abs=1.5e-3)
        # the post truncates rather than rounds (8350 / 9884 = 0.8448 is printed 0.844)
        assert row["io.eff"] == pytest.approx(db.loc[test, "iops"] / fio["iops"], abs=1e-3)
        assert db.loc[test, "cpuPer"] == pytest.approx(
            db.loc[test, "usPer"] + db.loc[test, "syPer"], abs=1.5e-3
        )


def test_model_inputs_give_its_predictions():
    m = published.load("ioeff_model")
    pred = 1e6 / (m.io_lat_us + m.libc_kernel_us + m.rocksdb_cpu_us)
    assert (pred - m.predicted_iops).abs().max() < 1
    eff = published.load("ioeff_efficiency").query("users == 1").set_index("test")
    assert list(m.rocksdb_cpu_us) == list(eff.loc[m.test, "cpu.inc"])


def test_flamegraph_columns_sum_to_100():
    fg = published.load("gccclang_flamegraph")
    assert fg.category.nunique() == 9
    sums = fg.groupby("test").pct.sum()
    assert list(sums.index) == ["readrandom", "readrandom2", "readrandom3"]
    assert sums.sub(100).abs().max() < 0.05


def test_every_table_has_source_and_table_columns():
    names = published.tables()
    assert len(names) >= 10
    for name, df in published.load_all().items():
        assert {"source", "table"} <= set(df.columns), name
        assert len(df) > 0, name
        assert df.source.notna().all() and df.table.notna().all(), name
        assert not df.duplicated().any(), f"{name} has duplicate rows"


def test_sources_exist_in_seeds():
    if not SEEDS.is_dir():
        pytest.skip(f"{SEEDS} is absent")
    sources = {s for df in published.load_all().values() for s in df.source}
    assert sources == {IOEFF, GCC, WIKI, LAB, RA}
    for s in sources:
        assert (SEEDS / s).is_file(), s


NUMBER = re.compile(r"-?\d+(\.\d+)?")


def test_every_number_is_printed_in_its_source():
    """Each numeric cell, as written in the CSV, occurs in its seed with the same digits."""
    if not SEEDS.is_dir():
        pytest.skip(f"{SEEDS} is absent")
    texts = {}
    missing = []
    for path in sorted(published.data_dir().glob("*.csv")):
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                src = row["source"]
                if src not in texts:
                    raw = (SEEDS / src).read_text()
                    # "10,000" in prose is stored as 10000
                    texts[src] = raw + "\n" + re.sub(r"(?<=\d),(?=\d{3}\b)", "", raw)
                for col, cell in row.items():
                    if col in ("source", "table") or not NUMBER.fullmatch(cell):
                        continue
                    pat = r"(?<![\d.])" + re.escape(cell) + r"(?!\d)(?!\.\d)"
                    if not re.search(pat, texts[src]):
                        missing.append(f"{path.name}:{col}={cell}")
    assert not missing


def test_load_bad_name_is_one_line_value_error():
    with pytest.raises(ValueError) as exc:
        published.load("no_such_table")
    msg = str(exc.value)
    assert "\n" not in msg
    assert "'no_such_table'" in msg
    for name in published.tables():
        assert name in msg


def test_load_refuses_paths():
    with pytest.raises(ValueError):
        published.load("../published/ioeff_fio")


def test_tables_and_load_all_agree():
    names = published.tables()
    assert names == sorted(p.stem for p in published.data_dir().glob("*.csv"))
    assert set(published.load_all()) == set(names)
    assert {"hardware", "ioeff_fio", "ioeff_db_bench", "gccclang_flamegraph"} <= set(names)


def test_empty_columns_load_as_text():
    hw = published.load("hardware")
    assert hw.kernel.isna().all()
    assert hw.kernel.dtype.kind != "f"


def test_rxlab_data_overrides_location(tmp_path, monkeypatch):
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "x.csv").write_text("source,table,v\ns.txt,t,1\n")
    monkeypatch.setenv("RXLAB_DATA", str(tmp_path))
    assert published.tables() == ["x"]
    assert published.load("x").v.tolist() == [1]
    monkeypatch.setenv("RXLAB_DATA", str(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="RXLAB_DATA"):
        published.tables()
