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

from rxlab import _core
from rxlab.bench import driver, fio, references, turns
from rxlab.bench.perf import perf_record, reader_leaf_ns
from rxlab.bench.references import plugin_path
from rxlab.bench.turns import Contender
from rxlab.core import metrics, sysinfo
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
    # buffer_align=auto (rxlab's default): the block-aligned SSTs' files ask a page of RocksDB, so
    # every 8 KiB read buffer sits on 2 pages.
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


def _config_matches(name: str, words: tuple[str, ...] | None) -> bool:
    # "default" keeps "default", "default (io_uring on)" and "default async_io=true"
    return words is None or any(name == w or name.startswith(w + " ") for w in words)


def select_configs(configs: str | None, sections: tuple[str, ...] = SECTIONS) -> tuple[str, ...] | None:
    """The comma-separated configuration names of `configs` (None: all), each checked against the
    configurations of the chosen sections."""
    if not configs:
        return None
    words = tuple(w.strip() for w in configs.split(",") if w.strip())
    known = [n for sec in sections for n in _section_configs()[sec]]
    bad = [w for w in words if not any(_config_matches(n, (w,)) for n in known)]
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
            items = [(n, v) for n, v in d.items() if _config_matches(n, self.configs)]
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

    cost = sorted(_core.counter_cost_ns() for _ in range(5))[2]
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


# ---------------------------------------------------------------- paired A/B

PAIRS = {
    # (label, step, extra step options, A backend, B backend): A/B compared.
    "readrandom posix vs default": ("readrandom", {}, "posix", "default"),
    "readrandom posix counters on vs off": ("readrandom", {}, "posix", "posix?counters=0"),
    "readrandom io_uring counters on vs off": ("readrandom", {}, "io_uring", "io_uring?counters=0"),
    "multiread io_uring vs default io_uring": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "io_uring", "default?io_uring=1"),
    "multiread libaio vs default io_uring": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "libaio", "default?io_uring=1"),
    "multiread io_uring defer_taskrun vs plain": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "io_uring?defer_taskrun=1",
        "io_uring"),
    "multiread io_uring defer_taskrun vs default io_uring": (
        "multireadrandom", {"batch_size": 16, "multiread_batched": True}, "io_uring?defer_taskrun=1",
        "default?io_uring=1"),
    "readrandom io_uring defer_taskrun vs plain": ("readrandom", {}, "io_uring?defer_taskrun=1", "io_uring"),
}


def select_pairs(only: str | None) -> dict:
    """The PAIRS whose label contains one of the comma-separated words of `only`."""
    if not only:
        return dict(PAIRS)
    words = [w.strip() for w in only.split(",") if w.strip()]
    chosen = {k: v for k, v in PAIRS.items() if any(w in k for w in words)}
    if not chosen:
        raise ValueError(f"bench-paired --only {only!r} matches no pair; pairs are: {', '.join(PAIRS)}")
    return chosen


