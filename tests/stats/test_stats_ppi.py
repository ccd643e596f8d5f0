"""PPI / PPI++ mean estimates and label budgets: hand values, the reference package, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verdictlab.stats.ppi import MIN_LABELLED, classical_mean, judge_mean, label_budget, ppi_mean

Z95 = 1.959963984540054

# 10 labelled items: humans prefer A on the first five; the judge agrees on 8 of 10.
Y = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0], float)
YHAT = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 1], float)
# 10 unlabelled items, the judge says A on 6.
YHAT_U = np.array([1] * 6 + [0] * 4, float)


def test_classic_ppi_by_hand() -> None:
    # lam = 1: value = mean(yhat_u) + mean(y - yhat) = 0.6 + (1 - 1)/10 = 0.6
    # var = var(yhat_u)/N + var(y - yhat)/n = 0.6*0.4/10 + (2/10 - 0^2)/10 = 0.024 + 0.02 = 0.044
    # ess = var(y)/var = 0.25/0.044 = 5.6818
    est = ppi_mean(Y, YHAT, YHAT_U, power_tuning=False)
    assert est.method == "ppi" and est.lam == 1.0 and est.reason is None
    assert est.value == pytest.approx(0.6)
    half = Z95 * math.sqrt(0.044)
    assert (est.lo, est.hi) == pytest.approx((0.6 - half, 0.6 + half))
    assert est.ess == pytest.approx(0.25 / 0.044)
    assert (est.n_labelled, est.n_unlabelled) == (10, 10)


def test_ppi_plus_plus_by_hand() -> None:
    # cov(y, yhat) (ddof 0): 8 agreeing items give +0.25, 2 disagreeing -0.25 -> 1.5/10 = 0.15
    # pooled yhat: 11 ones in 20 -> var (ddof 1) = 20*0.55*0.45/19 = 4.95/19
    # lam = 0.15 / ((1 + 10/10) * 4.95/19) = 2.85/9.9 = 57/198 = 0.287878...
    lam = 57 / 198
    # value = lam*0.6 + mean(y) - lam*mean(yhat) = 0.5 + lam*0.1 = 0.528788
    # var = lam^2*0.24/10 + (var(y) + lam^2 var(yhat) - 2 lam cov)/10
    #     = lam^2*0.024 + (0.25 + 0.25 lam^2 - 0.3 lam)/10 = 0.0019890 + 0.0184355 = 0.0204245
    var = lam**2 * 0.024 + (0.25 + 0.25 * lam**2 - 0.3 * lam) / 10
    est = ppi_mean(Y, YHAT, YHAT_U)
    assert est.method == "ppi++"
    assert est.lam == pytest.approx(lam)
    assert est.value == pytest.approx(0.5 + lam * 0.1)
    assert est.halfwidth == pytest.approx(Z95 * math.sqrt(var))
    assert est.ess == pytest.approx(0.25 / var)  # 12.24 > 10 labels: the judge is worth ~2 labels here
    human = classical_mean(Y)
    # human-only: 0.5 +- z * 0.5/sqrt(10) = 0.5 +- 0.3099
    assert human.halfwidth == pytest.approx(Z95 * 0.5 / math.sqrt(10))
    assert est.halfwidth is not None and human.halfwidth is not None
    assert est.halfwidth < human.halfwidth


def test_judge_only_mean() -> None:
    est = judge_mean(np.concatenate([YHAT, YHAT_U]))  # 11/20 with sd sqrt(.55*.45)
    assert est.value == pytest.approx(0.55)
    assert est.halfwidth == pytest.approx(Z95 * math.sqrt(0.55 * 0.45 / 20))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("soft", [False, True])
def test_matches_ppi_py(seed: int, soft: bool) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(seed)
    n, big_n = 80, 1500
    truth = rng.random(n + big_n) < 0.62
    p = np.clip(np.where(truth, 0.75, 0.3) + rng.normal(0, 0.15, n + big_n), 0, 1)
    yhat_all = p if soft else (p > 0.5).astype(float)
    y, f, fu = truth[:n].astype(float), yhat_all[:n], yhat_all[n:]
    for tuning in (True, False):
        est = ppi_mean(y, f, fu, confidence=0.9, power_tuning=tuning)
        lam = None if tuning else 1
        ref_value = float(np.squeeze(ppi_py.ppi_mean_pointestimate(y, f, fu, lam=lam)))
        lo, hi = ppi_py.ppi_mean_ci(y, f, fu, alpha=0.1, lam=lam)
        assert est.value == pytest.approx(ref_value, abs=1e-6)
        assert est.lo == pytest.approx(float(np.squeeze(lo)), abs=1e-6)
        assert est.hi == pytest.approx(float(np.squeeze(hi)), abs=1e-6)
    cl = classical_mean(y, confidence=0.9)
    lo, hi = ppi_py.classical_mean_ci(y, alpha=0.1)
    assert (cl.lo, cl.hi) == pytest.approx((float(np.squeeze(lo)), float(np.squeeze(hi))), abs=1e-6)


def test_ppi_plus_plus_never_much_wider_than_human_only() -> None:
    # a useless judge (predictions independent of the label): lam ~ 0, width ~ human-only
    rng = np.random.default_rng(3)
    y = (rng.random(200) < 0.5).astype(float)
    est = ppi_mean(y, rng.random(200), rng.random(2000))
    assert est.lam is not None and est.lam < 0.2
    hw_ppi, hw_human = est.halfwidth, classical_mean(y).halfwidth
    assert hw_ppi is not None and hw_human is not None
    assert hw_ppi <= hw_human * 1.02


def test_edge_cases_give_none_with_reason() -> None:
    few = ppi_mean(Y[:MIN_LABELLED - 1], YHAT[:MIN_LABELLED - 1], YHAT_U)
    assert few.value is None and few.lo is None and f"at least {MIN_LABELLED}" in str(few.reason)
    one_class = ppi_mean(np.ones(12), np.r_[np.ones(10), np.zeros(2)], YHAT_U)
    assert one_class.value is None and "all 1" in str(one_class.reason)
    assert classical_mean(np.zeros(15)).value is None
    constant = ppi_mean(Y, np.ones(10), np.ones(5))
    assert constant.value is None and "no information" in str(constant.reason)
    no_unlabelled = ppi_mean(Y, YHAT, np.array([]))
    assert no_unlabelled.value is None and "unlabelled" in str(no_unlabelled.reason)
    with pytest.raises(ValueError, match="same length"):
        ppi_mean(Y, YHAT[:5], YHAT_U)
    with pytest.raises(ValueError, match="NaN"):
        ppi_mean(np.r_[Y[:-1], np.nan], YHAT, YHAT_U)


# ---- label budget ---------------------------------------------------------------------------------


def test_budget_human_only_by_hand() -> None:
    # var(y) = 0.25, h = 0.05, z = 1.96: n = z^2 * 0.25 / 0.0025 = 384.15 -> 385
    b = label_budget(Y, YHAT, YHAT_U, halfwidth=0.05)
    assert b.human_only == 385
    # PPI++ (lam for each n): never more than human-only
    assert b.ppi is not None and b.ppi <= 385


def test_budget_neyman_by_hand() -> None:
    # pilot: 10 items at judge confidence 0.1 (1 of them A), 10 at 0.9 (5 A); pool: 50 + 50 items.
    # Quantile strata of the pooled predictions: 4 and 3 strata leave empty ones, 2 strata split at 0.5.
    # Within a stratum the prediction is constant, so s_k = sd(y_k): sqrt(0.1*0.9) = 0.3, sqrt(0.25) = 0.5;
    # W = (0.5, 0.5); sum W s = 0.4; target var = (0.05/1.96)^2 = 6.5078e-4
    # n = ceil(0.16 / 6.5078e-4) = ceil(245.86) = 246; n_k = 246 * W_k s_k / 0.4 = 92.25 -> 93, 153.75 -> 154
    # humans only: var(y) = 0.3*0.7 = 0.21 -> ceil(0.21 / 6.5078e-4) = ceil(322.69) = 323
    y = np.r_[1, np.zeros(9), np.ones(5), np.zeros(5)]
    f = np.r_[np.full(10, 0.1), np.full(10, 0.9)]
    fu = np.r_[np.full(50, 0.1), np.full(50, 0.9)]
    b = label_budget(y, f, fu, halfwidth=0.05)
    assert b.strata_edges == (0.5,)
    assert b.allocation == (93, 154) and b.ppi_stratified == 247
    assert b.human_only == 323
    # every count exceeds the 100-item pool: said, not hidden
    assert sum("more than the pool's 100 items" in r for r in b.reasons) == 3


def test_budget_ppi_and_neyman_with_a_good_judge() -> None:
    rng = np.random.default_rng(7)
    n, big_n = 300, 20000
    truth = rng.random(n + big_n) < 0.6
    # confident and mostly right on 70% of items, unsure on the rest
    easy = rng.random(n + big_n) < 0.7
    p = np.where(easy, np.where(truth, 0.97, 0.03), 0.5 + rng.normal(0, 0.1, n + big_n))
    p = np.clip(p, 0, 1)
    b = label_budget(truth[:n].astype(float), p[:n], p[n:], halfwidth=0.03)
    assert b.human_only is not None and b.ppi is not None and b.ppi_stratified is not None
    # PPI++ residual variance var(y)(1 - rho^2) is well below var(y): far fewer labels
    assert b.ppi < 0.6 * b.human_only
    # Neyman puts labels where the judge is unsure: the middle strata get most of them
    assert b.allocation is not None and b.strata_edges is not None
    assert b.ppi_stratified <= b.ppi * 1.1
    # check the achieved variance of the PPI++ plan equals the target (within one label)
    y, f, fu = truth[:n].astype(float), p[:n], p[n:]
    var_y, cov, var_f = y.var(), np.mean((y - y.mean()) * (f - f.mean())), np.r_[f, fu].var()

    def var_at(m: float) -> float:
        lam = min(max(cov / ((1 + m / big_n) * var_f), 0), 1)
        return lam**2 * var_f / big_n + (var_y - 2 * lam * cov + lam**2 * var_f) / m

    assert Z95 * math.sqrt(var_at(b.ppi)) <= 0.03 < Z95 * math.sqrt(var_at(b.ppi - 1))


def test_budget_edge_cases() -> None:
    b = label_budget(np.ones(20), np.ones(20), np.ones(50), halfwidth=0.03)
    assert b.human_only is None and b.ppi is None and "all 1" in b.reasons[0]
    b = label_budget(Y[:5], YHAT[:5], YHAT_U, halfwidth=0.03)
    assert b.human_only is None and f"at least {MIN_LABELLED}" in b.reasons[0]
    b = label_budget(Y, np.full(10, 0.7), np.full(30, 0.7), halfwidth=0.05)
    assert b.human_only == 385 and b.ppi is None and any("constant" in r for r in b.reasons)
    with pytest.raises(ValueError):
        label_budget(Y, YHAT, YHAT_U, halfwidth=0)


def test_ppi_plus_plus_coverage_and_gain_in_simulation() -> None:
    """500 replicates, 100 labels + 2000 unlabelled items, a judge right ~80% of the time: the 90%
    PPI++ interval covers the true win rate in ~90% of replicates (>= 86%) and is narrower than the
    human-only interval on average."""
    rng = np.random.default_rng(5)
    reps, n, big_n, truth_rate = 500, 100, 2000, 0.62
    covered, ratio = 0, []
    for _ in range(reps):
        y_all = (rng.random(n + big_n) < truth_rate).astype(float)
        right = rng.random(n + big_n) < 0.8
        f_all = np.where(right, y_all, 1 - y_all)
        est = ppi_mean(y_all[:n], f_all[:n], f_all[n:], confidence=0.9)
        assert est.lo is not None and est.hi is not None and est.halfwidth is not None
        covered += int(est.lo <= truth_rate <= est.hi)
        hw = classical_mean(y_all[:n], confidence=0.9).halfwidth
        assert hw is not None
        ratio.append(est.halfwidth / hw)
    assert covered / reps >= 0.86
    assert float(np.mean(ratio)) < 0.9


def test_budget_from_the_pool_size_alone() -> None:
    # only N given: the pool is the pilot's predictions repeated (10 -> 100 = ten copies), so the figures
    # equal those of an explicit pool of ten copies, and a reason says it was assumed
    b_n = label_budget(Y, YHAT, 100, halfwidth=0.05)
    b_pool = label_budget(Y, YHAT, np.tile(YHAT, 10), halfwidth=0.05)
    assert (b_n.human_only, b_n.ppi, b_n.ppi_stratified) == (b_pool.human_only, b_pool.ppi, b_pool.ppi_stratified)
    assert b_n.n_unlabelled == 100 and any("assumed" in r for r in b_n.reasons)
    with pytest.raises(ValueError, match=">= 0"):
        label_budget(Y, YHAT, -1, halfwidth=0.05)


def test_worst_case_labels_and_the_smallest_halfwidth_they_reach() -> None:
    """n = z^2 / (4 h^2) at a share of 1/2: h = 0.05 at 95% -> 1.959964^2 / 0.01 = 384.146 labels; and back,
    384 labels reach h = 1.959964 / (2 * 19.59592) = 1.959964 / 39.19184 = 0.0500095, 0.05001 rounded up."""
    from verdictlab.stats import smallest_halfwidth, worst_case_labels

    assert worst_case_labels(0.05) == pytest.approx(384.146, abs=1e-3)
    assert smallest_halfwidth(384) == pytest.approx(0.0500095, abs=1e-7)
    assert smallest_halfwidth(384, decimals=5) == 0.05001
    assert worst_case_labels(smallest_halfwidth(384, decimals=5)) <= 384
