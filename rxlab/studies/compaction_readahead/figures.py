"""The readahead study's figures (the seed's three overwrite graphs, the hit ratio, the throughput ratios
measured in turns), each from one table.

readahead_throughput_ratio is the comparison: each setting's overwrite
throughput over the base's with its 95% interval over the turns (hollow and
dashed where not resolved to the target), the base's A/A interval as the grey
band behind each. The bar figures show values per setting, not differences:
every table has a row per value drawn, `kind` `median` (a bar: the median
over every run of the turns, as in tables.summary) or `rep` (one run: a
circle; `rep` its turn, `copy` 1 the base's A/A second run), the setting
(label and KiB, in the order drawn), and `seed`, the seed's verdict on that
setting for the figure's metric ("seed: best", "seed: worst" or empty),
written under its tick.
"""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from rxlab.core import figures as style
from rxlab.core import published
from rxlab.core.plots import ratio_plot
from rxlab.core.resolution import AA
from rxlab.core.study import FigureSpec
from rxlab.studies.compaction_readahead.columns import READ_MBPS
from rxlab.studies.compaction_readahead.params import COMPARE, KIB, MIB, size_label
from rxlab.studies.compaction_readahead.result import ReadaheadResult
from rxlab.studies.compaction_readahead.tables import comparison_table, summary

BAR_COLUMNS = ["setting", "readahead_kb", "kind", "rep", "copy", "value", "seed", "backend"]
# the read MiB/s figure's series: column, legend label, colour
READ_SERIES = ((READ_MBPS, "device (diskstats)", style.backend_color("posix")),
               ("own_rmbps", "this process (/proc/self/io)", "#e69f00"),
               ("fs_rmbps", "RocksDB through the file system", "#009e73"))


def seed_marks(metric: str) -> dict:
    """{setting label: 'seed: best' / 'seed: worst'} for one of the seed's graphs (published findings)."""
    p = published.load("readahead_findings")
    p = p[p["metric"] == metric]
    out: dict = {}
    for kind in ("best", "worst"):
        v = str(p[kind].iloc[0]) if len(p) else ""
        m = re.search(r"=(\d+)(KB|MB)", v)
        if m:
            b = int(m.group(1)) * (KIB if m.group(2) == "KB" else MIB)
            out[size_label(b)] = f"seed: {kind}"
    return out


# --------------------------------------------------------------------------- the tables drawn

def _per_setting(result: ReadaheadResult, col: str, metric: str | None) -> pd.DataFrame:
    """`col` per setting: the median (summary's) and each repetition, with the seed's verdict for `metric`."""
    s, f = summary(result), result.frame
    marks = seed_marks(metric) if metric else {}
    backend = str(f["backend"].iloc[0]) if "backend" in f.columns and len(f) else "posix"
    rows = []
    for _, r in s.iterrows():
        setting = r["setting"]
        base = {"setting": setting, "readahead_kb": r["readahead_kb"], "seed": marks.get(setting, ""),
                "backend": backend}
        rows.append({**base, "kind": "median", "rep": None, "copy": None, "value": r[col]})
        reps = f[f["setting"] == setting]
        rows += [{**base, "kind": "rep", "rep": int(rep), "copy": int(copy), "value": float(v)}
                 for rep, copy, v in zip(reps["rep"], reps["copy"], pd.to_numeric(reps[col], errors="coerce"),
                                         strict=True)]
    return pd.DataFrame(rows, columns=BAR_COLUMNS)


def throughput_data(result: ReadaheadResult) -> pd.DataFrame:
    """overwrite QPS per setting."""
    return _per_setting(result, "qps", "throughput")


def throughput_ratio_data(result: ReadaheadResult) -> pd.DataFrame:
    """The comparisons (tables.comparison_table) drawn per contender: its ratio row, then the base's A/A
    row again under the contender's setting (the band behind it), with the seed's verdict."""
    c = comparison_table(result)
    marks = seed_marks("throughput")
    aa = c[c["config"] == AA]
    rows = []
    for _, r in c[c["config"] != AA].iterrows():
        tick = {"setting": r["config"], "seed": marks.get(r["config"], "")}
        rows.append({**r.to_dict(), **tick})
        rows += [{**a.to_dict(), **tick} for _, a in aa.iterrows()]
    return pd.DataFrame(rows, columns=["setting", "seed", *c.columns])


