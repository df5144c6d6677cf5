"""Where the clients run: blocking reads against the CPU that takes the disk's interrupt.

A blocking read ends with an interrupt on one CPU and a wake-up of the
reader, which is cheap when the reader sleeps on that same CPU and costs an
inter-processor wake-up when it sleeps elsewhere. With more readers than
one, either they share the interrupt's CPU and wait for each other (the
scheduler's run_delay, `runqPer`) or they are spread and all but one pay the
remote wake-up. Which of the two the scheduler picks, and what each costs,
is a property of the machine (its interrupt routing, its idle states, on a
VM its hypervisor's IPI cost), and it decides how a model fitted on one
client extrapolates to more.

`run` measures it with rxlab's fio (sync, queue depth 1, the io.eff
denominator's settings): one job pinned to the interrupt's CPU and one
pinned to another, then N jobs left to the scheduler (fio's
cpus_allowed_policy=shared) and pinned one per CPU (split), repeated in
rotated order. `frame` reads the stored runs back into `run`'s rows;
`summary` takes medians per configuration; `findings` says what they show;
`draw_placement` draws each configuration's latency per read split into
CPU, wait for a CPU and the rest, from the summary alone.
"""
from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rxlab.bench import fio
from rxlab.bench.irq import device_irqs, interrupt_counts
from rxlab.core import figures, metrics, stats, store
from rxlab.core.study import new_study_id

__all__ = ["CONFIGS", "draw_placement", "findings", "frame", "measure", "run", "summary"]

# (configuration, numjobs, where): "irq" / "other" pin one job to the
# interrupt's CPU or away from it; "shared" / "split" are fio's policies.
CONFIGS = (("1 job on the interrupt's CPU", 1, "irq"),
           ("1 job on another CPU", 1, "other"),
           ("2 jobs, scheduler's choice", 2, "shared"),
           ("2 jobs, one per CPU", 2, "split"))
RUN_NAME = "placement"   # each run is named <prefix>-<where> (default prefix: this)
COLUMNS = ["config", "numjobs", "where", "rep", "cpus", "irq_cpu", "iops", "lat_us", "cpuPer", "usPer",
           "syPer", "runqPer", "irqs_per_io", "run"]


def _irq_cpu(filename, irqs: list[int], runtime: float, size) -> int | None:
    """The CPU that takes most of the device's interrupts during a short read run."""
    if not irqs:
        return None
    before = interrupt_counts(irqs)
    fio.run(filename, runtime=min(runtime, 1.0), ramp_time=0, size=size)
    delta = interrupt_counts(irqs) - before
    return int(np.argmax(delta)) if delta.sum() > 0 else None


def _row(name: str, jobs: int, where: str, rep: int, irq_cpu, out: list[dict], irqs: int | None,
         stored) -> dict:
    """`run`'s row of one fio run from its rows (per job, then the total)."""
    total = out[-1]
    sc = metrics.seed_columns([total]).iloc[0]
    return {"config": name, "numjobs": jobs, "where": where, "rep": rep,
            "cpus": ",".join(str(_cpu(r.get("cpu"))) for r in out[:-1]), "irq_cpu": irq_cpu,
            "iops": sc["iops"], "lat_us": total["lat_mean_us"], "cpuPer": sc["cpuPer"], "usPer": sc["usPer"],
            "syPer": sc["syPer"], "runqPer": sc["runqPer"],
            "irqs_per_io": irqs / total["ops"] if irqs is not None and total["ops"] else np.nan,
            "run": stored}


def _cpu(v):
    """A job's CPU as fio reports it (None for a job left to the scheduler, NaN once stored)."""
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else int(v)


