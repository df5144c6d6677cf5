"""What a tuning study measured, in Markdown bullets with the numbers: fio, the seed's setting, the best
configuration, each rung against the one before, the side configurations, and which io.eff ratios to the
seed's setting the turns resolved."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core.resolution import AA, format_comparison
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS, SIDE
from rxlab.studies.io_efficiency_tuning.params import TARGET
from rxlab.studies.io_efficiency_tuning.result import TuningResult
from rxlab.studies.io_efficiency_tuning.tables import (
    accounting,
    comparison_table,
    config_table,
    efficiency_rows,
    paired_noise,
)

__all__ = ["findings"]


def findings(result: TuningResult) -> str:
    """The study's numbers in sentences: fio, the seed configuration, the best, and each rung."""
    t = config_table(result)
    acc = accounting(result)
    cmp = comparison_table(result).set_index("config")
    fio = t.loc["fio sync qd1"]
    seed = t.loc["seed"]
    best = max((c for c in t.index if c in CONFIGS and not CONFIGS[c].busy_polls),
               key=lambda c: t.loc[c, "io.eff"])
    b = t.loc[best]
    lines = [
        f"- fio sync qd1: {fio['iops']:.0f} IOPS, {fio['rx.lat']:.1f} us per read of which "
        f"{fio['cpuPer']:.1f} us CPU ({fio['usPer']:.1f} user).",
        f"- The seed's setting (posix, Statistics on): {seed['qps']:.0f} QPS, io.eff {seed['io.eff']:.3f}, "
        f"{seed['cpuPer']:.1f} us CPU per query ({seed['usPer']:.1f} user, {seed['syPer']:.1f} system).",
        f"- Best without busy polling: **{best}**, io.eff {b['io.eff']:.3f} (range {b['io.eff_min']:.3f}-"
        f"{b['io.eff_max']:.3f} over {int(b['n'])} runs), {b['cpuPer']:.1f} us CPU per query: "
        + ("at or above" if b["io.eff"] >= TARGET else "below") + f" the target {TARGET:.2f}"
        + (f"; its io.eff over the seed's: {format_comparison(cmp.loc[best])}" if best in cmp.index else "")
        + ".",
    ]
    if best in acc.index and best != "seed":
        r = efficiency_rows(result)
        lat = 1e6 / r.pivot_table(index="rep", columns="config", values="qps", aggfunc="mean")
        d = (lat["seed"] - lat[best]).dropna()
        cpu = acc.loc["seed", "cpuPer"] - acc.loc[best, "cpuPer"]
        pred = acc.loc["seed", "lat_pred_us"] - acc.loc[best, "lat_pred_us"]
        noise = paired_noise(d)
        spread = (f" +- {noise:.1f} us (paired by turn, two standard errors)" if np.isfinite(noise)
                  else " us (one turn: no noise estimate)")
        lines.append(f"- From the seed's setting to {best}: {cpu:.1f} us of CPU per query saved (means), "
                     f"which the model turns into {pred:.1f} us of latency; measured {d.mean():.1f}{spread}.")
    for c in acc.index[1:]:
        a = acc.loc[c]
        resolved = "" if not np.isfinite(a["noise_us"]) else (
            f" (beyond the noise of +-{a['noise_us']:.1f} us)" if abs(a["saved_meas_us"]) > a["noise_us"]
            else f" (within the noise of +-{a['noise_us']:.1f} us)")
        lines.append(f"- {c}: {a['saved_user_us']:+.1f} us user and {a['saved_sys_us']:+.1f} us system CPU "
                     f"saved per query; the model predicts {a['saved_pred_us']:+.1f} us of latency saved, "
                     f"{a['saved_meas_us']:+.1f} us measured{resolved}; io.eff {a['io.eff']:.3f}.")
    for c in (x.name for x in SIDE):
        if c in t.index:
            s = t.loc[c]
            lines.append(f"- {c} (side): io.eff {s['io.eff']:.3f}, {s['cpuPer']:.1f} us CPU per query in the "
                         f"process, {s['host_cpuPer']:.1f} us busy CPU per query on the whole machine.")
    lines += _resolution(cmp.reset_index())
    return "\n".join(lines)


def _resolution(c: pd.DataFrame) -> list[str]:
    """What the turns resolved: the io.eff ratios to the seed's setting resolved to the target, those not
    (with why), and the A/A control's spread beside them."""
    ratios, aa = c[c["config"] != AA], c[c["config"] == AA]
    if ratios.empty:
        return []
    ok, bad = ratios[ratios["resolved"].astype(bool)], ratios[~ratios["resolved"].astype(bool)]
    text = (f"- In turns ({int(ratios['turns'].max())} at most): {len(ok)} of {len(ratios)} io.eff ratios to "
            f"{ratios['base'].iloc[0]} resolved")
    if len(ok):
        text += " (" + "; ".join(f"{r.config} {r.ratio:.3f} +-{r.half_width:.1f}%"
                                 for r in ok.itertuples()) + ")"
    if len(bad):
        text += "; unresolved, not to be read as differences: " + "; ".join(
            f"{r.config} {r.ratio:.3f} ({r.status.removeprefix('unresolved: ')})" for r in bad.itertuples())
    if aa["half_width"].notna().any():
        text += f"; A/A control {aa['ratio'].iloc[0]:.3f} +-{aa['half_width'].iloc[0]:.1f}%"
    return [text + "."]
