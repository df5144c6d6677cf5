"""rxlab: a research workbench for RocksDB IO performance.

The compiled core (`rxlab._core`) opens RocksDB on rxlab's IO backends; the
Python modules around it run, store, model and plot measurements.
"""
import os as _os

# numpy/scipy's OpenBLAS starts a worker per core that spins after use; on
# a small machine those threads steal time from the threads being measured
# and inflate the process CPU per operation. rxlab needs no parallel BLAS.
for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_v, "1")

# RXLAB_BUILD=<key>: that RocksDB build's compiled module instead of the installed one (rxlab.core.builds).
from rxlab.core.builds import select_core as _select_core  # noqa: E402

_select_core()

from rxlab._core import DB, Iterator, RocksDBError, engines, parse_uri, rocksdb_version  # noqa: E402
from rxlab._moved import install as _install_moved  # noqa: E402

_install_moved()  # rxlab 0.1's module paths (rxlab.studies.io_efficiency, rxlab.bench.references, ...), with a DeprecationWarning

__version__ = "0.1.0"

__all__ = ["DB", "Iterator", "RocksDBError", "__version__", "engines", "explore", "open", "parse_uri",
           "rocksdb_version"]


def open(path, backend="posix", options="", statistics=False, read_only=False):  # noqa: A001
    """Open (creating if missing) a RocksDB database at `path` on `backend`.

    backend: "default" (RocksDB's own file system), "default?io_uring=1", or
    an rxlab engine URI such as "posix", "io_uring?registered_files=1".
    options: RocksDB's option string, e.g.
    "use_direct_reads=true;block_based_table_factory={block_size=8192}".
    read_only: open an existing DB without its lock (RocksDB's OpenForReadOnly, db_bench's
    --readonly), so other processes can read it at the same time; writes raise RocksDBError.
    """
    return DB(str(path), backend, options, statistics, read_only)


def explore(root=None, **kw):
    """The run explorer over the results store, for a JupyterLab notebook (rxlab.runs.explore.Explorer).

    root: the store (None: $RXLAB_RUNS, else data/runs). Keywords: x, y, hue (the plot's columns),
    figures_dir (where its save button writes; None: $RXLAB_FIGURES, else figures/).
    """
    # Imported by name when called: the package imports none of its layers (each of them imports
    # rxlab._core through it, so an import statement here would close a cycle), and `import rxlab` stays
    # light (pandas, seaborn and ipywidgets load only when the explorer is asked for).
    import importlib  # noqa: PLC0415 - see above: no layer is imported at the top

    return importlib.import_module("rxlab.runs.explore").Explorer(root, **kw)
