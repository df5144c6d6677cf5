"""The parity figure (rxlab.bench.selfcheck.parity_report.draw): its legend keys every column's colour filled,
whether or not any of its cells was resolved (it followed that once: io_uring+best's key was filled in the
busy matrix of 2026-11-29 and every other key hollow)."""
from __future__ import annotations

import matplotlib.pyplot as plt
import pandas as pd

from rxlab.bench.selfcheck import parity_report as spr


def _table() -> pd.DataFrame:
    rows = []
    for metric in spr.METRICS:
        for config, resolved in (("posix", False), ("io_uring+best", True), ("A/A", False)):
            rows.append({"workload": "fillseq", "threads": 1, "condition": "busy", "direct": True,
                         "sync": False, "metric": metric, "config": config, "ratio": 1.0, "lo": 0.98,
                         "hi": 1.02, "half_width": 2.0, "resolved": resolved, "turns": 8,
                         "status": "resolved"})
    return pd.DataFrame(rows)


def test_the_legend_keys_each_column_filled():
    fig = spr.draw(_table())
    legend = fig.legends[0]
    keys = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)}
    assert list(keys) == ["posix", "io_uring+best", "A/A"]
    for name, h in keys.items():
        assert h.get_markerfacecolor() == h.get_markeredgecolor() != "none", name
    plt.close(fig)