def paired(root: Path, pairs: dict | None = None, reps: int = 8, duration: float = 4,
           quiet: bool = False) -> pd.DataFrame:
    """Back-to-back A/B pairs in one process, the order flipped every pair.

    On a shared host throughput drifts by 10-20% over minutes; a ratio taken
    from two runs seconds apart cancels most of it, and the median of the
    ratios is robust to the odd disturbed pair.
    """

    db = root / "db-aligned"
    if not (db / "CURRENT").is_file():
        raise FileNotFoundError(f"no benchmark DB at {db}: run `rxlab bench-backends` first")
    num = int((db / "rxlab-loaded").read_text().split()[0].split("=")[1])
    rows = []
    for label, (step, extra, a, b) in (pairs or PAIRS).items():
        for rep in range(reps):
            for backend in ((a, b) if rep % 2 == 0 else (b, a)):
                spec = driver.RunSpec(db=str(db), backend=backend, num=num, key_size=KEY_SIZE,
                                      value_size=VALUE_SIZE, duration=duration, block_size=8192,
                                      block_align=True, cache_size=8 << 20, bloom_bits=10,
                                      use_existing_db=True, statistics=False, steps=[step],
                                      target_file_size_base=COMMON["target_file_size_base"],
                                      max_bytes_for_level_base=COMMON["max_bytes_for_level_base"])
                sess = driver.Session(spec)
                try:
                    r = sess.run_step({"name": step, "label": step, **extra})
                finally:
                    sess.close()
                sc = metrics.seed_columns([r]).iloc[0]
                rows.append({"pair": label, "rep": rep, "backend": backend, "side": "A" if backend == a else "B",
                             "qps": sc["qps"], "cpuPer": sc["cpuPer"]})
                if not quiet:
                    print(f"  {label:40} rep {rep} {backend:22} {sc['qps']:9.0f} ops/s {sc['cpuPer']:6.1f} us CPU/op",
                          file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def merge_paired_csv(path: Path, new: pd.DataFrame) -> pd.DataFrame:
    """Write `new` into the pairs file at `path`: its pairs replace theirs, other pairs are kept
    (a run of some pairs with --only does not erase the others' last measurement)."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > 0:  # a 0-byte file (an interrupted write) holds no pairs
        old = pd.read_csv(path)
        if "pair" in old.columns:
            new = pd.concat([old[~old["pair"].isin(set(new["pair"]))], new], ignore_index=True)
    # written aside and renamed: an interrupted write leaves the previous file whole
    tmp = path.with_name(path.name + ".tmp")
    new.to_csv(tmp, index=False)
    tmp.replace(path)
    return new


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
        names = [baseline, *(n for n in table if n != baseline and _config_matches(n, words))]
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


def summarize_paired(df: pd.DataFrame) -> str:
    out = ["paired A/B: median of per-pair ratios A/B [95% bootstrap interval of the median] (min..max)"]
    for label, g in df.groupby("pair", sort=False):
        w = g.pivot(index="rep", columns="side", values=["qps", "cpuPer"])
        q = w["qps"]["A"] / w["qps"]["B"]
        c = w["cpuPer"]["A"] / w["cpuPer"]["B"]
        qi, ci = median_interval(q), median_interval(c)
        out.append(f"  {label:40} QPS {q.median():.3f} [{qi[0]:.3f}..{qi[1]:.3f}] "
                   f"({q.min():.3f}..{q.max():.3f})  CPU/op {c.median():.3f} [{ci[0]:.3f}..{ci[1]:.3f}] "
                   f"({c.min():.3f}..{c.max():.3f})  n={len(q)}")
    return "\n".join(out)


# --------------------------------------------------------------- what the backend's own code costs

# The CPU per op of db_bench at two threads moves by 10-20% between runs seconds apart on these VMs
# (the disk's interrupts and the doorbell's exits are charged to whichever thread is on the CPU),
# so "posix within 3% of default" cannot be read from totals alone. A profile can: posix and
# default run the same RocksDB and the same pread; the only code that differs is the file system
# layer, and its samples can be counted. Leaf-symbol classes, first match wins:
OWN_CLASSES = (
    ("rxlab backend", r"^(rxlab::|\[librxlab_plugin)"),
    ("clock reads (vDSO)", r"(clock_gettime|vdso).*_\[libc\]$"),
    ("RocksDB posix file", r"^rocksdb::(Posix\w+|\(anonymous namespace\)::Posix\w+)::"),
    ("kernel", r"_\[k\]$"),
    ("libc and system libraries", r"_\[libc\]$"),
    ("RocksDB and db_bench", r""),
)
# What only one side runs: the backends' own code. The vDSO clock reads count for posix because
# rxlab times each system call (db_bench's readrandom without --statistics reads no clock per op;
# the default runs show it). Where the kernel's clocksource is the TSC, the counters read the TSC
# instead and this class is empty.
OWN = {"posix": ("rxlab backend", "clock reads (vDSO)"), "default": ("RocksDB posix file",)}


def classify_leaf(frame: str) -> str:
    """The OWN_CLASSES class of one leaf frame (as rxlab.bench.perf.frame_name spells it)."""
    for name, pattern in OWN_CLASSES:
        if re.search(pattern, frame):
            return name
    return OWN_CLASSES[-1][0]


def _profiled_db_bench(flags: dict, fs_uri: str | None, data: Path, *, frequency: int) -> dict:
    """db_bench under perf (driver_bench.perf_record): its result row plus `samples_ns`, the
    reader threads' sampled CPU ns per OWN_CLASSES class of the leaf frame."""

    cmd = []
    if fs_uri:  # LD_PRELOAD right before db_bench: perf itself must not load the plugin
        cmd += ["env", f"LD_PRELOAD={plugin_path()}"]
        flags = {**flags, "fs_uri": fs_uri}
    cmd += [str(active_build() / "bin" / "db_bench"), *references.flag_list(flags)]
    p = perf_record(cmd, data, frequency=frequency, timeout=float(flags["duration"]) * 10 + 120,
                    what=f"db_bench on {fs_uri or 'default'}")
    rows = references.parse_db_bench(p.stdout)
    if not rows:
        raise RuntimeError(f"db_bench printed no result line: {p.stdout.strip()[-400:]}")
    threads = int(flags["threads"])
    leaf, n = reader_leaf_ns(data, threads)
    if n < threads:
        raise RuntimeError(f"found {n} reader thread(s) in the samples of db_bench, expected {threads}")
    classes = {name: 0 for name, _ in OWN_CLASSES}
    for frame, ns in leaf.items():
        classes[classify_leaf(frame)] += ns
    data.unlink(missing_ok=True)
    return {**rows[-1], "samples_ns": classes}


def own_cost(root: Path, *, threads=(1, 2), reps: int = 3, duration: float = 5, frequency: int = 2999,
             quiet: bool = False, out: Path | None = None) -> pd.DataFrame:
    """posix against default through the release db_bench (readrandom on the benchmark DB), each
    under perf: the reader threads' CPU microseconds per op in each OWN_CLASSES class (by leaf
    frame), one row per run and class.
    The two backends alternate, the order flipped every repetition. `out`: a CSV rewritten after
    every run, so a run that fails (or is interrupted) keeps the ones before it."""

    bad = [t for t in threads if int(t) < 1]
    if bad or reps < 1 or duration <= 0 or frequency < 1:
        raise ValueError(f"own_cost threads={list(threads)} reps={reps} duration={duration} "
                         f"frequency={frequency}: threads >= 1, reps >= 1, duration > 0 and frequency >= 1")
    db = root / "db-aligned"
    if not (db / "CURRENT").is_file():
        raise FileNotFoundError(f"no benchmark DB at {db}: run `rxlab bench-backends` first")
    num = int((db / "rxlab-loaded").read_text().split()[0].split("=")[1])
    rows = []
    with tempfile.TemporaryDirectory(prefix="rxlab-own-") as tmp:
        for rep in range(reps):
            for t in threads:
                for backend in (("default", "posix") if rep % 2 == 0 else ("posix", "default")):
                    flags = {**COMMON, "db": str(db), "benchmarks": "readrandom", "use_existing_db": 1,
                             "threads": int(t), "duration": duration, "num": num}
                    flags.pop("histogram")
                    r = _profiled_db_bench(flags, None if backend == "default" else "rxlab://posix",
                                           Path(tmp) / "perf.data", frequency=frequency)
                    ops = r["ops"]
                    for cls, ns in r["samples_ns"].items():
                        rows.append({"rep": rep, "threads": int(t), "backend": backend, "class": cls,
                                     "us_per_op": ns / 1e3 / ops, "qps": r["qps"], "ops": ops})
                    if out is not None:
                        pd.DataFrame(rows).to_csv(out, index=False)
                    if not quiet:
                        total = sum(r["samples_ns"].values()) / 1e3 / ops
                        own = sum(r["samples_ns"][c] for c in OWN[backend]) / 1e3 / ops
                        print(f"  own cost t={t} rep {rep} {backend:8} {r['qps']:8.0f} ops/s, "
                              f"{total:5.1f} us CPU/op sampled, own code {own:5.2f} us/op",
                              file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def summarize_own_cost(df: pd.DataFrame) -> str:
    """Per thread count: medians per class and backend, then posix's own code minus default's, as
    us per op and as a share of default's sampled CPU per op (the target's 3%)."""
    out = ["CPU us per op by class, db_bench readrandom under perf (medians over repetitions):"]
    for t, g in df.groupby("threads"):
        tab = g.pivot_table(index="class", columns="backend", values="us_per_op", aggfunc="median")
        tab = tab.reindex([c for c, _ in OWN_CLASSES])
        totals = g.groupby(["backend", "rep"])["us_per_op"].sum().groupby("backend").median()
        out.append(f"\n  threads={t}")
        out.append("    " + tab.round(2).to_string().replace("\n", "\n    "))
        own = {b: g[(g["backend"] == b) & g["class"].isin(OWN[b])].groupby("rep")["us_per_op"].sum()
               for b in OWN}
        extra = float(own["posix"].median() - own["default"].median())
        share = extra / float(totals["default"]) * 100.0
        verdict = "MET" if share <= 3.0 else "MISSED"  # what posix adds; less is no miss
        out.append(f"    total sampled CPU/op: posix {totals['posix']:.1f}, "
                   f"default {totals['default']:.1f} us")
        out.append(f"    own code per op: posix {own['posix'].median():.2f} us (rxlab backend + its clock "
                   f"reads), default {own['default'].median():.2f} us (RocksDB's posix file)")
        out.append(f"    posix's extra code: {extra:+.2f} us per op = {share:+.2f}% of default's CPU/op "
                   f"(target within 3%) {verdict}")
    return "\n".join(out)
