"""Release builds of RocksDB from Debian's verified upstream tarballs.

This package uses the standard library only: the set-up runs it with the
system Python (``python3 -m rxlab.core.builds build``) before the virtual
environment exists, and ``rxlab build-rocksdb`` / ``rxlab builds`` reuse it.
One module per job: ``cache`` (keys, records, listing, removal), ``source``
(tarballs and patches), ``commands`` (logged commands), ``compile`` (a
release build), ``module`` (rxlab's module per build), ``selection`` (which
build a process uses), ``__main__`` (the set-up's command line).

A build lives in ``$RXLAB_CACHE/rocksdb/<key>/`` (default cache
``~/.cache/rxlab``) with ``lib/``, ``include/``, ``bin/db_bench`` and
``build.json`` (version, compiler, flags, build time, patches applied). The key
names version, compiler, compiler major version, LTO and any extra compiler
flags (as a short hash), e.g. ``9.10.0-gcc12``, ``9.10.0-clang16-lto``,
``9.10.0-gcc12-f1a2b3c4d``. A finished build is reused, never silently rebuilt
(a different full compiler version is reported, not acted on);
``build.json`` is written last, so a directory without it is an interrupted
build and is redone. ``remove(key)`` deletes a build and its module.

Builds as an experiment variable: a process uses one RocksDB build (every
build's library has the same soname), so each build gets its own compiled
rxlab module and plugin in ``$RXLAB_CACHE/modules/<key>/`` (``build_module``,
the repository's CMakeLists.txt with ``-DRXLAB_ROCKSDB=<build>``), and a
process selects it by setting ``RXLAB_BUILD=<key>`` before it first uses
rxlab's compiled module (``select_core``, called by rxlab/__init__.py when
``rxlab._core`` is first asked for). Without RXLAB_BUILD, rxlab
imports the editable install's module, compiled against the default build.
``active_build()`` is the build the imported module was compiled against, so
a run's fingerprint records the build that really ran.

Old versions that fail to compile with this machine's compilers get the
smallest patch kept in ``ext/rocksdb-patches/<version>/*.patch`` (applied in
name order, recorded in build.json with the first line of each patch's
header as the reason).
"""
from rxlab.core.builds.cache import (
    DEFAULT_VERSION,
    PATCH_DIR,
    REPO,
    TOOLCHAINS,
    BuildError,
    build_dir,
    build_key,
    cache_root,
    compile_build,
    compiler_for,
    flags_id,
    format_builds,
    get_build,
    installed_build,
    is_complete,
    list_builds,
    module_dir,
    module_record,
    modules_root,
    remove,
    toolchain,
)
from rxlab.core.builds.commands import full_version, ninja_with_progress, run_logged
from rxlab.core.builds.compile import CMAKE_FLAGS, TARGETS, build
from rxlab.core.builds.module import build_module, ensure_module, ext_sources_id, module_current
from rxlab.core.builds.selection import BUILD_ENV, active_build, select_core
from rxlab.core.builds.source import (
    apply_patches,
    available_versions,
    fetch_source,
    patch_reason,
    patches_for,
    unpack_source,
)

__all__ = [
    "BUILD_ENV", "CMAKE_FLAGS", "DEFAULT_VERSION", "PATCH_DIR", "REPO", "TARGETS", "TOOLCHAINS", "BuildError",
    "active_build", "apply_patches", "available_versions", "build", "build_dir", "build_key", "build_module",
    "cache_root", "compile_build", "compiler_for", "ensure_module", "ext_sources_id", "fetch_source",
    "flags_id", "format_builds", "full_version", "get_build", "installed_build", "is_complete", "list_builds",
    "module_current", "module_dir", "module_record", "modules_root", "ninja_with_progress", "patch_reason",
    "patches_for", "remove", "run_logged", "select_core", "toolchain", "unpack_source",
]
