"""perf on this machine: what it can sample, recording a process or a step, folded stacks.

These VMs have no PMU: hardware events (cycles, instructions) give ENOENT,
so sampling uses the software event cpu-clock (`perf_support` says what this
machine offers). `Profiler` samples this process around one step through
perf's control FIFO; `perf_record` runs a command under perf; `folded_stacks`
turns a perf.data into folded stacks (root first, ';'-separated, one line per
distinct stack) written here, not by FlameGraph's scripts.
"""
from __future__ import annotations

import contextlib
import errno
import os
import re
import select
import shutil
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd

from rxlab.core.builds import active_build

__all__ = ["KERNEL_TAG", "READER_ROOT", "SYSLIB_TAG", "THREAD_ROOTS", "PerfSupport", "Profiler", "Sample",
           "fold", "folded_stacks", "frame_name", "is_system_frame", "parse_script", "perf_record",
           "perf_script", "perf_support", "read_folded", "reader_leaf_ns", "reader_threads", "split_stack",
           "symbol_report", "write_folded"]

PERF = "perf"
READER_ROOT = "reader"                   # root frame of the folded stacks of the reading threads
# --------------------------------------------------------------------------- perf on this machine

@dataclass(frozen=True)
class PerfSupport:
    """What perf can do here: the binary, cpu-clock sampling, hardware counters, kernel symbols."""

    path: str | None
    version: str
    cpu_clock: bool
    hardware: bool
    hardware_detail: str
    paranoid: int | None
    kptr_restrict: int | None
    root: bool

    @property
    def kernel_sampled(self) -> bool:
        """Kernel stacks are sampled (root, or perf_event_paranoid below 2)."""
        return self.root or (self.paranoid is not None and self.paranoid < 2)

    def table(self) -> pd.DataFrame:
        rows = [("perf", f"{self.path} ({self.version})" if self.path else "not installed"),
                ("cpu-clock (software event)", "works" if self.cpu_clock else "does not work"),
                ("cycles, instructions (hardware)", "available" if self.hardware else
                 f"not available: {self.hardware_detail}"),
                ("kernel.perf_event_paranoid", str(self.paranoid)),
                ("kernel.kptr_restrict", str(self.kptr_restrict)),
                ("kernel stacks sampled", "yes" if self.kernel_sampled else "no (not root, paranoid >= 2)")]
        return pd.DataFrame(rows, columns=["item", "here"]).set_index("item")


def _run(cmd: list, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    """A command's output as text; the caller judges the exit status."""
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout, **kw)


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


