"""What raises RocksDB's io.eff on this machine: the first seed's point-query test under a ladder of
configurations, each rung one change, against fio's sync engine at queue depth 1.

configs.py (the ladder and the side configurations), params.py (Params, what is
compared in turns, scale presets), study.py (the load, one turn's plan, one
run, the tidy frame), result.py (the read rows against their turn's fio),
tables.py (io.eff per configuration, its ratios to the seed's setting, the
model's accounting per rung, held-out predictions), figures.py (a table and a
drawing per figure), findings.py.
"""
from rxlab.studies.io_efficiency_tuning.configs import CONFIGS, LADDER, SIDE, Config
from rxlab.studies.io_efficiency_tuning.result import TuningResult
from rxlab.studies.io_efficiency_tuning.study import IoEffTuningStudy

STUDY = IoEffTuningStudy()

__all__ = ["CONFIGS", "LADDER", "SIDE", "STUDY", "Config", "IoEffTuningStudy", "TuningResult"]
