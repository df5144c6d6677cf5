"""Notebook 10's figures (QPS, io.eff, block_align's effect and the device read size), each from one table.

Every figure's table is long and tidy: one row per value drawn, in the order
drawn. `series` names a bar's series (its legend entry), `source` is local
or published, `kind` says what the row is: `median` (a bar: the median over
repetitions), `rep` (one repetition: a dot) or `published` (the seed's
number: a bar of its own series). `backend`, `users` and `block_align` say
how a series is coloured and hatched.
"""
from __future__ import annotations

import matplotlib.colors as mc
import numpy as np
import pandas as pd

from rxlab.core import figures as style
from rxlab.core.study import FigureSpec
from rxlab.studies.io_efficiency.params import BLOCK_BYTES, SEED_TESTS
from rxlab.studies.io_efficiency.result import IoEfficiencyResult
from rxlab.studies.io_efficiency.tables import main_block_align, seed_rows, seed_tables, users_label

BAR_COLUMNS = ["series", "source", "backend", "users", "block_align", "test", "kind", "rep", "value"]
PUBLISHED_COLORS = ("#000000", "#8c8c8c")
OFF_HATCH = "///"   # block_align off, in the reqsz figure


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


def ioeff_data(result: IoEfficiencyResult) -> pd.DataFrame:
    """io.eff per test and client count, here (medians and repetitions) and in the seed."""
    return _by_users(result, "io.eff", "io.eff")


def _effect(result: IoEfficiencyResult) -> pd.DataFrame:
    tables = seed_tables(result)
    if "block_align effect" not in tables:
        raise ValueError("the study ran one block_align setting: run block_align=[True, False]")
    return tables["block_align effect"]


def block_align_data(result: IoEfficiencyResult) -> pd.DataFrame:
    """QPS change with block_align (%) per test at the smallest client count: the change of the
    medians, the change within each repetition (dots), the seed's."""
    eff = _effect(result)
    t0 = min(result.threads)
    rows = seed_rows(result)
    rows = rows[rows["threads"] == t0]
    piv = rows.pivot_table(index=["rep", "test"], columns="block_align", values="qps", aggfunc="first")
    piv = piv.dropna()
    per_rep = pd.DataFrame(columns=["rep", "test", "change"])
    if {True, False} <= set(piv.columns):
        per_rep = ((piv[True] / piv[False] - 1.0) * 100.0).rename("change").reset_index()
    base = {"series": f"{result.backend}, {users_label(t0)}", "source": "local", "backend": result.backend,
            "users": t0, "block_align": True}
    out = _values(base, eff[eff["source"] == "local"], "qps_change_pct", "median")
    out += _reps(base, per_rep, "change")
    base = {"series": "seed", "source": "published", "backend": "default", "users": np.nan,
            "block_align": True}
    out += _values(base, eff[eff["source"] == "published"], "qps_change_pct", "published")
    return pd.DataFrame(out, columns=BAR_COLUMNS)


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


def draw_ioeff(t: pd.DataFrame):
    """io.eff (RocksDB storage IOPS / fio's at the same concurrency) per test, here and in the seed."""
    fig, ax = style.figure(aspect=0.75)
    _bars(ax, t, "io.eff (RocksDB IOPS / fio IOPS)", _user_colors(t))
    ax.axhline(1.0, color="#555555", lw=0.6, ls="--")
    ax.set_ylim(0, max(1.1, ax.get_ylim()[1]))
    return fig


def draw_block_align(t: pd.DataFrame):
    """QPS change from block_align (on vs off, %) per test, here (dots: each repetition) and in the seed."""
    fig, ax = style.figure(aspect=0.75)
    _bars(ax, t, "QPS change with block_align (%)", _user_colors(t))
    ax.axhline(0.0, color="#555555", lw=0.6)
    return fig


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