def _perf_stat(perf: str, event: str) -> tuple[bool, str]:
    """Count `event` over `true`; (counted, perf's word for it)."""
    try:
        p = _run([perf, "stat", "-x,", "-e", event, "--", "true"], timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    text = (p.stderr or "").strip()
    for line in text.splitlines():
        if event in line:
            value = line.split(",")[0]
            if value.startswith("<"):
                return False, value.strip("<>")
            return p.returncode == 0, "counted"
    return False, text.splitlines()[-1] if text else f"perf stat exited {p.returncode}"


@lru_cache(maxsize=1)
def perf_support() -> PerfSupport:
    """Probe perf once per process (never raises: what does not work is reported)."""
    perf = shutil.which(PERF)
    paranoid = _read_int("/proc/sys/kernel/perf_event_paranoid")
    kptr = _read_int("/proc/sys/kernel/kptr_restrict")
    if perf is None:
        return PerfSupport(None, "", False, False, "perf is not installed", paranoid, kptr, os.geteuid() == 0)
    try:
        version = _run([perf, "--version"], timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        version = "?"
    cpu, _ = _perf_stat(perf, "cpu-clock")
    hw, detail = _perf_stat(perf, "cycles")
    return PerfSupport(perf, version, cpu, hw, detail, paranoid, kptr, os.geteuid() == 0)


def symbol_report(library: str | os.PathLike | None = None) -> pd.DataFrame:
    """What the RocksDB library offers a profiler: symbols, debug info, frame pointers.

    Frame pointers are judged from the code: the share of function entries
    (symbols of type T/t in the symbol table) that start with `push %rbp; mov
    %rsp,%rbp` among those in a sample of 2000.
    """
    lib = Path(library) if library is not None else _rocksdb_library()
    rows = [("library", str(lib))]
    sections = _run(["readelf", "-S", "-W", str(lib)]).stdout
    rows.append(("full symbol table (.symtab)", "yes" if ".symtab" in sections else "no (stripped)"))
    rows.append(("DWARF debug info (.debug_info)", "yes" if ".debug_info" in sections else "no"))
    rows.append(("unwind tables (.eh_frame)", "yes" if ".eh_frame" in sections else "no"))
    dyn = _run(["nm", "-D", "--defined-only", str(lib)]).stdout
    rows.append(("exported symbols (nm -D)", f"{len(dyn.splitlines()):,}"))
    rows.append(("functions with a frame pointer prologue", f"{_frame_pointer_share(lib):.0%}"))
    return pd.DataFrame(rows, columns=["item", "here"]).set_index("item")


def _rocksdb_library() -> Path:

    libs = sorted((active_build() / "lib").glob("librocksdb.so.*"), key=lambda p: len(p.name))
    if not libs:
        raise FileNotFoundError(f"no librocksdb.so.* in {active_build() / 'lib'}")
    return libs[-1]


def _frame_pointer_share(lib: Path, sample: int = 2000) -> float:
    out = _run(["nm", "--defined-only", str(lib)]).stdout
    addrs = sorted({int(parts[0], 16) for parts in (ln.split(" ", 2) for ln in out.splitlines())
                    if len(parts) == 3 and parts[1] in ("T", "t")})
    if not addrs:
        return float("nan")
    # LOAD segments: virtual address -> file offset
    ph = _run(["readelf", "-l", "-W", str(lib)]).stdout
    loads = [(int(m[1], 16), int(m[2], 16), int(m[3], 16))
             for m in re.finditer(r"LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", ph)]
    data = lib.read_bytes()
    pick = addrs[:: max(1, len(addrs) // sample)][:sample]
    prologue, endbr = b"\x55\x48\x89\xe5", b"\xf3\x0f\x1e\xfa"   # push %rbp; mov %rsp,%rbp / endbr64
    hits = n = 0
    for a in pick:
        seg = next(((off, va) for off, va, size in loads if va <= a < va + size), None)
        if seg is None:
            continue
        o = a - seg[1] + seg[0]
        code = data[o:o + 8]
        n += 1
        hits += code[:4] == prologue or (code[:4] == endbr and code[4:8] == prologue)
    return hits / n if n else float("nan")


# --------------------------------------------------------------------------- recording

class Profiler:
    """`perf record -e cpu-clock -g` on a running process, on only while the block runs.

        with Profiler(os.getpid(), workdir) as prof:
            session.run_step(step)
        folded = folded_stacks(prof.data)

    perf starts with its events disabled (`-D -1`) and is switched on and off
    through its control FIFO; each switch waits for perf's acknowledgement, so
    the samples cover the block and nothing before or after. call_graph:
    "dwarf" (copies `dwarf_stack` bytes of each thread's stack: whole stacks
    without frame pointers; perf's default of 8 KiB reaches the thread's start
    in only about 15% of RocksDB's read stacks here, 16 KiB in all) or "fp"
    (frame pointers: cheap, truncated here).
    """

    def __init__(self, pid: int, directory: str | os.PathLike, *, call_graph: str = "dwarf",
                 frequency: int = 999, dwarf_stack: int = 16384, timeout: float = 30.0):
        support = perf_support()
        if support.path is None:
            raise RuntimeError("perf is not installed (.ci/deps.sh installs it)")
        if not support.cpu_clock:
            raise RuntimeError("perf cannot count the cpu-clock software event here")
        if call_graph not in ("dwarf", "fp"):
            raise ValueError(f"call_graph={call_graph!r}: allowed are dwarf, fp")
        self.pid, self.call_graph, self.frequency = int(pid), call_graph, int(frequency)
        self.dir = Path(directory)
        self.data = self.dir / "perf.data"
        self.timeout = timeout
        self._cg = f"dwarf,{int(dwarf_stack)}" if call_graph == "dwarf" else "fp"
        self._proc: subprocess.Popen | None = None
        self._ctl = self._ack = -1
        self._log = self.dir / "perf-record.log"

    def command(self, ctl: Path, ack: Path) -> list[str]:
        return [perf_support().path, "record", "-e", "cpu-clock", "-F", str(self.frequency), "--call-graph",
                self._cg, "-p", str(self.pid), "-D", "-1", "--control", f"fifo:{ctl},{ack}", "-N", "-B",
                "-o", str(self.data)]

    def start(self) -> Profiler:
        self.dir.mkdir(parents=True, exist_ok=True)
        ctl, ack = self.dir / "perf.ctl", self.dir / "perf.ack"
        for f in (ctl, ack):
            f.unlink(missing_ok=True)
            os.mkfifo(f)
        self._ack = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        with open(self._log, "w") as log:
            self._proc = subprocess.Popen(self.command(ctl, ack), stdout=log, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.timeout
        while True:  # perf opens the control FIFO for reading when it is ready
            try:
                self._ctl = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:
                if e.errno != errno.ENXIO:
                    raise
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self._abort()
                raise RuntimeError(f"perf record did not start: {self._log_tail()}")
            time.sleep(0.005)
        self._send("enable")
        return self

    def _send(self, cmd: str) -> None:
        os.write(self._ctl, f"{cmd}\n".encode())
        got, deadline = b"", time.monotonic() + self.timeout
        while b"ack" not in got:
            left = deadline - time.monotonic()
            if left <= 0 or (self._proc is not None and self._proc.poll() is not None):
                self._abort()
                raise RuntimeError(f"perf record did not acknowledge {cmd!r}: {self._log_tail()}")
            r, _, _ = select.select([self._ack], [], [], min(left, 0.2))
            if r:
                with contextlib.suppress(BlockingIOError):
                    got += os.read(self._ack, 64)

    def stop(self) -> Path:
        """Disable the events, end perf (SIGINT) and check that it wrote its data."""
        try:
            self._send("disable")
        finally:
            proc = self._proc
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                rc = proc.wait(timeout=self.timeout * 4) if proc is not None else 0
            except subprocess.TimeoutExpired:
                self._abort()
                raise RuntimeError("perf record did not exit after SIGINT") from None
            self._close()
        if rc not in (0, -signal.SIGINT) or not self.data.is_file():
            raise RuntimeError(f"perf record failed (exit {rc}): {self._log_tail()}")
        return self.data

    def _abort(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close()

    def _close(self) -> None:
        for fd in (self._ctl, self._ack):
            if fd >= 0:
                os.close(fd)
        self._ctl = self._ack = -1

    def _log_tail(self, n: int = 400) -> str:
        try:
            return self._log.read_text(errors="replace")[-n:].strip().replace("\n", " | ")
        except OSError:
            return ""

    def __enter__(self) -> Profiler:
        return self.start()

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            self.stop()
        else:
            self._abort()
        return False


# --------------------------------------------------------------------------- stacks

@dataclass(frozen=True)
class Sample:
    """One perf sample: thread name and id, period (ns of cpu-clock), frames leaf first (annotated)."""

    comm: str
    tid: int
    period: int
    frames: tuple[str, ...]


KERNEL_TAG, SYSLIB_TAG = "_[k]", "_[libc]"
# System libraries that the seed's libc+k counts with the kernel: libc, the dynamic
# linker (__tls_get_addr), libm, libstdc++ and libgcc (operator new, unwinding), the vDSO.
_SYSLIB = re.compile(r"(^\[vdso\]$|/(libc|libm|libpthread|librt|libdl|ld-linux[^/]*|libstdc\+\+|libgcc_s)"
                     r"(\.so|-)[^/]*$)")
_ROCKSDB_DSO = re.compile(r"/librocksdb\.so")
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<tid>\d+)\s+(?P<period>\d+)\s*:?\s*$")
THREAD_ROOTS = ("start_thread", "clone3", "clone", "_start", "__libc_start_main")


def frame_name(sym: str, dso: str) -> str:
    """The frame as folded stacks spell it: kernel frames end in _[k], system-library frames in
    _[libc] (FlameGraph's convention for the kernel), unknown symbols become [<library file>]."""
    dso = dso.strip()
    if sym in ("", "[unknown]"):
        base = Path(dso).name if dso and dso != "[unknown]" else "unknown"
        sym = f"[{base}]"
    sym = sym.replace(";", ":")
    if dso.startswith("[") and dso not in ("[unknown]", "[vdso]"):
        return sym + KERNEL_TAG
    if _SYSLIB.search(dso):
        return sym + SYSLIB_TAG
    return sym


def perf_script(data: str | os.PathLike, timeout: float = 600) -> str:
    """`perf script` of a perf.data, the fields this module parses (no inline expansion: it is slow
    and the RocksDB build has no debug information to expand from)."""
    perf = perf_support().path
    if perf is None:
        raise RuntimeError("perf is not installed (.ci/deps.sh installs it)")
    p = _run([perf, "script", "-i", str(data), "-F", "comm,tid,period,ip,sym,dso", "--no-inline"],
             timeout=timeout, errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"perf script failed (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    return p.stdout


def parse_script(text: str) -> list[Sample]:
    """Samples from `perf script -F comm,tid,period,ip,sym,dso` output (blank-line separated)."""
    out: list[Sample] = []
    head: re.Match | None = None
    frames: list[str] = []

    def flush():
        if head is not None:
            out.append(Sample(head["comm"], int(head["tid"]), int(head["period"]), tuple(frames)))

    for line in text.splitlines():
        if not line.strip():
            flush()
            head, frames = None, []
        elif not line[0].isspace():
            flush()
            head, frames = _HEADER.match(line), []
        elif head is not None:
            parts = line.strip().split(None, 1)
            rest = parts[1] if len(parts) > 1 else ""
            sym, sep, dso = rest.rpartition(" (")
            if not sep:
                sym, dso = rest, ""
            frames.append(frame_name(sym, dso.removesuffix(")")))
    flush()
    return out


def is_system_frame(frame: str) -> bool:
    return frame.endswith(KERNEL_TAG) or frame.endswith(SYSLIB_TAG)


def reader_threads(samples: Iterable[Sample]) -> set[int]:
    """Threads that ran RocksDB code in the step (a rocksdb:: frame), RocksDB's own background
    threads (named rocksdb:*) excepted: the threads that did the reads."""
    return {s.tid for s in samples
            if not s.comm.startswith("rocksdb:") and any(f.startswith("rocksdb::") for f in s.frames)}


def fold(samples: Iterable[Sample], readers: set[int] | None = None) -> dict[str, int]:
    """Folded stacks: "root;frame;...;leaf" -> samples. The root frame is "reader" for the threads
    that did the reads (`reader_threads`) and the thread name (comm) for any other thread."""
    samples = list(samples)
    readers = reader_threads(samples) if readers is None else readers
    c: Counter = Counter()
    for s in samples:
        root = READER_ROOT if s.tid in readers else s.comm.replace(";", ":").replace(" ", "_")
        c[";".join((root, *reversed(s.frames)))] += 1
    return dict(c)


def folded_stacks(data: str | os.PathLike) -> dict[str, int]:
    """perf.data -> folded stacks (perf script, parse, fold): the function other notebooks reuse."""
    return fold(parse_script(perf_script(data)))


def write_folded(folded: Mapping[str, int], path: str | os.PathLike) -> Path:
    """One "stack count" line per stack, most samples first (FlameGraph's input format)."""
    p = Path(path)
    p.write_text("".join(f"{k} {v}\n" for k, v in sorted(folded.items(), key=lambda kv: (-kv[1], kv[0]))))
    return p


def read_folded(path: str | os.PathLike) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            stack, _, n = line.rpartition(" ")
            out[stack] = out.get(stack, 0) + int(n)
    return out


def split_stack(stack: str) -> tuple[str, list[str]]:
    """(root, frames leaf first) of a folded stack."""
    parts = stack.split(";")
    return parts[0], parts[:0:-1]


# --------------------------------------------------------------------------- a command under perf

def reader_leaf_ns(data: Path, threads: int) -> tuple[dict[str, int], int]:
    """Sampled ns per leaf symbol in the `threads` busiest reader threads of a perf.data."""
    samples = parse_script(perf_script(data))
    per_thread: Counter = Counter()
    for s in samples:
        if any(f.startswith("rocksdb::") for f in s.frames):
            per_thread[s.tid] += s.period
    # The threads that ran the most RocksDB code: the readers. A process's main thread also
    # runs RocksDB while it opens the DB, and in a short step a Python main thread's other work
    # (imports, gc) can outweigh a reader's whole step: rank by RocksDB samples only.
    readers = set(sorted(reader_threads(samples), key=lambda t: -per_thread[t])[:threads])
    leaf: Counter = Counter()
    for s in samples:
        if s.tid in readers:
            leaf[s.frames[0] if s.frames else "[no frame]"] += s.period
    return dict(leaf), len(readers)


def perf_record(cmd: list[str], data: Path, *, frequency: int, timeout: float, what: str):
    """Run `cmd` under `perf record -e cpu-clock -g` into `data`; the finished process (its stdout
    holds the program's output). A failure raises one line naming `what`."""
    perf = perf_support()
    if perf.path is None or not perf.cpu_clock:
        raise RuntimeError(f"profiling {what} needs perf with the cpu-clock event: "
                           f"{perf.path or 'perf not installed'}")
    p = subprocess.run([perf.path, "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-g",
                        "-o", str(data), "--", *cmd], capture_output=True, text=True, timeout=timeout,
                       check=False)
    if p.returncode != 0:
        raise RuntimeError(f"{what} under perf record failed (exit {p.returncode}): "
                           f"{(p.stderr.strip() or p.stdout.strip())[-300:]}")
    return p
