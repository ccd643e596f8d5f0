"""Known values of the grader figures, worked by hand (the working in the comments)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats.cost import pareto_front
from verdictlab.stats.graders import (
    SPLIT_GRADE,
    UNPARSED_GRADE,
    grade_kind,
    grader_agreement,
    grader_trust,
    item_grades,
    level_calibration,
    perturbation_effects,
)


def _grades(unparsed: str) -> pd.DataFrame:
    f = pd.DataFrame({"item_id": ["a", "a", "a", "b", "b", "c", "c"],
                      "grade": ["1", "1", "2", "2", None, "1", "2"]})
    return item_grades(f, unit=["item_id"], policy=FigurePolicy(unparsed=unparsed)).set_index("item_id")


def test_item_grades_modal_consistency_and_policy():
    g = _grades("exclude")
    # a: 1,1,2 -> mode 1 (2 of 3), not consistent; b: 2 + unparsed -> one counted grade, C undefined;
    # c: 1,2 -> a split mode is no grade
    assert (g.loc["a", "grade"], g.loc["a", "consistent"], g.loc["a", "mode_share"]) == ("1", 0.0, pytest.approx(2 / 3))
    assert (g.loc["b", "grade"], g.loc["b", "n_reps"], g.loc["b", "n_unparsed"]) == ("2", 1, 1)
    assert math.isnan(g.loc["b", "consistent"])
    assert g.loc["c", "grade"] == SPLIT_GRADE and bool(g.loc["c", "split"])
    w = _grades("wrong")
    # under "wrong" b is 2 + unparsed: two values, split, inconsistent
    assert w.loc["b", "grade"] == SPLIT_GRADE and w.loc["b", "consistent"] == 0.0 and w.loc["b", "n_reps"] == 2


def test_binary_agreement_by_hand():
    labels = ["PASS"] * 3 + ["FAIL"] * 3
    grades = ["PASS", "PASS", "FAIL", "FAIL", "FAIL", "PASS"]
    r = grader_agreement(labels, grades, n_bootstrap=200)
    # 4 of 6 right; Wilson 95% for 4/6: centre (2/3 + z^2/12)/(1 + z^2/6) = 0.6016, half 0.3016 -> [0.300, 0.903]
    assert (r.kind, r.n, r.accuracy) == ("binary", 6, pytest.approx(4 / 6))
    assert (r.accuracy_lo, r.accuracy_hi) == (pytest.approx(0.3000, abs=5e-4), pytest.approx(0.9032, abs=5e-4))
    # p_o = 4/6, p_e = 1/2 * 1/2 + 1/2 * 1/2 = 1/2 -> kappa = (2/3 - 1/2) / (1/2) = 1/3
    assert r.kappa == pytest.approx(1 / 3)
    assert r.kappa_lo <= r.kappa <= r.kappa_hi
    assert math.isnan(r.mae) and math.isnan(r.kappa_quadratic)      # ordinal figures only on ordinal scales


def test_ordinal_agreement_by_hand():
    r = grader_agreement(["1", "2", "3", "4"], ["1", "3", "3", "2"], scale=["1", "2", "3", "4"], n_bootstrap=300)
    assert r.kind == "ordinal" and r.accuracy == 0.5
    # MAE = (0 + 1 + 0 + 2) / 4
    assert r.mae == pytest.approx(0.75)
    # ranks 1,2,3,4 vs 1,3.5,3.5,2: cov = 2.25 - .5 + .5 - .75 = 1.5, var 5 and 4.5 -> 1.5 / sqrt(22.5)
    assert r.spearman == pytest.approx(1.5 / math.sqrt(22.5))
    # quadratic: observed (2->3: 1) + (4->2: 4) = 5 / 4 = 1.25; expected .25 * (.25*14 + .25*6 + .5*6) = 2
    assert r.kappa_quadratic == pytest.approx(1 - 1.25 / 2)
    # plain: p_o = .5, p_e = .25 * (.25 + .25 + .5 + 0) = .25 -> (.5 - .25) / .75
    assert r.kappa == pytest.approx(1 / 3)
    sk = pytest.importorskip("sklearn.metrics")
    assert r.kappa_quadratic == pytest.approx(sk.cohen_kappa_score([1, 2, 3, 4], [1, 3, 3, 2], weights="quadratic"))
    assert r.mae_lo <= r.mae <= r.mae_hi


def test_unparsed_wrong_counts_in_accuracy_not_in_mae():
    r = grader_agreement(["1", "2", "3"], ["1", UNPARSED_GRADE, None], scale=["1", "2", "3"], n_bootstrap=0)
    # None (excluded) leaves item 3 out; the unparsed grade is kept and wrong: 1 of 2 right
    assert (r.n, r.accuracy, r.n_unparsed, r.n_graded) == (2, 0.5, 2, 1)
    assert r.mae == 0.0


def test_grade_kind():
    assert grade_kind(["PASS", "FAIL"]) == "binary"
    assert grade_kind(["0", "1", "2"]) == "ordinal"
    assert grade_kind(["good", "bad", "ugly"]) == "nominal"


def test_level_calibration_by_hand():
    t = level_calibration(["1", "1", "2", "2", "3"], ["1", "2", "2", "3", None], scale=["1", "2", "3"]).set_index("level")
    assert t.loc["1", ["n", "n_graded", "mean_grade", "exact", "above", "below"]].tolist() == [2, 2, 1.5, 0.5, 0.5, 0.0]
    assert (t.loc["1", "graded_1"], t.loc["1", "graded_2"], t.loc["1", "graded_3"]) == (1, 1, 0)
    assert t.loc["2", ["mean_grade", "exact", "above"]].tolist() == [2.5, 0.5, 0.5]
    assert t.loc["3", "n"] == 1 and math.isnan(t.loc["3", "exact"])


def test_perturbation_effects_by_hand():
    P, F = "PASS", "FAIL"
    kind = ["format.whitespace"] * 4 + ["label_flip"] * 4 + ["verbosity.pad"] * 6
    klass = ["preserving"] * 4 + ["changing"] * 4 + ["preserving"] * 6
    gs = [P, P, F, None] + [P, P, F, F] + [P] * 6
    gp = [P, F, F, P] + [F, P, P, F] + [F] * 6
    ls = [P, P, F, F] + [P, P, F, P] + [P] * 6
    lp = [P, P, F, F] + [F, F, P, F] + [P] * 6
    t = perturbation_effects(kind, klass, gs, gp, ls, lp).set_index("kind")
    ws = t.loc["format.whitespace"]
    # 3 graded units, 2 keep their grade; correctness source TTT vs perturbed TFT: b = 1, c = 0 -> p = 1
    assert (ws["n_counted"], ws["n_kept"], ws["n_ungraded"], ws["rate"]) == (3, 2, 1, pytest.approx(2 / 3))
    assert (ws["only_source_right"], ws["only_perturbed_right"], ws["p_mcnemar"]) == (1, 0, 1.0)
    lf = t.loc["label_flip"]
    # source right on units 0-2 (counted), perturbed right on 0 and 2 -> 2/3; unit 3's source wrong
    assert (lf["n_counted"], lf["n_kept"], lf["n_source_wrong"], lf["rate"]) == (3, 2, 1, pytest.approx(2 / 3))
    assert (lf["only_source_right"], lf["only_perturbed_right"]) == (1, 1)
    vp = t.loc["verbosity.pad"]
    # every unit right on the source, wrong padded: b = 6, c = 0 -> p = 2 * 0.5^6 = 0.03125; Holm over 3 kinds x3
    assert (vp["rate"], vp["p_mcnemar"], vp["p_holm"]) == (0.0, pytest.approx(0.03125), pytest.approx(0.09375))
    assert vp["rate_lo"] == 0.0 and vp["rate_hi"] > 0


def test_grader_trust_by_hand():
    args = dict(consistent=[1, 1, 0, 1], correct=[1, 0, 1, 1], n_preserving=[1, 1, 1, 1], n_changed=[0, 1, 0, 0],
                invariant=[1, 0, 1, 1])
    r = grader_trust(q_sum=[0, 0.5, 0, 0], binary=True, n_bootstrap=300, **args)
    # C = 3/4, A = 3/4, iota = 1/4, q = 1/2 -> T = 3/4 * (3/4 - 1/8) = 0.46875
    assert (r.C, r.A, r.iota, r.q, r.T) == (0.75, 0.75, 0.25, 0.5, pytest.approx(0.46875))
    # joint per item: 1*1*1, 1*0*0, 0*1*1, 1*1*1 -> 2/4
    assert r.T_joint == 0.5 and r.T_bound == pytest.approx(0.5625) and r.reason == ""
    assert r.T_lo <= r.T <= r.T_hi
    # ordinal: q is measured -- the changed unit was wrong both times -> q = 0, T = C * A
    o = grader_trust(q_sum=[0, 0, 0, 0], binary=False, n_bootstrap=0, **args)
    assert o.q == 0.0 and math.isnan(o.T_lo)
    assert math.isclose(o.T, 0.5625)


def test_grader_trust_reasons():
    r = grader_trust([np.nan] * 2, [1, 0], [1, 1], [0, 0], [0, 0], [1, 1], binary=True, n_bootstrap=0)
    assert r.reason == "no repetitions" and math.isnan(r.T) and r.T_bound == 0.5     # C unmeasured: taken as 1
    r = grader_trust([1, 1], [np.nan] * 2, [1, 1], [0, 0], [0, 0], [1, 1], binary=True, n_bootstrap=0)
    assert r.reason == "no human labels" and math.isnan(r.T_bound)
    r = grader_trust([1, 0], [1, 1], [0, 0], [0, 0], [0, 0], [np.nan] * 2, binary=True, n_bootstrap=0)
    assert r.reason == "no meaning-preserving perturbations" and r.T_bound == 0.5 and math.isnan(r.T_joint)


def test_pareto_front():
    # (1, .5) cheapest; (2, .7) best of cost 2; (2, .6) and (3, .7) dominated by (2, .7); NaN never on it
    assert pareto_front([1, 2, 2, 3, np.nan], [0.5, 0.7, 0.6, 0.7, 0.9]).tolist() == [True, True, False, False, False]
    assert pareto_front([1, 1], [0.5, 0.5]).tolist() == [True, True]      # equal points dominate neither
