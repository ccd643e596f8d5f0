"""G-Eval analyses: calls whose stated winner contradicts their own 1-5 scores.

The ``geval`` protocol (:mod:`verdictlab.protocols.geval`) records in each row's ``scores`` whether the
named winner contradicts the scores (``contradiction``) and, with log-probabilities, the
probability-weighted scores (``wscore_shown_first``).  This module reads them; the counts per cell and
step are :func:`verdictlab.stats.geval.contradiction_rates`.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..core.vocab import CELL_KEY
from ..stats import with_cell_columns
from ..stats.geval import CONTRADICTION_COLUMNS, contradiction_rates
from . import AnalysisInput, register

_KEYS = [*CELL_KEY, "step"]


def _parsed(scores: object) -> dict[str, object]:
    if isinstance(scores, dict):
        return scores
    return json.loads(scores) if isinstance(scores, str) and scores else {}


def score_flags(scores: pd.Series) -> np.ndarray:
    """Per row: (has G-Eval scores, names a winner that contradicts them, carries probability-weighted
    scores), a boolean array of shape (rows, 3); each distinct ``scores`` text is parsed once (a run
    without G-Eval rows, all NULL, costs one factorize)."""
    try:
        codes, uniques = pd.factorize(scores, use_na_sentinel=True)
        parsed = [_parsed(u) for u in uniques]
    except TypeError:                  # dict values (unhashable): parsed row by row
        codes, parsed = np.arange(len(scores)), [_parsed(u) for u in scores]
    flags = np.array([("contradiction" in d, bool(d.get("contradiction")), "wscore_shown_first" in d)
                      for d in parsed] + [(False, False, False)], dtype=bool)
    return flags[codes]           # code -1 (NULL) takes the last row: no scores


def contradiction_table(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per cell and step: rows with G-Eval scores, how many name a winner that contradicts their own
    scores, and how many carry probability-weighted scores."""
    if judgments.empty:
        return pd.DataFrame(columns=[*_KEYS, *CONTRADICTION_COLUMNS])
    flags = score_flags(judgments["scores"])
    has = flags[:, 0]
    rows = with_cell_columns(judgments).loc[has, list(CELL_KEY)].assign(
        step=judgments.loc[has, "step"].fillna("").astype(str), contradiction=flags[has, 1], weighted=flags[has, 2])
    return contradiction_rates(rows, by=_KEYS)


@register("geval", order=40, title="G-Eval contradictions",
          description="Calls whose stated winner contradicts their own 1–5 scores.")
def geval_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`contradiction_table` over the run's pairwise rows.  A contradiction is a property of a
    parsed output, so the count does not depend on the unparsed policy (unparsed rows carry no scores)."""
    if inp.pairs.empty:
        return None
    t = contradiction_table(inp.pairs)
    return t if len(t) else None
