"""The toolchain study: RocksDB builds as an experiment variable (the gcc-vs-clang post).

The post (blog-2025-12-01, "Using db_bench to measure RocksDB performance with
gcc and clang") compiles RocksDB three ways (gcc, clang, clang+LTO), runs
db_bench's fillseq, readwhilewriting, fwdrangewhilewriting,
revrangewhilewriting and overwrite with the database cached by RocksDB and a
rate-limited writer beside the *whilewriting readers, and reports the
relative QPS (QPS of a build / QPS of a base build): about 5% more with clang
and 10% more with clang+LTO than with gcc. Its main worry is variance. This
module is that study on this machine:

* builds come from rxlab.core.builds (`rxlab build-rocksdb`); a process can load
  only one RocksDB (every build's library has the same soname), so each run
  of a build is a child process (`python -m rxlab.studies.toolchains.study child ...`) with
  RXLAB_BUILD=<key>, which loads that build's compiled module
  (builds.select_core). The child runs the spec through rxlab.bench.driver.run; the
  run's fingerprint records the build its module was compiled against, and the
  spec's name carries the build key.
* `Params` (one-line checks) and `Params.settings()` (the scale resolved);
  `plan` (the order: every repetition runs every build, the order rotated so
  drift hits each build alike); `run_study` (every run stored).
* `relative_qps`: mean QPS per build and test over the repetitions, relative to
  the base build, with a 95% confidence interval (delta method on the ratio of
  means, Welch's degrees of freedom). With one build the comparison is the base
  against itself: 1.00 by construction, and the interval is the run-to-run
  noise, the smallest difference this machine can resolve.
* `published_relative` and `side_by_side`: the post's percentages beside ours;
  `fig_relative`, `fig_qps`; `findings`.

QPS comes from rxlab.core.metrics.seed_columns; nothing here computes it.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter
from scipy import stats
from tqdm import tqdm

import rxlab
from rxlab.bench import driver
from rxlab.core import builds, figures, metrics, published, store
from rxlab.core import params as checks

__all__ = ["PUBLISHED", "SCALES", "TESTS", "Params", "Settings", "StudyResult", "fig_qps", "fig_relative",
           "findings", "matrix_commands", "plan", "published_relative", "relative_qps", "run_child",
           "run_study", "side_by_side", "study_frame"]

SEED_FILE = "blog-2025-12-01-rocksdb-gcc-vs-clang-and-more.txt"
PUBLISHED = (f"{SEED_FILE}: gccclang_relative_qps",)
RUN_PREFIX = "toolchains-"

# The post's tests (its names) and the driver's steps that run them.
TESTS = ("fillseq", "readww", "fwdrangeww", "revrangeww", "overwrite")
STEP_OF = {"fillseq": "fillseq", "readww": "readwhilewriting", "fwdrangeww": "fwdrangewhilewriting",
           "revrangeww": "revrangewhilewriting", "overwrite": "overwrite"}
TEST_OF = {v: k for k, v in STEP_OF.items()}
TOOLCHAIN_COLORS = {"gcc": figures.CYCLE[0], "clang": figures.CYCLE[1], "clang+LTO": figures.CYCLE[2]}
SERVER_MARKERS = {"pn53": "o", "arm": "s", "hetzner": "D"}
VERSION_MARKERS = ("o", "^", "s", "D")  # here: one marker per RocksDB version
YLIM = (0.5, 1.5)   # relative QPS axis of fig_relative; wider intervals are clipped (and say so)
# The build matrix of the issue (2 versions x 3 toolchains at least), as build-rocksdb commands.
MATRIX_VERSIONS = ("7.8.3", "9.10.0", "9.11.2")

MIB = 1 << 20


@dataclass(frozen=True)
class Scale:
    num: int           # keys loaded by fillseq
    duration: float    # seconds of each read step and of overwrite
    repeats: int       # runs of each build


SCALES = {
    "smoke": Scale(num=10_000, duration=0.3, repeats=2),       # seconds (CI): exercises the pipeline
    "small": Scale(num=500_000, duration=8.0, repeats=4),      # minutes per build
    "full": Scale(num=4_000_000, duration=60.0, repeats=5),    # ~1.7 GB cached, an hour per build
}


@dataclass(frozen=True)
class Settings:
    scale: str
    num: int
    db_bytes: int
    cache_size: int
    duration: float
    repeats: int
    threads: int
    write_rate_limit: int
    builds: tuple
    base: str
    tests: tuple
    work_dir: str

    def table(self) -> pd.DataFrame:
        rows = [("keys (num)", f"{self.num:,}"),
                ("DB size (keys x (16 + value))", f"{self.db_bytes / MIB:.0f} MiB"),
                ("block cache (holds the DB)", f"{self.cache_size / MIB:.0f} MiB"),
                ("seconds per read step and overwrite", f"{self.duration:g}"),
                ("repetitions per build", str(self.repeats)), ("reader threads", str(self.threads)),
                ("writer rate limit (*ww)", f"{self.write_rate_limit / MIB:g} MiB/s"),
                ("builds", ", ".join(self.builds)), ("base build", self.base),
                ("tests", ", ".join(self.tests)), ("work directory", self.work_dir)]
        return pd.DataFrame(rows, columns=["setting", "value"]).set_index("setting")


def _usable(key: str) -> bool:
    """The installed module's build, or a build whose compiled module is current."""
    rec = builds.get_build(key)
    return Path(rec["path"]) == builds.installed_build() or builds.module_current(key)