def run(filename, *, runtime: float = 5, repeats: int = 3, size: str | int = "2g",
        configs: Sequence[tuple[str, int, str]] = CONFIGS, root=None, scale: str | None = None,
        study: str | None = None, name: str = RUN_NAME) -> pd.DataFrame:
    """Measure each configuration `repeats` times (order rotated per repetition).

    One row per run: config, numjobs, where, rep, the jobs' CPUs, the
    interrupt's CPU, and from rxlab.core.metrics iops, cpuPer, usPer, syPer,
    runqPer, lat_us (fio's mean completion latency) and irqs_per_io.
    Needs two CPUs; the pinned single-job configurations need the
    interrupt's CPU to be known (they are skipped otherwise). With `root`,
    each run is also stored there (tool rxlab-fio, name <name>-<where>,
    `study` (default: a new study id) and `scale` when given), and its
    directory is in the row's `run` column; `frame` reads them back.
    """
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise ValueError(f"placement: needs at least 2 CPUs, this process may use {allowed}")
    if repeats < 1 or runtime <= 0:
        raise ValueError(f"placement: repeats={repeats} and runtime={runtime} must be >= 1 and > 0")
    fio.layout(filename, fio.parse_size(size))
    irqs = device_irqs(filename)
    irq_cpu = _irq_cpu(filename, irqs, runtime, size)
    plan = [(c, jobs, where) for c, jobs, where in configs
            if where not in ("irq", "other") or (irq_cpu is not None and irq_cpu in allowed)]
    study = study or new_study_id()
    rows = []
    for rep in range(repeats):
        for config, jobs, where in stats.rotate(plan, rep):
            kw = {"numjobs": jobs, "runtime": runtime, "ramp_time": 0.5, "size": size}
            if where == "irq":
                kw["cpus_allowed"] = str(irq_cpu)
            elif where == "other":
                kw["cpus_allowed"] = str(next(c for c in allowed if c != irq_cpu))
            kw["cpus_allowed_policy"] = "split" if where in ("irq", "other", "split") else "shared"
            before = interrupt_counts(irqs) if irqs else None
            out = fio.run(filename, **kw)
            n_irqs = int((interrupt_counts(irqs) - before).sum()) if irqs else None
            out[-1]["device_irqs"] = n_irqs   # stored with the run: `frame` needs it back
            stored = None
            if root is not None:
                meta = {"tool": "rxlab-fio", "name": f"{name}-{where}", "study": study, "rep": rep,
                        "config": config, "irq_cpu": irq_cpu, **({"scale": scale} if scale else {})}
                stored = str(fio.store_rows(root, filename, out, meta, **kw))
            rows.append(_row(config, jobs, where, rep, irq_cpu, out, n_irqs, stored))
    return pd.DataFrame(rows, columns=COLUMNS)


def measure(directory=None, *, size: int = 2 << 30, runtime: float = 5, repeats: int = 3, root=None,
            scale: str | None = None, study: str | None = None, name: str = RUN_NAME) -> pd.DataFrame:
    """`run` on a file of `size` bytes laid out in `directory` (default: a temporary directory),
    deleted afterwards; every run stored under `root` (default: the store's)."""
    with fio.scratch_file(directory, "placement") as f:
        return run(f, runtime=runtime, repeats=repeats, size=size,
                   root=root if root is not None else store.default_root(), scale=scale, study=study,
                   name=name)


def frame(cat: pd.DataFrame) -> pd.DataFrame:
    """`run`'s rows again, from the store's catalog rows of placement runs (others dropped)."""
    if cat.empty or "run_name" not in cat.columns:
        return pd.DataFrame(columns=COLUMNS)
    where = cat["run_name"].astype(str).str.extract(r"(?:^|-)placement-(irq|other|shared|split)$")[0]
    cat = cat.assign(_where=where)[where.notna()]
    names = {w: c for c, _, w in CONFIGS}
    rows = []
    for run_id, g in cat.groupby("run_id", sort=False):
        jobs = g[g["job"].astype(str) != "total"].to_dict("records")
        total = g[g["job"].astype(str) == "total"].to_dict("records")
        if not total:
            continue
        t = total[0]
        irqs = t.get("device_irqs")
        irqs = None if irqs is None or pd.isna(irqs) else int(irqs)
        irq_cpu = t.get("spec.irq_cpu")
        rows.append(_row(t.get("spec.config", names[t["_where"]]), int(t["numjobs"]), t["_where"],
                         int(t["spec.rep"]), None if pd.isna(irq_cpu) else int(irq_cpu), [*jobs, t], irqs,
                         run_id))
    return pd.DataFrame(rows, columns=COLUMNS)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """Medians per configuration (in CONFIGS order), with `rest_us` = lat - cpuPer - runqPer
    (the device, and the wake-up's cost that no CPU counter sees) and the repetitions' IOPS range."""
    if df.empty:
        raise ValueError("placement.summary: no rows")
    cols = ["iops", "lat_us", "cpuPer", "usPer", "syPer", "runqPer", "irqs_per_io"]
    g = df.astype({c: float for c in cols}).groupby(["config", "numjobs", "where"], sort=False)
    out = g[cols].median()
    out["iops_min"], out["iops_max"], out["n"] = g["iops"].min(), g["iops"].max(), g.size()
    out["rest_us"] = out["lat_us"] - out["cpuPer"] - out["runqPer"]
    order = {name: i for i, (name, _, _) in enumerate(CONFIGS)}
    out = out.reset_index()
    return out.sort_values("config", key=lambda s: s.map(order)).reset_index(drop=True)


