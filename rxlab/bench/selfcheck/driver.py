"""The driver benchmark: rxlab's in-process driver against the release db_bench.

On the backends benchmark's DB (>= 2 GiB, loaded and compacted by db_bench,
so this also shows rxlab reading a db_bench DB), readrandom at 1 and 2
threads with the same flags, alternated and repeated; then rxlab fio against
real fio (sync qd1, libaio and io_uring qd32). Medians with the spread.

On a shared VM, process CPU per op drifts by 10-20% between runs seconds
apart, most of it in the kernel's share (the virtio doorbell's VM exit,
iowrite16, is about a quarter of a read's CPU here). `profile` answers the
narrower question of what the driver itself costs: the reader threads' CPU
per op by leaf symbol under perf, rxlab's loop beside db_bench's.
"""
from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

import rxlab
from rxlab.bench import driver, fio, perf, references, turns
from rxlab.bench.selfcheck.backends import (
    COMMON,
    KEY_SIZE,
    VALUE_SIZE,
    Bench,
    median_interval,
    plugin_path,
    readonly_reader,
    sleeps_line,
)
from rxlab.bench.turns import Contender, process_sched
from rxlab.core import engines, metrics, sysinfo
from rxlab.core.builds import active_build


def _db_bench(db: Path, num: int, threads: int, duration: int, fs_uri: str | None = None) -> dict:
    flags = {**COMMON, "db": str(db), "benchmarks": "readrandom", "use_existing_db": 1, "num": num,
             "threads": threads, "duration": duration}
    env = {}
    if fs_uri:
        flags["fs_uri"] = fs_uri
        env["LD_PRELOAD"] = str(plugin_path())
    return references.run_db_bench(active_build() / "bin" / "db_bench", flags, env=env)[-1]


def _rxlab(db: Path, num: int, threads: int, duration: int, *, perf_events: bool = False,
           fs_uri: str | None = None, seed: int = COMMON["seed"], readonly: bool = False) -> dict:
    # Without fs_uri both tools read through RocksDB's own file system (db_bench answers
    # RocksDbIOUringEnable() with true, hence default?io_uring=1 here).
    backend = engines.label(fs_uri) if fs_uri else "default?io_uring=1"
    spec = driver.RunSpec(perf_events=perf_events, db=str(db), backend=backend, num=num, key_size=KEY_SIZE,
                          value_size=VALUE_SIZE, threads=threads, duration=duration, block_size=8192,
                          block_align=True, cache_size=8 << 20, bloom_bits=10, use_existing_db=True,
                          target_file_size_base=COMMON["target_file_size_base"],
                          max_bytes_for_level_base=COMMON["max_bytes_for_level_base"],
                          steps=["readrandom"], statistics=False, name="driver-bench",
                          seed=seed,  # db_bench's --seed: both tools read the same keys
                          readonly=readonly,
                          # as READONLY gives db_bench: not the CompactedDBImpl of max_open_files=-1
                          options="max_open_files=1000" if readonly else "")
    driver.validate(spec)
    sess = driver.Session(spec)
    try:
        return sess.run_step({"name": "readrandom", "label": "readrandom"})
    finally:
        sess.close()


PARTS = ("readrandom", "fio")


def _check_fs_uri(fs_uri: str | None) -> None:
    """A bad engine or option, or a URI that is not rxlab's: one line, before any run."""
    if fs_uri is None:
        return

    if not fs_uri.startswith(engines.SCHEME):
        raise ValueError(f"fs_uri={fs_uri!r}: must be an rxlab:// URI (rxlab engines lists them)")
    rxlab._core.parse_uri(fs_uri)


