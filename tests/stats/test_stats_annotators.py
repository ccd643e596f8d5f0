"""Annotators' agreement, judge-human agreement (MT-Bench's), gold agreement (PRD's) and peer rank,
on values worked out by hand, and against statsmodels / the krippendorff package."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import (
    annotator_agreement,
    fleiss_kappa,
    gold_agreement,
    judge_agreement,
    peer_rank,
    vote_pair_agreement,
    weighted_vote,
    weighted_win_rates,
)

# four items, three annotators each (the votes of the tests below)
VOTES = {"i1": ["A", "A", "A"], "i2": ["A", "A", "B"], "i3": ["B", "B", "tie"], "i4": ["A", "B", "tie"]}


def _votes() -> pd.DataFrame:
    return pd.DataFrame([("d", i, f"h{k}", v) for i, vs in VOTES.items() for k, v in enumerate(vs, 1)],
                        columns=["dataset", "item_id", "annotator", "vote"])


def test_fleiss_kappa_by_hand() -> None:
    # counts (A, B, tie): (3,0,0) (2,1,0) (0,2,1) (1,1,1); m = 3
    # P_i = (sum n^2 - 3) / 6: 1, 1/3, 1/3, 0 -> P = 5/12
    # p = (6, 4, 2) / 12 -> P_e = 1/4 + 1/9 + 1/36 = 7/18
    # kappa = (5/12 - 7/18) / (1 - 7/18) = (1/36) / (22/36) = 1/22
    fig = fleiss_kappa([[3, 0, 0], [2, 1, 0], [0, 2, 1], [1, 1, 1]])
    assert fig.value == pytest.approx(1 / 22) and fig.n == 4
    assert annotator_agreement(_votes(), policy=FigurePolicy(n_bootstrap=0))["fleiss_kappa"] == pytest.approx(1 / 22)
    with pytest.raises(ValueError, match="same number of raters"):
        fleiss_kappa([[3, 0, 0], [1, 1, 0]])
    assert np.isnan(fleiss_kappa([[2, 0, 0], [2, 0, 0]]).value)      # one category only: no chance disagreement


def test_fleiss_kappa_equals_statsmodels_and_alpha_the_krippendorff_package() -> None:
    ir = pytest.importorskip("statsmodels.stats.inter_rater")
    kd = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(7)
    for _ in range(20):
        votes = rng.choice(["A", "B", "tie"], size=(30, 3), p=[0.5, 0.3, 0.2])
        frame = pd.DataFrame([("d", i, f"h{k}", v) for i, row in enumerate(votes) for k, v in enumerate(row)],
                             columns=["dataset", "item_id", "annotator", "vote"])
        counts = np.stack([(votes == c).sum(axis=1) for c in ("A", "B", "tie")], axis=1)
        got = annotator_agreement(frame, policy=FigurePolicy(n_bootstrap=0))
        assert got["fleiss_kappa"] == pytest.approx(ir.fleiss_kappa(counts), abs=1e-12)
        codes = np.vectorize({"A": 0, "B": 1, "tie": 2}.get)(votes).T.astype(float)
        assert got["krippendorff_alpha"] == pytest.approx(kd.alpha(codes, level_of_measurement="nominal"), abs=1e-12)


def test_interval_brackets_the_figure_and_is_seeded() -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame([("d", i, f"h{k}", v) for i in range(60) for k, v in
                          enumerate(rng.choice(["A", "B", "tie"], size=3, p=[0.6, 0.3, 0.1]))],
                         columns=["dataset", "item_id", "annotator", "vote"])
    a = annotator_agreement(frame, policy=FigurePolicy(n_bootstrap=300, seed=3))
    b = annotator_agreement(frame, policy=FigurePolicy(n_bootstrap=300, seed=3))
    assert a == b
    for name in ("fleiss_kappa", "krippendorff_alpha", "pair_agreement", "pair_agreement_no_ties"):
        assert a[f"{name}_lo"] <= a[name] <= a[f"{name}_hi"], name


def test_mtbench_agreement_by_hand() -> None:
    votes = _votes()
    # human-human, every pair of two votes of one item: i1 3/3, i2 1/3, i3 1/3, i4 0/3 -> 5/12
    assert vote_pair_agreement(votes, policy=FigurePolicy(n_bootstrap=0)).value == pytest.approx(5 / 12)
    # without ties (pairs with a tie vote left out): i1 3/3, i2 1/3, i3 (B,B) 1/1, i4 (A,B) 0/1 -> 5/8
    nt = vote_pair_agreement(votes, ties=False, policy=FigurePolicy(n_bootstrap=0))
    assert (nt.value, nt.n) == (pytest.approx(5 / 8), 8)
    judge = pd.DataFrame({"dataset": "d", "item_id": ["i1", "i2", "i3", "i4"], "verdict": ["A", "B", "tie", None]})
    # judge-human, each judgment x each vote: i1 A: 3/3, i2 B: 1/3, i3 tie: 1/3, i4 unparsed: left out -> 5/9
    assert vote_pair_agreement(votes, judge, policy=FigurePolicy(n_bootstrap=0)).value == pytest.approx(5 / 9)
    # without ties: i1 3/3, i2 1/3, i3 (the judge's tie) no pair -> 4/6
    assert vote_pair_agreement(votes, judge, ties=False, policy=FigurePolicy(n_bootstrap=0)).value == pytest.approx(2 / 3)
    # unparsed as wrong: i4 adds 0 of 3 (0 of 2 without ties) -> 5/12 and 4/8
    assert vote_pair_agreement(votes, judge, policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).value == pytest.approx(5 / 12)
    assert vote_pair_agreement(votes, judge, ties=False, policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).value == pytest.approx(0.5)


def test_gold_agreement_in_shown_terms_by_hand() -> None:
    f = pd.DataFrame({"dataset": "d", "item_id": ["x", "x", "y", "y"], "order": ["AB", "BA", "AB", "BA"],
                      "verdict": ["A", "A", "tie", "B"], "label": ["A", "A", "B", "B"]})
    g = gold_agreement(f, policy=FigurePolicy(n_bootstrap=0))
    # equal on 3 of 4 judgments (ties a class)
    assert g["accuracy"] == pytest.approx(0.75) and (g["n"], g["n_items"]) == (4, 2)
    # shown terms (verdict, label): (A,A) (B,B) (tie,B) (A,A); two raters: P_i = 1, 1, 0, 1 -> P = 3/4
    # p = A 4/8, B 3/8, tie 1/8 -> P_e = 26/64; kappa = (3/4 - 13/32) / (19/32) = 11/19
    assert g["fleiss_kappa"] == pytest.approx(11 / 19)


def test_judge_against_judge_by_hand() -> None:
    base = {"dataset": "d", "order": "AB", "rep": 0}
    a = pd.DataFrame([{**base, "item_id": i, "verdict": v} for i, v in zip("1234", ["A", "B", "A", "tie"], strict=True)])
    b = pd.DataFrame([{**base, "item_id": i, "verdict": v} for i, v in zip("1235", ["A", "B", "B", "A"], strict=True)])
    got = judge_agreement(a, b, policy=FigurePolicy(n_bootstrap=0))
    # shared: items 1, 2, 3 -> agree on 2 of 3; kappa: p_o = 2/3, marginals a (A 2, B 1), b (A 1, B 2):
    # p_e = (2*1 + 1*2) / 9 = 4/9 -> kappa = (2/3 - 4/9) / (5/9) = 2/5
    assert (got["agreement"], got["n"]) == (pytest.approx(2 / 3), 3)
    assert got["cohen_kappa"] == pytest.approx(0.4)


def _peers() -> pd.DataFrame:
    rows = []
    for judge, verdicts in (("x", ["A", "A"]), ("y", ["B", "tie"])):
        for k, v in enumerate(verdicts):
            rows.append({"judge": judge, "system_a": "x", "system_b": "y", "verdict": v, "dataset": "d",
                         "item_id": f"i{k}", "order": "AB", "label": "A"})
    return pd.DataFrame(rows)


def test_peer_rank_by_hand() -> None:
    f = _peers()
    # unweighted: x scores 1 + 1 (its own reviews) + 0 + 1/2 (y's) over 4 battles = 0.625, y 0.375
    assert weighted_win_rates(f) == {"x": pytest.approx(0.625), "y": pytest.approx(0.375)}
    one = peer_rank(f, iterations=1)
    assert one.win_rates == {"x": pytest.approx(0.625), "y": pytest.approx(0.375)}
    # min-max of (0.625, 0.375) -> (1, 0), over their sum -> weights x 1, y 0
    assert one.weights == {"x": pytest.approx(1.0), "y": pytest.approx(0.0)}
    # round 2: weights over their mean (x 2, y 0): x scores 2 + 2 of 4 battles = 1.0, y 0
    two = peer_rank(f, iterations=2)
    assert two.win_rates == {"x": pytest.approx(1.0), "y": pytest.approx(0.0)} and two.n_battles == 4
    # the vote per (item, order): i0 x A (+1), y B (-1); i1 x A, y tie (0)
    equal = weighted_vote(f).set_index("item_id")["verdict"].to_dict()
    assert equal == {"i0": "tie", "i1": "A"}       # means 0 and 1/2
    assert weighted_vote(f, two.weights).set_index("item_id")["verdict"].to_dict() == {"i0": "A", "i1": "A"}


def test_categorical_verdicts_as_a_compact_store_read_gives_them() -> None:
    # regression: a compact read gives verdicts as categoricals; coding them must not add a category
    base = {"dataset": "d", "order": "AB", "rep": 0}
    a = pd.DataFrame([{**base, "item_id": i, "verdict": v} for i, v in zip("12", ["A", None], strict=True)])
    b = a.assign(verdict=["A", "B"])
    got = judge_agreement(a.astype({"verdict": "category"}), b.astype({"verdict": "category"}), policy=FigurePolicy(unparsed="wrong", n_bootstrap=0))
    assert (got["agreement"], got["n"]) == (0.5, 2)
