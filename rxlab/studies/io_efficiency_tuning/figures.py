"""The tuning study's figures, each drawn from one tidy table alone.

ioeff_tuning: io.eff per configuration, one row per value drawn, `kind`
saying what it is: `median` (a bar), `rep` (one run: a dot), `target`
(the goal set for rxlab: a dashed line) and `published` (the seed's io.eff at
one user for this DB's case, readrandom2: a dotted line). `vs_seed` says
whether a configuration's io.eff ratio to the seed's setting was resolved in
the turns (`base` for the seed's own): an unresolved one is a hollow bar, its
difference from the seed's not to be read.

ioeff_tuning_ratio: the comparisons themselves (tables.comparison_table),
each configuration's io.eff over the seed's with its 95% interval over the
turns, drawn by rxlab.core.plots.ratio_plot: hollow with a dashed interval
when not resolved to the target, the seed's A/A interval as the grey band
beside each (its row repeated per configuration).

ioeff_tuning_latency: where a query's time goes per configuration, one row
per (configuration, component): the medians of user CPU, system CPU and the
rest of the measured latency (device and waiting) stacked, the model's
predicted latency (a tick) and each run's measured latency (dots).
Configurations appear in the tables in the order they are drawn, top down.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib import pyplot as plt

from rxlab.core import figures as style
from rxlab.core import published
from rxlab.core.plots import ratio_plot
from rxlab.core.resolution import AA
from rxlab.core.study import FigureSpec
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS, short_label
from rxlab.studies.io_efficiency_tuning.params import BASE, SEED_FILE, SEED_TEST, TARGET
from rxlab.studies.io_efficiency_tuning.result import TuningResult
from rxlab.studies.io_efficiency_tuning.tables import comparison_table, efficiency_rows, predicted_rows

__all__ = ["FIGURES", "draw_ioeff", "draw_latency", "draw_ratio", "ioeff_data", "latency_data", "ratio_data"]

IOEFF_COLUMNS = ["config", "label", "rung", "busy_polls", "vs_seed", "kind", "rep", "io.eff"]
RATIO_COLUMNS = ["config", "label", "rung", "metric", "base", "comparison", "ratio", "lo", "hi", "half_width",
                 "resolved", "turns", "status"]
LATENCY_COLUMNS = ["config", "label", "kind", "rep", "component", "us"]
STACK = ("user CPU", "system CPU", "device and waiting")


def _config_keys(c: str) -> dict:
    cfg = CONFIGS[c]
    return {"config": c, "label": short_label(c), "rung": "ladder" if cfg.on_ladder else "side",
            "busy_polls": cfg.busy_polls}


def seed_ioeff() -> float:
    """The seed's io.eff at one user for readrandom2, the case this study's DB is."""
    p = published.load("ioeff_efficiency")
    sel = p[(p["source"] == SEED_FILE) & (p["users"] == 1) & (p["test"] == SEED_TEST)]
    return float(sel["io.eff"].iloc[0])


def _vs_seed(result: TuningResult) -> dict[str, str]:
    """Per configuration: `resolved` or `unresolved` (its io.eff ratio to the seed's in the turns), `base`
    for the seed's setting."""
    c = comparison_table(result)
    c = c[c["config"] != AA]
    return {BASE: "base", **{r.config: "resolved" if r.resolved else "unresolved" for r in c.itertuples()}}


def ioeff_data(result: TuningResult) -> pd.DataFrame:
    """io.eff per configuration (medians and each run), whether its ratio to the seed's is resolved, the
    target and the seed's number."""
    r = efficiency_rows(result)
    vs = _vs_seed(result)
    rows = []
    for c in (c for c in CONFIGS if c in set(r["config"])):
        g = r[r["config"] == c]
        keys = {**_config_keys(c), "vs_seed": vs.get(c, "unresolved")}
        rows.append({**keys, "kind": "median", "rep": None, "io.eff": float(g["io.eff"].median())})
        rows += [{**keys, "kind": "rep", "rep": int(rep), "io.eff": float(v)}
                 for rep, v in zip(g["rep"], g["io.eff"], strict=True)]
    rows.append({"config": "", "label": f"target {TARGET:.2f}", "kind": "target", "io.eff": TARGET})
    v = seed_ioeff()
    rows.append({"config": "", "label": f"seed, 1 user, {SEED_TEST} ({v:g})", "kind": "published",
                 "io.eff": v})
    return pd.DataFrame(rows, columns=IOEFF_COLUMNS)


def latency_data(result: TuningResult) -> pd.DataFrame:
    """Per configuration the model describes (busy polling left out: tables.model_rows): the medians
    of user and system CPU and of the rest of the latency, the model's latency, each run's."""
    r = predicted_rows(result)
    rows = []
    for c in (c for c in CONFIGS if c in set(r["config"])):
        g = r[r["config"] == c]
        keys = {"config": c, "label": short_label(c)}
        m = g[["usPer", "syPer", "lat_meas_us", "lat_pred_us"]].median()
        parts = {"user CPU": m["usPer"], "system CPU": m["syPer"],
                 "device and waiting": m["lat_meas_us"] - m["usPer"] - m["syPer"],
                 "measured latency": m["lat_meas_us"], "model's latency": m["lat_pred_us"]}
        rows += [{**keys, "kind": "median", "rep": None, "component": k, "us": float(v)}
                 for k, v in parts.items()]
        rows += [{**keys, "kind": "rep", "rep": int(rep), "component": "measured latency", "us": float(v)}
                 for rep, v in zip(g["rep"], g["lat_meas_us"], strict=True)]
    return pd.DataFrame(rows, columns=LATENCY_COLUMNS)


def ratio_data(result: TuningResult) -> pd.DataFrame:
    """Each configuration's io.eff over the seed's with its interval (tables.comparison_table), the ladder's
    order then the side ones, each followed by the seed's A/A row under its label: the band beside it."""
    c = comparison_table(result)
    aa = c[c["config"] == AA].to_dict("records")
    by_config = {r["config"]: r for r in c[c["config"] != AA].to_dict("records")}
    rows = []
    for name in (n for n in CONFIGS if n in by_config):
        r = by_config[name]
        keys = {"label": short_label(name), "rung": _config_keys(name)["rung"],
                "metric": f"io.eff / {r['base']}"}
        rows += [{**r, **keys}] + [{**a, **keys} for a in aa]
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)


