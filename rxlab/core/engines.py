"""The backends a run can name, as listings show them: RocksDB's own file system and rxlab's engines.

rxlab's engines and their URI options come from the compiled module
(`rxlab._core.engines()`, declared next to each engine in ext/fs), so a
listing cannot drift from what the engines accept. `default`, RocksDB's own
file system, is not an rxlab engine: it is described here.
"""
from __future__ import annotations

import rxlab

# RocksDB's own file system: `default` or `default?io_uring=1` (rxlab.core.params.backend checks them).
DEFAULT = {
    "name": "default",
    "help": "RocksDB's own posix file system, untouched: the reference. In rxlab's process "
            "RocksDbIOUringEnable() answers false, so MultiRead is a pread loop and ReadAsync is synchronous",
    "options": {"io_uring": ("0", "1: RocksDbIOUringEnable() answers true, so MultiRead and ReadAsync use "
                                  "RocksDB's io_uring code, as db_bench does by default "
                                  "(--io_uring_enabled); process-wide, read at each file open")},
}


def engines() -> list[dict]:
    """Every backend: `default` first, then rxlab's engines.

    Each is {name, help, options: {option: (default, meaning)}}.
    """
    return [DEFAULT, *rxlab._core.engines()]


def shared_options(engs: list[dict] | None = None) -> dict[str, tuple[str, str]]:
    """The URI options every rxlab engine takes, with the same default and meaning (listed once)."""
    rx = [e for e in (engs or engines()) if e["name"] != DEFAULT["name"]]
    if not rx:
        return {}
    first = rx[0]["options"]
    return {k: v for k, v in first.items() if all(e["options"].get(k) == v for e in rx[1:])}


def own_options(engine: dict, shared: dict[str, tuple[str, str]]) -> dict[str, tuple[str, str]]:
    """An engine's options beyond the shared ones."""
    return {k: v for k, v in engine["options"].items() if k not in shared}