def installed_key() -> str:
    return builds.installed_build().name


@dataclass
class Params(checks.Checked):
    """The study's parameters (notebook 70's papermill parameters).

    builds: build keys of `rxlab builds` (e.g. ['9.10.0-gcc12', '9.10.0-clang16']);
    'default' names the installed module's build; None: the base build at smoke
    scale, else every build whose module is compiled (or the installed one).
    base: the build the others are relative to (None: the installed module's,
    the default gcc build). tests: the post's tests to run. repeats, duration:
    None takes the scale's. threads: reader threads (the post's small servers:
    1). write_rate_limit: bytes/s of the writer beside *ww readers.
    db_dir: where the DBs go (None: a temporary directory).
    """

    builds: list | None = None
    base: str | None = None
    scale: str = "small"
    tests: list = field(default_factory=lambda: list(TESTS))
    repeats: int | None = None
    duration: float | None = None
    threads: int = 1
    write_rate_limit: int | str = 2 * MIB
    value_size: int = 400
    db_dir: str | None = None

    def __post_init__(self):
        checks.choice("scale", self.scale, tuple(SCALES))
        have = [b["key"] for b in builds.list_builds()]
        base = installed_key() if self.base in (None, "default") else self.base
        if base not in have:
            checks.fail("base", self.base, f"expected a finished build: have {', '.join(have) or 'none'}")
        self.base = base
        if self.builds is None:
            keys = [base] if self.scale == "smoke" else [k for k in have if _usable(k)]
        else:
            keys = checks.as_list(self.builds)
            keys = [installed_key() if k == "default" else k for k in keys]
            if not keys or len(set(keys)) != len(keys) or not all(isinstance(k, str) for k in keys):
                checks.fail("builds", self.builds, "expected None or a non-empty list of distinct build keys")
            for k in keys:
                if k not in have:
                    checks.fail("builds", self.builds, f"{k!r} is not a finished build: have "
                                f"{', '.join(have) or 'none'} (rxlab build-rocksdb makes more)")
        if base not in keys:
            keys = [base, *keys]
        self.builds = keys
        t = checks.as_list(self.tests)
        if not t or len(set(t)) != len(t) or not all(x in TESTS for x in t):
            checks.fail("tests", self.tests,
                        f"expected a non-empty list of distinct tests from {', '.join(TESTS)}")
        self.tests = [x for x in TESTS if x in t]
        if self.repeats is not None and not (checks.is_int(self.repeats) and 1 <= self.repeats <= 100):
            checks.fail("repeats", self.repeats, "expected None or an integer 1..100")
        if self.duration is not None and not (checks.is_number(self.duration)
                                              and 0.1 <= self.duration <= 3600):
            checks.fail("duration", self.duration, "expected None or seconds 0.1..3600")
        if not (checks.is_int(self.threads) and 1 <= self.threads <= 64):
            checks.fail("threads", self.threads, "expected an integer 1..64")
        self.write_rate_limit = checks.size_bytes("write_rate_limit", self.write_rate_limit, minimum=1024)
        if not (checks.is_int(self.value_size) and 1 <= self.value_size <= 1 << 20):
            checks.fail("value_size", self.value_size, "expected an integer 1..1048576")
        self.db_dir = checks.db_dir(self.db_dir)

    def settings(self) -> Settings:
        sc = SCALES[self.scale]
        db_bytes = sc.num * (16 + self.value_size)
        cache = max(64 * MIB, 1 << int(np.ceil(np.log2(db_bytes * 2))))  # the DB fits twice over
        return Settings(scale=self.scale, num=sc.num, db_bytes=db_bytes, cache_size=cache,
                        duration=float(self.duration if self.duration is not None else sc.duration),
                        repeats=int(self.repeats if self.repeats is not None else sc.repeats),
                        threads=self.threads, write_rate_limit=int(self.write_rate_limit),
                        builds=tuple(self.builds), base=self.base, tests=tuple(self.tests),
                        work_dir=self.db_dir or tempfile.gettempdir())


