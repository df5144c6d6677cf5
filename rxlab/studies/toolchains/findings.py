"""What a toolchain study measured, in Markdown bullets with the numbers, the post's beside."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.core.resolution import AA
from rxlab.studies.toolchains.relative import by_version_summary
from rxlab.studies.toolchains.result import ToolchainsResult
from rxlab.studies.toolchains.tables import published_relative


def _post(pub: pd.DataFrame, toolchain: str, test: str) -> str:
    pp = pub[(pub["toolchain"] == toolchain) & (pub["test"] == test)]
    return (", post " + "/".join(f"{100 * (v - 1):+.0f}%" for v in pp["rel"])) if len(pp) else ""


def _ratio(r) -> str:
    iv = f" [{r.lo:.3f}..{r.hi:.3f}]" if np.isfinite(r.lo) else " (no interval)"
    return f"{r.test} {r.ratio:.3f}{iv}"


def against_base(cmp: pd.DataFrame, base: str, pub: pd.DataFrame | None = None) -> str:
    """The A/A control first, then every build against the base: its resolved ratios and, apart, those not
    resolved (with why, not to be read as differences); the post's tl;dr last."""
    pub = published_relative() if pub is None else pub
    lines = []
    aa = cmp[cmp["config"] == AA]
    if aa["half_width"].notna().any():
        lines.append(f"- A/A control: the base build {base} against itself (its second run of each turn "
                     f"over its first) {aa['ratio'].min():.3f} to {aa['ratio'].max():.3f}, within "
                     f"+-{aa['half_width'].min():.1f}% to +-{aa['half_width'].max():.1f}% depending on the "
                     "test (95%): what equal looks like on this machine.")
    elif len(aa):
        lines.append(f"- A/A control: the base build {base} against itself {aa['ratio'].min():.3f} to "
                     f"{aa['ratio'].max():.3f} over {int(aa['turns'].max())} turn(s): no interval yet.")
    others = [b for b in dict.fromkeys(cmp["config"]) if b != AA]
    if not others:
        lines.append(f"- {base} ran alone: only the A/A control; no build to compare. Build clang and "
                     "clang+LTO (see the matrix commands) and rerun with `builds`.")
    for b in others:
        g = cmp[cmp["config"] == b]
        tc = g["toolchain"].iloc[0]
        ok, bad = g[g["resolved"].astype(bool)], g[~g["resolved"].astype(bool)]
        text = f"- {b} ({tc}) vs {base}: {len(ok)} of {len(g)} tests resolved"
        if len(ok):
            text += " (" + "; ".join(f"{_ratio(r)} +-{r.half_width:.1f}%{_post(pub, tc, r.test)}"
                                     for r in ok.itertuples()) + ")"
        if len(bad):
            text += "; unresolved, not to be read as differences: " + "; ".join(
                f"{_ratio(r)} ({r.status.removeprefix('unresolved: ')})" for r in bad.itertuples())
        lines.append(text + ".")
    tldr = published.load("gccclang_relative_qps")
    tldr = tldr[tldr["table"] == "tl;dr"]
    said = ", ".join(f"~{r.pct:.0f}% more QPS with {r.compiler} than {r.baseline}" for r in tldr.itertuples())
    lines.append(f"- The post's tl;dr: {said} (post: pn53/arm/hetzner servers, gcc 13 and clang 18, "
                 "RocksDB 10.8).")
    return "\n".join(lines)


def by_version(rel_v: pd.DataFrame) -> str:
    """Per version, each toolchain against that version's gcc build, in sentences."""
    summ = by_version_summary(rel_v)
    lines = []
    for v, g in summ.groupby("version", sort=True):
        parts = [f"{r.toolchain} {r.mean_pct:+.1f}% on average, {r.resolved} of {r.tests} tests resolved (of "
                 f"those faster in {r.faster}, slower in {r.slower})" for r in g.itertuples()]
        lines.append(f"- RocksDB {v}, against {g['base'].iloc[0]}: " + "; ".join(parts) + ".")
    if not lines:
        lines.append("- No version has a gcc build and another toolchain's: nothing to compare per version.")
    return "\n".join(lines)


def findings(result: ToolchainsResult) -> str:
    return against_base(result.comparisons, result.base) + "\n" + by_version(result.by_version)
