"""The ``both-orders-vote`` remedy: JudgeBench's rule for combining a pair's two presentation orders.

For each (judge, dataset, item, protocol, temperature, rep, step, decoding) judged in both orders,
each order casts one vote for its canonical verdict; a ``tie`` or an unparsed verdict abstains; the
side with more votes wins, else ``tie``.  So A + A -> A, A + tie -> A, A + unparsed -> A,
A + B -> tie, tie + tie -> tie, and two abstentions -> tie.  (JudgeBench's ``utils/metrics``: each
game's decision adds to an A or a B count, and ``A>B`` if count A > count B, ``B>A`` if fewer, else
``A=B``.)  Beside ``both-orders`` (agreement, else tie; unparsed -> unparsed) it differs where one
order abstains: ``both-orders`` says tie (or unparsed), this rule lets the other order decide.

Never a silent guess: a combined verdict that stood on an unparsed order has ``parse_status``
``fallback`` and ``fallback_rule`` naming the rule ("both-orders-vote: 1 of 2 orders unparsed" /
"...: both orders unparsed -> tie"); otherwise the worse parse status of the two.

Same contract as :func:`verdictlab.analyses.remedies.both_orders`: a derived judgments frame with
every judgment column, protocol ``"<base>+both-orders-vote"``, one row per order carrying the combined
verdict (so phi is 0 by construction), cost columns of the calls consumed kept.  2 calls per verdict.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..stats.remedies import both_orders_vote_verdicts, worst_parse_status
from ..vocab import CELL_KEY, Order, ParseStatus, first_shown
from ._frames import _empty, _finish, _prep, paired_orders, per_distinct, suffixed

__all__ = ["REMEDY", "both_orders_vote"]

REMEDY = "both-orders-vote"
PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "item_id", "rep", "step")


def _vote_detail(x: object, y: object, v: object) -> str:
    return f"votes AB={x if isinstance(x, str) else 'unparsed'} BA={y if isinstance(y, str) else 'unparsed'} -> {v}"


def both_orders_vote(judgments: pd.DataFrame, *, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """The ``both-orders-vote`` remedy (see the module docstring); ``columns``: only these columns of
    the derived frame (default every judgment column)."""
    ab, ba = paired_orders(_prep(judgments, columns), PAIR_KEY)
    if ab.empty:
        return _empty(columns)
    va = ab["verdict"].astype(object).to_numpy()
    vb = ba["verdict"].astype(object).to_numpy()
    verdict, n_unparsed = both_orders_vote_verdicts(va, vb)
    worst = worst_parse_status(ab["parse_status"].to_numpy(object), ba["parse_status"].to_numpy(object))
    # a combined verdict that stood on an unparsed order is a fallback; else the worse of the two statuses
    status = np.where((n_unparsed > 0) | (worst == ParseStatus.FAILED), ParseStatus.FALLBACK.value, worst)
    rules = np.array([None, f"{REMEDY}: 1 of 2 orders unparsed, the other decides",
                      f"{REMEDY}: both orders unparsed -> tie"], dtype=object)
    combined = {"verdict": verdict, "parse_status": status, "fallback_rule": rules[n_unparsed], "raw_output": None,
                "scores": None, "p_a": np.nan}
    if columns is None or "parse_detail" in columns:
        combined["parse_detail"] = per_distinct(_vote_detail, va, vb, verdict)
    decided = np.isin(verdict, ["A", "B"])
    out = []
    for rows, order in ((ab, Order.AB.value), (ba, Order.BA.value)):
        r = rows.reset_index()
        r["order"] = order
        r["protocol"] = suffixed(r["protocol"], "+" + REMEDY)
        for name, values in combined.items():
            if name in r.columns:
                r[name] = values
        r["shown_first_won"] = np.where(decided, (verdict == first_shown(order)).astype(float), np.nan)
        out.append(r)
    return _finish(pd.concat(out, ignore_index=True), columns)
