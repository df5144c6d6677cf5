"""Which stored IO-efficiency study ran the same configurations: `where` filters for `Study.load`.

A study that builds on the seed's runs (perf_model) finds them in the store
by what they ran, not by the study that ran them: its backend, scale, thread
counts, block_align settings and delays (repetitions and sizes aside).
"""
from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from rxlab.bench.ioeff.names import DB_TOOL
from rxlab.bench.ioeff.result import IoEfficiencyResult

__all__ = ["configuration", "matching", "same_as"]


def configuration(frame: pd.DataFrame) -> dict:
    """What a stored study ran, as `matching` compares it: its backends, scales, thread counts,
    block_align settings and delays (repetitions and sizes aside)."""
    db = frame[frame["tool"] == DB_TOOL]
    return {"backend": set(frame["backend"]),
            "scale": set(frame["spec.scale"].dropna()) if "spec.scale" in frame.columns else set(),
            "threads": {int(t) for t in frame["threads"]},
            "block_align": {bool(b) for b in db["block_align"]},
            "delay_us": {int(d) for d in frame["delay_us"]}}


def matching(params=None, *, backend: str | None = None,
             delayed: bool | None = None) -> Callable[[pd.DataFrame], bool]:
    """A `where` filter for `load`: a study of these parameters (an IO-efficiency study's: the same
    backend and scale, and the same sets of thread counts, block_align settings and delays;
    repetitions and sizes are not compared), of this backend, or with (True) or without (False)
    delayed rows."""
    want = None if params is None else {
        "backend": {params.backend}, "scale": {params.scale}, "threads": set(params.threads),
        "block_align": set(params.block_align), "delay_us": set(params.delay_us)}

    def where(f: pd.DataFrame) -> bool:
        have = configuration(f)
        return ((want is None or have == want) and (backend is None or have["backend"] == {backend})
                and (delayed is None or bool((f["delay_us"] > 0).any()) == delayed))
    return where


def same_as(result: IoEfficiencyResult) -> Callable[[pd.DataFrame], bool]:
    """A `where` filter for `load`: a study of the same configuration as `result`'s."""
    want = configuration(result.frame)
    return lambda f: configuration(f) == want
