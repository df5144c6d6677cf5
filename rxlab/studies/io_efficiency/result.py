"""An IO-efficiency study's result: the method's (rxlab.bench.ioeff.result), which the studies that build
on the seed's runs read too."""
from __future__ import annotations

from rxlab.bench.ioeff.result import KEYS, IoEfficiencyResult

__all__ = ["KEYS", "IoEfficiencyResult"]
