"""Ctrl-C stops a step within a second: rxlab._core.run_step waits for the step's threads with the
GIL released in 50 ms slices, lets Python see SIGINT between them, and cancels the step (each worker
checks the flag before its next operation). driver.run then raises RunInterrupted with the run kept as
failed. Each kind of step loop is interrupted in a child process (a SIGINT must not reach pytest)."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(240)

CHILD = textwrap.dedent("""
    import glob, json, os, signal, sys, threading, time
    from rxlab.bench import driver
    from rxlab.core import store

    root, db, steps, before, extra = sys.argv[1], sys.argv[2], sys.argv[3].split(","), int(sys.argv[4]), \\
        json.loads(sys.argv[5])
    sent = {}
    # A suite started in the background by a non-interactive shell (`pytest &`, nohup) inherits SIGINT
    # ignored, and Python then installs no handler: Ctrl-C's own handler, as in a terminal.
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def interrupt():
        # the steps before the one to interrupt are stored as parts; then it runs for a second
        while len(glob.glob(os.path.join(root, ".tmp-*", "parts", "*-step.parquet"))) < before:
            time.sleep(0.01)
        time.sleep(1.0)
        sent["t"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    spec = driver.RunSpec(db=db, backend="posix", value_size=100, steps=steps, **extra)
    t_start = time.monotonic()
    try:
        driver.run(spec, root=root, progress=False)
        print(json.dumps({"interrupted": False}))
    except driver.RunInterrupted as e:
        run = store.load_run(e.path)
        print(json.dumps({"interrupted": True, "latency_s": time.monotonic() - sent["t"],
                          "status": run.status, "steps": run.steps["name"].tolist() if len(run.steps) else [],
                          "path": str(e.path), "ran_s": time.monotonic() - t_start}))
""")


@pytest.mark.parametrize(("steps", "before", "extra"), [
    ("fillseq,flush,readrandom", 2, {"num": 20000, "duration": 60}),
    ("fillseq,flush,multireadrandom", 2, {"num": 20000, "duration": 60, "batch_size": 16,
                                          "multiread_batched": True}),
    ("fillseq,flush,readwhilewriting", 2, {"num": 20000, "duration": 60, "threads": 2}),
    ("fillrandom", 0, {"num": 20_000_000}),  # about a minute of writes when left alone
], ids=["readrandom", "multireadrandom", "readwhilewriting", "fillrandom"])
def test_ctrl_c_stops_each_kind_of_step_within_a_second(tmp_path, steps, before, extra):
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "runs"), str(tmp_path / "db"), steps,
                        str(before), json.dumps(extra)], capture_output=True, text=True, timeout=200,
                       check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["interrupted"], "the step ran to its end"
    print(f"\n{steps.split(',')[-1]}: stopped {out['latency_s'] * 1000:.0f} ms after SIGINT")
    assert out["latency_s"] < 1.0
    assert out["status"] == "failed" and out["steps"] == steps.split(",")[:before]
    assert "/.failed-" in out["path"]
