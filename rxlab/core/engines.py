"""The backends a run can name, as listings show them: RocksDB's own file system and rxlab's engines.

rxlab's engines and their URI options come from the compiled module
(`rxlab._core.engines()`, declared next to each engine in ext/fs), so a
listing cannot drift from what the engines accept. `default`, RocksDB's own
file system, is not an rxlab engine: it is described here.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

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


# ---------------------------------------------------------------- URIs
# The one Python place that knows a backend string's syntax: `[rxlab://]ENGINE[?k=v&k=v]`, or
# RocksDB's own `default[?io_uring=0|1]`. Which engines and options exist, their defaults and what
# values they take are the C++ registry's (rxlab._core.parse_uri / engines, called inside the
# functions, so that importing rxlab.core needs no compiled module).

SCHEME = "rxlab://"
# Options that make an engine cheaper per IO without a polling thread (fio's registerfiles and
# fixedbufs): the "best options" column of an engine that declares them.
FAST_OPTIONS = ("registered_files", "fixed_buffers")


class Backend(NamedTuple):
    """A backend string taken apart: the engine's name and its options as written (in order)."""

    engine: str
    options: dict[str, str]

    def __str__(self) -> str:
        return format_uri(self.engine, self.options)


def parse(uri) -> Backend:
    """`io_uring?sqpoll=1&fixed_buffers=1` or `rxlab://posix` -> Backend(engine, {option: value}).

    Only the syntax: `check` asks the registry whether the engine and values exist. A bad
    string is one ValueError line naming it.
    """
    s = str(uri).strip().removeprefix(SCHEME)
    name, _, query = s.partition("?")
    if not name or "/" in name or "=" in name or "&" in name:
        raise ValueError(f"backend {str(uri)!r}: expected ENGINE or ENGINE?option=value&..., "
                         f"e.g. posix, io_uring?registered_files=1 or default")
    opts: dict[str, str] = {}
    for item in query.split("&"):
        if not item:
            continue  # a trailing ? or &
        k, eq, v = item.partition("=")
        if not k or not eq:
            raise ValueError(f"backend {str(uri)!r}: option {item!r} is not option=value")
        opts[k] = v
    return Backend(name, opts)


def format_uri(engine: str, options: Mapping[str, object] | None = None, /, **more) -> str:
    """The backend string of `engine` with `options` (then `more`) in order; a None value is left out.
    `format_uri("io_uring", fixed_buffers=1)` -> "io_uring?fixed_buffers=1" (no scheme: the Python
    form; `fs_uri` gives db_bench's)."""
    opts = {**(options or {}), **more}
    query = "&".join(f"{k}={_value(v)}" for k, v in opts.items() if v is not None)
    return f"{engine}?{query}" if query else engine


def _value(v) -> str:
    return str(int(v)) if isinstance(v, bool) else str(v)


def engine(uri) -> str:
    """The engine of a backend string: `rxlab://io_uring?sqpoll=1` -> `io_uring`."""
    return parse(uri).engine


def options(uri) -> dict[str, str]:
    """The options of a backend string as written (none filled in from the defaults)."""
    return parse(uri).options


def with_options(uri, **changes) -> str:
    """`uri` with options set (a None value removes one), in the form it was given (with or
    without the scheme); unchanged when nothing changes."""
    b = parse(uri)
    opts = {k: v for k, v in {**b.options, **{k: _value(v) if v is not None else None
                                             for k, v in changes.items()}}.items() if v is not None}
    out = format_uri(b.engine, opts)
    return SCHEME + out if str(uri).strip().startswith(SCHEME) else out


def label(uri) -> str:
    """The one label of a backend, whatever the entry point gave: without the scheme, options as
    written (`rxlab://posix` and `posix` are both `posix`)."""
    return str(parse(uri))


def is_default(uri) -> bool:
    """RocksDB's own file system (`default`, `default?io_uring=1`)?"""
    return engine(uri) == DEFAULT["name"]


def fs_uri(uri) -> str | None:
    """db_bench's --fs_uri for a backend: `rxlab://ENGINE?...`, or None for RocksDB's own file system."""
    return None if is_default(uri) else SCHEME + label(uri)


def check(uri) -> str:
    """The canonical form of a backend the registry accepts (`rxlab://io_uring?sqpoll=1`, or
    `default?io_uring=1`: options at their defaults dropped, the rest by name); ValueError with one
    line naming what is wrong otherwise."""
    b = parse(uri)  # the syntax first, in this module's words
    if b.engine == DEFAULT["name"] and any(k not in DEFAULT["options"] or v not in ("0", "1")
                                           for k, v in b.options.items()):
        raise ValueError("the default file system takes only io_uring=0 or io_uring=1")
    return rxlab._core.parse_uri(label(uri))["uri"]


def _runs_rocksdb(e: dict) -> bool:
    # The registry says whether RocksDB runs on an engine (sync moves the shared file offset: rxlab fio only).
    return bool(e.get("rocksdb", "fio only" not in e["help"]))


def names() -> list[str]:
    """rxlab's engines that RocksDB runs on, in the registry's order."""
    return [e["name"] for e in rxlab._core.engines() if _runs_rocksdb(e)]


def backends() -> list[str]:
    """Every backend a study comparing engines runs: `default` first, then `names()`."""
    return [DEFAULT["name"], *names()]


def best(name: str) -> str | None:
    """The engine with its FAST_OPTIONS switched on (`io_uring?registered_files=1&fixed_buffers=1`),
    or None when it declares none of them."""
    eng = next((e for e in rxlab._core.engines() if e["name"] == name), None)
    if eng is None:
        raise ValueError(f"engine {name!r}: engines are {', '.join(names())}")
    fast = [o for o in FAST_OPTIONS if o in eng["options"]]
    return format_uri(name, dict.fromkeys(fast, "1")) if fast else None