def plan(p: Params) -> pd.DataFrame:
    """One row per child process, in run order: each repetition runs every build,
    the order rotated by one each repetition."""
    s = p.settings()
    rows = []
    for r in range(s.repeats):
        k = r % len(s.builds)
        for b in [*s.builds[k:], *s.builds[:k]]:
            rec = builds.get_build(b)
            rows.append({"rep": r, "build": b, "toolchain": rec["toolchain"], "version": rec["version"],
                         "module": "installed" if Path(rec["path"]) == builds.installed_build()
                         else ("compiled" if builds.module_current(b) else "to compile")})
    return pd.DataFrame(rows)


def spec_for(s: Settings, db: str, name: str, seed: int, build: str | None = None) -> dict:
    """The driver spec of one child: the post's steps, the DB cached by RocksDB."""
    steps: list = []
    for t in s.tests:
        if t == "fillseq":
            steps.append("fillseq")
            # warm the block cache: the post's DB is cached by RocksDB
            steps.append({"name": "readseq", "label": "warmup", "ops": s.num})
        elif t == "overwrite":
            steps.append({"name": "overwrite", "duration": s.duration})
        else:
            steps.append(STEP_OF[t])
    return {"db": db, "name": name, "backend": "posix", "steps": steps, "num": s.num, "threads": s.threads,
            "duration": s.duration, "cache_size": s.cache_size, "write_rate_limit": s.write_rate_limit,
            "use_direct_reads": True, "use_direct_io_for_flush_and_compaction": True, "seed": seed,
            "scale": s.scale, "build": build}


# --------------------------------------------------------------------------- running


@dataclass
class StudyResult:
    study: str
    runs: list
    settings: Settings
    builds: dict          # key -> build record
    root: Path
    elapsed_s: float


def run_child(key: str, spec: dict, root: str | os.PathLike | None = None,
              timeout: float | None = None) -> Path:
    """Run `spec` in a child process on build `key`; returns the stored run's directory."""
    rec = builds.get_build(key)
    env = dict(os.environ)
    if Path(rec["path"]) == builds.installed_build():
        env.pop(builds.BUILD_ENV, None)
    else:
        builds.ensure_module(key)
        env[builds.BUILD_ENV] = key
    if root is not None:
        env["RXLAB_RUNS"] = str(root)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        r = subprocess.run([sys.executable, "-m", "rxlab.studies.toolchains.study", "child", key, f.name], env=env,
                           capture_output=True, text=True, timeout=timeout, check=False)
    finally:
        os.unlink(f.name)
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"build {key}: the child run failed (exit {r.returncode}): {tail}")
    return Path(json.loads(r.stdout.strip().splitlines()[-1])["run"])


