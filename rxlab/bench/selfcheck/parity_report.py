"""The parity matrix's outputs: the printed table, the JSON document, the stored files and the figure."""
from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from rxlab.bench.selfcheck.parity import BASE, KEYS, METRICS, Matrix
from rxlab.bench.selfcheck.parity_rows import COMMON, rows
from rxlab.core import engines, figures

FIGURE = "parity_matrix"
SCALING_FIGURE = "parity_threads"


def backend_of(column: str) -> str:
    """The backend a column measures: `io_uring+best` is io_uring with its best options."""
    return (engines.best(column.removesuffix("+best")) or column) if column.endswith("+best") else column


def _cell(r) -> str:
    if str(r["status"]).startswith("failed"):
        return "FAILED"
    if not np.isfinite(r["ratio"]):
        return "-"
    hw = f"+-{r['half_width']:.1f}%" if np.isfinite(r["half_width"]) else "+-?"
    return f"{r['ratio']:.3f} {hw}{'' if r['resolved'] else ' ?'}"


def options_text(m: Matrix) -> str:
    """RocksDB's options, identical for every engine, stated once; then each row's own."""
    s = m.s
    out = ["db_bench options for every engine: " + " ".join(f"--{k}={v}" for k, v in COMMON.items())
           + f" --num={s.num} (timed rows: --duration={s.duration:g})",
           "  use_direct_reads = use_direct_io_for_flush_and_compaction = the cell's direct; "
           "--sync = the cell's sync"]
    for name in s.workloads:
        r = rows()[name]
        extra = " ".join(f"--{k}={v}" for k, v in r.flags.items())
        out.append(f"  {name}: --benchmarks={','.join(r.chain)} (measured: {r.chain[-1]})"
                   + (" on the shared loaded DB, read-only" if r.reads_loaded else " from an empty DB")
                   + (f" {extra}" if extra else "") + (f" ({r.why})" if r.why else ""))
    if any(t > 1 for t in s.threads):
        out.append(f"  with N > 1 threads, each writer thread of the untimed rows writes --writes=num/N keys "
                   f"(the same {s.num} keys at every thread count)")
    out.append("columns: " + ", ".join(f"{c} ({engines.fs_uri(u) or 'RocksDB own file system'})"
                                       for c, u in s.cols.items()))
    return "\n".join(out)


def text(m: Matrix, table: pd.DataFrame) -> str:
    """The matrix as text: per condition, direct IO, sync and metric, workloads x columns; each cell
    `ratio +-half-width%`, `?` where unresolved; the A/A control last."""
    out = [options_text(m), "",
           f"ratio to {BASE} [95% t-interval half-width], {METRICS['qps']} and {METRICS['cpu_per_op_us']} "
           f"(CPU of every thread; > 1 is more CPU); ? = not resolved to +-{m.s.target:g}%"]
    if table.empty:
        return "\n".join([*out, "(no turns measured)"])
    configs = [c for c in m.s.cols if c != BASE] + ["A/A"]
    width = max(12, *(len(c) for c in configs))
    for (cond, direct, sync), g in table.groupby(["condition", "direct", "sync"], sort=False):
        for metric, name in METRICS.items():
            out.append(f"\n{cond}, direct={'on' if direct else 'off'}, sync={'on' if sync else 'off'}: "
                       f"{name}")
            out.append(f"  {'workload':18} {'t':>2}  " + "  ".join(f"{c[:width]:>{width}}" for c in configs)
                       + "  turns")
            gm = g[g["metric"] == metric]
            for (w, t), cells in gm.groupby(["workload", "threads"], sort=False):
                by = {r["config"]: r for _, r in cells.iterrows()}
                turns = int(cells["turns"].max())
                out.append(f"  {w:18} {t:>2}  " + "  ".join(f"{_cell(by[c]) if c in by else '-':>{width}}"
                                                             for c in configs) + f"  {turns}")
    unresolved = table[~table["resolved"] & (table["config"] != "A/A")]
    out.append(f"\n{len(table[table['config'] != 'A/A']) - len(unresolved)} of "
               f"{len(table[table['config'] != 'A/A'])} cells resolved"
               + (f"; stopped: {m.stopped}" if m.stopped else ""))
    return "\n".join(out)


def document(m: Matrix, table: pd.DataFrame, command: str = "") -> dict:
    """Everything `--json` prints: settings, options, columns, every comparison and the stored files."""
    s = m.s

    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v.item() if isinstance(v, np.generic) else v

    return {
        "command": command,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "settings": {"workloads": list(s.workloads), "threads": list(s.threads),
                     "conditions": list(s.conditions), "direct": list(s.direct), "sync": list(s.sync),
                     "target_pct": s.target, "budget_s": s.budget_s, "num": s.num, "duration_s": s.duration,
                     "min_turns": s.min_turns},
        "options": {**COMMON, "num": s.num},
        "row_options": {w: {"benchmarks": ",".join(rows()[w].chain), **rows()[w].flags} for w in s.workloads},
        "columns": {c: engines.fs_uri(u) for c, u in s.cols.items()},
        "base": BASE,
        "stopped": m.stopped,
        "turns_s": [round(x, 2) for x in m.turn_s],
        "cells": [{k: clean(v) for k, v in r.items()} for r in table.to_dict("records")],
        "files": {k: str(v) for k, v in getattr(m, "files", {}).items()},
    }


