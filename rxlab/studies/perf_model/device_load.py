"""The virtual disk's latency against what the vCPUs do between and beside the reads.

The seed's model takes the device's latency from fio at queue depth 1, whose
reader does almost nothing between reads, and uses it for RocksDB, whose
reader spends tens of microseconds of CPU per query between them and whose
other readers keep the other vCPUs busy. On a physical SSD that would not
matter. On these VMs it does: the disk is emulated by the host, and how fast
it answers depends on what the guest's vCPUs are doing.

`run` measures that with rxlab's fio (sync, queue depth 1, 8 KiB O_DIRECT, one
job pinned to the CPU that takes the disk's interrupts, so no read pays a
remote wake-up), in four settings repeated in rotated order:

* the reader thinks 0 or `think_us` microseconds between reads, spinning on
  its CPU as a query's work does (fio's thinktime_spin);
* the other CPU is idle, or kept busy by a spinning process pinned to it.

Each row has iostat's read latency (`io.lat`, the disk's own time per read
as the guest sees it), fio's latency, CPU and wait for a CPU. `frame` reads
the stored runs back into `run`'s rows, `summary` takes medians, `findings`
says what they show, `draw_device_load` draws io.lat per setting from the
summary alone.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rxlab.bench import fio
from rxlab.bench.irq import busiest_irq_cpu
from rxlab.bench.neighbour import Spinner
from rxlab.core import figures, metrics, stats, store
from rxlab.core.study import new_study_id

__all__ = ["NEIGHBOURS", "THINK_US", "draw_device_load", "findings", "frame", "measure", "run", "summary"]

NEIGHBOURS = ("idle", "busy")  # the other CPU during the run
THINK_US = (0, 40)             # the reader's spin between reads: none, and about a query's CPU
RUN_NAME = "device-load"       # each run is named <prefix>-<neighbour>-t<think> (default prefix: this)
COLUMNS = ["think_us", "neighbour", "rep", "reader_cpu", "busy_cpu", "iops", "io.lat", "lat_us", "cpuPer",
           "runqPer", "busy_vcpus", "run"]
# The busy neighbour (a process spinning on one CPU) is the project's one CPU-contention load.
_Spinner = Spinner


def _row(think: float, neighbour: str, rep: int, reader_cpu, busy_cpu, total: dict, vcpus: int,
         stored) -> dict:
    """`run`'s row of one fio run from its total row."""
    sc = metrics.seed_columns([total]).iloc[0]
    cpu_total = total.get("system_cpu.total") or np.nan
    return {"think_us": think, "neighbour": neighbour, "rep": rep, "reader_cpu": reader_cpu,
            "busy_cpu": busy_cpu, "iops": sc["iops"], "io.lat": sc["io.lat"], "lat_us": total["lat_mean_us"],
            "cpuPer": sc["cpuPer"], "runqPer": sc["runqPer"],
            "busy_vcpus": total.get("system_cpu.busy", np.nan) / cpu_total * vcpus, "run": stored}


