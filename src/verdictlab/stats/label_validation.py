"""What validating a judge with human labels computes before its estimates: the kind of each cell's
rows, the judge's prediction per item, the split of the items into labelled and unlabelled ones, and the
top-label confidence of a prediction.

* :func:`group_kinds` -- each group of rows is of pairs when its parsed verdicts are all A / B / tie, of
  point items when they all read as PASS / FAIL / UNKNOWN, neither (None) otherwise; a group without a
  parsed verdict takes the kind of its gold labels.
* :func:`item_predictions` -- per (group, item): the judge's prediction ``p``, the mean P(A) of the
  item's rows where the judge gives one, else its vote share (the votes of :data:`PAIR_VOTE_VALUES` /
  :data:`POINT_VOTE_VALUES` averaged over orders and repetitions; unparsed verdicts do not vote); an
  item without any parsed vote has no prediction (left out) or 1/2 (when the policy counts unparsed
  verdicts as wrong).
* :func:`label_split` -- labelled, unlabelled and excluded items, and the "keep K labels" what-if that
  hides all but K labels (a seeded permutation).
* :func:`top_label` -- confidence max(p, 1 - p) and whether the verdict it stands for is the human's; a
  prediction of exactly 1/2 decides nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy

#: the vote of a pair verdict in a vote share (the share of votes for A)
PAIR_VOTE_VALUES: dict[str, float] = {"A": 1.0, "B": 0.0, "tie": 0.5}
#: the vote of a point verdict in a vote share (the share of PASS)
POINT_VOTE_VALUES: dict[str, float] = {"PASS": 1.0, "FAIL": 0.0, "UNKNOWN": 0.5}


def group_kinds(gid: np.ndarray, n_groups: int, *, voted: np.ndarray, pair_vote: np.ndarray, point_vote: np.ndarray,
                labelled: np.ndarray, pair_label: np.ndarray) -> list[str | None]:
    """The kind of each of ``n_groups`` groups of rows (``gid``: each row's group): ``"pair"``,
    ``"point"`` or None (see the module docstring).  Per row: ``voted`` (a parsed verdict), ``pair_vote``
    / ``point_vote`` (that verdict is a pair / point word), ``labelled`` (a gold label), ``pair_label``
    (a pair word)."""
    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(gid, weights=np.asarray(mask, dtype=float), minlength=n_groups)

    n_v, n_v_pair, n_v_point = count(voted), count(pair_vote), count(point_vote)
    n_l, n_l_pair = count(labelled), count(pair_label)
    out: list[str | None] = []
    for g in range(n_groups):
        if n_v[g] == 0:
            out.append(None if n_l[g] == 0 else "pair" if n_l_pair[g] == n_l[g] else "point")
        else:
            out.append("pair" if n_v_pair[g] == n_v[g] else "point" if n_v_point[g] == n_v[g] else None)
    return out


def item_predictions(groups: np.ndarray, items: np.ndarray, votes: np.ndarray, p_a: np.ndarray, labels: np.ndarray,
                     *, n_groups: int, policy: FigurePolicy = DEFAULT_POLICY) -> tuple[pd.DataFrame, np.ndarray]:
    """``(predictions, n_none)``: one row per (group, item) of the rows given -- indexed by the group and
    item codes, sorted -- with ``p`` (the prediction), ``votes`` (the vote share), ``from_p_a`` and
    ``label`` (the first of the item's rows); and per group how many items had no parsed vote.  Items
    without a prediction are left out (``policy.drops_unparsed``) or predicted 1/2 (otherwise).  The means
    sum an item's rows in their order, as a mean over that item alone would."""
    frame = pd.DataFrame({"_g": groups, "_item": items, "v": votes, "p_a": p_a, "label": labels})
    g = frame.groupby(["_g", "_item"], sort=True).agg(
        p_mean=("p_a", "mean"), p_n=("p_a", "count"), v_mean=("v", "mean"), v_n=("v", "count"), label=("label", "first"))
    from_p_a = g["p_n"] > 0
    p = g["p_mean"].where(from_p_a, g["v_mean"])
    none = p.isna().to_numpy()
    if not policy.drops_unparsed:
        p = p.fillna(0.5)
    out = pd.DataFrame({"p": p, "votes": g["v_mean"], "from_p_a": from_p_a, "label": g["label"]})
    n_none = np.bincount(g.index.get_level_values("_g").to_numpy(), weights=none.astype(float),
                         minlength=n_groups).astype(int)
    if policy.drops_unparsed:
        out = out[~none]
    return out, n_none


@dataclass(frozen=True)
class LabelSplit:
    """The items of a cell by their human label: ``labelled`` (a label that is an outcome, and kept by the
    what-if), ``unlabelled`` (no label, or hidden by the what-if), ``excluded`` (a label that is neither
    outcome: a tie, UNKNOWN), with their counts; ``n_labels`` before the what-if and ``n_hidden`` by it."""

    labelled: np.ndarray
    unlabelled: np.ndarray
    excluded: np.ndarray
    n_labels: int
    n_hidden: int

    @property
    def n_labelled(self) -> int:
        return int(np.count_nonzero(self.labelled))

    @property
    def n_unlabelled(self) -> int:
        return int(np.count_nonzero(self.unlabelled))

    @property
    def n_excluded(self) -> int:
        return int(np.count_nonzero(self.excluded))


def label_split(outcomes: np.ndarray, excluded: np.ndarray, *, keep_labels: int | None = None,
                seed: int = 0) -> LabelSplit:
    """The :class:`LabelSplit` of items whose human outcome is ``outcomes`` (NaN: unlabelled) and whose
    label is neither outcome where ``excluded``.  ``keep_labels=K`` keeps K labels, chosen by a seeded
    permutation, when there are more, and counts the others as unlabelled."""
    labelled = ~np.isnan(outcomes)
    n_labels = int(np.count_nonzero(labelled))
    n_hidden = 0
    if keep_labels is not None and n_labels > keep_labels:
        idx = np.flatnonzero(labelled)
        hidden = np.random.default_rng(seed).permutation(idx)[keep_labels:]
        labelled = labelled.copy()
        labelled[hidden] = False
        n_hidden = int(hidden.size)
    return LabelSplit(labelled, ~labelled & ~excluded, np.asarray(excluded, dtype=bool), n_labels, n_hidden)


@dataclass(frozen=True)
class TopLabel:
    """Per prediction: its top-label ``confidence`` max(p, 1 - p), whether the verdict it stands for is the
    human's (``correct``: 1.0 / 0.0) and whether it ``decided`` anything (p is not exactly 1/2)."""

    confidence: np.ndarray
    correct: np.ndarray
    decided: np.ndarray

    @property
    def n_undecided(self) -> int:
        return int(np.count_nonzero(~self.decided))


def top_label(p: np.ndarray, outcomes: np.ndarray) -> TopLabel:
    """The :class:`TopLabel` of predictions ``p`` against human ``outcomes`` (1 / 0); a prediction of exactly
    1/2 is no decision: never correct."""
    p = np.asarray(p, dtype=float)
    pred = np.where(p > 0.5, 1.0, np.where(p < 0.5, 0.0, np.nan))
    return TopLabel(np.maximum(p, 1.0 - p), (pred == outcomes).astype(float), p != 0.5)


__all__ = ["PAIR_VOTE_VALUES", "POINT_VOTE_VALUES", "LabelSplit", "TopLabel", "group_kinds", "item_predictions",
           "label_split", "top_label"]
