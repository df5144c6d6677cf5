"""Processes measured in turns: every contender runs at once as a child, all but one stopped.

On these VMs CPU per read drifts from one second to the next (36 to 50 us within a single
readrandom run), more than the differences the benchmarks' targets ask about (3%, "no
higher"). Whole runs alternated one after another pair the contenders only at the scale of a
run, tens of seconds apart. Here they take turns of `slice_s` seconds (SIGCONT, sleep, SIGSTOP),
ABBA order from round to round so a linear drift cancels, and neighbouring slices share the
host's state. Each slice's counters are read while every contender is stopped, so the slice
boundaries are exact: the scheduler's CPU of all threads (schedstat, what getrusage reports),
their voluntary context switches, read syscalls (/proc/PID/io syscr) and the device's completed
reads (/proc/diskstats; only the running contender reads, so these are its reads, whatever
the engine).

What is compared per slice is CPU per device read and device reads per second. For two
readers of the same DB with the same cache and key distribution, reads per query are the same
in expectation, so these ratios are the ratios of CPU per query and of QPS. Contenders should
draw different keys (different seeds): a second reader of the same blocks might find them in a
cache under the virtual disk that the first one warmed.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rxlab.bench import fio
from rxlab.core import sysinfo
from rxlab.core.stats import median_interval


@dataclass(frozen=True)
class Contender:
    """A command that reads for longer than the whole measurement (it is killed at the end).
    `ops_path`: the file its workload keeps its operations done in (the driver's `progress_file`):
    its slices then count operations too, and it has started when they grow, not its device reads
    (a workload on a DB that RocksDB has cached reads no device)."""

    name: str
    cmd: Sequence[str]
    env: Mapping[str, str] | None = None
    ops_path: str | None = None
    # A start line: the command creates `<start_line>.ready` when it is ready to start its workload and
    # waits for `<start_line>.go`, which is created for every contender at once when all are ready. A
    # workload whose state moves as it runs (a fill's DB grows) then starts everywhere at the same moment,
    # not when each process has got through its start-up.
    start_line: str | None = None


def read_progress(path: str | os.PathLike) -> tuple[int, int]:
    """(operations, bytes) a workload has done: the sums of its progress file's pairs of int64 slots (one
    pair per worker thread: its operations and the bytes they moved, as db_bench counts them); (0, 0)
    before the file exists."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return 0, 0
    slots = np.frombuffer(data[: len(data) // 16 * 16], dtype="<i8").reshape(-1, 2)
    return int(slots[:, 0].sum()), int(slots[:, 1].sum())


def read_ops(path: str | os.PathLike) -> int:
    """The operations a workload has done (read_progress's first count)."""
    return read_progress(path)[0]


def _process_clock(pid: int) -> int:
    """The CPU-time clock of process `pid` (clock_getcpuclockid: Linux's
    MAKE_PROCESS_CPUCLOCK(pid, SCHED))."""
    return ((~pid) << 3) | 2


def process_sched(pid: int) -> tuple[float, int]:
    """(seconds on CPU by the scheduler's clock, voluntary context switches) of process `pid`.

    The seconds are the process's CPU-time clock, which keeps the time of threads that ended (a readseq
    reader starts a thread for each pass over the DB); a sum over /proc/PID/task/*/schedstat would drop
    it, and is only the fallback where the clock cannot be read. The switches are those of the live
    threads (/proc/PID/task/*/status): they describe how a reader waits, not what it costs."""
    ns = switches = 0
    for t in Path(f"/proc/{pid}/task").iterdir():
        try:
            ns += int((t / "schedstat").read_text().split()[0])
            m = re.search(r"^voluntary_ctxt_switches:\s+(\d+)", (t / "status").read_text(), re.M)
            switches += int(m.group(1)) if m else 0
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended between the listing and the read
    try:
        return time.clock_gettime(_process_clock(pid)), switches
    except OSError:
        return ns / 1e9, switches


O_DIRECT = 0o40000  # x86's value, as /proc/PID/fdinfo prints the flags (octal)


def _direct_fds(pid: int) -> set[int]:
    out = set()
    for fd in Path(f"/proc/{pid}/fdinfo").iterdir():
        try:
            flags = re.search(r"^flags:\s+([0-7]+)", fd.read_text(), re.M)
        except OSError:
            continue
        if flags and int(flags.group(1), 8) & O_DIRECT:
            out.add(int(fd.name))
    return out


def read_buffer_offsets(pid: int, seconds: float = 0.3, size: int = 8192) -> Counter | None:
    """Page offset -> count of the buffers of `size`-byte reads (pread64, read) on O_DIRECT
    descriptors of a running process, from strace attached for `seconds` (None without strace).
    Where an 8 KiB buffer falls in its pages is up to the process's heap when the alignment
    asked of it is the device's 512 bytes; off a page boundary it spans three pages, not two."""
    if not shutil.which("strace"):
        return None
    direct = _direct_fds(pid)
    with tempfile.NamedTemporaryFile(prefix="rxlab-offsets-", suffix=".txt") as trace:
        st = subprocess.Popen(["strace", "-f", "-p", str(pid), "-o", trace.name, "-e", "trace=pread64,read",
                               "-e", "raw=pread64,read"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(seconds)
        st.send_signal(signal.SIGINT)  # strace detaches and leaves the process running
        st.wait(timeout=30)
        out: Counter = Counter()
        pat = re.compile(rf"(?:pread64|read)\(0x([0-9a-f]+), 0x([0-9a-f]+), {size:#x}[,)]")
        for line in Path(trace.name).read_text().splitlines():
            m = pat.search(line)
            if m and int(m.group(1), 16) in direct:
                out[int(m.group(2), 16) % 4096] += 1
        return out


def _offsets(pid: int) -> Counter | None:
    # Attaching to every thread of a process with many (a Python process with RocksDB's pool)
    # can take most of a short window: seen as no read traced in 4 of 6 sessions at 0.3 s.
    for seconds in (0.3, 1.0, 2.0):
        c = read_buffer_offsets(pid, seconds)
        if c is None or c:
            return c
    return c


def offsets_text(c: Counter | None) -> str:
    """'0 (100%)' or '1024 (97%), 0 (3%)'; '' when unknown."""
    if not c:
        return ""
    n = sum(c.values())
    return ", ".join(f"{off} ({100 * k / n:.0f}%)" for off, k in c.most_common(3) if k >= 0.01 * n)


def _read_bytes(pid: int) -> int:
    return int((sysinfo.proc_pid_io(pid) or {}).get("read_bytes", 0))


def _read_syscalls(pid: int) -> int:
    io = sysinfo.proc_pid_io(pid) or {}
    return int(io.get("syscr", 0))


def _order(names: list[str], rnd: int) -> list[str]:
    """ABBA for two (AB BA AB BA...); for more, rotate every two rounds and reverse every other
    round, so every contender takes every position equally often."""
    k = rnd // 2 % len(names) if len(names) > 2 else 0
    rot = names[k:] + names[:k]
    return rot if rnd % 2 == 0 else rot[::-1]


class _Children:
    """The contenders' processes; whatever happens, all are killed and reaped on exit."""

    def __init__(self, contenders: Sequence[Contender], cpus: set[int] | None):
        self.ops_paths = {c.name: c.ops_path for c in contenders if c.ops_path}
        self.start_lines = {c.name: c.start_line for c in contenders if c.start_line}
        self.procs: dict[str, subprocess.Popen] = {}
        self.errs: dict[str, object] = {}
        self.exited: dict[str, int] = {}
        try:
            for c in contenders:
                err = tempfile.TemporaryFile()  # noqa: SIM115 (read when the child fails, closed in close())
                self.errs[c.name] = err
                with fio.affinity(cpus):
                    self.procs[c.name] = subprocess.Popen(
                        list(c.cmd), stdout=subprocess.DEVNULL, stderr=err,
                        env={**os.environ, **(c.env or {})})
        except BaseException:
            self.close()
            raise

    def _failed(self, name: str, status: int) -> RuntimeError:
        err = self.errs[name]
        err.seek(0)
        tail = err.read().decode(errors="replace").strip()[-400:]
        code = os.waitstatus_to_exitcode(status)
        return RuntimeError(f"{name} ended during the measurement (exit {code}): {tail or 'no output'}")

    def stop(self, name: str) -> None:
        """SIGSTOP, then wait until every thread has stopped (the group stop is reported to the
        parent only then; a thread inside a read stops when the read returns)."""
        p = self.procs[name]
        os.kill(p.pid, signal.SIGSTOP)
        _, status = os.waitpid(p.pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            self.exited[name] = status
            raise self._failed(name, status)

    def cont(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGCONT)

    def wait_reading(self, timeout: float = 180.0, step: float = 0.25, min_bytes: int = 64 << 10,
                     steps: int = 3) -> None:
        """Until every process reads from storage: /proc/PID/io read_bytes (which page-cache hits,
        such as a Python process's imports, do not move) grows by `min_bytes` in each of `steps`
        consecutive steps; for a contender with an `ops_path`, until its operations grow in each
        (loading its DB is not its workload). Start-up (an interpreter's imports, opening the DB)
        differs between contenders and must not fall into a slice."""
        deadline = time.monotonic() + timeout
        self._start_together(deadline, timeout)
        streak = dict.fromkeys(self.procs, 0)
        last = dict.fromkeys(self.procs, -1)
        while any(n < steps for n in streak.values()):
            self.check_alive()
            for name, p in self.procs.items():
                if name in self.ops_paths:
                    now, least = read_ops(self.ops_paths[name]), 1
                else:
                    now, least = int((sysinfo.proc_pid_io(p.pid) or {}).get("read_bytes", 0)), min_bytes
                grew = last[name] >= 0 and now - last[name] >= least
                streak[name] = streak[name] + 1 if grew else 0 if streak[name] < steps else streak[name]
                last[name] = now
            waiting = sorted(n for n, k in streak.items() if k < steps)
            if waiting and time.monotonic() > deadline:
                raise RuntimeError(f"{', '.join(waiting)} did not start reading within {timeout:g} s")
            if waiting:
                time.sleep(step)

    def _start_together(self, deadline: float, timeout: float) -> None:
        """Release the contenders with a start line all at once, when every one of them is ready."""
        if not self.start_lines:
            return
        while True:
            self.check_alive()
            waiting = sorted(n for n, s in self.start_lines.items() if not os.path.exists(s + ".ready"))
            if not waiting:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{', '.join(waiting)} did not get ready to start within {timeout:g} s")
            time.sleep(0.01)
        for s in self.start_lines.values():
            Path(s + ".go").touch()

    def check_alive(self) -> None:
        for name, p in self.procs.items():
            pid, status = os.waitpid(p.pid, os.WNOHANG)
            if pid:
                self.exited[name] = status
                raise self._failed(name, status)

    def close(self) -> None:
        for name, p in self.procs.items():
            if name in self.exited:
                p.returncode = os.waitstatus_to_exitcode(self.exited[name])  # reaped by us
                continue
            with contextlib.suppress(ProcessLookupError):
                os.kill(p.pid, signal.SIGKILL)
            p.wait()
        for err in self.errs.values():
            err.close()


def measure(contenders: Callable[[int], Sequence[Contender]] | Sequence[Contender], *, sessions: int = 6,
            rounds: int = 8, slice_s: float = 1.0, warmup_s: float = 4.0, disk: str | None = None,
            cpus: set[int] | None = None, progress: bool = True, placement: bool = False,
            on_session: Callable[[pd.DataFrame], None] | None = None) -> pd.DataFrame:
    """One row per slice: session, contender, pid, round, position in the round, wall_s, cpu_s,
    sleeps, read_syscalls, dev_reads, dev_read_bytes, dev_read_ms, and per read: cpu_per_read_us, reads_per_s,
    sleeps_per_read. `reads` is the device's count when `disk` is given, else read syscalls. Where
    the contenders have an `ops_path`: also ops, ops_per_s and cpu_per_op_us (their workload's own
    count, which is what a DB cached by RocksDB is measured by).

    A session starts fresh processes (`contenders(session)` when it is a callable, so each
    session can draw other keys), waits until all of them read from storage, lets them run
    `warmup_s` more (filling their caches), then gives them `rounds` turns each. Fresh processes
    every session, because one process of a binary is not another: two db_bench processes,
    identical but for their seeds, measured in turns, differed by 6% in reads per second
    over 16 rounds (the cause is not measured; each process's memory layout, such as where its
    read buffers fall in their pages, is a candidate). So the session, not the slice, is the unit
    that repeats. `on_session` gets the rows so far after every session (to save them); an
    interrupted measurement (Ctrl-C) returns the complete sessions it has. `placement`: each
    process's 8 KiB O_DIRECT read buffers' page offsets (`read_buffer_offsets`, during the
    warm-up) go into `buffer_offsets`."""

    make = contenders if callable(contenders) else (lambda _s: contenders)
    first = list(make(0))
    names = [c.name for c in first]
    if len(names) < 2 or len(set(names)) != len(names):
        raise ValueError(f"contenders {names}: need at least two, with distinct names")
    if sessions < 1 or rounds < 1 or slice_s <= 0 or warmup_s < 0:
        raise ValueError(f"sessions={sessions} rounds={rounds} slice_s={slice_s} warmup_s={warmup_s}: "
                         "need sessions >= 1, rounds >= 1, slice_s > 0 and warmup_s >= 0")
    rows: list[dict] = []
    bar = tqdm(total=sessions * rounds, desc="interleaved rounds", unit="round", disable=not progress,
               file=sys.stderr)
    try:
        for session in range(sessions):
            group = first if session == 0 else list(make(session))
            k = session % len(group)  # who starts first moves too
            session_rows = _session(group[k:] + group[:k], names, session=session, rounds=rounds,
                                    slice_s=slice_s, warmup_s=warmup_s, disk=disk, cpus=cpus, bar=bar,
                                    placement=placement)
            rows.extend(session_rows)
            if on_session is not None:
                on_session(_derive(pd.DataFrame(rows)))
    except KeyboardInterrupt:
        print(f"interrupted: keeping {len({r['session'] for r in rows})} complete sessions", file=sys.stderr)
    finally:
        bar.close()
    return _derive(pd.DataFrame(rows))


def _session(group, names, *, session, rounds, slice_s, warmup_s, disk, cpus, bar, placement) -> list[dict]:
    rows: list[dict] = []
    kids = _Children(group, cpus)
    try:
        kids.wait_reading()
        # during the warm-up, while all run: strace slows the one it watches
        where = {n: offsets_text(_offsets(kids.procs[n].pid)) for n in names} if placement else {}
        time.sleep(warmup_s)
        kids.check_alive()
        for n in names:
            kids.stop(n)
        for rnd in range(rounds):
            for pos, name in enumerate(_order(names, rnd + session)):
                pid = kids.procs[name].pid
                ops_path = kids.ops_paths.get(name)
                c0, s0 = process_sched(pid)
                r0, b0 = _read_syscalls(pid), _read_bytes(pid)
                o0 = read_progress(ops_path) if ops_path else None
                d0 = sysinfo.diskstats(disk) if disk else None
                t0 = time.monotonic()
                kids.cont(name)
                time.sleep(slice_s)
                kids.stop(name)
                t1 = time.monotonic()
                d1 = sysinfo.diskstats(disk) if disk else None
                c1, s1 = process_sched(pid)
                r1, b1 = _read_syscalls(pid), _read_bytes(pid)
                row = {"session": session, "contender": name, "pid": pid, "round": rnd, "position": pos,
                       "wall_s": t1 - t0, "cpu_s": c1 - c0, "sleeps": s1 - s0, "read_syscalls": r1 - r0}
                if o0 is not None:
                    o1 = read_progress(ops_path)
                    row["ops"], row["op_bytes"] = o1[0] - o0[0], o1[1] - o0[1]
                if placement:
                    row["buffer_offsets"] = where[name]
                if d0 is not None:
                    row["dev_reads"] = d1["reads"] - d0["reads"]
                    row["dev_read_bytes"] = 512 * (d1["read_sectors"] - d0["read_sectors"])
                    # the device's time on them (the block layer's, queueing included: a read's
                    # await), so that a reader's time per read splits into the block layer's part and
                    # the rest; the kernel prints it as an unsigned int of ms
                    row["dev_read_ms"] = (d1["read_ticks_ms"] - d0["read_ticks_ms"]) % 2**32
                    # Anything else on the device during the turn (another process's reads, the
                    # writeback of a job that just ended) makes the turn's device slower for
                    # reasons that are not the contender's.
                    row["other_read_bytes"] = max(0, row["dev_read_bytes"] - (b1 - b0))
                    row["dev_writes"] = d1["writes"] - d0["writes"]
                rows.append(row)
            bar.update()
    finally:
        kids.close()
    return rows


def _derive(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        return df
    reads = df["dev_reads"] if "dev_reads" in df else df["read_syscalls"]
    per = reads.where(reads > 0)
    df["reads"] = reads
    df["cpu_per_read_us"] = 1e6 * df["cpu_s"] / per
    df["reads_per_s"] = reads / df["wall_s"]
    df["sleeps_per_read"] = df["sleeps"] / per
    if "ops" in df:
        ops = df["ops"].where(df["ops"] > 0)
        df["ops_per_s"] = df["ops"] / df["wall_s"]
        df["cpu_per_op_us"] = 1e6 * df["cpu_s"] / ops
    return df


def disturbed(df: pd.DataFrame, *, writes: int = 8, other: float = 0.01) -> pd.Series:
    """Turns during which the device did more than the running contender's reads: over `writes`
    writes, or reads by others over `other` of the turn's read bytes (rows without these
    counters count as quiet)."""
    w = df["dev_writes"] if "dev_writes" in df else pd.Series(0, index=df.index)
    o = df["other_read_bytes"] if "other_read_bytes" in df else pd.Series(0, index=df.index)
    total = df["dev_read_bytes"] if "dev_read_bytes" in df else pd.Series(1, index=df.index)
    return (w.fillna(0) > writes) | (o.fillna(0) > other * total.fillna(0).clip(lower=1))


def quiet_sessions(df: pd.DataFrame) -> pd.DataFrame:
    """The rows of the sessions in which no turn was disturbed (`disturbed`)."""
    bad = df.loc[disturbed(df), "session"].unique()
    return df[~df["session"].isin(bad)]


def session_ratios(df: pd.DataFrame, a: str, b: str) -> pd.DataFrame:
    """Per session, b / a of the pooled CPU per read (all CPU over all reads) and of the pooled
    reads per second; the slices of a session alternate, so host drift mostly cancels inside it."""
    g = df.groupby(["session", "contender"])[["cpu_s", "reads", "wall_s"]].sum()
    cpu = (g["cpu_s"] / g["reads"]).unstack("contender")
    rate = (g["reads"] / g["wall_s"]).unstack("contender")
    if a not in cpu or b not in cpu:  # no session with both (none at all, e.g. none quiet)
        return pd.DataFrame({"cpu": [], "rate": []}, dtype=float)
    return pd.DataFrame({"cpu": cpu[b] / cpu[a], "rate": rate[b] / rate[a]}).dropna()


def summarize(df: pd.DataFrame, baseline: str, title: str = "") -> str:
    """Each contender against `baseline`: medians per slice, then the median over sessions of the
    session's pooled ratio with a 95% bootstrap interval of that median, and the ratio pooled
    over everything. A contender that is the baseline's binary again (a control) shows what
    "equal" looks like in the same run."""

    def iv(x: pd.Series) -> str:
        lo, hi = median_interval(x)
        return f"{x.median():.3f} [{lo:.3f}..{hi:.3f}]"

    out = [title] if title else []
    busy = disturbed(df)
    if busy.any():
        sessions = sorted(df.loc[busy, "session"].unique())
        out.append(f"  other IO on the device in {int(busy.sum())} of {len(df)} turns (sessions "
                   f"{', '.join(map(str, sessions))}): compare with `quiet_sessions`")
    pooled = df.groupby("contender")[["cpu_s", "reads", "wall_s", "sleeps"]].sum()
    for name, g in df.groupby("contender", sort=False):
        p = pooled.loc[name]
        out.append(f"  {name:30} {g['cpu_per_read_us'].median():6.2f} us CPU per read "
                   f"({g['cpu_per_read_us'].min():.1f}..{g['cpu_per_read_us'].max():.1f}), "
                   f"{g['reads_per_s'].median():8.0f} reads/s, {p.sleeps / p.reads:.2f} sleeps per read, "
                   f"{len(g)} slices")
    if "buffer_offsets" in df and df["buffer_offsets"].fillna("").astype(str).str.len().gt(0).any():
        for name, g in df.groupby("contender", sort=False):
            by_session = g.groupby("session")["buffer_offsets"].first().fillna("").astype(str)
            out.append(f"  {name:30} 8 KiB read buffers' page offsets by session: "
                       f"{'; '.join(v.split(' (')[0] if v else '?' for v in by_session)}")
    for name in df["contender"].unique():
        if name == baseline:
            continue
        r = session_ratios(df, baseline, name)
        pa, pb = pooled.loc[baseline], pooled.loc[name]
        out.append(f"  {name} / {baseline}: CPU per read {iv(r['cpu'])}, all pooled "
                   f"{(pb.cpu_s / pb.reads) / (pa.cpu_s / pa.reads):.3f}; reads/s {iv(r['rate'])}, "
                   f"all pooled {(pb.reads / pb.wall_s) / (pa.reads / pa.wall_s):.3f}; "
                   f"n={len(r)} sessions")
        if busy.any():
            q = session_ratios(quiet_sessions(df), baseline, name)
            if len(q) >= 2:
                out.append(f"    quiet sessions only: CPU per read {iv(q['cpu'])}; reads/s {iv(q['rate'])}; "
                           f"n={len(q)}")
    return "\n".join(out)


def pooled(paths: Sequence[str | os.PathLike]) -> pd.DataFrame:
    """The rows of several saved measurements (CSV) as one: each file's sessions get their own
    numbers (file index x 1000 + session) and a `source` column, so sessions measured at other
    times add to the same ratios. A file that is missing or has no slices is one clear line."""
    frames = []
    for i, path in enumerate(paths):
        try:
            df = pd.read_csv(path)
        except (OSError, pd.errors.EmptyDataError) as e:
            raise ValueError(f"{path}: cannot read saved slices ({e.__class__.__name__})") from None
        need = {"session", "contender", "cpu_s", "reads", "wall_s"}
        if not need <= set(df.columns):
            raise ValueError(f"{path}: not the slices of a measurement in turns "
                             f"(needs {', '.join(sorted(need))})")
        frames.append(df.assign(session=df["session"] + 1000 * i, source=str(path)))
    if not frames:
        raise ValueError("no saved slices given")
    return pd.concat(frames, ignore_index=True)


def stamped(path: Path) -> Path:
    """`path` with the UTC time before its suffix: every measurement keeps its own file."""
    return path.with_name(f"{path.stem}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}{path.suffix}")
