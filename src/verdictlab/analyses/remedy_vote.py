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
from ..vocab import Order, first_shown

__all__ = ["REMEDY", "both_orders_vote"]

REMEDY = "both-orders-vote"
PAIR_KEY: tuple[str, ...] = ("judge", "dataset", "item_id", "protocol", "temperature", "rep", "step",
                             "decoding")
_RANK = {"ok": 0, "repaired": 1, "fallback": 2, "failed": 3}
_STATUS = np.array(["ok", "repaired", "fallback", "failed"], dtype=object)


def _aligned(judgments: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    df = judgment_frame(judgments)
    df["step"] = df["step"].fillna("").astype(str)
    key = list(PAIR_KEY)
    ab = df[df["order"] == Order.AB].drop_duplicates(key).set_index(key)
    ba = df[df["order"] == Order.BA].drop_duplicates(key).set_index(key)
    common = ab.index.intersection(ba.index)
    return ab.loc[common], ba.loc[common]


def _vote(va: np.ndarray, vb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(combined verdict, number of unparsed orders) per pair."""
    a = (va == "A").astype(int) + (vb == "A").astype(int)
    b = (va == "B").astype(int) + (vb == "B").astype(int)
    verdict = np.where(a > b, "A", np.where(b > a, "B", "tie")).astype(object)
    n_unparsed = pd.isna(va).astype(int) + pd.isna(vb).astype(int)
    return verdict, n_unparsed


def both_orders_vote(judgments: pd.DataFrame) -> pd.DataFrame:
    """The ``both-orders-vote`` remedy (see the module docstring)."""
    ab, ba = _aligned(judgments)
    if ab.empty:
        return judgment_frame(pd.DataFrame(columns=list(JUDGMENT_COLUMN_NAMES)))
    va = ab["verdict"].astype(object).to_numpy()
    vb = ba["verdict"].astype(object).to_numpy()
    verdict, n_unparsed = _vote(va, vb)
    worst = np.maximum(ab["parse_status"].map(_RANK).fillna(3).to_numpy(int),
                       ba["parse_status"].map(_RANK).fillna(3).to_numpy(int))
    status = np.where(n_unparsed > 0, "fallback", _STATUS[np.minimum(worst, 2)]).astype(object)
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
