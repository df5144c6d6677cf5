"""A latency histogram drawn from its table (tables.histogram): what the "try it" panel shows."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, LogLocator

from rxlab.core import figures as style
from rxlab.core import metrics, store
from rxlab.studies.quickstart.tables import histogram

PER_DECADE = 12  # bins per factor of ten: the driver's HDR buckets are far finer than a small run fills


def rebin(table: pd.DataFrame, per_decade: int | None = None) -> pd.DataFrame:
    """A histogram table (upper_us, count) in log-spaced bins, empty bins kept: upper_us, count, share
    (%). per_decade: bins per factor of ten (None: PER_DECADE, more when the latencies span less than two
    decades)."""
    if table.empty:
        return pd.DataFrame(columns=["upper_us", "count", "share"])
    up = table["upper_us"].to_numpy(dtype=float)
    if per_decade is None:
        span = np.log10(up.max() / up.min()) if up.min() > 0 else 3.0
        per_decade = PER_DECADE if span >= 2 else 2 * PER_DECADE if span >= 1 else 4 * PER_DECADE
    lo_e, hi_e = np.floor(np.log10(up.min()) * per_decade), np.ceil(np.log10(up.max()) * per_decade)
    edges = 10 ** (np.arange(lo_e, hi_e + 1) / per_decade)
    idx = np.clip(np.searchsorted(edges, up, side="left"), 0, len(edges) - 1)
    counts = np.bincount(idx, weights=table["count"].to_numpy(dtype=float), minlength=len(edges))
    total = counts.sum()
    return pd.DataFrame(
        {"upper_us": edges, "count": counts, "share": counts / total * 100 if total else counts}
    )


def draw_histogram(table: pd.DataFrame, title: str = "", *, pyplot: bool = True):
    """Share of operations per latency bin (log x, PER_DECADE bins a decade), p50 and p99 marked; one colour
    per backend (the table's `backend` column, when it has one). `pyplot=False`: a figure of its own, outside
    pyplot (what a widget's callback draws: see png)."""
    fig, ax = style.figure(width="column", aspect=0.62, layout="constrained", pyplot=pyplot)
    backends = list(dict.fromkeys(table["backend"])) if "backend" in table.columns else [None]
    for b in backends:
        t = table if b is None else table[table["backend"] == b]
        if t.empty:
            continue
        color = style.backend_color(str(b)) if b is not None else style.CYCLE[0]
        r = rebin(t)
        ax.fill_between(r["upper_us"], r["share"], step="pre", color=color, alpha=0.35, lw=0)
        ax.step(r["upper_us"], r["share"], where="pre", color=color, lw=1.0, label=b)
        cum = t["count"].cumsum().to_numpy() / max(t["count"].sum(), 1)
        for q, ls in ((0.5, "--"), (0.99, ":")):
            i = int(np.searchsorted(cum, q))
            if i < len(t):
                ax.axvline(
                    t["upper_us"].iloc[i],
                    color=color,
                    ls=ls,
                    lw=0.9,
                    label=f"p{q * 100:g} {t['upper_us'].iloc[i]:,.0f} us" if len(backends) == 1 else None,
                )
    ax.set_xscale("log")
    ax.minorticks_off()
    lo, hi = ax.get_xlim()
    wide = hi / max(lo, 1e-9) > 100  # over two decades: ticks at the powers of ten only, else 1, 2, 5 each
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0,) if wide else (1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel(f"{table['op'].iloc[0] if len(table) else 'operation'} latency (us, log)")
    ax.set_ylabel("share of operations (%)")
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title)
    ax.legend(loc="upper right")
    return fig


def latency_figure(run_dir) -> object:
    """A stored run's measured-step latency histogram, for a notebook cell: drawn, then closed in pyplot, so
    the notebook shows it once (as the cell's value)."""
    import matplotlib.pyplot as plt  # noqa: PLC0415 - pyplot only when drawing

    run = store.load_run(run_dir)
    backend = metrics.backend_label(run.spec.get("backend")) or "?"
    h = histogram(run_dir)
    step = h["step"].iloc[0] if len(h) else "the measured step"
    fig = draw_histogram(
        h.assign(backend=backend), title=f"{step} on {backend}, {run.spec.get('threads', 1)} thread(s)"
    )
    plt.close(fig)
    return fig


def png(fig, dpi: int = 130) -> bytes:
    """A figure as PNG bytes: what the "try it" panel's image shows. The panel draws outside pyplot
    (draw_histogram(pyplot=False)): in JupyterLab, a pyplot figure drawn in the run button's callback, right
    after the run, came out as a blank PNG, while the same call from a cell did not."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches=None)  # laid out already (constrained): one pass
    return buf.getvalue()