def store(m: Matrix, table: pd.DataFrame, command: str = "") -> dict[str, Path]:
    """runs.csv (every run in a cell), warmups.csv (the reading groups' warm-up runs, in no cell),
    cells.csv (every comparison) and parity.json in the matrix's out dir."""
    m.out.mkdir(parents=True, exist_ok=True)
    files = {"runs": m.out / "runs.csv", "cells": m.out / "cells.csv", "json": m.out / "parity.json"}
    pd.DataFrame(m.runs).to_csv(files["runs"], index=False)
    if m.warmups:
        files["warmups"] = m.out / "warmups.csv"
        pd.DataFrame(m.warmups).to_csv(files["warmups"], index=False)
    table.to_csv(files["cells"], index=False)
    m.files = files
    files["json"].write_text(json.dumps(document(m, table, command), indent=1) + "\n")
    return files


def draw(table: pd.DataFrame, title: str = ""):
    """Ratio to default with its 95% interval per cell, one panel per metric; a cell not resolved to
    the target is drawn hollow. `table` is the comparisons (cells.csv)."""
    t = table.copy()  # the A/A control drawn too: what "equal" looks like in the same turns
    t["cell"] = (t["workload"] + " t=" + t["threads"].astype(str) + " " + t["condition"]
                 + np.where(t["direct"].astype(bool), "", " buffered")
                 + np.where(t["sync"].astype(bool), " sync", ""))
    cells = list(dict.fromkeys(t["cell"]))
    configs = list(dict.fromkeys(t["config"]))
    fig, axes = figures.figure("page", aspect=0.35 + 0.06 * len(cells), ncols=len(METRICS), sharey=True,
                               squeeze=False)
    step = 0.8 / max(len(configs), 1)
    for ax, (metric, name) in zip(axes[0], METRICS.items(), strict=True):
        d = t[t["metric"] == metric]
        for j, c in enumerate(configs):
            col = "#4d4d4d" if c == "A/A" else figures.backend_color(backend_of(c))
            every = d[d["config"] == c]
            failed = every["status"].astype(str).str.startswith("failed")
            yf = np.array([cells.index(x) for x in every.loc[failed, "cell"]]) - 0.4 + step * (j + 0.5)
            # a failed cell: an x on the 1.0 line (its ratio, if any turns ran, is not a result)
            ax.scatter(np.ones(len(yf)), yf, marker="x", color=col, s=22, zorder=3)
            dc = every[~failed]
            y = np.array([cells.index(x) for x in dc["cell"]]) - 0.4 + step * (j + 0.5)
            lo = (dc["ratio"] - dc["lo"]).fillna(0).clip(lower=0)
            hi = (dc["hi"] - dc["ratio"]).fillna(0).clip(lower=0)
            ax.errorbar(dc["ratio"], y, xerr=[lo, hi], fmt="none", ecolor=col, elinewidth=1)
            ok = dc["resolved"].astype(bool).to_numpy()
            ax.scatter(dc["ratio"][ok], y[ok], color=col, s=16, zorder=3)
            ax.scatter(dc["ratio"][~ok], y[~ok], facecolors="none", edgecolors=col, s=16, zorder=3)
        ax.axvline(1.0, color="black", lw=0.8)
        ax.set_xlabel(f"{name}: ratio to {BASE}")
        ax.set_yticks(range(len(cells)), cells)
    axes[0][0].set_ylim(len(cells) - 0.5, -0.5)  # the first cell on top
    # The legend keys the colours, filled (a column's marker there once followed whether any of its cells
    # was resolved); the title says what hollow means.
    handles = [Line2D([], [], marker="o", ls="none", ms=4,
                      color="#4d4d4d" if c == "A/A" else figures.backend_color(backend_of(c)))
               for c in configs]
    fig.legend(handles, list(configs), fontsize="x-small", loc="lower center", ncols=min(len(configs), 6),
               frameon=False)
    fig.suptitle(title or "engines / default, 95% intervals; hollow: not resolved to the target; "
                          "x: a run failed",
                 fontsize="small")
    fig.tight_layout(rect=(0, 0.07, 1, 1))  # the legend below the panels
    return fig


def save_figure(table: pd.DataFrame, directory: Path, notes: str = "") -> dict[str, Path]:
    """The figure with its table and sidecar (rxlab.core.figures.save) in `directory`."""
    fig = draw(table)
    cols = [*KEYS, "metric", "config", "ratio", "lo", "hi", "half_width", "resolved", "turns", "status"]
    return figures.save(fig, FIGURE, table=table[cols], directory=directory, notes=notes)


