"""rxlab.core.sysinfo on the real machine: /proc, /sys, the device holding the repo."""
from __future__ import annotations

import json
import mmap
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rxlab.core import sysinfo
from rxlab.core.cgroup import MemoryCgroup, cgroup_support
from rxlab.core.sysinfo.fingerprint import git_info

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dev():
    return sysinfo.device_for_path(REPO)


def test_device_of_the_repo_is_a_real_disk(dev):
    st = os.stat(REPO)
    assert dev.disk is not None, f"{REPO} is on {dev.fstype} without a block device"
    # the partition is the node of st_dev; the disk is in /proc/diskstats and /sys/block
    node = Path("/sys/dev/block") / f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    assert node.resolve().name == dev.partition
    assert (Path("/sys/block") / dev.disk).is_dir()
    assert dev.disk in sysinfo.all_diskstats()
    if dev.partition != dev.disk:
        assert (node.resolve() / "partition").exists()
    assert dev.max_sectors_kb and dev.max_sectors_kb > 0
    assert dev.scheduler and "[" not in dev.scheduler
    assert dev.rotational in (True, False)
    assert dev.fstype and dev.mount_point and str(REPO.resolve()).startswith(dev.mount_point)
    assert "rw" in dev.mount_options.split(",") or "ro" in dev.mount_options.split(",")


def test_path_that_does_not_exist_yet_uses_its_parent(dev, tmp_path):
    future = tmp_path / "not" / "yet" / "db"
    d = sysinfo.device_for_path(future)
    parent = sysinfo.device_for_path(tmp_path)
    assert d.majmin == parent.majmin and d.disk == parent.disk
    assert d.path == str(future)


def test_mount_matches_mountinfo_longest_prefix():
    m = sysinfo.mount_for_path("/proc/self")
    assert m["fstype"] == "proc" and m["mount_point"] == "/proc"
    root = sysinfo.mount_for_path("/")
    assert root["mount_point"] == "/"


def test_filesystem_without_block_device():
    d = sysinfo.device_for_path("/proc")
    assert d.disk is None and d.fstype == "proc" and d.kind == "no block device (proc)"
    with pytest.raises(ValueError, match="no block device"):
        sysinfo.diskstats(d)


def test_diskstats_parse_matches_sysfs_stat(dev):
    # /sys/block/<disk>/stat has the same counters without the name columns. The
    # disk may be busy (it is shared): read diskstats before and after, and each
    # counter of the sysfs read must lie between them.
    a = sysinfo.diskstats(dev.disk)
    raw = [int(x) for x in (Path("/sys/block") / dev.disk / "stat").read_text().split()]
    b = sysinfo.diskstats(dev.disk)
    sysfs = dict(zip(sysinfo.DISKSTATS_FIELDS, raw, strict=False))
    assert len(sysfs) >= 11 and set(sysfs) <= set(a)
    for k, v in sysfs.items():
        if k not in sysinfo.GAUGES:
            assert a[k] <= v <= b[k], k
    assert list(a)[:11] == list(sysinfo.DISKSTATS_FIELDS[:11])
    assert a["reads"] > 0 and a["read_sectors"] >= a["reads"]
    with pytest.raises(KeyError):
        sysinfo.diskstats("no-such-disk")


def _direct_write_read(path: Path, nbytes: int) -> None:
    buf = mmap.mmap(-1, nbytes)  # page aligned, as O_DIRECT requires
    buf.write(os.urandom(nbytes))
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_DIRECT, 0o644)
    try:
        assert os.write(fd, buf) == nbytes
        os.fsync(fd)
    finally:
        os.close(fd)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        rbuf = mmap.mmap(-1, nbytes)
        assert os.readv(fd, [rbuf]) == nbytes
        assert rbuf[:] == buf[:]
    finally:
        os.close(fd)


def test_counters_increase_with_direct_io(dev):
    # a file next to the repo, so it is on the device we looked up
    path = REPO / "data" / f".sysinfo-test-{os.getpid()}"
    nbytes = 1 << 20
    before = sysinfo.diskstats(dev.disk)
    try:
        _direct_write_read(path, nbytes)
    finally:
        path.unlink(missing_ok=True)
    after = sysinfo.diskstats(dev.disk)
    d = sysinfo.diskstats_delta(before, after)
    assert d["writes"] >= 1 and d["write_sectors"] >= nbytes // 512
    assert d["reads"] >= 1 and d["read_sectors"] >= nbytes // 512
    assert d["in_flight"] == after["in_flight"]
    assert all(v >= 0 for v in d.values())


def test_delta_handles_32bit_wrap_of_millisecond_fields():
    before = {"reads": 10, "read_ticks_ms": 2**32 - 5, "in_flight": 3}
    after = {"reads": 12, "read_ticks_ms": 7, "in_flight": 1}
    d = sysinfo.diskstats_delta(before, after)
    assert d == {"reads": 2, "read_ticks_ms": 12, "in_flight": 1}


def test_proc_stat_cpu_counts_real_time():
    a = sysinfo.proc_stat_cpu()
    t0 = time.monotonic()
    end = t0 + 0.3
    while time.monotonic() < end:
        pass
    dt = time.monotonic() - t0
    d = sysinfo.proc_stat_delta(a, sysinfo.proc_stat_cpu())
    ncpu = os.cpu_count() or 1
    # every CPU accounts every tick somewhere; ticks are 1/CLK_TCK s
    tick = 1 / sysinfo.CLK_TCK
    assert d["total"] == pytest.approx(dt * ncpu, abs=0.05 * dt * ncpu + 4 * tick * ncpu)
    assert d["busy"] >= 0.8 * dt - 2 * tick  # at least our spinning core
    assert set(sysinfo.PROC_STAT_FIELDS[:8]) <= set(a)


