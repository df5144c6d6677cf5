"""The explorer's plot: the tidy table drawn, the table under it, the seaborn drawing, and its saving.

`plot_table` (the rows a plot draws), `summary_table` (the table shown under
it), `draw` (the project's style: rxlab.core.figures), `png`, and
`save_plot` (through rxlab.core.figures.save: pdf, svg, png, the table drawn
and the sidecar naming the runs).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.core import figures, stats
from rxlab.runs.explore.data import CATEGORIES, _sort_key, axis_columns, is_category, metric_columns


def _check_column(frame: pd.DataFrame, name: str, value, allowed: Iterable[str]) -> None:
    allowed = list(allowed)
    if value not in allowed:
        raise ValueError(
            f"{name}={value!r}: allowed are {', '.join(allowed[:30])}"
            + (f" (and {len(allowed) - 30} more)" if len(allowed) > 30 else "")
        )


def plot_table(
    frame: pd.DataFrame, x: str, y: str, hue: str | None = None, *, check: bool = True
) -> pd.DataFrame:
    """The tidy table a plot draws: run_id, step, benchmark, x, y (and hue), rows without a y dropped.
    `check=False` skips naming the allowed columns (the explorer's pickers offer only those)."""
    if frame.empty:
        return pd.DataFrame(
            columns=list(dict.fromkeys(["run_id", "step", "benchmark", x, y, *([hue] if hue else [])]))
        )
    if check:
        _check_column(frame, "x", x, axis_columns(frame))
        _check_column(frame, "y", y, metric_columns(frame))
    if hue is not None and check:
        _check_column(frame, "hue", hue, [c for c in CATEGORIES if c in frame.columns])
    cols = list(dict.fromkeys(["run_id", "step", "benchmark", x, y, *([hue] if hue else [])]))
    t = frame[cols]
    t = t[pd.to_numeric(t[y], errors="coerce").notna()]
    if x != "started":
        t = t[t[x].notna()] if is_category(frame, x) else t[pd.to_numeric(t[x], errors="coerce").notna()]
    return t.reset_index(drop=True)


INTERVAL = 0.95  # the level of the interval drawn around each group's median
_DRAWS = 1000  # bootstrap resamples per group: enough for a drawn interval, fast enough for every redraw


def median_interval(values) -> tuple[float, float]:
    """The 95% interval of a group's median (percentile bootstrap, rxlab.core.stats); NaN for one value.
    The values sorted first: the table and the drawing, which group rows in their own orders, agree."""
    return stats.median_interval(np.sort(np.asarray(values, dtype=float)), level=INTERVAL, draws=_DRAWS)


def summary_table(
    table: pd.DataFrame, x: str, y: str, hue: str | None = None, *, max_rows: int = 25
) -> pd.DataFrame:
    """The table under the plot: per x (and hue) group, the median of y, its 95% interval (`95% lo`,
    `95% hi`: bootstrap, empty for a group of one step), min, max and the runs behind it (a category x);
    for a numeric x, the plotted rows themselves, the largest y first (at most max_rows)."""
    if table.empty:
        return pd.DataFrame()
    if not is_category(table, x) or x == "started":
        return table.sort_values(y, ascending=False).head(max_rows).reset_index(drop=True)
    keys = [x, *([hue] if hue and hue != x else [])]
    g = table.groupby(keys, sort=True, dropna=False)
    ci = g[y].agg(lambda v: median_interval(v.to_numpy(dtype=float)))
    out = pd.DataFrame(
        {
            f"median {y}": g[y].median(),
            "95% lo": ci.map(lambda t: t[0]),
            "95% hi": ci.map(lambda t: t[1]),
            f"min {y}": g[y].min(),
            f"max {y}": g[y].max(),
            "steps": g.size(),
            "runs": g["run_id"].nunique(),
        }
    )
    return out.reset_index().head(max_rows)


def _palette(values: list, hue: str | None) -> dict | None:
    if hue in ("backend", "engine"):
        return {v: figures.backend_color(str(v)) for v in values}
    return {v: figures.CYCLE[i % len(figures.CYCLE)] for i, v in enumerate(values)} if hue else None


def draw(
    table: pd.DataFrame, x: str, y: str, hue: str | None = None, *, title: str = "", pyplot: bool = True
):
    """The plot of a plot_table in the project's style: points per step, with the median per group
    (a diamond) and its 95% interval (a bar with caps, bootstrap; none for a group of one step) when x
    is a category; one colour per backend when hue is the backend. The explorer's widgets draw with
    `pyplot=False` (rxlab.core.figures.figure)."""
    import seaborn as sns  # noqa: PLC0415 - seaborn takes a second to import; only drawing needs it

    fig, ax = figures.figure(width="page", aspect=0.42, layout="constrained", pyplot=pyplot)
    if table.empty:
        ax.text(0.5, 0.5, "no rows: widen the filters", ha="center", va="center", transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        return fig
    t = table.copy()
    hue_values = None
    if hue:
        t[hue] = t[hue].astype(str)
        hue_values = sorted(t[hue].unique(), key=_sort_key)
    pal = _palette(hue_values or [], hue)
    many = bool(hue_values) and len(hue_values) > 12
    # what every layer draws: the same rows, axes and colours
    mapping = {"data": t, "x": x, "y": y, "hue": hue, "hue_order": hue_values, "palette": pal, "ax": ax}
    if is_category(t, x) and x != "started":
        t[x] = t[x].astype(str)
        order = sorted(t[x].unique(), key=lambda v: _sort_key(int(v)) if v.isdigit() else _sort_key(v))
        dodge = bool(hue) and hue != x
        sns.stripplot(**mapping, order=order, dodge=dodge, alpha=0.45, size=2.5, jitter=0.18, legend=False)
        sns.pointplot(
            **mapping,
            order=order,
            dodge=0.8 - 0.8 / len(hue_values) if dodge and hue_values else False,
            estimator="median",
            errorbar=median_interval,  # the median's 95% interval: a bar where a group has 2+ steps
            capsize=0.15,
            err_kws={"linewidth": 1.2},
            linestyle="none",
            markers="D",
            markersize=4,
            legend=not many,
        )
        if len(order) > 6:
            ax.tick_params(axis="x", labelrotation=30)
    else:
        sns.scatterplot(**mapping, s=10, alpha=0.7, linewidth=0, legend=not many)
    ax.set_ylim(bottom=0) if (pd.to_numeric(t[y], errors="coerce") >= 0).all() else None
    if ax.get_legend() is not None:
        ax.legend(title=hue, loc="center left", bbox_to_anchor=(1.0, 0.5), frameon=False)
    grouped = is_category(t, x) and x != "started"
    ax.set_title(
        title
        or f"{y} by {x}"
        + (f" and {hue}" if hue and hue != x else "")
        + (": median and its 95% interval" if grouped else "")
        + (f" ({len(hue_values)} {hue} values: no legend)" if many else ""),
        fontsize="medium",
    )
    return fig


# --------------------------------------------------------------------------- saving


def save_plot(
    table: pd.DataFrame,
    x: str,
    y: str,
    hue: str | None = None,
    *,
    name: str | None = None,
    directory: str | os.PathLike | None = None,
    filters: Mapping | None = None,
) -> dict[str, Path]:
    """Draw a plot_table and save it through the figure pipeline: <name>.pdf/.svg/.png, <name>.csv (the
    table drawn) and <name>.json (the runs behind it, the filters and axes in its notes), in `directory`
    ($RXLAB_FIGURES or figures/ by default). Returns the paths."""
    name = name or f"explore_{_slug(y)}_by_{_slug(x)}" + (f"_{_slug(hue)}" if hue else "")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,80}", name):
        raise ValueError(f"name={name!r}: use letters, digits, '_', '-' or '.', e.g. explore_qps_by_threads")
    if table.empty:
        raise ValueError("nothing to save: the filters leave no rows")
    used = {k: list(v) for k, v in (filters or {}).items() if v}
    fig = draw(table, x, y, hue, pyplot=False)  # the save button's callback draws it too
    studies_ = sorted(set(table["study"])) if "study" in table.columns else []
    return figures.save(
        fig,
        name,
        table=table,
        draw_args={"x": x, "y": y, "hue": hue},
        plot={"kind": "explore", "x": x, "y": y, "hue": hue},  # `rxlab figure redraw NAME` draws it again
        study=", ".join(studies_) or None,
        runs=sorted(table["run_id"].unique()),
        builds=sorted(set(table["build"])) if "build" in table.columns else (),
        notes=f"rxlab.explore: {y} by {x}"
        + (f" and {hue}" if hue else "")
        + (f"; filters {used}" if used else "; no filters"),
        directory=directory,
    )


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", str(s)).strip("_").lower() or "x"


def png(fig, dpi: int = 110) -> bytes:
    """A figure as PNG bytes (closed afterwards): what the explorer's image shows."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - pyplot only when drawing

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches=None)  # laid out already: one drawing pass
    plt.close(fig)
    return buf.getvalue()


