"""G-Eval self-contradictions: how often a call's stated winner contradicts its own 1-5 scores.

Input: one row per G-Eval call with the key columns and two booleans read from the stored scores,
``contradiction`` (the named winner contradicts the scores) and ``weighted`` (probability-weighted
scores were available).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from ._frame import safe_div

__all__ = ["CONTRADICTION_COLUMNS", "contradiction_rates"]

#: the columns of :func:`contradiction_rates` after the key columns
CONTRADICTION_COLUMNS: tuple[str, ...] = ("n_scored", "n_contradictions", "contradiction_rate", "n_weighted")


def contradiction_rates(calls: pd.DataFrame, *, by: Sequence[str]) -> pd.DataFrame:
    """Per ``by`` group: calls with G-Eval scores (``n_scored``), how many contradict their own
    scores, the rate, and how many carry probability-weighted scores."""
    keys = list(by)
    if calls.empty:
        return pd.DataFrame(columns=[*keys, *CONTRADICTION_COLUMNS])
    out = calls.groupby(keys, dropna=False).agg(n_scored=("contradiction", "size"),
                                                n_contradictions=("contradiction", "sum"),
                                                n_weighted=("weighted", "sum")).reset_index()
    out["contradiction_rate"] = safe_div(out["n_contradictions"].to_numpy(), out["n_scored"].to_numpy())
    return out[[*keys, *CONTRADICTION_COLUMNS]]
