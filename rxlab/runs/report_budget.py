"""The report's time split among its notebooks: `rxlab report --budget`.

Each study measured in turns stops when its comparisons are resolved or its
own budget is spent (rxlab.core.resolution). Left alone, the report's time
is the sum of those budgets and of the work that is not turns (loading DBs,
fio's baselines, the model's fits), and it grows with every study added.
With a budget for the whole report, before each notebook the time left is
set against what the notebooks still to run are expected to take: each
one's time in the last report at this scale (figures/index.md, read by
rxlab.runs.report.expected_times), else its
turns' budget and a margin. When they fit, the notebook keeps its own
budget. When they do not, the excess is taken from the turns of the
notebooks still to run, each in proportion to what its turns are expected
to take, and the notebook about to run is given its share. Planned again
before every notebook, so one that finishes early leaves its time to those
after it, and one that overruns takes it from them. A notebook without a
`budget` parameter runs as it is; its time counts against the others.

A study's stopping rule starts another turn only when it fits its budget,
so a budget is worth whole turns: a cut of a tenth of a turn would cost the
study the whole of its last one. Where the last report recorded a notebook's
turns (figures/index.md: how many, how long each, why they stopped), its
share is rounded to the nearest whole number of its turns, at least one,
and given with half a turn to spare either way, so turns a little longer or
shorter than last time still make the planned number. What rounding up
takes beyond the share, the notebooks after it give back when the plan is
made again; the last notebook's can overrun the report by half a turn.
The same record corrects a stale time: a notebook whose turns stopped at a
budget cut by that report is expected to take, at its own budget, the turns
that fit it.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FLOOR_S", "MARGIN_S", "REPORT_BUDGETS", "Slot", "share", "turns_fitting"]

# The whole report's time when none is given: small stays inside the 67 minutes the report took before its
# studies measured in turns, with a margin for a notebook that overruns its share; smoke and full have
# none (smoke's studies take seconds; full is as long as the disk makes it).
REPORT_BUDGETS: dict[str, float | None] = {"smoke": None, "small": 65 * 60.0, "full": None}

# The least a notebook's turns are given: one turn still runs whatever its budget (the stopping rule
# always runs the first), so a smaller number would only hide that the report is over its time.
FLOOR_S = 60.0

# What a notebook not in the last report is expected to take beyond its turns' budget (its DB, its fio
# baselines, its figures), and in all when it takes no budget.
MARGIN_S = 120.0


@dataclass(frozen=True)
class Slot:
    """A notebook still to run: its name, its turns' budget at the scale (None: it has no `budget`
    parameter), the seconds it is expected to take, and, when the last report recorded them, how long
    one of its turns took and the seconds its turns are expected to take."""

    name: str
    turns_budget: float | None
    expected_s: float
    turn_s: float | None = None
    expected_turns_s: float | None = None

    @property
    def turns_s(self) -> float:
        """What its turns are expected to take: as recorded, else its budget, or less when the whole
        notebook took less last time."""
        if not self.turns_budget:
            return 0.0
        if self.expected_turns_s is not None:
            return min(self.turns_budget, self.expected_turns_s)
        return min(self.turns_budget, self.expected_s)


def turns_fitting(budget_s: float, turn_s: float) -> int:
    """How many turns of `turn_s` seconds the stopping rule runs in `budget_s`: it starts another only
    when it ends inside the budget, and always runs the first."""
    return max(1, math.floor(budget_s / turn_s + 1e-9))


def _whole_turns(given: float, slot: Slot) -> float:
    """`given` rounded to the nearest whole number of the slot's turns (at least one), with half a turn
    to spare, never above its own budget."""
    k = max(1, round(given / slot.turn_s))
    return min(slot.turns_budget, (k + 0.5) * slot.turn_s)


def share(slots: Sequence[Slot], left_s: float, floor_s: float = FLOOR_S) -> float | None:
    """The turns' budget for `slots[0]`, the next notebook, with `left_s` seconds of the report's budget
    left and `slots` still to run: None (its own budget) when it has none to give or all are expected
    to fit; else its expected turns less its share of the excess, never below `floor_s` (or its own
    budget, when that is smaller), in whole turns when its turn's length is known."""
    if not slots:
        raise ValueError("share: no notebook left to run")
    first = slots[0]
    if first.turns_budget is None:
        return None
    excess = sum(s.expected_s for s in slots) - left_s
    if excess <= 0:
        return None
    pool = sum(s.turns_s for s in slots)
    cut = excess * first.turns_s / pool if pool > 0 else excess
    given = max(min(floor_s, first.turns_budget), first.turns_s - cut)
    return _whole_turns(given, first) if first.turn_s else given
