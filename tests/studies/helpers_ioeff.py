"""A synthetic IO-efficiency study in a store, for the tests of rxlab.studies.io_efficiency and perf_model.

`write_study` writes runs with store.RunWriter, named as IoEfficiencyStudy
names its runs, with raw step counters chosen so that every seed column has
a known value (fio: 10,000 reads/s per job; RocksDB: io.eff 0.8, 0.7, 0.9
for readrandom, 2, 3 in the middle repetition). It then goes through the
same path as a real study: catalog -> frame -> load -> tables; `stored_study`
writes one and loads it back.
"""
from __future__ import annotations

from rxlab.core import store
from rxlab.studies.io_efficiency import STUDY, with_delay

STUDY_ID = "20250101T000000abcd"
FP = {"hostname": "testhost", "kernel": "6.x", "cores": 2, "device": {"disk": "vda"}}
EFF = {"readrandom": 0.8, "readrandom2": 0.7, "readrandom3": 0.9}   # io.eff of the middle repetition
CPU_INC = {"readrandom": 10.0, "readrandom2": 8.0, "readrandom3": 6.0}
FIO_CPU_US = 12.0          # fio CPU per read (2 user + 10 system)
REP_SCALE = (1.02, 1.0, 0.98)   # repetitions 0, 1, 2: the median is repetition 1


def raw(name, ops, reads, user_us, sys_us, *, lat_us=100.0, kib=8.0, io_lat_us=60.0, **kw):
    """A step row of raw counters over one second (see rxlab.core.metrics)."""
    return {"name": name, "ops": ops, "wall_s": 1.0, "lat_mean_us": lat_us,
            "cpu_user_s": user_us * ops / 1e6, "cpu_sys_s": sys_us * ops / 1e6,
            "disk_reads": reads, "disk_read_sectors": reads * kib * 2,
            "disk_read_ticks_ms": reads * io_lat_us / 1e3,
            "disk_writes": 0, "disk_write_sectors": 0, "disk_write_ticks_ms": 0, **kw}


def write_study(root, *, threads=(1, 2), block_align=(True, False), reps=3, delays=(0,), excess=0.0,
                away=False, unaligned=False, study=STUDY_ID):
    """A stored study as IoEfficiencyStudy.run would leave it (one fio run and one sequence per
    configuration; with `away`, the fio run pinned away from the interrupt's CPU at 6,000 reads/s as
    well; with `unaligned`, fio reading 8.5 KiB blocks at 8,000 reads/s per job). No manifest: a
    study stored before manifests existed, loaded when its frame is complete."""
    paths = []
    for rep in range(reps):
        k = REP_SCALE[rep]
        for d in delays:
            for t in threads:
                fio_reads = int(10_000 * t)
                spec = {"name": f"ioeff-{study}-r{rep}-t{t}-d{d}-fio", "tool": "rxlab-fio", "scale": "smoke",
                        "backend": "posix", "study_backend": "posix", "threads": t, "delay_us": d}
                with store.RunWriter(root, spec, FP) as w:
                    w.add_step({**raw("fio-sync", fio_reads, fio_reads, 1.0, 11.0), "job": "0",
                                "tool": "rxlab-fio"})
                    device = int(fio_reads * (1 + excess))
                    w.add_step({**raw("fio-sync", fio_reads, device, 2.0, 10.0, lat_us=90.0), "job": "total",
                                "tool": "rxlab-fio"})
                paths.append(w.path)
                if away and d == 0 and t == min(threads):
                    spec = {**spec, "name": f"ioeff-{study}-r{rep}-t{t}-d{d}-fioaway",
                            "tool": "rxlab-fio-away"}
                    with store.RunWriter(root, spec, FP) as w:
                        w.add_step({**raw("fio-sync", 6_000, 6_000, 2.0, 10.0, lat_us=150.0), "job": "total",
                                    "tool": "rxlab-fio", "irq_cpu": 1, "calls_on_irq_cpu": 0,
                                    "calls_counted": 6_000})
                    paths.append(w.path)
                if unaligned and d == 0:
                    spec = {"name": f"ioeff-{study}-r{rep}-t{t}-d{d}-fio512", "tool": "rxlab-fio-unaligned",
                            "scale": "smoke", "backend": "posix", "study_backend": "posix", "threads": t,
                            "delay_us": d}
                    with store.RunWriter(root, spec, FP) as w:
                        w.add_step({**raw("fio-sync", 8_000 * t, 8_000 * t, 2.0, 10.0, lat_us=110.0, kib=8.5),
                                    "job": "total", "tool": "rxlab-fio"})
                    paths.append(w.path)
                for ba in block_align:
                    uri = with_delay("posix", d)
                    spec = {"name": f"ioeff-{study}-r{rep}-t{t}-d{d}-ba{int(ba)}", "backend": uri,
                            "threads": t, "block_align": ba, "scale": "smoke", "steps": ["io_efficiency"]}
                    with store.RunWriter(root, spec, FP) as w:
                        w.add_step({**raw("fillseq", 30_000, 0, 3.0, 2.0), "threads": 1, "backend": uri})
                        for test, eff in EFF.items():
                            reads = round(fio_reads * eff * k * (1.0 if ba else 0.93))
                            cpu = FIO_CPU_US + CPU_INC[test]
                            row = raw(test, reads, reads, cpu * 0.6, cpu * 0.4, kib=8.0 if ba else 8.8)
                            w.add_step({**row, "threads": t, "backend": uri, "fs.reads": reads})
                    paths.append(w.path)
    return paths


def stored_study(root, **kw):
    """write_study(root, **kw), loaded back as IoEfficiencyStudy.load finds it."""
    write_study(root, **kw)
    res = STUDY.load(root)
    assert res is not None
    return res
