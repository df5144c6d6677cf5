"""The IO-efficiency study's parameters: what a study runs, on the seed's DB (rxlab.bench.ioeff).

The seed's names (its tests, the fio tools beside RocksDB and their run
kinds), the DB's scale presets and settings are the method's, shared with
the studies that build on it (rxlab.bench.ioeff); they are named here too.
The model fits on fio's unaligned runs only when asked: on these VMs they
cost several times what RocksDB's unaligned reads do
(docs/findings/2026-11-26-perf_model.md).

The study runs in turns (rxlab.core.turns_plan, docs/methods/resolution.md):
COMPARE is what the protocol resolves, each block_align setting's QPS over
the main one's; IOEFF_COMPARE is io.eff, RocksDB's device read IOPS over
fio's of the same turn, computed from the same turns (tables.io_eff_comparisons).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from rxlab.bench.ioeff.db import SCALES as METHOD_SCALES
from rxlab.bench.ioeff.db import Scale, Settings, resolve
from rxlab.bench.ioeff.names import (
    BLOCK_BYTES,
    DB_TOOL,
    FIO_AWAY_TOOL,
    FIO_KINDS,
    FIO_TOOL,
    FIO_UNALIGNED_TOOL,
    KEY_SIZE,
    PUBLISHED,
    RUN_PREFIX,
    SEED_FILE,
    SEED_TESTS,
    UNALIGNED_ALIGN,
    UNALIGNED_BS,
)
from rxlab.core import engines
from rxlab.core import params as checks
from rxlab.core.turns_plan import Compare, TurnsParams

__all__ = ["BLOCK_BYTES", "COMPARE", "DB_TOOL", "FIO", "FIO_AWAY_TOOL", "FIO_KINDS", "FIO_TOOL",
           "FIO_UNALIGNED_TOOL", "IOEFF_COMPARE", "KEY_SIZE", "PUBLISHED", "RUN_PREFIX", "SCALES",
           "SEED_FILE", "SEED_TESTS", "SETTING", "UNALIGNED_ALIGN", "UNALIGNED_BS", "Params", "Scale",
           "Settings", "main_setting", "strip_delay", "with_delay"]

MAX_THREADS = 256            # rxlab fio's numjobs limit
MAX_DELAY_US = 100_000

# The configurations compared, by block_align setting, as the frame's `setting` column names them.
SETTING = {True: "block_align on", False: "block_align off"}
FIO = "fio"                  # io.eff's base: fio's baseline of the same turn
GROUPS = ("delay_us", "threads")

# What the protocol resolves in turns: per delay and client count, each block_align setting's QPS over the
# main one's (on when run: the plan lists it first, so it is the base, run twice a turn as the A/A pair),
# per seed read test (`seed_test`: empty on fio's rows and the load steps, which are no comparison).
COMPARE = Compare(config="setting", metric="qps", groups=GROUPS, keys=("seed_test",), turn="rep",
                  label="QPS")
# io.eff as a comparison: each setting's device read IOPS over fio's baseline of the same turn (the protocol's
# Compare has one base; this one is computed from the same turns, with the same interval).
IOEFF_COMPARE = Compare(config="setting", metric="iops", base=FIO, groups=GROUPS, keys=("seed_test",),
                        turn="rep", label="device read IOPS")

# The method's scale presets (rxlab.bench.ioeff.db, shared with cpu_breakdown) with this study's time for its
# turns at small: three turns, the fewest the stopping rule resolves with. A turn there is about 400 s (fio
# and three sequences per client count); two turns (the 941 s the whole study took before it ran in turns,
# figures/index.md, 2026-11-27) give no interval worth drawing (t with 1 degree of freedom is 12.7).
SMALL_BUDGET_S = 1200.0
SCALES = {**METHOD_SCALES, "small": dataclasses.replace(METHOD_SCALES["small"], budget_s=SMALL_BUDGET_S)}


def main_setting(block_align: list) -> bool:
    """The block_align setting the others are compared with: on when run (the seed's main tables)."""
    return True if True in block_align or not block_align else bool(block_align[0])


@dataclass
class Params(TurnsParams):
    """The study's parameters (the notebooks' papermill parameters).

    The study runs in turns (rxlab.core.turns_plan): target (percent),
    budget (None: SCALES' budget_s at the scale), min_turns and max_turns set
    the stopping rule; `repeats`, when given, runs exactly that many turns
    instead.

    backend: default, default?io_uring=1 or an rxlab engine URI (posix,
    libaio, io_uring?registered_files=1&fixed_buffers=1, ...). threads: the
    client counts (fio numjobs alike). scale: smoke | small | full.
    db_dir: where the DB and fio's file go (None: a temporary directory in
    $TMPDIR; it must support O_DIRECT). block_align: the settings to run.
    duration: None takes the scale's. value_size: bytes per value
    (the seed's 400). delay_us: emulated device latency per read (rxlab
    engines only; fio's baseline gets the same). db_size: bytes (or '2g') of
    key-value data instead of the scale's key count.
    """

    SCALES = SCALES      # the turns' budget at each scale (TurnsParams.scale_budget)

    backend: str = "posix"
    threads: list = field(default_factory=lambda: [1, 2])
    db_dir: str | None = None
    block_align: list = field(default_factory=lambda: [True, False])
    repeats: int | None = None
    value_size: int = 400
    duration: float | None = None
    delay_us: list = field(default_factory=lambda: [0])
    db_size: int | str | None = None

    def __post_init__(self):
        super().__post_init__()
        self.backend = checks.backend(self.backend)
        self.threads = checks.int_list("threads", self.threads, 1, MAX_THREADS)
        self.block_align = checks.bool_list("block_align", self.block_align)
        checks.optional_integer("repeats", self.repeats, 1, 100)
        checks.integer("value_size", self.value_size, 1, 1 << 20, note=" (bytes)")
        checks.optional_seconds("duration", self.duration)
        self.delay_us = checks.int_list("delay_us", self.delay_us, 0, MAX_DELAY_US)
        if any(self.delay_us) and checks.is_default(self.backend):
            checks.fail("delay_us", self.delay_us, "delays need an rxlab engine (posix, libaio, io_uring), "
                                                   "not the default file system")
        checks.db_size(self.db_size)
        self.db_dir = checks.db_dir(self.db_dir)
        self.settings()  # the disk must hold the scale


    def with_delays(self, delay_us) -> Params | None:
        """The delay study that goes with these parameters: one client (the smallest thread count),
        the first block_align setting, the given delays; None when no delay is above 0."""
        dl = checks.as_list(delay_us)
        if not any(d for d in dl if checks.is_int(d)) and all(checks.is_int(d) for d in dl):
            return None
        return dataclasses.replace(self, threads=[min(self.threads)], block_align=self.block_align[:1],
                                   delay_us=dl)

    def settings(self) -> Settings:
        """The scale resolved here: key count, sizes, durations, repeats; checks the free disk."""
        return resolve(self.scale, db_dir=self.db_dir, value_size=self.value_size, duration=self.duration,
                       repeats=self.repeats, db_size=self.db_size)


def with_delay(backend: str, delay_us: int) -> str:
    """backend URI with ?delay_us=N (or &delay_us=N) added; unchanged for 0."""
    return engines.with_options(backend, delay_us=int(delay_us)) if delay_us else backend


def strip_delay(uri: str) -> str:
    """The backend URI without its delay_us: the backend a delayed run was run on."""
    return engines.with_options(uri, delay_us=None)
