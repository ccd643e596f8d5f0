"""Cell columns ``C_expected``, ``phi_expected``, ``A_expected``, ``T_expected`` (with ``_lo``/``_hi``)
from :func:`verdictlab.stats.expected.expected_reliability`: the sampling-free figures of the
R-repetition design, computed from the judge's verdict probabilities (the ``p_a`` column) where the
judge gives them (label-only protocols on judges with log-probabilities).

One row per cell on the full cell key: a free cell never gets the figures of the constrained cell of
the same judge and protocol (only the rows of a cell that carry ``p_a`` stand behind its figures).
R is the cell's own repetition count unless the report asks for another (``inp.extra["expected_reps"]``,
``verdictlab report RUN --expected-reps R``); the temperature is the cell's own (greedy at 0)."""

from __future__ import annotations

import pandas as pd

from ..stats.expected import EXPECTED_COLUMNS, expected_by_cell
from . import AnalysisInput, register_cell_columns


@register_cell_columns("expected", columns=EXPECTED_COLUMNS)
def expected(inp: AnalysisInput) -> pd.DataFrame | None:
    out = expected_by_cell(inp.pairs, repetitions=inp.extra.get("expected_reps"), confidence=inp.confidence,
                           n_bootstrap=inp.n_bootstrap, seed=inp.seed)
    return out if len(out) else None
