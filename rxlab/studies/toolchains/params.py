"""The toolchain study's parameters: which RocksDB builds, the base build, the post's tests, scale presets."""
from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rxlab.core import builds, scales
from rxlab.core import params as checks
from rxlab.core.study import StudySettings
from rxlab.core.turns_plan import Compare, TurnsParams

SEED_FILE = "blog-2025-12-01-rocksdb-gcc-vs-clang-and-more.txt"
PUBLISHED = (f"{SEED_FILE}: gccclang_relative_qps",)

# The post's tests (its names) and the driver's steps that run them.
TESTS = ("fillseq", "readww", "fwdrangeww", "revrangeww", "overwrite")
STEP_OF = {"fillseq": "fillseq", "readww": "readwhilewriting", "fwdrangeww": "fwdrangewhilewriting",
           "revrangeww": "revrangewhilewriting", "overwrite": "overwrite"}
TEST_OF = {v: k for k, v in STEP_OF.items()}
KEY_SIZE = 16                     # db_bench's default, as in the post
# The build matrix of the issue (2 versions x 3 toolchains at least), as build-rocksdb commands.
MATRIX_VERSIONS = ("7.8.3", "9.10.0", "9.11.2")
MIB = 1 << 20

# What the study compares, in turns (rxlab.core.turns_plan): each build's QPS over the base build's, test by
# test. The base is the plan's first build (Params puts the base build first), which the protocol runs twice
# a turn: the A/A pair. A turn is one child process per build (and two of the base), each running every test.
COMPARE = Compare(config="build", metric="qps", keys=("test",), turn="rep", label="QPS")


# The common presets with the post's own keys and seconds; the block cache is not the scale's here: it holds
# the DB twice over (the post's DB is cached by RocksDB). `repeats` is unused: the study runs in turns until
# resolved or out of budget. `duration`: the seconds each build runs each timed test in a turn. At small a
# turn is a fillseq run of each of 7 builds (6, the base twice) and four sessions of 7 processes in slices,
# about two minutes: the budget holds 5 turns.
SCALES = scales.presets(
    scales.Scale,
    smoke={"num": 10_000, "duration": 0.3, "repeats": 2},                        # seconds (CI): the pipeline
    small={"num": 250_000, "duration": 2.0, "repeats": 3, "budget_s": 720.0},
    full={"num": 4_000_000, "duration": 60.0, "repeats": 5},                     # ~1.7 GB cached
)

# The slices of a test measured on every build at once (rxlab.studies.toolchains.slices), by scale: seconds
# a slice, and seconds every process runs the test before the first slice. The rounds are the duration's
# slices: each build runs the test `duration` seconds in a turn, as a whole run does.
SLICES = {"smoke": {"slice_s": 0.1, "warmup_s": 0.2},
          "small": {"slice_s": 0.5, "warmup_s": 1.0},
          "full": {"slice_s": 1.0, "warmup_s": 5.0}}


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved: what each child run does."""

    value_size: int
    threads: int
    write_rate_limit: int
    builds: tuple
    base: str
    tests: tuple
    work_dir: str
    turns: str = ""     # the stopping rule, in words
    sliced: bool = True  # the timed tests on every build at once, in slices (else whole runs, one by one)
    rounds: int = 4     # of a test in slices: rounds of every build, seconds a slice, seconds before them
    slice_s: float = 0.5
    warmup_s: float = 1.0

    def own_rows(self) -> list[tuple[str, object]]:
        return [("key / value bytes", f"{KEY_SIZE} / {self.value_size}"),
                ("reader threads", self.threads),
                ("writer rate limit (*ww)", f"{self.write_rate_limit / MIB:g} MiB/s"),
                ("builds", ", ".join(self.builds)), ("base build (twice a turn: A/A)", self.base),
                ("tests", ", ".join(self.tests)), ("turns", self.turns),
                ("timed tests, per turn", f"every build at once, {self.rounds} rounds of {self.slice_s:g} s "
                 f"slices after {self.warmup_s:g} s" if self.sliced else
                 f"a whole run of each build, {self.duration:g} s a test")]


def installed_key() -> str:
    """The key of the build the editable install's module is compiled against."""
    return builds.installed_build().name