def run(filename, *, think_us: Sequence[float] = THINK_US, runtime: float = 3, repeats: int = 3,
        size: str | int = "1g", root=None, scale: str | None = None, study: str | None = None,
        name: str = RUN_NAME) -> pd.DataFrame:
    """Measure every (think time, neighbour) setting `repeats` times, order rotated per repetition.

    One row per run: think_us, neighbour, rep, reader_cpu, busy_cpu (None when idle), and from
    rxlab.core.metrics iops, io.lat, cpuPer, runqPer, plus lat_us (fio's mean latency) and
    busy_vcpus (the CPUs busy on average, from /proc/stat). Needs two CPUs; the reader runs on
    the CPU that takes the disk's interrupts (the first allowed CPU where those cannot be
    found). With `root`, every run is also stored (tool rxlab-fio, name
    <name>-<neighbour>-t<think>, `study`: default a new study id) and its directory is in
    `run`; `frame` reads them back.
    """
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise ValueError(f"device_load: needs at least 2 CPUs, this process may use {allowed}")
    if repeats < 1 or runtime <= 0:
        raise ValueError(f"device_load: repeats={repeats} and runtime={runtime} must be >= 1 and > 0")
    thinks = [float(t) for t in think_us]
    if not thinks or any(t < 0 or not np.isfinite(t) for t in thinks):
        raise ValueError(f"device_load: think_us={list(think_us)!r}: give one or more times >= 0 (us)")
    fio.layout(filename, fio.parse_size(size))
    irq_cpu = busiest_irq_cpu(filename)
    if irq_cpu not in allowed:  # interrupts not found (or elsewhere): the reader on the first CPU we may use
        irq_cpu = allowed[0]
    other = next(c for c in allowed if c != irq_cpu)
    plan = [(t, n) for n in NEIGHBOURS for t in thinks]
    study = study or new_study_id()
    rows = []
    for rep in range(repeats):
        for think, neighbour in stats.rotate(plan, rep):
            kw = {"runtime": runtime, "ramp_time": 0.5, "size": size, "cpus_allowed": str(irq_cpu),
                  "thinktime": think, "thinktime_spin": think}
            busy = other if neighbour == "busy" else None
            with _Spinner(busy):
                out = fio.run(filename, **kw)
            stored = None
            if root is not None:
                meta = {"tool": "rxlab-fio", "name": f"{name}-{neighbour}-t{think:g}", "study": study,
                        "rep": rep, "neighbour": neighbour, "think_us": think, "reader_cpu": irq_cpu,
                        "busy_cpu": busy, "vcpus": len(allowed), **({"scale": scale} if scale else {})}
                stored = str(fio.store_rows(root, filename, out, meta, **kw))
            rows.append(_row(think, neighbour, rep, irq_cpu, busy, out[-1], len(allowed), stored))
    return pd.DataFrame(rows, columns=COLUMNS)


def measure(directory=None, *, size: int = 1 << 30, runtime: float = 3, repeats: int = 3,
            think_us: Sequence[float] = THINK_US, root=None, scale: str | None = None,
            study: str | None = None, name: str = RUN_NAME) -> pd.DataFrame:
    """`run` on a file of `size` bytes laid out in `directory` (default: a temporary directory),
    deleted afterwards; every run stored under `root` (default: the store's)."""
    with fio.scratch_file(directory, "device-load") as f:
        return run(f, think_us=think_us, runtime=runtime, repeats=repeats, size=size,
                   root=root if root is not None else store.default_root(), scale=scale, study=study,
                   name=name)


def frame(cat: pd.DataFrame) -> pd.DataFrame:
    """`run`'s rows again, from the store's catalog rows of device-load runs (others dropped)."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=COLUMNS)
    named = cat["run_name"].astype(str).str.contains(r"(?:^|-)device-load-(?:idle|busy)-t[0-9.]+$")
    total = cat[named & (cat["job"].astype(str) == "total")] if "job" in cat.columns else cat.iloc[:0]
    rows = []
    for t in total.to_dict("records"):
        busy = t.get("spec.busy_cpu")
        rows.append(_row(float(t["spec.think_us"]), str(t["spec.neighbour"]), int(t["spec.rep"]),
                         int(t["spec.reader_cpu"]), None if busy is None or pd.isna(busy) else int(busy), t,
                         int(t["spec.vcpus"]), t["run_id"]))
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Medians per (think_us, neighbour), with the repetitions' io.lat range and count."""
    if df.empty:
        raise ValueError("device_load.summary: no rows")
    cols = ["iops", "io.lat", "lat_us", "cpuPer", "runqPer", "busy_vcpus"]
    g = df.astype({c: float for c in cols}).groupby(["think_us", "neighbour"], sort=True)
    out = g[cols].median()
    out["io.lat_min"], out["io.lat_max"], out["n"] = g["io.lat"].min(), g["io.lat"].max(), g.size()
    out = out.reset_index()
    out["neighbour"] = pd.Categorical(out["neighbour"], NEIGHBOURS, ordered=True)
    return out.sort_values(["think_us", "neighbour"]).reset_index(drop=True).astype({"neighbour": str})


