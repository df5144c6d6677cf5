"""The backends benchmark: the release db_bench through the rxlab plugin.

One DB of at least 2 GiB (8 KiB blocks, block_align, no compression, O_DIRECT
reads, 8 MiB block cache) compacted into a single SST file, so that a
MultiGet batch lands in one file; a second DB without block_align for scans
(block_align pads blocks, which breaks RocksDB's sequential-read check and
so its auto readahead). Every configuration is alternated with the others
and repeated; targets are judged on the medians, and the spread is printed.
"""
from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import rxlab
from rxlab.bench import fio, references
from rxlab.bench.references import plugin_path
from rxlab.bench.turns import Contender
from rxlab.core import metrics
from rxlab.core.builds import active_build
from rxlab.core.paths import REPO
from rxlab.core.stats import median_interval

KEY_SIZE = 16
VALUE_SIZE = 400

COMMON = {
    "key_size": KEY_SIZE,
    "value_size": VALUE_SIZE,
    "block_size": 8192,
    "compression_type": "none",
    "cache_size": 8 << 20,
    "bloom_bits": 10,
    "use_direct_reads": "true",
    "use_direct_io_for_flush_and_compaction": "true",
    "target_file_size_base": 64 << 30,  # compact into one SST file
    "max_bytes_for_level_base": 64 << 30,
    "histogram": 1,
    "seed": 42,
}

READ_CONFIGS = {
    "default": None,
    # buffer_align=auto (rxlab's default): since 2026-11-27 the logical block size for a file's
    # whole life, the same as "posix 512-aligned" below (a page-aligned switch mid-life corrupted
    # compaction readahead); the two rows are then a second A/A pair.
    "posix": "rxlab://posix",
    # buffer_align=0, as RocksDB's own file system: buffers aligned to the logical block size
    # (512 here), so where an 8 KiB buffer falls in its pages is up to malloc, per process
    # (strace: page offset 0 in db_bench on RocksDB's file system, 2048 with the plugin's posix).
    "posix 512-aligned": "rxlab://posix?buffer_align=0",
    "libaio": "rxlab://libaio",
    "io_uring": "rxlab://io_uring",
    "io_uring+reg+fixed": "rxlab://io_uring?registered_files=1&fixed_buffers=1",
}
# db_bench defines RocksDbIOUringEnable() as --io_uring_enabled (default true):
# "default" batches MultiRead through io_uring there; false gives a pread loop.
MULTIREAD_CONFIGS = {
    "default (io_uring on)": (None, {"io_uring_enabled": "true"}),
    "default (io_uring off)": (None, {"io_uring_enabled": "false"}),
    "posix": ("rxlab://posix", {}),
    "libaio": ("rxlab://libaio", {}),
    "io_uring": ("rxlab://io_uring", {}),
}
SEEK_CONFIGS = {
    f"{name} async_io={a}": (uri, {"async_io": a, "io_uring_enabled": "true"})
    for name, uri in (("default", None), ("posix", "rxlab://posix"), ("io_uring", "rxlab://io_uring"))
    for a in ("false", "true")
}
COUNTER_CONFIGS = {
    "posix counters=1": "rxlab://posix",
    "posix counters=0": "rxlab://posix?counters=0",
    "io_uring counters=1": "rxlab://io_uring",
    "io_uring counters=0": "rxlab://io_uring?counters=0",
}


# For readers that share one DB at once (rxlab.bench.turns): db_bench --readonly opens it without
# its lock. open_files above the DB's file count, because with the default -1 OpenForReadOnly of a
# DB whose files all sit in one level returns a CompactedDBImpl, whose Get is not the DBImpl::Get
# that readrandom measures everywhere else.
READONLY = {"readonly": 1, "open_files": 1000}


def readonly_reader(name: str, db: Path, num: int, threads: int, *, seed: int,
                    fs_uri: str | None = None, benchmark: str = "readrandom", extra: dict | None = None):
    """An turns.Contender: the release db_bench reading `db` read-only until it is killed."""

    flags = {**COMMON, **READONLY, "db": str(db), "benchmarks": benchmark, "use_existing_db": 1,
             "num": num, "threads": threads, "duration": 10**6, "seed": seed, **(extra or {})}
    flags.pop("histogram")
    env = {}
    if fs_uri:
        flags["fs_uri"] = fs_uri
        env["LD_PRELOAD"] = str(plugin_path())
    return Contender(name, [str(active_build() / "bin" / "db_bench"), *references.flag_list(flags)], env)


