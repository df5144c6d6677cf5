"""The toolchain study's figures, each drawn from one tidy table.

Relative QPS (toolchains_relative_qps against the base build,
toolchains_relative_by_version against gcc of each version): the comparison
tables measured in turns, drawn by rxlab.core.plots.ratio_plot (a ratio with
its 95% interval; hollow with a dashed interval where unresolved; the base's
A/A interval as the grey band behind each test), as `here` rows, and the
post's ratios per server as `post` rows (crosses beside each test, not
measured here). Absolute QPS (toolchains_qps): `rep` rows (one run each: a
dot) and `mean` rows (a bar) per build and test.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter

from rxlab.core import figures as style
from rxlab.core.plots import TICKS, WIDE_TICKS, ratio_plot
from rxlab.core.resolution import AA
from rxlab.core.study import FigureSpec
from rxlab.studies.toolchains.params import TESTS
from rxlab.studies.toolchains.relative import TOOLCHAIN_ORDER
from rxlab.studies.toolchains.result import ToolchainsResult, both_sides
from rxlab.studies.toolchains.tables import POST_VERSION, published_relative

TOOLCHAIN_COLORS = dict(zip(TOOLCHAIN_ORDER, style.CYCLE, strict=False))
POST_MARKERS = {"clang": "x", "clang+LTO": "+"}   # the post's numbers: crosses, never a measured ratio's dot
POST_COLOR = "#333333"
RELATIVE_COLUMNS = ["kind", "panel", "test", "base", "config", "comparison", "build", "toolchain", "version",
                    "ratio", "lo", "hi", "half_width", "resolved", "turns", "status", "server"]
QPS_COLUMNS = ["kind", "build", "toolchain", "version", "test", "rep", "copy", "qps"]
OTHER_COLOR = "#4d4d4d"


# --------------------------------------------------------------------------- the tables drawn

def _panels(cmp: pd.DataFrame, by_version: bool) -> pd.DataFrame:
    """The comparison rows with a panel per RocksDB version of the builds compared (`RocksDB 9.10.0`, by
    version with its base: `RocksDB 9.10.0 (vs 9.10.0-gcc12)`), the A/A rows set in every panel: the base's
    control beside each comparison."""
    aa, rest = cmp[cmp["config"] == AA], cmp[cmp["config"] != AA]
    versions = list(dict.fromkeys((rest if len(rest) else aa)["version"].astype(str)))
    if not by_version:      # the study's table: the A/A rows are the base's version's only
        aa = pd.concat([aa.assign(version=v) for v in versions], ignore_index=True) if len(aa) else aa
    bases = rest.drop_duplicates("version").set_index("version")["base"] if by_version else {}
    out = pd.concat([p for p in (rest, aa) if len(p)], ignore_index=True) if len(cmp) else cmp.copy()
    v = out["version"].astype(str)
    vs = v.map(lambda x: f" (vs {bases[x]})" if x in bases else "")
    return out.assign(version=v, panel="RocksDB " + v + vs)


def relative_rows(cmp: pd.DataFrame, *, by_version: bool = False) -> pd.DataFrame:
    """A comparison table (result.comparisons; result.by_version with `by_version`) as `here` rows, a panel
    per version, the post's ratios as `post` rows for the same tests (all of them when nothing ran here)."""
    aa = cmp[(cmp["config"] == AA) & (cmp["toolchain"] == "gcc")]
    cmp = _panels(cmp, by_version)
    build = cmp["config"].where(cmp["config"] != AA, cmp["base"])
    here = cmp.assign(kind="here", build=build, server=None)
    # the post's ratios are against gcc of the same version: beside every panel by version, beside the
    # base's version alone against one base (and only if it is a gcc build)
    panels = here.drop_duplicates("panel")
    if not by_version:
        panels = panels[panels["version"].isin(set(aa["version"].astype(str)))]
    tests = set(here["test"]) or set(TESTS)
    pub = published_relative()
    pub = pub[pub["test"].isin(tests)]
    post = pd.concat([pub.assign(panel=pv) for pv in panels["panel"]], ignore_index=True) if len(panels) \
        else pub.iloc[:0].assign(panel=None)
    post = post.assign(kind="post", base="gcc", config="post " + post["toolchain"] + "/gcc", comparison=None,
                       build=None, version=POST_VERSION, ratio=post["rel"], lo=np.nan, hi=np.nan,
                       half_width=np.nan, resolved=False, turns=np.nan, status="the post's")
    parts = [p[RELATIVE_COLUMNS] for p in (here, post) if len(p)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=RELATIVE_COLUMNS)


def relative_data(result: ToolchainsResult) -> pd.DataFrame:
    both_sides(result)
    return relative_rows(result.comparisons)


def relative_by_version_data(result: ToolchainsResult) -> pd.DataFrame:
    both_sides(result)
    return relative_rows(result.by_version, by_version=True)


def qps_data(result: ToolchainsResult) -> pd.DataFrame:
    """QPS of every run (`rep`: the turn, `copy` 1 the base's A/A run) and their mean (`mean`) per build
    and test."""
    both_sides(result)
    f = result.frame
    reps = f[["build", "toolchain", "version", "test", "rep", "copy", "qps"]].assign(kind="rep")
    g = reps.groupby(["build", "toolchain", "version", "test"], sort=False)["qps"].mean().reset_index()
    means = g.assign(kind="mean", rep=None, copy=None)
    return pd.concat([reps[QPS_COLUMNS], means[QPS_COLUMNS]], ignore_index=True)


