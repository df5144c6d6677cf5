"""The toolchain study's parameters: which RocksDB builds, the base build, the post's tests, scale presets."""
from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.core import builds, study
from rxlab.core import params as checks
from rxlab.core.study import StudySettings, settings_table, size_text

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
class Settings(StudySettings):
    """A scale resolved: what each child run does."""

    value_size: int
    threads: int
    write_rate_limit: int
    builds: tuple
    base: str
    tests: tuple
    work_dir: str

    def table(self) -> pd.DataFrame:
        return settings_table([
            ("keys (num)", f"{self.num:,}"), ("key / value bytes", f"{KEY_SIZE} / {self.value_size}"),
            ("DB size (keys x (16 + value))", size_text(self.db_bytes)),
            ("block cache (holds the DB)", size_text(self.cache_size)),
            ("seconds per read step and overwrite", f"{self.duration:g}"),
            ("repetitions per build", self.repeats), ("reader threads", self.threads),
            ("writer rate limit (*ww)", f"{self.write_rate_limit / MIB:g} MiB/s"),
            ("builds", ", ".join(self.builds)), ("base build", self.base),
            ("tests", ", ".join(self.tests)), ("work directory", self.work_dir)])


def installed_key() -> str:
    """The key of the build the editable install's module is compiled against."""
    return builds.installed_build().name


def usable(key: str) -> bool:
    """The installed module's build, or a build whose compiled module is current."""
    rec = builds.get_build(key)
    return Path(rec["path"]) == builds.installed_build() or builds.module_current(key)


@dataclass
class Params(study.StudyParams):
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
    tests: list = field(default_factory=lambda: list(TESTS))
    repeats: int | None = None
    duration: float | None = None
    threads: int = 1
    write_rate_limit: int | str = 2 * MIB
    value_size: int = 400
    db_dir: str | None = None

    def __post_init__(self):
        super().__post_init__()
        have = [b["key"] for b in builds.list_builds()]
        base = installed_key() if self.base in (None, "default") else self.base
        if base not in have:
            checks.fail("base", self.base, f"expected a finished build: have {', '.join(have) or 'none'}")
        self.base = base
        if self.builds is None:
            keys = [base] if self.scale == "smoke" else [k for k in have if usable(k)]
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
        checks.optional_integer("repeats", self.repeats, 1, 100, none="None")
        checks.optional_seconds("duration", self.duration, 0.1, none="None")
        checks.integer("threads", self.threads, 1, 64)
        self.write_rate_limit = checks.size_bytes("write_rate_limit", self.write_rate_limit, minimum=1024)
        checks.integer("value_size", self.value_size, 1, 1 << 20)
        self.db_dir = checks.db_dir(self.db_dir)

    def settings(self) -> Settings:
        sc = SCALES[self.scale]
        db_bytes = sc.num * (KEY_SIZE + self.value_size)
        cache = max(64 * MIB, 1 << int(np.ceil(np.log2(db_bytes * 2))))  # the DB fits twice over
        return Settings(scale=self.scale, num=sc.num, value_size=self.value_size, db_bytes=db_bytes,
                        cache_size=cache,
                        duration=float(self.duration if self.duration is not None else sc.duration),
                        repeats=int(self.repeats if self.repeats is not None else sc.repeats),
                        threads=self.threads, write_rate_limit=int(self.write_rate_limit),
                        builds=tuple(self.builds), base=self.base, tests=tuple(self.tests),
                        work_dir=self.db_dir or tempfile.gettempdir())