def main(root: Path, duration: int = 10, repeats: int = 3, fio_runtime: int = 10, quiet: bool = False, *,
         parts: tuple[str, ...] = PARTS, cpus_allowed: str | None = None, fs_uri: str | None = None):
    """Run the benchmark's `parts` (readrandom: rxlab vs db_bench; fio: rxlab fio vs fio).

    cpus_allowed (fio's CPU list): both tools' readrandom runs on these CPUs, the same placement
    for both (unpinned, where the scheduler puts two readers moves QPS and CPU per op by 10-20%
    between runs on these VMs, whichever tool runs them).

    fs_uri: both tools read through this rxlab file system (db_bench through the plugin), e.g.
    rxlab://posix: RocksDB's own file system aligns O_DIRECT buffers to the logical block size
    (512 here), so whether a tool's 8 KiB reads touch 2 pages or 3 depends on where malloc put
    its buffer, which differs between the two processes; rxlab's buffer_align=4096 puts every
    read of a block-aligned SST on a page in both (its default, auto, asks 512 as RocksDB does).
    """
    bad = [p for p in parts if p not in PARTS]
    if bad or not parts:
        raise ValueError(f"parts {', '.join(bad) or '(none)'}: allowed are {', '.join(PARTS)}")
    _check_fs_uri(fs_uri)
    cpus = fio.parse_cpus(cpus_allowed) if cpus_allowed else None
    b = Bench(root, duration=duration, repeats=repeats, quiet=quiet)
    db = root / "db-aligned"
    b.load(db, True, b.size_gib)
    rows = []

    def log(m):
        if not quiet:
            print(m, file=sys.stderr, flush=True)

    # The order within a group rotates every repetition: on a shared host the
    # second of two back-to-back runs is not the same as the first.
    def flip(group, rep):
        k = rep % len(group)
        return group[k:] + group[:k]

    # rxlab runs like-for-like with db_bench (which counts no perf events), and
    # once more with its perf_event counters on, as studies run it: the
    # difference is what those counters cost (work at every context switch).
    tools = (("db_bench", lambda *a: _db_bench(*a, fs_uri=fs_uri)),
             ("rxlab", lambda *a: _rxlab(*a, fs_uri=fs_uri)),
             (RXLAB_PERF, lambda *a: _rxlab(*a, perf_events=True, fs_uri=fs_uri)))

    for rep in range(repeats if "readrandom" in parts else 0):
        for threads in (1, 2):
            for tool, fn in flip(tools, rep):
                with fio.affinity(cpus):  # the driver's threads and db_bench inherit it
                    r = fn(db, b.num, threads, duration)
                sc = metrics.seed_columns([r]).iloc[0]
                rows.append({"section": "readrandom", "tool": tool, "threads": threads, "rep": rep,
                             "cpus_allowed": cpus_allowed or "", "fs_uri": fs_uri or "",
                             "qps": sc["qps"], "usPer": sc["usPer"], "syPer": sc["syPer"],
                             "cpuPer": sc["cpuPer"], "iops": sc["iops"], "found": r.get("found"),
                             "sleepsPer": sc["sleepsPer"],
                             "ops": r["ops"]})
                log(f"  readrandom t={threads} {tool:8} rep {rep}: {sc['qps']:8.0f} qps, "
                    f"{sc['cpuPer']:5.1f} us CPU/op, found {r.get('found')}/{r['ops']}")
    fio_file = root / "fio-2g.dat"
    for rep in range(repeats if "fio" in parts else 0):
        for eng, qd in (("sync", 1), ("libaio", 32), ("io_uring", 32)):
            results = {}
            for tool in flip(("rxlab fio", "fio"), rep):
                if tool == "rxlab fio":
                    results[tool] = fio.run(fio_file, bs="8k", size="2g", ioengine=eng, iodepth=qd,
                                              runtime=fio_runtime, ramp_time=1)[-1]
                else:
                    real = references.run_fio(fio_file, bs="8k", size="2g", ioengine=eng, iodepth=qd,
                                        runtime=fio_runtime, ramp_time=1)
                    results[tool] = next((r for r in real if r.get("job") == "total"), real[-1])
            for tool, r in results.items():
                iops = r["ops"] / r["wall_s"]
                cpu = 1e6 * (r["cpu_user_s"] + r["cpu_sys_s"]) / r["ops"]
                rows.append({"section": f"fio {eng} qd{qd}", "tool": tool, "threads": 1, "rep": rep,
                             "qps": iops, "cpuPer": cpu, "lat_mean_us": r.get("lat_mean_us")})
                log(f"  fio {eng:8} qd{qd:<2} {tool:9} rep {rep}: {iops:8.0f} IOPS, {cpu:5.1f} us CPU/IO, "
                    f"lat {r.get('lat_mean_us', float('nan')):6.1f} us")
    return pd.DataFrame(rows)


