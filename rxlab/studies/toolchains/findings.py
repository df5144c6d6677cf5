"""What a toolchain study measured, in Markdown bullets with the numbers, the post's beside."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core import published
from rxlab.studies.toolchains.relative import by_version_summary
from rxlab.studies.toolchains.result import ToolchainsResult
from rxlab.studies.toolchains.tables import published_relative


def against_base(rel: pd.DataFrame, base: str, pub: pd.DataFrame | None = None) -> str:
    """Every build against the base, test by test, with the noise floor first and the post's tl;dr last."""
    pub = published_relative() if pub is None else pub
    lines = []
    others = [b for b in dict.fromkeys(rel["build"]) if b != base]
    b0 = rel[rel["build"] == base]
    noise = b0["hi"] - b0["rel"]
    if len(b0) and np.isfinite(noise).any():
        lines.append(f"- Noise floor: the base build {base} against itself has a 95% interval of "
                     f"+-{100 * noise.min():.1f}% to +-{100 * noise.max():.1f}% depending on the test "
                     f"(coefficient of variation {b0['cv_pct'].min():.1f}% to {b0['cv_pct'].max():.1f}%): "
                     "smaller differences between builds cannot be told from noise here.")
    if not others:
        lines.append(f"- Only one build ({base}) ran: there is no comparison between toolchains, only the "
                     "noise floor above. Build clang and clang+LTO (see the matrix commands) and rerun with "
                     "`builds`.")
    for b in others:
        g = rel[rel["build"] == b]
        tc = g["toolchain"].iloc[0]
        parts = []
        for _, r in g.iterrows():
            sig = "" if not np.isfinite(r["lo"]) else (" (significant)" if r["lo"] > 1 or r["hi"] < 1
                                                       else " (within noise)")
            pp = pub[(pub["toolchain"] == tc) & (pub["test"] == r["test"])]
            ptxt = (", post " + "/".join(f"{100 * (v - 1):+.0f}%" for v in pp["rel"])) if len(pp) else ""
            ci = f"[{100 * (r['lo'] - 1):+.1f}, {100 * (r['hi'] - 1):+.1f}]"
            parts.append(f"{r['test']} {r['pct']:+.1f}% {ci}{sig}{ptxt}")
        lines.append(f"- {b} ({tc}) vs {base}: " + "; ".join(parts)
                     + f". Mean over tests {g['pct'].mean():+.1f}%.")
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
        parts = [f"{r.toolchain} {r.mean_pct:+.1f}% (faster in {r.faster}, slower in {r.slower} of {r.tests} "
                 "tests beyond noise)" for r in g.itertuples() if r.build != r.base]
        if parts:
            lines.append(f"- RocksDB {v}, against {g['base'].iloc[0]}: " + "; ".join(parts) + ".")
    if not lines:
        lines.append("- No version has a gcc build and another toolchain's: nothing to compare per version.")
    return "\n".join(lines)


def findings(result: ToolchainsResult) -> str:
    return against_base(result.relative, result.base) + "\n" + by_version(result.by_version)
