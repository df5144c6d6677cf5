"""CPU time and IO of the system (/proc/stat), of a process (/proc/PID) and of this one (getrusage)."""
from __future__ import annotations

import os
import resource
import time
from pathlib import Path

CLK_TCK = os.sysconf("SC_CLK_TCK")
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
                    "guest", "guest_nice")


def proc_stat_cpu() -> dict:
    """System-wide CPU seconds since boot from the `cpu` line of /proc/stat.

    Units are USER_HZ ticks (SC_CLK_TCK, 100 here): a 10 ms resolution, so
    short windows need the per-process rusage for precision. guest time is
    already included in user (and guest_nice in nice); it is reported, not
    to be added again.
    """
    with open("/proc/stat") as fh:
        f = fh.readline().split()
    assert f[0] == "cpu", f
    vals = [int(x) / CLK_TCK for x in f[1:]]
    return dict(zip(PROC_STAT_FIELDS, vals, strict=False))  # older kernels have fewer


def proc_stat_delta(before: dict, after: dict) -> dict:
    d = {k: after[k] - before[k] for k in after if k in before}
    busy = sum(d.get(k, 0.0) for k in ("user", "nice", "system", "irq", "softirq", "steal"))
    d["busy"] = busy
    d["total"] = busy + d.get("idle", 0.0) + d.get("iowait", 0.0)
    return d


def proc_pid_cpu(pid: int) -> dict | None:
    """utime/stime (seconds, all threads) of a live process from /proc/PID/stat."""
    try:
        s = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'
    f = s[s.rindex(")") + 2:].split()
    # fields 14 and 15 of proc(5) are f[11], f[12] here (f[0] is field 3)
    return {"user_s": int(f[11]) / CLK_TCK, "sys_s": int(f[12]) / CLK_TCK,
            "minflt": int(f[7]), "majflt": int(f[9])}


def proc_pid_io(pid: int) -> dict | None:
    """/proc/PID/io of a live process: read_bytes/write_bytes are what it made the
    storage layer transfer (O_DIRECT included, page-cache hits excluded), so unlike
    the device-wide diskstats they are not polluted by other processes' IO."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    return {k: int(v) for k, v in (line.split(": ") for line in text.splitlines() if ": " in line)}


def _ru(who) -> dict:
    r = resource.getrusage(who)
    return {"user_s": r.ru_utime, "sys_s": r.ru_stime, "nvcsw": r.ru_nvcsw, "nivcsw": r.ru_nivcsw,
            "minflt": r.ru_minflt, "majflt": r.ru_majflt, "maxrss_kb": r.ru_maxrss,
            "inblock": r.ru_inblock, "oublock": r.ru_oublock}


def rusage() -> dict:
    """Process and waited-for children resource usage (microsecond CPU resolution).

    Children counts include grandchildren once their parent waited for them
    (fio's job processes count toward fio, and fio toward us, after exit).
    """
    out = {f"self_{k}": v for k, v in _ru(resource.RUSAGE_SELF).items()}
    out.update({f"children_{k}": v for k, v in _ru(resource.RUSAGE_CHILDREN).items()})
    out["time_s"] = time.monotonic()
    return out


def rusage_delta(before: dict, after: dict) -> dict:
    # maxrss is a high-water mark, not a counter
    return {k: (after[k] if k.endswith("maxrss_kb") else after[k] - before[k])
            for k in after if k in before}