RXLAB_PERF = "rxlab+perf"


def paired_ratios(df: pd.DataFrame, section: str, threads: int, a: str, b: str, col: str = "qps") -> pd.Series:
    """a / b of `col` per repetition: the two tools' runs were back to back in each."""
    s = df[(df["section"] == section) & (df["threads"] == threads)]
    w = s.pivot_table(index="rep", columns="tool", values=col, aggfunc="first")
    return (w[a] / w[b]).dropna()


def _interval(r: pd.Series) -> str:
    lo, hi = median_interval(r)
    return f"paired median {r.median():.3f} [{lo:.3f}..{hi:.3f}], n={len(r)}"


def summarize(df: pd.DataFrame) -> str:
    g = df.groupby(["section", "threads", "tool"], sort=False)
    med = g[["qps", "cpuPer"]].median()
    table = med.assign(qps_min=g["qps"].min(), qps_max=g["qps"].max(), n=g.size()).reset_index()
    out = [table.round(1).to_string(index=False), "",
           "targets (medians; paired: median of per-repetition ratios [95% bootstrap interval]):"]
    for t in (1, 2):
        if ("readrandom", t, "rxlab") not in med.index:
            continue
        r, d = med.loc[("readrandom", t, "rxlab")], med.loc[("readrandom", t, "db_bench")]
        out.append(f"  readrandom t={t}: rxlab/db_bench QPS {r.qps / d.qps:.3f} (target >= 1.00) "
                   f"{'MET' if r.qps >= d.qps else 'MISSED'}; CPU/op {r.cpuPer:.1f} vs {d.cpuPer:.1f} us "
                   f"{'MET' if r.cpuPer <= d.cpuPer else 'MISSED'}")
        out.append(f"      QPS {_interval(paired_ratios(df, 'readrandom', t, 'rxlab', 'db_bench'))}; "
                   f"CPU/op {_interval(paired_ratios(df, 'readrandom', t, 'rxlab', 'db_bench', 'cpuPer'))}")
        rr = df[(df["section"] == "readrandom") & (df["threads"] == t)].rename(columns={"tool": "config"})
        line = sleeps_line(rr, "rxlab", "db_bench", d.cpuPer)
        if line:
            out.append(line)
        if (df["tool"] == RXLAB_PERF).any():
            on = df[(df["section"] == "readrandom") & (df["threads"] == t)]
            w = on.pivot_table(index="rep", columns="tool", values="cpuPer", aggfunc="first")
            extra = (w[RXLAB_PERF] - w["rxlab"]).dropna()
            out.append(f"      perf_event counters on (as studies run): CPU/op "
                       f"{_interval(paired_ratios(df, 'readrandom', t, RXLAB_PERF, 'rxlab', 'cpuPer'))}, "
                       f"{extra.median():+.1f} us/op; QPS "
                       f"{_interval(paired_ratios(df, 'readrandom', t, RXLAB_PERF, 'rxlab'))}")
    for sec in [s for s in med.index.get_level_values(0).unique() if s.startswith("fio")]:
        o, f = med.loc[(sec, 1, "rxlab fio")], med.loc[(sec, 1, "fio")]
        out.append(f"  {sec}: rxlab fio {o.qps:.0f} vs fio {f.qps:.0f} IOPS: {100 * (o.qps / f.qps - 1):+.1f}% "
                   f"(target within 5%) {'MET' if abs(o.qps / f.qps - 1) <= 0.05 else 'MISSED'}; "
                   f"CPU/IO {o.cpuPer:.1f} vs {f.cpuPer:.1f} us")
        out.append(f"      IOPS {_interval(paired_ratios(df, sec, 1, 'rxlab fio', 'fio'))}")
    return "\n".join(out)


