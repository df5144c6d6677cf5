"""RocksDB's source: Debian's verified upstream tarballs (a private apt) and rxlab's patches."""
from __future__ import annotations

import re
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

from rxlab.core.builds.cache import PATCH_DIR, BuildError, cache_root
from rxlab.core.builds.commands import run_logged

# Debian revision of each upstream version known to be in the source indexes.
# Others are discovered with apt-cache showsrc.
KNOWN_REVISIONS = {"7.8.3": "7.8.3-2", "9.10.0": "9.10.0-1", "9.11.2": "9.11.2-1"}
SUITES = ("bookworm", "trixie", "sid")
MIRROR = "http://deb.debian.org/debian"


def _apt_opts(aptdir: Path) -> list[str]:
    return [
        "-o", f"Dir::Etc::SourceList={aptdir / 'sources.list'}",
        "-o", "Dir::Etc::SourceParts=/dev/null",
        "-o", f"Dir::State::Lists={aptdir / 'lists'}",
        "-o", f"Dir::Cache={aptdir / 'cache'}",
        "-o", "APT::Get::List-Cleanup=0",
    ]


def _private_apt() -> tuple[Path, list[str]]:
    aptdir = cache_root() / "apt"
    (aptdir / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (aptdir / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    src = aptdir / "sources.list"
    text = "".join(f"deb-src {MIRROR} {s} main\n" for s in SUITES)
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    opts = _apt_opts(aptdir)
    stamp = aptdir / "updated"
    if not stamp.exists() or time.time() - stamp.stat().st_mtime > 7 * 86400:
        run_logged(["apt-get", *opts, "-q", "update"], "apt-get update (private source lists)")
        stamp.touch()
    return aptdir, opts


def available_versions() -> dict[str, str]:
    """Upstream version -> Debian revision, from the private source indexes."""
    _, opts = _private_apt()
    out = subprocess.run(["apt-cache", *opts, "showsrc", "rocksdb"],
                         capture_output=True, text=True, check=False).stdout
    found = {}
    for m in re.finditer(r"^Version: (\S+)$", out, re.M):
        rev = m.group(1)
        found[rev.split("-")[0].split(":")[-1]] = rev
    return found


def fetch_source(version: str) -> Path:
    """The verified upstream tarball for `version`, downloaded by apt."""
    srcdir = cache_root() / "src"
    srcdir.mkdir(parents=True, exist_ok=True)
    tars = sorted(srcdir.glob(f"rocksdb_{version}.orig.tar.*"))
    if tars:
        return tars[0]
    rev = KNOWN_REVISIONS.get(version) or available_versions().get(version)
    if rev is None:
        have = ", ".join(sorted(available_versions())) or "none"
        raise BuildError(f"RocksDB {version} is not in Debian's source indexes: available {have}")
    _, opts = _private_apt()
    # --tar-only: the .dsc of trixie and sid is not served here; apt still
    # verifies the tarball against the signed index's checksums.
    run_logged(["apt-get", *opts, "source", "--download-only", "--tar-only", f"rocksdb={rev}"],
         f"apt-get source rocksdb={rev}", cwd=srcdir)
    tars = sorted(srcdir.glob(f"rocksdb_{version}.orig.tar.*"))
    if not tars:
        raise BuildError(f"apt-get source rocksdb={rev} left no tarball in {srcdir}")
    return tars[0]


def apply_patches(srcdir: Path, version: str, log: Path) -> list[str]:
    """The smallest patches kept in ext/rocksdb-patches/<version>/, in name order."""
    applied = []
    for p in patches_for(version):
        run_logged(["patch", "-p1", "--forward", "-i", str(p)], f"patch {p.name}", cwd=srcdir, log=log)
        applied.append({"patch": p.name, "reason": patch_reason(p)})
    return applied


def patches_for(version: str) -> list[Path]:
    pdir = PATCH_DIR / version
    return sorted(pdir.glob("*.patch")) if pdir.is_dir() else []


def patch_reason(p: Path) -> str:
    """The first non-empty line of a patch's header (before the first ---)."""
    for line in p.read_text(errors="replace").splitlines():
        if line.startswith(("---", "diff ")):
            break
        if line.strip():
            return line.strip().removeprefix("Subject:").strip()
    return ""


def unpack_source(version: str, work: Path) -> tuple[Path, Path, list]:
    """A fresh build tree: `work` emptied, the verified source tarball unpacked in it and rxlab's
    patches applied (logged to work/build.log). Returns (tarball, source dir, patches applied)."""
    tarball = fetch_source(version)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    with tarfile.open(tarball) as tf:
        top = tf.getnames()[0].split("/")[0]
        tf.extractall(work, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(work)
    src = work / top
    return tarball, src, apply_patches(src, version, work / "build.log")
