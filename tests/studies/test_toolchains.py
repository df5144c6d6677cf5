"""rxlab.studies.toolchains: parameters, the turns, a child run on the default build, the comparisons, the
post, and one real smoke study through the protocol (the A/A pair of the one build there is: runs, frame,
load, tables, figures redrawn from their tables).

Every test but the last runs on the default build. The last (marked slow)
compiles rxlab's module against one extra build and runs the study on both:

    .venv/bin/python -m pytest -m slow tests/studies/test_toolchains.py   # RXLAB_EXTRA_BUILD=<key> picks it

(it skips when no other finished build is in the cache:
`python -m rxlab.studies.toolchains.study matrix` lists the commands that make them).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures
from matplotlib.collections import PolyCollection
from matplotlib.colors import same_color

from rxlab.bench import driver
from rxlab.core import builds, store
from rxlab.core.study import manifest
from rxlab.core.turns_plan import turn_rows
from rxlab.studies.toolchains import STUDY, child, figures, findings, tables
from rxlab.studies.toolchains.params import TESTS, Params
from rxlab.studies.toolchains.result import ToolchainsResult
from rxlab.studies.toolchains.study import prepare_spec, spec_for, whole_tests

pytestmark = pytest.mark.timeout(300)

DEFAULT = builds.installed_build().name


def fake_build(cache: Path, key: str, **rec) -> Path:
    """A finished build's record in a cache (no library: enough for the parameters and the plan)."""
    d = cache / "rocksdb" / key
    (d / "bin").mkdir(parents=True)
    (d / "bin" / "db_bench").write_text("#!/bin/sh\n")
    version, cc = key.split("-", maxsplit=1)[0], "clang" if "clang" in key else "gcc"
    (d / "build.json").write_text(json.dumps({"version": version, "cc": cc, "lto": key.endswith("-lto"),
                                              "key": key, "compiler": cc, **rec}))
    return d


@pytest.fixture
def two_fake_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("RXLAB_CACHE", str(tmp_path / "cache"))
    fake_build(tmp_path / "cache", "9.10.0-gcc12")
    fake_build(tmp_path / "cache", "9.10.0-clang16")
    fake_build(tmp_path / "cache", "9.10.0-clang16-lto", lto=True)
    return ["9.10.0-gcc12", "9.10.0-clang16", "9.10.0-clang16-lto"]


# ------------------------------------------------------------------ parameters and the plan

@pytest.mark.parametrize(("kw", "message"), [
    ({"scale": "huge"}, "scale='huge': allowed are smoke, small, full"),
    ({"builds": ["nosuch"]}, "builds=['nosuch']: 'nosuch' is not a finished build: have "),
    ({"builds": []}, "builds=[]: expected None or a non-empty list of distinct build keys"),
    ({"base": "nosuch"}, "base='nosuch': expected a finished build: have "),
    ({"tests": ["readrandom"]},
     "tests=['readrandom']: expected a non-empty list of distinct tests from fillseq"),
    ({"repeats": 0}, "repeats=0: expected None or an integer 1..100"),
    ({"target": 0}, "target=0: expected a half-width in percent"),
    ({"duration": -1}, "duration=-1: expected None or seconds 0.1..3600"),
    ({"threads": 0}, "threads=0: expected an integer 1..64"),
    ({"sliced": "yes"}, "sliced='yes': expected True (every build at once, in slices) or False (whole runs)"),
    ({"write_rate_limit": "1"}, "write_rate_limit='1': expected a size of at least 1024 bytes"),
    ({"colour": "red"},
     "unknown parameter 'colour': allowed are scale, target, budget, min_turns, max_turns, builds, base"),
])
def test_bad_parameters_fail_in_one_line(kw, message):
    assert message in refusal(STUDY, **kw)


def test_the_defaults_run_the_installed_build_against_itself():
    p = STUDY.params(scale="smoke")
    assert p.builds == [DEFAULT] and p.base == DEFAULT
    assert STUDY.params(scale="smoke", builds=["default"], base="default").builds == [DEFAULT]
    s = p.settings()
    assert s.cache_size >= 2 * s.db_bytes      # the DB is cached by RocksDB
    assert isinstance(p, Params) and Params.__dataclass_fields__["scale"].default == "small"
    # in turns: the scale's budget (smoke: 5 s, CI time does not grow), or exactly `repeats` turns
    assert p.rule().budget_s == 5.0 and p.rule().min_turns == 3
    exact = STUDY.params(scale="smoke", repeats=3).rule()
    assert (exact.min_turns, exact.max_turns, exact.budget_s) == (3, 3, None)
    assert "turns" in dict(s.rows()) and "5 s budget" in dict(s.rows())["turns"]


