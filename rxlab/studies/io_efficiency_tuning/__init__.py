"""What raises RocksDB's io.eff on this machine: the first seed's point-query test under a ladder of
configurations, each rung one change, against fio's sync engine at queue depth 1.

configs.py (the ladder and the side configurations), params.py (Params, scale
presets), study.py (plan, one run, the tidy frame), tables.py (io.eff per
configuration, the model's accounting per rung, held-out predictions),
figures.py (a table and a drawing per figure), findings.py.
"""
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS, LADDER, SIDE, Config
from rxlab.studies.io_efficiency_tuning.result import TuningResult
from rxlab.studies.io_efficiency_tuning.study import IoEffTuningStudy

STUDY = IoEffTuningStudy()

__all__ = ["CONFIGS", "LADDER", "SIDE", "STUDY", "Config", "IoEffTuningStudy", "TuningResult"]