def _child(key: str, spec_file: str) -> int:
    """In the child: check that the module is the build's, then run and store the spec."""

    want = Path(builds.get_build(key)["path"]).resolve()
    got = Path(rxlab._core.rocksdb_build).resolve()
    if got != want:
        print(f"rxlab: the module loaded is compiled against {got}, not build {key} ({want})",
              file=sys.stderr)
        return 2
    spec = json.loads(Path(spec_file).read_text())
    path = driver.run(spec, progress=False)
    print(json.dumps({"run": str(path), "build": key, "rocksdb_version": rxlab.rocksdb_version}))
    return 0


def run_study(p: Params, progress: bool = True, root: str | os.PathLike | None = None) -> StudyResult:
    """Every (repetition, build) of `plan(p)` as a child process; every run stored."""

    s = p.settings()
    order = plan(p)
    recs = {b: builds.get_build(b) for b in s.builds}
    for b in s.builds:  # compile the modules first, not between measurements
        if Path(recs[b]["path"]) != builds.installed_build():
            builds.ensure_module(b)
    study = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(2)
    base_dir = Path(p.db_dir) if p.db_dir else Path(tempfile.gettempdir())
    work = Path(tempfile.mkdtemp(prefix="rxlab-toolchains-", dir=base_dir))
    runs = []
    t0 = time.monotonic()
    try:
        for i, row in enumerate(tqdm(order.itertuples(), total=len(order), disable=not progress,
                                     desc="toolchains", unit="run")):
            name = f"{RUN_PREFIX}{study}-{row.build}-r{row.rep}"
            spec = spec_for(s, str(work / f"db{i}"), name, seed=1000 * row.rep, build=row.build)
            runs.append(run_child(row.build, spec, root))
            shutil.rmtree(work / f"db{i}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return StudyResult(study=study, runs=runs, settings=s, builds=recs,
                       root=Path(root) if root is not None else store.default_root(),
                       elapsed_s=time.monotonic() - t0)


# --------------------------------------------------------------------------- analysis


def study_frame(result: StudyResult) -> pd.DataFrame:
    """One row per (run, test): build, toolchain, version, repetition, qps."""
    cat = store.catalog(result.root, runs=result.runs)
    cat = cat[cat["name"].isin(STEP_OF.values())].copy()
    cols = metrics.seed_columns(cat)
    out = pd.DataFrame({"run_id": cat["run_id"], "build": cat["rocksdb_build"],
                        "test": cat["name"].map(TEST_OF), "qps": cols["qps"],
                        "run_name": cat["run_name"]})
    out["rep"] = out["run_name"].str.extract(r"-r(\d+)$", expand=False).astype(int)
    out["toolchain"] = out["build"].map(lambda b: result.builds[b]["toolchain"])
    out["version"] = out["build"].map(lambda b: result.builds[b]["version"])
    return out.drop(columns="run_name").reset_index(drop=True)


