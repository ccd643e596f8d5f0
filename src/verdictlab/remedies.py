"""Remedies moved to :mod:`verdictlab.analyses.remedies` (the analyses room); this module re-exports
them so existing imports keep working."""

from .analyses import extra_tables
from .analyses.remedies import (
    DEFAULT_REMEDIES,
    PAIR_KEY,
    REMEDY_TABLE_COLUMNS,
    UNIT_KEY,
    _empty,
    _finish,
    _prep,
    both_orders,
    calls_per_verdict,
    derive,
    derive_all,
    majority_at_k,
    order_average,
    pointwise_mask,
    remedy_table,
    single_verdict_rows,
)

__all__ = ["DEFAULT_REMEDIES", "PAIR_KEY", "REMEDY_TABLE_COLUMNS", "UNIT_KEY", "_empty", "_finish", "_prep",
           "both_orders", "calls_per_verdict", "derive", "derive_all", "extra_tables", "majority_at_k",
           "order_average", "pointwise_mask", "remedy_table", "single_verdict_rows"]
