"""Pooled score ratio for score pairs (the Vicuna evaluation, Chiang et al. 2023, and LLaVA-Bench's
``summarize_gpt_review.py``): a judge scores both responses in one call (1-10); a system's quality is
reported as its total score relative to the reference's, e.g. "92% of ChatGPT".

``ratio`` = sum of the scores of ``side`` / sum of the scores of the other response, over the
judgments where both scores were read (LLaVA's summary skips a review whose scores could not be parsed,
FastChat's ``[-1, -1]``); equal numbers of judgments on both sides make it mean / mean.  With
``side="B"`` (default) response_b is the evaluated system and response_a the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...core.policy import DEFAULT_POLICY, FigurePolicy
from ..reliability import DEFAULT_BY, unit_table
from ._pairs import UNPARSED_DROPPED, ratio_frame
from .preferences import SIDES

__all__ = ["score_ratio"]


def score_ratio(judgments: pd.DataFrame, *, side: str = "B", policy: FigurePolicy = DEFAULT_POLICY, by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Pooled score ratio of ``side`` to the other response per cell (module docstring).

    ``judgments`` needs numeric columns ``score_a`` and ``score_b`` (canonical: the scores of
    response_a and response_b, NaN where unread) beside the usual ones.  No label and no verdict are
    read.  Unparsed: a judgment without both scores is dropped (``n_left_out`` counts them); ``n`` is the
    number of scored judgments.  Interval: percentile bootstrap over pairs (all of a pair's judgments
    move together).  A negative score is refused (it is FastChat's parse-failure marker, not a score).
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    missing = [c for c in ("score_a", "score_b") if c not in judgments.columns]
    if missing:
        raise ValueError(f"score_ratio: judgments frame lacks column(s) {missing}")
    cells, u = unit_table(judgments, policy=UNPARSED_DROPPED, by=by)
    sa = pd.to_numeric(judgments["score_a"], errors="coerce").to_numpy(dtype=float)
    sb = pd.to_numeric(judgments["score_b"], errors="coerce").to_numpy(dtype=float)
    scored = np.isfinite(sa) & np.isfinite(sb)
    bad = scored & ((sa < 0) | (sb < 0))
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(f"score_ratio: row {pos} has scores ({float(sa[pos])!r}, {float(sb[pos])!r}); expected scores >= 0 "
                         "(an unread score is NaN)")
    own, ref = (sb, sa) if side == "B" else (sa, sb)
    n_pairs = len(u["pair_cell"])
    rp = u["row_pair"][scored]
    num = np.bincount(rp, weights=own[scored], minlength=n_pairs)
    den = np.bincount(rp, weights=ref[scored], minlength=n_pairs)
    G = len(cells)
    n = np.bincount(u["row_cell"][scored], minlength=G)
    left = np.bincount(u["row_cell"][~scored], minlength=G)
    other = "A" if side == "B" else "B"
    return ratio_frame(cells, u["pair_cell"], num, den, n, left, policy=policy, variant=f"{side} / {other}")
