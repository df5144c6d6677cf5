"""The backends benchmark measured in turns (`rxlab selfcheck backends --interleave`): read-only db_bench
processes on one DB, SIGSTOP/SIGCONT slices in ABBA order, ratios per session with an A/A control."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from rxlab.bench import fio, turns
from rxlab.bench.selfcheck.backends import (
    COMMON,
    COUNTER_CONFIGS,
    MULTIREAD_CONFIGS,
    READ_CONFIGS,
    Bench,
    config_matches,
    readonly_reader,
)
from rxlab.core import sysinfo
from rxlab.core.stats import median_interval

# What runs in turns: per section, its configurations (name -> fs_uri, db_bench flags), the
# baseline they are compared with, the flags every configuration shares, and thread counts.
INTERLEAVE_SECTIONS = {
    "readrandom": ({n: (uri, {}) for n, uri in READ_CONFIGS.items()}, "default", {}, (1, 2)),
    # the MultiRead target is at one thread
    "multireadrandom": (MULTIREAD_CONFIGS, "default (io_uring on)",
                        {"multiread_batched": "true", "batch_size": 16}, (1,)),
    # the counters' cost on the cheapest read path, where it is the largest share of a read
    "counters": ({n: (uri, {}) for n, uri in COUNTER_CONFIGS.items() if n.startswith("posix")},
                 "posix counters=0", {"benchmarks": "readrandom"}, (1, 2)),
}
CONTROL_SUFFIX = " again"


def interleaved(root: Path, *, sections: tuple[str, ...] = ("readrandom",),
                threads: tuple[int, ...] | None = None,
                configs: tuple[str, ...] | None = None, sessions: int = 6, rounds: int = 8,
                slice_s: float = 1.0, cpus_allowed: str | None = "1", control: bool = True,
                size_gib: float = 2.2, quiet: bool = False, out: Path | None = None) -> pd.DataFrame:
    """Each section's configurations as db_bench processes reading the benchmark DB read-only,
    measured in turns (rxlab.bench.turns): CPU per device read and reads per second, per session
    against the section's baseline. readrandom runs default plus `configs` (select_configs'
    words; by default posix and posix 512-aligned) at 1 and 2 threads; multireadrandom (batch
    16, multiread_batched) every MultiRead configuration, or `configs`, at 1 thread; counters
    posix readrandom with counters on against off, at 1 and 2 threads. `control`
    adds a second process of the baseline: what "equal" looks like in the same run. Rows are
    saved to `out` after every session."""

    bad = [sec for sec in sections if sec not in INTERLEAVE_SECTIONS]
    if bad or not sections:
        raise ValueError(f"bench-backends --interleave --only {','.join(sections)!r}: runs in turns are "
                         f"{', '.join(INTERLEAVE_SECTIONS)}")
    plan = []
    for sec in sections:
        table, baseline, _, _ = INTERLEAVE_SECTIONS[sec]
        words = configs or (("posix",) if sec == "readrandom" else tuple(table))
        names = [baseline, *(n for n in table if n != baseline and config_matches(n, words))]
        if len(names) < 2:
            raise ValueError(f"bench-backends --interleave --configs {','.join(words)!r}: name a {sec} "
                             f"configuration besides {baseline} ({', '.join(table)})")
        plan.append((sec, names))
    cpus = fio.parse_cpus(cpus_allowed) if cpus_allowed else None
    b = Bench(Path(root), size_gib=size_gib, quiet=quiet)
    db = b.root / "db-aligned"
    num = b.loaded(db)
    disk = sysinfo.device_for_path(db).disk
    frames: list[pd.DataFrame] = []
    for sec, names in plan:
        table, baseline, shared, counts = INTERLEAVE_SECTIONS[sec]
        for t in threads or counts:
            def make(session: int, *, t=t, sec=sec, names=names, table=table, baseline=baseline,
                     shared=shared) -> list:
                # other keys for every process and session: a reader must not find blocks that
                # another one just pulled into a cache below the guest
                seed = COMMON["seed"] + 1000 * session
                who = [*names, baseline + CONTROL_SUFFIX] if control else names
                return [readonly_reader(n, db, num, t, seed=seed + 100 * i, benchmark=sec,
                                        fs_uri=table[n.removesuffix(CONTROL_SUFFIX)][0],
                                        extra={**shared, **table[n.removesuffix(CONTROL_SUFFIX)][1]})
                        for i, n in enumerate(who)]

            def save(df: pd.DataFrame, t=t, sec=sec) -> None:
                if out is not None:
                    pd.concat([*frames, df.assign(section=sec, threads=t)]).to_csv(out, index=False)

            b.log(f"{sec} t={t}: {', '.join(names)}{' + control' if control else ''}, {sessions} sessions "
                  f"of {rounds} rounds of {slice_s:g} s each")
            df = turns.measure(make, sessions=sessions, rounds=rounds, slice_s=slice_s, disk=disk,
                                    cpus=cpus, progress=not quiet, on_session=save, placement=True)
            frames.append(df.assign(section=sec, threads=t, cpus_allowed=cpus_allowed or ""))
            save(frames[-1].iloc[:0])
    return pd.concat(frames, ignore_index=True)


def summarize_interleaved(df: pd.DataFrame, target: float = 0.03) -> str:
    """Per section and thread count, each configuration against the baseline, and the issue's
    targets: readrandom posix within `target` of default on CPU per op; multireadrandom io_uring
    and libaio at least 1.5x posix and at least default (io_uring on) in QPS; counters on within
    2% of counters off in QPS. Per device read
    and reads per second: for one DB and one workload, the same ratios as per op and QPS."""

    out = ["in turns (read-only db_bench processes on one DB; ratios are per session, "
           "median [95% bootstrap interval of the median]):"]
    for (sec, t), g in df.groupby(["section", "threads"], sort=False):
        _, baseline, _, _ = INTERLEAVE_SECTIONS[sec]
        out.append(turns.summarize(g, baseline, f" {sec} t={t}"))
        names = list(g["contender"].unique())

        def ratio(a: str, b: str, col: str, g=g) -> tuple[float, float, float]:
            r = turns.session_ratios(g, a, b)[col]
            return (r.median(), *median_interval(r))

        for name in names:
            if sec == "readrandom" and name.startswith("posix"):
                out.append(f"   target {name} within {target:.0%} of default on CPU per op: "
                           + cpu_target_verdict(*ratio(baseline, name, "cpu"), target=target))
            if sec == "counters" and name.endswith("counters=1"):
                # their cost is QPS lost; counting cannot make reads faster, so a gain is the
                # processes' own difference, which the A/A control shows beside it
                m, lo, hi = ratio(baseline, name, "rate")
                c, clo, chi = ratio(baseline, name, "cpu")
                verdict = "MET" if m >= 0.98 else "MISSED"
                out.append(f"   target {name} costs at most 2% of {baseline} QPS: {m - 1:+.1%} {verdict} "
                           f"[{lo:.3f}..{hi:.3f}]; CPU per read {c - 1:+.1%} [{clo:.3f}..{chi:.3f}]")
                if baseline + CONTROL_SUFFIX in names:
                    a, _, _ = ratio(baseline, baseline + CONTROL_SUFFIX, "rate")
                    out.append(f"      A/A control ({baseline}{CONTROL_SUFFIX}): QPS {a - 1:+.1%}")
            if sec == "multireadrandom" and name in ("io_uring", "libaio"):
                if "posix" in names:
                    m, lo, hi = ratio("posix", name, "rate")
                    out.append(f"   target {name} at least 1.5x posix QPS: {m:.2f}x "
                               f"{'MET' if m >= 1.5 else 'MISSED'} [{lo:.2f}..{hi:.2f}]")
                m, lo, hi = ratio(baseline, name, "rate")
                out.append(f"   target {name} at least {baseline} QPS: {m:.3f} "
                           f"{'MET' if m >= 1.0 else 'MISSED'} [{lo:.3f}..{hi:.3f}]")
    return "\n".join(out)


def cpu_target_verdict(median: float, lo: float, hi: float, target: float = 0.03) -> str:
    """The verdict on a CPU-per-op ratio (backend / default; median and interval over sessions).
    The target bounds what the backend adds: it is met up to 1 + target, and a backend that
    costs less than default meets it too, said so rather than called a miss."""
    verdict = "MET" if median - 1 <= target else "MISSED"
    if median < 1 - target:
        verdict += " (cheaper than default)"
    where = "below" if hi <= 1 + target else "reaches above"
    return f"{median - 1:+.1%} {verdict} (interval [{lo:.3f}..{hi:.3f}] {where} +{target:.0%})"
