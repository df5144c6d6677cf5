"""rxlab.core.plots.ratio_plot: the axis shows every ratio, its ticks fit the range, turns said once."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from rxlab.core.plots import MAX_SPAN, ratio_plot
from rxlab.core.resolution import AA


def _table(ratios: dict[str, float], turns: int = 3) -> pd.DataFrame:
    rows = [{"step": s, "config": "io_uring", "ratio": r, "lo": r / 1.1, "hi": r * 1.1, "resolved": False,
             "turns": turns, "panel": "delay_us=500"} for s, r in ratios.items()]
    rows += [{"step": s, "config": AA, "ratio": 1.0, "lo": 0.9, "hi": 1.1, "resolved": False, "turns": turns,
              "panel": "delay_us=500"} for s in ratios]
    return pd.DataFrame(rows)


def test_a_ratio_beyond_the_interval_span_widens_the_axis_instead_of_leaving_the_plot():
    fig = ratio_plot(_table({"MultiGet 1": 1.0, "MultiGet 64": 15.4}), "step", panel="panel")
    lo, hi = fig.axes[0].get_ylim()
    assert MAX_SPAN < 15.4 * 1.1 and lo < 1.0 and hi > 15.4
    ticks = [t for t in fig.axes[0].get_yticks() if lo <= t <= hi]
    assert 1.0 in ticks and 8.0 in ticks and 0.9 not in ticks and 1.1 not in ticks   # not on top of 1
    plt.close(fig)


def test_an_interval_beyond_the_span_runs_off_the_axis_but_its_ratio_stays():
    t = _table({"scan": 1.2})
    t.loc[t["config"] != AA, ["lo", "hi"]] = [0.01, 90.0]   # a useless interval: it resolves nothing
    fig = ratio_plot(t, "step")
    lo, hi = fig.axes[0].get_ylim()
    assert lo <= 1 / MAX_SPAN and lo > 1 / MAX_SPAN / 1.1 and MAX_SPAN <= hi < MAX_SPAN * 1.1
    plt.close(fig)


def test_the_turns_are_said_once_in_the_title_when_every_category_had_the_same():
    fig = ratio_plot(_table({"a": 1.0, "b": 1.1}, turns=3), "step", panel="panel")
    assert fig.axes[0].get_title() == "delay_us=500 (3 turns)"
    assert not [t for t in fig.axes[0].texts if "turns" in t.get_text()]
    plt.close(fig)
    t = _table({"a": 1.0, "b": 1.1})
    t.loc[t["step"] == "b", "turns"] = 5
    fig = ratio_plot(t, "step", panel="panel")
    assert fig.axes[0].get_title() == "delay_us=500"
    assert sorted(x.get_text() for x in fig.axes[0].texts) == ["3 turns", "5 turns"]
    plt.close(fig)


def test_category_labels_slant_only_when_they_would_run_into_each_other():
    def rotations(steps, panels=2):
        t = pd.concat([_table(dict.fromkeys(steps, 1.0)).assign(panel=f"v{i}") for i in range(panels)])
        fig = ratio_plot(t, "step", panel="panel")
        out = {lab.get_rotation() for lab in fig.axes[0].get_xticklabels()}
        plt.close(fig)
        return out

    # the toolchain study's five tests, two versions side by side: printed as one word before
    assert rotations(["fillseq", "readww", "fwdrangeww", "revrangeww", "overwrite"]) == {30.0}
    assert rotations(["a", "b", "c"]) == {0.0}


def test_the_legend_keys_each_colour_filled_whatever_its_first_cell():
    # io_uring's first cell resolved, posix's not: the legend drew io_uring filled and posix hollow
    t = _table({"a": 1.0, "b": 1.1})
    t.loc[(t["config"] != AA) & (t["step"] == "a"), "resolved"] = True
    posix = t[t["config"] != AA].assign(config="posix", resolved=[False, True])
    fig = ratio_plot(pd.concat([t, posix]), "step")
    legend = fig.legends[0]
    keys = {txt.get_text(): h for txt, h in zip(legend.get_texts(), legend.legend_handles, strict=True)}
    assert set(keys) == {"io_uring", "posix", "A/A control (95%)", "unresolved (hollow, dashed)"}
    for name in ("io_uring", "posix"):
        h = keys[name]
        assert h.get_markerfacecolor() == h.get_markeredgecolor() != "white", name
    assert keys["unresolved (hollow, dashed)"].get_markerfacecolor() == "white"
    plt.close(fig)


def test_the_title_sits_above_a_legend_of_two_rows():
    """Five keys (three contenders, the A/A band, unresolved) wrap the legend into two rows; the title
    used to sit at one height for any legend and ran through the second row."""
    t = _table({"a": 1.0, "b": 1.1})
    more = [t[t["config"] != AA].assign(config=c) for c in ("posix", "libaio")]
    fig = ratio_plot(pd.concat([t, *more]), "step", title="a title")
    fig.canvas.draw()
    legend, title = fig.legends[0].get_window_extent(), fig._suptitle.get_window_extent()
    assert len(fig.legends[0].get_texts()) == 5
    assert title.y0 >= legend.y1, (title, legend)
    plt.close(fig)


def test_turns_under_crowded_categories_are_numbers_and_the_title_says_what_they_count():
    steps = [f"row{i}" for i in range(11)]
    t = _table(dict.fromkeys(steps, 1.0))
    t["turns"] = [8 + i % 3 for i in range(len(t))]
    fig = ratio_plot(pd.concat([t, t.assign(panel="cpu")]), "step", panel="panel")
    texts = [x.get_text() for x in fig.axes[0].texts]
    assert len(texts) == 11 and not [x for x in texts if "turns" in x]
    assert fig.axes[0].get_title() == "delay_us=500 (turns under each)"
    plt.close(fig)
