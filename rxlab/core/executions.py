"""A study's executions: who runs one, whether it is still running, what it finished, what it leaves.

`Study.run` writes a manifest (<store>/.studies/<id>.json, rxlab.core.study)
when it starts, after every row of its plan and when it ends. Running, the
manifest names its owner: pid, host, boot and the process's start time. A
process killed by SIGKILL cannot mark its own manifest, so the reader decides:
"running" with an owner on this host whose process is gone (no such pid, or
the pid reused by a later process, which started at another time) reads as
"interrupted". On another host rxlab cannot tell, and says "running".

The manifest also records each finished row of the plan (`done`: the row's
key and its runs), so `rxlab study resume ID` reuses them and runs the rest
under the same study id.

Scratch folders (the DBs and files a study makes) live under one root,
$RXLAB_SCRATCH or <temp dir>/rxlab-scratch, one folder per execution named
<study>-<id>-<pid> with its owner inside. The next study start and `rxlab
clean` remove the folders whose owner is gone, never a live owner's.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

__all__ = ["MANIFESTS", "OWNER_FILE", "Execution", "clean_scratch", "executions", "make_scratch",
           "owner", "owner_alive", "read_manifests", "row_key", "scratch_root", "status", "unowned_temp"]

MANIFESTS = ".studies"          # under the store's root: one JSON per study id
OWNER_FILE = ".rxlab-owner.json"
SCRATCH_ENV = "RXLAB_SCRATCH"


# ------------------------------------------------------------------ owners


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks after boot (/proc/PID/stat field 22), None if no such pid
    or a zombie (it has exited; its parent has not reaped it yet)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (OSError, ValueError):
        return None
    # the command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'
    fields = text[text.rfind(")") + 2:].split()
    try:
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (IndexError, ValueError):
        return None


def owner(pid: int | None = None) -> dict:
    """This process (or `pid`) as a manifest records it."""
    pid = os.getpid() if pid is None else pid
    return {"pid": pid, "host": socket.gethostname(), "boot_id": _boot_id(), "start_ticks": _start_ticks(pid),
            "since_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def owner_alive(who: Mapping | None) -> bool | None:
    """Is the recorded owner still running? None when rxlab cannot tell (another host, nothing recorded)."""
    if not who or not who.get("pid"):
        return None
    if who.get("host") != socket.gethostname():
        return None
    if who.get("boot_id") and who["boot_id"] != _boot_id():
        return False  # the machine restarted since
    ticks = _start_ticks(int(who["pid"]))
    if ticks is None:
        return False
    return who.get("start_ticks") is None or ticks == who["start_ticks"]


def status(m: Mapping) -> str:
    """A manifest's status as a reader should take it: "running" whose owner is gone is "interrupted"."""
    s = str(m.get("status") or "unknown")
    if s == "running" and owner_alive(m.get("owner")) is False:
        return "interrupted"
    return s


# ------------------------------------------------------------------ manifests


def read_manifests(root: str | os.PathLike) -> list[dict]:
    """Every readable manifest in the store, oldest first (study ids sort by start time)."""
    d = Path(root) / MANIFESTS
    out = []
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            m = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(m, dict) and m.get("id"):
            out.append(m)
    return out


def _parse_utc(text) -> pd.Timestamp | None:
    try:
        t = pd.Timestamp(text)
    except (TypeError, ValueError):
        return None
    if t is pd.NaT:
        return None
    return t.tz_localize("UTC") if t.tzinfo is None else t.tz_convert("UTC")


def _started(m: Mapping) -> str:
    """When the study started: recorded since this module, else from its id (UTC to the second)."""
    if m.get("started_utc"):
        return str(m["started_utc"])
    sid = str(m.get("id", ""))
    try:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.strptime(sid[:15], "%Y%m%dT%H%M%S"))
    except ValueError:
        return ""


def executions(root: str | os.PathLike) -> pd.DataFrame:
    """One row per study execution in the store: id, study, scale, status, runs, start, duration, error."""
    rows = []
    for m in read_manifests(root):
        rows.append({"id": m["id"], "study": m.get("study", ""), "scale": m.get("scale", ""),
                     "status": status(m), "runs": len(m.get("runs") or []),
                     "rows": f"{len(m.get('done') or {})}/{m['plan_rows']}" if m.get("plan_rows") else "",
                     "start": _started(m).replace("T", " ").rstrip("Z"),
                     "duration_s": float(m.get("seconds") or 0.0), "resumes": len(m.get("resumes") or []),
                     "error": m.get("error") or ""})
    cols = ["id", "study", "scale", "status", "runs", "rows", "start", "duration_s", "resumes", "error"]
    return pd.DataFrame(rows, columns=cols)


def run_studies(root: str | os.PathLike) -> dict[str, tuple[str, str, str]]:
    """Each run id that a manifest names: (study name, study id, the study's status)."""
    out = {}
    for m in read_manifests(root):
        st = status(m)
        for r in m.get("runs") or []:
            out[str(r)] = (str(m.get("study", "")), str(m["id"]), st)
    return out


# ------------------------------------------------------------------ resuming


