"""Published definitions over a pair's two presentation orders and its label.

Each function reads a judgments frame (the store's columns: the cell keys, ``item_id``, ``order``,
``verdict``, ``label``, ``rep``) and returns one row per cell (two for the per-order accuracy) with
:data:`~verdictlab.stats.definitions._pairs.DEFINITION_COLUMNS`.  With repetitions, each order's
verdict is its modal verdict over the repetitions (as for C, phi and A); a split mode (two values
share the most votes) is no verdict: it equals no label and no other verdict.

Ties: a ``tie`` label is a class of its own wherever the source counts tie labels; a ``tie`` verdict
is always a value of its own.  Unparsed verdicts: each definition states its source's rule; where
the source has none it takes the unparsed policy of the cell (``exclude`` or ``wrong``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ...core.policy import DEFAULT_POLICY, FigurePolicy
from ..reliability import DEFAULT_BY
from ._pairs import MISSING, TIE, UNPARSED_WRONG, A, B, order_pairs, proportion_frame, ratio_frame

__all__ = [
    "accuracy_mean_of_orders",
    "accuracy_per_order",
    "agreement_both_orders",
    "consistency_both_orders",
    "pair_verdict_agreement",
    "positional_agreement",
    "vote_accuracy",
]



def agreement_both_orders(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                          by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Agreement, correct in BOTH orders (Auto-J, Li et al. 2023, "Generative Judge for Evaluating
    Alignment"; ``pairwise_eval.py``, ``correct_both / total``).

    * A pair counts as right only if the verdict of each order equals the label.
    * Ties: a tie label is a third class (a tie verdict in both orders is right).
    * Flips: a pair whose two orders differ is wrong.
    * Unparsed: the source's parser returns -1, which equals no label: wrong; the pair stays in the
      denominator.
    * Denominator: every labelled pair (label A, B or tie) judged in both orders; pairs judged in
      one order only are left out (``n_left_out``).  Wilson interval over pairs.
    """
    p = order_pairs(judgments, policy=UNPARSED_WRONG, by=by)
    labelled = p.label >= 0
    den = labelled & p.both
    right = den & (p.ab == p.label) & (p.ba == p.label)
    return proportion_frame(p.cells, p.per_cell(right), p.per_cell(den), p.per_cell(~den), confidence=policy.confidence)


