"""G-Eval analyses: calls whose stated winner contradicts their own 1-5 scores.

The ``geval`` protocol (:mod:`verdictlab.protocols.geval`) records in each row's ``scores`` whether the
named winner contradicts the scores (``contradiction``) and, with log-probabilities, the
probability-weighted scores (``wscore_shown_first``).  This module reads them; the counts per cell and
step are :func:`verdictlab.stats.geval.contradiction_rates`.
"""

from __future__ import annotations

import json

import pandas as pd

from ..stats import with_cell_columns
from ..stats.geval import CONTRADICTION_COLUMNS, contradiction_rates
from ..vocab import CELL_KEY
from . import AnalysisInput, register

_KEYS = [*CELL_KEY, "step"]


def contradiction_table(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per cell and step: rows with G-Eval scores, how many name a winner that contradicts their own
    scores, and how many carry probability-weighted scores."""
    if judgments.empty:
        return pd.DataFrame(columns=[*_KEYS, *CONTRADICTION_COLUMNS])
    parsed = [json.loads(s) if isinstance(s, str) and s else (s if isinstance(s, dict) else {})
              for s in judgments["scores"]]
    has = [("contradiction" in p) for p in parsed]
    rows = with_cell_columns(judgments).loc[has, list(CELL_KEY)].assign(
        step=judgments.loc[has, "step"].fillna("").astype(str),
        contradiction=[bool(p.get("contradiction")) for p, h in zip(parsed, has, strict=True) if h],
        weighted=[("wscore_shown_first" in p) for p, h in zip(parsed, has, strict=True) if h])
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
