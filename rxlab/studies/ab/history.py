"""The studies of one comparison stored so far, pooled: what `rxlab ab` adds after its own study, and
what `rxlab ab A B --history` prints without measuring.

A study's interval covers what moves from turn to turn inside it. Studies of
the same comparison an hour apart can disagree by more than that (each loads
its own DB, and the host is not the same host an hour later), so one study's
±2% says how precisely that study measured, not how precisely the next one
will agree. Pooling the studies with a random effect
(rxlab.core.stats.pooled_ratio) gives both: the spread between studies and a
ratio whose interval includes it.

Studies are the same comparison when they measured the same sides (a URI's
options in any order), workload, threads, condition, O_DIRECT and sizes, on
the same host; `since` leaves out those before a study id or a date (a change
to what is compared: an engine's code, a build).
"""
from __future__ import annotations

import re
import socket
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rxlab.bench import ab
from rxlab.core import engines, executions
from rxlab.core.resolution import AA
from rxlab.core.stats import pooled_ratio
from rxlab.studies.ab.study import AB, SIZES, comparison_table

__all__ = ["comparison_key", "describe_pooled", "draw", "earlier_studies", "forest_table", "history_table",
           "pooled", "since_id"]

HISTORY_COLUMNS = ["study", "started_utc", "commit", "ratio", "lo", "hi", "half_width", "turns", "resolved",
                   "aa_ratio", "aa_lo", "aa_hi", "aa_half_width"]


def _side_key(text: str) -> tuple:
    """A side as the same side whatever its spelling: an rxlab URI by engine and sorted options."""
    try:
        s = ab.parse_side(str(text))
    except ValueError:
        return ("text", str(text).strip())
    if s.kind == "backend" and not engines.is_default(s.backend):
        return ("backend", engines.engine(s.backend), tuple(sorted(engines.options(s.backend).items())))
    return (s.kind, s.backend, s.options, s.build)


def comparison_key(params: Mapping) -> tuple:
    """What makes two `rxlab ab` studies measurements of one comparison (their manifests' params)."""
    scale = params.get("scale") or "small"
    sizes = SIZES.get(scale, {})
    size = tuple(params.get(k) if params.get(k) is not None else sizes.get(k)
                 for k in ("num", "rounds", "slice_s"))
    return (_side_key(params.get("a", "")), _side_key(params.get("b", "")), params.get("workload"),
            int(params.get("threads") or 1), params.get("condition") or "quiet",
            bool(params.get("direct", True)), scale, size)


def since_id(text: str | None) -> str | None:
    """`--since` as the study id it compares against: a study id as it is, a date (2026-12-07, or with a
    time: 2026-12-07T17:00) as the ids that start then; None for None. One line for anything else."""
    if text is None:
        return None
    t = str(text).strip()
    if re.fullmatch(r"\d{8}T\d{6}[0-9a-f]{4}", t):
        return t
    try:
        ts = pd.Timestamp(t)
    except (TypeError, ValueError):
        ts = None
    if ts is None or ts is pd.NaT:
        raise ValueError(f"since={text!r}: expected a study id (20261207T172553d52a) or a date "
                         "(2026-12-07, 2026-12-07T17:00, UTC)")
    return ts.strftime("%Y%m%dT%H%M%S")


def earlier_studies(root: str | Path, params: Mapping, *, since: str | None = None,
                    host: str | None = None) -> list[dict]:
    """The complete `rxlab ab` studies in the store of the comparison `params` describes, measured on
    `host` (default: this one, by the hostname its manifests record), from `since` (a study id or date)
    on, oldest first (their manifests)."""
    key, host, start = comparison_key(params), host or socket.gethostname(), since_id(since)
    out = []
    for m in executions.read_manifests(root):
        if m.get("study") != AB.name or executions.status(m) != "complete":
            continue
        if start is not None and str(m["id"]) < start:
            continue
        if (m.get("owner") or {}).get("host", host) != host:
            continue
        if comparison_key(m.get("params") or {}) == key:
            out.append(m)
    return out


