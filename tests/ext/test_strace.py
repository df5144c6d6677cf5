"""rxlab's in-process syscall counters agree with `strace -c -f` on the same
db_bench run (the read and write syscalls of the data path, within 1%).

Known syscalls of the traced kinds outside our file system: the dynamic loader
reads libc's ELF headers with pread64 (2 calls per db_bench start here);
RocksDB's LOG goes through the default file system with write(), which is not
traced. Anything else is a discrepancy to explain, not to tolerate."""
from __future__ import annotations

import logging
import re
import shutil

import pytest
from helpers_plugin import describe, found, parse_strace_summary, plugin_path, read_counters, run_db_bench

from rxlab.studies import tracing_overhead

pytestmark = [
    pytest.mark.timeout(180),
    pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed"),
]

log = logging.getLogger(__name__)

TRACED = ("pread64", "pwrite64", "io_submit", "io_getevents", "io_uring_enter")
NUM = 20000
TOLERANCE = 0.01

# Per engine: the data-path syscalls compared with strace.
COMPARED = {
    "posix": ("pread64", "pwrite64"),
    "libaio": ("io_submit", "io_getevents"),
    "io_uring": ("io_uring_enter",),
}


CASES = [
    # (engine URI, last benchmark, extra db_bench flags)
    pytest.param("posix", "readrandom", [], id="posix"),
    pytest.param("libaio", "readrandom", [], id="libaio"),
    pytest.param("io_uring", "readrandom", [], id="io_uring"),
    # Beyond the plain engines: the batched MultiRead path (several requests
    # per submit, reaping several completions), registered files with fixed
    # buffers, and SQPOLL (where we predict whether liburing enters the kernel).
    pytest.param("libaio", "multireadrandom", ["--multiread_batched=true", "--batch_size=16"],
                 id="libaio-multiread"),
    pytest.param("io_uring", "multireadrandom", ["--multiread_batched=true", "--batch_size=16"],
                 id="io_uring-multiread"),
    pytest.param("io_uring?registered_files=1&fixed_buffers=1", "readrandom", [],
                 id="io_uring-registered-fixed"),
    pytest.param("io_uring?sqpoll=1", "readrandom", [], id="io_uring-sqpoll"),
]


