"""rxlab.studies.toolchains: parameters, the plan, a child run on the default build, the statistics, the post,
and one real smoke study through the protocol (runs, frame, load, tables, figures redrawn from their tables).

Every test but the last runs on the default build. The last (marked slow)
compiles rxlab's module against one extra build and runs the study on both:

    .venv/bin/python -m pytest -m slow tests/studies/test_toolchains.py   # RXLAB_EXTRA_BUILD=<key> picks it

(it skips when no other finished build is in the cache:
`python -m rxlab.studies.toolchains.study matrix` lists the commands that make them).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers_studies import refusal, registered_outputs, saved_figures

from rxlab.bench import driver
from rxlab.core import builds, store
from rxlab.core.study import manifest
from rxlab.studies.toolchains import STUDY, child, figures, findings, relative, tables
from rxlab.studies.toolchains.params import TESTS, Params
from rxlab.studies.toolchains.result import ToolchainsResult
from rxlab.studies.toolchains.study import spec_for

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
    ({"duration": -1}, "duration=-1: expected None or seconds 0.1..3600"),
    ({"threads": 0}, "threads=0: expected an integer 1..64"),
    ({"write_rate_limit": "1"}, "write_rate_limit='1': expected a size of at least 1024 bytes"),
    ({"colour": "red"}, "unknown parameter 'colour': allowed are scale, builds, base"),
])
def test_bad_parameters_fail_in_one_line(kw, message):
    assert message in refusal(STUDY, **kw)


def test_the_defaults_run_the_installed_build_against_itself():
    p = STUDY.params(scale="smoke")
    assert p.builds == [DEFAULT] and p.base == DEFAULT
    assert STUDY.params(scale="smoke", builds=["default"], base="default").builds == [DEFAULT]
    s = p.settings()
    assert s.cache_size >= 2 * s.db_bytes      # the DB is cached by RocksDB
    assert s.repeats >= 2                      # a spread even at smoke scale
    assert isinstance(p, Params) and Params.__dataclass_fields__["scale"].default == "small"


def test_the_plan_rotates_the_build_order_each_repetition(two_fake_builds):
    a, b, c = two_fake_builds
    p = STUDY.params(scale="small", builds=[b, c], base=a, repeats=3)
    assert p.builds == [a, b, c]               # the base joins the set
    order = STUDY.plan(p)
    assert list(order["build"]) == [a, b, c, b, c, a, c, a, b]
    assert list(order["toolchain"]) == ["gcc", "clang", "clang+LTO", "clang", "clang+LTO", "gcc", "clang+LTO",
                                        "gcc", "clang"]
    assert list(order["rep"]) == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert set(order["module"]) == {"to compile"}


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


# ------------------------------------------------------------------ the statistics

def frame(values: dict) -> pd.DataFrame:
    rows = [{"build": b, "test": t, "qps": q, "toolchain": tc, "version": "9.10.0"}
            for (b, tc, t), qs in values.items() for q in qs]
    return pd.DataFrame(rows)


def test_relative_qps_and_its_interval():
    df = frame({("g", "gcc", "fillseq"): [100.0, 102.0, 98.0, 100.0],
                ("c", "clang", "fillseq"): [110.0, 111.0, 109.0, 110.0],
                ("c1", "clang", "fillseq"): [130.0]})
    rel = relative.relative_qps(df, "g").set_index("build")
    assert rel.loc["g", "rel"] == 1.0 and rel.loc["g", "lo"] < 1 < rel.loc["g", "hi"]
    assert rel.loc["c", "rel"] == pytest.approx(1.10)
    assert 1.0 < rel.loc["c", "lo"] < 1.10 < rel.loc["c", "hi"] < 1.2   # significant, and not absurdly wide
    assert rel.loc["c", "pct"] == pytest.approx(10.0)
    # the base against itself: its own spread counted twice, symmetric around 1
    assert rel.loc["g", "hi"] - 1 == pytest.approx(1 - rel.loc["g", "lo"])
    # one repetition: the ratio of means, no interval
    assert rel.loc["c1", "n"] == 1 and np.isnan(rel.loc["c1", "lo"])
    # wider spread, wider interval
    noisy = frame({("g", "gcc", "fillseq"): [80.0, 120.0, 90.0, 110.0],
                   ("c", "clang", "fillseq"): [100.0, 120.0, 110.0, 110.0]})
    nrel = relative.relative_qps(noisy, "g").set_index("build")
    assert nrel.loc["c", "hi"] - nrel.loc["c", "lo"] > rel.loc["c", "hi"] - rel.loc["c", "lo"]


def test_paired_repetitions_cancel_the_drift_they_share():
    # both builds drift together over the repetitions; clang is 10% faster in each one
    drift = [100.0, 130.0, 80.0, 110.0]
    rows = [{"build": b, "test": "fillseq", "rep": i, "qps": q * f, "toolchain": tc, "version": "9.10.0"}
            for b, tc, f in (("g", "gcc", 1.0), ("c", "clang", 1.1)) for i, q in enumerate(drift)]
    df = pd.DataFrame(rows)
    paired = relative.relative_qps(df, "g").set_index("build")
    unpaired = relative.relative_qps(df, "g", paired=False).set_index("build")
    assert paired.loc["c", "method"] == "paired" and unpaired.loc["c", "method"] == "unpaired"
    assert paired.loc["c", "rel"] == pytest.approx(1.1)
    assert paired.loc["c", "hi"] - paired.loc["c", "lo"] < 1e-9        # the drift is gone
    assert unpaired.loc["c", "lo"] < 1.0 < unpaired.loc["c", "hi"]    # unpaired, it hides the 10%
    assert paired.loc["g", "method"] == "unpaired"                     # the base row is the noise floor


def test_by_version_each_build_is_against_gcc_of_its_own_version(tmp_path):
    # 7.8.3 is half as fast as 9.10.0 whatever the compiler; clang is +10% in both versions
    rows = [{"build": f"{v}-{tc}", "test": t, "rep": i, "qps": q * speed * f, "toolchain": tc, "version": v}
            for v, speed in (("7.8.3", 0.5), ("9.10.0", 1.0))
            for tc, f in (("gcc", 1.0), ("clang", 1.1), ("clang+LTO", 1.2))
            for t in ("fillseq", "overwrite") for i, q in enumerate([100.0, 104.0, 97.0])]
    df = pd.DataFrame([*rows, {"build": "9.11.2-clang", "test": "fillseq", "rep": 0, "qps": 1.0,
                               "toolchain": "clang", "version": "9.11.2"}])  # no gcc build of 9.11.2
    rv = relative.relative_by_version(df)
    assert set(rv["version"]) == {"7.8.3", "9.10.0"}                    # nothing to compare 9.11.2 with
    assert (rv["base"] == rv["version"] + "-gcc").all()
    got = rv.set_index(["build", "test"])["rel"]
    assert got[("7.8.3-clang", "fillseq")] == pytest.approx(1.1) and got[("9.10.0-clang+LTO", "overwrite")] \
        == pytest.approx(1.2)
    # against one base build instead, 7.8.3's clang would look 45% slower: the version, not the compiler
    assert relative.relative_qps(df, "9.10.0-gcc").set_index(["build", "test"]).loc[
        ("7.8.3-clang", "fillseq"), "rel"] == pytest.approx(0.55)
    summ = relative.by_version_summary(rv)
    assert list(summ["toolchain"]) == ["gcc", "clang", "clang+LTO"] * 2
    lto = summ[(summ["version"] == "9.10.0") & (summ["toolchain"] == "clang+LTO")].iloc[0]
    assert lto["mean_pct"] == pytest.approx(20.0) and lto["faster"] == 2 and lto["slower"] == 0
    # the figure's table names every build and its base; drawn, it has a point per build and test
    t = figures.relative_rows(rv)
    here = t[t["kind"] == "here"]
    assert set(here["build"]) == set(rv["build"]) and set(here["base"]) == {"7.8.3-gcc", "9.10.0-gcc"}
    fig = figures.draw_relative(t)
    assert fig.axes[0].get_title().startswith("QPS relative to gcc of the same version")
    assert len(fig.axes[0].get_legend().get_texts()) == 6 + 6   # six builds, two toolchains x three servers
    fig.savefig(tmp_path / "byversion.png")
    assert (tmp_path / "byversion.png").stat().st_size > 0
    assert "RocksDB 7.8.3, against 7.8.3-gcc: clang +10.0% (faster in 2, slower in 0 of 2" in \
        findings.by_version(rv)


def test_the_posts_numbers_beside_ours():
    pub = tables.published_relative()
    one = pub[(pub["server"] == "pn53") & (pub["test"] == "fillseq")].set_index("toolchain")["rel"]
    assert one["clang"] == pytest.approx(1.11) and one["clang+LTO"] == pytest.approx(1.15)
    readww = pub[(pub["server"] == "pn53") & (pub["test"] == "readww") & (pub["toolchain"] == "clang")]
    assert readww["rel"].item() == pytest.approx(0.95)                       # "~5% less"
    arm = pub[(pub["server"] == "arm") & (pub["test"] == "overwrite")]
    assert set(arm["rel"]) == {1.0} and arm["similar"].all()                  # "similar"
    assert set(pub["test"]) == set(TESTS)
    df = frame({("g", "gcc", t): [100.0, 101.0] for t in TESTS})
    rel = relative.relative_qps(df, "g")
    table = tables.side_by_side(rel, pub)
    assert list(table.index) == list(TESTS)
    assert table.loc["fillseq", "post clang/gcc pn53"] == pytest.approx(1.11)
    text = findings.against_base(rel, "g", pub)
    assert "Only one build (g) ran" in text and "~10% more QPS with clang+LTO than gcc" in text


# ------------------------------------------------------------------ a real smoke study

@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("toolchain-runs")
    p = STUDY.params(scale="smoke", tests=["fillseq", "readww", "overwrite"], duration=0.2,
                     db_dir=str(tmp_path_factory.mktemp("toolchain-db")))
    return p, STUDY.run(p, root=root, progress=False)


def test_every_run_is_a_child_on_its_build_stored_and_found_again(study):
    p, res = study
    assert len(res.runs) == len(STUDY.plan(p)) == 2 and all(store.is_complete(r) for r in res.runs)
    f = res.frame
    assert len(f) == 2 * 3 and set(f["test"]) == {"fillseq", "readww", "overwrite"}
    assert set(f["build"]) == set(f["rocksdb_build"]) == {DEFAULT} and res.builds == [DEFAULT]
    assert set(f["toolchain"]) == {"gcc"} and set(f["base"]) == {DEFAULT} and sorted(set(f["rep"])) == [0, 1]
    assert (f["qps"] > 0).all() and res.base == DEFAULT
    m = manifest(res.root, res.study)
    assert m["status"] == "complete" and m["study"] == "toolchains" and m["params"]["builds"] == [DEFAULT]
    again = STUDY.load(res.root)
    assert again is not None and again.study == res.study and again.base == DEFAULT
    assert again.relative[["build", "test", "rel"]].equals(res.relative[["build", "test", "rel"]])
    assert not list(Path(p.db_dir).iterdir())             # the DBs are gone, the runs stay


def test_tables_and_findings_of_the_base_build_alone(study):
    _, res = study
    rel = STUDY.table("relative", res)
    assert set(rel["test"]) == {"fillseq", "readww", "overwrite"} and (rel["rel"] == 1.0).all()
    assert (rel["n"] == 2).all() and (rel["lo"] < 1).all()          # the noise floor of two repetitions
    post = STUDY.table("post", res)
    assert f"{DEFAULT} rel" in post.columns and "post clang+LTO/gcc pn53" in post.columns
    assert list(STUDY.table("by_version", res)["build"]) == [DEFAULT]
    text = STUDY.findings(res)
    assert f"Only one build ({DEFAULT}) ran" in text and "Noise floor" in text


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
    for name in ("relative", "post", "by_version", "relative_by_version"):
        with pytest.raises(ValueError, match=f"^toolchains: study {res.study} ran only {DEFAULT}: no "):
            STUDY.table(name, small)
    assert len(STUDY.table("published", small))          # the post's numbers alone compare nothing here
    with pytest.raises(ValueError, match="no comparison to show"):
        STUDY.save_outputs(small, tmp_path)
    assert not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.csv"))
    # at smoke the one build is drawn, titled as the A/A control it is
    fig = STUDY.figure("toolchains_relative_qps", res, save=False)
    assert "against itself only (A/A control" in fig.axes[0].get_title()


def test_each_figure_is_redrawn_from_its_saved_table_alone(study, tmp_path):
    _, res = study
    assert list(STUDY.figures) == ["toolchains_relative_qps", "toolchains_relative_by_version",
                                   "toolchains_qps"]
    for s in saved_figures(STUDY, res, tmp_path):
        assert s.side["rocksdb_builds"] == [DEFAULT] and len(s.side["runs"]) == 2
        assert DEFAULT in set(s.table["build"].dropna())   # the table names the builds it compares
        assert s.again.axes and all(ax.has_data() for ax in s.again.axes)
    t = pd.read_csv(tmp_path / "toolchains_relative_qps.csv")
    assert set(t["kind"]) == {"here", "post"}
    assert set(t.loc[t["kind"] == "post", "test"]) == {"fillseq", "readww", "overwrite"}
    q = pd.read_csv(tmp_path / "toolchains_qps.csv")
    assert (q["kind"] == "rep").sum() == 6 and (q["kind"] == "mean").sum() == 3


def test_the_study_is_registered_and_its_outputs_are_written(study, tmp_path):
    _, res = study
    out = registered_outputs(STUDY, res, tmp_path)
    assert {"toolchains_relative.tex", "toolchains_post.md", "toolchains_published.csv"} <= out.tables
    assert "Noise floor" in out.findings


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
            "from rxlab.core.builds import active_build;"
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
    assert len(df) == 2 * 2 * 2
    rel = res.relative
    assert set(rel["build"]) == {DEFAULT, key} and rel["rel"].gt(0).all()