def test_the_timed_tests_run_in_slices_of_their_duration_or_as_whole_runs(two_fake_builds):
    # at small the study needs a build to compare the base with: the fake ones, whatever this machine has
    a, b, c = two_fake_builds

    def small(**kw):
        return STUDY.params(scale="small", builds=[b, c], base=a, **kw)

    s = small().settings()
    # each build runs a timed test `duration` seconds a turn: 2 s in 4 slices of 0.5 s at small
    assert s.sliced and (s.duration, s.rounds, s.slice_s) == (2.0, 4, 0.5)
    assert "4 rounds of 0.5 s slices" in dict(s.rows())["timed tests, per turn"]
    assert small(duration=6).settings().rounds == 12
    assert whole_tests(s) == ["fillseq"]                   # the whole runs: fillseq alone, without a warm-up
    assert driver.expand(spec_for(s, "/x", "n", 0, tests=whole_tests(s))["steps"])[-1]["label"] == "fillseq"
    # a sliced process's DB is brought to the state a whole run's is in after fillseq
    prep = prepare_spec(s, "/x", "n", 0, DEFAULT)
    assert [st["label"] for st in driver.expand(prep["steps"])] == ["fillseq", "warmup"]
    whole = small(sliced=False).settings()
    assert whole_tests(whole) == list(TESTS)
    assert dict(whole.rows())["timed tests, per turn"] == "a whole run of each build, 2 s a test"


def test_each_turn_runs_every_build_once_and_the_base_twice(two_fake_builds):
    a, b, c = two_fake_builds
    p = STUDY.params(scale="small", builds=[c, b, a], base=a)
    assert p.builds == [a, c, b]               # the base first: the protocol's base is the plan's first
    assert STUDY.params(scale="small", builds=[b, c], base=a).builds == [a, b, c]   # the base joins the set
    units = STUDY.plan(STUDY.params(scale="small", builds=[b, c], base=a))
    assert list(units["build"]) == [a, b, c] and "rep" not in units.columns    # one turn's rows
    assert list(units["toolchain"]) == ["gcc", "clang", "clang+LTO"]
    assert set(units["module"]) == {"to compile"}
    turns = [turn_rows(units, STUDY.compare, t) for t in range(4)]
    assert [list(zip(t["build"], t["copy"], strict=True)) for t in turns] == [
        [(a, 0), (b, 0), (c, 0), (a, 1)],          # the A/A pair of the base around the others
        [(a, 1), (c, 0), (b, 0), (a, 0)],          # reversed every other turn (ABBA)
        [(b, 0), (c, 0), (a, 1), (a, 0)],          # rotated every two turns
        [(a, 0), (a, 1), (c, 0), (b, 0)]]
    assert [set(t["rep"]) for t in turns] == [{0}, {1}, {2}, {3}]
    # a build resolved in every comparison drops out; the base and its A/A copy always run
    later = turn_rows(units, STUDY.compare, 4, active={(): [c]})
    assert sorted(zip(later["build"], later["copy"], strict=True)) == sorted([(a, 0), (a, 1), (c, 0)])


def test_the_spec_runs_the_posts_steps_on_a_cached_db():
    s = STUDY.params(scale="smoke").settings()
    spec = spec_for(s, "/tmp/x", "n", seed=0)
    steps = driver.expand(spec["steps"])
    labels = [st["label"] for st in steps]
    assert labels == ["fillseq", "warmup", "readwhilewriting", "fwdrangewhilewriting", "revrangewhilewriting",
                      "overwrite"]
    rev = [st.get("reverse_iterator") for st in steps if st["name"] == "seekrandomwhilewriting"]
    assert rev == [False, True]
    assert spec["cache_size"] >= 2 * s.db_bytes and spec["write_rate_limit"] == s.write_rate_limit
    assert (spec["key_size"], spec["value_size"]) == (16, 400)
    assert spec_for(STUDY.params(scale="smoke", value_size=100).settings(), "/x", "n", 0)["value_size"] == 100
    one = STUDY.params(scale="smoke", tests=["readww"]).settings()
    assert spec_for(one, "/x", "n", 0)["steps"] == ["readwhilewriting"]


