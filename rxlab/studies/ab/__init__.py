"""`rxlab ab A B`: two configurations compared in turns with an A/A control (not a seed study: no
notebook, not in the registry; `AB` is run by rxlab.cli.ab)."""
from rxlab.studies.ab.study import (
    AB,
    AbStudy,
    Params,
    comparison_table,
    cpu_column,
    cpu_table,
    device_table,
    sides_table,
)

__all__ = ["AB", "AbStudy", "Params", "comparison_table", "cpu_column", "cpu_table", "device_table",
           "sides_table"]
