"""Plot families shared by every study, drawn from tidy tables in rxlab.core.figures' style.

`ratio_plot`: ratios to a base with their 95% intervals, by category, from a
comparison table (rxlab.core.resolution.compare's columns). A resolved
comparison is a filled marker with a solid interval; an unresolved one is
hollow with a dashed interval (never drawn as if it were resolved); the A/A
control's interval is the grey band behind each category, so what "equal"
looks like on this machine is beside every comparison.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FormatStrFormatter

from rxlab.core import figures as style
from rxlab.core.resolution import AA

__all__ = ["ratio_plot"]

AA_COLOR = "#bbbbbb"
CROWDED_PT = 36.0       # a category narrower than this has its turns written as numbers alone
MAX_SPAN = 4.0          # intervals are drawn within 1/4..4 (ratios beyond it widen the axis)
TICKS = (0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15, 1.2, 1.25)
# a wide range keeps 0.9, 1.1 and 1.25: the size of the seeds' differences (0.9..1.45 would show only 1)
WIDE_TICKS = (0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0)


def _order(values: pd.Series) -> list:
    return list(dict.fromkeys(values))


def _with_note(title, note: str) -> str:
    """`title (note)`; a title already ending in a parenthesis takes the note inside it, so
    "RocksDB 7.8.3 (vs 7.8.3-gcc12)" reads "RocksDB 7.8.3 (vs 7.8.3-gcc12, 4 turns)", not two brackets."""
    if title is None:
        return note
    title = str(title)
    return f"{title[:-1]}, {note})" if title.endswith(")") else f"{title} ({note})"


def _limits(t: pd.DataFrame) -> tuple[float, float]:
    """The y range: every ratio, and every interval within 1/MAX_SPAN..MAX_SPAN (a wider interval runs off
    the axis: it resolves nothing anyway). A ratio itself is never left off: a MultiGet at a delay gains
    15x, and the axis grows to show it."""
    def finite(col):
        v = pd.to_numeric(t[col], errors="coerce")
        return v[np.isfinite(v) & (v > 0)]
    r = finite("ratio")
    iv = pd.concat([finite("lo"), finite("hi")]).clip(1 / MAX_SPAN, MAX_SPAN)
    v = pd.concat([r, iv])
    lo, hi = (float(v.min()), float(v.max())) if len(v) else (1.0, 1.0)
    return min(lo, 0.98) / 1.08, max(hi, 1.02) * 1.08


def _ticks(lo: float, hi: float) -> list[float]:
    """Ticks for a log axis lo..hi: fine steps near 1 on a narrow axis, the seeds' 0.9/1.1/1.25 on a
    moderate one, powers of two (and 1) on a wide one, where 0.9 and 1.1 would print on top of 1."""
    span = hi / lo
    if span < 1.6:
        ticks = TICKS
    elif span <= 4:
        ticks = WIDE_TICKS
    elif span <= 20:    # up to the 1/4..4 of intervals at MAX_SPAN and the margins
        ticks = (0.125, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0)
    else:
        ticks = tuple(2.0 ** k for k in range(-6, 7))
    return [v for v in ticks if lo <= v <= hi]


def _fit_tick_labels(ax, fig, n: int) -> None:
    """Slant the category labels when the longest would run into its neighbours (toolchains' five tests
    side by side in a half-page panel printed as one word)."""
    labels = ax.get_xticklabels()
    if not labels or n < 2:
        return
    size = labels[0].get_fontsize()
    room_pt = ax.get_position().width * fig.get_figwidth() * 72 / n
    longest_pt = max(len(t.get_text()) for t in labels) * size * 0.6   # an average glyph's width
    if longest_pt > room_pt * 0.95:
        ax.tick_params(axis="x", labelrotation=30)
        for t in labels:
            t.set_horizontalalignment("right")
            t.set_rotation_mode("anchor")


def ratio_plot(t: pd.DataFrame, x: str, *, hue: str = "config", panel: str | None = None, ylabel: str = "",
               title: str | None = None, width: str = "column", colors: Mapping[str, str] | None = None):
    """Ratio with interval (`ratio`, `lo`, `hi`) per `x` category, one marker per `hue` value (dodged),
    a panel per `panel` value; rows whose `config` is A/A become the grey band of their category.
    `resolved` draws filled or hollow; `turns` is written under each category. `colors`: a colour per
    `hue` value (default: style.backend_color, which hashes names that are not backends). Returns the
    figure."""
    panels = _order(t[panel]) if panel else [None]
    fig, axes = style.figure(width=width, aspect=0.62 if len(panels) == 1 else 0.3, ncols=len(panels),
                             squeeze=False)
    cmp = t[t["config"] != AA]
    hues = _order(cmp[hue])
    width_each = 0.7 / max(len(hues), 1)
    drawn: dict[str, str] = {}   # hue -> its colour, for the legend
    for ax, pv in zip(axes[0], panels, strict=True):
        sub = t if pv is None else t[t[panel] == pv]
        cats = _order(sub[x])
        for j, cv in enumerate(cats):
            aa = sub[(sub[x] == cv) & (sub["config"] == AA)]
            for r in aa.itertuples():
                if np.isfinite(r.lo) and np.isfinite(r.hi):
                    ax.fill_between([j - 0.45, j + 0.45], r.lo, r.hi, color=AA_COLOR, alpha=0.5, lw=0,
                                    zorder=1, label="A/A control (95%)")
            for i, hv in enumerate(hues):
                r = sub[(sub[x] == cv) & (sub["config"] != AA) & (sub[hue] == hv)]
                if r.empty or not np.isfinite(r["ratio"].iloc[0]):
                    continue
                r = r.iloc[0]
                xi = j - 0.35 + width_each * (i + 0.5)
                c = (colors or {}).get(str(hv)) or style.backend_color(str(hv))
                ok = bool(r["resolved"])
                if np.isfinite(r["lo"]) and np.isfinite(r["hi"]):
                    ax.plot([xi, xi], [r["lo"], r["hi"]], color=c, lw=1.2, ls="-" if ok else "--", zorder=3)
                # labelled, so a marker can be found by its hue; the legend keys the hue from `drawn`
                ax.plot(xi, r["ratio"], "o", ms=4, mec=c, mfc=c if ok else "white", mew=1.1, zorder=4,
                        label=str(hv))
                drawn.setdefault(str(hv), c)
        # the turns: one note in the panel's title when every category had the same (inside the axes it
        # would sit on data), else under each category
        turns = sub.loc[sub["config"] != AA, [x, "turns"]].dropna()
        same = f"{int(turns['turns'].iloc[0])} turns" if len(turns) and turns["turns"].nunique() == 1 else ""
        # "12-14 turns" under each of eleven categories in a half-page panel ran into its neighbours: where
        # a category has less room than that, the numbers stand alone and the title says what they count
        crowded = ax.get_position().width * fig.get_figwidth() * 72 / max(len(cats), 1) < CROWDED_PT
        if same:
            ax.set_title(_with_note(pv, same), fontsize=7 if pv is not None else 6)
        else:
            for j, cv in enumerate(cats):
                n = turns.loc[turns[x] == cv, "turns"]
                if len(n):
                    ax.annotate(f"{int(n.min())}" + (f"-{int(n.max())}" if n.max() != n.min() else "")
                                + ("" if crowded else " turns"), (j, 0), xycoords=("data", "axes fraction"),
                                xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                                fontsize=5, color="#555555")
        ax.axhline(1.0, color="#333333", lw=0.6, zorder=2)
        ax.set_yscale("log")        # ratios: an interval symmetric in log is drawn symmetric
        lo, hi = _limits(sub)
        ax.set_ylim(lo, hi)
        ax.minorticks_off()
        ax.yaxis.set_major_locator(FixedLocator(_ticks(lo, hi)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.set_xticks(range(len(cats)), [str(c) for c in cats])
        ax.set_xlim(-0.5, len(cats) - 0.5)
        _fit_tick_labels(ax, fig, len(cats))
        if not same and crowded and len(turns):
            ax.set_title(_with_note(pv, "turns under each"), fontsize=7 if pv is not None else 6)
        elif pv is not None and not same:
            ax.set_title(str(pv))
    axes[0][0].set_ylabel(ylabel or "ratio to the base (95% interval)")
    # The legend keys the colours, each drawn filled: taking the plotted markers would show a hue filled or
    # hollow by whether its first cell happened to be resolved. What hollow means has its own entry.
    handles: dict = {h: Line2D([], [], marker="o", ls="-", lw=1.2, color=c, mfc=c, ms=4)
                     for h, c in drawn.items()}
    for ax in axes[0]:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=False):
            handles.setdefault(lab, h)
    if not cmp.empty and not cmp["resolved"].astype(bool).all():
        handles["unresolved (hollow, dashed)"] = Line2D([], [], marker="o", ls="--", color="#555555",
                                                        mfc="white", ms=4)
    legend = fig.legend(list(handles.values()), list(handles), ncols=min(len(handles), 4), loc="lower center",
                        bbox_to_anchor=(0.5, 1.0), frameon=False, fontsize=6)
    if title:
        # above the legend, however many rows it wrapped into (more than 4 keys make two)
        top = legend.get_window_extent().transformed(fig.transFigure.inverted()).y1   # any backend's renderer
        fig.suptitle(title, y=top + 0.01, va="bottom", fontsize=7)
    return fig
