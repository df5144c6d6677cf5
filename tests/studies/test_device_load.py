"""rxlab.studies.perf_model.device_load: the disk's latency against what the vCPUs do (real IO, spinner)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rxlab.bench import irq as bench_irq
from rxlab.core import store
from rxlab.studies.perf_model import device_load

pytestmark = pytest.mark.timeout(300)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_each_setting_runs_stored_with_its_think_time_and_its_busy_neighbour(tmp_path):
    work, runs = tmp_path / "work", tmp_path / "runs"
    work.mkdir()
    df = device_load.measure(work, size=32 << 20, runtime=0.4, repeats=1, think_us=(0, 60), root=runs)
    assert len(df) == 4 and not list(work.iterdir())           # its file is gone
    assert set(zip(df["think_us"], df["neighbour"], strict=True)) == {
        (0.0, "idle"), (60.0, "idle"), (0.0, "busy"), (60.0, "busy")}
    irq = bench_irq.busiest_irq_cpu(work)
    assert (df["reader_cpu"] == (irq if irq is not None else min(os.sched_getaffinity(0)))).all()
    by = df.set_index(["think_us", "neighbour"])
    # the spin between reads is the reader's CPU; the spinner keeps the other CPU busy
    assert by.loc[(60.0, "idle"), "cpuPer"] > by.loc[(0.0, "idle"), "cpuPer"] + 30
    for t in (0.0, 60.0):
        assert by.loc[(t, "busy"), "busy_vcpus"] > by.loc[(t, "idle"), "busy_vcpus"] + 0.5
    assert (df["io.lat"] > 0).all() and (df["iops"] > 0).all()
    assert len(store.list_runs(runs)) == 4 and df["run"].notna().all()
    # the stored runs read back as `run` returned them
    back = device_load.frame(store.catalog(runs))
    back = back.sort_values(["think_us", "neighbour"]).reset_index(drop=True)
    want = df.sort_values(["think_us", "neighbour"]).reset_index(drop=True)
    cols = ["think_us", "neighbour", "rep", "reader_cpu", "busy_cpu", "iops", "io.lat", "lat_us", "cpuPer",
            "runqPer", "busy_vcpus"]
    pd.testing.assert_frame_equal(back[cols], want[cols], check_dtype=False)
    assert back["run"].tolist() == [Path(r).name for r in want["run"]]


def test_summary_findings_and_figure_on_known_numbers():
    rows = []
    for rep in range(3):
        for (think, n), lat in {(0.0, "idle"): 40.0, (40.0, "idle"): 47.0, (0.0, "busy"): 54.0,
                                (40.0, "busy"): 58.0}.items():
            rows.append({"think_us": think, "neighbour": n, "rep": rep, "iops": 1e6 / (lat + 10),
                         "io.lat": lat + rep - 1, "lat_us": lat + 10, "cpuPer": 20.0 + think, "runqPer": 0.2,
                         "busy_vcpus": 0.4 + (1.0 if n == "busy" else 0.0)})
    s = device_load.summary(pd.DataFrame(rows))
    assert list(zip(s["think_us"], s["neighbour"], strict=True)) == [
        (0.0, "idle"), (0.0, "busy"), (40.0, "idle"), (40.0, "busy")]
    assert s["io.lat"].tolist() == [40.0, 54.0, 47.0, 58.0] and (s["n"] == 3).all()
    assert (s["io.lat_max"] - s["io.lat_min"] == 2.0).all()
    text = device_load.findings(s)
    assert "47.0 us against 40.0 us at 0 us (+7.0 us per read): the longer the reader works" in text
    assert "54.0 us against 40.0 us idle (+14.0 us per read): a busy vCPU slows" in text
    # repetitions that overlap show no effect, and the findings say so
    close = s.assign(**{"io.lat_min": s["io.lat"] - 8.0, "io.lat_max": s["io.lat"] + 8.0})
    text = device_load.findings(close)
    assert "within the repetitions' spread (39.0-55.0 against 32.0-48.0 us), so no effect is shown" in text
    fig = device_load.draw_device_load(s)
    assert len(fig.axes[0].patches) == 4
    with pytest.raises(ValueError, match="no rows"):
        device_load.summary(pd.DataFrame())
    assert np.isfinite(s["busy_vcpus"]).all()


@pytest.mark.parametrize("kw, match", [
    ({"think_us": [-5]}, r"think_us=\[-5\]: give one or more times >= 0"),
    ({"think_us": []}, r"think_us=\[\]: give one or more times >= 0"),
    ({"repeats": 0}, r"repeats=0 and runtime=3 must be >= 1 and > 0"),
])
def test_bad_input_one_line(tmp_path, kw, match):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs two CPUs")
    with pytest.raises(ValueError, match=match) as e:
        device_load.run(tmp_path / "f.dat", size=1 << 20, **kw)
    assert "\n" not in str(e.value)


def test_the_spinner_dies_with_its_parent(tmp_path):
    """A process holding a _Spinner is SIGKILLed: the spinning child goes with it (no orphan left
    busy under later measurements)."""
    pid_file = tmp_path / "spinner.pid"
    code = ("import os, sys, time\nfrom rxlab.studies.perf_model import device_load\n"
            "with device_load._Spinner(os.sched_getaffinity(0).pop()) as s:\n"
            f"    open({str(pid_file)!r}, 'w').write(str(s.proc.pid))\n    time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and parent.poll() is None
        time.sleep(0.05)
    spinner = int(pid_file.read_text())
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(spinner):
        assert time.monotonic() < deadline, "the spinner outlived its parent"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
