"""Comparisons measured in turns: the order of a turn, ratios to a base with 95% intervals, the stopping rule.

A turn runs every configuration being compared once, and the base twice
(copies 0 and 1: the A/A control), in an order that moves from turn to turn
(`turn_order`). Each contender's per-turn ratio is paired within the turn:
its value over the geometric mean of the base's two values in the same turn,
so drift of the machine between turns cancels. The A/A ratio is the base's
copy 1 over its copy 0.

The interval (`ratio_interval`) is Student's t on the per-turn log ratios:
ratio = exp(mean), lo/hi = exp(mean -/+ t * se). Why not a bootstrap of the
per-turn ratios: the percentile bootstrap of a mean is too narrow with the
3 to 10 turns a budget allows (it cannot see more spread than the few values
drawn: 76%, 84% and 90% coverage at 3, 5 and 10 normal values, 2000
simulated streams each, 2026-11-27), while the t-interval accounts for n and
is exact for log-normal noise, which multiplicative noise on throughput is
close to; taking logs makes A/B and B/A symmetric. tests/core/test_resolution.py
checks the coverage on simulated streams. `half_width` is the interval's
larger relative side, exp(t * se) - 1, in percent.

The stopping rule (`StoppingRule`): keep adding turns until every
comparison's half-width is at most `target` percent, with at least
`min_turns` turns, or until the time `budget_s` would be overrun by another
turn; a contender whose comparisons are all resolved drops out of later
turns (the base and its A/A copy always run), so the time goes where the
intervals are wide. What is left unresolved says why: `budget`, `too few
turns`, `max turns`.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rxlab.core.stats import ratio_interval

__all__ = ["AB_MIN_TURNS", "COMPARISON_COLUMNS", "DEFAULT_TARGET_PCT", "MIN_TURNS", "StoppingRule", "Turns",
           "compare", "findings_line", "format_comparison", "parse_budget", "ratio_interval", "turn_order",
           "turn_ratios"]

DEFAULT_TARGET_PCT = 2.0   # the target: every comparison to +-2%
MIN_TURNS = 3              # before the rule may stop: two turns give an interval, three a first check of it
# `rxlab ab`'s turns take seconds, so it waits for more of them before the rule may stop. Stopping at the
# first turn whose interval is narrow enough favours turns whose spread came out small by chance, and
# the earlier the rule may stop the likelier that is: the coverage this costs is in
# docs/methods/resolution.md, and tests/core/test_resolution.py checks that the later start keeps more.
AB_MIN_TURNS = 8
LEVEL = 0.95
AA = "A/A"                 # the `config` name of the base's control row in comparison tables

COMPARISON_COLUMNS = ["base", "config", "comparison", "ratio", "lo", "hi", "half_width", "resolved", "turns",
                      "status"]


def turn_order(base: str, contenders: Sequence[str], turn: int) -> list[tuple[str, int]]:
    """(configuration, copy) in the order turn `turn` runs them: the base twice (copies 0 and 1), every
    contender once (copy 0). The items [base 0, contenders..., base 1] are rotated every two turns and
    reversed every other turn (ABBA), so each takes every position equally often and a linear drift
    cancels over pairs of turns."""
    items = [(base, 0), *((c, 0) for c in contenders), (base, 1)]
    k = turn // 2 % len(items)
    rot = items[k:] + items[:k]
    return rot if turn % 2 == 0 else rot[::-1]


def turn_ratios(obs: pd.DataFrame, base: str) -> pd.DataFrame:
    """Per turn, the log ratio of each configuration to the base (its value over the geometric mean of
    the base's copies in that turn) and the A/A log ratio (base copy 1 over copy 0), as rows of
    (turn, config, log_ratio); config `A/A` for the control. `obs` has turn, config, copy, value."""
    v = obs.assign(value=pd.to_numeric(obs["value"], errors="coerce"))
    v = v[v["value"] > 0]
    logs = v.assign(lv=np.log(v["value"]))
    b = logs[logs["config"] == base]
    ref = b.groupby("turn")["lv"].mean()     # log of the geometric mean of the base's copies
    rows = []
    others = logs[logs["config"] != base]
    for (turn, config), g in others.groupby(["turn", "config"], sort=False):
        if turn in ref.index:
            rows.append({"turn": turn, "config": config, "log_ratio": float(g["lv"].mean() - ref[turn])})
    pair = b.pivot_table(index="turn", columns="copy", values="lv", aggfunc="mean")
    if 0 in pair.columns and 1 in pair.columns:
        for turn, r in pair.dropna().iterrows():
            rows.append({"turn": turn, "config": AA, "log_ratio": float(r[1] - r[0])})
    return pd.DataFrame(rows, columns=["turn", "config", "log_ratio"])


def compare(obs: pd.DataFrame, base: str | Callable[[dict], str], keys: Sequence[str] = (), *,
            target: float = DEFAULT_TARGET_PCT, min_turns: int = MIN_TURNS, level: float = LEVEL,
            why_unresolved: str = "") -> pd.DataFrame:
    """The comparison table of observations `obs` (columns: the `keys`, turn, config, copy, value): per
    key, each configuration's ratio to the base with its interval, then the A/A row. `base` is the base
    configuration, or a function of a key's values ({key: value}) giving it. Columns: the keys, then
    COMPARISON_COLUMNS; `half_width` in percent, `turns` the turns behind the ratio, `resolved` half-width
    <= `target` with at least `min_turns` turns (the A/A row is the control: resolved says whether its
    spread is within the target too). `status` says "resolved" or "unresolved: <why>", `why_unresolved`
    (budget, ...) where the turns stopped for a reason besides the target."""
    keys = list(keys)
    out = []
    groups = obs.groupby(keys, sort=False) if keys else [((), obs)]
    for key, g in groups:
        kd = dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True))
        b = base(kd) if callable(base) else base
        r = turn_ratios(g, b)
        configs = [c for c in dict.fromkeys(g["config"]) if c != b] + [AA]
        for c in configs:
            lr = r.loc[r["config"] == c, "log_ratio"]
            if c == AA and lr.empty:
                continue
            ratio, lo, hi, hw = ratio_interval(lr, level)
            n = int(lr.notna().sum())
            ok = bool(n >= max(min_turns, 2) and np.isfinite(hw) and hw <= target)
            why = "resolved" if ok else f"unresolved: {_why(n, hw, target, min_turns, why_unresolved)}"
            out.append({**kd, "base": b, "config": c, "comparison": f"{b} A/A" if c == AA else f"{c} / {b}",
                        "ratio": ratio, "lo": lo, "hi": hi, "half_width": hw, "resolved": ok, "turns": n,
                        "status": why})
    return pd.DataFrame(out, columns=[*keys, *COMPARISON_COLUMNS])


def findings_line(g: pd.DataFrame, head: str, label: Callable[[Any], str], aa_label: str = "") -> str | None:
    """A study's findings bullet for one group of a comparison table (`compare`'s columns): how many of its
    ratios are resolved (`head` says of what: "posix, 0 us: 3 of 5 ratios to default"), those resolved
    with their half-width, those not with why ("not to be read as differences"), and the A/A control's
    widest half-width. `label(row)` names a row. None for a group with no comparison."""
    cmp, aa = g[g["config"] != AA], g[g["config"] == AA]
    if cmp.empty:
        return None
    ok, bad = cmp[cmp["resolved"].astype(bool)], cmp[~cmp["resolved"].astype(bool)]
    text = f"- In turns, {head.format(resolved=len(ok), of=len(cmp))} resolved"
    if len(ok):
        text += " (" + "; ".join(f"{label(r)} {r.ratio:.3f} +-{r.half_width:.1f}%"
                                 for r in ok.itertuples()) + ")"
    if len(bad):
        text += "; unresolved, not to be read as differences: " + "; ".join(
            f"{label(r)} {r.ratio:.3f} ({r.status.removeprefix('unresolved: ')})" for r in bad.itertuples())
    if aa["half_width"].notna().any():
        text += f"; A/A control{aa_label} within +-{aa['half_width'].max():.1f}%"
    return text + "."


def _why(n: int, hw: float, target: float, min_turns: int, stopped: str) -> str:
    if n < max(min_turns, 2):
        return f"too few turns ({n} < {max(min_turns, 2)})" + (f", {stopped}" if stopped else "")
    wide = f"+-{hw:.1f}% > +-{target:g}%"
    return f"{stopped} ({wide})" if stopped else wide


def format_comparison(r: Mapping) -> str:
    """One comparison row as text: `io_uring / default 1.043 [1.021..1.066] +-2.2%, 5 turns, resolved`."""
    if not np.isfinite(r.get("ratio", math.nan)):
        return f"{r['comparison']}: no ratio yet"
    iv = (f" [{r['lo']:.3f}..{r['hi']:.3f}] +-{r['half_width']:.1f}%" if np.isfinite(r["half_width"])
          else " (no interval yet)")
    return f"{r['comparison']} {r['ratio']:.3f}{iv}, {r['turns']} turns, {r['status']}"


_UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_budget(text: str | float | None, name: str = "budget") -> float | None:
    """Seconds from `10m`, `90s`, `1.5h` or a number of seconds; None for none/None. One line when bad."""
    if text is None or (isinstance(text, str) and text.strip().lower() in ("", "none")):
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        v = float(text)
    else:
        s = str(text).strip().lower()
        unit = _UNITS.get(s[-1:]) if s[-1:].isalpha() else 1
        try:
            v = float(s[:-1] if s[-1:].isalpha() else s) * (unit or math.nan)
        except ValueError:
            v = math.nan
    if not (np.isfinite(v) and v > 0):
        raise ValueError(f"{name}={text!r}: expected a positive time such as 90s, 10m, 1.5h (or seconds)")
    return v


@dataclass(frozen=True)
class StoppingRule:
    """When turns stop: every comparison's half-width <= `target` percent after at least `min_turns`,
    or the next turn would overrun `budget_s` seconds (None: no budget), or `max_turns` are done."""

    target: float = DEFAULT_TARGET_PCT
    budget_s: float | None = None
    min_turns: int = MIN_TURNS
    max_turns: int | None = None

    def __post_init__(self):
        if not (isinstance(self.target, (int, float)) and 0 < self.target < 100):
            raise ValueError(f"target={self.target!r}: expected a half-width in percent, 0 < target < 100 "
                             "(2 means +-2%)")
        if self.budget_s is not None and not self.budget_s > 0:
            raise ValueError(f"budget={self.budget_s!r}: expected a positive number of seconds or None")
        if not (isinstance(self.min_turns, int) and self.min_turns >= 1):
            raise ValueError(f"min_turns={self.min_turns!r}: expected an integer >= 1")
        if self.max_turns is not None and not (isinstance(self.max_turns, int) and self.max_turns >= 1):
            raise ValueError(f"max_turns={self.max_turns!r}: expected None or an integer >= 1")

    def out_of_time(self, elapsed_s: float, turn_s: float) -> bool:
        """Would one more turn of `turn_s` seconds overrun the budget?"""
        return self.budget_s is not None and elapsed_s + turn_s > self.budget_s

    def describe(self) -> str:
        b = f"{self.budget_s:g} s budget" if self.budget_s is not None else "no budget"
        m = f", at most {self.max_turns} turns" if self.max_turns else ""
        return f"target +-{self.target:g}%, at least {self.min_turns} turns, {b}{m}"


class Turns:
    """The turns of one comparison: what each turn runs, what it measured, when to stop.

        t = Turns(base, contenders, rule, keys=("test",))
        while (order := t.next_order()) is not None:
            t.add(rows measured in that order)       # dicts: keys..., config, copy, value
        t.table()                                    # the comparison table, unresolved said why

    `base` is a configuration name, or a function of a key's values giving it (each key's contenders
    are then those observed with it). A contender drops out of later turns once every one of its
    comparisons is resolved; the base and its A/A copy always run. `clock` is time.monotonic (tests
    pass their own).
    """

    def __init__(self, base: str, contenders: Sequence[str], rule: StoppingRule | None = None, *,
                 keys: Sequence[str] = (), clock: Callable[[], float] = time.monotonic):
        if not contenders or base in contenders or len(set(contenders)) != len(contenders):
            raise ValueError(f"contenders {list(contenders)}: need at least one, distinct, without the base "
                             f"{base!r}")
        self.base, self.contenders = base, list(contenders)
        self.rule = rule or StoppingRule()
        self.keys = list(keys)
        self.clock = clock
        self.t0 = clock()
        self.turn = 0                  # turns done
        self.turn_s: list[float] = []
        self.rows: list[dict] = []
        self.stopped = ""              # why the turns stopped early (budget, max turns), "" otherwise
        self._started: float | None = None

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self.t0

    def table(self) -> pd.DataFrame:
        obs = pd.DataFrame(self.rows, columns=[*self.keys, "turn", "config", "copy", "value"])
        return compare(obs, self.base, self.keys, target=self.rule.target, min_turns=self.rule.min_turns,
                       why_unresolved=self.stopped)

    def active(self) -> list[str]:
        """The contenders that still need turns (some comparison of theirs unresolved)."""
        t = self.table()
        done = set(t.loc[t["resolved"], "config"]) - set(t.loc[~t["resolved"], "config"])
        return [c for c in self.contenders if c not in done]

    def next_order(self) -> list[tuple[str, int]] | None:
        """The (config, copy) order of the next turn, or None when the rule says stop (`stopped` then
        says why, when it is not that everything is resolved)."""
        if self._started is not None:
            self.turn_s.append(self.clock() - self._started)
            self._started = None
            self.turn += 1
        active = self.active() if self.turn else list(self.contenders)
        if not active and self.turn >= self.rule.min_turns:
            return None
        if self.rule.max_turns is not None and self.turn >= self.rule.max_turns:
            self.stopped = "max turns"
            return None
        if self.turn and self.rule.out_of_time(self.elapsed_s, float(np.mean(self.turn_s[-3:]))):
            self.stopped = "budget"
            return None
        self._started = self.clock()
        return turn_order(self.base, active or self.contenders, self.turn)

    def add(self, rows: Iterable[Mapping]) -> None:
        """Rows measured in the current turn: the keys, config, copy, value."""
        for r in rows:
            self.rows.append({**{k: r[k] for k in self.keys}, "turn": self.turn, "config": r["config"],
                              "copy": int(r.get("copy", 0)), "value": float(r["value"])})
