"""How a configuration runs: db_bench's flags and file system URI, and the tracer wrapped around it.

A tracer must wrap a whole process, so every configuration is one run of
the stock release db_bench (references.run_db_bench) through rxlab's plugin:

* ``none``: counters=0 (rxlab's engines count nothing), no external tool.
* ``counters``: counters=1, the in-process counters written as JSON at exit.
* ``perf``: counters=0 under ``perf record -e cpu-clock -F <freq> -g`` (a
  software event: sampling works in these VMs; hardware events do not, see
  params.tool_status).
* ``strace``: counters=1 under ``strace -c -f`` (all syscalls counted, as the
  report's ``strace -c``), so strace's counts and rxlab's come from one run.

LD_PRELOAD (the plugin) reaches db_bench only, never the tracer.
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence
from pathlib import Path

from rxlab.core import engines
from rxlab.core import params as checks
from rxlab.studies.tracing_overhead.params import KEY_SIZE, VALUE_SIZE, WRITE_BUFFER, Params, Settings


def fs_uri(backend: str, tracer: str, counters_path: str | os.PathLike | None = None) -> str | None:
    """The --fs_uri of a configuration (None for RocksDB's own file system).

    counters=1 for `counters` and `strace` (strace's counts are compared with
    them), counters=0 otherwise.
    """
    if checks.is_default(backend):
        return None
    on = tracer in ("counters", "strace")
    return engines.fs_uri(engines.with_options(backend, counters=int(on),
                                               counters_path=counters_path if on else None))


def default_flags(backend: str) -> dict:
    """default?io_uring=0|1 is db_bench's --io_uring_enabled (its default is true)."""
    o = engines.options(backend)
    return {"io_uring_enabled": "false" if o == {"io_uring": "0"} else "true"} if o else {}


def db_bench_flags(params: Params, s: Settings, db: Path, rep: int) -> dict:
    """The report's static settings (5.2.1) with O_DIRECT reads, flushes and compactions; a seed per rep."""
    return {"db": str(db), "benchmarks": ",".join(params.benchmarks()), "num": s.num, "reads": s.reads,
            "key_size": KEY_SIZE, "value_size": VALUE_SIZE, "write_buffer_size": WRITE_BUFFER,
            "cache_size": s.cache_size, "use_direct_reads": "true",
            "use_direct_io_for_flush_and_compaction": "true", "seed": rep + 1}


def tracer_prefix(tracer: str, out: Path, perf_freq: int) -> list[str]:
    """The command in front of db_bench: [] for none and counters."""
    if tracer == "perf":
        return ["perf", "record", "-e", "cpu-clock", "-F", str(perf_freq), "-g", "-o", str(out), "--"]
    if tracer == "strace":
        return ["strace", "-c", "-f", "-o", str(out), "--"]
    return []


def wrapper_script(path: Path, prefix: Sequence[str], db_bench: Path, preload: str | None) -> Path:
    """A script that runs db_bench under `prefix`, LD_PRELOAD given to db_bench only.

    references.run_db_bench runs `stdbuf -oL <script>`: stdbuf's own preload (line
    buffering) is kept for db_bench and taken from the tracer.
    """
    pre = "${LD_PRELOAD:+$LD_PRELOAD:}" + shlex.quote(preload) if preload else '"$LD_PRELOAD"'
    prefix = list(prefix)
    if prefix[0] == "strace":  # strace -E sets it for the traced program: no env process in the counts
        run = f'{shlex.join(prefix[:-1])} -E LD_PRELOAD="$P" -- {shlex.quote(str(db_bench))}'
    else:
        run = f'{shlex.join(prefix)} env LD_PRELOAD="$P" {shlex.quote(str(db_bench))}'
    body = ("#!/bin/sh\n# rxlab.studies.tracing_overhead: the tracer wraps db_bench; only db_bench gets "
            f'the preload\nP={pre}\nunset LD_PRELOAD\nexec {run} "$@"\n')
    path.write_text(body)
    path.chmod(0o755)
    return path


def perf_samples(log: str) -> int | None:
    """The sample count perf record prints at exit ("(123 samples)"), None when it printed none."""
    m = re.search(r"\((\d+) samples\)", log)
    return int(m.group(1)) if m else None


def slug(backend: str) -> str:
    """A backend URI as a run-name part: io_uring?registered_files=1 -> io_uring_registered_files_1."""
    return re.sub(r"[^A-Za-z0-9]+", "_", engines.label(backend)).strip("_")
