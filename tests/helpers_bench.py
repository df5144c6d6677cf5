"""A benchmark DB the size of a test, for the benchmarks' own tests."""
from __future__ import annotations

from rxlab.bench.selfcheck import backends as bb


def small_bench_db(root, num: int = 20000):
    """A benchmark DB the size of a test under root/db-aligned, loaded by rxlab and marked as the
    benchmarks mark theirs: (path, num)."""
    from rxlab.bench import driver

    db = root / "db-aligned"
    spec = driver.RunSpec(db=str(db), num=num, key_size=bb.KEY_SIZE, value_size=bb.VALUE_SIZE,
                          cache_size=64 << 10, steps=[])
    sess = driver.Session(spec)
    try:
        for st in ({"name": "fillseq", "disable_wal": True}, {"name": "flush"}):
            sess.run_step(st)
    finally:
        sess.close()
    (db / "rxlab-loaded").write_text(f"num={num} block_align=True\n")
    return db, num
