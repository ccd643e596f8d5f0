"""Juries moved to :mod:`verdictlab.analyses.juries` (the analyses room); this module re-exports them
so existing imports keep working."""

from .analyses.juries import (
    JURY_COLUMNS,
    TIE_RULES,
    JuryRow,
    default_quorum,
    heterogeneous_jury_table,
    homogeneous_jury_table,
    jury_table,
    majority_vote,
    vote_counts,
)

__all__ = ["JURY_COLUMNS", "TIE_RULES", "JuryRow", "default_quorum", "heterogeneous_jury_table",
           "homogeneous_jury_table", "jury_table", "majority_vote", "vote_counts"]
