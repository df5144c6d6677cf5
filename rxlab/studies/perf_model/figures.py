"""Notebook 20's figures, each drawn from one table: the models' predictions against the measurements,
their errors, where the clients run, the disk under the vCPUs' load and the seed's two sensitivity bullets.

The tables are tidy, one row per point or bar drawn: `source` (published:
the seed's tables, local: this machine) and `model` (seed, fitted, ...) say
how a row is drawn; the sensitivity tables stack the model's curves
(`layer` curve) and the measured points (`layer` point).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import ticker as mticker

from rxlab.core import figures
from rxlab.core.study import FigureSpec
from rxlab.studies.perf_model import device_load, placement
from rxlab.studies.perf_model.analysis import config_errors
from rxlab.studies.perf_model.result import PerfModelResult

SEED_COLOR, FITTED_COLOR = "#d55e00", "#0072b2"
# the colour of each model's error in model_error
ERROR_COLORS = {"seed": SEED_COLOR, "fitted": FITTED_COLOR, "fitted, held out": "#56b4e9",
                "fitted, iostat device, held out": "#009e73"}


# --------------------------------------------------------------------------- the tables drawn

def predicted_data(result: PerfModelResult) -> pd.DataFrame:
    """Per RocksDB row of each source: measured IOPS and both models' predictions."""
    t = result.comparison.table
    return t[["source", "test", "threads", "block_align", "delay_us", "iops", "seed_iops_pred",
              "fitted_iops_pred"]].reset_index(drop=True)


def error_data(result: PerfModelResult) -> pd.DataFrame:
    """Error % of each model, one row per point: in sample on each source, then held out per row and
    on each configuration's median over its repetitions (`category`: the x-axis group, in order)."""
    comp, heldout_rows = result.comparison, result.held_out[0]
    parts = []

    def add(category: str, name: str, values) -> None:
        parts.append(pd.DataFrame({"category": category, "model": name,
                                   "err_pct": pd.to_numeric(pd.Series(values)).to_numpy(float)}))

    for src in ("published", "local"):
        t = comp.table[comp.table["source"] == src]
        where = "seed" if src == "published" else "local"
        add(f"{where}\nseed's model", "seed", t["seed_err_pct"])
        add(f"{where}\nfitted", "fitted", t["fitted_err_pct"])
    if len(heldout_rows):
        device = (heldout_rows["device"] if "device" in heldout_rows.columns
                  else pd.Series("curve", heldout_rows.index))
        curve = heldout_rows[device == "curve"]
        add("held out\nfitted\nper row", "fitted, held out", curve["err_iops_pct"])
        per_config = pd.concat([config_errors(g) for _, g in curve.groupby("split", sort=False)])
        add("held out\nfitted\nmedians", "fitted, held out", per_config["fitted_err_pct"])
        add("held out\nseed's\nmedians", "seed", per_config["seed_err_pct"])
        iostat = heldout_rows[device == "iostat"]
        if len(iostat):
            per_config = pd.concat([config_errors(g) for _, g in iostat.groupby("split", sort=False)])
            add("held out\niostat device\nmedians", "fitted, iostat device, held out",
                per_config["fitted_err_pct"])
    return pd.concat(parts, ignore_index=True)


def placement_data(result: PerfModelResult) -> pd.DataFrame:
    """placement.summary: medians per configuration of where fio's jobs ran."""
    return placement.summary(result.placement_runs)


def device_load_data(result: PerfModelResult) -> pd.DataFrame:
    """device_load.summary: medians per think time and neighbour."""
    return device_load.summary(result.device_load_runs)


def _sensitivity(result: PerfModelResult, panel: str) -> pd.DataFrame:
    curves, points = result.sensitivity
    return pd.concat([curves[curves["panel"] == panel].assign(layer="curve"),
                      points[points["panel"] == panel].assign(layer="point")], ignore_index=True)


def sensitivity_device_data(result: PerfModelResult) -> pd.DataFrame:
    """io.eff against device latency: the models' curves per RocksDB CPU and the measured points."""
    return _sensitivity(result, "device")


def sensitivity_cpu_data(result: PerfModelResult) -> pd.DataFrame:
    """io.eff against RocksDB CPU per query: the models' curves per device latency and the measured points."""
    return _sensitivity(result, "cpu")


# --------------------------------------------------------------------------- drawing

def draw_predicted_vs_measured(t: pd.DataFrame):
    """Predicted against measured IOPS, the seed's model and the fitted one, seed's data and local."""
    fig, axes = figures.figure(width="page", aspect=0.36, ncols=2)
    for ax, src in zip(axes, ("published", "local"), strict=True):
        s = t[t["source"] == src]
        vals = s[["iops", "seed_iops_pred", "fitted_iops_pred"]].to_numpy(float)
        lo, hi = float(np.nanmin(vals)) * 0.9, float(np.nanmax(vals)) * 1.1
        xs = np.array([lo, hi])
        ax.fill_between(xs, xs * 0.97, xs * 1.03, color="#dddddd", lw=0, label="within 3%")
        ax.plot(xs, xs, color="#555555", lw=0.6)
        ax.plot(s["iops"], s["seed_iops_pred"], "x", color=SEED_COLOR, label="seed's model")
        ax.plot(s["iops"], s["fitted_iops_pred"], "o", mfc="none", color=FITTED_COLOR, label="fitted model")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        thousands = mticker.FuncFormatter(lambda v, _: f"{v / 1000:g}k")
        ax.xaxis.set_major_formatter(thousands)
        ax.yaxis.set_major_formatter(thousands)
        ax.set_xlabel("measured IOPS")
        ax.set_title("the seed's tables" if src == "published" else "this machine")
    axes[0].set_ylabel("predicted IOPS")  # both panels: the right one's label ran into the left's ticks
    axes[0].legend(loc="upper left")
    return fig