# ------------------------------------------------------------ where a reader's CPU goes

_RXLAB_STEP = """
import json, sys
from pathlib import Path
from rxlab.bench.selfcheck import driver
r = driver._rxlab(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                       fs_uri=sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None)
print("RXLAB-OPS " + json.dumps({"ops": r["ops"], "wall_s": r["wall_s"]}))
"""


_RXLAB_READER = """
import json, sys
from pathlib import Path
from rxlab.bench.selfcheck import driver
a = json.loads(sys.argv[1])
driver._rxlab(Path(a["db"]), a["num"], a["threads"], a["duration"], fs_uri=a["fs_uri"], seed=a["seed"],
                    readonly=True)
"""


def rxlab_reader(name: str, db: Path, num: int, threads: int, *, seed: int, fs_uri: str | None = None):
    """An turns.Contender: rxlab's driver in its own Python process, readrandom on `db`
    opened read-only, until it is killed (the same read path as backends_bench.readonly_reader)."""


    args = {"db": str(db), "num": num, "threads": threads, "duration": 10**6, "seed": seed, "fs_uri": fs_uri}
    return Contender(name, [sys.executable, "-c", _RXLAB_READER, json.dumps(args)])


def profile(root: Path, threads: int = 1, duration: float = 8, frequency: int = 2999,
            quiet: bool = False) -> pd.DataFrame:
    """readrandom once per tool under `perf record -e cpu-clock` (a software event: it works on
    these VMs), on the benchmark's DB: the reader threads' sampled CPU per operation by leaf
    symbol (us/op), rxlab beside db_bench. Process CPU from getrusage also counts the threads
    around the readers and drifts with the host; this compares the readers' own work."""

    support = perf.perf_support()
    if support.path is None or not support.cpu_clock:
        raise RuntimeError(f"bench-driver --profile needs perf with the cpu-clock event: {support.path or 'perf not installed'}")
    if threads < 1 or duration <= 0:
        raise ValueError(f"threads={threads}, duration={duration}: need threads >= 1 and duration > 0")
    db = Path(root) / "db-aligned"
    if not (db / "rxlab-loaded").is_file():
        raise FileNotFoundError(f"no benchmark DB at {db}: run `rxlab bench-driver` or `rxlab bench-backends` first")
    num = int((db / "rxlab-loaded").read_text().split()[0].split("=")[1])
    flags = {**COMMON, "db": str(db), "benchmarks": "readrandom", "use_existing_db": 1, "num": num,
             "threads": threads, "duration": int(duration)}
    commands = {
        "rxlab": [sys.executable, "-c", _RXLAB_STEP, str(db), str(num), str(threads), str(duration)],
        "db_bench": [str(active_build() / "bin" / "db_bench"), *references.flag_list(flags)],
    }
    cols = {}
    with tempfile.TemporaryDirectory(prefix="rxlab-profile-") as tmp:
        for tool, cmd in commands.items():
            data = Path(tmp) / f"{tool}.data"
            p = perf.perf_record(cmd, data, frequency=frequency, timeout=duration * 10 + 120, what=tool)
            if tool == "rxlab":

                line = next(ln for ln in p.stdout.splitlines() if ln.startswith("RXLAB-OPS "))
                ops = json.loads(line.split(" ", 1)[1])["ops"]
            else:
                ops = references.parse_db_bench(p.stdout)[-1]["ops"]
            leaf, n = perf.reader_leaf_ns(data, threads)
            if n < threads:
                raise RuntimeError(f"{tool}: found {n} reader thread(s) in the samples, expected {threads}")
            cols[tool] = pd.Series(leaf, dtype=float) / 1e3 / ops
            if not quiet:
                print(f"  profiled {tool}: {ops} ops, reader CPU {cols[tool].sum():.1f} us/op sampled",
                      file=sys.stderr, flush=True)
    df = pd.DataFrame(cols).fillna(0.0)
    df["diff"] = df["rxlab"] - df["db_bench"]
    df.index.name = "symbol"
    return df.sort_values("diff")