# ------------------------------------------------------------------ no comparison without both sides

@pytest.fixture
def only_the_base(tmp_path, monkeypatch):
    """A cache (RXLAB_CACHE) that holds one finished build: the installed module's key."""
    monkeypatch.setenv("RXLAB_CACHE", str(tmp_path / "cache"))
    fake_build(tmp_path / "cache", DEFAULT)
    return tmp_path / "cache"


def test_the_matrix_is_refused_in_one_line_naming_the_missing_builds(only_the_base):
    version = DEFAULT.split("-")[0]
    msg = refusal(STUDY, scale="small")
    assert msg.startswith("toolchains: the matrix (gcc, clang, clang+LTO for RocksDB ")
    assert "lacks 5 builds: " in msg and f"{version} clang, {version} clang+LTO" in msg
    assert f"rxlab build-rocksdb --version {version} --cc clang --lto" in msg
    assert "make toolchains TOOLCHAIN_VERSIONS=" in msg   # the whole matrix in one command
    # the second version: the newest of the matrix's others, all three of its toolchains
    other = "9.11.2" if version != "9.11.2" else "9.10.0"
    assert all(f"rxlab build-rocksdb --version {other} --cc {cc}" in msg for cc in ("gcc", "clang"))
    assert refusal(STUDY, scale="full").startswith("toolchains: the matrix")


def test_the_base_alone_is_refused_beyond_smoke(only_the_base):
    msg = refusal(STUDY, scale="small", builds=[DEFAULT])
    assert msg.startswith(f"builds=['{DEFAULT}']: only the base build {DEFAULT}: nothing to compare it with")
    assert "rxlab build-rocksdb --version " in msg and "--cc clang" in msg
    assert refusal(STUDY, scale="small", builds=["default"]).startswith("builds=['default']: only the base")
    # smoke (CI) checks the pipeline with the one build there is
    assert STUDY.params(scale="smoke").builds == [DEFAULT]


def test_the_matrix_runs_when_every_build_is_there(tmp_path, monkeypatch):
    monkeypatch.setenv("RXLAB_CACHE", str(tmp_path / "cache"))
    keys = [f"{v}-{tc}" for v in ("9.10.0", "9.11.2") for tc in ("gcc12", "clang16", "clang16-lto")]
    for k in keys:
        fake_build(tmp_path / "cache", k)
    p = STUDY.params(scale="small", base="9.10.0-gcc12")
    assert sorted(p.builds) == sorted(keys) and p.builds[0] == "9.10.0-gcc12"
    assert p.rule().budget_s == 720.0          # small: 12 minutes of turns for six builds (its SCALES)
    # a build with extra flags is no part of the matrix
    fake_build(tmp_path / "cache", "9.10.0-gcc12-f0123abcd")
    assert sorted(STUDY.params(scale="small", base="9.10.0-gcc12").builds) == sorted(keys)
    # two builds given: a comparison, whatever the matrix lacks
    assert STUDY.params(scale="small", base=keys[0], builds=[keys[1]]).builds == keys[:2]


# ------------------------------------------------------------------ a child process per run

def test_a_child_runs_on_the_default_build_and_the_run_records_it(tmp_path):
    s = STUDY.params(scale="smoke", tests=["fillseq", "readww"], duration=0.2).settings()
    spec = spec_for(s, str(tmp_path / "db"), f"toolchains-test-{DEFAULT}-r0", seed=0)
    spec["num"] = 3000
    run = child.run_child(DEFAULT, spec, root=tmp_path / "runs", meta={"toolchain": "gcc", "base": DEFAULT})
    assert store.is_complete(run)
    cat = store.catalog(tmp_path / "runs", runs=[run])
    assert set(cat["rocksdb_build"]) == {DEFAULT}
    assert set(cat["run_name"]) == {f"toolchains-test-{DEFAULT}-r0"}
    assert set(cat["spec.toolchain"]) == {"gcc"} and set(cat["spec.base"]) == {DEFAULT}   # the study's labels
    assert list(cat["name"]) == ["fillseq", "warmup", "readwhilewriting"]
    assert (cat.loc[cat["name"] == "readwhilewriting", "writer_ops"] > 0).all()   # the writer wrote