def consistency_both_orders(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                            by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Consistency in both orders, ties included (Auto-J ``pairwise_eval.py``: ``1 -
    exchange_dont_agree / total``): the share of pairs whose two orders give the same verdict.

    * Ties: a tie verdict in both orders is consistent.  No label is read.
    * Unparsed: the source's script refuses an unparsed swapped output, so it has no rule: the cell's
      unparsed policy applies (``exclude``: an order without a parsed verdict leaves its pair out;
      ``wrong``: unparsed is a value, and two unparsed orders are consistent).
    * Denominator: every pair judged in both orders.  Wilson interval over pairs.
    It equals ``1 - phi`` of :func:`~verdictlab.stats.reliability` under the same policy.
    """
    p = order_pairs(judgments, policy=policy, by=by)
    same = p.both & (p.ab == p.ba) & (p.ab >= 0)
    return proportion_frame(p.cells, p.per_cell(same), p.per_cell(p.both), p.per_cell(~p.both),
                            confidence=policy.confidence)


def accuracy_per_order(judgments: pd.DataFrame, *, ties: bool = True, policy: FigurePolicy = DEFAULT_POLICY,
                       by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Single-order accuracy, each order on its own (Auto-J ``pairwise_eval.py``, ``correct[0]`` and
    ``correct[1]`` over ``total``; the first is its single-order agreement): two rows per cell,
    ``variant`` ``AB`` and ``BA``.

    * ``ties=True``: a tie label is a third class (a tie verdict is right on it); every labelled pair
      judged in that order is in the denominator.
    * ``ties=False``: pairs with a tie label are left out (``n_left_out``); a tie verdict on an A/B
      label stays wrong.
    * Unparsed: wrong, in the denominator (the source's -1 equals no label).
    Wilson interval over pairs.
    """
    p = order_pairs(judgments, policy=UNPARSED_WRONG, by=by)
    counted = p.label >= 0 if ties else (p.label == A) | (p.label == B)
    frames = []
    for name, mode in (("AB", p.ab), ("BA", p.ba)):
        judged = mode != MISSING
        den = counted & judged
        frames.append(proportion_frame(p.cells, p.per_cell(den & (mode == p.label)), p.per_cell(den),
                                       p.per_cell(~den), confidence=policy.confidence, variant=name))
    return pd.concat(frames, ignore_index=True)


def _pair_verdict(p_ab: np.ndarray, p_ba: np.ndarray) -> np.ndarray:
    """MT-Bench's one verdict per pair from its two orders: the common verdict when both agree, the
    value ``UNPARSED`` ("error") when both are unparsed, otherwise ``tie`` ("inconsistent")."""
    agree = (p_ab == p_ba) & (p_ab >= 0)
    return np.where(agree, p_ab, TIE)


def pair_verdict_agreement(judgments: pd.DataFrame, *, ties: bool = True, policy: FigurePolicy = DEFAULT_POLICY,
                           by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Agreement with the label of the judge's pair verdict, with or without ties (MT-Bench, Zheng et
    al. 2023; FastChat ``llm_judge/compute_agreement.py``, setups "with tie" / "without tie").

    * The judge's verdict on a pair combines its two orders: the common verdict if both orders agree,
      else ``tie`` (FastChat's "inconsistent", which counts as a tie).
    * ``ties=True``: every labelled pair judged in both orders; tie = tie is agreement.
    * ``ties=False``: pairs whose label or pair verdict is a tie are left out (``n_left_out``), so a
      flip leaves the denominator instead of counting as a disagreement.
    * Unparsed: an order that is unparsed while the other is not makes the pair inconsistent (a tie);
      both unparsed is FastChat's ``error`` vote, which equals no label and is not a tie (it stays in
      both denominators, wrong).
    Wilson interval over pairs (FastChat counts one comparison per human vote; a verdictlab item has
    one label).
    """
    p = order_pairs(judgments, policy=UNPARSED_WRONG, by=by)
    verdict = _pair_verdict(p.ab, p.ba)
    labelled = (p.label >= 0) & p.both
    den = labelled if ties else labelled & (p.label != TIE) & (verdict != TIE)
    right = den & (verdict == p.label)
    return proportion_frame(p.cells, p.per_cell(right), p.per_cell(den), p.per_cell(~den), confidence=policy.confidence)


def vote_accuracy(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                  by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Accuracy of the both-orders vote (JudgeBench, Tan et al. 2024; ``utils/metrics``): each order
    votes for its winner; a tie, an unparsed or a split order abstains; the side with more votes is
    the pair's verdict, else ``tie`` -- and a tie is wrong.

    * Flips: A + B is a tie, so wrong.  One order decides when the other abstains.
    * Unparsed: abstains (the source's rule), the pair stays in the denominator.
    * Denominator: pairs labelled A or B judged in both orders (JudgeBench has no tie labels; tie
      labels are left out, ``n_left_out``, as for A).  Wilson interval over pairs.
    With one repetition it is ``A`` of the ``both-orders-vote`` remedy.
    """
    p = order_pairs(judgments, policy=UNPARSED_WRONG, by=by)
    votes_a = (p.ab == A).astype(int) + (p.ba == A).astype(int)
    votes_b = (p.ab == B).astype(int) + (p.ba == B).astype(int)
    verdict = np.where(votes_a > votes_b, A, np.where(votes_b > votes_a, B, TIE))
    decisive_label = (p.label == A) | (p.label == B)
    den = decisive_label & p.both
    return proportion_frame(p.cells, p.per_cell(den & (verdict == p.label)), p.per_cell(den), p.per_cell(~den),
                            confidence=policy.confidence)


def accuracy_mean_of_orders(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY, by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Accuracy averaged over both orders (LLMBar, Zeng et al. 2024; its ``evaluate.py``: the mean of
    the two orders' ``winner == label`` rates).

    * Every judged (pair, order) unit with a label A or B counts once; a tie verdict is wrong (LLMBar
      has no tie labels; tie labels are left out, ``n_left_out``).
    * Flips: a flipped pair is right in one order and wrong in the other: it contributes 1/2.
    * Unparsed: a null winner is wrong and stays in the denominator (the source's rule).
    Interval: percentile bootstrap over pairs (a pair's two units move together).
    It is ``A`` of :func:`~verdictlab.stats.reliability` under unparsed ``wrong``.
    """
    p = order_pairs(judgments, policy=UNPARSED_WRONG, by=by)
    lab = (p.label == A) | (p.label == B)
    units = lab * ((p.ab != MISSING).astype(int) + (p.ba != MISSING).astype(int))
    right = lab * ((p.ab == p.label).astype(int) + (p.ba == p.label).astype(int))
    left_out = ~lab * ((p.ab != MISSING).astype(int) + (p.ba != MISSING).astype(int))
    return ratio_frame(p.cells, p.cell, right.astype(float), units.astype(float), p.per_cell(units),
                       p.per_cell(left_out), policy=policy,
                       successes=p.per_cell(right))


def positional_agreement(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                         by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """Positional agreement (LLMBar ``evaluate.py``): the share of pairs whose two orders name the same
    winner.

    * No label is read; a tie verdict equals a tie verdict.
    * Unparsed: a null winner is a value: null = null is agreement, null vs a winner is not (the
      source's rule, whatever the cell's policy).
    * Denominator: every pair judged in both orders.  Wilson interval over pairs.
    It is ``1 - phi`` of :func:`~verdictlab.stats.reliability` under unparsed ``wrong``.
    """
    p = order_pairs(judgments, policy=UNPARSED_WRONG, by=by)
    same = p.both & (p.ab == p.ba) & (p.ab >= 0)
    return proportion_frame(p.cells, p.per_cell(same), p.per_cell(p.both), p.per_cell(~p.both),
                            confidence=policy.confidence)

