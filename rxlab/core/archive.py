"""A study's runs in one file, and that file loaded into another results store.

`archive_study` packs every run of a study (their run.json and Parquet
tables, as stored) and the study's manifest into one .tar.gz with an
ARCHIVE.json that lists them; `import_archive` unpacks it into another store
through a temporary directory and renames each run into place, so a reader of
that store sees a run whole or not at all. A run id that is already there is
left as it is and reported (the same id is the same run). Nothing outside the
store is written: members with absolute paths or `..` are refused.
"""
from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

import pandas as pd

from rxlab.core import store
from rxlab.core.study import MANIFESTS, manifest
from rxlab.core.sysinfo import rxlab_version

__all__ = ["ARCHIVE_FORMAT", "archive_study", "import_archive", "study_runs"]

ARCHIVE_FORMAT = 1
INDEX = "ARCHIVE.json"


# What reading a cut or damaged .tar.gz raises: a stream cut short (EOFError), a bad tar header
# (tarfile.ReadError: bad checksum), damaged compressed data (zlib.error, gzip's BadGzipFile: an OSError).
_DAMAGED = (EOFError, tarfile.TarError, zlib.error, gzip.BadGzipFile)


def _why(e: BaseException) -> str:
    text = (str(e).strip().splitlines() or [""])[0]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _damaged(path: Path, e: BaseException) -> str:
    cut = isinstance(e, EOFError)
    return (f"{path}: {'truncated' if cut else 'damaged'} archive ({_why(e)}); nothing was imported "
            f"(copy it again, or pack it again with `rxlab archive`)")


def _ends_cleanly(tar: tarfile.TarFile) -> bool:
    """Is what follows the last member tarfile listed the end-of-archive zeros? (tarfile stops listing,
    silently, at a bad header after the first one: the members after it would be left out unsaid.)"""
    tar.fileobj.seek(tar.offset)
    while chunk := tar.fileobj.read(1 << 20):
        if chunk.strip(b"\0"):
            return False
    return True


def study_runs(study_id: str, root: str | os.PathLike | None = None) -> list[str]:
    """The run ids of a study: from its manifest, else every complete run whose name carries its id."""
    root = Path(root) if root is not None else store.default_root()
    m = manifest(root, study_id)
    if m is not None:
        return [r for r in m.get("runs", []) if store.is_complete(root / r)]
    runs = store.list_runs(root)
    if runs.empty:
        return []
    named = runs[runs["name"].astype(str).str.contains(str(study_id), regex=False)]
    return named["run_id"].astype(str).tolist()


def archive_study(study_id: str, root: str | os.PathLike | None = None,
                  out: str | os.PathLike | None = None) -> Path:
    """Write <out> (default ./<study_id>.rxlab.tar.gz) holding the study's runs and manifest."""
    root = Path(root) if root is not None else store.default_root()
    runs = study_runs(study_id, root)
    if not runs:
        raise ValueError(f"study {study_id!r}: no complete run of it in {root} (rxlab runs lists the store)")
    out = Path(out) if out is not None else Path.cwd() / f"{study_id}.rxlab.tar.gz"
    if out.exists():
        raise ValueError(f"{out}: exists; archives are never overwritten (choose another name)")
    m = manifest(root, study_id)
    index = {"format": ARCHIVE_FORMAT, "study_id": study_id, "study": (m or {}).get("study"),
             "runs": runs, "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
             "rxlab_version": rxlab_version()}
    tmp = out.with_name(f".{out.name}.part")
    try:
        with tarfile.open(tmp, "w:gz") as tar:
            data = json.dumps(index, indent=1).encode()
            info = tarfile.TarInfo(INDEX)
            info.size, info.mtime = len(data), int(time.time())
            tar.addfile(info, fileobj=io.BytesIO(data))
            for r in runs:
                tar.add(root / r, arcname=f"runs/{r}")
            if m is not None:
                tar.add(root / MANIFESTS / f"{study_id}.json", arcname=f"{MANIFESTS}/{study_id}.json")
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def import_archive(path: str | os.PathLike, root: str | os.PathLike | None = None) -> pd.DataFrame:
    """Load an archive into the store `root`; one row per run: run_id, status (imported | already there)."""
    path = Path(path)
    root = Path(root) if root is not None else store.default_root()
    if not path.is_file():
        raise ValueError(f"{path}: no such archive file")
    try:
        tar = tarfile.open(path, "r:gz")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
        with path.open("rb") as fh:
            gz = fh.read(2) == b"\x1f\x8b"  # gzip's magic: an archive, damaged
        raise ValueError(_damaged(path, e) if gz else f"{path}: not an rxlab archive ({_why(e)})") from None
    root.mkdir(parents=True, exist_ok=True)
    with tar, tempfile.TemporaryDirectory(prefix=".import-", dir=root) as tmpdir:
        try:
            index = json.loads(tar.extractfile(INDEX).read())
        except (KeyError, AttributeError, ValueError):
            raise ValueError(f"{path}: not an rxlab archive (no {INDEX})") from None
        except _DAMAGED as e:
            raise ValueError(_damaged(path, e)) from None
        if index.get("format") != ARCHIVE_FORMAT:
            raise ValueError(f"{path}: archive format {index.get('format')!r}, this rxlab reads {ARCHIVE_FORMAT}")
        try:
            members = tar.getmembers()  # reads the whole archive: a cut or damaged one fails here, not midway
            clean = _ends_cleanly(tar)
        except _DAMAGED as e:
            raise ValueError(_damaged(path, e)) from None
        if not clean:
            raise ValueError(f"{path}: damaged archive (a bad tar header at byte {tar.offset} of its data); "
                             "nothing was imported (copy it again, or pack it again with `rxlab archive`)")
        for member in members:
            name = Path(member.name)
            if name.is_absolute() or ".." in name.parts or member.issym() or member.islnk():
                raise ValueError(f"{path}: refused, member {member.name!r} would land outside the store")
        try:
            tar.extractall(tmpdir, filter="data")
        except _DAMAGED as e:
            raise ValueError(_damaged(path, e)) from None
        # every run whole before any is moved: a damaged archive (a bad header ends tarfile's listing
        # early, silently) imports nothing
        cut = [r for r in index["runs"] if not store.is_complete(Path(tmpdir) / "runs" / r)]
        if cut:
            more = f" (and {len(cut) - 1} more)" if len(cut) > 1 else ""
            raise ValueError(f"{path}: damaged archive: run {cut[0]}{more} is not complete in it; "
                             "nothing was imported")
        rows = []
        for r in index["runs"]:
            src, dst = Path(tmpdir) / "runs" / r, root / r
            if dst.exists():
                rows.append({"run_id": r, "status": "already there"})
                continue
            os.rename(src, dst)
            rows.append({"run_id": r, "status": "imported"})
        man = Path(tmpdir) / MANIFESTS / f"{index['study_id']}.json"
        dest = root / MANIFESTS / man.name
        if man.is_file() and not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(man, dest)
    return pd.DataFrame(rows, columns=["run_id", "status"])