def relative_qps(df: pd.DataFrame, base: str, level: float = 0.95, paired: bool = True) -> pd.DataFrame:
    """Mean QPS per build and test relative to `base`, with a `level` confidence interval.

    Unpaired: rel = mean_b / mean_base; its standard error by the delta method,
    rel * sqrt(se_b^2 / mean_b^2 + se_base^2 / mean_base^2), and Student's t with
    Welch-Satterthwaite degrees of freedom. Paired (when `paired` and both builds
    ran in the same repetitions, `rep`): the repetitions ran back to back, so the
    ratio within each repetition cancels the machine's slow drift; rel is the
    geometric mean of those ratios and the interval Student's t on their logs
    (`method` says which). The base against itself is 1 with the unpaired
    interval from its own spread counted twice (as if a second base build had
    the same noise): the noise floor of single runs. n < 2: no interval.
    """

    def paired_row(b: str, test: str):
        if not paired or "rep" not in df.columns or b == base:
            return None
        x = df[(df["build"] == b) & (df["test"] == test)].groupby("rep")["qps"].mean()
        y = df[(df["build"] == base) & (df["test"] == test)].groupby("rep")["qps"].mean()
        reps = x.index.intersection(y.index)
        if len(reps) < 2 or len(reps) != len(x) or len(reps) != len(y):
            return None
        lr = np.log(x[reps].to_numpy() / y[reps].to_numpy())
        m, se = lr.mean(), lr.std(ddof=1) / np.sqrt(len(lr))
        tq = stats.t.ppf(0.5 + level / 2, len(lr) - 1)
        return float(np.exp(m)), float(np.exp(m - tq * se)), float(np.exp(m + tq * se))

    g = df.groupby(["build", "test"])["qps"]
    agg = pd.DataFrame({"n": g.count(), "qps": g.mean(), "sd": g.std(ddof=1)}).reset_index()
    rows = []
    for _, r in agg.iterrows():
        b = agg[(agg["build"] == base) & (agg["test"] == r["test"])]
        if b.empty:
            continue
        b = b.iloc[0]
        rel = r["qps"] / b["qps"]
        va = r["sd"] ** 2 / r["n"] if r["n"] > 1 else np.nan
        vb = b["sd"] ** 2 / b["n"] if b["n"] > 1 else np.nan
        rel_se = rel * np.sqrt(va / r["qps"] ** 2 + vb / b["qps"] ** 2)
        dfree = (va + vb) ** 2 / (va ** 2 / (r["n"] - 1) + vb ** 2 / (b["n"] - 1)) if va + vb > 0 else np.inf
        tq = stats.t.ppf(0.5 + level / 2, dfree) if np.isfinite(rel_se) else np.nan
        lo, hi, method = rel - tq * rel_se, rel + tq * rel_se, "unpaired"
        pr = paired_row(r["build"], r["test"])
        if pr is not None:
            (rel, lo, hi), method = pr, "paired"
        rows.append({"build": r["build"], "test": r["test"], "n": int(r["n"]), "qps": r["qps"],
                     "cv_pct": 100 * r["sd"] / r["qps"] if r["n"] > 1 else np.nan,
                     "rel": rel, "lo": lo, "hi": hi, "pct": 100 * (rel - 1), "method": method})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    meta = df.drop_duplicates("build").set_index("build")[["toolchain", "version"]]
    out = out.join(meta, on="build")
    out["test"] = pd.Categorical(out["test"], categories=list(TESTS), ordered=True)
    out = out.sort_values(["test", "build"]).reset_index(drop=True)
    out["test"] = out["test"].astype(str)
    return out[["build", "toolchain", "version", "test", "n", "qps", "cv_pct", "rel", "lo", "hi", "pct",
                "method"]]


def relative_by_version(df: pd.DataFrame, toolchain: str = "gcc", level: float = 0.95,
                        paired: bool = True) -> pd.DataFrame:
    """The post's comparison: each build against the `toolchain` build of its own RocksDB version.

    relative_qps per version (paired within repetitions, as there), with a
    `base` column naming each row's base build. Versions without a build of
    that toolchain are left out, since nothing in them is comparable.
    """
    parts = []
    for _, g in df.groupby("version", sort=True):
        base = g.loc[g["toolchain"] == toolchain, "build"].unique()
        if len(base) != 1:
            continue
        r = relative_qps(g, str(base[0]), level=level, paired=paired)
        parts.append(r.assign(base=str(base[0])))
    if not parts:
        return pd.DataFrame(columns=["build", "toolchain", "version", "test", "n", "qps", "cv_pct", "rel",
                                     "lo", "hi", "pct", "method", "base"])
    return pd.concat(parts, ignore_index=True)


def by_version_summary(rel_v: pd.DataFrame) -> pd.DataFrame:
    """Per version and toolchain: the mean relative QPS over tests, and how many tests' intervals lie
    wholly above or below 1 (the rest are within noise)."""
    g = rel_v.groupby(["version", "toolchain", "build", "base"], sort=False)
    out = pd.DataFrame({
        "mean_pct": g["pct"].mean(), "tests": g.size(),
        "faster": g.apply(lambda x: int((x["lo"] > 1).sum()), include_groups=False),
        "slower": g.apply(lambda x: int((x["hi"] < 1).sum()), include_groups=False)}).reset_index()
    out["_o"] = out["toolchain"].map({t: i for i, t in enumerate(TOOLCHAIN_COLORS)}).fillna(9)
    return out.sort_values(["version", "_o"]).drop(columns="_o").reset_index(drop=True)


