"""The set-up's main job for now: load a DB through each backend and compare.

Runs the release db_bench through the plugin (and on RocksDB's own file
system as the reference): fillseq, flush, readrandom and multireadrandom,
with O_DIRECT reads and a small block cache, and prints one table with the
throughput, CPU per operation and the backend's own syscall counts.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from rxlab.bench import references
from rxlab.bench.references import plugin_path
from rxlab.core import engines
from rxlab.core.builds import active_build

SCALES = {"smoke": {"num": 20_000, "duration": 1}, "small": {"num": 500_000, "duration": 5}}


def backends() -> list[str]:
    """What `rxlab compare` runs: every backend of the registry (default first), and each engine with
    its best options where it has them (rxlab.core.engines.best)."""
    out = []
    for b in engines.backends():
        out.append(b)
        if not engines.is_default(b) and (fast := engines.best(b)) is not None:
            out.append(fast)
    return out


def compare(scale: str = "small", root: Path | None = None, quiet: bool = False) -> pd.DataFrame:
    if scale not in SCALES:
        raise ValueError(f"scale {scale!r}: allowed are {', '.join(SCALES)}")
    p = SCALES[scale]
    rows = []
    work = Path(tempfile.mkdtemp(prefix="rxlab-compare-", dir=root))
    try:
        for i, name in enumerate(tqdm(backends(), desc="backends", disable=quiet)):
            uri = engines.fs_uri(name)
            db = work / f"db{i}"
            counters = work / f"counters{i}.json"
            flags = {"db": str(db), "num": p["num"], "reads": p["num"], "duration": p["duration"],
                     "benchmarks": "fillseq,flush,readrandom,multireadrandom", "value_size": 400,
                     "block_size": 8192, "block_align": "true", "compression_type": "none",
                     "cache_size": 8 << 20, "use_direct_reads": "true", "bloom_bits": 10,
                     "use_direct_io_for_flush_and_compaction": "true", "multiread_batched": "true",
                     "batch_size": 16, "io_uring_enabled": "false"}
            env = {}
            if uri:
                flags["fs_uri"] = engines.with_options(uri, counters_path=counters)
                env["LD_PRELOAD"] = str(plugin_path())
            res = {r["name"]: r for r in references.run_db_bench(active_build() / "bin" / "db_bench", flags, env=env)}
            c = json.loads(counters.read_text())["counters"] if counters.is_file() else {}
            rr = res["readrandom"]
            sys_calls = sum(v for k, v in c.items() if k.startswith("sys.") and k.endswith(".count")
                            and k.split(".")[1] in ("pread64", "io_submit", "io_getevents", "io_uring_enter"))
            rows.append({
                "backend": name,
                "fillseq ops/s": res["fillseq"]["qps"],
                "readrandom ops/s": rr["qps"],
                "cpu us/op": 1e6 * (rr["cpu_user_s"] + rr["cpu_sys_s"]) / rr["ops"],
                "multiread ops/s": res["multireadrandom"]["qps"],
                "reads (ours)": c.get("reads"),
                "read syscalls (ours)": sys_calls if c else None,
                "max in flight": c.get("max_inflight"),
            })
            shutil.rmtree(db, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return pd.DataFrame(rows)
