"""One run on one RocksDB build, in a child process of its own, and the commands that make the builds.

A process can load only one RocksDB (every build's library has the same
soname), so each run of a build is a child process,

    python -m rxlab.studies.toolchains.study child KEY SPEC_JSON

started with RXLAB_BUILD=KEY, which makes `import rxlab` (the first thing
`python -m` does) load that build's compiled module
(rxlab.core.builds.select_core). The child checks that the
module it loaded is the build's, runs the spec through rxlab.bench.driver.run
(whose fingerprint records the build) and prints the run directory as the
last line of its output, in JSON. The spec file is a driver spec, plus
optionally `meta`: more keys for the stored spec (the study's labels).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import rxlab
from rxlab.bench import driver
from rxlab.core import builds
from rxlab.studies.toolchains.params import MATRIX_VERSIONS

ENTRY = "rxlab.studies.toolchains.study"   # python -m ENTRY child ...


def build_env(key: str) -> dict:
    """The environment of a child process on build `key`: RXLAB_BUILD set (its module compiled first if
    it is not current), or unset for the installed module's build."""
    rec = builds.get_build(key)
    env = dict(os.environ)
    if Path(rec["path"]) == builds.installed_build():
        env.pop(builds.BUILD_ENV, None)
    else:
        builds.ensure_module(key)
        env[builds.BUILD_ENV] = key
    return env


def module_mismatch(key: str) -> str | None:
    """In a child: None when the module this process loaded is compiled against build `key`, else why not."""
    want = Path(builds.get_build(key)["path"]).resolve()
    got = Path(rxlab._core.rocksdb_build).resolve()
    return None if got == want else f"the module loaded is compiled against {got}, not build {key} ({want})"


def run_child(key: str, spec: dict, root: str | os.PathLike | None = None, *, meta: dict | None = None,
              timeout: float | None = None) -> Path:
    """Run `spec` in a child process on build `key`; returns the stored run's directory."""
    env = build_env(key)
    if root is not None:
        env["RXLAB_RUNS"] = str(root)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({**spec, "meta": meta} if meta else spec, f)
    try:
        r = subprocess.run([sys.executable, "-m", ENTRY, "child", key, f.name], env=env,
                           capture_output=True, text=True, timeout=timeout, check=False)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"build {key}: the child run failed (exit {r.returncode}): {tail}")
    return Path(json.loads(r.stdout.strip().splitlines()[-1])["run"])


def child(key: str, spec_file: str) -> int:
    """In the child: check that the module is the build's, then run and store the spec."""
    wrong = module_mismatch(key)
    if wrong:
        print(f"rxlab: {wrong}", file=sys.stderr)
        return 2
    spec = json.loads(Path(spec_file).read_text())
    meta = spec.pop("meta", None)
    path = driver.run(spec, progress=False, meta=meta)
    print(json.dumps({"run": str(path), "build": key, "rocksdb_version": rxlab.rocksdb_version}))
    return 0


def matrix_commands(versions: Sequence[str] = MATRIX_VERSIONS, jobs: int = 2) -> list[str]:
    """The commands that build the matrix (each version x gcc, clang, clang+LTO), niced."""
    out = []
    for v in versions:
        for tc, (cc, lto) in builds.TOOLCHAINS.items():
            out.append(f"nice -n 19 ionice -c3 rxlab build-rocksdb --version {v} --cc {cc}"
                       + (" --lto" if lto else "") + f" --jobs {jobs}   # {tc}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=f"python -m {ENTRY}", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("child", help="run a spec (JSON file) on a build (set RXLAB_BUILD first)")
    c.add_argument("build")
    c.add_argument("spec")
    m = sub.add_parser("module", help="compile rxlab's module and plugin against a build")
    m.add_argument("build")
    m.add_argument("--jobs", type=int)
    sub.add_parser("matrix", help="print the commands that build the version x toolchain matrix")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "child":
            return child(a.build, a.spec)
        if a.cmd == "module":
            print(builds.ensure_module(a.build, a.jobs) or f"{a.build}: the installed module's build")
            return 0
        print("\n".join(matrix_commands()))
        return 0
    except builds.BuildError as e:
        print(f"rxlab: {e}", file=sys.stderr)
        return 1
