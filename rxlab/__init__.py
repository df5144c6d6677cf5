"""rxlab: a research workbench for RocksDB IO performance.

The compiled core (`rxlab._core`) opens RocksDB on rxlab's IO backends; the
Python modules around it run, store, model and plot measurements.
"""
import importlib as _importlib
import os as _os
import sys as _sys

# numpy/scipy's OpenBLAS starts a worker per core that spins after use; on
# a small machine those threads steal time from the threads being measured
# and inflate the process CPU per operation. rxlab needs no parallel BLAS.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_v, "1")

# The compiled module loads on first use (module-level __getattr__ below), so that rxlab.core and
# rxlab.bench import without it (a machine with no build yet, a docs build, a notebook that only plots).
_CORE_NAMES = frozenset({"DB", "Iterator", "RocksDBError", "engines", "parse_uri", "rocksdb_version"})

__version__ = "0.1.0"

__all__ = ["DB", "Iterator", "RocksDBError", "__version__", "engines", "explore", "open", "parse_uri",
           "rocksdb_version"]


def open(path, backend="posix", options="", statistics=False, read_only=False):
    """Open (creating if missing) a RocksDB database at `path` on `backend`.

    backend: "default" (RocksDB's own file system), "default?io_uring=1", or
    an rxlab engine URI such as "posix", "io_uring?registered_files=1".
    options: RocksDB's option string, e.g.
    "use_direct_reads=true;block_based_table_factory={block_size=8192}".
    read_only: open an existing DB without its lock (RocksDB's OpenForReadOnly, db_bench's
    --readonly), so other processes can read it at the same time; writes raise RocksDBError.
    """
    return _load_core().DB(str(path), backend, options, statistics, read_only)


def explore(root=None, **kw):
    """The run explorer over the results store, for a JupyterLab notebook (rxlab.runs.explore.Explorer).

    root: the store (None: $RXLAB_RUNS, else data/runs). Keywords: x, y, hue (the plot's columns),
    figures_dir (where its save button writes; None: $RXLAB_FIGURES, else figures/).
    """
    # Imported by name when called: the package imports none of its layers (each of them may ask for
    # rxlab._core through it, so an import statement here would close a cycle), and `import rxlab` stays
    # light (pandas, seaborn and ipywidgets load only when the explorer is asked for).
    return _importlib.import_module("rxlab.runs.explore").Explorer(root, **kw)


def _load_core():
    """rxlab._core, loaded once: $RXLAB_BUILD's module (rxlab.core.builds) if set, else the installed one."""
    core = _sys.modules.get("rxlab._core")
    if core is None:  # by name, as in explore(): no layer is imported by the package itself
        _importlib.import_module("rxlab.core.builds").select_core()
        core = _importlib.import_module("rxlab._core")
    return core


def __getattr__(name):
    """rxlab._core and its public names, loaded when first asked for (rxlab.DB, `from rxlab import _core`)."""
    if name == "_core":
        return _load_core()
    if name in _CORE_NAMES:
        return getattr(_load_core(), name)
    raise AttributeError(f"module 'rxlab' has no attribute {name!r}")
