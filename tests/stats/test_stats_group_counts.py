"""Counts over groups of rows (stats/group_counts.py) and the label-validation building blocks
(stats/label_validation.py), on values worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import (
    block_of,
    default_quorum,
    distinct_count,
    group_kinds,
    item_predictions,
    label_split,
    n_changed,
    n_distinct,
    top_label,
    vote_counts,
    vote_groups,
    votes_matrix,
)


def test_vote_groups_counts_parsed_votes_rows_and_totals() -> None:
    frame = pd.DataFrame({"g": [2, 1, 1, 1, 1, 2], "verdict": ["tie", "A", "A", "B", None, "B"],
                          "tokens_in": [3, 10, 20, None, 5, None], "cost_usd": [None] * 6,
                          "label": [None, None, "A", "B", "A", "B"], "created_at": [1.0, 4.0, 2.0, 9.0, 3.0, 5.0]})
    out = vote_groups(frame, ["g"], sums=["tokens_in", "cost_usd"], firsts=["label"], latest=["created_at"])
    # group 1 (sorted first): verdicts A, A, B, None -> A 2, B 1, tie 0; parsed 3 of 4 rows;
    #   tokens 10 + 20 + 5 = 35 (the missing one skipped); no cost at all -> NaN; first label (row order,
    #   missing skipped) "A"; latest created_at max(4, 2, 9, 3) = 9
    # group 2: tie, B -> A 0, B 1, tie 1; parsed 2 of 2; tokens 3; label "B"; created_at max(1, 5) = 5
    assert list(out["g"]) == [1, 2]
    assert votes_matrix(out).tolist() == [[2, 1, 0], [0, 1, 1]]
    assert list(out["n_parsed"]) == [3, 2] and list(out["n_votes"]) == [4, 2]
    assert list(out["tokens_in"]) == [35.0, 3.0] and out["cost_usd"].isna().all()
    assert list(out["label"]) == ["A", "B"] and list(out["created_at"]) == [9.0, 5.0]
    # the vote rule on those counts: group 1 quorum 3 (of 4) met, A alone on top -> A ok;
    # group 2 quorum 2 met, B and tie split -> tie (split)
    verdict, status = vote_counts(votes_matrix(out), quorum=np.array([default_quorum(4), default_quorum(2)]))
    assert list(verdict) == ["A", "tie"] and list(status) == ["ok", "split"]


def test_distinct_counts_and_blocks() -> None:
    frame = pd.DataFrame({"cell": ["x", "x", "x", "y", None], "step": ["c1", "c2", "c1", "c1", "c9"]})
    out = distinct_count(frame, ["cell"], "step")
    # x holds c1, c2 -> 2; y holds c1 -> 1; the row without a cell is left out
    assert out.to_dict("list") == {"cell": ["x", "y"], "n_distinct": [2, 1]}
    assert n_distinct(["a", "b", "a", None]) == 2
    # blocks of 3 repetitions: reps 0-2 block 0, 3-5 block 1, 6 block 2
    assert block_of(pd.Series([0, 1, 2, 3, 4, 5, 6]), 3).tolist() == [0, 0, 0, 1, 1, 1, 2]


def test_n_changed_counts_differing_matched_verdicts() -> None:
    # A = A (same), B -> A (changed), missing vs missing (differs), missing -> A (changed): 3
    assert n_changed(["A", "B", None, None], ["A", "A", None, "A"]) == 3


def test_group_kinds() -> None:
    gid = np.array([0, 0, 1, 1, 2])
    kinds = group_kinds(gid, 3, voted=np.array([1, 1, 0, 0, 0], bool), pair_vote=np.array([1, 1, 0, 0, 0], bool),
                        point_vote=np.zeros(5, bool), labelled=np.array([1, 1, 1, 1, 0], bool),
                        pair_label=np.array([1, 1, 0, 0, 0], bool))
    # group 0: both votes are pair words -> pair; group 1: no vote, 2 labels, none a pair word -> point;
    # group 2: neither a vote nor a label -> None
    assert kinds == ["pair", "point", None]


def test_item_predictions_prefer_p_a_then_the_vote_share() -> None:
    groups, items = np.array([0, 0, 0, 1]), np.array([0, 0, 1, 0])
    votes, p_a = np.array([1.0, 0.5, np.nan, 0.0]), np.array([np.nan, np.nan, np.nan, 0.9])
    labels = np.array(["A", "A", "B", "B"], dtype=object)
    out, n_none = item_predictions(groups, items, votes, p_a, labels, n_groups=2)
    # (0, 0): no P(A) -> vote share (1 + 0.5) / 2 = 0.75; (0, 1): no parsed vote -> left out, counted;
    # (1, 0): P(A) 0.9 (its vote share 0 kept beside it)
    assert out.index.tolist() == [(0, 0), (1, 0)]
    assert out["p"].tolist() == [0.75, 0.9] and out["votes"].tolist() == [0.75, 0.0]
    assert out["from_p_a"].tolist() == [False, True] and n_none.tolist() == [1, 0]
    wrong, _ = item_predictions(groups, items, votes, p_a, labels, n_groups=2, policy=FigurePolicy(unparsed="wrong"))
    assert wrong.loc[(0, 1), "p"] == 0.5 and math.isnan(wrong.loc[(0, 1), "votes"])


def test_label_split_and_the_keep_labels_what_if() -> None:
    outcomes = np.array([1.0, np.nan, 0.0, np.nan, 1.0])
    excluded = np.array([False, False, False, True, False])
    split = label_split(outcomes, excluded)
    # labelled: items 0, 2, 4; unlabelled: item 1 (item 3's label is excluded: neither)
    assert split.labelled.tolist() == [True, False, True, False, True]
    assert split.unlabelled.tolist() == [False, True, False, False, False]
    assert (split.n_labelled, split.n_unlabelled, split.n_excluded, split.n_hidden) == (3, 1, 1, 0)
    kept = label_split(outcomes, excluded, keep_labels=2, seed=0)
    # 3 labels, 2 kept: one hidden, counted as unlabelled
    assert (kept.n_labels, kept.n_labelled, kept.n_unlabelled, kept.n_hidden) == (3, 2, 2, 1)


def test_top_label() -> None:
    top = top_label(np.array([0.8, 0.3, 0.5]), np.array([1.0, 1.0, 0.0]))
    # confidence max(p, 1 - p): 0.8, 0.7, 0.5; 0.8 says 1 (right), 0.3 says 0 (wrong), 0.5 says nothing
    assert top.confidence == pytest.approx([0.8, 0.7, 0.5])
    assert top.correct.tolist() == [1.0, 0.0, 0.0] and top.decided.tolist() == [True, True, False]
    assert top.n_undecided == 1
