"""Notebook 10's figures (QPS, io.eff, block_align's effect and the device read size), each from one table.

The comparisons, io.eff and block_align's effect, are ratios with their 95%
intervals over the turns (rxlab.core.plots.ratio_plot): their tables are
the study's comparison rows (tables.io_eff_comparisons,
tables.block_align_comparisons) with `panel` (client count, and delay when
there is one) and `seed` (the seed's published ratio, a diamond beside).
QPS and the device read size are absolute values, taken from the same turns:
their tables are long and tidy, one row per value drawn, in the order
drawn. `series` names a bar's series (its legend entry), `source` is local
or published, `kind` says what the row is: `median` (a bar: the median over
every run of the turns), `rep` (one run: a dot) or `published` (the seed's
number: a bar of its own series). `backend`, `users` and `block_align` say
how a series is coloured and hatched.
"""
from __future__ import annotations

import matplotlib.colors as mc
import numpy as np
import pandas as pd

from rxlab.core import figures as style
from rxlab.core import published
from rxlab.core.plots import ratio_plot
from rxlab.core.study import FigureSpec
from rxlab.studies.io_efficiency.params import BLOCK_BYTES, SEED_TESTS
from rxlab.studies.io_efficiency.result import IoEfficiencyResult
from rxlab.studies.io_efficiency.tables import (
    block_align_comparisons,
    io_eff_comparisons,
    main_block_align,
    published_users,
    seed_rows,
    seed_tables,
    users_label,
)

BAR_COLUMNS = ["series", "source", "backend", "users", "block_align", "test", "kind", "rep", "value"]
PUBLISHED_COLORS = ("#000000", "#8c8c8c")
OFF_HATCH = "///"   # block_align off, in the reqsz figure
SEED_LABEL = "seed (published)"


# --------------------------------------------------------------------------- the tables drawn

def _values(base: dict, table: pd.DataFrame, col: str, kind: str) -> list[dict]:
    """One row per seed test of `table` (a seed table's local or published part)."""
    by = dict(zip(table["test"], pd.to_numeric(table[col]), strict=False))
    return [{**base, "test": t, "kind": kind, "rep": None, "value": by[t]} for t in SEED_TESTS if t in by]


def _reps(base: dict, rows: pd.DataFrame, col: str) -> list[dict]:
    """One row per repetition and seed test (the dots)."""
    return [{**base, "test": r["test"], "kind": "rep", "rep": int(r["rep"]), "value": float(r[col])}
            for _, r in rows.sort_values(["test", "rep"]).iterrows()]


def _by_users(result: IoEfficiencyResult, prefix: str, col: str) -> pd.DataFrame:
    """Per client count: the local medians and repetitions of the main block_align setting, then the
    seed's tables beside them (its 1-user and 6-user tables)."""
    tables, rows, main = seed_tables(result), seed_rows(result), main_block_align(result)
    out, pubs = [], {}
    for t in result.threads:
        tab = tables[f"{prefix} {users_label(t)}"]
        base = {"series": f"{result.backend}, {users_label(t)}", "source": "local", "backend": result.backend,
                "users": t, "block_align": main}
        out += _values(base, tab[tab["source"] == "local"], col, "median")
        out += _reps(base, rows[(rows["threads"] == t) & (rows["block_align"] == main)], col)
        pub = tab[tab["source"] == "published"]
        pubs[int(pub["users"].iloc[0])] = pub
    for u, pub in sorted(pubs.items()):
        base = {"series": f"seed, {users_label(u)}", "source": "published", "backend": "default", "users": u,
                "block_align": True}
        out += _values(base, pub, col, "published")
    return pd.DataFrame(out, columns=BAR_COLUMNS)


def qps_data(result: IoEfficiencyResult) -> pd.DataFrame:
    """QPS per test and client count, here (medians and repetitions) and in the seed."""
    return _by_users(result, "db_bench", "qps")


def _effect(result: IoEfficiencyResult) -> pd.DataFrame:
    tables = seed_tables(result)
    if "block_align effect" not in tables:
        raise ValueError("the study ran one block_align setting: run block_align=[True, False]")
    return tables["block_align effect"]


def _panel(threads, delay_us) -> str:
    """A ratio figure's panel: the client count, and the delay where there is one."""
    return users_label(threads) + (f", delay {int(delay_us)} us" if int(delay_us) else "")