def matrix_versions(have: list[dict], base_version: str) -> list[str]:
    """The RocksDB versions of the matrix: the base's and every other version with a build, or, when the
    cache holds only one version, the newest of MATRIX_VERSIONS besides it (at least two versions)."""
    versions = {base_version, *(r["version"] for r in have)}
    for v in reversed(MATRIX_VERSIONS):
        if len(versions) >= 2:
            break
        versions.add(v)
    return sorted(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


def matrix_missing(have: list[dict], versions: list[str]) -> list[tuple[str, str]]:
    """(version, toolchain) pairs of the matrix that no finished build in the cache is (standard flags)."""
    there = {(r["version"], r["toolchain"]) for r in have if not re.search(r"-f[0-9a-f]{8}$", r["key"])}
    return [(v, tc) for v in versions for tc in builds.TOOLCHAINS if (v, tc) not in there]


def build_command(version: str, toolchain: str) -> str:
    """The command that makes one build of the matrix."""
    cc, lto = builds.TOOLCHAINS[toolchain]
    return f"rxlab build-rocksdb --version {version} --cc {cc}" + (" --lto" if lto else "")


def missing_line(missing: list[tuple[str, str]], versions: list[str]) -> str:
    """One line: the builds the matrix lacks and the commands that make them."""
    names = ", ".join(f"{v} {tc}" for v, tc in missing)
    cmds = "; ".join(build_command(v, tc) for v, tc in missing)
    return (f"toolchains: the matrix (gcc, clang, clang+LTO for RocksDB {' and '.join(versions)}) lacks "
            f"{len(missing)} build{'s' if len(missing) != 1 else ''}: {names}; make them with: "
            f"make toolchains TOOLCHAIN_VERSIONS=\"{' '.join(versions)}\" (installs clang, lld and llvm, "
            f"then builds; 6 to 20 minutes a build on 2 cores), or one by one: {cmds}; "
            "or pass builds=[...] with a build besides the base")


def usable(key: str) -> bool:
    """The installed module's build, or a build whose compiled module is current."""
    rec = builds.get_build(key)
    return Path(rec["path"]) == builds.installed_build() or builds.module_current(key)


@dataclass
class Params(TurnsParams):
    """The study's parameters (notebook 70's papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): each turn runs every
    build once and the base twice (the A/A pair); target (percent), budget,
    min_turns and max_turns set the stopping rule; `repeats`, when given, runs
    exactly that many turns instead.

    builds: build keys of `rxlab builds` (e.g. ['9.10.0-gcc12', '9.10.0-clang16']),
    at least one besides the base; 'default' names the installed module's build;
    None: the matrix (gcc, clang, clang+LTO of at least two RocksDB versions),
    refused in one line naming the builds it lacks and the commands that make
    them. At smoke scale (CI, the pipeline) None is the base build alone, and
    its figures say it is the A/A control, not a comparison.
    base: the build the others are relative to (None: the installed module's,
    the default gcc build). tests: the post's tests to run. duration: the
    seconds each build runs each timed test (the *ww readers, overwrite) in a
    turn; None takes the scale's. sliced: the timed tests run on every build
    at once, in slices of a second or less (rxlab.studies.toolchains.slices);
    False: in whole runs, one build after another, as fillseq always does.
    threads: reader threads (the post's small servers: 1).
    write_rate_limit: bytes/s of the writer beside *ww readers.
    db_dir: where the DBs go (None: a temporary directory).
    """

    SCALES = SCALES   # the small preset's own budget (3 turns of the matrix)

    builds: list | None = None
    base: str | None = None
    tests: list = field(default_factory=lambda: list(TESTS))
    repeats: int | None = None
    duration: float | None = None
    sliced: bool = True
    threads: int = 1
    write_rate_limit: int | str = 2 * MIB
    value_size: int = 400
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        recs = builds.list_builds()
        have = [b["key"] for b in recs]
        base = installed_key() if self.base in (None, "default") else self.base
        if base not in have:
            checks.fail("base", self.base, f"expected a finished build: have {', '.join(have) or 'none'}")
        self.base = base
        if self.builds is None:
            keys = [base] if self.scale == "smoke" else self._matrix(recs, base)
        else:
            keys = checks.as_list(self.builds)
            keys = [installed_key() if k == "default" else k for k in keys]
            if not keys or len(set(keys)) != len(keys) or not all(isinstance(k, str) for k in keys):
                checks.fail("builds", self.builds, "expected None or a non-empty list of distinct build keys")
            for k in keys:
                if k not in have:
                    checks.fail("builds", self.builds, f"{k!r} is not a finished build: have "
                                f"{', '.join(have) or 'none'} (rxlab build-rocksdb makes more)")
        # the base first: the protocol's base is the plan's first build (COMPARE)
        keys = [base, *(k for k in keys if k != base)]
        if len(keys) < 2 and self.scale != "smoke":
            # smoke (CI) checks the pipeline with the builds at hand; a comparison needs a second side
            version = builds.get_build(base)["version"]
            cmds = "; ".join(build_command(version, tc) for tc in builds.TOOLCHAINS
                             if tc != builds.get_build(base)["toolchain"])
            checks.fail("builds", self.builds, f"only the base build {base}: nothing to compare it with; "
                        f"make another build with: {cmds} (rxlab builds lists the finished ones)")
        self.builds = keys
        t = checks.as_list(self.tests)
        if not t or len(set(t)) != len(t) or not all(x in TESTS for x in t):
            checks.fail("tests", self.tests,
                        f"expected a non-empty list of distinct tests from {', '.join(TESTS)}")
        self.tests = [x for x in TESTS if x in t]
        checks.optional_integer("repeats", self.repeats, 1, 100, none="None")
        checks.optional_seconds("duration", self.duration, 0.1, none="None")
        if not checks.is_bool(self.sliced):
            checks.fail("sliced", self.sliced,
                        "expected True (every build at once, in slices) or False (whole runs)")
        checks.integer("threads", self.threads, 1, 64)
        self.write_rate_limit = checks.size_bytes("write_rate_limit", self.write_rate_limit, minimum=1024)
        checks.integer("value_size", self.value_size, 1, 1 << 20)
        self.db_dir = checks.db_dir(self.db_dir)

    @staticmethod
    def _matrix(recs: list[dict], base: str) -> list[str]:
        """Every build of the matrix (base first), or a one-line refusal naming the builds it lacks."""
        versions = matrix_versions(recs, builds.get_build(base)["version"])
        missing = matrix_missing(recs, versions)
        if missing:
            raise ValueError(missing_line(missing, versions))
        want = set(versions)
        keys = [r["key"] for r in recs if r["version"] in want and not re.search(r"-f[0-9a-f]{8}$", r["key"])]
        return [base, *(k for k in keys if k != base)]


    def settings(self) -> Settings:
        sc = SCALES[self.scale].given(duration=self.duration, repeats=self.repeats)
        db_bytes = sc.num * (KEY_SIZE + self.value_size)
        cache = max(64 * MIB, 1 << int(np.ceil(np.log2(db_bytes * 2))))  # the DB fits twice over
        return Settings(scale=self.scale, num=sc.num, value_size=self.value_size, db_bytes=db_bytes,
                        cache_size=cache,
                        duration=float(sc.duration), repeats=int(sc.repeats),
                        threads=self.threads, write_rate_limit=int(self.write_rate_limit),
                        builds=tuple(self.builds), base=self.base, tests=tuple(self.tests),
                        work_dir=self.db_dir or tempfile.gettempdir(), turns=self.rule().describe(),
                        sliced=self.sliced, rounds=max(1, round(sc.duration / SLICES[self.scale]["slice_s"])),
                        **SLICES[self.scale])