def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def draw_ioeff(t: pd.DataFrame):
    """io.eff per configuration: medians (bars; hollow where the ratio to the seed's setting is not
    resolved) and each run (dots), the target and the seed's."""
    med = t[t["kind"] == "median"]
    order = _order(med["config"])
    med = med.set_index("config").loc[order]
    fig, ax = style.figure("column", aspect=0.9)
    y = np.arange(len(order))[::-1]
    colors = [style.CYCLE[0] if r == "ladder" else style.CYCLE[7] for r in med["rung"]]
    for yi, v, c, vs in zip(y, med["io.eff"], colors, med["vs_seed"], strict=True):
        hollow = vs == "unresolved"
        ax.barh(yi, v, color="none" if hollow else c, edgecolor=c, linestyle="--" if hollow else "-",
                linewidth=0.8, alpha=0.75, height=0.65)
    reps = t[t["kind"] == "rep"]
    for yi, c in zip(y, order, strict=True):
        v = reps.loc[reps["config"] == c, "io.eff"].to_numpy()
        ax.plot(v, np.full(len(v), yi), "o", ms=2.5, color="black", zorder=3)
    for kind, ls, color in (("target", "--", style.CYCLE[5]), ("published", ":", style.CYCLE[2])):
        sel = t[t["kind"] == kind]
        for v, label in zip(sel["io.eff"], sel["label"], strict=True):
            ax.axvline(v, ls=ls, lw=0.8, color=color, label=label)
    ax.set_yticks(y, [lab + (" *" if busy else "") for lab, busy in zip(med["label"], med["busy_polls"],
                                                                         strict=True)])
    drawn = t["io.eff"].to_numpy(dtype=float)
    ax.set_xlim(max(0.0, float(np.nanmin(drawn)) - 0.1), max(1.0, float(np.nanmax(drawn)) + 0.02))
    ax.set_xlabel("io.eff (RocksDB IOPS / fio sync qd1 IOPS)")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize="small", frameon=False)
    ax.set_title("readrandom after compaction, 1 client\nblue: ladder, grey: side, * busy-polls,\n"
                 "hollow: ratio to seed not resolved", fontsize="small")
    return fig


def draw_latency(t: pd.DataFrame):
    """Where a query's time goes per configuration: user CPU, system CPU and the rest (device and
    waiting), measured, with the model's predicted latency as a tick and each run as a dot."""
    med = t[t["kind"] == "median"].pivot_table(index="config", columns="component", values="us",
                                                  sort=False)
    order = _order(t["config"])
    med = med.reindex(order)
    labels = t.drop_duplicates("config").set_index("config").loc[order, "label"]
    fig, ax = style.figure("column", aspect=0.9)
    y = np.arange(len(order))[::-1]
    left = np.zeros(len(order))
    for part, color, alpha in zip(STACK, (style.CYCLE[0], style.CYCLE[1], style.CYCLE[4]), (1.0, 1.0, 0.5),
                                  strict=True):
        ax.barh(y, med[part], left=left, color=color, alpha=alpha, height=0.65, label=part)
        left = left + med[part].to_numpy()
    ax.plot(med["model's latency"], y, "|", ms=9, mew=1.5, color="black", label="model's latency")
    reps = t[t["kind"] == "rep"]
    for yi, c in zip(y, order, strict=True):
        v = reps.loc[reps["config"] == c, "us"].to_numpy()
        ax.plot(v, np.full(len(v), yi), "o", ms=2, color="#222222", alpha=0.7, zorder=3)
    ax.set_yticks(y, labels.tolist())
    ax.set_xlabel("us per query (1 client)")
    ax.set_title("measured: medians (bars), runs (dots); busy-polling\nconfigurations left out "
                 "(the model does not describe them)", fontsize="small")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, fontsize="small", frameon=False)
    return fig


def draw_ratio(t: pd.DataFrame):
    """io.eff over the seed's setting per configuration (95% interval over the turns; hollow and dashed:
    not resolved to the target), the seed's A/A interval as the grey band; the side configurations after
    the dotted line."""
    base = ", ".join(dict.fromkeys(t["base"].astype(str))) or BASE
    fig = ratio_plot(t, "label", hue="metric", ylabel=f"io.eff ratio to {base} (95% interval)", width="page")
    ax = fig.axes[0]
    plt.setp(ax.get_xticklabels(), rotation=35, ha="right", rotation_mode="anchor")
    rungs = t.drop_duplicates("label")["rung"].tolist()
    if "side" in rungs and "ladder" in rungs:
        ax.axvline(rungs.index("side") - 0.5, ls=":", lw=0.8, color="#777777")
    return fig


FIGURES = {
    "ioeff_tuning": FigureSpec(ioeff_data, draw_ioeff),
    "ioeff_tuning_ratio": FigureSpec(ratio_data, draw_ratio),
    "ioeff_tuning_latency": FigureSpec(latency_data, draw_latency),
}
