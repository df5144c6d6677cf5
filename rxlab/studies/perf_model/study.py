"""The performance-model study: the IO-efficiency runs the model is fitted on, and two measurements of
the machine that say why more clients are hard to predict from one.

Its plan has a row per part: the IO-efficiency study of the notebook's
parameters and the delay study (each taken from the store when a complete
study of the same parameters is there, else run through that study's own
`Study.run`, so that it is stored, and found again, as an IO-efficiency
study; that study comes from the registry, by name: no module of it is
imported here), then the placement and device-load measurements (rxlab fio,
stored under this study's id).

`load` is overridden: a reused IO-efficiency study's runs carry that study's
names and may belong to several model studies, so the runs of a model study
cannot be told by their names; the manifest's list of runs is the record.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from rxlab.bench.ioeff.matching import matching
from rxlab.bench.ioeff.names import PUBLISHED, SEED_FILE
from rxlab.core import store
from rxlab.core.resolution import parse_budget
from rxlab.core.study import MANIFESTS, RunContext, Study, StudyParams, manifest
from rxlab.studies.perf_model import device_load, figures, placement, tables
from rxlab.studies.perf_model import findings as findings_
from rxlab.studies.perf_model.params import Params, ioeff_study
from rxlab.studies.perf_model.result import PerfModelResult

RUN_PREFIX = "model-"
PLAN_COLUMNS = ["part", "what"]


def _add_turns(state: dict, part: str, decided: dict | None) -> None:
    """Adds a part's turns to the study's record (the manifest's `turns`): turns, seconds and the
    widest half-width over the parts run here, stopped as the last part that stopped early, each part's
    own record under `parts`."""
    if not decided:
        return
    t = state.setdefault("turns", {"turns": 0, "seconds": 0.0, "stopped": "", "parts": {}})
    t["parts"][part] = dict(decided)
    t["turns"] += int(decided.get("turns", 0))
    t["seconds"] = round(t["seconds"] + float(decided.get("seconds", 0.0)), 1)
    t["stopped"] = decided.get("stopped") or t["stopped"]
    widths = pd.Series([d.get("widest_half_width") for d in t["parts"].values()], dtype=float)
    t["widest_half_width"] = float(widths.max())   # NaN while no part has an interval
    for k in ("target", "min_turns"):
        if k in decided:
            t[k] = decided[k]
    t["budget_s"] = sum(d.get("budget_s") or 0 for d in t["parts"].values()) or None


class PerfModelStudy(Study, name="perf_model", notebook="20_perf_model", seed=SEED_FILE, published=PUBLISHED,
                            run_prefix=RUN_PREFIX, params=Params, result=PerfModelResult,
                            tables=tables.TABLES, figures=figures.FIGURES):
    """The seed's performance model and a fitted one, against this machine's IO-efficiency runs."""

    def plan(self, params: Params) -> pd.DataFrame:
        """One row per part, in execution order: io_efficiency, delayed (when a delay is above 0),
        placement, device_load."""
        rows = [("io_efficiency", "notebook 10's study of these parameters (from the store, else run)")]
        if params.delay_params() is not None:
            rows.append(("delayed", f"one client, delay_us {params.delay_us} (from the store, else run)"))
        s = params.settings()
        rows += [("placement", f"fio by where its jobs run, {s.repeats} x {len(placement.CONFIGS)} runs"),
                 ("device_load", f"fio under the vCPUs' load, {s.repeats} x "
                                 f"{len(device_load.THINK_US) * len(device_load.NEIGHBOURS)} runs")]
        return pd.DataFrame(rows, columns=PLAN_COLUMNS)

    def describe(self, row) -> str:
        return row.part

    def run_one(self, ctx: RunContext, row) -> list[Path]:
        p: Params = ctx.params
        if row.part in ("io_efficiency", "delayed"):
            io = ioeff_study()
            if "ioeff_to_run" not in ctx.state:   # decided before the first part runs and is stored
                ctx.state["ioeff_to_run"] = self._to_run(ctx)
            parts = ctx.state["ioeff_to_run"]
            ioeff = self._part_params(p, row.part)
            res = io.load(ctx.root, where=matching(ioeff)) if row.part not in parts else None
            if res is None:
                # the turns of the parts run here share one budget, so that the notebook's turns take
                # what `rxlab report` gave it, not that once per part
                total = parse_budget(p.budget) or p.budget_at(p.scale)
                ioeff = replace(ioeff, budget=total / len(parts) if total else None)
                res = io.run(ioeff, ctx.root, progress=ctx.progress)
                _add_turns(ctx.state, row.part, getattr(res, "turns", None))
            return list(res.runs)
        s = ctx.settings
        measure = placement.measure if row.part == "placement" else device_load.measure
        df = measure(ctx.work, size=s.fio_size, runtime=s.fio_runtime, repeats=s.repeats, root=ctx.root,
                     scale=p.scale, study=ctx.id, name=ctx.run_name(row.part.replace("_", "-")))
        return [Path(r) for r in df["run"].dropna()]

    @staticmethod
    def _part_params(p: Params, part: str) -> StudyParams:
        return p.ioeff_params() if part == "io_efficiency" else p.delay_params()

    def _to_run(self, ctx: RunContext) -> list[str]:
        """The IO-efficiency parts of the plan that the store does not hold yet (each runs in turns)."""
        io = ioeff_study()
        parts = [r.part for r in self.plan(ctx.params).itertuples() if r.part in ("io_efficiency", "delayed")]
        return [part for part in parts
                if io.load(ctx.root, where=matching(self._part_params(ctx.params, part))) is None]

    def frame(self, cat: pd.DataFrame) -> pd.DataFrame:
        """Every part's rows from catalog rows, `part` first (see PerfModelResult)."""
        parts = []
        io = ioeff_study().frame(cat)
        if len(io):
            delayed = io.groupby("study")["delay_us"].transform(lambda d: bool((d > 0).any())).astype(bool)
            parts.append(io.assign(part=np.where(delayed, "delayed", "io_efficiency")))
        for part, measurement in (("placement", placement), ("device_load", device_load)):
            rows = measurement.frame(cat)
            if len(rows):
                sid = cat.groupby("run_id")["spec.study"].first()
                parts.append(rows.assign(part=part, run_id=rows["run"], study=rows["run"].map(sid)))
        if not parts:
            return pd.DataFrame(columns=["part", "study", "run_id"])
        out = pd.concat(parts, ignore_index=True)
        return out[["part", *[c for c in out.columns if c != "part"]]]

    def complete(self, frame: pd.DataFrame) -> bool:
        """The IO-efficiency study and both measurements are there."""
        have = set(frame["part"]) if "part" in frame.columns else set()
        return {"io_efficiency", "placement", "device_load"} <= have

    def load(self, root: str | os.PathLike | None = None, *, study: str | None = None,
             scale: str | None = None, before: str | None = None,
             where: Callable[[pd.DataFrame], bool] | None = None) -> PerfModelResult | None:
        """The latest complete model study in the store, or None, found through the manifests (see the
        module's notes). Filters as Study.load's."""
        root = Path(root) if root is not None else store.default_root()
        d = root / MANIFESTS
        for sid in sorted((m.stem for m in d.glob("*.json")), reverse=True) if d.is_dir() else []:
            m = manifest(root, sid)
            if (not m or m.get("study") != self.name or m.get("status") != "complete"
                    or (study is not None and sid != study) or (before is not None and sid >= before)
                    or (scale is not None and m.get("scale") != scale)):
                continue
            runs = [root / r for r in m.get("runs", [])]
            if not runs or not all(store.is_complete(r) for r in runs):
                continue
            f = self.frame(store.catalog(root, runs=runs))
            if (where is None or where(f)) and self.complete(f):
                return self.result_type(study=sid, frame=f, runs=runs, root=root, name=self.name)
        return None

    def findings(self, result: PerfModelResult) -> str:
        return findings_.findings(result)

    def live_table(self, result: PerfModelResult) -> pd.DataFrame:
        f = result.frame
        return f.groupby(["part", "study"], sort=False).size().rename("rows").reset_index()