def findings_by_version(rel_v: pd.DataFrame) -> str:
    """Per version, each toolchain against that version's gcc build, in sentences."""
    summ = by_version_summary(rel_v)
    lines = []
    for v, g in summ.groupby("version", sort=True):
        parts = [f"{r.toolchain} {r.mean_pct:+.1f}% (faster in {r.faster}, slower in {r.slower} of {r.tests} "
                 "tests beyond noise)" for r in g.itertuples() if r.build != r.base]
        if parts:
            lines.append(f"- RocksDB {v}, against {g['base'].iloc[0]}: " + "; ".join(parts) + ".")
    if not lines:
        lines.append("- No version has a gcc build and another toolchain's: nothing to compare per version.")
    return "\n".join(lines)


def published_relative() -> pd.DataFrame:
    """The post's relative QPS of clang and clang+LTO against gcc (RocksDB 10.8), per server and test.

    "~N% more" -> 1 + N/100, "less" -> 1 - N/100, "similar" -> 1.0 (flagged).
    """
    pub = published.load("gccclang_relative_qps")
    pub = pub[pub["test"].isin(TESTS) & (pub["rocksdb_version"] != "most versions")].copy()
    sign = pub["direction"].map({"more": 1.0, "less": -1.0, "similar": 0.0})
    pub["rel"] = 1.0 + sign * pub["pct"].fillna(0.0) / 100.0
    pub["similar"] = pub["direction"] == "similar"
    pub = pub.rename(columns={"compiler": "toolchain", "baseline": "base"})
    cols = ["server", "test", "toolchain", "base", "rel", "similar", "direction", "pct"]
    return pub[cols].reset_index(drop=True)


