"""Studies that can be interrupted: owners, `rxlab study runs`, `rxlab study resume`, scratch, `rxlab clean`.

The end-to-end test kills `rxlab study run io_efficiency --scale smoke` with
SIGKILL after its first runs are stored, then checks that the history says
interrupted, that `rxlab runs` shows the runs' study as interrupted, that the
resume reuses the stored runs and runs only the rest under the same id, and
that the killed process's scratch folder is removed.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers_cli import describe, run_cli, rxlab_cmd

from rxlab.core import executions

pytestmark = pytest.mark.timeout(300)


def _gone_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_an_owner_is_alive_only_while_its_process_is():
    me = executions.owner()
    assert executions.owner_alive(me) is True
    assert executions.owner_alive({**me, "pid": _gone_pid()}) is False
    # the same pid, started at another time: reused by a later process
    assert executions.owner_alive({**me, "start_ticks": me["start_ticks"] - 1}) is False
    assert executions.owner_alive({**me, "boot_id": "another-boot"}) is False
    assert executions.owner_alive({**me, "host": socket.gethostname() + "-elsewhere"}) is None
    assert executions.owner_alive(None) is None
    running = {"id": "20261127T000000abcd", "status": "running"}
    assert executions.status({**running, "owner": me}) == "running"
    assert executions.status({**running, "owner": {**me, "pid": _gone_pid()}}) == "interrupted"
    gone = {**me, "pid": _gone_pid()}
    assert executions.status({**running, "owner": gone, "status": "complete"}) == "complete"


def test_clean_removes_scratch_of_gone_owners_only(tmp_path, monkeypatch):
    monkeypatch.setenv("RXLAB_SCRATCH", str(tmp_path / "scratch"))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where an older rxlab made its studies' scratch
    older = tmp_path / "rxlab-io_efficiency-x1y2"
    older.mkdir()
    (older / "f").write_bytes(b"x" * 1_048_576)
    child = ("from rxlab.core import executions; d = executions.make_scratch('demo', '20261127T000000dead'); "
             "(d / 'db').mkdir(); (d / 'db' / 'f').write_bytes(b'x' * 3_000_000)")
    subprocess.run([sys.executable, "-c", child], check=True, env={**os.environ})
    (dead,) = (tmp_path / "scratch").iterdir()
    assert dead.name.startswith("demo-20261127T000000dead-")
    live = executions.make_scratch("demo", "20261127T000000beef")
    unowned = tmp_path / "scratch" / "someone-elses"
    unowned.mkdir()
    r = run_cli("clean", "--runs", tmp_path / "runs")
    assert r.returncode == 0, describe(r)
    assert r.stdout.splitlines() == [f"removed {dead} (2.9 MiB)",
                                     "1 scratch folder(s) removed, 2.9 MiB freed",
                                     f"left alone: {older} (1.0 MiB), made by an older rxlab with no owner "
                                     "recorded; remove it yourself if no study of that rxlab runs"]
    assert not dead.exists() and live.is_dir() and unowned.is_dir() and older.is_dir()
    r = run_cli("clean", "--runs", tmp_path / "runs")
    assert r.stdout.splitlines()[0] == f"nothing to remove (scratch: {tmp_path / 'scratch'})"


def test_history_and_resume_refuse_bad_ids_in_one_line(tmp_path):
    r = run_cli("study", "resume", "2026", "--runs", tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == \
        f"rxlab: study id '2026': no such execution in {tmp_path} (`rxlab study runs` lists them)"
    r = run_cli("study", "runs", "--runs", tmp_path, "--study", "nosuch")
    assert r.returncode == 2 and r.stderr.startswith("rxlab: --study nosuch: not a study; known are ")
    r = run_cli("study", "history", "--runs", tmp_path)
    assert r.stdout.strip() == f"no study executions in {tmp_path}"


def _manifest(runs: Path) -> dict | None:
    try:
        (m,) = [json.loads(p.read_text()) for p in (runs / ".studies").glob("*.json")]
    except (OSError, ValueError):
        return None
    return m


def _runs_json(*args) -> list[dict]:
    r = run_cli(*args, "--json")
    assert r.returncode == 0, describe(r)
    return json.loads(r.stdout)


def test_kill_9_then_history_says_interrupted_and_resume_runs_only_the_rest(tmp_path):
    runs, scratch = tmp_path / "runs", tmp_path / "scratch"
    env = {**os.environ, "RXLAB_SCRATCH": str(scratch), "RXLAB_RUNS": str(runs)}
    # one thread count, in turns: setup runs fio away and fio unaligned once; a turn's plan is 2 rows (fio
    # then block_align on, block_align off), the base's A/A copy a third row of the turn
    args = ["study", "run", "io_efficiency", "--scale", "smoke", "-p", "threads=[1]", "--runs", str(runs),
            "--out", str(tmp_path / "out"), "--quiet"]
    p = subprocess.Popen([*rxlab_cmd(), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        m = None
        while time.monotonic() < deadline and p.poll() is None:
            m = _manifest(runs)
            if m and len(m.get("done", [])) >= 2:
                break
            time.sleep(0.1)
        assert m and len(m["done"]) >= 2 and p.poll() is None, f"no two rows recorded while running: {m}"
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
    killed = _manifest(runs)
    sid, first = killed["id"], killed["runs"]
    assert killed["status"] == "running" and killed["owner"]["pid"] == p.pid  # it could not say otherwise
    assert killed["plan_rows"] == 2 and len(killed["done"]) >= 2
    (left,) = scratch.iterdir()  # the killed process's DB and fio file
    assert left.name == f"io_efficiency-{sid}-{p.pid}"

    (h,) = _runs_json("study", "runs", "--runs", runs)
    assert (h["id"], h["study"], h["scale"], h["status"]) == (sid, "io_efficiency", "smoke", "interrupted")
    assert h["runs"] == len(first) and h["duration_s"] > 0
    table = run_cli("study", "history", "--runs", runs).stdout
    assert "interrupted" in table and sid in table
    listed = _runs_json("runs", "--dir", runs, "--study", "io_efficiency")
    assert {r["run_id"] for r in listed} >= set(first)
    assert {(r["study"], r["study_id"], r["study_status"]) for r in listed} == \
        {("io_efficiency", sid, "interrupted")}

    r = subprocess.run([*rxlab_cmd(), "study", "resume", sid[:12], "--runs", str(runs), "--out",
                        str(tmp_path / "out"), "--quiet"],
                       env=env, capture_output=True, text=True, timeout=240, check=False)
    assert r.returncode == 0, describe(r)
    assert f"removed {left}" in r.stderr  # the next start removes what the killed process left
    done = _manifest(runs)
    assert (done["id"], done["status"], done["error"]) == (sid, "complete", None)
    assert len(done["done"]) >= 3 and set(killed["done"]) <= set(done["done"])  # at least the one turn
    rows_first = {r for v in killed["done"].values() for r in v}
    assert rows_first <= set(done["runs"])  # the finished rows' runs reused, not rerun
    # setup (the fio baselines run once, the DB) runs again on a resume; the killed one's setup runs stay
    # stored beside the new ones
    stored = {d.name for d in runs.iterdir() if not d.name.startswith(".")}
    assert set(done["runs"]) <= stored and stored - set(done["runs"]) <= set(first) - rows_first
    reused, ran = len(rows_first), len(done["runs"]) - len(rows_first)
    assert r.stdout.splitlines()[0] == f"resumed io_efficiency {sid}: reused {reused} runs, ran {ran}"
    assert len(done["resumes"]) == 1 and done["resumes"][0]["reused_runs"] == len(rows_first)
    assert done["seconds"] >= killed["seconds"]
    assert not list(scratch.iterdir())  # the resume's own scratch went at its end
    (h,) = _runs_json("study", "runs", "--runs", runs)
    assert h["status"] == "complete" and h["resumes"] == 1 and h["runs"] == len(done["runs"])
    assert {r["study_status"] for r in _runs_json("runs", "--dir", runs)} == {"complete"}
    r = run_cli("study", "resume", sid, "--runs", runs)
    assert r.returncode == 2
    assert r.stderr.strip() == f"rxlab: study {sid}: already complete ({len(done['runs'])} runs)"