def draw_model_error(t: pd.DataFrame):
    """Error % of each model per point (dots) and its median (bar), per category; grey: within 3%."""
    cats = list(dict.fromkeys(t["category"]))
    fig, ax = figures.figure(width="page", aspect=0.32)
    rng = np.random.default_rng(0)   # the same jitter every time: a redraw gives the same figure
    for i, cat in enumerate(cats):
        g = t[t["category"] == cat]
        v = pd.to_numeric(g["err_pct"]).to_numpy(float)
        ax.plot(i + rng.uniform(-0.15, 0.15, v.size), v, "o", ms=3, color=ERROR_COLORS[g["model"].iloc[0]],
                alpha=0.8)
        if v.size:
            ax.plot([i - 0.25, i + 0.25], [np.nanmedian(v)] * 2, color="#222222", lw=1.2)
    ax.axhspan(-3, 3, color="#dddddd", zorder=0)
    ax.axhline(0, color="#555555", lw=0.6)
    ax.set_xticks(range(len(cats)), cats)
    ax.set_ylabel("predicted / measured IOPS - 1 (%)")
    ax.set_title("model error (grey: within 3%; bar: median)")
    return fig


def _sensitivity_axes(t: pd.DataFrame, *, x_col: str, line_key: str, xlabel: str, fmt: str):
    fig, ax = figures.figure(aspect=0.8)
    c = t[t["layer"] == "curve"]
    colors = figures.CYCLE
    for i, (v, g) in enumerate(c.groupby(line_key)):
        for name, ls in (("seed", "--"), ("fitted", "-")):
            gg = g[g["model"] == name].sort_values(x_col)
            # a fitted wait below zero can make the latency vanish at the edge of the grid: not a prediction
            gg = gg[(gg["lat_us"] > 0) & gg["io.eff"].between(0, 1.5)]
            if len(gg):
                ax.plot(gg[x_col], gg["io.eff"], ls, color=colors[i % len(colors)],
                        label=f"{name}, {fmt.format(v)}")
    p = t[t["layer"] == "point"]
    markers = {"readrandom": "o", "readrandom2": "s", "readrandom3": "^"}
    for (src, test), g in p.groupby(["source", "test"]):
        ax.plot(g["x"], g["y"], markers.get(test, "o"), ms=4,
                color="#000000" if src == "published" else SEED_COLOR,
                mfc="none" if src == "published" else None,
                label=f"{'seed' if src == 'published' else 'here'}: {test}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("io.eff")
    top = float(pd.to_numeric(p["y"]).max()) if len(p) else 1.0
    ax.set_ylim(0, max(1.02, top * 1.05))  # a measured io.eff above 1 is shown, not clipped
    ax.legend(fontsize=5.5, ncols=2, loc="lower right")
    return fig, ax


def draw_sensitivity_device(t: pd.DataFrame):
    """io.eff against device latency: model lines per RocksDB CPU, measured points (delay_us), the seed's."""
    fig, ax = _sensitivity_axes(t, x_col="device_latency_us", line_key="cpu_per_query_us",
                                xlabel="device latency per read (us)", fmt="{:.1f} us CPU")
    ax.set_title("io.eff rises with device latency")
    return fig


def draw_sensitivity_cpu(t: pd.DataFrame):
    """io.eff against RocksDB CPU per query: model lines per device latency, measured tests, the seed's."""
    fig, ax = _sensitivity_axes(t, x_col="cpu_per_query_us", line_key="device_latency_us",
                                xlabel="RocksDB CPU per query, cpu.inc (us)", fmt="device {:.0f} us")
    ax.set_title("io.eff falls with RocksDB CPU")
    return fig


FIGURES = {
    "model_predicted_vs_measured": FigureSpec(predicted_data, draw_predicted_vs_measured),
    "model_error": FigureSpec(error_data, draw_model_error),
    "model_client_placement": FigureSpec(
        placement_data, placement.draw_placement,
        notes="local runs only: the seed's fio baseline (sync, qd1, at 1 and more jobs) by where its jobs "
              "run"),
    "model_device_load": FigureSpec(
        device_load_data, device_load.draw_device_load,
        notes="local runs only: fio sync qd1 on the interrupt's CPU, by think time and the other CPU's load"),
    "model_sensitivity_device": FigureSpec(sensitivity_device_data, draw_sensitivity_device),
    "model_sensitivity_cpu": FigureSpec(sensitivity_cpu_data, draw_sensitivity_cpu),
}
