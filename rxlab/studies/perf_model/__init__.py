"""Notebook 20: the first seed's performance model and a fitted one, against this machine's runs.

The seed predicts a client's block reads per second from RocksDB's CPU,
libc+kernel CPU and the device's latency (fio's) and finds it 8-10% too
optimistic. This study fits rxlab.core.model on the IO-efficiency study of
notebook 10 (and a delay study with an emulated slower device), tests it on
rows it was not fitted on, and measures two properties of the machine that
decide how one client extrapolates to more: where the clients run against
the disk's interrupt (placement.py) and how the disk answers under the
vCPUs' load (device_load.py).

params.py (Params), study.py (plan, one part, the frame, load), result.py
(the parts and the analyses, each computed once), analysis.py (the model
against the runs), tables.py, figures.py, findings.py.
"""
from rxlab.studies.perf_model.params import Params
from rxlab.studies.perf_model.result import PerfModelResult
from rxlab.studies.perf_model.study import PerfModelStudy

STUDY = PerfModelStudy()

__all__ = ["STUDY", "Params", "PerfModelResult", "PerfModelStudy"]
