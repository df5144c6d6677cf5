"""The first seed's DB at each scale, resolved on this machine, and the seed's db_bench sequence.

The io_efficiency study builds this DB and reads it; cpu_breakdown builds the
same DB (its tests read the trees the seed describes) and profiles the reads.
"""
from __future__ import annotations

from dataclasses import dataclass

from rxlab.bench import driver
from rxlab.bench.ioeff.names import KEY_SIZE
from rxlab.core import scales, study
from rxlab.core.study import StudySettings, size_text
from rxlab.core.sysinfo import work_space

__all__ = ["SCALES", "Scale", "Settings", "resolve", "sequence"]

MIB, GIB = 1 << 20, 1 << 30
FIO_MAX_BYTES = 16 * GIB


@dataclass(frozen=True)
class Scale(scales.Scale):
    """The common preset (keys, seconds per read step, repeats, cache) and the seed's own: revrange's
    seconds (the seed ignores its results), fio's runtime, ramp and file (None: the DB's size, capped),
    the LSM tree's shape."""

    revrange_duration: float = 2.0
    fio_runtime: float = 5.0
    fio_ramp: float = 1.0
    fio_size: int | None = 1 * GIB
    write_buffer_size: int = 64 * MIB
    target_file_size_base: int = 64 * MIB
    max_bytes_for_level_base: int = 256 * MIB


SCALES = scales.presets(
    Scale,
    # seconds in total: a 12 MB DB, 1 MiB cache; small write buffers so the tree still has levels
    smoke={"revrange_duration": 0.3, "fio_runtime": 1.0, "fio_ramp": 0.2, "fio_size": 64 * MIB,
           "write_buffer_size": 1 * MIB, "target_file_size_base": 1 * MIB,
           "max_bytes_for_level_base": 4 * MIB},
    # minutes: 2M keys (about 0.8 GiB, 100x the 8 MiB cache), the stock reference's settings
    small={},
    # the largest run the disk holds: a quarter of the free space, 4..16 GiB, 64 MiB cache
    full={"revrange_duration": 5.0, "fio_runtime": 20.0, "fio_ramp": 2.0, "fio_size": None},
)


@dataclass(frozen=True)
class Settings(StudySettings):
    """A scale resolved on this machine: what a study will actually run."""

    revrange_duration: float
    fio_runtime: float
    fio_ramp: float
    fio_size: int
    write_buffer_size: int
    target_file_size_base: int
    max_bytes_for_level_base: int
    work_dir: str
    free_bytes: int

    def own_rows(self) -> list[tuple[str, str]]:
        return [("revrange duration", f"{self.revrange_duration:g} s"),
                ("fio runtime (+ ramp)", f"{self.fio_runtime:g} s (+ {self.fio_ramp:g} s)"),
                ("fio file", size_text(self.fio_size)),
                ("write buffer / L1 target", f"{size_text(self.write_buffer_size)} / "
                                             f"{size_text(self.max_bytes_for_level_base)}")]


def resolve(scale: str, *, db_dir: str | None = None, value_size: int = 400, duration: float | None = None,
            repeats: int | None = None, db_size=None) -> Settings:
    """The scale resolved here: key count, sizes, durations, repeats; refuses (one line) a disk too small.
    duration, when given, is also fio's runtime."""
    sc = SCALES[scale].given(duration=duration, repeats=repeats,
                             fio_runtime=float(duration) if duration is not None else None)
    work, free = work_space(db_dir)
    entry = KEY_SIZE + value_size
    num = study.key_count(entry, work, free, num=sc.num, db_size=db_size)
    db_bytes = num * entry
    fio_size = sc.fio_size if sc.fio_size is not None else min(FIO_MAX_BYTES, db_bytes)
    # the DB, its compaction's copy, fio's file
    study.check_space(scale, 2 * db_bytes + fio_size, work, free, smaller="db_size")
    return Settings(scale=scale, num=int(num), db_bytes=int(db_bytes), duration=float(sc.duration),
                    revrange_duration=min(sc.revrange_duration, float(sc.duration)),
                    fio_runtime=float(sc.fio_runtime), fio_ramp=sc.fio_ramp, fio_size=int(fio_size),
                    repeats=int(sc.repeats), cache_size=sc.cache_size, write_buffer_size=sc.write_buffer_size,
                    target_file_size_base=sc.target_file_size_base,
                    max_bytes_for_level_base=sc.max_bytes_for_level_base, work_dir=str(work),
                    free_bytes=int(free))


def sequence(settings: Settings) -> list:
    """The seed's sequence (driver.SEQUENCES['io_efficiency']) with its per-step options.

    The fill, flush and compaction steps run single-threaded as in the seed's
    helper scripts (benchmark.sh loads with one thread whatever the user
    count); the read steps run with the study's thread count. revrange,
    whose results the seed ignores, is cut to `revrange_duration`.
    """
    one = {"threads": 1}
    opts = {"fillseq": one, "overwritesome": one, "flush_mt_l0": one, "compact": one,
            "revrange": {"duration": settings.revrange_duration}}
    return [{"name": s, **opts[s]} if s in opts else s for s in driver.SEQUENCES["io_efficiency"]]