def read_mbps_data(result: ReadaheadResult) -> pd.DataFrame:
    """Read MiB/s per setting (medians) of the device, of this process and of RocksDB through the file
    system: one row per setting and `series` (the column), with its legend `label`."""
    s = summary(result)
    marks = seed_marks("read MB/s (iostat)")
    rows = [{"setting": r["setting"], "readahead_kb": r["readahead_kb"], "series": col, "label": label,
             "value": r[col], "seed": marks.get(r["setting"], "")}
            for _, r in s.iterrows() for col, label, _ in READ_SERIES]
    return pd.DataFrame(rows, columns=["setting", "readahead_kb", "series", "label", "value", "seed"])


def reqsz_data(result: ReadaheadResult) -> pd.DataFrame:
    """Device read request size (reqsz, KiB) per setting, with the device's max_sectors_kb."""
    t = _per_setting(result, "reqsz", "rareq-sz (iostat)")
    t["max_sectors_kb"] = result.max_sectors_kb
    return t


def hit_ratio_data(result: ReadaheadResult) -> pd.DataFrame:
    """The page-cache hit ratio per setting, with the step's memory limit (MiB, 0: none)."""
    t = _per_setting(result, "cache.hit", None)
    t["memory_limit_mib"] = result.memory_limit / MIB
    return t


# --------------------------------------------------------------------------- drawing

def _settings(t: pd.DataFrame) -> pd.DataFrame:
    """One row per setting in the order drawn: setting, readahead_kb, seed."""
    return t.drop_duplicates("setting")[["setting", "readahead_kb", "seed"]].reset_index(drop=True)


def _ticks(ax, settings: pd.DataFrame) -> None:
    labels = [f"{r.setting}\n({r.seed})" if isinstance(r.seed, str) and r.seed else str(r.setting)
              for r in settings.itertuples()]
    ax.set_xticks(np.arange(len(settings)), labels)
    ax.set_xlabel("compaction_readahead_size")


def _bars(t: pd.DataFrame, ylabel: str, *, ref_lines=()):
    """Bars of the per-setting medians, circles for the repetitions (when more than one); the seed's
    verdicts under the ticks; `ref_lines` (y, label, line style) across."""
    settings = _settings(t)
    med = t[t["kind"] == "median"].set_index("setting").reindex(settings["setting"])
    fig, ax = style.figure(aspect=0.72)
    ax.bar(np.arange(len(settings)), med["value"], 0.6, color=style.backend_color(str(t["backend"].iloc[0])),
           label="median here")
    for i, setting in enumerate(settings["setting"]):
        pts = t[(t["kind"] == "rep") & (t["setting"] == setting)]["value"].dropna()
        if len(pts) > 1:
            ax.plot(np.full(len(pts), i), pts, "o", ms=3, color="#222222", mfc="none")
    for y, label, ls in ref_lines:
        ax.axhline(y, color="#555555", lw=0.8, ls=ls)
        ax.annotate(label, (-0.45, y), ha="left", va="bottom", fontsize=6, color="#333333")
    _ticks(ax, settings)
    ax.set_ylabel(ylabel)
    return fig, ax


def draw_throughput(t: pd.DataFrame):
    """overwrite QPS per setting (bars: medians, circles: runs), the seed's best and worst marked. The
    differences are readahead_throughput_ratio's, with their intervals."""
    fig, ax = _bars(t, "overwrite operations per second")
    ax.set_title("throughput of overwrite (compaction-bound)\nvalues; differences: the ratio figure")
    return fig


