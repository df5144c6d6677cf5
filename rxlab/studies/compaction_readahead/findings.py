"""What a readahead study measured against the seed, in Markdown bullets with its numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd

from rxlab.core.resolution import AA
from rxlab.core.study import manifest
from rxlab.studies.compaction_readahead.columns import READ_MBPS
from rxlab.studies.compaction_readahead.params import COMPARE, MIB
from rxlab.studies.compaction_readahead.result import ReadaheadResult
from rxlab.studies.compaction_readahead.tables import comparison_table, findings_table, summary


def findings(result: ReadaheadResult) -> str:
    """What the study shows, in a few Markdown bullets with its numbers."""
    s = summary(result)
    ft = findings_table(result).set_index("metric")
    msk = result.max_sectors_kb
    limit = result.memory_limit
    lines = []
    if msk:
        above = [r for r, a in zip(s["setting"], s["above_max_sectors"], strict=True) if a is True]
        lines.append(f"- The device's max_sectors_kb is {msk} KiB (the seed's RAID device: 128, its SSDs: "
                     "1280); "
                     + (f"{', '.join(above)} exceed it." if above else
                        "no setting run here exceeds it, so the seed's condition (readahead larger than "
                        "max_sectors_kb) is not tested on this device."))
    qps = s.set_index("setting")["qps"]
    lines.append("- overwrite throughput (medians): " + ", ".join(f"{k} {v:,.0f}/s" for k, v in qps.items())
                 + f"; highest median here {ft.loc['throughput', 'best here']}, "
                   f"lowest {ft.loc['throughput', 'worst here']} "
                   f"(seed: best {ft.loc['throughput', 'best in seed']}, worst "
                   f"{ft.loc['throughput', 'worst in seed']}), "
                   f"{ft.loc['throughput', 'best/worst gap %']:.0f}% apart: a ranking only where the ratios "
                   "below are resolved.")
    lines += _resolution(result)
    rs = s.set_index("setting")
    lines.append("- Device reads: " + ", ".join(
        f"{k} {r[READ_MBPS]:.1f} MiB/s in {r['reqsz']:.0f} KiB requests" for k, r in rs.iterrows())
        + f" (seed: most MB/s with {ft.loc['read MB/s (iostat)', 'best in seed']}, largest rareq-sz with "
          f"{ft.loc['rareq-sz (iostat)', 'best in seed']}, smallest with "
          f"{ft.loc['rareq-sz (iostat)', 'worst in seed']}).")
    lines.append("- Page-cache hit ratio of RocksDB's reads (1 - own device reads / file-system reads): "
                 + ", ".join(f"{k} {r['cache.hit']:.2f}" for k, r in rs.iterrows())
                 + (f", under a {limit / MIB:.0f} MiB memory limit" if limit else ", without a memory limit")
                 + f"; write stalls took {', '.join(f'{v:.0f}%' for v in rs['stall.pct'])} of the step.")
    crs = rs["compact_rmbps"]
    lines.append("- Compaction read " + ", ".join(f"{v:.1f} MiB/s at {k}" for k, v in crs.items())
                 + " (RocksDB's own count of compaction input bytes per second of the step).")
    if (rs["stall.pct"] < 5).all():
        lines.append("- Write stalls took under 5% of every step: overwrite was not compaction-bound here, "
                     "so the readahead setting changes how fast compaction reads, not how fast the writer "
                     "writes.")
    own, dev = pd.to_numeric(result.frame["own_read_bytes"]), (
        pd.to_numeric(result.frame["disk_read_sectors"]) * 512)
    if dev.sum() > 0 and own.sum() < 0.95 * dev.sum():
        lines.append(f"- The device served {dev.sum() / max(own.sum(), 1):.2f}x the reads this process "
                     "issued: "
                     "other processes' IO is in the device-wide columns (rmbps, reqsz, iops).")
    return "\n".join(lines)


def _resolution(result: ReadaheadResult) -> list[str]:
    """What the turns resolved: the throughput ratios to the base resolved to the target and those not
    (with why, not to be read as differences), the A/A control's interval beside."""
    c = comparison_table(result)
    cmp, aa = c[c["config"] != AA], c[c["config"] == AA]
    if cmp.empty:
        return []
    turns = dict(result.turns or (manifest(result.root, result.study) or {}).get("turns") or {})
    ok, bad = cmp[cmp["resolved"].astype(bool)], cmp[~cmp["resolved"].astype(bool)]
    target = f", target +-{turns['target']:g}%" if turns.get("target") else ""
    n = int(cmp["turns"].max())
    text = (f"- In turns ({n} turn{'s' if n != 1 else ''}{target}): "
            f"{len(ok)} of {len(cmp)} {COMPARE.label} ratios to {cmp['base'].iloc[0]} resolved")
    if len(ok):
        text += " (" + "; ".join(f"{r.config} {r.ratio:.3f} [{r.lo:.3f}..{r.hi:.3f}] +-{r.half_width:.1f}%"
                                 for r in ok.itertuples()) + ")"
    if len(bad):
        text += "; unresolved, not to be read as differences: " + "; ".join(
            f"{r.config} {r.ratio:.3f}" + (f" +-{r.half_width:.1f}%" if np.isfinite(r.half_width) else "")
            + f" ({r.status.removeprefix('unresolved: ')})" for r in bad.itertuples())
    if aa["half_width"].notna().any():
        a = aa.iloc[0]
        text += f"; A/A control {a['ratio']:.3f} +-{a['half_width']:.1f}%"
    return [text + "."]
