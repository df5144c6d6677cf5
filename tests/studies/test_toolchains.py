"""The toolchain study: parameters, the plan, a child run on the default build, the statistics, the post.

Every test but the last runs on the default build. The last (marked slow)
compiles rxlab's module against one extra build and runs the study on both:

    .venv/bin/python -m pytest -m slow tests/test_toolchains.py   # RXLAB_EXTRA_BUILD=<key> picks the build

(it skips when no other finished build is in the cache: see `python -m rxlab.studies.toolchains.study matrix`).
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
from test_builds import fake_build

from rxlab.bench import driver
from rxlab.core import builds, figures, store
from rxlab.studies.toolchains import study as toolchains

DEFAULT = builds.installed_build().name


@pytest.fixture
def two_fake_builds(tmp_path, monkeypatch):
    monkeypatch.setenv("RXLAB_CACHE", str(tmp_path / "cache"))
    fake_build(tmp_path / "cache", "9.10.0-gcc12")
    fake_build(tmp_path / "cache", "9.10.0-clang16")
    fake_build(tmp_path / "cache", "9.10.0-clang16-lto", lto=True)
    return ["9.10.0-gcc12", "9.10.0-clang16", "9.10.0-clang16-lto"]


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
    ({"colour": "red"}, "unknown parameter 'colour': allowed are builds, base"),
])
def test_bad_parameters_fail_in_one_line(kw, message):
    with pytest.raises(ValueError) as e:
        toolchains.Params.checked(**{"scale": "smoke", **kw})
    assert message in str(e.value) and "\n" not in str(e.value)


def test_the_defaults_run_the_installed_build_against_itself():
    p = toolchains.Params.checked(scale="smoke")
    assert p.builds == [DEFAULT] and p.base == DEFAULT
    assert toolchains.Params.checked(scale="smoke", builds=["default"], base="default").builds == [DEFAULT]
    s = p.settings()
    assert s.cache_size >= 2 * s.db_bytes      # the DB is cached by RocksDB
    assert s.repeats >= 2                      # a spread even at smoke scale


def test_the_plan_rotates_the_build_order_each_repetition(two_fake_builds):
    a, b, c = two_fake_builds
    p = toolchains.Params.checked(scale="small", builds=[b, c], base=a, repeats=3)
    assert p.builds == [a, b, c]               # the base joins the set
    order = toolchains.plan(p)
    assert list(order["build"]) == [a, b, c, b, c, a, c, a, b]
    assert list(order["toolchain"]) == ["gcc", "clang", "clang+LTO", "clang", "clang+LTO", "gcc", "clang+LTO",
                                        "gcc", "clang"]
    assert set(order["module"]) == {"to compile"}


def test_the_spec_runs_the_posts_steps_on_a_cached_db():
    s = toolchains.Params.checked(scale="smoke").settings()
    spec = toolchains.spec_for(s, "/tmp/x", "n", seed=0)
    steps = driver.expand(spec["steps"])
    labels = [st["label"] for st in steps]
    assert labels == ["fillseq", "warmup", "readwhilewriting", "fwdrangewhilewriting", "revrangewhilewriting",
                      "overwrite"]
    rev = [st.get("reverse_iterator") for st in steps if st["name"] == "seekrandomwhilewriting"]
    assert rev == [False, True]
    assert spec["cache_size"] >= 2 * s.db_bytes and spec["write_rate_limit"] == s.write_rate_limit
    one = toolchains.Params.checked(scale="smoke", tests=["readww"]).settings()
    only = toolchains.spec_for(one, "/x", "n", 0)
    assert only["steps"] == ["readwhilewriting"]


def test_a_child_runs_on_the_default_build_and_the_run_records_it(tmp_path):
    s = toolchains.Params.checked(scale="smoke", tests=["fillseq", "readww"], duration=0.2).settings()
    spec = toolchains.spec_for(s, str(tmp_path / "db"), f"toolchains-test-{DEFAULT}-r0", seed=0)
    spec["num"] = 3000
    run = toolchains.run_child(DEFAULT, spec, root=tmp_path / "runs")
    assert store.is_complete(run)
    cat = store.catalog(tmp_path / "runs", runs=[run])
    assert set(cat["rocksdb_build"]) == {DEFAULT}
    assert set(cat["run_name"]) == {f"toolchains-test-{DEFAULT}-r0"}
    assert list(cat["name"]) == ["fillseq", "warmup", "readwhilewriting"]
    assert (cat.loc[cat["name"] == "readwhilewriting", "writer_ops"] > 0).all()   # the writer wrote


def test_a_child_refuses_a_module_of_another_build(tmp_path):
    # a build in another cache: the installed module is not compiled against it
    fake_build(tmp_path / "cache", DEFAULT)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"db": str(tmp_path / "db")}))
    env = {**os.environ, "RXLAB_CACHE": str(tmp_path / "cache")}
    env.pop("RXLAB_BUILD", None)
    r = subprocess.run([sys.executable, "-m", "rxlab.studies.toolchains.study", "child", DEFAULT, str(spec)], env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 2 and "the module loaded is compiled against" in r.stderr, r.stderr
    assert not (tmp_path / "db").exists()


def frame(values: dict) -> pd.DataFrame:
    rows = [{"build": b, "test": t, "qps": q, "toolchain": tc, "version": "9.10.0"}
            for (b, tc, t), qs in values.items() for q in qs]
    return pd.DataFrame(rows)


def test_relative_qps_and_its_interval():
    df = frame({("g", "gcc", "fillseq"): [100.0, 102.0, 98.0, 100.0],
                ("c", "clang", "fillseq"): [110.0, 111.0, 109.0, 110.0],
                ("c1", "clang", "fillseq"): [130.0]})
    rel = toolchains.relative_qps(df, "g").set_index("build")
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
    nrel = toolchains.relative_qps(noisy, "g").set_index("build")
    assert nrel.loc["c", "hi"] - nrel.loc["c", "lo"] > rel.loc["c", "hi"] - rel.loc["c", "lo"]


def test_paired_repetitions_cancel_the_drift_they_share():
    # both builds drift together over the repetitions; clang is 10% faster in each one
    drift = [100.0, 130.0, 80.0, 110.0]
    rows = [{"build": b, "test": "fillseq", "rep": i, "qps": q * f, "toolchain": tc, "version": "9.10.0"}
            for b, tc, f in (("g", "gcc", 1.0), ("c", "clang", 1.1)) for i, q in enumerate(drift)]
    df = pd.DataFrame(rows)
    paired = toolchains.relative_qps(df, "g").set_index("build")
    unpaired = toolchains.relative_qps(df, "g", paired=False).set_index("build")
    assert paired.loc["c", "method"] == "paired" and unpaired.loc["c", "method"] == "unpaired"
    assert paired.loc["c", "rel"] == pytest.approx(1.1)
    assert paired.loc["c", "hi"] - paired.loc["c", "lo"] < 1e-9        # the drift is gone
    assert unpaired.loc["c", "lo"] < 1.0 < unpaired.loc["c", "hi"]    # unpaired, it hides the 10%
    assert paired.loc["g", "method"] == "unpaired"                     # the base row is the noise floor


def test_by_version_each_build_is_against_gcc_of_its_own_version(tmp_path, monkeypatch):
    # 7.8.3 is half as fast as 9.10.0 whatever the compiler; clang is +10% in both versions
    rows = [{"build": f"{v}-{tc}", "test": t, "rep": i, "qps": q * speed * f, "toolchain": tc, "version": v}
            for v, speed in (("7.8.3", 0.5), ("9.10.0", 1.0))
            for tc, f in (("gcc", 1.0), ("clang", 1.1), ("clang+LTO", 1.2))
            for t in ("fillseq", "overwrite") for i, q in enumerate([100.0, 104.0, 97.0])]
    df = pd.DataFrame([*rows, {"build": "9.11.2-clang", "test": "fillseq", "rep": 0, "qps": 1.0,
                               "toolchain": "clang", "version": "9.11.2"}])  # no gcc build of 9.11.2
    rv = toolchains.relative_by_version(df)
    assert set(rv["version"]) == {"7.8.3", "9.10.0"}                    # nothing to compare 9.11.2 with
    assert (rv["base"] == rv["version"] + "-gcc").all()
    got = rv.set_index(["build", "test"])["rel"]
    assert got[("7.8.3-clang", "fillseq")] == pytest.approx(1.1) and got[("9.10.0-clang+LTO", "overwrite")] \
        == pytest.approx(1.2)
    # against one base build instead, 7.8.3's clang would look 45% slower: the version, not the compiler
    assert toolchains.relative_qps(df, "9.10.0-gcc").set_index(["build", "test"]).loc[
        ("7.8.3-clang", "fillseq"), "rel"] == pytest.approx(0.55)
    summ = toolchains.by_version_summary(rv)
    assert list(summ["toolchain"]) == ["gcc", "clang", "clang+LTO"] * 2
    lto = summ[(summ["version"] == "9.10.0") & (summ["toolchain"] == "clang+LTO")].iloc[0]
    assert lto["mean_pct"] == pytest.approx(20.0) and lto["faster"] == 2 and lto["slower"] == 0
    monkeypatch.setenv("RXLAB_FIGURES", str(tmp_path))
    fig = toolchains.fig_relative(rv, "gcc of the same version")
    figures.save(fig, "byversion")
    assert (tmp_path / "byversion.png").stat().st_size > 0
    assert "RocksDB 7.8.3, against 7.8.3-gcc: clang +10.0% (faster in 2, slower in 0 of 2" in \
        toolchains.findings_by_version(rv)


def test_the_posts_numbers_beside_ours():
    pub = toolchains.published_relative()
    one = pub[(pub["server"] == "pn53") & (pub["test"] == "fillseq")].set_index("toolchain")["rel"]
    assert one["clang"] == pytest.approx(1.11) and one["clang+LTO"] == pytest.approx(1.15)
    readww = pub[(pub["server"] == "pn53") & (pub["test"] == "readww") & (pub["toolchain"] == "clang")]
    assert readww["rel"].item() == pytest.approx(0.95)                       # "~5% less"
    arm = pub[(pub["server"] == "arm") & (pub["test"] == "overwrite")]
    assert set(arm["rel"]) == {1.0} and arm["similar"].all()                  # "similar"
    assert set(pub["test"]) == set(toolchains.TESTS)
    df = frame({("g", "gcc", t): [100.0, 101.0] for t in toolchains.TESTS})
    rel = toolchains.relative_qps(df, "g")
    table = toolchains.side_by_side(rel, pub)
    assert list(table.index) == list(toolchains.TESTS)
    assert table.loc["fillseq", "post clang/gcc pn53"] == pytest.approx(1.11)
    text = toolchains.findings(rel, "g", pub)
    assert "Only one build (g) ran" in text and "~10% more QPS with clang+LTO than gcc" in text


def test_the_matrix_commands_cover_versions_and_toolchains():
    cmds = toolchains.matrix_commands()
    assert len(cmds) == 3 * 3
    assert all(c.startswith("nice -n 19 ionice -c3 rxlab build-rocksdb --version ") for c in cmds)
    assert sum("--lto" in c for c in cmds) == 3 and sum("--cc clang" in c for c in cmds) == 6


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
        pytest.skip("no finished build besides the default: `python -m rxlab.studies.toolchains.study matrix` "
                    "lists the commands")
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
    p = toolchains.Params.checked(scale="smoke", builds=[DEFAULT, key], repeats=2,
                                  tests=["fillseq", "readww"])
    res = toolchains.run_study(p, progress=False, root=tmp_path / "runs")
    df = toolchains.study_frame(res)
    assert sorted(set(df["build"])) == sorted({DEFAULT, key})
    assert len(df) == 2 * 2 * 2
    rel = toolchains.relative_qps(df, DEFAULT)
    assert set(rel["build"]) == {DEFAULT, key} and rel["rel"].gt(0).all()