SECTIONS = ("readrandom", "multireadrandom", "seekrandom", "counters")


def _section_configs() -> dict[str, dict]:
    return {"readrandom": READ_CONFIGS, "multireadrandom": MULTIREAD_CONFIGS, "seekrandom": SEEK_CONFIGS,
            "counters": COUNTER_CONFIGS}


def config_matches(name: str, words: tuple[str, ...] | None) -> bool:
    # "default" keeps "default", "default (io_uring on)" and "default async_io=true"
    return words is None or any(name == w or name.startswith(w + " ") for w in words)


def select_configs(configs: str | None, sections: tuple[str, ...] = SECTIONS) -> tuple[str, ...] | None:
    """The comma-separated configuration names of `configs` (None: all), each checked against the
    configurations of the chosen sections."""
    if not configs:
        return None
    words = tuple(w.strip() for w in configs.split(",") if w.strip())
    known = [n for sec in sections for n in _section_configs()[sec]]
    bad = [w for w in words if not any(config_matches(n, (w,)) for n in known)]
    if bad or not words:
        raise ValueError(f"bench-backends --configs {configs!r}: configurations of "
                         f"{', '.join(sections)} are {', '.join(dict.fromkeys(known))}")
    return words


def select_sections(only: str | None) -> tuple[str, ...]:
    """The SECTIONS named in a comma-separated `only` (all of them for None or "")."""
    if not only:
        return SECTIONS
    names = tuple(w.strip() for w in only.split(",") if w.strip())
    bad = [n for n in names if n not in SECTIONS]
    if bad or not names:
        raise ValueError(f"bench-backends --only {only!r}: sections are {', '.join(SECTIONS)}")
    return names


