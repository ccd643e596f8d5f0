"""Known values of the grader decision and cost figures, worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import cost_per_item, grader_avoid_codes, grader_versus_best, ranking_value
from verdictlab.stats.grader_cells import grader_cell


def test_cost_per_item_by_hand():
    df = pd.DataFrame({"judge": ["j1", "j1", "j1", "j2"], "protocol": "p", "dataset": "d", "temperature": 0.0,
                       "item_id": ["a", "a", "b", "a"], "cost_usd": [0.01, 0.01, None, None],
                       "attempts": [1, 2, None, 1]}).astype({"cost_usd": float})
    t = cost_per_item(df).set_index("judge")
    # j1: items a, b; $0.02 over 2 priced judgments; calls 1 + 2 + (missing = 1) = 4 -> $0.01 and 2 calls per item
    assert t.loc["j1", ["n_items", "n_judgments", "n_priced"]].tolist() == [2, 3, 2]
    assert t.loc["j1", "usd_per_item"] == pytest.approx(0.01) and t.loc["j1", "calls_per_item"] == 2
    # j2 has no priced judgment: no dollar figure, the calls still count
    assert math.isnan(t.loc["j2", "usd_per_item"]) and t.loc["j2", "calls_per_item"] == 1
    assert t.loc["j1", "decoding"] == "free"          # the full cell key, decoding filled


def test_ranking_value_uses_one_figure_for_the_group():
    v, name = ranking_value([0.5, np.nan], [0.6, 0.7])
    assert name == "T_bound" and v.tolist() == [0.6, 0.7]
    v, name = ranking_value([0.5, 0.4], [0.6, 0.7])
    assert name == "T_g" and v.tolist() == [0.5, 0.4]


def test_versus_best_by_hand():
    best = [1] * 8
    other = [0] * 6 + [1, 1]
    events = pd.DataFrame({"grader": [0] * 8 + [1] * 8, "item": list(range(8)) * 2, "event": other + best})
    t = grader_versus_best(events, [0.6, 0.8, np.nan])
    # grader 1 is best (0.8); grader 0 loses 6 items and wins none: p = 2 * 0.5^6 = 0.03125, alone in the family
    assert t["rank"].tolist() == [2, 1, None] and t["best"].tolist() == [False, True, False]
    assert t.loc[0, ["n_shared", "n_better_best", "n_better_cell"]].tolist() == [8, 6, 0]
    assert t.loc[0, "p"] == pytest.approx(0.03125) and t.loc[0, "p_holm"] == pytest.approx(0.03125)
    assert t.loc[0, "distinguishable"] is True and t.loc[1, "distinguishable"] is None
    assert t.loc[2, "distinguishable"] is None                       # nothing to compare


def test_avoid_codes_by_hand():
    effects = pd.DataFrame({"kind": ["format.whitespace", "label_flip"], "class": ["preserving", "changing"],
                            "rate_hi": [0.85, 0.40]})
    codes = grader_avoid_codes(C_hi=0.7, kappa_hi=0.5, n_unparsed=11, n_judgments=100, effects=effects,
                               worse_than_best=True)
    assert codes == ("inconsistent", "not_invariant:format.whitespace", "insensitive:label_flip", "unparsed",
                     "worse_than_best")
    none = grader_avoid_codes(C_hi=np.nan, kappa_hi=np.nan, n_unparsed=10, n_judgments=100,
                              effects=effects.assign(rate_hi=[0.95, 0.9]))
    assert none == ()                                 # unmeasured figures give no reason; 10 % is not more than 10 %


def test_grader_cell_by_hand():
    # three sources graded twice: s1 right both times, s2 right then wrong (split, C = 0), s3 unlabelled;
    # a whitespace case of s1 keeps its grade; a flip of s1 is graded right (sensitive)
    rows = pd.DataFrame({
        "item_id": ["s1", "s1", "s2", "s2", "s3", "s3", "s1~w", "s1~w", "s1~f", "s1~f"],
        "grade": ["1", "1", "0", "1", "1", "1", "1", "1", "0", "0"],
        "label": ["1", "1", "0", "0", None, None, "1", "1", "0", "0"],
        "source_id": [None] * 6 + ["s1", "s1", "s1", "s1"],
        "kind": [None] * 6 + ["format.whitespace"] * 2 + ["label_flip"] * 2,
        "klass": [None] * 6 + ["preserving"] * 2 + ["changing"] * 2})
    c = grader_cell(rows, scale=["0", "1"], policy=FigurePolicy(n_bootstrap=0))
    # C = 2/3 (s1, s3 consistent; s2 split); accuracy over labelled s1 (right) and s2 (split = wrong) = 1/2
    assert (c.n_items, c.n_cases, c.C, c.agreement.n, c.agreement.accuracy) == (3, 2, pytest.approx(2 / 3), 2, 0.5)
    pooled = c.pooled.set_index("kind")
    assert pooled.loc["preserving", "rate"] == 1 and pooled.loc["changing", "rate"] == 1
    # T_g = C (A - iota q) = 2/3 * (1/2 - 0) = 1/3; the joint event: only s1 is labelled, consistent and invariant
    # among the labelled items with a preserving case -> 1/1
    assert math.isclose(c.trust.T, 1 / 3) and c.trust.T_joint == 1.0
    assert c.events.set_index("item_id")["event"].tolist()[:2] == [1.0, 0.0]
