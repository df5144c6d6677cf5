"""The run explorer: every run in the store filtered, plotted, tabulated and compared, in JupyterLab.

`rxlab.explore()` in a notebook shows filters (study, benchmark, backend,
threads, build, host, dates), x / y / hue pickers over the seeds' columns
and rxlab's own, a seaborn plot in the project's style with its table
under it (first readrandom's qps by backend; per group the median and its
95% interval), a two-run comparison, and a button that saves the plot through
rxlab.core.figures (pdf, svg, png, the table drawn and the sidecar).

data.py holds the data logic (the cached frame, filters, the two-run diff),
plot.py the plot, its table and its saving: plain functions of a DataFrame
that the tests call without widgets. widgets.py wires them to ipywidgets.
"""

from rxlab.runs.explore.data import (
    CATEGORIES,
    FILTERS,
    NO_STUDY,
    PREPARING,
    Params,
    axis_columns,
    cache_dir,
    choices,
    diff_runs,
    filter_runs,
    first_view,
    is_category,
    load_seconds,
    measured_step,
    metric_columns,
    run_choices,
    runs_for,
    runs_frame,
    store_summary,
)
from rxlab.runs.explore.plot import draw, plot_table, png, save_plot, summary_table
from rxlab.runs.explore.widgets import Explorer

__all__ = [
    "CATEGORIES",
    "FILTERS",
    "NO_STUDY",
    "PREPARING",
    "Explorer",
    "Params",
    "axis_columns",
    "cache_dir",
    "choices",
    "diff_runs",
    "draw",
    "filter_runs",
    "first_view",
    "is_category",
    "load_seconds",
    "measured_step",
    "metric_columns",
    "plot_table",
    "png",
    "run_choices",
    "runs_for",
    "runs_frame",
    "save_plot",
    "store_summary",
    "summary_table",
]
