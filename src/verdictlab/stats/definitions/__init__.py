"""Figures as the papers define them: one pure function per published definition of "agreement",
"accuracy", "consistency" or "win rate", each stating its source and its rules for ties, flips,
unparsed outputs and the denominator.  They sit beside verdictlab's own figures (C, phi, A, T of
:func:`verdictlab.stats.reliability`; the three-class accuracy and macro-F1 of
:func:`verdictlab.stats.class_figures`), which the catalogue of :mod:`verdictlab.analyses.definitions`
lists with them.

Every function returns one row per cell (two for :func:`accuracy_per_order`) with the cell keys and
:data:`DEFINITION_COLUMNS`.
"""

from ._pairs import DEFINITION_COLUMNS, OrderPairs, order_pairs
from .own import CLASS_FIGURES, RELIABILITY_FIGURES, class_figure, reliability_figure
from .preferences import win_rate
from .scores import score_ratio
from .verdicts import (
    accuracy_mean_of_orders,
    accuracy_per_order,
    agreement_both_orders,
    consistency_both_orders,
    pair_verdict_agreement,
    positional_agreement,
    vote_accuracy,
)

__all__ = [
    "CLASS_FIGURES",
    "DEFINITION_COLUMNS",
    "RELIABILITY_FIGURES",
    "OrderPairs",
    "accuracy_mean_of_orders",
    "accuracy_per_order",
    "agreement_both_orders",
    "class_figure",
    "consistency_both_orders",
    "order_pairs",
    "pair_verdict_agreement",
    "positional_agreement",
    "reliability_figure",
    "score_ratio",
    "vote_accuracy",
    "win_rate",
]