def side_by_side(rel: pd.DataFrame, pub: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per test: each local build's relative QPS (with its interval), the post's per toolchain and server."""
    pub = published_relative() if pub is None else pub
    out = pd.DataFrame(index=pd.Index(list(TESTS), name="test"))
    for b, grp in rel.groupby("build", sort=False):
        g = grp.set_index("test")
        out[f"{b} rel"] = g["rel"].round(3)
        lo_hi = zip(g["lo"].reindex(out.index), g["hi"].reindex(out.index), strict=True)
        out[f"{b} 95% CI"] = [f"{lo:.3f}..{hi:.3f}" if np.isfinite(lo) else "n<2" for lo, hi in lo_hi]
        out[f"{b} cv %"] = g["cv_pct"].round(1)
    for (tc, srv), g in pub.groupby(["toolchain", "server"], sort=False):
        out[f"post {tc}/gcc {srv}"] = g.set_index("test")["rel"].reindex(out.index)
    return out.loc[[t for t in TESTS if t in set(rel["test"])]]


# --------------------------------------------------------------------------- figures


def fig_relative(rel: pd.DataFrame, base: str, pub: pd.DataFrame | None = None):
    """Relative QPS per test: each build's mean with its 95% interval, the post's beside.

    base: a build key, or for relative_by_version's frame (a `base` column per
    row) a description of the bases, e.g. "gcc of the same version".
    """
    pub = published_relative() if pub is None else pub
    fig, ax = figures.figure("page", aspect=0.38)
    tests = [t for t in TESTS if t in set(rel["test"])]
    bases = set(rel["base"]) if "base" in rel.columns else {base}
    tc_order = {t: i for i, t in enumerate(TOOLCHAIN_COLORS)}
    blds = sorted(dict.fromkeys(rel["build"]), key=lambda b: (
        b not in bases if "base" not in rel.columns else 0,
        str(rel.loc[rel["build"] == b, "version"].iloc[0]),
        tc_order.get(rel.loc[rel["build"] == b, "toolchain"].iloc[0], 9)))  # the base(s) first
    versions = sorted(map(str, rel["version"].dropna().unique()))
    pub_tc = [tc for tc in ("clang", "clang+LTO") if tc in set(pub["toolchain"])]
    slots = len(blds) + len(pub_tc)
    width = 0.8 / max(slots, 1)
    for j, b in enumerate(blds):
        g = rel[rel["build"] == b].set_index("test").reindex(tests)
        x = np.arange(len(tests)) - 0.4 + width * (j + 0.5)
        tc = g["toolchain"].dropna().iloc[0]
        lo, hi = (g["rel"] - g["lo"]).to_numpy(), (g["hi"] - g["rel"]).to_numpy()
        yerr = np.vstack([np.where(np.isfinite(lo), lo, 0), np.where(np.isfinite(hi), hi, 0)])
        mk = VERSION_MARKERS[versions.index(str(g["version"].dropna().iloc[0])) % len(VERSION_MARKERS)]
        ax.errorbar(x, g["rel"], yerr=yerr, fmt=mk, color=TOOLCHAIN_COLORS.get(tc, "#4d4d4d"), capsize=2,
                    label=f"here: {b} ({tc})" + (" = base" if b in bases else ""))
    for j, tc in enumerate(pub_tc):
        x0 = np.arange(len(tests)) - 0.4 + width * (len(blds) + j + 0.5)
        for srv, mk in SERVER_MARKERS.items():
            g = pub[(pub["toolchain"] == tc) & (pub["server"] == srv)].set_index("test").reindex(tests)
            ax.scatter(x0, g["rel"], marker=mk, facecolors="none",
                       edgecolors=TOOLCHAIN_COLORS.get(tc), linewidths=0.9,
                       label=f"post: {tc}/gcc, {srv}")
    ax.axhline(1.0, color="#4d4d4d", lw=0.8, ls="--")
    ax.set_xticks(np.arange(len(tests)), tests)
    ax.set_ylabel("relative QPS" if "base" in rel.columns else f"relative QPS (vs {base})")
    vals = np.concatenate([rel["lo"].to_numpy(float), rel["hi"].to_numpy(float), pub["rel"].to_numpy(float)])
    vals = vals[np.isfinite(vals)]
    lo, hi = (min(vals.min(), 0.9), max(vals.max(), 1.1)) if len(vals) else (0.9, 1.1)
    ax.set_ylim(max(lo - 0.03, YLIM[0]), min(hi + 0.03, YLIM[1]))
    h, lab = ax.get_legend_handles_labels()
    order = sorted(range(len(lab)), key=lambda i: not lab[i].startswith("here"))
    ax.legend([h[i] for i in order], [lab[i] for i in order], ncol=3, fontsize=6, loc="upper center",
              bbox_to_anchor=(0.5, -0.14))
    clipped = " (intervals clipped)" if len(vals) and (vals.min() < YLIM[0] or vals.max() > YLIM[1]) else ""
    what = base if "base" in rel.columns else "the base build"
    ax.set_title(f"QPS relative to {what}: here (mean, 95% CI), the post hollow (RocksDB 10.8){clipped}",
                 fontsize="medium")
    return fig


def fig_qps(df: pd.DataFrame):
    """Absolute QPS per test and build: every repetition and the mean (the post's worry: variance)."""

    tests = [t for t in TESTS if t in set(df["test"])]
    fig, axes = figures.figure("page", aspect=0.3, ncols=len(tests), squeeze=False)
    tc_order = {t: i for i, t in enumerate(TOOLCHAIN_COLORS)}
    first = df.drop_duplicates("build").set_index("build")
    blds = sorted(first.index, key=lambda b: (str(first.loc[b, "version"]),
                                              tc_order.get(first.loc[b, "toolchain"], 9), b))
    for ax, t in zip(axes[0], tests, strict=True):
        for j, b in enumerate(blds):
            g = df[(df["test"] == t) & (df["build"] == b)]
            c = TOOLCHAIN_COLORS.get(g["toolchain"].iloc[0] if len(g) else "", "#4d4d4d")
            x = np.full(len(g), j) + np.linspace(-0.12, 0.12, len(g))
            ax.scatter(x, g["qps"], s=8, color=c, alpha=0.7)
            ax.hlines(g["qps"].mean(), j - 0.3, j + 0.3, color=c, lw=1.5)
        ax.set_xticks(range(len(blds)), blds, rotation=90, fontsize=6)  # upright labels overlap
        ax.set_xlim(-0.6, len(blds) - 0.4)
        ax.set_title(t)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))
    axes[0][0].set_ylabel("QPS (ops/s)")
    fig.tight_layout()
    return fig