# Leaf symbols of the drivers' own loops (not RocksDB's read path, not the kernel): rxlab's
# module (its symbols are not exported, so perf names the file), db_bench's benchmark loop,
# its stats and histograms, its key generator's random numbers, and the clock reads of both.
HARNESS_LEAF = re.compile(r"_core\.cpython|rxlab::|rocksdb::Benchmark|rocksdb::Stats|rocksdb::Histogram|"
                          r"rocksdb::Random|mersenne_twister|rocksdb::SetPerfLevel|__vdso_(clock_gettime|gettimeofday)")


def summarize_profile(df: pd.DataFrame, n: int = 8) -> str:
    kernel = [s for s in df.index if perf.is_system_frame(s) and not HARNESS_LEAF.search(s)]
    harness = [s for s in df.index if HARNESS_LEAF.search(s)]
    tot = df[["rxlab", "db_bench"]].sum()
    ker = df.loc[kernel, ["rxlab", "db_bench"]].sum()
    own = df.loc[harness, ["rxlab", "db_bench"]].sum()
    out = [f"reader threads' sampled CPU per op: rxlab {tot.rxlab:.2f} us vs db_bench {tot.db_bench:.2f} us "
           f"({tot.rxlab / tot.db_bench:.3f}); kernel+libc {ker.rxlab:.2f} vs {ker.db_bench:.2f} us",
           f"the drivers' own loops (leaf symbols: {len(harness)}): rxlab {own.rxlab:.2f} vs db_bench "
           f"{own.db_bench:.2f} us/op; RocksDB and the rest {tot.rxlab - ker.rxlab - own.rxlab:.2f} vs "
           f"{tot.db_bench - ker.db_bench - own.db_bench:.2f} us/op",
           f"largest differences (us/op, rxlab - db_bench), {n} each way:"]
    shown = pd.concat([df.head(n), df.tail(n)]).drop_duplicates()
    for sym, r in shown.iterrows():
        out.append(f"  {r['diff']:+6.2f}  {r.rxlab:6.2f}  {r.db_bench:6.2f}  {sym[:100]}")
    top = df.sort_values("db_bench", ascending=False).head(3)
    out.append("heaviest leaves in db_bench: " + ", ".join(f"{s} {v:.1f} us" for s, v in top["db_bench"].items()))
    return "\n".join(out)


# ------------------------------------------------------------ both tools by one clock, mid-run

