"""rxlab.studies.perf_model.placement: blocking reads and the CPU taking the disk's interrupt (real IO)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rxlab.bench import fio
from rxlab.bench import irq as bench_irq
from rxlab.core import metrics, store
from rxlab.studies.perf_model import placement

pytestmark = pytest.mark.timeout(300)

TWO_CPUS = pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")

INTERRUPTS = """\
           CPU0       CPU1
 35:          0          1   PCI-MSIX-0000:00:02.0   0-edge      virtio1-config
 36:          7     139660   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
 37:        500          0   PCI-MSIX-0000:00:03.0   0-edge      virtio2-config
NMI:          0          0   Non-maskable interrupts
"""


def test_interrupt_counts_sums_the_devices_lines_per_cpu():
    assert bench_irq.interrupt_counts([35, 36], INTERRUPTS).tolist() == [7, 139661]
    assert bench_irq.interrupt_counts([37], INTERRUPTS).tolist() == [500, 0]
    assert bench_irq.interrupt_counts([99], INTERRUPTS).tolist() == [0, 0]


def test_device_irqs_are_the_disks_and_they_fire_on_reads(fio_file):
    irqs = bench_irq.device_irqs(fio_file)
    if not irqs:
        pytest.skip("the file's disk has no MSI vectors in sysfs here")
    before = bench_irq.interrupt_counts(irqs)
    fio.run(fio_file, size="64m", runtime=0.3, ramp_time=0)
    assert (bench_irq.interrupt_counts(irqs) - before).sum() > 100  # O_DIRECT reads, one interrupt or so each


@pytest.fixture(scope="module")
def fio_file(tmp_path_factory):
    f = tmp_path_factory.mktemp("placement") / "fio.dat"
    fio.layout(f, 64 << 20)
    return f


def test_cpus_allowed_restricts_the_jobs_and_split_picks_from_it(fio_file):
    allowed = sorted(os.sched_getaffinity(0))
    last = allowed[-1]
    rows = fio.run(fio_file, size="64m", runtime=0.2, ramp_time=0, numjobs=2,
                     cpus_allowed=str(last), cpus_allowed_policy="split")
    assert [r["cpu"] for r in rows[:-1]] == [last, last] and rows[-1]["cpus_allowed"] == str(last)
    assert sorted(os.sched_getaffinity(0)) == allowed  # the caller's affinity is given back
    for bad, match in (("x", "expected CPU numbers"), ("3-1", "bad range"),
                       ("4096", r"CPU\(s\) 4096 are not available")):
        with pytest.raises(ValueError, match=f"cpus_allowed='{bad}': {match}"):
            fio.run(fio_file, size="64m", runtime=0.2, cpus_allowed=bad)


@TWO_CPUS
def test_each_io_is_counted_on_the_cpu_its_job_woke_on(fio_file):
    """rxlab fio counts every completed IO on the CPU its job was on then: pinned to the
    interrupt's CPU the share woken away from it is 0, pinned to another CPU it is 1."""
    irq = bench_irq.busiest_irq_cpu(fio_file)
    if irq is None or not bench_irq.device_irqs(fio_file):
        pytest.skip("the file's disk has no interrupts in /proc/interrupts here")
    other = next(c for c in sorted(os.sched_getaffinity(0)) if c != irq)
    for cpu, away in ((irq, 0.0), (other, 1.0)):
        rows = fio.run(fio_file, size="64m", runtime=0.3, ramp_time=0, cpus_allowed=str(cpu))
        total = rows[-1]
        assert total["irq_cpu"] == irq
        assert total["calls_counted"] == total["ops"] > 100
        assert metrics.seed_columns(total).iloc[0]["awayShare"] == pytest.approx(away, abs=0.02)
    win = bench_irq.IrqWindow("/proc/self")  # no block device behind it: nothing to say
    assert win.columns([3, 4]) == {"irq_cpu": None, "calls_on_irq_cpu": None, "calls_counted": 7}


@TWO_CPUS
def test_run_places_the_jobs_as_named(fio_file):
    df = placement.run(fio_file, runtime=0.3, repeats=1, size="64m")
    by = df.set_index("where")
    assert {"shared", "split"} <= set(by.index)
    assert len(set(by.loc["split", "cpus"].split(","))) == 2 and by.loc["shared", "cpus"] == "None,None"
    if "irq" in by.index:
        irq = by.loc["irq", "irq_cpu"]
        assert by.loc["irq", "cpus"] == str(irq) and by.loc["other", "cpus"] != str(irq)
    assert (df["iops"] > 0).all() and (df["runqPer"] >= 0).all() and (df["cpuPer"] > 0).all()
    s = placement.summary(df)
    assert s["config"].tolist() == [c for c, _, w in placement.CONFIGS if w in set(df["where"])]


def test_summary_and_findings_on_known_numbers():
    rows = []
    for rep in range(3):
        for name, jobs, where in placement.CONFIGS:
            lat = {"irq": 60.0, "other": 80.0, "shared": 90.0, "split": 92.0}[where] + rep
            rows.append({"config": name, "numjobs": jobs, "where": where, "rep": rep,
                         "iops": 1e6 * jobs / lat, "lat_us": lat, "cpuPer": 20.0, "usPer": 1.0, "syPer": 19.0,
                         "runqPer": 15.0 if where == "shared" else 0.5, "irqs_per_io": 1.0 / jobs})
    s = placement.summary(pd.DataFrame(rows))
    assert s["where"].tolist() == ["irq", "other", "shared", "split"]
    row = s.set_index("where").loc["shared"]
    assert row["lat_us"] == 91.0 and row["rest_us"] == pytest.approx(91.0 - 20.0 - 15.0) and row["n"] == 3
    text = placement.findings(s)
    assert "+20.0 us per read" in text and "waiting 15.0 us for a CPU" in text
    assert "grows by +30.0 us" in text and "wait for a CPU +14.5" in text
    fig = placement.draw_placement(s)
    assert len(fig.axes[0].patches) == 12
    with pytest.raises(ValueError, match="no rows"):
        placement.summary(pd.DataFrame())
    assert np.isfinite(s["rest_us"]).all()


@TWO_CPUS
def test_measure_stores_every_run_and_removes_its_file(tmp_path):
    work, runs = tmp_path / "work", tmp_path / "runs"
    df = placement.measure(work, size=32 << 20, runtime=0.2, repeats=1, root=runs, study="s1",
                           name="model-s1-placement")
    assert len(df) >= 2 and df["run"].map(lambda p: (Path(p) / "run.json").is_file()).all()
    assert not any(work.iterdir())  # the data file is gone, the results stay in the store
    spec = store.load_run(df["run"].iloc[0]).spec
    assert spec["tool"] == "rxlab-fio" and spec["name"].startswith("model-s1-placement-")
    assert spec["study"] == "s1"
    # the stored runs read back as `run` returned them
    back = placement.frame(store.catalog(runs))
    assert back["run"].tolist() == [Path(r).name for r in df["run"]]
    cols = ["config", "numjobs", "where", "rep", "cpus", "irq_cpu", "iops", "lat_us", "cpuPer", "runqPer",
            "irqs_per_io"]
    pd.testing.assert_frame_equal(back[cols], df[cols], check_dtype=False)
    assert placement.frame(store.catalog(runs).assign(run_name="other")).empty