@pytest.mark.parametrize(("uri", "benchmark", "extra"), CASES)
def test_counters_agree_with_strace(tmp_path, uri, benchmark, extra):
    engine = uri.split("?")[0]
    sep = "&" if "?" in uri else "?"
    cpath = tmp_path / "counters.json"
    spath = tmp_path / "strace.txt"
    # strace itself must not load the plugin: -E puts LD_PRELOAD in the
    # environment of the traced db_bench only.
    wrapper = ["strace", "-f", "-c", "-o", str(spath), "-e", "trace=" + ",".join(TRACED),
               "-E", f"LD_PRELOAD={plugin_path()}"]
    proc = run_db_bench([
        f"--fs_uri=rxlab://{uri}{sep}counters_path={cpath}", f"--db={tmp_path / 'db'}",
        f"--benchmarks=fillseq,flush,{benchmark}", f"--num={NUM}", f"--reads={NUM}",
        "--use_direct_reads=true", "--seed=1",
        # A 64 KB block cache: with the default 8 MB, readrandom is served
        # from the cache after ~600 reads and the read path is barely compared.
        "--cache_size=65536", *extra,
    ], wrapper=wrapper, timeout=170)
    info = describe(proc)
    refused = [ln for ln in proc.stderr.splitlines() if ln.startswith("rxlab:")]
    if "sqpoll=1" in uri and proc.returncode != 0 and refused:
        pytest.skip(f"SQPOLL refused here: {refused[0]}")
    assert proc.returncode == 0, info
    assert found(proc.stdout, benchmark) == (NUM, NUM), info
    assert spath.is_file(), f"strace wrote no summary\n{info}"
    traced = parse_strace_summary(spath.read_text())
    assert traced, f"no syscall rows parsed from strace's summary:\n{spath.read_text()}"
    ours = read_counters(cpath)["counters"]

    # The comparison is rxlab.studies.tracing_overhead's (the tracing study judges its runs the same way).
    cmp = tracing_overhead.compare_syscalls(traced, ours, compared=COMPARED[engine])
    table = "\n".join(f"{uri} {benchmark}: {r.syscall:15s} strace={r.strace:7d} rxlab={r.rxlab:7.0f} "
                      f"diff={r.rel_diff:+.3%}{'' if r.compared else '  (not compared)'}"
                      for r in cmp.itertuples())
    verdict = tracing_overhead.agreement(cmp, TOLERANCE)
    bad = [r.syscall for r in cmp.itertuples() if r.compared and not abs(r.rel_diff) <= TOLERANCE]
    if benchmark == "multireadrandom":
        assert ours["multireads"] > 0 and ours["max_inflight"] > 1, ours
    log.info("strace -c vs rxlab counters:\n%s", table)
    for name in COMPARED[engine]:
        assert traced.get(name, 0) > 1000, f"{name}: too few calls to compare\n{table}"
    assert verdict["rows"] == len(COMPARED[engine]), table
    assert verdict["within"] and not bad, (f"rxlab's counts of {bad} disagree with strace by more than "
                                           f"{TOLERANCE:.0%}:\n{table}\nstrace summary:\n{spath.read_text()}")
    # Engines that do not use pread for O_DIRECT data: what strace sees of
    # pread64 is the loader's and the buffered files' (the OPTIONS file read
    # back, buffered_reads=pread), and must stay a trace.
    # A trace: at most 1% of the reads (a batched MultiRead's reads share
    # few engine calls, so the bound is on reads, not calls).
    if engine != "posix":
        assert ours["sys.pread64.count"] <= TOLERANCE * ours["reads"], (ours["reads"], table)
        assert traced.get("pread64", 0) <= TOLERANCE * ours["reads"], (ours["reads"], table)