def _ratio_rows(c: pd.DataFrame, seed: dict) -> pd.DataFrame:
    """Comparison rows with their panel and the seed's ratio for that panel and test (`seed`: a function
    of (threads, test), NaN where the seed has none)."""
    return c.assign(panel=[_panel(t, d) for t, d in zip(c["threads"], c["delay_us"], strict=True)],
                    seed=[seed(int(t), x) for t, x in zip(c["threads"], c["test"], strict=True)])


def ioeff_data(result: IoEfficiencyResult) -> pd.DataFrame:
    """io.eff per seed test, client count and block_align setting: device read IOPS over fio's of the
    same turn, with the 95% interval over the turns and the main setting's A/A row; `seed` the seed's
    io.eff (block_align on; its 1-user table beside one client, its 6-user table beside more)."""
    pub = published.load("ioeff_efficiency")
    by = {(int(u), t): float(v) for u, t, v in zip(pub["users"], pub["test"], pub["io.eff"], strict=True)}
    return _ratio_rows(io_eff_comparisons(result),
                       lambda threads, test: by.get((published_users(threads), test), np.nan))


def block_align_data(result: IoEfficiencyResult) -> pd.DataFrame:
    """QPS of each block_align setting over the main one's (on) per seed test and client count, with the
    95% interval over the turns and the main setting's A/A row; `seed` the seed's QPS without block_align
    over its QPS with it (its block_align tables, whose users it does not state)."""
    if len(result.block_align) < 2:
        raise ValueError("the study ran one block_align setting: run block_align=[True, False]")
    pub = published.load("ioeff_db_bench")
    qps = {(tab, t): float(v) for tab, t, v in zip(pub["table"], pub["test"], pub["qps"], strict=True)}
    off_on = {t: qps[("block_align disabled", t)] / qps[("block_align enabled", t)] for t in SEED_TESTS}
    return _ratio_rows(block_align_comparisons(result), lambda threads, test: off_on.get(test, np.nan))


def reqsz_data(result: IoEfficiencyResult) -> pd.DataFrame:
    """Device read size (KiB) per test with block_align on and off at the smallest client count, here
    (medians and repetitions) and in the seed."""
    eff = _effect(result)
    t0 = min(result.threads)
    rows = seed_rows(result)
    rows = rows[rows["threads"] == t0]
    out = []
    for source, who in (("local", result.backend), ("published", "seed")):
        part = eff[eff["source"] == source]
        for ba, col in ((True, "reqsz_on"), (False, "reqsz_off")):
            base = {"series": f"{who}, block_align {'on' if ba else 'off'}", "source": source,
                    "backend": result.backend if source == "local" else "default",
                    "users": t0 if source == "local" else np.nan, "block_align": ba}
            out += _values(base, part, col, "median" if source == "local" else "published")
            if source == "local":
                out += _reps(base, rows[rows["block_align"] == ba], "reqsz")
    return pd.DataFrame(out, columns=BAR_COLUMNS)


# --------------------------------------------------------------------------- drawing

def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _lighter(backend: str, i: int) -> tuple:
    """The backend's colour, lighter for each further client count."""
    rgb = np.array(mc.to_rgb(style.backend_color(backend)))
    return tuple(rgb + (1 - rgb) * min(0.55 * i, 0.8))


def _is_off(block_align) -> bool:
    """block_align False, as written or read back from a CSV."""
    return str(block_align).strip().lower() in ("false", "0", "0.0")


def _bars(ax, t: pd.DataFrame, ylabel: str, colors: dict, hatches: dict | None = None) -> None:
    """Grouped bars: one group per test, one bar per series (colour and hatch by series), dots for the
    repetitions where there are several."""
    tests, series = _order(t["test"]), _order(t["series"])
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(tests))
    for i, s in enumerate(series):
        rows = t[t["series"] == s]
        pos = x - 0.4 + width * (i + 0.5)
        bars = rows[rows["kind"] != "rep"].set_index("test")["value"]
        hatch = (hatches or {}).get(s)
        ax.bar(pos, [bars.get(test, np.nan) for test in tests], width * 0.92, color=colors[s], label=s,
               hatch=hatch, edgecolor="#333333" if hatch else "white", linewidth=0.4)
        reps = rows[rows["kind"] == "rep"]
        for j, test in enumerate(tests):
            pts = pd.to_numeric(reps.loc[reps["test"] == test, "value"])
            if len(pts) > 1:
                ax.plot([pos[j]] * len(pts), pts, "o", ms=2.2, color="#222222", alpha=0.7, zorder=3)
    ax.set_xticks(x, tests)
    ax.set_ylabel(ylabel)
    # compact columns: the reqsz figure's four labels are long enough to run off the figure otherwise
    ax.legend(ncols=2 if len(series) > 2 else 1, loc="lower center", bbox_to_anchor=(0.5, 1.0),
              columnspacing=0.8, handlelength=1.5)


