"""`rxlab ab A B` end to end at smoke (a tiny DB, seconds of budget), and its one-line refusals."""
from __future__ import annotations

import json

import pytest
from helpers_cli import describe, run_cli

from rxlab.bench import ab
from rxlab.bench.ab import parse_side
from rxlab.core import builds, store
from rxlab.core.resolution import AB_MIN_TURNS
from rxlab.core.study import manifest


@pytest.mark.timeout(240)
def test_ab_reads_in_turns_and_prints_one_json_object(tmp_path):
    r = run_cli("ab", "posix", "rxlab://io_uring", "--scale", "smoke", "--budget", "40s", "--json",
                "--runs", tmp_path / "runs", "--out", tmp_path / "out", "--db-dir", tmp_path / "db",
                timeout=200)
    assert r.returncode == 0, describe(r)
    out = json.loads(r.stdout)   # exactly one object on stdout
    assert {"ratio", "lo", "hi", "turns", "seconds", "resolved", "status", "aa"} <= set(out)
    assert out["ratio"] > 0 and out["turns"] >= 2 and out["lo"] <= out["ratio"] <= out["hi"]
    aa = out["aa"]
    assert aa["turns"] == out["turns"] and aa["lo"] <= aa["ratio"] <= aa["hi"]
    assert out["resolved"] == (out["half_width_pct"] <= 2.0 and out["turns"] >= AB_MIN_TURNS)
    assert out["resolved"] or out["status"].startswith("unresolved: ")
    assert "rxlab ab: turn 1" in r.stderr     # the ratio printed live as it converges
    cpu = out["cpu"]                          # CPU per device read beside, with its interval
    assert cpu["metric"] == "cpu_per_read_us"
    assert cpu["ratio"]["lo"] <= cpu["ratio"]["ratio"] <= cpu["ratio"]["hi"]
    dev = out["device"]                       # the device's time per read beside, and what a read asked of it
    assert dev["metric"] == "device_us_per_read"
    assert dev["ratio"]["lo"] <= dev["ratio"]["ratio"] <= dev["ratio"]["hi"] and dev["aa"]["ratio"] > 0
    assert set(dev["sides"]) == {"posix", "rxlab://io_uring"}
    for side in dev["sides"].values():    # one reader: a read's whole time is the device's and the rest
        assert side["device_us_per_read"] > 0 and side["rest_us_per_read"] > 0
        assert side["bytes_per_read"] >= 512      # a sector at least
    m = manifest(tmp_path / "runs", out["study"])
    assert m["status"] == "complete" and len(m["runs"]) == 3 * out["turns"] and m["turns"]["target"] == 2.0
    assert (tmp_path / "out" / "ab.png").stat().st_size > 0 and (tmp_path / "out" / "ab.csv").is_file()
    assert not list((tmp_path / "db").iterdir())      # the DB is scratch
    cat = store.catalog(tmp_path / "runs")
    assert set(cat["spec.condition"]) == {"quiet"} and "neighbour_cpu_s" not in cat.columns


@pytest.mark.timeout(120)
def test_ab_placement_traces_where_each_sides_read_buffers_fall(tmp_path):
    """--placement: strace on each reader during its turn's warm-up; each side's share of 8 KiB reads whose
    buffer starts a page (two pages, not three) is in the sides' device figures and the stored runs."""
    r = run_cli("ab", "default", "posix", "--placement", "--scale", "smoke", "--budget", "10s",
                "--min-turns", "1", "--json", "--runs", tmp_path / "runs", "--out", tmp_path / "out",
                "--db-dir", tmp_path / "db", timeout=100)
    assert r.returncode == 0, describe(r)
    out = json.loads(r.stdout)
    for side in out["device"]["sides"].values():
        assert 0.0 <= side["page_start_share"] <= 1.0
    cat = store.catalog(tmp_path / "runs")
    assert cat["buffer_offsets"].str.fullmatch(r"\d+ \(\d+%\)(, \d+ \(\d+%\))*").all(), cat["buffer_offsets"]


@pytest.mark.parametrize(("text", "share"), [
    ("0 (100%)", 1.0), ("1536 (100%)", 0.0), ("1024 (97%), 0 (3%)", 0.03), ("2560 (60%), 1024 (40%)", 0.0),
])
def test_page_start_share_reads_the_offsets_text(text, share):
    assert ab.page_start_share(text) == pytest.approx(share)
    assert ab.page_start_share("") != ab.page_start_share("")     # nothing traced: NaN


