"""One plain sentence per cell saying what its reliability figures mean.

The rules and thresholds live in :mod:`verdictlab.stats.readings` (one place, beside the failure
regions they use); this module re-exports them for the report and existing imports.
"""

from ..stats.readings import (
    CHANCE_MARGIN,
    DETERMINISTIC_C,
    MIN_PARSED_SHARE,
    NOISY_C,
    NOTE_UNPARSED,
    ORDER_DRIVEN_PHI,
    SOME_FLIPS_PHI,
    TRUSTWORTHY_T,
    cell_region,
    cell_sentence,
    n_phrase,
    protocol_sentences,
    top_parse_failures,
)

__all__ = ["CHANCE_MARGIN", "DETERMINISTIC_C", "MIN_PARSED_SHARE", "NOISY_C", "NOTE_UNPARSED", "ORDER_DRIVEN_PHI",
           "SOME_FLIPS_PHI", "TRUSTWORTHY_T", "cell_region", "cell_sentence", "n_phrase", "protocol_sentences",
           "top_parse_failures"]