@dataclass
class Bench:
    root: Path
    size_gib: float = 2.2
    duration: int = 10
    repeats: int = 3
    quiet: bool = False
    rows: list[dict] = field(default_factory=list)
    sections: tuple[str, ...] = SECTIONS
    configs: tuple[str, ...] | None = None  # select_configs: None runs every configuration
    # fio's cpus_allowed for every db_bench run (fio.parse_cpus). Unpinned, where the scheduler puts
    # db_bench's two readers changes from run to run, and with it CPU per op and QPS by 10-20%
    # (both on the interrupt's CPU: faster; spread: slower), whatever the backend.
    cpus_allowed: str | None = None
    placements: dict = field(default_factory=dict)  # (config, threads) -> read buffers' page offsets

    @property
    def num(self) -> int:
        return int(self.size_gib * 2**30 / (KEY_SIZE + VALUE_SIZE))

    def log(self, msg: str) -> None:
        if not self.quiet:
            print(msg, file=sys.stderr, flush=True)

    def run(self, db: Path, benchmarks: str, fs_uri: str | None, extra: dict | None = None,
            threads: int = 1) -> dict:
        flags = {**COMMON, "db": str(db), "benchmarks": benchmarks, "use_existing_db": 1,
                 "threads": threads, "duration": self.duration, "num": self.num, **(extra or {})}
        env = {}
        if fs_uri:
            flags["fs_uri"] = fs_uri
            env["LD_PRELOAD"] = str(plugin_path())
        with fio.affinity(fio.parse_cpus(self.cpus_allowed) if self.cpus_allowed else None):
            rows = references.run_db_bench(active_build() / "bin" / "db_bench", flags, env=env)
        return rows[-1]

    def placement(self, db: Path, fs_uri: str | None, threads: int, reads: int = 1500) -> str:
        """Page offsets of the 8 KiB read buffers of a short readrandom under strace (pread only:
        RocksDB's posix file system and rxlab's posix), e.g. '0 (100%)' or '2048 (99%), 0 (1%)'."""
        if not shutil.which("strace"):
            return "unknown (no strace)"
        flags = {**COMMON, "db": str(db), "benchmarks": "readrandom", "use_existing_db": 1,
                 "threads": threads, "reads": reads, "num": self.num}
        flags.pop("histogram")
        if fs_uri:
            flags["fs_uri"] = fs_uri
        offsets = read_buffer_offsets(active_build() / "bin" / "db_bench", references.flag_list(flags),
                                      preload=plugin_path() if fs_uri else None, cpus=self.cpus_allowed)
        if not offsets:
            return "unknown (no 8 KiB pread traced)"
        n = sum(offsets.values())
        return ", ".join(f"{off} ({100 * c / n:.0f}%)" for off, c in offsets.most_common(3) if c >= 0.01 * n)

    def load(self, db: Path, block_align: bool, size_gib: float) -> None:
        marker = db / "rxlab-loaded"
        want = f"num={int(size_gib * 2**30 / (KEY_SIZE + VALUE_SIZE))} block_align={block_align}"
        if marker.is_file() and marker.read_text() == want:
            self.log(f"reusing {db} ({want})")
            return
        shutil.rmtree(db, ignore_errors=True)
        db.mkdir(parents=True)
        self.log(f"loading {db} ({want}) with db_bench fillseq + compact ...")
        t = time.time()
        num = int(size_gib * 2**30 / (KEY_SIZE + VALUE_SIZE))
        flags = {**COMMON, "db": str(db), "benchmarks": "fillseq,compact", "num": num,
                 "use_existing_db": 0, "block_align": str(block_align).lower(),
                 "disable_wal": "true", "write_buffer_size": 256 << 20}
        flags.pop("histogram")
        references.run_db_bench(active_build() / "bin" / "db_bench", flags)
        ssts = list(db.glob("*.sst"))
        size = sum(f.stat().st_size for f in ssts)
        self.log(f"  loaded in {time.time() - t:.0f} s: {len(ssts)} SST file(s), {size / 2**30:.2f} GiB")
        marker.write_text(want)

    def loaded(self, db: Path) -> int:
        """The key count of the benchmark DB at `db` as it is, whatever its size (the aligned
        DB is loaded at this Bench's size if there is none)."""
        marker = db / "rxlab-loaded"
        if not marker.is_file():
            self.load(db, True, self.size_gib)
        text = marker.read_text().strip()
        self.log(f"reading {db} ({text})")
        return int(text.split()[0].split("=")[1])

    def record(self, section: str, config: str, rep: int, row: dict, threads: int = 1) -> None:
        ops = row.get("ops") or 0
        rec = {"section": section, "config": config, "threads": threads, "rep": rep,
               "cpus_allowed": self.cpus_allowed or "",
               "buffer_offsets": self.placements.get((config, threads), ""),
               "qps": row.get("qps"), "ops": ops,
               "usPer": 1e6 * row.get("cpu_user_s", float("nan")) / ops if ops else float("nan"),
               "syPer": 1e6 * row.get("cpu_sys_s", float("nan")) / ops if ops else float("nan"),
               "p50_us": row.get("p50_us"), "p99_us": row.get("p99_us"),
               "iops": (row.get("disk_reads") or 0) / row["wall_s"] if row.get("wall_s") else float("nan")}
        rec["cpuPer"] = rec["usPer"] + rec["syPer"]
        rec["sleepsPer"] = float(metrics.seed_columns([row])["sleepsPer"].iloc[0])
        self.rows.append(rec)
        self.log(f"  {section:14} {config:26} t={threads} rep {rep}: {rec['qps']:>9.0f} ops/s, "
                 f"cpu {rec['cpuPer']:6.1f} us/op")

    def main(self) -> pd.DataFrame:
        main_db, seek_db = self.root / "db-aligned", self.root / "db-scan"
        self.load(main_db, True, self.size_gib)
        if "seekrandom" in self.sections:
            self.load(seek_db, False, min(self.size_gib, 1.0))
        def rotated(d: dict, rep: int) -> list:
            # A different order every repetition, so drift on a shared host
            # does not always favour the configuration that runs first.
            items = [(n, v) for n, v in d.items() if config_matches(n, self.configs)]
            if not items:
                return []
            k = rep % len(items)
            return items[k:] + items[:k]

        want = set(self.sections)
        if "readrandom" in want:
            for threads in (1, 2):
                for name, uri in rotated(READ_CONFIGS, 0):
                    if uri is None or uri.startswith("rxlab://posix"):
                        self.placements[(name, threads)] = where = self.placement(main_db, uri, threads)
                        self.log(f"  read buffers' page offsets, {name} t={threads}: {where}")
        for rep in range(self.repeats):
            for threads in (1, 2) if "readrandom" in want else ():
                for name, uri in rotated(READ_CONFIGS, rep):
                    row = self.run(main_db, "readrandom", uri, threads=threads)
                    self.record("readrandom", name, rep, row, threads)
            for name, (uri, extra) in rotated(MULTIREAD_CONFIGS, rep) if "multireadrandom" in want else ():
                row = self.run(main_db, "multireadrandom", uri,
                               {"multiread_batched": "true", "batch_size": 16, **extra})
                self.record("multireadrandom", name, rep, row)
            for name, (uri, extra) in rotated(SEEK_CONFIGS, rep) if "seekrandom" in want else ():
                row = self.run(seek_db, "seekrandom", uri, {"seek_nexts": 1000, **extra})
                self.record("seekrandom", name, rep, row)
            for name, uri in rotated(COUNTER_CONFIGS, rep) if "counters" in want else ():
                self.record("counters", name, rep, self.run(main_db, "readrandom", uri))
        return pd.DataFrame(self.rows)


