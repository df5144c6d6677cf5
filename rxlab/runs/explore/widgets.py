"""The explorer's widgets (ipywidgets, the `lab` extra): filters, pickers, the plot and its table, two
runs side by side, the save button. Every change calls the functions of data.py and plot.py."""

from __future__ import annotations

import html
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.core import figures, store
from rxlab.runs.explore.data import (
    CATEGORIES,
    FILTERS,
    axis_columns,
    choices,
    diff_runs,
    filter_runs,
    first_view,
    is_category,
    metric_columns,
    run_choices,
    runs_frame,
)
from rxlab.runs.explore.plot import draw, plot_table, png, save_plot, summary_table

# --------------------------------------------------------------------------- the widgets


def _html_table(df: pd.DataFrame, caption: str = "", max_rows: int = 25) -> str:
    if df is None or df.empty:
        return f"<p><i>{caption or 'no rows'}</i></p>"
    body = df.head(max_rows).to_html(
        float_format=lambda v: f"{v:,.4g}", na_rep="", border=0, classes="rxlab-table"
    )
    more = f" (first {max_rows} of {len(df):,})" if len(df) > max_rows else ""
    return f"<div style='max-height:420px;overflow:auto'><p><b>{caption}</b>{more}</p>{body}</div>"


class Explorer:
    """The explorer's widgets over one store (or a given frame). Display it in a notebook; its state is
    in plain attributes (`frame`, `shown`, `table`, `diff`, `last_update_s`) for tests and scripts."""

    def __init__(
        self,
        root: str | os.PathLike | None = None,
        *,
        frame: pd.DataFrame | None = None,
        x: str = "auto",
        y: str = "qps",
        hue: str | None = "auto",
        benchmark: str | None = "auto",
        figures_dir: str | os.PathLike | None = None,
    ):
        import ipywidgets as w  # noqa: PLC0415 - the `lab` extra; the data functions above need no widgets

        self.root = Path(root) if root is not None else store.default_root()
        self.frame = frame if frame is not None else runs_frame(self.root)
        self.shown = self.frame
        self.table = pd.DataFrame()
        self.diff = pd.DataFrame()
        self.last_update_s = 0.0
        self.updates = 0
        self._busy = False
        self._w = w
        opts = choices(self.frame)
        lay = w.Layout(width="150px")
        self.filters = {
            f: w.SelectMultiple(
                options=[(str(v), v) for v in opts[f]], rows=_rows(len(opts[f])), description="", layout=lay
            )
            for f in FILTERS
        }
        # under each list, what it selects: a selected value is said even where the list scrolls
        self.picked = {f: w.HTML(layout=w.Layout(width="150px")) for f in FILTERS}
        days = opts["date"] or ["-"]
        self.date_from = w.Dropdown(
            options=days, value=days[0], description="from", layout=w.Layout(width="220px")
        )
        self.date_to = w.Dropdown(
            options=days, value=days[-1], description="to", layout=w.Layout(width="220px")
        )
        view = first_view(self.frame)  # readrandom's qps by backend, where the store has readrandom
        benchmark = view["benchmark"] if benchmark == "auto" else benchmark
        x = view["x"] if x == "auto" else x
        hue = view["hue"] if hue == "auto" else hue
        if benchmark is not None and benchmark in opts["benchmark"]:
            self.filters["benchmark"].value = (benchmark,)
        axes, mets = axis_columns(self.frame), metric_columns(self.frame)
        hues = ["(none)", *[c for c in CATEGORIES if c in self.frame.columns]]
        self.x = w.Dropdown(
            options=axes, value=x if x in axes else (axes[0] if axes else None), description="x"
        )
        self.y = w.Dropdown(
            options=mets, value=y if y in mets else (mets[0] if mets else None), description="y"
        )
        self.hue = w.Dropdown(options=hues, value=hue if hue in hues else "(none)", description="hue")
        self.image = w.Image(format="png", layout=w.Layout(max_width="900px"))
        self.status = w.HTML()
        self.table_html = w.HTML()
        self.refresh_button = w.Button(
            description="refresh", tooltip="read the runs stored since", icon="refresh"
        )
        self.run_a = w.Dropdown(options=[], description="run A", layout=w.Layout(width="560px"))
        self.run_b = w.Dropdown(options=[], description="run B", layout=w.Layout(width="560px"))
        self.only_diff = w.Checkbox(value=True, description="only the columns that differ")
        self.diff_html = w.HTML()
        self.save_name = w.Text(description="name", placeholder="explore_qps_by_threads_backend")
        self.save_dir = w.Text(
            description="folder",
            value=str(figures_dir or figures.figures_dir()),
            layout=w.Layout(width="560px"),
        )
        self.save_button = w.Button(
            description="save figure",
            icon="save",
            button_style="primary",
            tooltip="pdf, svg, png, the table drawn and its sidecar",
        )
        self.save_status = w.HTML()

        for c in (*self.filters.values(), self.date_from, self.date_to):
            c.observe(self._changed, names="value")
        for c in (self.x, self.y, self.hue):
            c.observe(self._picked, names="value")
        for c in (self.run_a, self.run_b, self.only_diff):
            c.observe(self._compare_changed, names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.save_button.on_click(lambda _: self.save())

        head = w.HTML(f"<h3 style='margin:4px 0'>Runs in {self.root}</h3>")
        self.widget = w.VBox(
            [
                head,
                w.HBox([w.VBox([w.HTML(f"<b>{f}</b>"), self.filters[f], self.picked[f]]) for f in FILTERS]),
                w.HBox([w.Label("dates"), self.date_from, self.date_to, self.refresh_button]),
                w.HBox([self.x, self.y, self.hue]),
                self.status,
                self.image,
                self.table_html,
                w.HTML("<h4 style='margin:8px 0 2px'>Two runs side by side</h4>"),
                self.run_a,
                self.run_b,
                self.only_diff,
                self.diff_html,
                w.HTML("<h4 style='margin:8px 0 2px'>Save the plot (figure pipeline)</h4>"),
                w.HBox([self.save_name, self.save_button]),
                self.save_dir,
                self.save_status,
            ]
        )
        self.update()
        self._pick_runs()

    # -- what the widgets select
    def selection(self) -> dict:
        sel = {f: list(c.value) for f, c in self.filters.items() if c.value}
        days = list(self.date_from.options)
        span = (self.date_from.value, self.date_to.value)
        if days and days != ["-"] and span != (days[0], days[-1]):
            sel["dates"] = span if span[0] <= span[1] else span[::-1]
        return sel

    def axes(self) -> tuple[str, str, str | None]:
        return self.x.value, self.y.value, None if self.hue.value == "(none)" else self.hue.value

    # -- updates
    def _changed(self, _change=None) -> None:
        if not self._busy:
            self.update()

    def _picked(self, _change=None) -> None:
        if not self._busy:
            self.update(refilter=False)

    def _compare_changed(self, _change=None) -> None:
        if not self._busy:
            self.compare()

    def update(self, refilter: bool = True) -> None:
        """Filter (unless only a picker changed), tabulate and draw again; times itself (last_update_s)."""
        t0 = time.perf_counter()
        if self.frame.empty:
            self.status.value = (
                f"<b>No runs in {self.root}.</b> Run a study first (notebook 00, or "
                "<code>rxlab study run quickstart --scale smoke</code>), then press refresh."
            )
            self.image.value = b""
            self.table_html.value = ""
            return
        if refilter:
            self.shown = filter_runs(self.frame, **self.selection())
            self._show_picked()
        x, y, hue = self.axes()
        try:
            self.table = plot_table(self.shown, x, y, hue, check=False)
        except ValueError as e:
            self.status.value = f"<span style='color:#b00'>{_first_line(e)}</span>"
            return
        self.image.value = png(draw(self.table, x, y, hue, pyplot=False))
        grouped = is_category(self.table, x) and x != "started" if len(self.table) else False
        caption = f"{y} by {x}" + (
            ": per group, the median, its 95% interval (bootstrap; none for one step), min and max"
            if grouped else ""
        )
        self.table_html.value = _html_table(summary_table(self.table, x, y, hue), caption)
        self.updates += 1
        self.last_update_s = time.perf_counter() - t0
        n_runs = self.shown["run_id"].nunique()
        self.status.value = (
            f"{len(self.table):,} steps of {n_runs:,} runs shown, of "
            f"{self.frame['run_id'].nunique():,} runs in the store; updated in "
            f"{self.last_update_s:.2f} s"
        )

    def _show_picked(self) -> None:
        for f, c in self.filters.items():
            text = ", ".join(map(str, c.value)) if c.value else "all"
            self.picked[f].value = (
                f"<small title='{html.escape(text, quote=True)}'>{html.escape(_short(text))}</small>"
            )

    def _pick_runs(self) -> None:
        """The two-run pickers offer every run (the newest first); A and B start as the two newest runs
        shown (B: the newest other run when one is shown)."""
        runs = run_choices(self.frame)
        ids = [r for _, r in runs]
        shown = [r for _, r in run_choices(self.shown, limit=2)]
        a = shown[0] if shown else (ids[0] if ids else None)
        b = shown[1] if len(shown) > 1 else next((r for r in ids if r != a), a)
        self._busy = True
        try:
            self.run_a.options = runs
            self.run_b.options = runs
            self.run_a.value, self.run_b.value = a, b
        finally:
            self._busy = False
        self.compare()

    def compare(self) -> None:
        """Runs A and B side by side (diff_runs), the columns that differ only when that box is ticked."""
        a, b = self.run_a.value, self.run_b.value
        if a is None or b is None:
            self.diff = pd.DataFrame()
            self.diff_html.value = "<i>pick two runs</i>"
            return
        try:
            self.diff = diff_runs(self.frame, a, b, only_different=self.only_diff.value)
        except ValueError as e:
            self.diff_html.value = f"<span style='color:#b00'>{_first_line(e)}</span>"
            return
        d = self.diff.copy()
        d["A"], d["B"] = d["A"].map(_cell), d["B"].map(_cell)
        self.diff_html.value = _html_table(
            d.drop(columns=["differs"]),
            f"A = {a}, B = {b} ({int(self.diff['differs'].sum())} columns differ)",
            max_rows=400,
        )

    def refresh(self) -> None:
        """Read the runs stored since (only those), then update the filters' choices and the plot."""
        self.frame = runs_frame(self.root, refresh=True)
        opts = choices(self.frame)
        self._busy = True
        try:
            for f, c in self.filters.items():
                keep = [v for v in c.value if v in opts[f]]
                c.options = [(str(v), v) for v in opts[f]]
                c.rows = _rows(len(opts[f]))
                c.value = tuple(keep)
            days = opts["date"] or ["-"]
            for c, v in ((self.date_from, days[0]), (self.date_to, days[-1])):
                c.options = days
                c.value = v
            axes, mets = axis_columns(self.frame), metric_columns(self.frame)
            x, y = self.x.value, self.y.value
            self.x.options, self.y.options = axes, mets
            self.x.value = x if x in axes else (axes[0] if axes else None)
            self.y.value = y if y in mets else ("qps" if "qps" in mets else (mets[0] if mets else None))
        finally:
            self._busy = False
        self.update()
        self._pick_runs()

    def save(self) -> dict[str, Path] | None:
        """The save button: the current plot and its table through figures.save, into the folder given."""
        x, y, hue = self.axes()
        try:
            paths = save_plot(
                self.table,
                x,
                y,
                hue,
                name=self.save_name.value.strip() or None,
                directory=self.save_dir.value.strip() or None,
                filters=self.selection(),
            )
        except (ValueError, OSError) as e:
            self.save_status.value = f"<span style='color:#b00'>{_first_line(e)}</span>"
            return None
        self.save_status.value = (
            "saved "
            + ", ".join(f"<code>{p.name}</code>" for p in paths.values())
            + f" in <code>{paths['json'].parent}</code>"
        )
        return paths

    def _repr_mimebundle_(self, **kw):
        return self.widget._repr_mimebundle_(**kw)


def _rows(n: int) -> int:
    """A filter list's height in rows: every value and one spare row (so the last value is clear of
    the box's bottom edge), at most 10 (then the list scrolls; the line under it names the selection)."""
    return max(2, min(n + 1, 10))


def _short(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _cell(v) -> str:
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:,.6g}"
    return "" if v is None else str(v)


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]
