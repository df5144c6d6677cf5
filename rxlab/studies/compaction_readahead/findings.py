"""What a readahead study measured against the seed, in Markdown bullets with its numbers."""
from __future__ import annotations

import pandas as pd

from rxlab.studies.compaction_readahead.columns import READ_MBPS
from rxlab.studies.compaction_readahead.params import MIB
from rxlab.studies.compaction_readahead.result import ReadaheadResult
from rxlab.studies.compaction_readahead.tables import findings_table, summary


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
    lines.append("- overwrite throughput: " + ", ".join(f"{k} {v:,.0f}/s" for k, v in qps.items())
                 + f"; best here {ft.loc['throughput', 'best here']}, "
                   f"worst {ft.loc['throughput', 'worst here']} "
                   f"(seed: best {ft.loc['throughput', 'best in seed']}, worst "
                   f"{ft.loc['throughput', 'worst in seed']}); the gap is "
                   f"{ft.loc['throughput', 'best/worst gap %']:.0f}% of the best.")
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
