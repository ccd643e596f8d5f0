"""The ``both-orders-vote`` remedy: JudgeBench's rule for combining a pair's two presentation orders.

For each (judge, dataset, item, protocol, temperature, rep, step, decoding) judged in both orders,
each order casts one vote for its canonical verdict; a ``tie`` or an unparsed verdict abstains; the
side with more votes wins, else ``tie``.  So A + A -> A, A + tie -> A, A + unparsed -> A,
A + B -> tie, tie + tie -> tie; two unparsed orders give no verdict (nothing was read).  (JudgeBench's ``utils/metrics``: each
game's decision adds to an A or a B count, and ``A>B`` if count A > count B, ``B>A`` if fewer, else
``A=B``.)  Beside ``both-orders`` (agreement, else tie; unparsed -> unparsed) it differs where one
order abstains: ``both-orders`` says tie (or unparsed), this rule lets the other order decide.

Never a silent guess: a combined verdict that stood on an unparsed order has ``parse_status``
``fallback`` and ``fallback_rule`` naming the rule ("both-orders-vote: 1 of 2 orders unparsed" /
a pair with both orders unparsed has none, ``parse_status`` ``failed``); otherwise the worse parse status
of the two.

Same contract as :func:`verdictlab.analyses.remedies.both_orders`: a derived judgments frame with
every judgment column, protocol ``"<base>+both-orders-vote"``, one row per order carrying the combined
verdict (so phi is 0 by construction), cost columns of the calls consumed kept.  2 calls per verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.vocab import CELL_KEY, ParseStatus
from ..stats.remedies import both_orders_vote_verdicts, worst_parse_status
from ._frames import _empty, _finish, _prep, both_order_rows, paired_positions, per_distinct

__all__ = ["REMEDY", "both_orders_vote", "both_orders_vote_of"]

REMEDY = "both-orders-vote"
PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "item_id", "rep", "step")


def _vote_detail(x: object, y: object, v: object) -> str:
    said = [t if isinstance(t, str) else "unparsed" for t in (x, y)]
    return f"votes AB={said[0]} BA={said[1]} -> {v if isinstance(v, str) else 'no verdict'}"


def both_orders_vote(judgments: pd.DataFrame, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The ``both-orders-vote`` remedy (see the module docstring); ``columns``: only these columns of
    the derived frame (default every judgment column)."""
    df = _prep(judgments, columns)
    return both_orders_vote_of(df, *paired_positions(df, PAIR_KEY), columns=columns)


def both_orders_vote_of(df: pd.DataFrame, ab: np.ndarray, ba: np.ndarray, *,
                        columns: Sequence[str] | None = None) -> pd.DataFrame:
    """:func:`both_orders_vote` of the prepared rows ``df`` whose order pairs are at ``ab`` / ``ba``
    (:func:`verdictlab.analyses._frames.paired_positions`)."""
    if not len(ab):
        return _empty(columns)
    verdicts = df["verdict"].astype(object).to_numpy()
    va, vb = verdicts[ab], verdicts[ba]
    verdict, n_unparsed = both_orders_vote_verdicts(va, vb)
    statuses = df["parse_status"].to_numpy(object)
    worst = worst_parse_status(statuses[ab], statuses[ba])
    # a combined verdict that stood on an unparsed order is a fallback; else the worse of the two statuses
    status = np.where((n_unparsed > 0) | (worst == ParseStatus.FAILED), ParseStatus.FALLBACK.value, worst)
    status[n_unparsed == 2] = ParseStatus.FAILED.value
    rules = np.array([None, f"{REMEDY}: 1 of 2 orders unparsed, the other decides",
                      f"{REMEDY}: both orders unparsed -> no verdict"], dtype=object)
    combined = {"verdict": verdict, "parse_status": status, "fallback_rule": rules[n_unparsed], "raw_output": None,
                "scores": None, "p_a": np.nan}
    if columns is None or "parse_detail" in columns:
        combined["parse_detail"] = per_distinct(_vote_detail, va, vb, verdict)
    return _finish(both_order_rows(df, ab, ba, combined, "+" + REMEDY), columns)
