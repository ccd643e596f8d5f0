"""A_3class and macro-F1 (stats/classes.py): hand-worked values, the unit rules, sklearn agreement."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.core.vocab import CELL_KEY
from verdictlab.stats.classes import CLASS_COLUMNS, class_figures, macro_f1_score, per_class_scores


def frame(rows: list[tuple[str, str, str | None, str | None, int]]) -> pd.DataFrame:
    """rows: (item_id, order, verdict, label, rep) in one cell."""
    return pd.DataFrame([{"judge": "j", "protocol": "p", "dataset": "d", "temperature": 0.0,
                          "item_id": i, "order": o, "verdict": v, "label": lab, "rep": r, "step": ""}
                         for i, o, v, lab, r in rows])


SIX = [("1", "AB", "A", "A", 0), ("2", "AB", "B", "A", 0), ("3", "AB", "B", "B", 0),
       ("4", "AB", "B", "B", 0), ("5", "AB", "tie", "tie", 0), ("6", "AB", "A", "tie", 0)]


def test_hand_worked_six_pairs():
    # confusion (gold rows A, B, tie; predicted A, B, tie):
    #   A: 1 1 0 | B: 0 2 0 | tie: 1 0 1
    # accuracy = (1 + 2 + 1) / 6 = 2/3
    # A:   P = 1/2 (1 of 2 predicted A), R = 1/2, F1 = 1/2
    # B:   P = 2/3, R = 2/2 = 1, F1 = 2 (2/3)(1) / (5/3) = 4/5
    # tie: P = 1/1, R = 1/2, F1 = 2 (1/2) / (3/2) = 2/3
    # macro-F1 = (1/2 + 4/5 + 2/3) / 3 = 59/90
    out = class_figures(frame(SIX), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert list(out.index[len(CELL_KEY):]) == list(CLASS_COLUMNS)  # after the five cell-key columns
    assert out["n_units_3class"] == 6 and out["n_pairs_3class"] == 6
    assert out["A_3class"] == pytest.approx(2 / 3)
    assert out["macro_f1"] == pytest.approx(59 / 90)
    assert (out["precision_A"], out["recall_A"], out["f1_A"]) == pytest.approx((0.5, 0.5, 0.5))
    assert (out["precision_B"], out["recall_B"], out["f1_B"]) == pytest.approx((2 / 3, 1.0, 0.8))
    assert (out["precision_tie"], out["recall_tie"], out["f1_tie"]) == pytest.approx((1.0, 0.5, 2 / 3))
    assert (out["support_A"], out["support_B"], out["support_tie"]) == (2, 2, 2)
    # Wilson 95% for 4/6: centre (4/6 + 1.96^2/12) / (1 + 1.96^2/6) = 0.6016, half 0.3016
    assert out["A_3class_lo"] == pytest.approx(0.3000, abs=5e-4)
    assert out["A_3class_hi"] == pytest.approx(0.9032, abs=5e-4)


def test_modes_split_units_and_unparsed():
    rows = [*SIX,
            # pair 7 (gold A): AB reps A, A, B -> mode A (correct); BA reps A, B -> split: no prediction
            ("7", "AB", "A", "A", 0), ("7", "AB", "A", "A", 1), ("7", "AB", "B", "A", 2),
            ("7", "BA", "A", "A", 0), ("7", "BA", "B", "A", 1),
            # pair 8 (gold B): unparsed -> dropped (exclude) or a miss (wrong)
            ("8", "AB", None, "B", 0),
            # pair 9: no label -> not in the 3-class figures at all
            ("9", "AB", "A", None, 0)]
    out = class_figures(frame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    # 8 labelled units: A row gains A (+1) and no-prediction (+1); accuracy 5/8
    # A: P = 2/3, R = 2/4, F1 = 2 (2/3)(1/2) / (7/6) = 4/7; B 4/5; tie 2/3
    # macro = (4/7 + 4/5 + 2/3) / 3 = 214/315
    assert out["n_units_3class"] == 8 and out["n_no_prediction"] == 1 and out["n_pairs_3class"] == 7
    assert out["A_3class"] == pytest.approx(5 / 8)
    assert out["macro_f1"] == pytest.approx(214 / 315)
    wrong = class_figures(frame(rows), policy=FigurePolicy(n_bootstrap=0, unparsed="wrong")).iloc[0]
    # pair 8 now a unit with no prediction: B support 3, recall 2/3, precision 2/3 -> F1 2/3
    # accuracy 5/9; macro = (4/7 + 2/3 + 2/3) / 3 = (12 + 14 + 14) / 63 = 40/63
    assert wrong["n_units_3class"] == 9 and wrong["n_no_prediction"] == 2
    assert wrong["A_3class"] == pytest.approx(5 / 9)
    assert wrong["macro_f1"] == pytest.approx(40 / 63)
    assert wrong["unparsed_policy"] == "wrong"


def test_absent_class_and_empty_cell():
    # no tie anywhere: macro over A and B only.  A: P 1, R 1/2, F1 2/3; B: P 1/2, R 1, F1 2/3
    rows = [("1", "AB", "A", "A", 0), ("2", "AB", "B", "A", 0), ("3", "AB", "B", "B", 0)]
    out = class_figures(frame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert out["macro_f1"] == pytest.approx(2 / 3)
    assert math.isnan(out["f1_tie"]) and out["support_tie"] == 0
    unlabelled = class_figures(frame([("1", "AB", "A", None, 0)]), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert unlabelled["n_units_3class"] == 0
    assert math.isnan(unlabelled["A_3class"]) and math.isnan(unlabelled["macro_f1"])


def test_zero_division_keyword():
    # class B predicted but never labelled: recall undefined -> zero_division; F1 then 0 either way
    conf = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    s = per_class_scores(conf, zero_division=0.0)
    assert s["recall"][1] == 0.0 and s["present"].tolist() == [True, True, False]
    assert macro_f1_score(conf) == pytest.approx((2 / 3 + 0.0) / 2)
    assert per_class_scores(conf, zero_division=1.0)["recall"][1] == 1.0


def test_agrees_with_sklearn_macro_f1():
    sk = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(3)
    gold = rng.choice(["A", "B", "tie"], size=300, p=[0.45, 0.4, 0.15])
    pred = np.where(rng.random(300) < 0.7, gold, rng.choice(["A", "B", "tie"], size=300))
    rows = [(str(i), "AB", str(p), str(g), 0) for i, (g, p) in enumerate(zip(gold, pred, strict=True))]
    out = class_figures(frame(rows), policy=FigurePolicy(n_bootstrap=200, seed=1)).iloc[0]
    assert out["A_3class"] == pytest.approx(sk.accuracy_score(gold, pred))
    assert out["macro_f1"] == pytest.approx(sk.f1_score(gold, pred, average="macro"))
    p, r, _, _ = sk.precision_recall_fscore_support(gold, pred, labels=["A", "B", "tie"])
    assert [out["precision_A"], out["precision_B"], out["precision_tie"]] == pytest.approx(list(p))
    assert [out["recall_A"], out["recall_B"], out["recall_tie"]] == pytest.approx(list(r))
    assert out["macro_f1_lo"] < out["macro_f1"] < out["macro_f1_hi"]
    assert out["macro_f1_hi"] - out["macro_f1_lo"] < 0.25


def test_bootstrap_moves_pairs_with_both_orders():
    # every pair has two units that are either both right or both wrong; a resample keeps that
    rows = []
    for i in range(40):
        v = "A" if i % 4 else "B"
        rows += [(str(i), "AB", v, "A", 0), (str(i), "BA", v, "A", 0)]
    rows += [(f"b{i}", o, "B", "B", 0) for i in range(10) for o in ("AB", "BA")]
    out = class_figures(frame(rows), policy=FigurePolicy(n_bootstrap=300, seed=0)).iloc[0]
    assert out["n_units_3class"] == 100 and out["n_pairs_3class"] == 50
    assert out["macro_f1_lo"] <= out["macro_f1"] <= out["macro_f1_hi"]


def test_cells_are_separate():
    a = frame(SIX)
    b = frame(SIX).assign(judge="k", verdict=[r[3] for r in SIX])   # judge k is always right
    out = class_figures(pd.concat([a, b]), policy=FigurePolicy(n_bootstrap=0)).set_index("judge")
    assert out.loc["j", "macro_f1"] == pytest.approx(59 / 90)
    assert out.loc["k", "macro_f1"] == pytest.approx(1.0) and out.loc["k", "A_3class"] == 1.0


def test_registered_as_report_cell_columns():
    from verdictlab.analyses import AnalysisInput, registered_cell_columns

    reg = {c.name: c for c in registered_cell_columns()}
    assert {"A_3class", "macro_f1"} <= set(reg["classes"].columns)
    for unparsed in ("exclude", "wrong"):
        inp = AnalysisInput(frame(SIX), policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0))
        got = reg["classes"].fn(inp)
        want = class_figures(frame(SIX), policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0))
        assert got is not None
        assert got["macro_f1"].tolist() == pytest.approx(want["macro_f1"].tolist())
        assert "confidence" not in got.columns


def test_cell_columns_split_by_decoding():
    """Free and constrained cells of one protocol get their own A_3class / macro_f1 (H17's report)."""
    from verdictlab.analyses import AnalysisInput, registered_cell_columns

    free = frame(SIX).assign(decoding="free")
    constrained = frame(SIX).assign(decoding="constrained", verdict=[r[3] for r in SIX])   # always right
    fn = {c.name: c for c in registered_cell_columns()}["classes"].fn
    got = fn(AnalysisInput(pd.concat([free, constrained], ignore_index=True), policy=FigurePolicy(n_bootstrap=0)))
    assert got is not None
    got = got.set_index("decoding")
    assert got.loc["free", "macro_f1"] == pytest.approx(59 / 90)
    assert got.loc["constrained", "macro_f1"] == pytest.approx(1.0)


def test_bootstrap_counts_equal_the_resample_draws():
    # The resample weights (how often each pair is drawn) are one bincount; every resample's F1 must equal
    # the one computed from the same draws counted one by one (np.add.at, the earlier code): 3 pairs
    # (pair 0: units (A,A) and (B,B); pair 1: (B,B); pair 2: (tie,tie) and (A,tie)), 7 resamples.
    from verdictlab.stats.classes import _bootstrap_f1

    pair = np.array([0, 0, 1, 2, 2])
    conf_idx = np.array([0, 5, 5, 10, 3])          # g * 4 + p for K = 3 classes
    got = _bootstrap_f1(pair, conf_idx, n_bootstrap=7, rng=np.random.default_rng(5), zero_division=0.0)
    rng = np.random.default_rng(5)
    draws = rng.integers(0, 3, size=(7, 3))
    weights = np.zeros((7, 3))
    np.add.at(weights, (np.repeat(np.arange(7), 3), draws.ravel()), 1.0)
    per_pair = np.bincount(np.array([0, 0, 1, 2, 2]) * 12 + conf_idx, minlength=36).reshape(3, 12)
    want = macro_f1_score((weights @ per_pair).reshape(7, 3, 4), zero_division=0.0)
    assert np.array_equal(got, want)


def test_kinds_of_pairs_hand_value():
    # rows read as base-3 digits (largest count 2): [0, 2] -> 6, [1, 0] -> 1, [0, 2] -> 6;
    # distinct numbers 1, 6 -> kinds [[1, 0], [0, 2]], the rows are kinds 1, 0, 1
    from verdictlab.stats.classes import _kinds

    kinds, kind_of = _kinds(np.array([[0, 2], [1, 0], [0, 2]]))
    assert kinds.tolist() == [[1, 0], [0, 2]] and kind_of.tolist() == [1, 0, 1]
    # counts too large to read as one integer (101 ** 12 > 2 ** 62): the row-wise unique, same partition
    big = np.zeros((3, 12), dtype=np.int64)
    big[0, 0] = big[2, 0] = 100
    kinds, kind_of = _kinds(big)
    assert kinds.tolist() == [[0] * 12, [100] + [0] * 11] and kind_of.tolist() == [1, 0, 1]


def test_bootstrap_by_kinds_equals_the_pair_weights_over_several_chunks():
    """2,500 pairs (resamples drawn in chunks of 2,000,000 // 2,500 = 800) of a few kinds: every
    resample's F1 equals the one from the per-pair resample weights (the earlier weights @ per_pair)
    on the same draws, chunk by chunk."""
    from verdictlab.stats.classes import _bootstrap_f1

    rng = np.random.default_rng(9)
    n_pairs, n_boot = 2500, 1000
    gold = rng.integers(0, 3, n_pairs)
    pair = np.repeat(np.arange(n_pairs), 2)
    conf_idx = np.repeat(gold, 2) * 4 + rng.integers(0, 4, 2 * n_pairs)
    got = _bootstrap_f1(pair, conf_idx, n_bootstrap=n_boot, rng=np.random.default_rng(1), zero_division=0.0)
    per_pair = np.bincount(pair * 12 + conf_idx, minlength=n_pairs * 12).reshape(n_pairs, 12)
    draw = np.random.default_rng(1)
    want = []
    for b in (800, 200):
        draws = draw.integers(0, n_pairs, size=(b, n_pairs))
        weights = np.bincount((draws + (np.arange(b) * n_pairs)[:, None]).ravel(),
                              minlength=b * n_pairs).reshape(b, n_pairs).astype(float)
        want.append(macro_f1_score((weights @ per_pair).reshape(b, 3, 4), zero_division=0.0))
    assert np.array_equal(got, np.concatenate(want))