def window(root: Path, threads: tuple[int, ...] = (1, 2), repeats: int = 4, *, duration: float = 9,
           start: float = 3.0, length: float = 3.0, fs_uri: str | None = None,
           cpus_allowed: str | None = None, quiet: bool = False) -> pd.DataFrame:
    """Both tools' readrandom measured by one observer with one clock: each runs as a child
    process for `duration` s and, from `start` s for `length` s (after start-up, before the end),
    the CPU of all its threads (schedstat: the scheduler's clock, what getrusage reports) and their
    voluntary context switches are read from /proc. A blocking read sleeps once (0.995 sleeps
    per op in every run here), so CPU per sleep is CPU per read and sleeps per second the rate.
    This leaves out what the two tools' own accounting windows differ in (start, stop, clocks)."""


    _check_fs_uri(fs_uri)
    if not 0 < start < start + length < duration or repeats < 1:
        raise ValueError(f"window start={start} length={length} duration={duration} repeats={repeats}: "
                         "need 0 < start < start + length < duration and repeats >= 1")
    db = Path(root) / "db-aligned"
    if not (db / "rxlab-loaded").is_file():
        raise FileNotFoundError(f"no benchmark DB at {db}: run `rxlab bench-driver` or "
                                "`rxlab bench-backends` first")
    num = int((db / "rxlab-loaded").read_text().split()[0].split("=")[1])
    cpus = fio.parse_cpus(cpus_allowed) if cpus_allowed else None
    rows = []
    for rep in range(repeats):
        for t in threads:
            flags = {**COMMON, "db": str(db), "benchmarks": "readrandom", "use_existing_db": 1, "num": num,
                     "threads": t, "duration": math.ceil(duration)}
            env = dict(os.environ)
            if fs_uri:
                flags["fs_uri"] = fs_uri
            cmds = {"db_bench": ([str(active_build() / "bin" / "db_bench"), *references.flag_list(flags)],
                                 {**env, "LD_PRELOAD": str(plugin_path())} if fs_uri else env),
                    "rxlab": ([sys.executable, "-c", _RXLAB_STEP, str(db), str(num), str(t),
                               str(math.ceil(duration)), fs_uri or ""], env)}
            order = list(cmds) if rep % 2 == 0 else list(cmds)[::-1]
            for tool in order:
                cmd, cenv = cmds[tool]
                with fio.affinity(cpus):
                    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=cenv)
                try:
                    time.sleep(start)
                    c0, s0 = process_sched(proc.pid)
                    w0 = time.monotonic()
                    time.sleep(length)
                    c1, s1 = process_sched(proc.pid)
                    w1 = time.monotonic()
                finally:
                    _, err = proc.communicate(timeout=duration * 10 + 120)
                if proc.returncode != 0:
                    raise RuntimeError(f"{tool} readrandom failed (exit {proc.returncode}): "
                                       f"{err.decode(errors='replace').strip()[-300:]}")
                sleeps = s1 - s0
                rows.append({"tool": tool, "threads": t, "rep": rep, "fs_uri": fs_uri or "",
                             "cpus_allowed": cpus_allowed or "", "window_s": w1 - w0, "sleeps": sleeps,
                             "cpu_s": c1 - c0, "sleeps_per_s": sleeps / (w1 - w0),
                             "cpu_per_sleep_us": 1e6 * (c1 - c0) / sleeps if sleeps else float("nan")})
                if not quiet:
                    r = rows[-1]
                    print(f"  window t={t} {tool:8} rep {rep}: {r['sleeps_per_s']:8.0f} sleeps/s, "
                          f"{r['cpu_per_sleep_us']:5.1f} us CPU per sleep", file=sys.stderr, flush=True)
    return pd.DataFrame(rows)


def summarize_window(df: pd.DataFrame) -> str:
    out = ["both tools by one clock (schedstat of all threads, mid-run window), medians and paired "
           "rxlab / db_bench per repetition:"]
    for t, g in df.groupby("threads"):
        w = g.pivot_table(index="rep", columns="tool", values=["cpu_per_sleep_us", "sleeps_per_s"],
                          aggfunc="first")
        cpu, rate = w["cpu_per_sleep_us"], w["sleeps_per_s"]
        cpu_ratio = (cpu["rxlab"] / cpu["db_bench"]).dropna()
        out.append(f"  readrandom t={t}: CPU per sleep rxlab {cpu['rxlab'].median():.1f} vs db_bench "
                   f"{cpu['db_bench'].median():.1f} us, {_interval(cpu_ratio)}; "
                   f"rate {_interval((rate['rxlab'] / rate['db_bench']).dropna())}")
    return "\n".join(out)


# ------------------------------------------------------------ both tools in turns, one DB

INTERLEAVE_CONTROL = "db_bench again"