def test_rusage_self_and_children():
    a = sysinfo.rusage()
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
    subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()+0.2\n"
                    "while time.process_time()<t: pass"], check=True)
    d = sysinfo.rusage_delta(a, sysinfo.rusage())
    assert d["self_user_s"] + d["self_sys_s"] >= 0.19
    assert d["children_user_s"] + d["children_sys_s"] >= 0.19
    assert d["time_s"] > 0.3
    assert d["self_nvcsw"] >= 0 and d["self_minflt"] >= 0


def test_proc_pid_cpu_of_a_child():
    p = subprocess.Popen([sys.executable, "-c", "import time\nt=time.process_time()+0.3\n"
                          "while time.process_time()<t: pass\ntime.sleep(5)"])
    try:
        deadline = time.monotonic() + 10
        cpu = None
        while time.monotonic() < deadline:
            cpu = sysinfo.proc_pid_cpu(p.pid)
            if cpu and cpu["user_s"] + cpu["sys_s"] >= 0.29:
                break
            time.sleep(0.05)
        assert cpu is not None and cpu["user_s"] + cpu["sys_s"] >= 0.29
    finally:
        p.kill()
        p.wait()
    assert sysinfo.proc_pid_cpu(p.pid) is None


def test_probes_say_available_or_why_not():
    for probe in (sysinfo.perf_hw_counters(), sysinfo.perf_sw_counters(), sysinfo.io_uring_status()):
        assert probe == "available" or probe.startswith(("available (", "unavailable: ", "not permitted: "))
    # software events work on every Linux with perf enabled; hardware ones may not (VMs without a PMU)
    assert sysinfo.perf_sw_counters() == "available" or "paranoid" in sysinfo.perf_sw_counters()


def test_fingerprint(dev):
    fp = sysinfo.fingerprint(REPO / "data" / "runs" / "some-db", rocksdb_build={"version": "9.10.0"})
    json.dumps(fp)
    assert fp["kernel"] == os.uname().release
    assert fp["cores"] == os.cpu_count() and fp["memory_kb"] > 0
    assert fp["cpu_model"] and fp["cpu_model"] != "unknown"
    cpufreq = Path("/sys/devices/system/cpu/cpu0/cpufreq")
    if not cpufreq.is_dir():
        assert fp["cpufreq_governor"] == "unavailable"
    else:
        assert fp["cpufreq_governor"] == (cpufreq / "scaling_governor").read_text().strip()
    assert fp["device"]["disk"] == dev.disk and fp["device"]["fstype"] == dev.fstype
    # the storage a run records: device model and kind, queue scheduler, file system, mount options
    storage = fp["device"]
    assert storage["model"] and storage["scheduler"] and storage["mount_options"]
    assert storage["kind"] == sysinfo.device_kind(dev.disk, dev.rotational) != "unknown"
    assert fp["rocksdb_build"] == {"version": "9.10.0"}
    assert fp["git_commit"] == "unknown" or len(fp["git_commit"]) == 40
    assert fp["python"] == sys.version.split()[0]
    assert fp["rxlab_version"] != "unknown"
    assert fp["hostname"]
    assert sysinfo.fingerprint()["device"] is None


def test_the_fingerprint_sees_the_memory_limit_of_the_process_own_cgroup(tmp_path):
    """A child in a memory cgroup (as the readahead study makes one) reports that cgroup's limit."""
    support = cgroup_support()
    if not support.available:
        pytest.skip(support.reason)
    cg = MemoryCgroup(support, f"rxlab-test-{os.getpid()}", 768 << 20)
    try:
        code = "from rxlab.core import sysinfo; print(sysinfo.fingerprint()['cgroup_memory_limit'])"
        cmd = ["sh", "-c", f'echo $$ > {cg.procs_file} && exec "$0" -c "$1"', sys.executable, code]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout
    finally:
        cg.remove()
    assert int(out) == 768 << 20
    assert sysinfo.fingerprint()["cgroup_memory_limit"] != 768 << 20  # ours is not the child's


def test_device_kinds_in_words():
    assert sysinfo.device_kind("nvme0n1", False) == "NVMe SSD"
    assert sysinfo.device_kind("vda", True) == "virtio disk (virtual machine)"
    assert sysinfo.device_kind("sda", True) == "SATA/SCSI HDD"
    assert sysinfo.device_kind("sdb", False) == "SATA/SCSI SSD"
    assert sysinfo.device_kind(None, None, "tmpfs") == "no block device (tmpfs)"


def test_a_checkout_is_dirty_for_its_code_not_for_figures_docs_or_tests(tmp_path):
    def git(*a):
        subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t", *a],
                       check=True, capture_output=True)

    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "qps.csv").write_text("a\n1\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    for d in ("docs", "tests"):
        (tmp_path / d).mkdir()
    (tmp_path / "docs" / "findings.md").write_text("# f\n")
    (tmp_path / "tests" / "test_code.py").write_text("def test(): pass\n")
    (tmp_path / "README.md").write_text("# r\n")
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "c")
    assert git_info(tmp_path)["git_dirty"] is False
    (tmp_path / "figures" / "qps.csv").write_text("a\n2\n")   # a report rewrote a figure's table
    assert git_info(tmp_path)["git_dirty"] is False
    (tmp_path / "docs" / "findings.md").write_text("# f\nmore\n")    # prose written while it ran
    (tmp_path / "tests" / "test_code.py").write_text("def test(): assert 1\n")
    (tmp_path / "README.md").write_text("# r\nmore\n")
    assert git_info(tmp_path)["git_dirty"] is False
    (tmp_path / "code.py").write_text("x = 2\n")              # the code that measures changed
    assert git_info(tmp_path)["git_dirty"] is True
