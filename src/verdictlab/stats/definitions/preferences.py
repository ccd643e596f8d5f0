"""Win rates from soft preferences (AlpacaEval, Dubois et al. 2023; ``alpaca_eval.metrics``).

AlpacaEval encodes a preference as a number in [1, 2] (1: the reference ``output_1`` wins, 2: the
evaluated ``output_2`` wins, 1.5 a draw) and reports, over the annotated instructions,

* ``win_rate`` = mean(preference - 1) x 100 with ``standard_error`` = sem(preference - 1) x 100
  (pandas' ``sem``: sample standard deviation, ddof = 1, over sqrt(n)) -- the *soft* win rate when the
  preference is a probability from the annotator's token log-probabilities;
* ``discrete_win_rate``: each preference rounded to a win (1), a loss (0) or, at exactly 1.5, a draw
  (1/2), then averaged: (wins + draws / 2) / n x 100.

Preferences that are not numbers (an unreadable annotation) are dropped (``n_not_pair``).

verdictlab stores a soft preference as ``p_a`` = P(canonical A wins) beside its verdict.  With
``side="B"`` (default) response_b plays AlpacaEval's evaluated output and response_a the reference:
the preference of a judgment is ``1 - p_a``.  Figures are proportions in [0, 1] (AlpacaEval prints x 100).
A pair judged more than once (both orders, repetitions) is one preference: the mean of its
judgments' (AlpacaEval annotates each instruction once, in a random order); the mean and its standard
error are over pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...core.policy import DEFAULT_POLICY, FigurePolicy
from ..reliability import DEFAULT_BY, unit_table
from ._pairs import UNPARSED_DROPPED, ratio_frame, standard_error

__all__ = ["SIDES", "win_rate"]

SIDES: tuple[str, ...] = ("A", "B")


def _row_preferences(judgments: pd.DataFrame, *, discrete: bool, side: str) -> np.ndarray:
    """Per row: the preference for ``side`` in [0, 1], NaN where the row has none."""
    p_a = pd.to_numeric(judgments["p_a"], errors="coerce").to_numpy(dtype=float) if "p_a" in judgments \
        else np.full(len(judgments), np.nan)
    bad = np.isfinite(p_a) & ((p_a < 0) | (p_a > 1))
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(f"win_rate: row {pos} has p_a {float(p_a[pos])!r}; expected a probability in [0, 1]")
    soft = p_a if side == "A" else 1.0 - p_a
    if not discrete:
        return soft
    rounded = np.where(soft > 0.5, 1.0, np.where(soft < 0.5, 0.0, 0.5))
    v = judgments["verdict"].astype(object).to_numpy()
    from_verdict = np.where(v == side, 1.0, np.where(v == "tie", 0.5, np.where(pd.isna(v), np.nan, 0.0)))
    return np.where(np.isfinite(soft), rounded, from_verdict)


def win_rate(judgments: pd.DataFrame, *, discrete: bool = False, side: str = "B", policy: FigurePolicy = DEFAULT_POLICY, by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """AlpacaEval's win rate of ``side`` per cell (module docstring), one row per cell, ``variant``
    ``"<side> over <other>"``.

    * ``discrete=False``: the soft win rate, from ``p_a``; judgments without ``p_a`` are dropped.
    * ``discrete=True``: each judgment's preference rounded (``p_a`` where present: win if the side's
      probability is above 1/2, draw at exactly 1/2); a judgment without ``p_a`` contributes its
      verdict (the side: 1, tie: 1/2, the other side: 0); one with neither is dropped.
    * No label is read.  Unparsed: dropped (the source drops non-preferences); a pair with no
      preference left is counted in ``n_left_out``.
    * ``value`` = mean over pairs of the pair's mean preference; ``standard_error`` = its standard
      error over pairs (AlpacaEval's figure); the interval is a percentile bootstrap over pairs.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    cells, u = unit_table(judgments, policy=UNPARSED_DROPPED, by=by)
    n_pairs = len(u["pair_cell"])
    x = _row_preferences(judgments, discrete=discrete, side=side) if len(judgments) else np.zeros(0)
    ok = np.isfinite(x)
    pair_n = np.bincount(u["row_pair"][ok], minlength=n_pairs)
    pair_sum = np.bincount(u["row_pair"][ok], weights=x[ok], minlength=n_pairs)
    has = pair_n > 0
    mean = np.where(has, pair_sum / np.maximum(pair_n, 1), 0.0)
    G = len(cells)
    pc = u["pair_cell"]

    def per_cell(v: np.ndarray) -> np.ndarray:
        return np.bincount(pc, weights=np.asarray(v, dtype=float), minlength=G)

    other = "A" if side == "B" else "B"
    out = ratio_frame(cells, pc, mean * has, has.astype(float), per_cell(has), per_cell(~has),
                      policy=policy, variant=f"{side} over {other}")
    out["standard_error"] = standard_error(per_cell(mean * has), per_cell(mean ** 2 * has), per_cell(has))
    return out