def interleaved(root: Path, *, threads: tuple[int, ...] = (1, 2), sessions: int = 6, rounds: int = 8,
                slice_s: float = 1.0, fs_uri: str | None = None, cpus_allowed: str | None = "1",
                control: bool = True, quiet: bool = False, out: Path | None = None) -> pd.DataFrame:
    """readrandom by db_bench and by rxlab's driver (each in its own process, the benchmark DB
    opened read-only by both), measured in turns (rxlab.bench.turns): CPU per device read and
    reads per second per session, rxlab against db_bench. `control` adds a second db_bench
    process: what "equal" looks like in the same run. Both read through RocksDB's own file
    system (db_bench's io_uring answer, as in `main`), or both through `fs_uri`."""

    _check_fs_uri(fs_uri)
    cpus = fio.parse_cpus(cpus_allowed) if cpus_allowed else None
    b = Bench(Path(root), quiet=quiet)
    db = b.root / "db-aligned"
    num = b.loaded(db)
    disk = sysinfo.device_for_path(db).disk
    frames = []
    for t in threads:
        def make(session: int, t=t) -> list:
            seed = COMMON["seed"] + 1000 * session  # other keys per process and session
            group = [readonly_reader("db_bench", db, num, t, seed=seed, fs_uri=fs_uri),
                     rxlab_reader("rxlab", db, num, t, seed=seed + 100, fs_uri=fs_uri)]
            if control:
                group.append(readonly_reader(INTERLEAVE_CONTROL, db, num, t, seed=seed + 200, fs_uri=fs_uri))
            return group

        def save(df: pd.DataFrame, t=t) -> None:
            if out is not None:
                pd.concat([*frames, df.assign(section="readrandom", threads=t)]).to_csv(out, index=False)

        b.log(f"readrandom t={t}: db_bench, rxlab{' + control' if control else ''} on "
              f"{fs_uri or 'RocksDB file system'}, {sessions} sessions of {rounds} rounds of {slice_s:g} s")
        df = turns.measure(make, sessions=sessions, rounds=rounds, slice_s=slice_s, disk=disk, cpus=cpus,
                                progress=not quiet, on_session=save, placement=True)
        frames.append(df.assign(section="readrandom", threads=t, fs_uri=fs_uri or "",
                                cpus_allowed=cpus_allowed or ""))
        save(frames[-1].iloc[:0])
    return pd.concat(frames, ignore_index=True)


_RXLAB_FIO = """
import json, sys
from rxlab.bench import fio
a = json.loads(sys.argv[1])
fio.run(a["file"], bs=a["bs"], size=a["size"], ioengine=a["engine"], iodepth=a["iodepth"], runtime=10**6,
          ramp_time=0, seed=a["seed"])
"""
FIO_CASES = (("sync", 1), ("libaio", 32), ("io_uring", 32))
FIO_CONTROL = "fio again"


def fio_contenders(file: Path, engine: str, iodepth: int, seed: int, *, control: bool = True,
                   bs: str = "8k", size: str = "2g") -> list:
    """Real fio and rxlab fio, random O_DIRECT reads of `file` until killed, as interleave
    Contenders (fio with --thread: its job must be a thread of the process that is stopped and
    measured, not a child of it)."""


    def real(name: str, s: int):
        cmd = references.fio_command(file, bs=bs, size=size, ioengine=engine, iodepth=iodepth, runtime=10**6,
                               ramp_time=0, extra={"thread": 1, "randseed": s})
        return Contender(name, cmd)

    args = {"file": str(file), "bs": bs, "size": size, "engine": engine, "iodepth": iodepth,
            "seed": seed + 100}
    group = [real("fio", seed), Contender("rxlab fio", [sys.executable, "-c", _RXLAB_FIO, json.dumps(args)])]
    return [*group, real(FIO_CONTROL, seed + 200)] if control else group


