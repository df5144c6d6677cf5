"""The Study protocol's turns: a study says what it compares, the protocol runs it in turns until resolved.

A study that compares configurations declares `compare=Compare(...)` in its
class statement and takes `TurnsParams` (target, budget, min_turns,
max_turns) in its Params. Its `plan(params)` then gives the rows of ONE
turn, without a repetition column: the protocol (`run_turns`, called by
`Study.run`) orders each group's configurations by
`rxlab.core.resolution.turn_order` (the base twice: the A/A pair), adds the
turn and copy columns, runs the rows through `run_one`, and after each turn
computes the comparison table from the study's own frame (`comparisons`).
It stops when every comparison is resolved to the target, or the budget
would be overrun by another turn; a configuration resolved in every one of
its comparisons drops out of later turns. What was decided is kept in the
manifest (`turns`), so a loaded study's table says why a comparison is
unresolved.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from rxlab.core import params as checks
from rxlab.core import resolution, scales
from rxlab.core.resolution import DEFAULT_TARGET_PCT, MIN_TURNS, StoppingRule, parse_budget
from rxlab.core.study import StudyParams, StudyResult, manifest

__all__ = ["TURN_BUDGETS", "Compare", "TurnsParams", "comparisons", "observations", "run_turns", "turn_rows"]

# The time a study's turns may take, by scale, unless its `budget` says otherwise: the scale presets'
# (rxlab.core.scales.COMMON: a few seconds at smoke, room for the rule to resolve at small and full).
TURN_BUDGETS = {name: preset["budget_s"] for name, preset in scales.COMMON.items()}


@dataclass(frozen=True)
class Compare:
    """What a study compares. `config`: the plan (and frame) column naming a configuration (backend).
    `base`: the base configuration, or None: each group's first configuration in the plan (the frame
    knows it again as the one that ran twice a turn, copy 1).
    `metric`: the frame column whose ratio is reported (higher or lower is the study's to say).
    `groups`: plan columns; each group is compared on its own (device case). `keys`: frame columns
    that split a group's comparisons further (test). `turn` and `copy`: the plan's and frame's
    columns for the turn number and the base's copy (0, 1 for its A/A second run)."""

    config: str
    metric: str
    base: str | None = None
    groups: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()
    turn: str = "rep"
    copy: str = "copy"
    label: str = ""                  # the metric's words for figures ("MB/s")

    def base_of(self, configs: list) -> str:
        return self.base if self.base is not None else configs[0]

    def run_turns(self, study, ctx, units: pd.DataFrame, run_row: Callable[[Any], None], *,
                  frame: Callable[[], pd.DataFrame], progress: bool = True) -> dict:
        """`run_turns` for Study.run (which reaches it through the study's `compare`, so that
        rxlab.core.study need not import this module, which imports it)."""
        return run_turns(study, ctx, units, run_row, frame=frame, progress=progress)


@dataclass
class TurnsParams(StudyParams):
    """Parameters of a study measured in turns. target: the half-width (percent) every comparison's
    95% interval must reach; budget: the time the turns may take ("10m", seconds; None: the scale's,
    TURN_BUDGETS); min_turns: before the rule may stop; max_turns: None or a cap."""

    # The study's own scale presets (rxlab.core.scales.presets), when its budget_s differs from the common
    # one: a study sets `SCALES = SCALES` in its Params class body (no annotation: not a parameter).
    SCALES: ClassVar[Mapping | None] = None

    target: float = DEFAULT_TARGET_PCT
    budget: Any = None
    min_turns: int = MIN_TURNS
    max_turns: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if not (checks.is_number(self.target) and 0 < self.target < 100):
            checks.fail("target", self.target, "expected a half-width in percent, 0 < target < 100 (2: +-2%)")
        try:
            parse_budget(self.budget)
        except ValueError:
            checks.fail("budget", self.budget, "expected None (the scale's) or a time such as 90s, 10m, 1.5h")
        self.min_turns = checks.integer("min_turns", self.min_turns, 1, 1000)
        checks.optional_integer("max_turns", self.max_turns, 1, 1000, none="None (no cap)")

    def scale_budget(self) -> float | None:
        """The turns' budget when `budget` is None: the study's preset for its scale, else the common one."""
        return self.budget_at(self.scale)

    @classmethod
    def budget_at(cls, scale: str) -> float | None:
        """The turns' budget at `scale` when none is given (what `rxlab report` splits its time by, without
        making the parameters, which may refuse: a missing build)."""
        if cls.SCALES and scale in cls.SCALES:
            return float(cls.SCALES[scale].budget_s)
        return TURN_BUDGETS.get(scale)

    def rule(self) -> StoppingRule:
        """The stopping rule: the target, the budget (given, else the scale's) and the bounds on turns; or,
        for a study with a `repeats` parameter that is given, exactly that many turns and no budget."""
        repeats = getattr(self, "repeats", None)
        if repeats is not None:
            return StoppingRule(target=float(self.target), budget_s=None, min_turns=repeats,
                                max_turns=repeats)
        budget = parse_budget(self.budget)
        return StoppingRule(target=float(self.target),
                            budget_s=budget if budget is not None else self.scale_budget(),
                            min_turns=self.min_turns, max_turns=self.max_turns)


def _groups(units: pd.DataFrame, cmp: Compare) -> list[tuple]:
    if not cmp.groups:
        return [()]
    return list(dict.fromkeys(units[list(cmp.groups)].itertuples(index=False, name=None)))


def _in_group(units: pd.DataFrame, cmp: Compare, g: tuple) -> pd.DataFrame:
    sel = np.ones(len(units), dtype=bool)
    for col, v in zip(cmp.groups, g, strict=True):
        sel &= (units[col] == v).to_numpy()
    return units[sel]


def turn_rows(units: pd.DataFrame, cmp: Compare, turn: int,
              active: Mapping[tuple, list[str]] | None = None) -> pd.DataFrame:
    """The rows turn `turn` runs, in order: the groups rotated from turn to turn, within each group its
    configurations in `turn_order` (the base's rows twice, copy 0 and 1; `active`: the contenders that
    still run, by group; a group with none left is done and skipped), each configuration's rows in the
    plan's order. Adds the turn and copy columns."""
    gs = _groups(units, cmp)
    k = turn % len(gs)
    out = []
    for g in gs[k:] + gs[:k]:
        sub = _in_group(units, cmp, g)
        configs = list(dict.fromkeys(sub[cmp.config]))
        base = cmp.base_of(configs)
        if base not in configs:
            raise ValueError(f"{dict(zip(cmp.groups, g, strict=True)) or 'the plan'}: its base {base!r} is "
                             f"not among the configurations compared ({', '.join(map(str, configs))})")
        want = [c for c in configs if c != base and (active is None or c in active.get(g, configs))]
        if active is not None and not want:
            continue
        for c, copy in resolution.turn_order(base, want, turn):
            out.append(sub[sub[cmp.config] == c].assign(**{cmp.turn: turn, cmp.copy: copy}))
    cols = [*units.columns, cmp.turn, cmp.copy]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def observations(frame: pd.DataFrame, cmp: Compare) -> pd.DataFrame:
    """A study's frame as the observations `resolution.compare` takes: groups, keys, turn, config, copy,
    value (the metric; rows without it are left out)."""
    cols = [*cmp.groups, *cmp.keys]
    if frame.empty:
        return pd.DataFrame(columns=[*cols, "turn", "config", "copy", "value"])
    f = frame
    copy = f[cmp.copy] if cmp.copy in f.columns else pd.Series(0, index=f.index)
    obs = pd.DataFrame({**{c: f[c] for c in cols}, "turn": f[cmp.turn], "config": f[cmp.config],
                        "copy": pd.to_numeric(copy, errors="coerce").fillna(0).astype(int),
                        "value": pd.to_numeric(f[cmp.metric], errors="coerce")})
    # a row without the metric observed nothing (a whole run whose throughput a study takes from slices)
    return obs[obs["value"].notna()].reset_index(drop=True)


def _decided(result: StudyResult) -> dict:
    """What the turns decided for a result: its own record, else its manifest's."""
    if getattr(result, "turns", None):
        return dict(result.turns)
    m = manifest(result.root, result.study) or {}
    return dict(m.get("turns") or {})


def comparisons(frame: pd.DataFrame, cmp: Compare, *, target: float = DEFAULT_TARGET_PCT,
                min_turns: int = MIN_TURNS, stopped: str = "") -> pd.DataFrame:
    """The comparison table of a study's frame: per group and key, each configuration's ratio to the
    base with its 95% interval, then the A/A row (rxlab.core.resolution.compare's columns)."""
    obs = observations(frame, cmp)
    keys = [*cmp.groups, *cmp.keys]
    bases = {}
    for g, sub in (obs.groupby(list(cmp.groups), sort=False) if cmp.groups else [((), obs)]):
        twice = list(dict.fromkeys(sub.loc[sub["copy"] == 1, "config"]))
        bases[g if isinstance(g, tuple) else (g,)] = twice[0] if twice else cmp.base_of(list(dict.fromkeys(
            sub["config"])))
    return resolution.compare(obs, lambda kd: bases[tuple(kd[g] for g in cmp.groups)], keys,
                              target=target, min_turns=min_turns, why_unresolved=stopped)


def result_comparisons(result: StudyResult, cmp: Compare) -> pd.DataFrame:
    """`comparisons` of a study's result, with the target and the reason the turns stopped as decided
    when it ran (its manifest for a loaded study; the defaults for a study stored before turns)."""
    d = _decided(result)
    p = result.params
    target = float(d.get("target") or getattr(p, "target", DEFAULT_TARGET_PCT))
    min_turns = int(d.get("min_turns") or getattr(p, "min_turns", MIN_TURNS))
    return comparisons(result.frame, cmp, target=target, min_turns=min_turns, stopped=d.get("stopped", ""))


def _active(table: pd.DataFrame, cmp: Compare) -> dict[tuple, list[str]]:
    """Per group, the contenders with a comparison still unresolved (the A/A row does not count)."""
    out: dict[tuple, list[str]] = {}
    t = table[table["config"] != resolution.AA]
    for key, sub in (t.groupby(list(cmp.groups), sort=False) if cmp.groups else [((), t)]):
        left = sub.loc[~sub["resolved"].astype(bool), "config"]
        out[key if isinstance(key, tuple) else (key,)] = list(dict.fromkeys(left))
    return out


def run_turns(study, ctx, units: pd.DataFrame, run_row: Callable[[Any], None], *,
              frame: Callable[[], pd.DataFrame], progress: bool = True) -> dict:
    """Run `units` (one turn's plan rows) in turns by `ctx.params.rule()`: `run_row(row)` runs and stores
    a row, `frame()` gives the study's frame of the runs so far. A study whose turn is one measurement of
    all its rows at once (processes in turns) defines `run_turn(ctx, rows) -> runs` instead, and puts the
    seconds of work that later turns will not repeat (the backends study's whole runs of its first turn)
    in ctx.state["turn_once_s"], which the budget's forecast of the next turn leaves out; one that
    shows the comparisons as they converge defines `on_turn(ctx, table, decided)`. The progress bar
    shows the widest half-width. Returns (and keeps in ctx.state["turns"], for the manifest) what was
    decided: target, min_turns, budget_s, turns, stopped ('' when every comparison resolved), seconds,
    widest half-width."""
    cmp: Compare = study.compare
    rule: StoppingRule = ctx.params.rule()
    t0 = time.monotonic()
    turn_s: list[float] = []
    decided = {"target": rule.target, "min_turns": rule.min_turns, "budget_s": rule.budget_s, "turns": 0,
               "stopped": "", "seconds": 0.0, "widest_half_width": math.nan}
    ctx.state["turns"] = decided
    bar = tqdm(total=0, desc=f"{study.name} {ctx.params.scale} in turns", unit="run", disable=not progress)
    active = None
    try:
        turn = 0
        while True:
            if turn:
                table = comparisons(frame(), cmp, target=rule.target, min_turns=rule.min_turns)
                active = _active(table, cmp)
                wide = table.loc[table["config"] != resolution.AA, "half_width"]
                decided["widest_half_width"] = float(wide.max()) if wide.notna().any() else math.nan
                if hasattr(study, "on_turn"):
                    study.on_turn(ctx, table, decided)
                if turn >= rule.min_turns and not any(active.values()):
                    break
                if rule.max_turns is not None and turn >= rule.max_turns:
                    decided["stopped"] = "max turns"
                    break
                if rule.out_of_time(time.monotonic() - t0, float(np.mean(turn_s[-3:]))):
                    decided["stopped"] = "budget"
                    break
                if turn < rule.min_turns:
                    active = None       # every contender runs the first min_turns turns
            rows = turn_rows(units, cmp, turn, active)
            bar.total += len(rows)
            start = time.monotonic()
            ctx.state["turn_once_s"] = 0.0
            if hasattr(study, "run_turn"):
                ctx.runs.extend(study.run_turn(ctx, rows))
                bar.update(len(rows))
            for row in rows.itertuples(index=False) if not hasattr(study, "run_turn") else ():
                bar.set_postfix_str(f"turn {turn + 1} widest +-{decided['widest_half_width']:.1f}% "
                                    f"(target {rule.target:g}%) {study.describe(row)}"[:80])
                run_row(row)
                bar.update()
            # what the next turn will take: this one's time but for work later turns do not repeat
            turn_s.append(time.monotonic() - start - float(ctx.state.pop("turn_once_s", 0.0)))
            turn += 1
            decided["turns"] = turn
            decided["seconds"] = round(time.monotonic() - t0, 1)
    finally:
        bar.close()
    decided["seconds"] = round(time.monotonic() - t0, 1)
    return decided
