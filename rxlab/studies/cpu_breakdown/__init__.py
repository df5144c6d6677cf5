"""Where RocksDB's CPU goes in an IO-bound point query: the gcc/clang post's flamegraph table, measured here.

params.py (Params over the IO-efficiency study's DB and scales), rules.py
(the symbol rules that put a sample in a part of the call stack), study.py
(the plan: the steps of one stored run; the tidy frame), recording.py (the
open run, perf around each profiled step), result.py, tables.py,
figures.py, findings.py.
"""
from rxlab.studies.cpu_breakdown.result import CpuResult
from rxlab.studies.cpu_breakdown.study import CpuBreakdownStudy, steps

STUDY = CpuBreakdownStudy()

__all__ = ["STUDY", "CpuBreakdownStudy", "CpuResult", "steps"]