def interleaved_fio(root: Path, *, cases: tuple[tuple[str, int], ...] = FIO_CASES, sessions: int = 6,
                    rounds: int = 8, slice_s: float = 1.0, cpus_allowed: str | None = "1",
                    control: bool = True, quiet: bool = False, out: Path | None = None,
                    size: str = "2g") -> pd.DataFrame:
    """rxlab fio against real fio in turns (rxlab.bench.turns) on the benchmark's fio file, per
    engine and queue depth: IOPS and CPU per IO, per session. The rows are saved to `out` after
    every session, beside any readrandom rows already there."""

    for eng, qd in cases:
        fio.engine_uri(eng, "")  # a bad engine: one line, before any run
        if not 1 <= qd <= 4096:
            raise ValueError(f"iodepth={qd}: must be 1..4096")
    cpus = fio.parse_cpus(cpus_allowed) if cpus_allowed else None
    file = Path(root) / "fio-2g.dat"
    Path(root).mkdir(parents=True, exist_ok=True)
    references.layout_file(file, size)
    disk = sysinfo.device_for_path(file).disk
    earlier = pd.read_csv(out) if out is not None and out.is_file() else pd.DataFrame()
    frames: list[pd.DataFrame] = []
    for eng, qd in cases:
        section = f"fio {eng} qd{qd}"

        def make(session: int, eng=eng, qd=qd) -> list:
            return fio_contenders(file, eng, qd, COMMON["seed"] + 1000 * session, control=control, size=size)

        def save(df: pd.DataFrame, section=section) -> None:
            if out is not None:
                pd.concat([earlier, *frames, df.assign(section=section, threads=1)]).to_csv(out, index=False)

        if not quiet:
            print(f"{section}: fio, rxlab fio{' + control' if control else ''}, {sessions} sessions of "
                  f"{rounds} rounds of {slice_s:g} s", file=sys.stderr, flush=True)
        df = turns.measure(make, sessions=sessions, rounds=rounds, slice_s=slice_s, disk=disk, cpus=cpus,
                                progress=not quiet, on_session=save, placement=True)
        frames.append(df.assign(section=section, threads=1, cpus_allowed=cpus_allowed or ""))
        save(frames[-1].iloc[:0])
    return pd.concat(frames, ignore_index=True)


def summarize_interleaved(df: pd.DataFrame, fio_target: float = 0.05) -> str:
    """Per section and thread count, rxlab (and the control) against the reference, and the
    issue's targets: rxlab's QPS at least db_bench's and its CPU per op no higher (per device
    read: the same ratios); rxlab fio's IOPS within `fio_target` of fio's."""

    out = ["in turns (each tool's processes on one read-only DB or one file; ratios are per session, "
           "median [95% bootstrap interval of the median]):"]
    # rows saved before fio ran in turns have no section: they are readrandom's
    df = df.assign(section=df["section"].fillna("readrandom") if "section" in df else "readrandom")
    for (sec, t), g in df.groupby(["section", "threads"], sort=False):
        if sec.startswith("fio"):
            out.append(turns.summarize(g, "fio", f" {sec}"))
            r = turns.session_ratios(g, "fio", "rxlab fio")["rate"]
            lo, hi = median_interval(r)
            ok = abs(r.median() - 1) <= fio_target
            out.append(f"   target rxlab fio IOPS within {fio_target:.0%} of fio: {r.median() - 1:+.1%} "
                       f"{'MET' if ok else 'MISSED'} [{lo:.3f}..{hi:.3f}]")
            continue
        out.append(turns.summarize(g, "db_bench", f" {sec} t={t}"))
        r = turns.session_ratios(g, "db_bench", "rxlab")
        for col, what, ok in (("rate", "QPS at least db_bench's", r["rate"].median() >= 1.0),
                              ("cpu", "CPU per op no higher", r["cpu"].median() <= 1.0)):
            lo, hi = median_interval(r[col])
            out.append(f"   target rxlab {what}: {r[col].median():.3f} {'MET' if ok else 'MISSED'} "
                       f"[{lo:.3f}..{hi:.3f}]")
    return "\n".join(out)