# --------------------------------------------------------------------------- drawing

def _toolchain_rank(tc) -> int:
    return TOOLCHAIN_ORDER.index(tc) if tc in TOOLCHAIN_ORDER else len(TOOLCHAIN_ORDER)


def _tests(t: pd.DataFrame) -> list[str]:
    have = set(t["test"])
    return [x for x in TESTS if x in have]


def _ordered(here: pd.DataFrame) -> pd.DataFrame:
    """Tests in the post's order (ratio_plot's categories), in each the builds by version and toolchain
    (its markers), the A/A rows last."""
    key = pd.DataFrame({"t": here["test"].map({x: i for i, x in enumerate(TESTS)}),
                        "aa": here["config"] == AA, "v": here["version"].astype(str),
                        "tc": here["toolchain"].map(_toolchain_rank), "b": here["config"].astype(str)})
    return here.loc[key.sort_values(["t", "aa", "v", "tc", "b"], kind="stable").index]


def _ticks(ax, lo: float, hi: float) -> None:
    """The y range lo..hi, ticked as ratio_plot ticks it (widened for the post's crosses)."""
    ax.set_ylim(lo, hi)
    ticks = TICKS if hi / lo < 1.6 else WIDE_TICKS
    ax.yaxis.set_major_locator(FixedLocator([v for v in ticks if lo <= v <= hi]))


def _post(ax, post: pd.DataFrame, cats: list) -> list:
    """The post's ratios (every server) as crosses at the right edge of each test; the y range widened to
    show them. Returns the legend handles drawn."""
    drawn = {}
    for j, test in enumerate(cats):
        for tc, mk in POST_MARKERS.items():
            v = post.loc[(post["test"] == test) & (post["toolchain"] == tc), "ratio"].to_numpy(float)
            if len(v):
                ax.plot([j + 0.42] * len(v), v, ls="none", marker=mk, ms=3.5, mew=0.8, color=POST_COLOR,
                        zorder=5)
                drawn[tc] = Line2D([], [], ls="none", marker=mk, ms=3.5, mew=0.8, color=POST_COLOR)
    v = post["ratio"].to_numpy(float)
    v = v[np.isfinite(v)]
    lo, hi = ax.get_ylim()
    if len(v):
        lo, hi = min(lo, v.min() / 1.03), max(hi, v.max() * 1.03)
    _ticks(ax, lo, hi)
    return [(h, f"post {tc}/gcc, RocksDB {POST_VERSION} (3 servers)") for tc, h in drawn.items()]


def draw_relative(t: pd.DataFrame, against: str | None = None):
    """Relative QPS per test, a panel per RocksDB version: each build's ratio with its 95% interval over
    the turns (hollow and dashed: not resolved to the target), the base's A/A interval as the grey band,
    the post's ratios as crosses (not measured here).

    toolchains_relative_qps: every build against the one base build. toolchains_relative_by_version
    (`against` "gcc of the same version"): each build against the gcc build of its own version, the
    study's A/A band in each panel. With the base build alone (smoke) only the A/A control is there,
    titled as such: not a comparison."""
    here, post = _ordered(t[t["kind"] == "here"]), t[t["kind"] == "post"]
    cmp = here[here["config"] != AA]
    bases = list(dict.fromkeys((cmp if len(cmp) else here)["base"].astype(str)))
    against = against or (bases[0] if bases else "the base build")
    title = None
    if cmp.empty:
        title = (f"{', '.join(bases) or 'the base'} against itself only (A/A control: the noise floor), "
                 "no other build: not a comparison")
    # a marker per toolchain in each version's panel, unless a version has two builds of one toolchain
    hue = "config" if cmp.duplicated(["panel", "test", "toolchain"]).any() else "toolchain"
    fig = ratio_plot(here, "test", hue=hue, panel="panel", width="page", ylabel=f"QPS ratio to {against}",
                     title=title, colors=TOOLCHAIN_COLORS if hue == "toolchain" else None)
    legend = True
    for ax, pv in zip(fig.axes, dict.fromkeys(here["panel"]), strict=False):
        tests = list(dict.fromkeys(here.loc[here["panel"] == pv, "test"]))   # ratio_plot's categories
        drawn = _post(ax, post[post["panel"] == pv], tests)
        if drawn and legend:    # once: the crosses mean the same in every panel
            ax.legend([h for h, _ in drawn], [lab for _, lab in drawn], loc="best", fontsize=5, frameon=False)
            legend = False
    return fig


def draw_qps(t: pd.DataFrame):
    """Absolute QPS per test and build: every run (dots; the base's A/A runs among them) and their mean (a
    bar): the spread the intervals come from (the post's worry: variance). Not a comparison: whether two
    builds differ is the ratio figures' (resolved or not)."""
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
    else:
        fig.suptitle("QPS of every run (absolute, not a comparison: the ratios and whether they are resolved "
                     "are toolchains_relative_qps)", fontsize="medium")
    fig.tight_layout()
    return fig


FIGURES = {
    "toolchains_relative_qps": FigureSpec(relative_data, draw_relative),
    "toolchains_relative_by_version": FigureSpec(relative_by_version_data, draw_relative,
                                                 args=lambda result: {"against": "gcc of the same version"}),
    "toolchains_qps": FigureSpec(qps_data, draw_qps),
}