def scaling(runs: pd.DataFrame) -> pd.DataFrame:
    """Per group key and column: throughput's geometric mean over the turns with its 95% t-interval
    (on the log, over turns: `default`'s two runs of a turn averaged first), and the turns."""
    from scipy import stats  # noqa: PLC0415 - only the scaling figure needs it

    if runs.empty:
        return pd.DataFrame(columns=[*KEYS, "config", "qps", "lo", "hi", "turns"])
    r = runs.assign(logq=np.log(runs["qps"]))
    per_turn = r.groupby([*KEYS, "config", "turn"], sort=False)["logq"].mean().reset_index()
    out = []
    for key, d in per_turn.groupby([*KEYS, "config"], sort=False):
        n, m = len(d), d["logq"].mean()
        hw = stats.t.ppf(0.975, n - 1) * d["logq"].std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
        out.append({**dict(zip([*KEYS, "config"], key, strict=True)), "qps": math.exp(m),
                    "lo": math.exp(m - hw), "hi": math.exp(m + hw), "turns": n})
    return pd.DataFrame(out)


def draw_scaling(runs: pd.DataFrame, table: pd.DataFrame, cpus: int | None = None):
    """Throughput against threads, one panel per workload (and condition, direct IO, sync), one line per
    column, each point its 95% interval over turns; a point whose ratio to default is not resolved to the
    target is hollow. `cpus`: the machine's CPUs, said in the title where threads outnumber them."""
    cpus = cpus or os.cpu_count() or 1
    sc = scaling(runs)
    sc["panel"] = (sc["workload"] + np.where(sc["condition"] == "busy", ", busy neighbour", "")
                   + np.where(sc["direct"].astype(bool), "", ", buffered")
                   + np.where(sc["sync"].astype(bool), ", sync", ""))
    panels = list(dict.fromkeys(sc["panel"]))
    q = table[table["metric"] == "qps"] if not table.empty else table
    ncols = min(len(panels), 2)
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = figures.figure("page", aspect=0.42 * nrows, ncols=ncols, nrows=nrows, squeeze=False)
    configs = list(dict.fromkeys(sc["config"]))
    for ax, panel in zip(axes.flat, panels, strict=False):
        d = sc[sc["panel"] == panel]
        for j, c in enumerate(configs):
            dc = d[d["config"] == c].sort_values("threads")
            if dc.empty:
                continue
            col = figures.backend_color(backend_of(c))
            x = dc["threads"].to_numpy() * (1 + 0.03 * (j - (len(configs) - 1) / 2))  # apart, not on top
            ax.plot(x, dc["qps"], color=col, lw=1, label=c)
            err = [(dc["qps"] - dc["lo"]).fillna(0), (dc["hi"] - dc["qps"]).fillna(0)]
            ax.errorbar(x, dc["qps"], yerr=err, fmt="none", ecolor=col, elinewidth=0.8)
            ok = np.ones(len(dc), dtype=bool)
            if c != BASE and not q.empty:
                res = q[(q["config"] == c) & (q["workload"] == dc["workload"].iloc[0])
                        & (q["condition"] == dc["condition"].iloc[0])]
                by_t = dict(zip(res["threads"], res["resolved"].astype(bool), strict=False))
                ok = np.array([by_t.get(t, False) for t in dc["threads"]])
            ax.scatter(x[ok], dc["qps"][ok], color=col, s=14, zorder=3)
            ax.scatter(x[~ok], dc["qps"][~ok], facecolors="white", edgecolors=col, s=14, zorder=3)
        ax.set_xscale("log", base=2)
        ticks = sorted(set(d["threads"]))
        ax.set_xticks(ticks, [str(t) for t in ticks])
        ax.minorticks_off()
        ax.axvline(cpus, color="#999999", lw=0.8, ls=":")
        ax.set_ylim(bottom=0)
        ax.set_title(panel, fontsize="small")
        ax.set_xlabel("threads")
        ax.set_ylabel("ops/s")
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize="x-small", loc="lower center", ncols=min(len(labels), 6),
               frameon=False)
    sliced = (f"\nbeyond {cpus} threads (dotted line) the threads are time-sliced on this machine's "
              f"{cpus} CPUs" if max(sc["threads"]) > cpus else "")
    fig.suptitle("throughput by threads, 95% intervals over turns; hollow: ratio to default not resolved "
                 f"to the target{sliced}", fontsize="small")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def save_scaling_figure(runs: pd.DataFrame, table: pd.DataFrame, directory: Path,
                        notes: str = "") -> dict[str, Path]:
    """The thread-scaling figure with its table (throughput per thread count and column) and sidecar."""
    fig = draw_scaling(runs, table)
    return figures.save(fig, SCALING_FIGURE, table=scaling(runs), directory=directory, notes=notes)
