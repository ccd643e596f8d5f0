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

import numpy as np
import pandas as pd

from ..design import trial_id
from ..judgment import JUDGMENT_COLUMN_NAMES, judgment_frame
from ..stats.remedies import both_orders_vote_verdicts, worst_parse_status
from ..vocab import CELL_KEY, Order, ParseStatus, first_shown

__all__ = ["REMEDY", "both_orders_vote"]

REMEDY = "both-orders-vote"
PAIR_KEY: tuple[str, ...] = (*CELL_KEY, "item_id", "rep", "step")


def _aligned(judgments: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = judgment_frame(judgments)
    df["step"] = df["step"].fillna("").astype(str)
    key = list(PAIR_KEY)
    ab = df[df["order"] == Order.AB].drop_duplicates(key).set_index(key)
    ba = df[df["order"] == Order.BA].drop_duplicates(key).set_index(key)
    common = ab.index.intersection(ba.index)
    return ab.loc[common], ba.loc[common]


def both_orders_vote(judgments: pd.DataFrame) -> pd.DataFrame:
    """The ``both-orders-vote`` remedy (see the module docstring)."""
    ab, ba = _aligned(judgments)
    if ab.empty:
        return judgment_frame(pd.DataFrame(columns=list(JUDGMENT_COLUMN_NAMES)))
    va = ab["verdict"].astype(object).to_numpy()
    vb = ba["verdict"].astype(object).to_numpy()
    verdict, n_unparsed = both_orders_vote_verdicts(va, vb)
    worst = worst_parse_status(ab["parse_status"].to_numpy(object), ba["parse_status"].to_numpy(object))
    # a combined verdict that stood on an unparsed order is a fallback; else the worse of the two statuses
    status = np.where((n_unparsed > 0) | (worst == ParseStatus.FAILED), ParseStatus.FALLBACK.value, worst)
    rules = np.array([None, f"{REMEDY}: 1 of 2 orders unparsed, the other decides",
                      f"{REMEDY}: both orders unparsed -> tie"], dtype=object)
    rule = rules[n_unparsed]
    detail = np.array([f"votes AB={x if isinstance(x, str) else 'unparsed'} "
                       f"BA={y if isinstance(y, str) else 'unparsed'} -> {v}"
                       for x, y, v in zip(va, vb, verdict, strict=True)], dtype=object)
    out = []
    for rows, order in ((ab, Order.AB.value), (ba, Order.BA.value)):
        r = rows.reset_index()
        r["order"] = order
        r["protocol"] = r["protocol"].astype(str) + "+" + REMEDY
        r["verdict"] = verdict
        r["parse_status"] = status
        r["parse_detail"] = detail
        r["fallback_rule"] = rule
        r["raw_output"] = None
        r["scores"] = None
        r["p_a"] = np.nan
        first = first_shown(order)
        decided = np.isin(verdict, ["A", "B"])
        r["shown_first_won"] = np.where(decided, (verdict == first).astype(float), np.nan)
        out.append(r)
    df = pd.concat(out, ignore_index=True)
    df["trial_id"] = [trial_id(j, d, i, p, o, t, rep, s, decoding=dec) for j, d, i, p, o, t, rep, s, dec in
                      zip(df["judge"], df["dataset"], df["item_id"], df["protocol"], df["order"],
                          df["temperature"], df["rep"], df["step"], df["decoding"], strict=True)]
    return judgment_frame(df).reset_index(drop=True)