def findings(rel: pd.DataFrame, base: str, pub: pd.DataFrame | None = None) -> str:
    """The numbers in sentences, ours against the post's."""
    pub = published_relative() if pub is None else pub
    lines = []
    others = [b for b in dict.fromkeys(rel["build"]) if b != base]
    b0 = rel[rel["build"] == base]
    noise = b0["hi"] - b0["rel"]
    if len(b0) and np.isfinite(noise).any():
        lines.append(f"- Noise floor: the base build {base} against itself has a 95% interval of "
                     f"+-{100 * noise.min():.1f}% to +-{100 * noise.max():.1f}% depending on the test "
                     f"(coefficient of variation {b0['cv_pct'].min():.1f}% to {b0['cv_pct'].max():.1f}%): "
                     "smaller differences between builds cannot be told from noise here.")
    if not others:
        lines.append(f"- Only one build ({base}) ran: there is no comparison between toolchains, only the "
                     "noise floor above. Build clang and clang+LTO (see the matrix commands) and rerun with "
                     "`builds`.")
    for b in others:
        g = rel[rel["build"] == b]
        tc = g["toolchain"].iloc[0]
        parts = []
        for _, r in g.iterrows():
            sig = "" if not np.isfinite(r["lo"]) else (" (significant)" if r["lo"] > 1 or r["hi"] < 1
                                                       else " (within noise)")
            pp = pub[(pub["toolchain"] == tc) & (pub["test"] == r["test"])]
            ptxt = (", post " + "/".join(f"{100 * (v - 1):+.0f}%" for v in pp["rel"])) if len(pp) else ""
            ci = f"[{100 * (r['lo'] - 1):+.1f}, {100 * (r['hi'] - 1):+.1f}]"
            parts.append(f"{r['test']} {r['pct']:+.1f}% {ci}{sig}{ptxt}")
        mean = g["pct"].mean()
        lines.append(f"- {b} ({tc}) vs {base}: " + "; ".join(parts) + f". Mean over tests {mean:+.1f}%.")
    tldr = published.load("gccclang_relative_qps")
    tldr = tldr[tldr["table"] == "tl;dr"]
    said = ", ".join(f"~{r.pct:.0f}% more QPS with {r.compiler} than {r.baseline}" for r in tldr.itertuples())
    lines.append(f"- The post's tl;dr: {said} (post: pn53/arm/hetzner servers, gcc 13 and clang 18, "
                 "RocksDB 10.8).")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the build matrix


def matrix_commands(versions: Sequence[str] = MATRIX_VERSIONS, jobs: int = 2) -> list[str]:
    """The commands that build the matrix (each version x gcc, clang, clang+LTO), niced."""
    out = []
    for v in versions:
        for tc, (cc, lto) in builds.TOOLCHAINS.items():
            out.append(f"nice -n 19 ionice -c3 rxlab build-rocksdb --version {v} --cc {cc}"
                       + (" --lto" if lto else "") + f" --jobs {jobs}   # {tc}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rxlab.studies.toolchains.study", description=__doc__.splitlines()[0])
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
            return _child(a.build, a.spec)
        if a.cmd == "module":
            print(builds.ensure_module(a.build, a.jobs) or f"{a.build}: the installed module's build")
            return 0
        print("\n".join(matrix_commands()))
        return 0
    except builds.BuildError as e:
        print(f"rxlab: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