def findings(s: pd.DataFrame) -> str:
    """What the medians show, in numbers (markdown bullets)."""
    by = s.set_index(["think_us", "neighbour"])
    at = by["io.lat"]
    thinks = sorted(s["think_us"].unique())
    lo = thinks[0]

    def verdict(a, b, slower: str) -> str:
        """`slower` when a's repetitions all lie above b's, else say the two overlap."""
        ra, rb = by.loc[a, ["io.lat_min", "io.lat_max"]], by.loc[b, ["io.lat_min", "io.lat_max"]]
        if ra["io.lat_min"] > rb["io.lat_max"]:
            return slower
        return (f"within the repetitions' spread ({ra['io.lat_min']:.1f}-{ra['io.lat_max']:.1f} against "
                f"{rb['io.lat_min']:.1f}-{rb['io.lat_max']:.1f} us), so no effect is shown")

    lines = []
    if (lo, "idle") in at.index:
        base = at[(lo, "idle")]
        for t in thinks[1:]:
            if (t, "idle") in at.index:
                lines.append(f"- The reader spinning {t:g} us between reads, the other CPU idle: iostat's "
                             f"read latency {at[(t, 'idle')]:.1f} us against {base:.1f} us at {lo:g} us "
                             f"({at[(t, 'idle')] - base:+.1f} us per read): "
                             + verdict((t, "idle"), (lo, "idle"), "the longer the reader works between "
                                       "reads, the slower the disk answers") + ".")
        for t in thinks:
            if (t, "busy") in at.index and (t, "idle") in at.index:
                busy, idle = at[(t, "busy")], at[(t, "idle")]
                lines.append(f"- Thinking {t:g} us, the other CPU busy: {busy:.1f} us against {idle:.1f} us "
                             f"idle ({busy - idle:+.1f} us per read): "
                             + verdict((t, "busy"), (t, "idle"), "a busy vCPU slows the emulated disk though "
                                       "it does no IO") + ".")
    if lines:
        lines.append("- fio at queue depth 1 with nothing else running is the disk at its fastest. A "
                     "reader with a query's CPU between its reads, or beside other busy readers, gets a "
                     "slower disk, which a device term taken from that fio run cannot know.")
    else:
        lines.append("- Not enough settings ran to compare.")
    return "\n".join(lines)


def draw_device_load(s: pd.DataFrame):
    """iostat's read latency per think time (the `summary` table), the other CPU idle and busy (range of
    repetitions)."""
    fig, ax = figures.figure(aspect=0.62)
    thinks = sorted(s["think_us"].unique())
    x = np.arange(len(thinks))
    width = 0.38
    for i, (n, color) in enumerate(zip(NEIGHBOURS, ("#0072b2", "#d55e00"), strict=True)):
        d = s[s["neighbour"] == n].set_index("think_us").reindex(thinks)
        err = np.vstack([d["io.lat"] - d["io.lat_min"], d["io.lat_max"] - d["io.lat"]])
        ax.bar(x + (i - 0.5) * width, d["io.lat"], width, yerr=err, color=color, capsize=2,
               label=f"other CPU {n}")
    ax.set_xticks(x, [f"{t:g}" for t in thinks])
    ax.set_xlabel("reader's CPU work between reads (us, spinning)")
    ax.set_ylabel("iostat read latency (us)")
    ax.set_ylim(0, float(s["io.lat_max"].max()) * 1.15)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2)
    ax.set_title("fio sync qd1 on the interrupt's CPU, by the vCPUs' load")
    return fig