def findings(s: pd.DataFrame) -> str:
    """What the medians show, in numbers (markdown bullets)."""
    by = s.set_index("where")
    lines = []
    if {"irq", "other"} <= set(by.index):
        a, b = by.loc["irq"], by.loc["other"]
        lines.append(f"- One job: on the interrupt's CPU {a['iops']:.0f} IOPS at {a['lat_us']:.1f} us per "
                     f"read; on another CPU {b['iops']:.0f} IOPS at {b['lat_us']:.1f} us "
                     f"({b['lat_us'] - a['lat_us']:+.1f} us per read, "
                     f"{b['cpuPer'] - a['cpuPer']:+.1f} us of CPU): what a wake-up on another CPU costs "
                     "here.")
    if {"shared", "split"} <= set(by.index):
        sh, sp = by.loc["shared"], by.loc["split"]
        lines.append(f"- Two jobs left to the scheduler: {sh['iops']:.0f} IOPS, each read waiting "
                     f"{sh['runqPer']:.1f} us for a CPU; pinned one per CPU: {sp['iops']:.0f} IOPS, waiting "
                     f"{sp['runqPer']:.1f} us, with {sp['cpuPer'] - sh['cpuPer']:+.1f} us of CPU and "
                     f"{sp['rest_us'] - sh['rest_us']:+.1f} us of the rest per read.")
        if {"irq"} <= set(by.index):
            one = by.loc["irq"]
            lines.append(f"- From one job to two (scheduler's choice) the latency per read grows by "
                         f"{sh['lat_us'] - one['lat_us']:+.1f} us: CPU {sh['cpuPer'] - one['cpuPer']:+.1f}, "
                         f"wait for a CPU {sh['runqPer'] - one['runqPer']:+.1f}, the rest "
                         f"{sh['rest_us'] - one['rest_us']:+.1f}. A model fitted on one client sees none "
                         "of the wait; the fio baseline at two jobs carries fio's own, which need not be "
                         "RocksDB's.")
    if not lines:
        lines.append("- Not enough configurations ran to compare (is the interrupt's CPU known?).")
    return "\n".join(lines)


def draw_placement(s: pd.DataFrame):
    """Latency per read per configuration (the `summary` table), stacked: CPU, wait for a CPU, the rest."""
    fig, ax = figures.figure(aspect=0.62)
    y = np.arange(len(s))
    left = np.zeros(len(s))
    for col, label, color in (("cpuPer", "CPU", "#0072b2"), ("runqPer", "wait for a CPU", "#d55e00"),
                              ("rest_us", "device + wake-up", "#999999")):
        v = s[col].clip(lower=0).to_numpy(float)
        ax.barh(y, v, left=left, color=color, label=label, height=0.6)
        left += v
    for i, r in s.reset_index(drop=True).iterrows():
        ax.text(left[i] + 1, i, f"{r['iops'] / 1000:.1f}K IOPS", va="center", fontsize=6)
    ax.set_yticks(y, s["config"])
    ax.invert_yaxis()
    ax.set_xlabel("latency per read (us)")
    ax.set_xlim(0, left.max() * 1.3)
    ax.legend(loc="upper center", bbox_to_anchor=(0.4, -0.22), ncol=3)
    ax.set_title("fio sync qd1, 8 KiB O_DIRECT: where the clients run")
    return fig