def test_a_child_refuses_a_module_of_another_build(tmp_path):
    # a build in another cache: the installed module is not compiled against it
    fake_build(tmp_path / "cache", DEFAULT)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"db": str(tmp_path / "db")}))
    env = {**os.environ, "RXLAB_CACHE": str(tmp_path / "cache")}
    env.pop("RXLAB_BUILD", None)
    r = subprocess.run([sys.executable, "-m", child.ENTRY, "child", DEFAULT, str(spec)], env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "the module loaded is compiled against" in r.stderr, r.stderr
    assert not (tmp_path / "db").exists()
    # the entry module runs once, as __main__ (the package does not import it first)
    assert "RuntimeWarning" not in r.stderr, r.stderr


def test_the_matrix_commands_cover_versions_and_toolchains():
    cmds = child.matrix_commands()
    assert len(cmds) == 3 * 3
    assert all(c.startswith("nice -n 19 ionice -c3 rxlab build-rocksdb --version ") for c in cmds)
    assert sum("--lto" in c for c in cmds) == 3 and sum("--cc clang" in c for c in cmds) == 6
    r = subprocess.run([sys.executable, "-m", child.ENTRY, "matrix"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0 and r.stdout.splitlines() == cmds


# ------------------------------------------------------------------ the comparisons

BASE = "9.10.0-gcc12"
SID = "20260101T000000abcd"


def turns_frame(speeds: dict, turns: int = 4, tests=("fillseq", "readww", "overwrite"), seed: int = 1,
                base: str = BASE) -> pd.DataFrame:
    """A study's frame as the turns make it: per turn every build once and the base twice (copy 1), each
    run's QPS its build's speed times the turn's drift (shared by every build in the turn) times noise.
    `speeds`: {build: (toolchain, version, speed, noise sd of log QPS)}."""
    rng = np.random.default_rng(seed)
    rows = []
    for turn in range(turns):
        drift = rng.uniform(0.6, 1.4)
        for b, (tc, v, speed, sd) in speeds.items():
            for copy in (0, 1) if b == base else (0,):
                rows += [{"study": SID, "rep": turn, "copy": copy, "build": b, "toolchain": tc, "version": v,
                          "base": base, "test": t, "rocksdb_build": b, "spec.scale": "small",
                          "qps": 1000.0 * drift * speed * np.exp(rng.normal(0, sd))} for t in tests]
    return pd.DataFrame(rows)


def result_of(frame: pd.DataFrame, tmp_path: Path, stopped: str = "budget") -> ToolchainsResult:
    turns = {"target": 2.0, "min_turns": 3, "stopped": stopped, "turns": int(frame["rep"].max()) + 1}
    return ToolchainsResult(study=SID, frame=frame, runs=[], root=tmp_path, name="toolchains", turns=turns)


def marker(fig, label: str):
    return [ln for ax in fig.axes for ln in ax.lines if ln.get_label() == label]


def test_every_build_is_a_ratio_to_the_base_paired_within_turns_and_the_unresolved_say_so(tmp_path):
    # clang is 10% faster in every turn; the turns' drift (0.6x to 1.4x) hits every build alike; clang+LTO
    # is noisy (10% per run): four turns cannot resolve it to +-2%
    f = turns_frame({BASE: ("gcc", "9.10.0", 1.0, 0.002), "9.10.0-clang16": ("clang", "9.10.0", 1.1, 0.002),
                     "9.10.0-clang16-lto": ("clang+LTO", "9.10.0", 1.2, 0.10)})
    res = result_of(f, tmp_path)
    c = STUDY.table("comparisons", res)
    assert {"ratio", "lo", "hi", "half_width", "resolved", "turns", "status"} <= set(c.columns)
    assert set(c["base"]) == {BASE} and list(c["test"].unique()) == ["fillseq", "readww", "overwrite"]
    assert list(c.loc[c["test"] == "fillseq", "config"]) == ["9.10.0-clang16", "9.10.0-clang16-lto", "A/A"]
    clang = c[c["config"] == "9.10.0-clang16"]
    assert np.allclose(clang["ratio"], 1.1, rtol=0.01) and clang["resolved"].all()
    assert (clang["turns"] == 4).all()
    assert ((clang["lo"] > 1.05) & (clang["hi"] < 1.15)).all() and (clang["toolchain"] == "clang").all()
    lto = c[c["config"] == "9.10.0-clang16-lto"]
    assert not lto["resolved"].any() and lto["status"].str.match(r"unresolved: budget \(\+-\d").all()
    aa = c[c["config"] == "A/A"]
    assert len(aa) == 3 and (aa["comparison"] == f"{BASE} A/A").all() and (aa["half_width"] < 2).all()
    # the same ratios unpaired would carry the drift: their spread over turns is far wider than the paired
    per_turn = f[f["build"] == "9.10.0-clang16"].groupby("rep")["qps"].mean()
    assert per_turn.max() / per_turn.min() > 1.1
    text = STUDY.findings(res)
    assert f"- A/A control: the base build {BASE} against itself" in text
    assert "9.10.0-clang16 (clang) vs 9.10.0-gcc12: 3 of 3 tests resolved (fillseq 1.1" in text
    assert ("9.10.0-clang16-lto (clang+LTO) vs 9.10.0-gcc12: 0 of 3 tests resolved; unresolved, not to be "
            "read as differences: fillseq ") in text
    # the figure: resolved filled, unresolved hollow, in the study's toolchain colours; the A/A band per test
    fig = STUDY.figure("toolchains_relative_qps", res, save=False)
    ok, wide = marker(fig, "clang"), marker(fig, "clang+LTO")
    assert len(ok) == len(wide) == 3                                          # a marker per test
    assert all(same_color(m.get_markerfacecolor(), figures.TOOLCHAIN_COLORS["clang"]) for m in ok)
    assert all(same_color(m.get_markerfacecolor(), "white") for m in wide)
    assert all(same_color(m.get_markeredgecolor(), figures.TOOLCHAIN_COLORS["clang+LTO"]) for m in wide)
    ax = fig.axes[0]
    assert sum(isinstance(p, PolyCollection) for p in ax.collections) == 3   # the A/A band of each test
    assert ax.get_title() == "RocksDB 9.10.0 (4 turns)" and ax.get_ylabel() == f"QPS ratio to {BASE}"
    assert "unresolved (hollow, dashed)" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_by_version_each_build_is_against_gcc_of_its_own_version(tmp_path):
    # 7.8.3 is half as fast as 9.10.0 whatever the compiler; clang is +10% in both versions
    kinds = (("gcc12", "gcc", 1.0), ("clang16", "clang", 1.1), ("clang16-lto", "clang+LTO", 1.2))
    speeds = {f"{v}-{k}": (tc, v, speed * fac, 0.002) for v, speed in (("9.10.0", 1.0), ("7.8.3", 0.5))
              for k, tc, fac in kinds}
    speeds["9.11.2-clang16"] = ("clang", "9.11.2", 1.0, 0.002)        # no gcc build of 9.11.2
    res = result_of(turns_frame(speeds), tmp_path, stopped="")
    rv = STUDY.table("relative_by_version", res)
    assert set(rv["version"]) == {"7.8.3", "9.10.0"}                   # nothing to compare 9.11.2 with
    cmp = rv[rv["config"] != "A/A"]
    assert (cmp["base"] == cmp["version"] + "-gcc12").all() and cmp["resolved"].all()
    got = cmp.set_index(["config", "test"])["ratio"]
    assert got[("7.8.3-clang16", "fillseq")] == pytest.approx(1.1, rel=0.01)
    assert got[("9.10.0-clang16-lto", "overwrite")] == pytest.approx(1.2, rel=0.01)
    # the study's A/A control beside every version
    aa = rv[rv["config"] == "A/A"]
    assert sorted(aa["version"].unique()) == ["7.8.3", "9.10.0"] and set(aa["base"]) == {BASE}
    # against the one base build, 7.8.3's clang is 45% slower: the version, not the compiler
    main = STUDY.table("comparisons", res).set_index(["config", "test"])["ratio"]
    assert main[("7.8.3-clang16", "fillseq")] == pytest.approx(0.55, rel=0.01)
    summ = STUDY.table("by_version", res)
    assert list(summ["toolchain"]) == ["clang", "clang+LTO"] * 2
    lto = summ[(summ["version"] == "9.10.0") & (summ["toolchain"] == "clang+LTO")].iloc[0]
    assert lto["mean_pct"] == pytest.approx(20.0, abs=0.5) and (lto["resolved"], lto["faster"]) == (3, 3)
    assert re.search(r"- RocksDB 7\.8\.3, against 7\.8\.3-gcc12: clang \+(9\.9|10\.\d)% on average, 3 of 3 "
                     r"tests resolved \(of those faster in 3, slower in 0\)", findings.by_version(rv))
    # drawn: a panel per version, against its own gcc build, the study's A/A band in each
    fig = STUDY.figure("toolchains_relative_by_version", res, save=False)
    assert [ax.get_title() for ax in fig.axes] == ["RocksDB 7.8.3 (vs 7.8.3-gcc12, 4 turns)",
                                                   "RocksDB 9.10.0 (vs 9.10.0-gcc12, 4 turns)"]
    assert all(sum(isinstance(p, PolyCollection) for p in ax.collections) == 3 for ax in fig.axes)
    assert fig.axes[0].get_ylabel() == "QPS ratio to gcc of the same version"
    # against the one base, the post's crosses (clang/gcc in one version) stand by the base's version only
    t = figures.relative_data(res)
    assert set(t.loc[t["kind"] == "post", "panel"]) == {"RocksDB 9.10.0"}
    assert set(t.loc[t["kind"] == "here", "panel"]) == {"RocksDB 7.8.3", "RocksDB 9.10.0", "RocksDB 9.11.2"}


def test_the_posts_numbers_beside_ours(tmp_path):
    pub = tables.published_relative()
    one = pub[(pub["server"] == "pn53") & (pub["test"] == "fillseq")].set_index("toolchain")["rel"]
    assert one["clang"] == pytest.approx(1.11) and one["clang+LTO"] == pytest.approx(1.15)
    readww = pub[(pub["server"] == "pn53") & (pub["test"] == "readww") & (pub["toolchain"] == "clang")]
    assert readww["rel"].item() == pytest.approx(0.95)                       # "~5% less"
    arm = pub[(pub["server"] == "arm") & (pub["test"] == "overwrite")]
    assert set(arm["rel"]) == {1.0} and arm["similar"].all()                  # "similar"
    assert set(pub["test"]) == set(TESTS)
    res = result_of(turns_frame({BASE: ("gcc", "9.10.0", 1.0, 0.002),
                                 "9.10.0-clang16": ("clang", "9.10.0", 1.05, 0.002)}, tests=TESTS), tmp_path)
    table = STUDY.table("post", res)
    assert list(table.index) == list(TESTS)
    assert table.loc["fillseq", "post clang/gcc pn53"] == pytest.approx(1.11)
    assert table.loc["fillseq", f"9.10.0-clang16 / {BASE} ratio"] == pytest.approx(1.05, rel=0.01)
    assert table.loc["fillseq", f"9.10.0-clang16 / {BASE} status"] == "resolved"
    assert f"{BASE} A/A 95% CI" in table.columns
    text = findings.against_base(res.comparisons, BASE, pub)
    assert re.search(r"5 of 5 tests resolved \(fillseq 1\.0[45]\d \[1\.0\d\d\.\.1\.0\d\d\] \+-0\.\d%, "
                     r"post \+11%/\+3%/\+20%", text)
    assert "~10% more QPS with clang+LTO than gcc" in text


# ------------------------------------------------------------------ a real smoke study

@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("toolchain-runs")
    # budget 1 s: the rule stops after the first turn whatever this machine's speed (a turn is six runs
    # of 0.2 s); the smoke default (5 s) held a second turn when a turn took under 2.5 s, as on CI.
    p = STUDY.params(scale="smoke", tests=["fillseq", "readww", "overwrite"], duration=0.2, budget="1s",
                     db_dir=str(tmp_path_factory.mktemp("toolchain-db")))
    return p, STUDY.run(p, root=root, progress=False)


def test_every_run_is_a_child_on_its_build_stored_and_found_again(study):
    """At smoke the one build there is runs as the A/A pair: one turn (the 1 s budget holds no second)."""
    p, res = study
    assert len(STUDY.plan(p)) == 1 and res.turns["turns"] == 1 and res.turns["stopped"] == "budget"
    # fillseq a whole run of each copy; readww and overwrite on both at once, in slices: a run per copy each
    assert len(res.runs) == 2 + 2 * 2 and all(store.is_complete(r) for r in res.runs)
    cat = store.catalog(res.root, runs=res.runs)
    names = sorted(cat["run_name"].unique())
    assert [n.split("-r", 1)[-1] for n in names] == ["0", "0-overwrite", "0-readww", "0a", "0a-overwrite",
                                                      "0a-readww"]     # the base's A/A copy: r<turn>a
    f = res.frame
    assert len(f) == 2 * 3 and set(f["test"]) == {"fillseq", "readww", "overwrite"}
    sliced = f[f["test"] != "fillseq"]
    assert (sliced["method"] == "slices").all() and f.loc[f["test"] == "fillseq", "method"].isna().all()
    # a sliced run's operations are its workers' count over its slices, its CPU the process's
    assert (sliced["ops"] > 0).all() and (sliced["wall_s"] > 0).all() and (sliced["cpuPer"] > 0).all()
    assert np.allclose(sliced["qps"], sliced["ops"] / sliced["wall_s"])
    assert set(f["build"]) == set(f["rocksdb_build"]) == {DEFAULT} and res.builds == [DEFAULT]
    assert set(f["toolchain"]) == {"gcc"} and set(f["base"]) == {DEFAULT}
    assert set(f["rep"]) == {0} and sorted(set(f["copy"])) == [0, 1]
    assert (f["qps"] > 0).all() and res.base == DEFAULT
    m = manifest(res.root, res.study)
    assert m["status"] == "complete" and m["study"] == "toolchains" and m["params"]["builds"] == [DEFAULT]
    assert m["turns"]["turns"] == 1 and m["turns"]["budget_s"] == 1.0
    again = STUDY.load(res.root)
    assert again is not None and again.study == res.study and again.base == DEFAULT
    cols = ["test", "config", "ratio", "status"]
    assert again.comparisons[cols].equals(res.comparisons[cols])
    assert not list(Path(p.db_dir).iterdir())             # the DBs are gone, the runs stay


def test_tables_and_findings_of_the_base_build_alone(study):
    _, res = study
    c = STUDY.table("comparisons", res)
    assert list(c["test"]) == ["fillseq", "readww", "overwrite"] and set(c["config"]) == {"A/A"}
    assert set(c["base"]) == {DEFAULT} and (c["ratio"] > 0).all() and (c["turns"] == 1).all()
    assert (c["status"] == "unresolved: too few turns (1 < 3), budget").all() and not c["resolved"].any()
    q = STUDY.table("qps", res)
    assert (q["runs"] == 2).all() and (q["qps"] > 0).all()
    post = STUDY.table("post", res)
    assert f"{DEFAULT} A/A ratio" in post.columns and "post clang+LTO/gcc pn53" in post.columns
    assert STUDY.table("by_version", res).empty
    assert set(STUDY.table("relative_by_version", res)["config"]) == {"A/A"}
    text = STUDY.findings(res)
    assert f"{DEFAULT} ran alone: only the A/A control; no build to compare" in text
    assert f"- A/A control: the base build {DEFAULT} against itself" in text


def test_no_figure_compares_the_base_with_itself_beyond_smoke(study, tmp_path):
    _, res = study
    small = ToolchainsResult(study=res.study, frame=res.frame.assign(**{"spec.scale": "small"}),
                             runs=res.runs, root=res.root, name=res.name)
    assert small.scale == "small" and small.builds == [DEFAULT]
    for name in STUDY.figures:
        with pytest.raises(ValueError) as e:
            STUDY.figure(name, small, save=False)
        assert str(e.value).startswith(f"toolchains: study {res.study} ran only {DEFAULT}: no comparison")
        assert "\n" not in str(e.value)
    for name in ("comparisons", "qps", "post", "by_version", "relative_by_version"):
        with pytest.raises(ValueError, match=f"^toolchains: study {res.study} ran only {DEFAULT}: no "):
            STUDY.table(name, small)
    assert len(STUDY.table("published", small))          # the post's numbers alone compare nothing here
    with pytest.raises(ValueError, match="no comparison to show"):
        STUDY.save_outputs(small, tmp_path)
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.csv"))
    # at smoke the one build is drawn, titled as the A/A control it is
    fig = STUDY.figure("toolchains_relative_qps", res, save=False)
    assert "against itself only (A/A control" in fig.get_suptitle()
    assert not [ln for ax in fig.axes for ln in ax.lines if ln.get_label() in figures.TOOLCHAIN_COLORS]


def test_each_figure_is_redrawn_from_its_saved_table_alone(study, tmp_path):
    _, res = study
    assert list(STUDY.figures) == ["toolchains_relative_qps", "toolchains_relative_by_version",
                                   "toolchains_qps"]
    for s in saved_figures(STUDY, res, tmp_path):
        assert s.side["rocksdb_builds"] == [DEFAULT] and len(s.side["runs"]) == 2 + 2 * 2
        assert DEFAULT in set(s.table["build"].dropna())   # the table names the builds it compares
        assert s.again.axes and all(ax.has_data() for ax in s.again.axes)
    t = pd.read_csv(tmp_path / "toolchains_relative_qps.csv")
    assert set(t["kind"]) == {"here", "post"} and set(t.loc[t["kind"] == "here", "config"]) == {"A/A"}
    assert set(t.loc[t["kind"] == "post", "test"]) == {"fillseq", "readww", "overwrite"}
    q = pd.read_csv(tmp_path / "toolchains_qps.csv")
    assert (q["kind"] == "rep").sum() == 6 and (q["kind"] == "mean").sum() == 3
    assert sorted(set(q["copy"].dropna())) == [0, 1]


def test_the_study_is_registered_and_its_outputs_are_written(study, tmp_path):
    _, res = study
    out = registered_outputs(STUDY, res, tmp_path)
    assert {"toolchains_comparisons.tex", "toolchains_post.md", "toolchains_published.csv"} <= out.tables
    assert "only the A/A control" in out.findings


def test_study_frame_ignores_other_runs(tmp_path):
    with store.RunWriter(tmp_path, {"name": "toolchains-nostudy-x-r0"}, {"hostname": "h"}) as w:
        w.add_step({"name": "fillseq", "ops": 1, "wall_s": 1.0})
    assert STUDY.frame(store.catalog(tmp_path)).empty
    assert STUDY.load(tmp_path) is None


# ------------------------------------------------------------------ another build (slow)

def extra_build() -> str | None:
    want = os.environ.get("RXLAB_EXTRA_BUILD")
    keys = [r["key"] for r in builds.list_builds() if r["key"] != DEFAULT]
    if want:
        return want if want in keys else None
    return next((k for k in keys if "clang" in k and not k.endswith("-lto")), keys[0] if keys else None)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_an_extra_build_runs_in_its_own_process_with_its_own_module(request, tmp_path):
    markexpr = request.config.getoption("markexpr") or ""
    if not ("slow" in markexpr and "not slow" not in markexpr):
        pytest.skip("compiles the module against an extra build: run with -m slow")
    key = extra_build()
    if key is None:
        pytest.skip("no finished build besides the default: "
                    "`python -m rxlab.studies.toolchains.study matrix` lists the commands")
    mod = builds.ensure_module(key, jobs=2)
    assert mod is not None and builds.module_current(key)
    assert sorted(mod.glob("_core*.so")) and (mod / "librxlab_plugin.so").is_file()
    # the module loads the extra build's library, and reports it
    code = ("import rxlab, os; from rxlab.bench.references import plugin_path; "
            "from rxlab.core.builds import active_build; rxlab._core;"   # the extension loads when first used
            "maps = [l.split()[-1] for l in open('/proc/self/maps') if 'librocksdb' in l];"
            "print(rxlab._core.rocksdb_build, active_build(), plugin_path(), os.path.realpath(maps[0]))")
    r = subprocess.run([sys.executable, "-c", code], env={**os.environ, "RXLAB_BUILD": key},
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr
    core_build, active, plugin, lib = r.stdout.split()
    want = builds.get_build(key)["path"]
    assert core_build == active == want
    assert Path(plugin).parent == mod
    assert Path(lib).resolve().is_relative_to(Path(want).resolve())
    # the study over both builds, each run in its own child, each run recording its build
    p = STUDY.params(scale="smoke", builds=[DEFAULT, key], repeats=2, tests=["fillseq", "readww"])
    res = STUDY.run(p, root=tmp_path / "runs", progress=False)
    df = res.frame
    assert sorted(set(df["build"])) == sorted({DEFAULT, key}) and sorted(res.builds) == sorted({DEFAULT, key})
    assert len(df) == 2 * 3 * 2                 # two turns of three runs (the base twice), two tests each
    c = res.comparisons
    assert set(c["config"]) == {key, "A/A"} and set(c["base"]) == {DEFAULT} and c["ratio"].gt(0).all()
    assert (c["turns"] == 2).all() and res.turns["turns"] == 2