@pytest.mark.parametrize(("ioengine", "calls"), [("sync", ("lseek", "read")), ("psync", ("pread64",))])
def test_rxlab_fio_engines_make_fios_system_calls(tmp_path, ioengine, calls):
    """rxlab fio's sync is fio's (lseek, then read: two system calls per random
    read) and psync is pread: strace, restricted to the data file, sees exactly
    the calls rxlab counted, and only those."""
    import json
    import subprocess
    import sys

    data, spath = tmp_path / "data.bin", tmp_path / "strace.txt"
    code = ("import json, sys; from rxlab.bench import fio; "
            f"r = fio.run({str(data)!r}, bs='8k', size='4m', ioengine={ioengine!r}, runtime=0.5, ramp_time=0)[-1]; "
            "print(json.dumps({'ops': r['ops'], 'syscalls': r['syscalls']}))")
    from rxlab.bench import fio

    fio.layout(data, 4 << 20)  # outside the trace: laying out writes the file
    proc = subprocess.run(["strace", "-f", "-c", "-o", str(spath), "-P", str(data),
                           "-e", "trace=lseek,read,pread64,write,pwrite64", sys.executable, "-c", code],
                          check=False, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    ours = json.loads(proc.stdout.strip().splitlines()[-1])
    traced = parse_strace_summary(spath.read_text())
    assert ours["ops"] > 100, ours
    assert set(traced) <= set(calls), traced  # nothing else touched the file's data
    # a random offset equal to where the last read ended (1 in 512 here) needs no seek, as in fio
    assert traced[calls[-1]] == ours["ops"], (traced, ours)
    assert sum(traced.values()) == ours["syscalls"], (traced, ours)
    if ioengine == "sync":
        assert 0.95 * ours["ops"] <= traced["lseek"] <= ours["ops"], traced


def traced_direct_reads(db_bench_args: list[str], tmp_path) -> tuple[list[tuple[int, int, int]], object]:
    """(buffer address, length, offset) of every pread on an O_DIRECT file in a db_bench run on
    the plugin, in order, and the finished process."""
    spath = tmp_path / "strace.txt"
    wrapper = ["strace", "-f", "-o", str(spath), "-e", "trace=pread64,openat", "-e", "raw=pread64",
               "-E", f"LD_PRELOAD={plugin_path()}"]
    proc = run_db_bench(db_bench_args, wrapper=wrapper, timeout=170)
    assert proc.returncode == 0, describe(proc)
    direct_fds: set[int] = set()  # files opened with O_DIRECT, in the trace's order
    data = []
    for line in spath.read_text().splitlines():
        if (m := re.search(r"openat\(.*, (O_\w+(?:\|O_\w+)*).*\) = (\d+)$", line)):
            fd = int(m.group(2))
            (direct_fds.add if "O_DIRECT" in m.group(1) else direct_fds.discard)(fd)
        elif (m := re.search(r"pread64\(0x([0-9a-f]+), 0x([0-9a-f]+), 0x([0-9a-f]+), 0x([0-9a-f]+)\)", line)):
            fd, addr, n, off = (int(x, 16) for x in m.groups())
            if fd in direct_fds:
                data.append((addr, n, off))
    return data, proc


def small_db_flags(db, block_align: bool) -> list[str]:
    return [f"--db={db}", "--benchmarks=fillseq,flush,readrandom", "--num=5000", "--reads=5000",
            "--use_direct_reads=true", "--use_direct_io_for_flush_and_compaction=true",
            "--cache_size=65536", f"--block_align={str(block_align).lower()}", "--compression_type=none",
            "--block_size=8192", "--seed=1"]


def test_buffer_align_places_every_direct_read_buffer(tmp_path):
    """buffer_align is what the file asks of RocksDB: every O_DIRECT read lands in a buffer (and
    at an offset) aligned to it. With the device's 512 bytes, where an 8 KiB buffer falls in its
    pages is up to malloc, and so differs from process to process."""
    data, proc = traced_direct_reads(["--fs_uri=rxlab://posix?buffer_align=8192",
                                      *small_db_flags(tmp_path / "db", True)], tmp_path)
    assert len(data) > 1000, f"{len(data)} direct reads traced\n{describe(proc)}"
    bad = [(hex(a), n, off) for a, n, off in data if a % 8192 or off % 8192 or n % 8192]
    assert not bad, f"{len(bad)} of {len(data)} direct reads not aligned to 8192, e.g. {bad[:3]}"


@pytest.mark.parametrize("block_align", [True, False])
def test_buffer_align_auto_keeps_the_device_alignment(tmp_path, block_align):
    """The default, buffer_align=auto: a file keeps the device's 512 bytes for its whole life, so
    its reads are not rounded out to pages (up to 12 KiB for an 8 KiB block). It no longer asks a
    page once its reads show block-aligned data: RocksDB's prefetch buffer keeps data placed for
    the old alignment, and compaction reads past 16 readaheads failed their checksums."""
    data, proc = traced_direct_reads(["--fs_uri=rxlab://posix",
                                      *small_db_flags(tmp_path / "db", block_align)], tmp_path)
    blocks = [(a, n, off) for a, n, off in data if n >= 8192]
    assert len(blocks) > 1000, f"{len(blocks)} direct block reads traced\n{describe(proc)}"
    # the device's 512 bytes, from the first read to the last (where malloc puts a buffer within
    # its page is up to the process)
    assert all(a % 512 == 0 and n % 512 == 0 for a, n, _ in data), data[:3]
    if block_align:
        assert all(n == 8192 for _, n, _ in blocks), sorted({n for _, n, _ in blocks})
    else:
        # an 8 KiB block plus its trailer, rounded out to 512-byte sectors: never 3 pages' worth
        assert max(n for _, n, _ in blocks) <= 9216, sorted({n for _, n, _ in blocks})[-5:]
        assert any(off % 4096 for _, _, off in blocks)