def draw_throughput_ratio(t: pd.DataFrame):
    """Each setting's overwrite throughput over the base's (95% interval over turns; hollow and dashed:
    not resolved to the target), the base's A/A interval as the grey band behind each; the seed's verdict
    under the tick."""
    t = t.assign(setting=[f"{s}\n({m})" if isinstance(m, str) and m else str(s)
                          for s, m in zip(t["setting"], t["seed"], strict=True)])
    base = ", ".join(dict.fromkeys(t["base"].astype(str))) or "the base"
    t = t.assign(series=f"ratio to {base} (95% interval)")     # one marker per setting: the legend names it
    fig = ratio_plot(t, "setting", hue="series", ylabel=f"{COMPARE.label} ratio to {base}")
    fig.axes[0].set_xlabel("compaction_readahead_size")
    return fig


def draw_read_mbps(t: pd.DataFrame):
    """Device read MiB/s per setting (diskstats) with the process's own reads and RocksDB's reads beside."""
    settings = _settings(t)
    series = list(dict.fromkeys(t["series"]))
    labels = t.drop_duplicates("series").set_index("series")["label"]
    colors = {col: color for col, _, color in READ_SERIES}
    fig, ax = style.figure(aspect=0.72)
    x = np.arange(len(settings))
    w = 0.8 / max(len(series), 1)
    for i, col in enumerate(series):
        v = t[t["series"] == col].set_index("setting")["value"].reindex(settings["setting"])
        ax.bar(x - 0.4 + w * (i + 0.5), v, w * 0.92, color=colors.get(col, "#999999"), label=labels[col])
    top = max(float(np.nanmax(t["value"].to_numpy(float))) * 1.3, 1.0) if t["value"].notna().any() else 1.0
    ax.set_ylim(0, top)   # room above the bars for the legend
    _ticks(ax, settings)
    ax.set_ylabel("read MiB/s")
    ax.set_title("reads during overwrite")
    ax.legend(loc="upper left", fontsize=6)
    return fig


def draw_reqsz(t: pd.DataFrame):
    """Device read request size (reqsz, KiB) per setting, log scale, beside the setting and max_sectors_kb."""
    msk = pd.to_numeric(t["max_sectors_kb"], errors="coerce").dropna()
    msk = int(msk.iloc[0]) if len(msk) else None
    refs = [(msk, f"max_sectors_kb = {msk}", "--")] if msk else []
    fig, ax = _bars(t, "average read request size, reqsz (KiB)", ref_lines=refs)
    settings = _settings(t)
    ra = settings["readahead_kb"].where(settings["readahead_kb"] > 0)
    ax.plot(np.arange(len(settings)), ra, "_", ms=18, mew=1.5, color="#d55e00",
            label="compaction_readahead_size")
    ax.set_yscale("log", base=2)
    vals = t["value"].dropna()
    lo = max(1.0, float(vals.min()) / 2) if len(vals) else 1.0
    top = [msk or 0, ra.max() if ra.notna().any() else 0, vals.max() if len(vals) else 1]
    ax.set_ylim(lo, max(float(np.nanmax(top)), 8.0) * 2)
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.32), ncol=2, fontsize=6)  # below: clear of the data
    ax.set_title("device read size (iostat's rareq-sz)")
    return fig


def draw_hit_ratio(t: pd.DataFrame):
    """Page-cache hit ratio of RocksDB's reads per setting (1: all from memory, 0: all from the device)."""
    fig, ax = _bars(t, "page-cache hit ratio, cache.hit")
    ax.axhline(0, color="#555555", lw=0.6)
    lo = float(np.nanmin([0.0, *t["value"].dropna()]))
    ax.set_ylim(min(lo * 1.1, 0), 1.05)
    lim = float(t["memory_limit_mib"].iloc[0]) if len(t) else 0.0
    ax.set_title("hit ratio of RocksDB's reads\n"
                 + (f"(memory limit {lim:.0f} MiB)" if lim else "(no memory limit)"))
    return fig


FIGURES = {
    "readahead_throughput_ratio": FigureSpec(throughput_ratio_data, draw_throughput_ratio),
    "readahead_throughput": FigureSpec(throughput_data, draw_throughput),
    "readahead_read_mbps": FigureSpec(read_mbps_data, draw_read_mbps),
    "readahead_reqsz": FigureSpec(reqsz_data, draw_reqsz),
    "readahead_hit_ratio": FigureSpec(hit_ratio_data, draw_hit_ratio),
}
