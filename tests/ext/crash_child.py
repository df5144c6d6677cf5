"""Child process of tests/test_crash.py (not a test module: pytest does not collect it).

Opens a DB and writes keys in a loop; after each put() has returned it prints
the key's number on stdout and flushes, so the parent knows exactly which
writes were acknowledged. The parent kills it with SIGKILL.

    python crash_child.py DB BACKEND OPTIONS --start N [--sync 0|1] [--count M]
                          [--value-size B] [--compact-every K]

With --count the child stops after M keys, prints "done" and sleeps until
killed (the negative control); otherwise it writes until killed.
"""
from __future__ import annotations

import argparse
import sys
import time

import rxlab


def key_of(i: int) -> bytes:
    # A scrambled prefix: consecutive keys land all over the key space, so L0
    # files overlap and compactions really rewrite data (sequential keys would
    # only be moved between levels).
    return b"%08x-%010d" % ((i * 2654435761) & 0xFFFFFFFF, i)


_PATTERN = bytes(range(251)) * 64


def value_of(i: int, size: int) -> bytes:
    head = b"value-%010d-" % i
    # Varied but deterministic filler, so the parent can check every byte.
    n = max(size - len(head), 0)
    assert n <= len(_PATTERN) - 251
    return head + _PATTERN[i % 251 : i % 251 + n]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("backend")
    ap.add_argument("options")
    ap.add_argument("--start", type=int, required=True)
    ap.add_argument("--sync", type=int, default=1)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--value-size", type=int, default=400)
    ap.add_argument("--compact-every", type=int, default=0)
    a = ap.parse_args()

    out = sys.stdout
    db = rxlab.open(a.db, a.backend, a.options)
    out.write("open\n")
    out.flush()
    i = a.start
    n = 0
    while True:
        db.put(key_of(i), value_of(i, a.value_size), sync=bool(a.sync))
        out.write(f"{i}\n")
        out.flush()
        i += 1
        n += 1
        if a.compact_every and n % a.compact_every == 0:
            db.compact()  # a manual compaction while keys keep coming
        if a.count and n >= a.count:
            out.write("done\n")
            out.flush()
            while True:  # no flush, no close: wait for SIGKILL
                time.sleep(60)


if __name__ == "__main__":
    sys.exit(main())
