"""The toolchain study's figures, each drawn from one tidy table.

Relative QPS (toolchains_relative_qps against the base build,
toolchains_relative_by_version against gcc of each version): one row per
value drawn, `kind` saying what it is: `here` (a build's mean ratio over the
repetitions with its 95% interval, `lo`..`hi`; `build` is its RocksDB build
key) or `post` (the post's ratio for one server, drawn hollow). Absolute QPS
(toolchains_qps): `rep` rows (one repetition each: a dot) and `mean` rows
(a bar) per build and test.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from rxlab.core import figures as style
from rxlab.core.study import FigureSpec
from rxlab.studies.toolchains.params import TESTS
from rxlab.studies.toolchains.relative import TOOLCHAIN_ORDER
from rxlab.studies.toolchains.result import ToolchainsResult, both_sides
from rxlab.studies.toolchains.tables import POST_VERSION, published_relative

TOOLCHAIN_COLORS = dict(zip(TOOLCHAIN_ORDER, style.CYCLE, strict=False))
SERVER_MARKERS = {"pn53": "o", "arm": "s", "hetzner": "D"}
VERSION_MARKERS = ("o", "^", "s", "D")  # here: one marker per RocksDB version
YLIM = (0.5, 1.5)   # relative QPS axis; wider intervals are clipped (and the title says so)
RELATIVE_COLUMNS = ["kind", "build", "toolchain", "version", "base", "test", "server", "n", "rel", "lo", "hi",
                    "method", "similar"]
QPS_COLUMNS = ["kind", "build", "toolchain", "version", "test", "rep", "qps"]
OTHER_COLOR = "#4d4d4d"


# --------------------------------------------------------------------------- the tables drawn

def relative_rows(rel: pd.DataFrame, base: str | None = None) -> pd.DataFrame:
    """A relative_qps (or relative_by_version) frame as `here` rows, the post's numbers as `post` rows
    for the same tests (all of them when nothing ran here)."""
    here = rel.assign(kind="here", server=None, similar=False)
    if "base" not in here.columns:
        here["base"] = base
    tests = set(here["test"]) or set(TESTS)
    pub = published_relative()
    post = pub[pub["test"].isin(tests)].assign(kind="post", build=None, version=POST_VERSION, n=np.nan,
                                                lo=np.nan, hi=np.nan, method=None)
    parts = [p for p in (here, post) if len(p)]
    out = pd.concat([p[RELATIVE_COLUMNS] for p in parts], ignore_index=True) if parts else \
        pd.DataFrame(columns=RELATIVE_COLUMNS)
    return out


def relative_data(result: ToolchainsResult) -> pd.DataFrame:
    both_sides(result)
    return relative_rows(result.relative, result.base)


def relative_by_version_data(result: ToolchainsResult) -> pd.DataFrame:
    both_sides(result)
    return relative_rows(result.by_version)


def qps_data(result: ToolchainsResult) -> pd.DataFrame:
    """QPS of every repetition (`rep`) and their mean (`mean`) per build and test."""
    both_sides(result)
    f = result.frame
    reps = f[["build", "toolchain", "version", "test", "rep", "qps"]].assign(kind="rep")
    g = reps.groupby(["build", "toolchain", "version", "test"], sort=False)["qps"].mean().reset_index()
    means = g.assign(kind="mean", rep=None)
    return pd.concat([reps[QPS_COLUMNS], means[QPS_COLUMNS]], ignore_index=True)


# --------------------------------------------------------------------------- drawing

def _toolchain_rank(tc) -> int:
    return TOOLCHAIN_ORDER.index(tc) if tc in TOOLCHAIN_ORDER else len(TOOLCHAIN_ORDER)


def _tests(t: pd.DataFrame) -> list[str]:
    have = set(t["test"])
    return [x for x in TESTS if x in have]


def draw_relative(t: pd.DataFrame, against: str | None = None):
    """Relative QPS per test: each build's mean with its 95% interval, the post's per server beside.

    One base build in the table: every build against it (the base first). Several (one per version):
    each build against the gcc build of its own version, grouped by version. `against` names the
    bases in the title and axis (toolchains_relative_by_version passes "gcc of the same version":
    with a single version the table alone looks like a comparison with one base)."""
    here, post = t[t["kind"] == "here"], t[t["kind"] == "post"]
    tests = _tests(t)
    bases = list(dict.fromkeys(here["base"].dropna()))
    first = here.drop_duplicates("build").set_index("build")
    def order(b):   # one base: it first; one per version: grouped by version, gcc first in each
        rank = (str(first.loc[b, "version"]), _toolchain_rank(first.loc[b, "toolchain"]), b)
        return (b != bases[0], *rank) if len(bases) == 1 else rank

    if against is None:
        against = "gcc of the same version" if len(bases) > 1 else "the base build"
    # one base build: its key on the axis; several bases: the title says which (too long for an axis)
    ylabel = f"relative QPS (vs {bases[0]})" if against == "the base build" and bases else "relative QPS"
    blds = sorted(first.index, key=order)
    versions = sorted(map(str, here["version"].dropna().unique()))
    post_tc = [tc for tc in ("clang", "clang+LTO") if tc in set(post["toolchain"])]
    width = 0.8 / max(len(blds) + len(post_tc), 1)
    x = np.arange(len(tests))
    fig, ax = style.figure("page", aspect=0.38)
    for j, b in enumerate(blds):
        g = here[here["build"] == b].set_index("test").reindex(tests)
        tc = first.loc[b, "toolchain"]
        lo, hi = (g["rel"] - g["lo"]).to_numpy(float), (g["hi"] - g["rel"]).to_numpy(float)
        yerr = np.vstack([np.where(np.isfinite(lo), lo, 0), np.where(np.isfinite(hi), hi, 0)])
        mk = VERSION_MARKERS[versions.index(str(first.loc[b, "version"])) % len(VERSION_MARKERS)]
        ax.errorbar(x - 0.4 + width * (j + 0.5), g["rel"].to_numpy(float), yerr=yerr, fmt=mk, capsize=2,
                    color=TOOLCHAIN_COLORS.get(tc, OTHER_COLOR),
                    label=f"here: {b} ({tc})" + (" = base" if b in bases else ""))
    for j, tc in enumerate(post_tc):
        x0 = x - 0.4 + width * (len(blds) + j + 0.5)
        for srv, mk in SERVER_MARKERS.items():
            g = post[(post["toolchain"] == tc) & (post["server"] == srv)].set_index("test").reindex(tests)
            ax.scatter(x0, g["rel"].to_numpy(float), marker=mk, facecolors="none", linewidths=0.9,
                       edgecolors=TOOLCHAIN_COLORS.get(tc), label=f"post: {tc}/gcc, {srv}")
    ax.axhline(1.0, color=OTHER_COLOR, lw=0.8, ls="--")
    ax.set_xticks(x, tests)
    ax.set_ylabel(ylabel)
    vals = pd.concat([here["lo"], here["hi"], here["rel"], post["rel"]]).to_numpy(float)
    vals = vals[np.isfinite(vals)]
    lo, hi = (min(vals.min(), 0.9), max(vals.max(), 1.1)) if len(vals) else (0.9, 1.1)
    ax.set_ylim(max(lo - 0.03, YLIM[0]), min(hi + 0.03, YLIM[1]))
    h, lab = ax.get_legend_handles_labels()
    order_h = sorted(range(len(lab)), key=lambda i: not lab[i].startswith("here"))
    ax.legend([h[i] for i in order_h], [lab[i] for i in order_h], ncol=3, fontsize=6, loc="upper center",
              bbox_to_anchor=(0.5, -0.14))
    clipped = " (intervals clipped)" if len(vals) and (vals.min() < YLIM[0] or vals.max() > YLIM[1]) else ""
    if len(blds) == 1:   # smoke with one build: the A/A control, never drawn as a comparison
        ax.set_title(f"{blds[0]} against itself only (A/A control: the noise floor), no other build: "
                     f"not a comparison{clipped}", fontsize="medium")
    else:
        ax.set_title(f"QPS relative to {against}: here (mean, 95% CI), the post hollow "
                     f"(RocksDB {POST_VERSION}){clipped}", fontsize="medium")
    return fig


def draw_qps(t: pd.DataFrame):
    """Absolute QPS per test and build: every repetition (dots) and their mean (a bar): the spread the
    intervals come from (the post's worry: variance)."""
    tests = _tests(t)
    first = t.drop_duplicates("build").set_index("build")
    blds = sorted(first.index, key=lambda b: (str(first.loc[b, "version"]),
                                              _toolchain_rank(first.loc[b, "toolchain"]), b))
    fig, axes = style.figure("page", aspect=0.3, ncols=len(tests), squeeze=False)
    for ax, test in zip(axes[0], tests, strict=True):
        for j, b in enumerate(blds):
            g = t[(t["test"] == test) & (t["build"] == b)]
            c = TOOLCHAIN_COLORS.get(first.loc[b, "toolchain"], OTHER_COLOR)
            reps = g[g["kind"] == "rep"]["qps"].to_numpy(float)
            ax.scatter(j + np.linspace(-0.12, 0.12, len(reps)), reps, s=8, color=c, alpha=0.7)
            for m in g[g["kind"] == "mean"]["qps"]:
                ax.hlines(m, j - 0.3, j + 0.3, color=c, lw=1.5)
        ax.set_xticks(range(len(blds)), blds, rotation=90, fontsize=6)  # upright labels overlap
        ax.set_xlim(-0.6, len(blds) - 0.4)
        ax.set_title(test)
        ax.set_ylim(bottom=0)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1000:g}k"))
    axes[0][0].set_ylabel("QPS (ops/s)")
    if len(blds) == 1:
        fig.suptitle(f"{blds[0]} alone: no other build to compare with", fontsize="medium")
    fig.tight_layout()
    return fig


FIGURES = {
    "toolchains_relative_qps": FigureSpec(relative_data, draw_relative),
    "toolchains_relative_by_version": FigureSpec(relative_by_version_data, draw_relative,
                                                 args=lambda result: {"against": "gcc of the same version"}),
    "toolchains_qps": FigureSpec(qps_data, draw_qps),
}
