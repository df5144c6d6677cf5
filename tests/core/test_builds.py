"""RocksDB builds in the cache: keys, records, reuse, removal, patches, and the module each process loads.

These run on the default build only (no RocksDB is compiled here); builds of
other toolchains are exercised by tests/test_toolchains.py's slow test.
Fake builds live in a tmp RXLAB_CACHE: a directory with build.json and
bin/db_bench is what the cache calls a finished build.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rxlab.core import builds

REPO = Path(__file__).resolve().parents[2]


def fake_build(cache: Path, key: str, **rec) -> Path:
    d = cache / "rocksdb" / key
    (d / "bin").mkdir(parents=True)
    (d / "bin" / "db_bench").write_text("#!/bin/sh\n")
    version, cc = key.split("-", maxsplit=1)[0], "clang" if "clang" in key else "gcc"
    record = {"version": version, "cc": cc, "lto": key.endswith("-lto"), "key": key, "compiler": cc,
              "compiler_version": f"{cc} (fake)", "cmake_flags": ["-DUSE_RTTI=ON"], "patches": [],
              "build_seconds": 60, **rec}
    (d / "build.json").write_text(json.dumps(record))
    return d


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RXLAB_CACHE", str(tmp_path))
    return tmp_path


def test_keys_name_version_compiler_lto_and_extra_flags():
    major = builds.compiler_for("gcc")[2]
    assert builds.build_key("9.10.0", "gcc") == f"9.10.0-gcc{major}"
    assert builds.flags_id("") == "" and builds.flags_id("  ") == ""
    fid = builds.flags_id("-march=native  -fno-plt")
    assert fid.startswith("-f") and len(fid) == 10
    assert fid == builds.flags_id("-march=native -fno-plt")      # spacing does not make another build
    assert fid != builds.flags_id("-march=native")
    key = builds.build_key("7.8.3", "gcc", cxxflags="-march=native")
    assert key.endswith(builds.flags_id("-march=native"))
    with pytest.raises(builds.BuildError, match=r"version '9\.10': expected an upstream version"):
        builds.build_key("9.10", "gcc")
    with pytest.raises(builds.BuildError, match="unknown compiler 'icc'"):
        builds.build_key("9.10.0", "icc")


def test_lto_needs_clang():
    with pytest.raises(builds.BuildError, match="--lto with cc=gcc"):
        builds.build("9.10.0", "gcc", lto=True)


def test_the_default_build_is_listed_with_its_record_and_the_installed_module():
    import rxlab

    recs = {r["key"]: r for r in builds.list_builds()}
    installed = builds.installed_build()
    assert installed.name in recs
    rec = recs[installed.name]
    assert rec["module"] == "installed" and rec["toolchain"] == builds.toolchain(rec)
    assert rec["size_mb"] > 1 and "-DUSE_RTTI=ON" in rec["cmake_flags"]
    assert Path(rxlab._core.rocksdb_build) == installed == builds.active_build()
    text = builds.format_builds(list(recs.values()))
    assert installed.name in text and "installed" in text


def test_a_finished_build_is_reused_never_rebuilt(cache, capsys):
    key = builds.build_key("9.10.0", "gcc")
    d = fake_build(cache, key)
    before = (d / "build.json").read_text()
    assert builds.build("9.10.0", "gcc") == d        # no download, no compiler: the record stays
    assert (d / "build.json").read_text() == before
    err = capsys.readouterr().err
    assert "already built" in err and "(built by gcc (fake)" in err   # a different compiler is reported


def test_remove_deletes_a_build_and_its_module_but_not_the_installed_one(cache):
    d = fake_build(cache, "9.11.2-clang16")
    m = builds.module_dir("9.11.2-clang16")
    m.mkdir(parents=True)
    (m / "module.json").write_text("{}")
    assert [r["key"] for r in builds.list_builds()] == ["9.11.2-clang16"]
    assert builds.remove("9.11.2-clang16") == d
    assert not d.exists() and not m.exists() and builds.list_builds() == []
    with pytest.raises(builds.BuildError, match=r"no build 'nosuch' in the cache: have none"):
        builds.remove("nosuch")


def test_remove_refuses_the_installed_modules_build(monkeypatch):
    # The cache the installed module's build is in, whatever RXLAB_CACHE says: with the default
    # cache this test once deleted a build of the same key there, one the module did not use.
    installed = builds.installed_build()
    monkeypatch.setenv("RXLAB_CACHE", str(installed.parent.parent))

    def refuse(path, *a, **k):
        raise AssertionError(f"remove() deleted {path}")
    monkeypatch.setattr(builds.cache.shutil, "rmtree", refuse)
    with pytest.raises(builds.BuildError, match="is the one rxlab's installed module uses"):
        builds.remove(installed.name)
    assert (installed / "lib").is_dir()


def test_get_build_names_the_builds_there_are(cache):
    fake_build(cache, "7.8.3-gcc12")
    with pytest.raises(builds.BuildError, match=r"no finished build 'x' .*: have 7\.8\.3-gcc12"):
        builds.get_build("x")
    assert builds.get_build("7.8.3-gcc12")["toolchain"] == "gcc"
    assert builds.toolchain({"cc": "clang", "lto": True}) == "clang+LTO"


def test_patches_apply_in_name_order_and_are_recorded_with_their_reason(tmp_path, monkeypatch):
    pdir = tmp_path / "patches" / "7.8.3"
    pdir.mkdir(parents=True)
    (pdir / "0001-cstdint.patch").write_text(
        "Add the missing <cstdint> include\n\n"
        "--- a/x.h\n+++ b/x.h\n@@ -1 +1,2 @@\n #pragma once\n+#include <cstdint>\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.h").write_text("#pragma once\n")
    monkeypatch.setattr(builds.source, "PATCH_DIR", tmp_path / "patches")
    applied = builds.apply_patches(src, "7.8.3", tmp_path / "log")
    assert applied == [{"patch": "0001-cstdint.patch", "reason": "Add the missing <cstdint> include"}]
    assert (src / "x.h").read_text() == "#pragma once\n#include <cstdint>\n"
    assert builds.apply_patches(src, "9.10.0", tmp_path / "log") == []


def test_every_patch_in_the_repo_has_a_reason():
    for p in sorted(builds.PATCH_DIR.glob("*/*.patch")):
        assert builds.patch_reason(p), p


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    e = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e, check=False)


def test_rxlab_build_selects_the_module_at_import():
    # the installed module's build: the installed module, whatever RXLAB_BUILD says
    key = builds.installed_build().name
    r = run_python("import rxlab; from rxlab.core.builds import active_build; "
                   "print(rxlab._core.rocksdb_build, active_build())", RXLAB_BUILD=key)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == [str(builds.installed_build())] * 2
    # a build without a compiled module: refused when the module is first used (`import rxlab` loads
    # none), in one line that says how to compile it
    assert run_python("import rxlab, rxlab.core.metrics", RXLAB_BUILD="9.99.0-clang16").returncode == 0
    r = run_python("import rxlab; rxlab.engines()", RXLAB_BUILD="9.99.0-clang16")
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: RXLAB_BUILD=9.99.0-clang16: no compiled rxlab module")
    assert "rxlab build-module 9.99.0-clang16" in last


def test_the_cli_of_the_builds_package(cache):
    """`python3 -S -m rxlab.core.builds` (the Makefile's and CMake's call: the standard library only)."""
    fake_build(cache, "9.11.2-gcc12")
    env = {**os.environ, "RXLAB_CACHE": str(cache)}
    cli = [sys.executable, "-S", "-m", "rxlab.core.builds"]
    r = subprocess.run([*cli, "list"], capture_output=True, text=True, env=env, cwd=REPO, check=False)
    assert r.returncode == 0 and "9.11.2-gcc12" in r.stdout, r.stderr
    r = subprocess.run([*cli, "remove", "nosuch"], capture_output=True, text=True, env=env, cwd=REPO,
                       check=False)
    assert r.returncode == 1 and r.stderr.startswith("rxlab: no build 'nosuch'")
    # `path` is what CMake compiles against: $RXLAB_ROCKSDB, never the build a process selects
    r = subprocess.run([*cli, "path"], capture_output=True, text=True, cwd=REPO,
                       env={**env, "RXLAB_BUILD": "9.11.2-gcc12", "RXLAB_ROCKSDB": "/x/y"}, check=False)
    assert r.stdout.strip() == "/x/y"
