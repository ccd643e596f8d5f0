"""G-Eval analyses: calls whose stated winner contradicts their own 1-5 scores.

The ``geval`` protocol (:mod:`verdictlab.protocols.geval`) records in each row's ``scores`` whether the
named winner contradicts the scores (``contradiction``) and, with log-probabilities, the
probability-weighted scores (``wscore_shown_first``).  This module counts them per cell.
"""

from __future__ import annotations

import json

import pandas as pd

from . import AnalysisInput, register


def contradiction_table(judgments: pd.DataFrame) -> pd.DataFrame:
    """Per (judge, dataset, protocol, temperature, step): rows with G-Eval scores, how many name a
    winner that contradicts their own scores, and how many carry probability-weighted scores."""
    keys = ["judge", "dataset", "protocol", "temperature", "step"]
    cols = [*keys, "n_scored", "n_contradictions", "contradiction_rate", "n_weighted"]
    if judgments.empty:
        return pd.DataFrame(columns=cols)
    parsed = [json.loads(s) if isinstance(s, str) and s else (s if isinstance(s, dict) else {})
              for s in judgments["scores"]]
    has = [("contradiction" in p) for p in parsed]
    if not any(has):
        return pd.DataFrame(columns=cols)
    df = judgments.loc[has, keys].copy()
    df["step"] = df["step"].fillna("")
    sub = [p for p, h in zip(parsed, has, strict=True) if h]
    df["_c"] = [bool(p.get("contradiction")) for p in sub]
    df["_w"] = [("wscore_shown_first" in p) for p in sub]
    out = df.groupby(keys, dropna=False).agg(n_scored=("_c", "size"), n_contradictions=("_c", "sum"),
                                             n_weighted=("_w", "sum")).reset_index()
    out["contradiction_rate"] = out["n_contradictions"] / out["n_scored"]
    return out[cols]


@register("geval", order=40, title="G-Eval contradictions",
          description="Calls whose stated winner contradicts their own 1–5 scores.")
def geval_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`contradiction_table` over the run's pairwise rows.  A contradiction is a property of a
    parsed output, so the count does not depend on the unparsed policy (unparsed rows carry no scores)."""
    if inp.pairs.empty:
        return None
    return contradiction_table(inp.pairs)
