"""Start here (notebook 00): a DB on one backend, the load and one read workload, stored and read back.

params.py (Params, scale presets, the workloads), study.py (plan, one run,
the tidy frame), tables.py (the engines, a run's steps, its latency
histogram), plots.py (the latency histogram drawn), tryit.py (the notebook's
"try it" panel: engine, options, threads and workload from widgets).
"""

from rxlab.studies.quickstart.params import SCALE_KEYS, WORKLOADS, Params
from rxlab.studies.quickstart.plots import latency_figure
from rxlab.studies.quickstart.study import STUDY, QuickstartStudy
from rxlab.studies.quickstart.tables import engines_table, histogram, look
from rxlab.studies.quickstart.tryit import try_it

__all__ = [
    "SCALE_KEYS",
    "STUDY",
    "WORKLOADS",
    "Params",
    "QuickstartStudy",
    "engines_table",
    "histogram",
    "latency_figure",
    "look",
    "try_it",
]