def _user_colors(t: pd.DataFrame) -> dict:
    """Local series in the backend's colour, lighter per client count; the seed's in black and grey."""
    colors = {}
    local = t[t["source"] == "local"]
    users = _order(local["users"])
    for s in _order(local["series"]):
        r = local[local["series"] == s].iloc[0]
        colors[s] = _lighter(r["backend"], users.index(r["users"]))
    for i, s in enumerate(_order(t.loc[t["source"] == "published", "series"])):
        colors[s] = PUBLISHED_COLORS[i % len(PUBLISHED_COLORS)]
    return colors


def draw_qps(t: pd.DataFrame):
    """QPS per test: here (each client count, dots = repetitions) and in the seed."""
    fig, ax = style.figure(aspect=0.75)
    _bars(ax, t, "queries per second", _user_colors(t))
    return fig


def _seed_marks(fig, t: pd.DataFrame) -> None:
    """The seed's ratio of each panel and test (`seed`) as a diamond at the right of its category, in
    ratio_plot's panels and order, and in the figure's legend."""
    mark = None
    for ax, pv in zip(fig.axes, _order(t["panel"]), strict=False):
        sub = t[t["panel"] == pv]
        for j, test in enumerate(_order(sub["test"])):
            v = pd.to_numeric(sub.loc[sub["test"] == test, "seed"], errors="coerce").dropna()
            if v.empty:
                continue
            (mark,) = ax.plot(j + 0.4, v.iloc[0], "D", ms=3.2, mfc="white", mec="#000000", mew=0.9, zorder=5)
            lo, hi = ax.get_ylim()
            ax.set_ylim(min(lo, v.iloc[0] / 1.03), max(hi, v.iloc[0] * 1.03))
    if mark is None or not fig.legends:
        return
    old = fig.legends[-1]
    handles, labels = list(old.legend_handles), [x.get_text() for x in old.get_texts()]
    old.remove()
    fig.legend([*handles, mark], [*labels, SEED_LABEL], ncols=min(len(handles) + 1, 4), loc="lower center",
               bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=6)


def _ratios(t: pd.DataFrame, ylabel: str):
    """ratio_plot of comparison rows, a panel per client count, the seed's ratios beside."""
    fig = ratio_plot(t, "test", panel="panel", ylabel=ylabel,
                     width="page" if t["panel"].nunique() > 1 else "column")
    _seed_marks(fig, t)
    return fig


def draw_ioeff(t: pd.DataFrame):
    """io.eff (RocksDB's device read IOPS / fio's of the same turn) per test and block_align setting, 95%
    interval over the turns (hollow, dashed: not resolved to the target), the main setting's A/A band
    (two runs of one configuration), the seed's io.eff as diamonds."""
    return _ratios(t, "io.eff: device read IOPS / fio's")


def draw_block_align(t: pd.DataFrame):
    """QPS without block_align over QPS with it, per test, 95% interval over the turns (hollow, dashed:
    not resolved), block_align on's A/A band, the seed's ratio as diamonds."""
    return _ratios(t, "QPS ratio to block_align on")


def draw_reqsz(t: pd.DataFrame):
    """Device read size (reqsz, KiB) per test with block_align on and off (hatched), here and in the
    seed; dashed: the 8 KiB block."""
    colors, hatches = {}, {}
    for s in _order(t["series"]):
        r = t[t["series"] == s].iloc[0]
        colors[s] = style.backend_color(r["backend"]) if r["source"] == "local" else PUBLISHED_COLORS[1]
        hatches[s] = OFF_HATCH if _is_off(r["block_align"]) else None
    fig, ax = style.figure(aspect=0.75)
    _bars(ax, t, "device read size (KiB)", colors, hatches)
    ax.axhline(BLOCK_BYTES / 1024, color="#555555", lw=0.6, ls="--")
    return fig


FIGURES = {
    "ioeff_qps": FigureSpec(qps_data, draw_qps),
    "ioeff_ioeff": FigureSpec(ioeff_data, draw_ioeff),
    "ioeff_block_align": FigureSpec(block_align_data, draw_block_align),
    "ioeff_reqsz": FigureSpec(reqsz_data, draw_reqsz),
}
