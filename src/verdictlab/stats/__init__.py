"""Statistics over judgments: pure functions, arrays/DataFrames in, numbers/frozen dataclasses out.

See DESIGN.md "Reliability figures" for the normative definitions."""

from .intervals import Interval, bootstrap_interval, wilson_interval
from .reliability import RELIABILITY_COLUMNS, accuracy_ceiling, reliability, trust_rate

__all__ = [
    "Interval",
    "RELIABILITY_COLUMNS",
    "accuracy_ceiling",
    "bootstrap_interval",
    "reliability",
    "trust_rate",
    "wilson_interval",
]
