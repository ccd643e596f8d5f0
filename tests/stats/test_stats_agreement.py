"""Agreement statistics: hand-worked values, seed 001 published values, properties, cross-checks."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from verdictlab.stats import (
    cohen_kappa,
    disagreement_counts,
    exact_match,
    kappa_deflation,
    krippendorff_alpha,
)

# seed 001: 20 transcripts, a person's labels and two judges
HUMAN = ["pass"] * 16 + ["fail"] * 4
LAZY = ["pass"] * 20
GOOD = ["pass"] * 15 + ["fail"] + ["fail"] * 3 + ["pass"]


def test_seed001_lazy_judge() -> None:
    # p_o = 16/20 = 0.8; p_e = (16*20 + 4*0)/400 = 0.8 -> kappa = 0/0.2 = 0
    # the lazy judge passes the 4 the human failed: 4 / 0 disagreements
    assert exact_match(HUMAN, LAZY).value == pytest.approx(0.8)
    k = cohen_kappa(HUMAN, LAZY)
    assert k.value == pytest.approx(0.0, abs=1e-12) and k.n == 20
    d = disagreement_counts(HUMAN, LAZY, positive="pass")
    assert (d.judge_passed_human_failed, d.judge_failed_human_passed) == (4, 0)


def test_seed001_good_judge() -> None:
    # p_o = 18/20 = 0.9; judge 16 pass / 4 fail, human 16 / 4 -> p_e = (16*16 + 4*4)/400 = 0.68
    # kappa = (0.9 - 0.68) / (1 - 0.68) = 0.22/0.32 = 0.6875 (published, rounded: 0.688)
    assert exact_match(HUMAN, GOOD).value == pytest.approx(0.9)
    assert round(cohen_kappa(HUMAN, GOOD).value, 3) == 0.688
    assert cohen_kappa(HUMAN, GOOD).value == pytest.approx(0.6875)
    d = disagreement_counts(HUMAN, GOOD)  # positive "pass" inferred from the pass/fail labels
    assert d.positive == "pass"
    assert (d.judge_passed_human_failed, d.judge_failed_human_passed) == (1, 1)
    assert d.by_pair == {("fail", "pass"): 1, ("pass", "fail"): 1}
    # deflation: 0.9 - 0.6875
    assert kappa_deflation(HUMAN, GOOD).value == pytest.approx(0.2125)


def test_exact_match_tie_excluded_and_missing() -> None:
    # items: (A,A) ok, (B,A) no, (tie,B) excluded (label tie), (A,None) missing, (B,tie) judge tie: no
    # -> 1 of 3 counted items match
    em = exact_match(["A", "B", "tie", "A", "B"], ["A", "A", "B", None, "tie"])
    assert (em.value, em.n, em.n_excluded_ties, em.n_missing) == (pytest.approx(1 / 3), 3, 1, 1)
    assert np.isnan(exact_match([], []).value)
    assert exact_match([], [], zero_division=0.0).value == 0.0


def test_pairwise_disagreement_counts() -> None:
    # human A / judge B twice, human B / judge A once, one agreement
    d = disagreement_counts(["A", "A", "B", "B"], ["B", "B", "A", "B"], positive="A")
    assert d.by_pair == {("A", "B"): 2, ("B", "A"): 1}
    assert (d.n, d.n_agree, d.n_disagree) == (4, 1, 3)
    assert (d.judge_passed_human_failed, d.judge_failed_human_passed) == (1, 2)


def test_kappa_undefined_case() -> None:
    # both raters constant and equal: p_e = 1 -> undefined
    assert np.isnan(cohen_kappa(["A"] * 5, ["A"] * 5).value)
    assert cohen_kappa(["A"] * 5, ["A"] * 5, zero_division=1.0).value == 1.0


def test_alpha_nominal_by_hand() -> None:
    # 2 raters x 4 units: (a,a) (a,b) (b,b) (b,a).  Coincidences: o_aa = 2, o_bb = 2, o_ab = o_ba = 2
    # n_a = n_b = 4, n = 8.  D_o = 4/8 = 1/2; D_e = 2*4*4/(8*7) = 4/7; alpha = 1 - (1/2)/(4/7) = 1/8
    a = krippendorff_alpha([["a", "a", "b", "b"], ["a", "b", "b", "a"]])
    assert a.value == pytest.approx(0.125)
    assert (a.n_units, a.n_values) == (4, 8)
    assert a.d_observed == pytest.approx(0.5) and a.d_expected == pytest.approx(4 / 7)


def test_alpha_interval_by_hand() -> None:
    # units (1,2) (2,3) (3,3): o_12 = o_21 = o_23 = o_32 = 1, o_33 = 2; n_1=1, n_2=2, n_3=3, n=6
    # D_o = 4 * 1 / 6 = 2/3; D_e = 2 * (1*2*1 + 1*3*4 + 2*3*1) / (6*5) = 40/30 = 4/3; alpha = 1/2
    a = krippendorff_alpha([[1, 2, 3], [2, 3, 3]], level="interval")
    assert a.value == pytest.approx(0.5)


def test_alpha_ignores_unpairable_units_and_undefined() -> None:
    # unit 3 has one value only -> not pairable; a single value overall -> undefined
    a = krippendorff_alpha([["a", "b", None], ["a", "b", "a"]])
    assert a.n_units == 2
    assert np.isnan(krippendorff_alpha([["a", "a"], ["a", "a"]]).value)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_matches_krippendorff_package(level: str) -> None:
    rng = np.random.default_rng(11)
    for _ in range(5):
        data = rng.integers(1, 6, size=(4, 30)).astype(float)
        data[rng.random(data.shape) < 0.2] = np.nan
        ours = krippendorff_alpha(data, level=level).value
        ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert ours == pytest.approx(ref, abs=1e-9)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_matches_sklearn(weights: str | None) -> None:
    rng = np.random.default_rng(5)
    for _ in range(5):
        a = rng.integers(0, 3, 50)
        b = np.where(rng.random(50) < 0.6, a, rng.integers(0, 3, 50))
        ours = cohen_kappa(a, b, labels=[0, 1, 2], weights=weights).value
        assert ours == pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2], weights=weights), abs=1e-9)


# ---- properties over agreement functions (sklearn-style lists) -----------------------------------
SYMMETRIC = {
    "cohen_kappa": lambda a, b: cohen_kappa(a, b).value,
    "krippendorff_alpha": lambda a, b: krippendorff_alpha([a, b]).value,
    "exact_match(no tie exclusion)": lambda a, b: exact_match(a, b, exclude_ties=False).value,
}
ALL = {**SYMMETRIC, "exact_match": lambda a, b: exact_match(a, b).value,
       "kappa_deflation": lambda a, b: kappa_deflation(a, b).value}
CHANCE_CORRECTED = ["cohen_kappa", "krippendorff_alpha"]


def _labels(seed: int, n: int = 60) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    a = rng.choice(["A", "B", "tie"], n, p=[0.45, 0.45, 0.1])
    b = np.where(rng.random(n) < 0.7, a, rng.choice(["A", "B", "tie"], n))
    return list(a), list(b)


def test_every_agreement_function_is_in_the_property_lists() -> None:
    # sklearn-style guard: a new public function of the agreement module must join the lists
    import inspect

    import verdictlab.stats.agreement as mod

    public = {n for n in mod.__all__ if inspect.isfunction(getattr(mod, n))}
    not_pairwise = {"disagreement_counts", "test_retest", "retest_by_cell", "alpha_from_unit_counts"}  # tested apart
    listed = {k.split("(")[0] for k in ALL}
    assert public - not_pairwise == listed


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_symmetry(name: str) -> None:
    a, b = _labels(1)
    assert SYMMETRIC[name](a, b) == pytest.approx(SYMMETRIC[name](b, a), abs=1e-12)


@pytest.mark.parametrize("name", sorted(ALL))
def test_item_order_invariance(name: str) -> None:
    a, b = _labels(2)
    perm = np.random.default_rng(3).permutation(len(a))
    assert ALL[name](a, b) == pytest.approx(ALL[name]([a[i] for i in perm], [b[i] for i in perm]),
                                            abs=1e-12)


@pytest.mark.parametrize("name", sorted(SYMMETRIC))
def test_perfect_agreement_is_one(name: str) -> None:
    a, _ = _labels(4)
    assert SYMMETRIC[name](a, a) == pytest.approx(1.0)


@pytest.mark.parametrize("name", CHANCE_CORRECTED)
def test_chance_level_is_about_zero(name: str) -> None:
    rng = np.random.default_rng(9)
    a = list(rng.choice(["A", "B"], 20000))
    b = list(rng.choice(["A", "B"], 20000))
    assert abs(SYMMETRIC[name](a, b)) < 0.03


def test_cohen_kappa_of_integer_codes_is_that_of_their_objects() -> None:
    # the integer fast path (judge_agreements' codes) gives the object path's figures bit for bit
    rng = np.random.default_rng(7)
    for n, k in ((1, 1), (50, 3), (1000, 5), (997, 2)):
        a = rng.integers(0, k, size=n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k + 1, size=n))
        for x, y in ((a, b), (a.astype(np.int32) + 7, b.astype(np.int32) + 7), (a - 3, b - 3)):
            fast = cohen_kappa(x, y)
            slow = cohen_kappa(list(x), list(y))
            assert (fast.n, fast.n_missing) == (slow.n, slow.n_missing)
            for f in ("value", "p_observed", "p_expected"):
                assert np.array_equal(getattr(fast, f), getattr(slow, f), equal_nan=True)
