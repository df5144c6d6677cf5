"""The "try it" panel of notebook 00: an engine, its options, threads and a workload from widgets, one run.

Press run: the start-here study runs once with those choices (the DB is
loaded, flushed, then the workload measured; stored like every run), under
progress bars, and the panel shows the run's steps in the seeds' columns and
the measured step's latency histogram. A bad choice (an option value the
engine refuses, iopoll on a disk without polled queues, ...) shows its one
line in the panel, not a traceback.

The logic is plain functions (`engine_names`, `option_specs`, `backend_uri`,
`try_run`), which the tests call without widgets; `TryPanel` wires them to
ipywidgets (the `lab` extra).
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rxlab.core import engines as backends
from rxlab.studies.quickstart import plots, tables
from rxlab.studies.quickstart.params import MAX_THREADS, WORKLOADS
from rxlab.studies.quickstart.study import STUDY

__all__ = [
    "MAIN_OPTIONS",
    "OptionSpec",
    "TryPanel",
    "TryResult",
    "backend_uri",
    "engine_names",
    "option_specs",
    "try_it",
    "try_run",
]

# Shown first for every engine (the engine's own options follow); the rest fold under "more options".
MAIN_OPTIONS = ("delay_us", "jitter_us", "buffer_align", "depth")


@dataclass(frozen=True)
class OptionSpec:
    name: str
    default: str
    help: str
    main: bool  # shown first (MAIN_OPTIONS and the engine's own), else under "more options"


def _engines() -> dict[str, dict]:
    # engines that serve a RocksDB database (rxlab's `sync` engine serves rxlab fio only: its help says so)
    return {e["name"]: e for e in backends.engines() if "fio only" not in e["help"]}


def engine_names() -> list[str]:
    """The backends a DB can run on: default (RocksDB's own file system), then rxlab's engines."""
    return list(_engines())


def option_specs(engine: str) -> list[OptionSpec]:
    """An engine's URI options (rxlab._core.engines()): MAIN_OPTIONS and its own options first."""
    engs = _engines()
    if engine not in engs:
        raise ValueError(f"engine={engine!r}: allowed are {', '.join(engs)}")
    e = engs[engine]
    own = backends.own_options(e, backends.shared_options()) if engine != "default" else e["options"]
    specs = [OptionSpec(k, str(d), h, k in MAIN_OPTIONS or k in own) for k, (d, h) in e["options"].items()]
    return sorted(
        specs,
        key=lambda s: (
            not s.main,
            MAIN_OPTIONS.index(s.name) if s.name in MAIN_OPTIONS else len(MAIN_OPTIONS),
        ),
    )


def backend_uri(engine: str, values: Mapping[str, object] | None = None) -> str:
    """The backend URI of an engine and option values: the options that differ from their defaults, in
    the engine's order (`io_uring?registered_files=1&fixed_buffers=1`); an empty value is the default."""
    specs = {s.name: s for s in option_specs(engine)}
    values = dict(values or {})
    bad = [k for k in values if k not in specs]
    if bad:
        raise ValueError(f"option {bad[0]!r}: {engine} takes {', '.join(specs)}")
    parts = []
    for name, s in specs.items():
        v = str(values.get(name, "")).strip()
        if v and v != s.default:
            parts.append(f"{name}={v}")
    return engine + ("?" + "&".join(parts) if parts else "")


@dataclass
class TryResult:
    backend: str
    run: Path  # the stored run
    study: str  # its study id
    steps: pd.DataFrame  # the run's steps in the seeds' columns
    histogram: pd.DataFrame  # the measured step's latency histogram
    seconds: float


def try_run(
    engine: str,
    options: Mapping[str, object] | None = None,
    *,
    threads: int = 1,
    workload: str = "readrandom",
    scale: str = "smoke",
    root: str | os.PathLike | None = None,
    db_dir: str | None = None,
    progress: bool = True,
) -> TryResult:
    """One run of the start-here study with these choices; ValueError (one line) for a bad one."""
    uri = backend_uri(engine, options)
    params = STUDY.params(backend=uri, threads=threads, workload=workload, scale=scale, db_dir=db_dir)
    result = STUDY.run(params, root, progress=progress)
    run = result.runs[-1]
    return TryResult(
        uri, Path(run), result.study, tables.look(run), tables.histogram(run), result.elapsed_s or 0.0
    )


def first_line(e: BaseException) -> str:
    text = str(e.args[0]) if isinstance(e, KeyError) and e.args else str(e)
    return (text.strip().splitlines() or [type(e).__name__])[0]


class TryPanel:
    """The widgets: engine, its options (a text box each, its default filled in), threads, workload,
    scale, a run button; under them the URI being built, a status line, and the run's output (progress
    bars, then the steps table and the histogram). `last` and `error` hold what the last press gave."""

    def __init__(
        self,
        engine: str = "posix",
        *,
        threads: int = 1,
        workload: str = "readrandom",
        scale: str = "smoke",
        root: str | os.PathLike | None = None,
        db_dir: str | None = None,
    ):
        import ipywidgets as w  # noqa: PLC0415 - the `lab` extra; the functions above need no widgets

        self._w = w
        self.root, self.db_dir = root, db_dir
        self.last: TryResult | None = None
        self.error: str | None = None
        names = engine_names()
        self.engine = w.Dropdown(
            options=names, value=engine if engine in names else names[0], description="engine"
        )
        self.threads = w.BoundedIntText(
            value=threads, min=1, max=MAX_THREADS, description="threads", layout=w.Layout(width="160px")
        )
        self.workload = w.Dropdown(options=list(WORKLOADS), value=workload, description="workload")
        self.scale = w.ToggleButtons(
            options=["smoke", "small"],
            value=scale if scale in ("smoke", "small") else "smoke",
            tooltips=["20,000 keys: seconds", "500,000 keys: a minute"],
            style={"button_width": "70px"},
        )
        self.run_button = w.Button(
            description="run",
            icon="play",
            button_style="success",
            tooltip="load a DB, flush, measure the workload; stored like every run",
        )
        self.uri = w.HTML()
        self.status = w.HTML()
        self.out = w.Output()
        # the histogram as PNG bytes in an Image widget: a figure displayed from a button's callback through
        # the inline backend came out blank in JupyterLab (its axes not drawn), its own PNG does not
        self.image = w.Image(format="png", layout=w.Layout(display="none", max_width="620px"))
        self.main_box = w.GridBox(layout=w.Layout(grid_template_columns="repeat(3, 300px)"))
        self.more_box = w.GridBox(layout=w.Layout(grid_template_columns="repeat(3, 300px)"))
        self.more = w.Accordion(children=[self.more_box], titles=("more options",), selected_index=None)
        self.options: dict[str, object] = {}
        self.engine.observe(lambda _: self._engine_changed(), names="value")
        self.run_button.on_click(lambda _: self.run())
        self._engine_changed()
        self.widget = w.VBox(
            [
                w.HTML("<h4 style='margin:4px 0'>Try it: a backend, its options, a workload</h4>"),
                w.HBox([self.engine, self.threads, self.workload]),
                self.main_box,
                self.more,
                w.HBox([w.Label("scale"), self.scale, self.run_button]),
                self.uri,
                self.status,
                self.out,
                self.image,
            ]
        )

    def _engine_changed(self) -> None:
        w = self._w
        self.options = {}
        main, more = [], []
        for s in option_specs(self.engine.value):
            t = w.Text(
                value=s.default,
                description=s.name,
                tooltip=s.help,
                placeholder=s.default,
                style={"description_width": "110px"},
                layout=w.Layout(width="290px"),
            )
            t.observe(lambda _: self._show_uri(), names="value")
            self.options[s.name] = t
            (main if s.main else more).append(t)
        self.main_box.children = main
        self.more_box.children = more
        self._show_uri()

    def values(self) -> dict[str, str]:
        return {k: t.value for k, t in self.options.items()}

    def _show_uri(self) -> None:
        try:
            uri = backend_uri(self.engine.value, self.values())
        except ValueError as e:
            uri = f"({first_line(e)})"
        self.uri.value = f"backend: <code>{html.escape(uri)}</code>"

    def run(self) -> TryResult | None:
        """The run button: one run with the choices; its tables in the panel, or the error's one line."""
        from IPython.display import display  # noqa: PLC0415 - only in a notebook's kernel

        self.run_button.disabled = True
        self.error = None
        self.status.value = "<i>running: load, flush, then the workload ...</i>"
        self.out.clear_output()
        self.image.layout.display = "none"
        failed: Exception | None = None
        # the progress bars go to the panel's output; the error is caught inside it: an exception that
        # leaves `with out:` in a kernel is shown there as a traceback (and swallowed) by ipywidgets
        with self.out:
            try:
                r = try_run(
                    self.engine.value,
                    self.values(),
                    threads=int(self.threads.value),
                    workload=self.workload.value,
                    scale=self.scale.value,
                    root=self.root,
                    db_dir=self.db_dir,
                )
            except Exception as e:
                failed = e
            finally:
                self.run_button.disabled = False
        if failed is not None:
            self.out.clear_output()
            self.error = first_line(failed)
            self.status.value = f"<span style='color:#b00000'><b>error:</b> {html.escape(self.error)}</span>"
            return None
        self.last = r
        measured = r.steps.index[-1]
        q = r.steps.loc[measured]
        self.status.value = (
            f"<b>{html.escape(r.backend)}</b>: {measured} {q['qps']:,.0f} ops/s, "
            f"{q['rx.lat']:.1f} us mean, {q['cpuPer']:.1f} us CPU per op ({r.seconds:.1f} s; "
            f"stored as run <code>{r.run.name}</code>)"
        )
        self.out.clear_output(wait=True)
        with self.out:
            display(r.steps.round(2))
        fig = plots.draw_histogram(
            r.histogram.assign(backend=r.backend),
            title=f"{measured} on {r.backend}, {int(self.threads.value)} thread(s)",
            pyplot=False,
        )
        self.image.value = plots.png(fig)
        self.image.layout.display = None
        return r

    def _repr_mimebundle_(self, **kw):
        return self.widget._repr_mimebundle_(**kw)


def try_it(engine: str = "posix", **kw) -> TryPanel:
    """The panel, for a notebook cell: `quickstart.try_it()` (keywords: threads, workload, scale, root,
    db_dir). The panel offers smoke and small: a notebook run at full scale starts it at small."""
    if kw.get("scale") == "full":
        kw["scale"] = "small"
    return TryPanel(engine, **kw)