def read_buffer_offsets(db_bench: Path, args: list[str], *, preload: Path | None = None,
                        cpus: str | None = None, timeout: float = 120) -> Counter:
    """Page offset -> count of the buffers of one db_bench run's 8 KiB preads on O_DIRECT files
    (strace)."""

    trace = Path(tempfile.mkstemp(prefix="rxlab-placement-", suffix=".txt")[1])
    try:
        cmd = ["strace", "-f", "-o", str(trace), "-e", "trace=pread64,openat", "-e", "raw=pread64"]
        if preload:
            cmd += ["-E", f"LD_PRELOAD={preload}"]
        with fio.affinity(fio.parse_cpus(cpus) if cpus else None):
            subprocess.run([*cmd, str(db_bench), *args], capture_output=True, timeout=timeout, check=False)
        direct: set[int] = set()  # descriptors opened with O_DIRECT, in the trace's order
        out: Counter = Counter()
        for line in trace.read_text().splitlines():
            if (m := re.search(r"openat\(.*, (O_[\w|]+).*\) = (\d+)$", line)):
                (direct.add if "O_DIRECT" in m.group(1) else direct.discard)(int(m.group(2)))
            elif ((m := re.search(r"pread64\(0x([0-9a-f]+), 0x([0-9a-f]+), 0x2000,", line))
                  and int(m.group(1), 16) in direct):
                out[int(m.group(2), 16) % 4096] += 1
        return out
    finally:
        trace.unlink(missing_ok=True)


def adjusted_difference(df: pd.DataFrame, a: str, b: str, col: str = "cpuPer", covariate: str = "sleepsPer",
                        *, min_spread: float = 0.02) -> tuple[float, float, float]:
    """`col` of configuration a minus b with `covariate` held equal: least squares over the rows of
    a and b, col = b's level + difference x [config is a] + slope x covariate.

    Why: how often a reader sleeps moves its CPU per op from run to run on these VMs (a read that
    completes before its reader schedules out saves the switch, and the interrupt is charged to
    the reader), whatever the backend. Returns (difference, its standard error, slope); NaNs when
    the rows cannot tell (fewer than 4, or the covariate's standard deviation below `min_spread`:
    with every run at 0.995-0.996 sleeps per op the slope is noise over a near-zero spread).
    """

    if covariate not in df.columns:
        return (float("nan"),) * 3
    d = df[df["config"].isin([a, b])][["config", col, covariate]].dropna()
    nan = (float("nan"),) * 3
    if len(d) < 4 or not d[covariate].std() >= min_spread or d["config"].nunique() < 2:
        return nan
    X = np.column_stack([np.ones(len(d)), (d["config"] == a).to_numpy(float), d[covariate].to_numpy(float)])
    y = d[col].to_numpy(float)
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    dof = len(d) - X.shape[1]
    if dof < 1:
        return nan
    cov = float(resid @ resid) / dof * np.linalg.pinv(X.T @ X)
    return float(beta[1]), float(np.sqrt(cov[1, 1])), float(beta[2])


def sleeps_line(rows: pd.DataFrame, a: str, b: str, base_cpu: float) -> str | None:
    """'sleeps per op ...; at equal sleeps a - b = ...' for rows with a `config` column, or None
    when the rows carry no sleeps per op (adjusted_difference)."""
    diff, se, slope = adjusted_difference(rows, a, b)
    if math.isnan(diff):
        return None
    s = rows.groupby("config")["sleepsPer"].median()
    return (f"      sleeps per op (median): {b} {s[b]:.2f}, {a} {s[a]:.2f}; at equal sleeps {a} - {b} = "
            f"{diff:+.1f} +- {se:.1f} us CPU/op ({100 * diff / base_cpu:+.1f}%; {slope:+.1f} us per sleep)")