def row_key(row, seen: dict[str, int]) -> str:
    """A plan row's key: its columns as JSON, and its occurrence (a plan may hold the same row twice)."""
    values = row._asdict() if hasattr(row, "_asdict") else dict(row)
    text = json.dumps({str(k): v for k, v in values.items()}, sort_keys=True, default=str)
    n = seen.get(text, 0)
    seen[text] = n + 1
    return f"{text}#{n}" if n else text


class Execution:
    """One execution of a study: its owner, the rows done (key -> run ids), its time so far.

    `previous`: the manifest of an interrupted or failed execution that this
    one resumes (its finished rows are reused; its time is added to this one's).
    """

    def __init__(self, previous: Mapping | None = None):
        self.previous = dict(previous or {})
        self.owner = owner()
        self.started_utc = _started(self.previous) if previous else self.owner["since_utc"]
        self.done: dict[str, list[str]] = {k: list(v) for k, v in (self.previous.get("done") or {}).items()}
        self.seconds_before = float(self.previous.get("seconds") or 0.0)
        self.resumes = list(self.previous.get("resumes") or [])
        if previous:
            self.resumes.append({"since_utc": self.owner["since_utc"], "pid": self.owner["pid"],
                                 "reused_runs": sum(len(v) for v in self.done.values())})
        self.plan_rows = 0
        self.scratch: list[str] = []
        self._seen: dict[str, int] = {}

    def keys(self, rows: Iterable) -> list[str]:
        """The keys of a plan's rows, in order (and the plan's size for the manifest)."""
        seen: dict[str, int] = {}
        keys = [row_key(r, seen) for r in rows]
        self.plan_rows = len(keys)
        return keys

    def check_plan(self, keys: list[str], name: str, sid: str) -> None:
        """Refuse, in one line, to resume when rows the execution finished are not in the plan any more."""
        missing = [k for k in self.done if k not in set(keys)]
        if missing:
            raise ValueError(f"study {name} {sid}: {len(missing)} finished row(s) are not in the plan made "
                             f"now (e.g. {missing[0]}): the parameters resolve differently on this machine; "
                             "run the study again instead")

    def reused(self, key: str, root: Path) -> list[Path] | None:
        """The stored runs of a row finished before, or None to run it (also when a run is gone)."""
        names = self.done.get(key)
        if names is None:
            return None
        paths = [root / n for n in names]
        if all((p / "run.json").is_file() and (p / "steps.parquet").is_file() for p in paths):
            return paths
        del self.done[key]
        return None

    def finished(self, key: str, runs: Iterable[Path]) -> None:
        self.done[key] = [Path(r).name for r in runs]

    def fields(self, elapsed_s: float) -> dict:
        """What the manifest records about the execution."""
        return {"owner": self.owner, "started_utc": self.started_utc, "seconds":
                round(self.seconds_before + elapsed_s, 1), "plan_rows": self.plan_rows, "done": self.done,
                "resumes": self.resumes, "scratch": self.scratch}


# ------------------------------------------------------------------ scratch


def scratch_root() -> Path:
    """Where studies make their DBs and files: $RXLAB_SCRATCH, else <temp dir>/rxlab-scratch."""
    env = os.environ.get(SCRATCH_ENV)
    return Path(env) if env else Path(tempfile.gettempdir()) / "rxlab-scratch"


def make_scratch(name: str, sid: str) -> Path:
    """A new scratch folder <root>/<name>-<sid>-<pid> with its owner inside (written before it appears)."""
    root = scratch_root()
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"{name}-{sid}-{os.getpid()}"
    tmp = Path(tempfile.mkdtemp(prefix=f".new-{final.name}-", dir=root))
    (tmp / OWNER_FILE).write_text(json.dumps(owner()) + "\n")
    os.replace(tmp, final)
    return final


def _size(p: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(p):
        for f in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def _remove(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def unowned_temp(prefixes: Iterable[str]) -> list[tuple[Path, int]]:
    """Folders in the temp dir named with one of `prefixes` (where studies made their scratch before it had
    owners): each path and its bytes. Nobody can tell whether a process still uses one; rxlab leaves them."""
    tmp = Path(tempfile.gettempdir())
    found = {d for p in set(prefixes) for d in tmp.glob(f"{p}*") if d.is_dir() and not d.is_symlink()}
    return [(d, _size(d)) for d in sorted(found)]


def clean_scratch(store_root: str | os.PathLike | None = None) -> list[tuple[Path, int]]:
    """Remove the scratch folders whose owner is gone; returns each removed path and its bytes.

    Under the scratch root: a folder whose owner file names a process that is
    gone (one that names another host, or no owner file, is left alone). In
    `store_root`'s manifests: the scratch paths (in a study's own db_dir) that
    an interrupted execution recorded and did not remove.
    """
    removed = []
    root = scratch_root()
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if not d.is_dir() or d.name.startswith("."):
            continue
        try:
            who = json.loads((d / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(who) is False:
            size = _size(d)
            _remove(d)
            removed.append((d, size))
    if store_root is not None:
        for m in read_manifests(store_root):
            if not m.get("scratch") or owner_alive(m.get("owner")) is not False:
                continue
            for s in m["scratch"]:
                p = Path(s)
                # only what the study made: <name>-<study id>, never a folder a user named
                if p.name.endswith(f"-{m['id']}") and (p.exists() or p.is_symlink()):
                    size = _size(p) if p.is_dir() else p.lstat().st_size
                    _remove(p)
                    removed.append((p, size))
    return removed
