"""Cell columns ``C_expected``, ``phi_expected``, ``A_expected``, ``T_expected`` (with ``_lo``/``_hi``)
from :func:`verdictlab.stats.expected.expected_reliability`: the sampling-free figures of the
R-repetition design, computed from the judge's verdict probabilities (the ``p_a`` column) where the
judge gives them (label-only protocols on judges with log-probabilities).

R is the cell's own repetition count unless the report asks for another (``inp.extra["expected_reps"]``,
``verdictlab report RUN --expected-reps R``); the temperature is the cell's own (greedy at 0)."""

from __future__ import annotations

import pandas as pd

from ..stats.expected import EXPECTED_COLUMNS, expected_reliability
from . import AnalysisInput, register_cell_columns

KEYS: tuple[str, ...] = ("judge", "protocol", "dataset", "temperature")


@register_cell_columns("expected", columns=EXPECTED_COLUMNS)
def expected(inp: AnalysisInput) -> pd.DataFrame | None:
    pairs = inp.pairs
    if pairs.empty or "p_a" not in pairs.columns or not pairs["p_a"].notna().any():
        return None
    asked = inp.extra.get("expected_reps")
    frames = []
    # the run's repetition count of each cell (number of distinct reps), unless asked otherwise
    with_p = pairs[pairs["p_a"].notna()]
    for _key, cell in with_p.groupby(list(KEYS), sort=True, dropna=False):
        reps = int(asked) if asked else max(1, int(cell["rep"].nunique()))
        frames.append(expected_reliability(cell, repetitions=reps, confidence=inp.confidence,
                                           n_bootstrap=inp.n_bootstrap, seed=inp.seed))
    return pd.concat(frames, ignore_index=True) if frames else None