@pytest.mark.timeout(120)
def test_ab_readseq_readers_start_over_at_the_first_key(tmp_path):
    """A readseq reader reaches the last key of the smoke DB within its warm-up; it reads on from the
    first key until it is stopped, as readrandom's readers do (it used to exit: 'A ended during the
    measurement')."""
    r = run_cli("ab", "posix", "io_uring", "--workload", "readseq", "--scale", "smoke", "--budget", "10s",
                "--min-turns", "1", "--json", "--runs", tmp_path / "runs", "--out", tmp_path / "out",
                "--db-dir", tmp_path / "db", timeout=100)
    assert r.returncode == 0, describe(r)
    out = json.loads(r.stdout)
    assert out["turns"] >= 1 and out["ratio"] > 0 and out["aa"]["ratio"] > 0
    # measured although each pass of a reader is a new thread: the process's CPU clock keeps the ended ones'
    assert out["cpu"]["metric"] == "cpu_per_read_us" and out["cpu"]["ratio"]["ratio"] > 0


@pytest.mark.timeout(120)
def test_ab_reads_from_the_page_cache_count_operations(tmp_path):
    """With O_DIRECT off the page cache serves every read after the load, so there are no device reads to
    count: the readers' value is their operations per second (their progress files), CPU per operation
    beside it, and the stored runs say the turns read (almost) nothing from the device."""
    r = run_cli("ab", "default", "posix", "--direct", "off", "--scale", "smoke", "--budget", "15s",
                "--min-turns", "2", "--json", "--runs", tmp_path / "runs", "--out", tmp_path / "out",
                "--db-dir", tmp_path / "db", timeout=100)
    assert r.returncode == 0, describe(r)
    out = json.loads(r.stdout)
    assert out["direct"] is False and out["metric"].startswith("operations per second")
    assert out["turns"] >= 2 and out["lo"] <= out["ratio"] <= out["hi"]
    assert out["cpu"]["metric"] == "cpu_per_op_us" and out["cpu"]["ratio"]["ratio"] > 0
    assert out["device"] == {}        # no device reads to time
    cat = store.catalog(tmp_path / "runs")
    assert len(cat) == 3 * out["turns"] and (cat["ops"] > 0).all() and (cat["spec.direct"] == False).all()  # noqa: E712
    # the value is the operations: ops over wall time, whatever the device did
    assert ((cat["value"] - cat["ops"] / cat["wall_s"]).abs() <= 1e-6 * cat["value"]).all()
    assert cat["reads"].sum() <= 0.01 * cat["ops"].sum(), cat[["reads", "ops"]]


@pytest.mark.timeout(120)
def _ab_row(tmp_path, a: str, b: str, workload: str, *more, budget: str = "15s", timeout: int = 100):
    """`rxlab ab A B --workload W` at smoke with two turns at least, stored under tmp_path: its --json
    object and the catalog of its runs."""
    r = run_cli("ab", a, b, "--workload", workload, "--scale", "smoke", *more, "--budget", budget,
                "--min-turns", "2", "--json", "--runs", tmp_path / "runs", "--out", tmp_path / "out",
                "--db-dir", tmp_path / "db", timeout=timeout)
    assert r.returncode == 0, describe(r)
    return json.loads(r.stdout), store.catalog(tmp_path / "runs")


def test_ab_writes_run_one_after_another_beside_a_busy_neighbour(tmp_path):
    out, cat = _ab_row(tmp_path, "posix", "opts:write_buffer_size=1048576", "fillseq", "--num", "5000",
                       "--condition", "busy")
    assert out["metric"].startswith("operations per second") and out["turns"] >= 1 and out["ratio"] > 0
    assert out["condition"] == "busy"
    # CPU per operation of the writer's whole process, B over A with its interval, beside the value
    cpu = out["cpu"]
    assert cpu["metric"] == "cpu_per_op_us" and cpu["ratio"]["ratio"] > 0 and cpu["aa"]["ratio"] > 0
    # the neighbour spun through every turn: its CPU time over a turn is most of the turn's runs' wall time
    assert set(cat["spec.condition"]) == {"busy"} and cat["neighbour_cpu_s"].notna().all()
    per_turn = cat.groupby("turn").agg(neighbour=("neighbour_cpu_s", "first"), wall=("wall_s", "sum"))
    assert (per_turn["neighbour"] > 0.5 * per_turn["wall"]).all(), per_turn


def test_ab_flush_row_measures_the_flush_of_each_sides_own_fill(tmp_path):
    out, cat = _ab_row(tmp_path, "default", "posix", "flush", "--num", "20000")
    assert out["metric"].startswith("the flush's speed") and out["turns"] >= 1 and out["ratio"] > 0
    assert out["cpu"]["metric"] == "cpu_per_op_us"
    # every run (A, B, A again, each turn) flushed a memtable holding its whole fill (fillrandom's
    # distinct keys: about 1 - 1/e of 20,000, 400 B each)
    assert len(cat) == 3 * out["turns"]
    assert (cat["write_bytes"] >= 0.6 * 20000 * 400).all(), cat["write_bytes"]


