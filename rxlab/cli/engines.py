"""Engines: `rxlab engines`, the backends a run can name and their URI options."""
from __future__ import annotations

from rxlab.core import engines as backends

TITLE = "engines"


def add_parser(sub) -> None:
    p = sub.add_parser("engines", help="the backends (default and rxlab's engines) and their URI options",
                       description="Backends: RocksDB's own file system (default) and rxlab's engines. "
                                   "Options go in a URI: io_uring?registered_files=1&fixed_buffers=1 "
                                   "(the rxlab:// prefix is optional from Python, needed for db_bench's "
                                   "--fs_uri).")
    p.set_defaults(fn=_engines)


def _options(opts: dict, indent: str = "    ") -> list[str]:
    width = max((len(f"{k}={v[0]}") for k, v in opts.items()), default=0) + 2
    return [f"{indent}{f'{k}={default}':<{width}}{text}" for k, (default, text) in opts.items()]


def _engines(a) -> int:
    every = backends.engines()
    shared = backends.shared_options(every)
    rx = [e["name"] for e in every if e["name"] != backends.DEFAULT["name"]]
    print(f"options of every rxlab engine ({', '.join(rx)}), name=default:")
    print("\n".join(_options(shared)))
    for e in every:
        print(f"\n{e['name']}: {e['help']}")
        own = backends.own_options(e, shared) if e["name"] != backends.DEFAULT["name"] else e["options"]
        if own:
            print("\n".join(_options(own)))
    return 0