def summarize(df: pd.DataFrame, placements: dict | None = None) -> str:
    """Medians with the spread (min..max), and the issue's targets judged on medians."""
    out = []
    g = df.groupby(["section", "config", "threads"], sort=False)
    med = g[["qps", "cpuPer", "usPer", "syPer", "p99_us"]].median()
    lo, hi = g["qps"].min(), g["qps"].max()
    table = med.assign(qps_min=lo, qps_max=hi, n=g.size()).reset_index()
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        out.append(table.round(1).to_string(index=False))

    def m(section, config, threads=1, col="qps"):
        return float(med.loc[(section, config, threads), col])

    def has(section, *configs):
        return all((section, c, 1) in med.index or (section, c, 2) in med.index for c in configs)

    def paired(section, a, b, threads=1, col="qps"):
        # a / b per repetition: both ran within the same rotation, minutes apart at most
        w = df[(df["section"] == section) & (df["threads"] == threads)].pivot_table(
            index="rep", columns="config", values=col, aggfunc="first")
        r = (w[a] / w[b]).dropna()
        lo, hi = median_interval(r)
        return (f"paired median {r.median():.3f} [{lo:.3f}..{hi:.3f}] ({r.min():.3f}..{r.max():.3f}), "
                f"n={len(r)}")

    out.append("\ntargets (medians):")
    for t, px in ((t, px) for t in (1, 2) for px in ("posix", "posix 512-aligned")
                  if {("readrandom", c, t) for c in ("default", px)} <= set(med.index)):
        d, p = m("readrandom", "default", t, "cpuPer"), m("readrandom", px, t, "cpuPer")
        out.append(f"  readrandom t={t}: {px} CPU/op {p:.1f} us vs default {d:.1f} us: "
                   f"{100 * (p / d - 1):+.1f}% (target within 3%) "
                   f"{'MET' if p / d - 1 <= 0.03 else 'MISSED'}{' (cheaper)' if p / d - 1 < -0.03 else ''}")
        out.append(f"      {px} / default CPU/op: {paired('readrandom', px, 'default', t, 'cpuPer')}; "
                   f"QPS: {paired('readrandom', px, 'default', t)}")
        if placements and (px, t) in placements:
            out.append(f"      read buffers' page offsets: {px} {placements[(px, t)]}; "
                       f"default {placements.get(('default', t), 'unknown')}")
        line = sleeps_line(df[(df["section"] == "readrandom") & (df["threads"] == t)], px, "default", d)
        if line:
            out.append(line)
    if has("multireadrandom", "posix", "default (io_uring on)", "io_uring", "libaio"):
        px = m("multireadrandom", "posix")
        dflt = m("multireadrandom", "default (io_uring on)")
        for e in ("io_uring", "libaio"):
            v = m("multireadrandom", e)
            out.append(f"  multireadrandom: {e} {v:.0f} ops/s = {v / px:.2f}x posix (target >= 1.5x) "
                       f"{'MET' if v / px >= 1.5 else 'MISSED'}; {v / dflt:.2f}x default with io_uring "
                       f"(target >= 1.0) {'MET' if v / dflt >= 1.0 else 'MISSED'}")
            ratio = paired("multireadrandom", e, "default (io_uring on)")
            out.append(f"      {e} / default with io_uring: {ratio}")
    for e in (e for e in ("io_uring", "posix", "default")
              if has("seekrandom", f"{e} async_io=true", f"{e} async_io=false")):
        on, off = m("seekrandom", f"{e} async_io=true"), m("seekrandom", f"{e} async_io=false")
        out.append(f"  seekrandom {e}: async_io on {on:.0f} vs off {off:.0f} ops/s: "
                   f"{100 * (on / off - 1):+.1f}%")
    if ("readrandom", "posix", 1) not in med.index:
        return "\n".join(out)

    cost = sorted(rxlab._core.counter_cost_ns() for _ in range(5))[2]
    cpu = m("readrandom", "posix", 1, "cpuPer")
    out.append(f"  counters, measured directly: {cost:.0f} ns per device read = "
               f"{100 * cost / 1000 / cpu:.2f}% of posix readrandom's {cpu:.1f} us CPU per query "
               f"(target 2%) {'MET' if cost / 1000 / cpu <= 0.02 else 'MISSED'}")
    for e in (e for e in ("posix", "io_uring") if has("counters", f"{e} counters=1", f"{e} counters=0")):
        on, off = m("counters", f"{e} counters=1"), m("counters", f"{e} counters=0")
        out.append(f"  counters {e}: on {on:.0f} vs off {off:.0f} ops/s: {100 * (on / off - 1):+.1f}% "
                   f"(target: cost at most 2%) {'MET' if on / off >= 0.98 else 'MISSED'}")
    return "\n".join(out)


def default_root() -> Path:
    return Path(os.environ.get("RXLAB_BENCH_DIR", REPO / "data" / "bench"))
