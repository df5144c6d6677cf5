"""A performance-model study's result: its parts (the IO-efficiency studies, the placement and device-load
runs) and the analyses every table, figure and finding reads, each computed once."""
from __future__ import annotations

from functools import cached_property

import pandas as pd

from rxlab.bench.ioeff.matching import same_as
from rxlab.bench.ioeff.result import IoEfficiencyResult
from rxlab.core import model
from rxlab.core.study import StudyResult
from rxlab.studies.perf_model import analysis, device_load, placement
from rxlab.studies.perf_model.params import IOEFF, ioeff_study

# The frame's `part` of each kind of run.
PARTS = ("io_efficiency", "delayed", "placement", "device_load")
_INTS = ("rep", "threads", "delay_us")
STAMP = len("20261122T210817")   # a study id's start second (see core.study.new_study_id)


class PerfModelResult(StudyResult):
    """frame: the rows of every part, `part` first: io_efficiency and delayed (the IO-efficiency
    studies' frames, `study` their own ids), placement and device_load (`run`'s rows of those
    measurements, `study` this study's id)."""

    def _part(self, part: str) -> pd.DataFrame:
        f = self.frame
        return f[f["part"] == part].dropna(axis=1, how="all") if "part" in f.columns else f.iloc[:0]

    def _ioeff(self, part: str) -> IoEfficiencyResult | None:
        f = self._part(part)
        if f.empty:
            return None
        f = f.drop(columns="part").astype({c: int for c in _INTS}).reset_index(drop=True)
        return IoEfficiencyResult(study=str(f["study"].iloc[0]), frame=f,
                                  runs=[self.root / r for r in f["run_id"].unique()], root=self.root,
                                  name=IOEFF)

    @cached_property
    def ioeff(self) -> IoEfficiencyResult:
        """The IO-efficiency study the model is fitted on (notebook 10's, same parameters)."""
        r = self._ioeff("io_efficiency")
        if r is None:
            raise ValueError(f"study {self.study}: no IO-efficiency runs")
        return r

    @cached_property
    def delayed(self) -> IoEfficiencyResult | None:
        """The delay study (one client, emulated device latencies), None when none ran."""
        return self._ioeff("delayed")

    @property
    def reused(self) -> list[str]:
        """The IO-efficiency studies taken from the store rather than run by this study: their ids start
        with an earlier second. Ids are the start second and 4 random hex digits, so only the second
        orders them: a part run by this study may start in this study's own second, while one taken
        from the store had finished (seconds at the least) before this study began."""
        own = self.study[:STAMP]
        return [r.study for r in (self.ioeff, self.delayed) if r is not None and r.study[:STAMP] < own]

    @cached_property
    def placement_runs(self) -> pd.DataFrame:
        """placement.run's rows (one per fio run)."""
        return self._part("placement").reindex(columns=placement.COLUMNS).reset_index(drop=True)

    @cached_property
    def device_load_runs(self) -> pd.DataFrame:
        """device_load.run's rows (one per fio run)."""
        return self._part("device_load").reindex(columns=device_load.COLUMNS).reset_index(drop=True)

    @cached_property
    def rows(self) -> pd.DataFrame:
        """The model's input rows: the fio baselines and the seed's read tests of both studies."""
        return analysis.model_rows(self.ioeff, self.delayed)

    @cached_property
    def comparison(self) -> analysis.Comparison:
        """The seed's model and the fitted one, on the seed's tables and on these rows."""
        return analysis.compare_models(self.rows)

    @cached_property
    def held_out(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """analysis.held_out on these rows: (predicted rows, summary per split and model)."""
        return analysis.held_out(self.rows)

    @cached_property
    def held_out_without_steal(self) -> pd.DataFrame | None:
        """held_out's summary on the same rows without stealPer (None when the rows carry none)."""
        if model.STEAL not in self.rows.columns:
            return None
        return analysis.held_out(self.rows.drop(columns=model.STEAL))[1]

    @cached_property
    def repeat(self) -> pd.DataFrame:
        return analysis.repeatability(self.rows)

    @cached_property
    def earlier(self) -> IoEfficiencyResult | None:
        """The latest IO-efficiency study of the same configurations stored before this one's."""
        return ioeff_study().load(self.root, where=same_as(self.ioeff), before=self.ioeff.study)

    @cached_property
    def agreement(self) -> pd.DataFrame | None:
        """The same configurations' medians in the earlier study and in this one (None without one)."""
        return analysis.agreement(analysis.model_rows(self.earlier), self.rows) if self.earlier else None

    @cached_property
    def steal(self) -> pd.Series | None:
        """analysis.steal_effect of the rows (None where they carry no stealPer)."""
        try:
            return analysis.steal_effect(self.rows)
        except ValueError:
            return None

    @cached_property
    def gap(self) -> pd.DataFrame:
        """Where a query's time goes per row, the wait for a CPU counted (model.latency_gap, runq=True)."""
        return model.latency_gap(self.rows, runq=True)

    @cached_property
    def iostat_fit(self) -> model.ModelFit:
        """The model given each run's own disk latency (device="iostat"), on every local row."""
        return model.fit(self.rows, device="iostat")

    @cached_property
    def sensitivity(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(curves, points) of the seed's two bullets, from the fit on the local rows."""
        return analysis.sensitivity_data(self.comparison.fits["local"], self.rows)
