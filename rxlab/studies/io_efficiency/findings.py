"""What an IO-efficiency study measured against the seed, and what its turns resolved, in Markdown bullets
with the numbers."""
from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from rxlab.bench.ioeff.baseline import background_lines, value_range
from rxlab.core.resolution import AA, findings_line
from rxlab.studies.io_efficiency.result import IoEfficiencyResult
from rxlab.studies.io_efficiency.tables import (
    background_io,
    comparison_table,
    published_users,
    seed_tables,
    users_label,
)

# What each metric of the comparison table compares, in words.
MEASURES = {"qps": "block_align's effect on QPS (ratio to block_align on)",
            "iops": "io.eff (device read IOPS over fio's of the same turn)"}


def table_findings(tables: Mapping[str, pd.DataFrame], background: pd.DataFrame | None = None) -> str:
    """What the seed's tables (`seed_tables`) show, in a few Markdown bullets with their numbers.

    background: `background_io(result)`; when the device served more than 5%
    more reads than the measured program issued, the first bullet says that
    the device-wide counters (iops, io.eff, reqsz, io.lat) include other
    processes' IO.
    """
    lines = []
    lines.extend(background_lines(background))
    fio = tables["fio"]
    for _, r in fio[fio["source"] == "local"].iterrows():
        pub = fio[(fio["source"] == "published") & (fio["numjobs"] == published_users(int(r["numjobs"])))]
        p = pub.iloc[0] if len(pub) else None
        lines.append(f"- fio sync qd1, {int(r['numjobs'])} job(s): {r['iops']:,.0f} IOPS, "
                     f"{r['lat.us']:.1f} us mean latency, {r['cpuPer']:.1f} us CPU per read"
                     + (f" (seed, {int(p['numjobs'])} job(s): {p['iops']:,.0f} IOPS, {p['lat.us']:.1f} us, "
                        f"{p['cpuPer']:.1f} us)." if p is not None else "."))
    for key, t in tables.items():
        if not key.startswith("io.eff "):
            continue
        loc, pub = t[t["source"] == "local"], t[t["source"] == "published"]
        users = key.removeprefix("io.eff ")
        seed_users = users_label(int(pub["users"].iloc[0]))
        lines.append(f"- io.eff at {users}: {value_range(loc['io.eff'], '.3f')} here (medians) against "
                     f"{value_range(pub['io.eff'], '.3f')} in the seed ({seed_users}); "
                     f"RocksDB adds {value_range(loc['cpu.inc'], '.1f')} us of CPU per query over fio "
                     f"(seed: {value_range(pub['cpu.inc'], '.1f')} us).")
    eff = tables.get("block_align effect")
    if eff is not None and len(eff):
        loc, pub = eff[eff["source"] == "local"], eff[eff["source"] == "published"]
        change = value_range(loc["qps_change_pct"], "+.1f")
        lines.append(f"- block_align changes the median QPS by {change}% here "
                     f"(seed: {value_range(pub['qps_change_pct'], '+.1f')}%); the device read size (reqsz) "
                     f"is {value_range(loc['reqsz_off'], '.1f')} KiB without it and "
                     f"{value_range(loc['reqsz_on'], '.1f')} KiB with it (seed: "
                     f"{value_range(pub['reqsz_off'], '.1f')} and "
                     f"{value_range(pub['reqsz_on'], '.1f')} KiB).")
    return "\n".join(lines)


def _where(r) -> str:
    """A comparison's client count, delay (where there is one) and test: `1 user readrandom`."""
    delay = f" at {int(r.delay_us)} us" if int(r.delay_us) else ""
    return f"{users_label(r.threads)}{delay} {r.test}"


def comparison_findings(c: pd.DataFrame) -> list[str]:
    """What the turns resolved (`comparison_table`): per metric, the comparisons resolved to the target and
    those not, with why (not to be read as differences), and the widest A/A interval beside."""
    def aa_base(g: pd.DataFrame) -> str:   # the A/A pair's own base (block_align on, also for io.eff)
        b = g.loc[g["config"] == AA, "base"]
        return f" ({b.iloc[0]})" if len(b) else ""

    lines = (findings_line(g, f"{MEASURES.get(metric, metric)}: {{resolved}} of {{of}}",
                           lambda r: f"{_where(r)} {r.comparison}", aa_label=aa_base(g))
             for metric, g in c.groupby("metric", sort=False))
    return [ln for ln in lines if ln]


def findings(result: IoEfficiencyResult) -> str:
    """The study's findings: its seed tables, the background-IO check and what the turns resolved, in
    Markdown bullets."""
    lines = [table_findings(seed_tables(result), background_io(result)), *comparison_findings(
        comparison_table(result))]
    return "\n".join(x for x in lines if x)