def history_table(root: str | Path, manifests: list[dict]) -> pd.DataFrame:
    """One row per study: B / A with its interval and turns, and A's A/A, from the store."""
    rows = []
    for m in manifests:
        result = AB.load(root, study=str(m["id"]))
        if result is None:
            continue
        t = comparison_table(result)
        b, aa = t[t["config"] != AA], t[t["config"] == AA]
        if b.empty:
            continue
        b = b.iloc[0]
        commits = result.frame["git_commit"].dropna().unique() if "git_commit" in result.frame else []
        commit = str(commits[0])[:10] if len(commits) == 1 else "several" if len(commits) else ""
        if commit and "git_dirty" in result.frame and result.frame["git_dirty"].eq(True).any():
            commit += " with changes"        # measured from a working tree that differed from its commit
        rows.append({"study": str(m["id"]), "started_utc": m.get("started_utc", ""), "commit": commit,
                     "ratio": b["ratio"], "lo": b["lo"], "hi": b["hi"], "half_width": b["half_width"],
                     "turns": int(b["turns"]), "resolved": bool(b["resolved"]),
                     **{f"aa_{k}": aa[k].iloc[0] if len(aa) else float("nan")
                        for k in ("ratio", "lo", "hi", "half_width")}})
    return pd.DataFrame(rows, columns=HISTORY_COLUMNS)


def pooled(table: pd.DataFrame) -> dict:
    """The studies of `history_table` pooled (rxlab.core.stats.pooled_ratio's fields)."""
    return pooled_ratio(table["ratio"], table["lo"], table["hi"], table["turns"])


def describe_pooled(table: pd.DataFrame, p: Mapping, target: float) -> str:
    """The pooled line: how many studies, their ratios, the spread between them, the pooled ratio."""
    k = int(p["k"])
    ratios = ", ".join(f"{r:.3f}" for r in table["ratio"])
    if k == 0:
        return "no stored study of this comparison on this host with an interval: nothing to pool"
    if k < 2:
        return f"1 study of this comparison on this host ({ratios}): nothing to pool yet"
    agree = (f"they disagree beyond their intervals (Cochran's Q {p['q']:.1f}, p {p['p']:.3f}; between "
             f"studies +-{p['between_pct']:.1f}%)" if p["p"] < 0.05 else
             f"they agree within their intervals (Cochran's Q {p['q']:.1f}, p {p['p']:.2f}; between studies "
             f"+-{p['between_pct']:.1f}%)")
    verdict = "resolved" if p["half_width"] <= target else f"unresolved (> +-{target:g}%)"
    return (f"{k} studies of this comparison on this host ({ratios}): {agree}; pooled {p['ratio']:.3f} "
            f"[{p['lo']:.3f}..{p['hi']:.3f}] +-{p['half_width']:.1f}%, {verdict}")


def forest_table(table: pd.DataFrame, p: Mapping, a: str, b: str, target: float) -> pd.DataFrame:
    """What the history figure draws, in ratio_plot's columns: per study (by its start) B / A with its
    interval and A's A/A band, then the pooled ratio, resolved when its interval is within `target`."""
    rows, seen = [], set()
    for r in table.to_dict("records"):
        when = pd.Timestamp(r["started_utc"]).strftime("%m-%d %H:%M") if r["started_utc"] else r["study"]
        when = when if when not in seen else f"{when} {r['study'][-4:]}"   # two studies in one minute
        seen.add(when)
        rows.append({"study": when, "config": b, "base": a, "ratio": r["ratio"], "lo": r["lo"], "hi": r["hi"],
                     "half_width": r["half_width"], "resolved": r["resolved"], "turns": r["turns"]})
        if pd.notna(r["aa_ratio"]):
            rows.append({"study": when, "config": AA, "base": a, "ratio": r["aa_ratio"], "lo": r["aa_lo"],
                         "hi": r["aa_hi"], "half_width": r["aa_half_width"], "resolved": False,
                         "turns": r["turns"]})
    if p["k"] >= 2:
        rows.append({"study": "pooled", "config": b, "base": a, "ratio": p["ratio"], "lo": p["lo"],
                     "hi": p["hi"], "half_width": p["half_width"],
                     "resolved": bool(p["half_width"] <= target), "turns": float("nan")})
    return pd.DataFrame(rows)


def draw(t: pd.DataFrame):
    """B / A per study with its interval and A/A band, the pooled ratio last (hollow when unresolved)."""
    from rxlab.core.plots import ratio_plot  # noqa: PLC0415 - matplotlib only when drawing

    return ratio_plot(t, "study", ylabel=f"ratio to {t['base'].iloc[0]}",
                      title="studies of one comparison, and pooled")