def test_ab_timed_row_runs_both_sides_at_once_in_slices(tmp_path):
    out, cat = _ab_row(tmp_path, "default", "posix", "mixgraph", "--num", "20000", budget="20s", timeout=120)
    assert out["metric"].startswith("operations per second") and out["turns"] >= 1 and out["ratio"] > 0
    assert out["cpu"]["metric"] == "cpu_per_op_us" and out["cpu"]["ratio"]["ratio"] > 0
    # a run per side and turn, each its operations over its slices (two of 0.2 s at smoke)
    assert len(cat) == 3 * out["turns"] and (cat["ops"] > 0).all()
    assert ((cat["wall_s"] > 0.2) & (cat["wall_s"] < 1.0)).all(), cat["wall_s"]


@pytest.mark.parametrize(("args", "line"), [
    (["posix", "nosuch"], "b='nosuch'"),
    (["posix", "posix"], "the same as A"),
    (["posix", "io_uring", "--workload", "dance"], "workload='dance': allowed are"),
    (["posix", "io_uring", "--budget", "soon"], "budget='soon'"),
    (["posix", "io_uring", "--target", "0"], "target=0"),
    (["posix", "io_uring", "--condition", "noisy"], "condition='noisy': allowed are quiet, busy"),
    (["posix", "io_uring", "--direct", "maybe"], "direct='maybe': expected on (O_DIRECT) or off"),
    (["posix", "opts:block_size"], "expected opts:NAME=VALUE"),
    (["posix", "build:0.0.1-gcc12"], "no finished build '0.0.1-gcc12'"),
    (["posix", "io_uring", "--direct", "off", "--placement"], "placement=True: traces O_DIRECT read buffers"),
    (["posix", "io_uring", "--workload", "fillseq", "--placement"], "placement=True: traces O_DIRECT"),
])
def test_bad_input_is_one_line(args, line):
    r = run_cli("ab", *args, "--scale", "smoke", timeout=60)
    assert r.returncode == 2, describe(r)
    assert line in r.stderr and len(r.stderr.strip().splitlines()) == 1, describe(r)


def test_the_installed_modules_build_is_a_side_without_a_module_of_its_own():
    """build:KEY of the build the editable install is compiled against: the installed module runs it
    (rxlab.core.builds.select_core), no `rxlab build-module` needed."""
    key = builds.installed_build().name
    side = parse_side(f"build:{key}", "a")
    assert side.kind == "build" and side.build == key and side.env == {builds.BUILD_ENV: key}


@pytest.mark.timeout(200)
def test_history_pools_the_stored_studies_of_one_comparison(tmp_path):
    """Two studies of one comparison in a store: the second's --json pools both; --history lists and
    pools them without measuring (and draws them with --out); --since leaves out the first."""
    first, _ = _ab_row(tmp_path, "default", "posix", "flush", "--num", "20000", budget="10s")
    assert first["studies"]["k"] == 1 and first["studies"]["ids"] == [first["study"]]
    second, _ = _ab_row(tmp_path, "default", "rxlab://posix", "flush", "--num", "20000", budget="10s")
    pooled = second["studies"]
    assert pooled["k"] == 2 and pooled["ids"] == [first["study"], second["study"]]
    assert pooled["lo"] <= pooled["ratio"] <= pooled["hi"] and pooled["between_pct"] >= 0
    assert "2 studies of this comparison on this host" in (tmp_path / "out" / "findings.md").read_text()
    base = ("ab", "default", "posix", "--workload", "flush", "--num", "20000", "--scale", "smoke",
            "--runs", tmp_path / "runs")
    r = run_cli(*base, "--history", "--json", "--out", tmp_path / "hist", timeout=60)
    assert r.returncode == 0, describe(r)
    h = json.loads(r.stdout)
    assert [s["study"] for s in h["studies"]] == pooled["ids"] and h["pooled"]["ratio"] == pooled["ratio"]
    assert (tmp_path / "hist" / "history.png").stat().st_size > 0
    runs = 3 * (first["turns"] + second["turns"])
    assert len(list((tmp_path / "runs").glob("2*"))) == runs        # --history measured nothing
    r = run_cli(*base, "--history", "--since", second["study"], timeout=60)
    assert r.returncode == 0 and "1 study of this comparison" in r.stdout, describe(r)
    r = run_cli(*base[:4], "compact", *base[5:], "--history", timeout=60)
    assert r.returncode == 1 and "no complete study of posix / default, compact" in r.stderr, describe(r)
    r = run_cli(*base, "--history", "--since", "last tuesday", timeout=60)
    assert r.returncode == 2 and "since='last tuesday'" in r.stderr, describe(r)
    assert len(r.stderr.strip().splitlines()) == 1, describe(r)
