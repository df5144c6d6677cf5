"""rxlab.studies.backends: parameters, the plan, one real tiny study through the store, tables and figures.

The study runs for real (RocksDB on posix and io_uring, a 5 MB DB, the local
and remote cases, one turn: posix twice (the A/A pair) and io_uring once,
whole runs with 0.1 s per timed read step, and every test in slices of 0.1 s)
into a tmp store; everything downstream (study_frame, load_study, the
comparisons, the tables with the report's numbers beside, the figures) is
checked on it.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures

from rxlab import studies
from rxlab.bench import driver
from rxlab.core import published, store
from rxlab.core.study import manifest
from rxlab.core.turns_plan import turn_rows
from rxlab.studies.backends import STUDY, params, parts, slices, tables, zippydb_options

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(autouse=True)
def _repo_data(monkeypatch):
    monkeypatch.delenv("RXLAB_DATA", raising=False)


# ------------------------------------------------------------------ parameters

@pytest.mark.parametrize(("kw", "message"), [
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"backends": ["posix", "nosuch"]}, "backends='nosuch': unknown engine 'nosuch'"),
    ({"backends": ["posix", "posix"]}, "backends=['posix', 'posix']: expected a non-empty list of distinct"),
    ({"backends": ["posix?delay_us=5"]}, "give the delay through the delay_us parameter"),
    ({"threads": 0}, "threads=0: expected an integer 1..64"),
    ({"threads": [1, 2]}, "threads=[1, 2]: expected an integer 1..64"),
    ({"repeats": 0}, "repeats=0: expected None (the scale's) or an integer 1..100"),
    ({"duration": -1}, "duration=-1: expected None"),
    ({"device_cases": ["remote"]}, "device_cases=['remote']: must include 'local'"),
    ({"device_cases": ["local", "mars"]},
     "device_cases=['local', 'mars']: expected a list of distinct names"),
    ({"backends": ["default"], "device_cases": ["local", "remote"]},
     "device_cases=['local', 'remote']: emulated cases need an rxlab engine"),
    ({"case_delays": {"far": [10, 20]}},
     "case_delays={'far': [10, 20]}: expected {name: [delay_us, jitter_us]}"),
    ({"case_delays": {"Far": [10, 0]}}, "case_delays={'Far': [10, 0]}"),
    ({"nosuch": 1}, "unknown parameter 'nosuch': allowed are scale, target, budget, min_turns, max_turns, "
                    "backends, threads"),
    ({"target": -1}, "target=-1: expected a half-width in percent"),
    ({"sliced": 1}, "sliced=1: expected True (every backend of a case at once, in slices) or False"),
    ({"whole_turns": 0}, "whole_turns=0: expected an integer 1..1000 (turns that also run whole sequences"),
])
def test_a_bad_parameter_is_one_line_naming_it(kw, message):
    assert message in refusal(STUDY, **kw)


def test_cases_come_from_the_report_and_can_be_added():
    p = STUDY.params(scale="smoke", device_cases=["local", "remote", "far"],
                                 case_delays={"far": [1000, 100]})
    t = p.cases_table()
    assert list(t.index) == ["local", "remote", "far"]
    assert (t.loc["remote", "delay_us"], t.loc["remote", "jitter_us"]) == (165, 77)
    assert t.loc["remote", "read completes no earlier than"] == "88 to 242 us"
    assert "164.97" in t.loc["remote", "from"] and "242.49" in t.loc["remote", "from"]
    assert t.loc["far", "delay_us"] == 1000 and "default" not in t.loc["far", "backends"]
    assert "default" in t.loc["local", "backends"]
    # the report's percentiles that the cases are taken from are the published ones
    lat = published.load("lab_latency")
    remote = lat[(lat["setup"] == "remote") & (lat["workload"] == "readrandom") & (lat["engine"] == "posix")]
    assert set(remote["value"]) == {164.97, 242.49}
    assert params.with_case("io_uring?sqpoll=1", params.DEVICE_CASES["remote"]) == \
        "io_uring?sqpoll=1&delay_us=165&jitter_us=77"
    assert params.with_case("posix", params.DEVICE_CASES["local"]) == "posix"


def test_zippydb_options_are_the_report_command_and_the_driver_takes_them():
    z = zippydb_options()
    assert z["mix_get_ratio"] == 0.85 and z["mix_put_ratio"] == 0.14 and z["mix_seek_ratio"] == 0.01
    assert z["keyrange_num"] == 30 and z["value_sigma"] == 25.45 and z["perf_level"] == 2
    assert set(z) <= set(driver.STEP_FIELDS)
    assert not {"key_size", "num", "reads"} & set(z)   # the DB's own 16-byte keys are read


def test_the_settings_say_the_stopping_rule_not_the_unused_repeats():
    rows = dict(STUDY.params(scale="smoke").settings().rows())
    assert "repeats" not in rows and "at least 3 turns" in rows["turns"]
    assert rows["throughput, per turn"] == ("every backend of a case at once, 2 rounds of 0.1 s slices after "
                                            "0.2 s")
    assert rows["latency"] == "a whole run of the report's sequence on each backend, the first 1 turn"
    rows = dict(STUDY.params(scale="small", sliced=False).settings().rows())
    assert rows["throughput and latency"] == "whole runs of the report's sequence, every turn"


def test_the_sequence_splits_where_db_bench_starts_a_fresh_db():
    s = STUDY.params(scale="smoke").settings()
    split = parts(s)
    names = [[st["name"] for st in p] for p in split]
    # the reads wait for the fill's compactions: they read a settled DB, the same for every engine
    assert [n for p in names for n in p if n != "waitforcompaction"] == driver.SEQUENCES["lab_report"]
    assert names == [["fillseq"], ["fillrandom", "waitforcompaction", "readrandom", "readseq", "mixgraph"]]
    assert all(p[0]["threads"] == 1 for p in split)
    readseq = next(st for st in split[1] if st["name"] == "readseq")
    assert readseq["duration"] == 0 and readseq["ops"] == s.num


def test_each_turn_rotates_cases_and_backends_and_runs_the_base_twice():
    p = STUDY.params(scale="smoke")
    units = STUDY.plan(p)
    assert len(units) == (4 + 3 + 3) * 2
    plan = pd.concat([turn_rows(units, STUDY.compare, t) for t in range(3)], ignore_index=True)
    first = plan.drop_duplicates(["rep", "case"]).groupby("rep")["case"].first().tolist()
    assert first == ["local", "virtual", "remote"]
    starts = plan.drop_duplicates(["rep", "case", "backend", "copy"])
    local0 = starts[(starts["rep"] == 0) & (starts["case"] == "local")]["backend"].tolist()
    local1 = starts[(starts["rep"] == 1) & (starts["case"] == "local")]["backend"].tolist()
    assert local0 == ["default", "posix", "libaio", "io_uring", "default"]
    assert local1 == local0[::-1]
    # the base of a case is its first backend: default on the local disk, posix in the emulated cases
    twice = plan[plan["copy"] == 1].groupby("case")["backend"].unique().map(list).to_dict()
    assert twice == {"local": ["default"], "virtual": ["posix"], "remote": ["posix"]}
    assert "default" not in set(plan.loc[plan["case"] != "local", "backend"])
    per = plan.groupby(["rep", "case", "backend", "copy"])["part"].apply(list)
    assert (per.map(lambda x: x == ["fillseq", "fillrandom"])).all()
    assert len(plan) == 3 * (5 + 4 + 4) * 2


# ------------------------------------------------------------------ a real tiny study

@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("labruns")
    p = STUDY.params(scale="smoke", backends=["posix", "io_uring"], device_cases=["local", "remote"],
                     duration=0.1, budget="1s", db_dir=str(tmp_path_factory.mktemp("labdb")))
    res = STUDY.run(p, root=root, progress=False)       # 1 s: one turn whatever the machine's speed
    return p, res


def test_every_run_is_stored_and_found_again(study):
    p, res = study
    # one turn: whole runs of each backend (2 a case), then 5 tests in slices on the local disk and 3 (the
    # report's cluster tests) in the remote case, posix twice (A/A) and io_uring once
    assert len(STUDY.plan(p)) == 8 and len(res.runs) == 8 + 3 * (5 + 3)
    assert all(store.is_complete(r) for r in res.runs)
    f = res.frame
    sl = f[f["method"] == "slices"]
    assert sorted(sl.groupby("case")["test"].unique().map(sorted).to_dict().items()) == [
        ("local", ["fillrandom", "fillseq", "mixgraph", "readrandom", "readseq"]),
        ("remote", ["fillseq", "readrandom", "readseq"])]
    assert (sl.groupby(["case", "test"])["copy"].sum() == 1).all() and (sl["ops"] > 0).all()
    assert set(f["case"]) == {"local", "remote"} and set(f["backend"]) == {"posix", "io_uring"}
    remote = f[f["case"] == "remote"]
    assert (remote["delay_us"] == 165).all() and (remote["jitter_us"] == 77).all()
    assert remote["backend_uri"].str.contains("delay_us=165&jitter_us=77").all()
    assert set(f["test"]) == {"fillseq", "fillrandom", "readrandom", "readseq", "mixgraph"}
    again = STUDY.load(res.root)
    assert again is not None and again.study == res.study and len(again.frame) == len(f)
    assert again.backends == res.backends == ["posix", "io_uring"] and again.cases == ["local", "remote"]
    assert STUDY.load(res.root, study="20000101T000000abcd") is None
    m = manifest(res.root, res.study)
    assert m["status"] == "complete" and m["study"] == "backends" and len(m["runs"]) == 32
    assert m["params"]["backends"] == ["posix", "io_uring"] and m["scale"] == "smoke"
    # the DB directory is gone, the results stay
    assert not list(Path(p.db_dir).glob("lab-db-*"))


def test_mbps_is_db_bench_bytes_per_second_from_the_slices(study):
    _, res = study
    f = res.frame
    whole, sl = f[f["method"] == "whole"], f[f["method"] == "slices"]
    # the throughput is the slices': the whole runs keep their latency only
    assert whole["mbps"].isna().all() and whole["cpuPer"].isna().all() and (whole["p50_us"] > 0).all()
    assert sl["p50_us"].isna().all() and (sl["cpuPer"] > 0).all()
    np.testing.assert_allclose(sl["mbps"], sl["bytes"] / 2**20 / sl["wall_s"])
    fills = f[f["test"].isin(["fillseq", "fillrandom"])]
    # a fill writes keys of 16 + 1000 bytes, as db_bench counts them: num of them in a whole run
    assert (fills["bytes"] == fills["ops"] * (16 + 1000)).all()
    assert (fills.loc[fills["method"] == "whole", "ops"] == 5000).all()
    rr = f[f["test"] == "readrandom"]
    # fillrandom left gaps: a read that finds no key moves no bytes, in a whole run and in slices alike
    assert ((rr["bytes"] < rr["ops"] * 1016) & (rr["bytes"] % 1016 == 0)).all()
    assert (whole.loc[whole["test"] == "readrandom", "bytes"] == whole.loc[whole["test"] == "readrandom",
                                                                           "found"] * 1016).all()
    seq = whole[whole["test"] == "readseq"]
    assert (seq["ops"] == seq["found"]).all() and (seq["ops"] < 5000).all()   # one pass over ~63% of keys


def test_the_remote_case_slows_device_reads(study):
    _, res = study
    f = res.frame
    rr = f[(f["test"] == "readrandom") & (f["method"] == "whole")].set_index(["case", "backend"])
    for b in ("posix", "io_uring"):
        # reads that reach the device take at least 88 us in the remote case: its p90 is far above local's
        assert (rr.loc[[("remote", b)], "p90_us"] > 88).all()
        assert (rr.loc[[("remote", b)], "fs.reads"] > 0).all()


def test_tables_put_the_report_beside(study):
    _, res = study
    thr = tables.throughput_table(res, "local")
    assert set(thr["test"]) == set(tables.LOCAL_TESTS)
    assert (thr.groupby("backend")["n"].first().to_dict()) == {"posix": 2, "io_uring": 1}
    row = thr[(thr["test"] == "fillseq") & (thr["backend"] == "posix")].iloc[0]
    assert (row["published MB/s"], row["published max"], row["published for"]) == (62.0, 64.0, "posix|libaio")
    row = thr[(thr["test"] == "readseq") & (thr["backend"] == "io_uring")].iloc[0]
    assert row["published MB/s"] == 66.0 and row["figure"] == "Figure 3"
    lat = tables.latency_pivot(res, "remote", tables.CLUSTER_TESTS)
    r = lat[(lat["test"] == "readrandom") & (lat["backend"] == "posix")].iloc[0]
    assert r["report"] == "p99 164.97; p99.9 242.49" and r["p99 us"] > 0
    z = STUDY.table("zippydb", res)
    assert z.set_index("backend").loc["posix", "published MB/s"] == 131.0
    assert z.set_index("backend").loc["io_uring", "published latency us"] == 13.4
    e = STUDY.table("emulated", res)
    assert set(e["case"]) == {"local", "remote"}
    pub = e[(e["case"] == "remote") & (e["test"] == "readrandom")].set_index("backend")["published MB/s"]
    assert pub.to_dict() == {"posix": 50.8, "io_uring": 91.3}
    hw = STUDY.table("hardware", res)
    assert (hw["source"] == params.SEED_FILE).sum() == 3 and hw["source"].iloc[-1] == "local"
    text = STUDY.findings(res)
    assert "the report (Figure 3): posix and libaio 62-64" in text and "Figure 4" in text


def test_the_five_figures_are_drawn_from_their_tables_and_saved_with_portable_ids(study, tmp_path):
    _, res = study
    assert list(STUDY.figures) == ["lab_throughput", "lab_throughput_ratio", "lab_latency", "lab_zippydb",
                                   "lab_emulated_throughput", "lab_emulated_latency"]
    for s in saved_figures(STUDY, res, tmp_path):
        assert len(s.side["runs"]) == 32 and s.side["rocksdb_builds"]
        assert f"{params.SEED_FILE}: lab_throughput" in s.side["published_sources"]
        assert s.again.axes, s.name
    # the bars' table: a median, a dot per repetition and the report's number where it gives one
    t = pd.read_csv(tmp_path / "lab_throughput.csv")
    fs = t[(t["test"] == "fillseq") & (t["backend"] == "posix")].set_index("kind")
    assert set(fs.index) == {"median", "rep", "published"}
    assert (fs.loc["published", "value"], fs.loc["published", "value_max"]) == (62.0, 64.0)
    # the emulated latency keeps the local case as the dashed reference and the remote case's report numbers
    e = pd.read_csv(tmp_path / "lab_emulated_latency.csv")
    assert set(e["case"]) == {"local", "remote"}
    rr = e[(e["case"] == "remote") & (e["test"] == "readrandom") & (e["kind"] == "published")
           & (e["backend"] == "posix")]
    assert set(rr["us"]) == {164.97, 242.49}


def test_every_comparison_has_its_interval_and_the_a_a_row_and_says_why_it_is_unresolved(study, tmp_path):
    """A 1 s budget holds one turn: every ratio is there, none resolved, and it says why."""
    _, res = study
    c = STUDY.table("comparisons", res)
    assert list(c.columns[:2]) == ["case", "test"]
    assert {"ratio", "lo", "hi", "half_width", "resolved", "turns", "status"} <= set(c.columns)
    local = c[c["case"] == "local"]
    assert set(local["config"]) == {"io_uring", "A/A"} and set(local["base"]) == {"posix"}
    assert set(local["test"]) == {"fillseq", "fillrandom", "readrandom", "readseq", "mixgraph"}
    assert (c["ratio"] > 0).all() and not c["resolved"].any() and (c["turns"] == 1).all()
    assert (c["status"] == "unresolved: too few turns (1 < 3), budget").all()
    assert res.turns["stopped"] == "budget" and manifest(res.root, res.study)["turns"]["turns"] == 1
    plt.close(STUDY.figure("lab_throughput_ratio", res, directory=tmp_path))
    fig = pd.read_csv(tmp_path / "lab_throughput_ratio.csv")
    assert set(fig["config"]) == {"io_uring", "A/A"} and "half_width" in fig.columns
    assert "unresolved, not to be read as differences" in STUDY.findings(res)


def test_the_study_is_in_the_registry_and_its_outputs_are_written(study, tmp_path):
    _, res = study
    with pytest.raises(ValueError, match=r"study 'nosuch': known are .*backends"):
        studies.get("nosuch")
    out = registered_outputs(STUDY, res, tmp_path)
    assert {"backends_throughput.tex", "backends_throughput.md", "backends_throughput.csv"} <= out.tables
    tex = (tmp_path / "tables" / "backends_throughput.tex").read_text()
    # a wide table's headers are stacked (rxlab.core.tables)
    assert "\\toprule" in tex and "published" in tex
    assert "Figure 3" in out.findings


def test_study_frame_ignores_other_runs(tmp_path):
    with store.RunWriter(tmp_path, {"name": "not-a-lab-run", "backend": "posix"}, {"hostname": "h"}) as w:
        w.add_step({"name": "fillseq", "ops": 1, "wall_s": 1.0, "bytes": 1016})
    assert STUDY.frame(store.catalog(tmp_path)).empty
    assert STUDY.load(tmp_path) is None


def test_an_interrupted_study_is_marked_and_never_loaded(tmp_path, monkeypatch):
    """Ctrl-C after the first run: the run stays in the store, the manifest says interrupted, the scratch
    directory is gone, and `load` does not return the half study."""
    p = STUDY.params(scale="smoke", backends=["posix"], device_cases=["local"], duration=0.1,
                     db_dir=str(tmp_path / "db"))
    real = type(STUDY).run_one
    calls = []

    def one_then_interrupt(self, ctx, row):
        if calls:
            raise KeyboardInterrupt
        calls.append(row)
        return real(self, ctx, row)

    monkeypatch.setattr(type(STUDY), "run_one", one_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        STUDY.run(p, root=tmp_path / "runs", progress=False)
    ids = [m.stem for m in (tmp_path / "runs" / ".studies").glob("*.json")]
    assert len(ids) == 1 and manifest(tmp_path / "runs", ids[0])["status"] == "interrupted"
    assert len(store.list_runs(tmp_path / "runs")) == 1
    assert not list((tmp_path / "db").iterdir())
    assert STUDY.load(tmp_path / "runs") is None


def test_the_writers_of_a_session_draw_alike_and_its_readers_apart():
    """In slices, the fills and mixgraph of every process of a turn draw the same keys, values and scan
    lengths (mixgraph's bytes are its scans'), the readers of the shared DB keys of their own."""
    for test in ("fillseq", "fillrandom", "mixgraph"):
        assert {slices.seed(test, 2, i, c) for i in range(4) for c in (0, 1)} == {2000}
    for test in ("readrandom", "readseq"):
        seeds = [slices.seed(test, 2, i, c) for i in range(4) for c in (0, 1)]
        assert len(set(seeds)) == len(seeds)
    assert slices.seed("mixgraph", 1, 0, 0) != slices.seed("mixgraph", 2, 0, 0)
