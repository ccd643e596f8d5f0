"""Intervals, bias, significance, juries, variance components, regions: hand values and cross-checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from verdictlab.stats import (
    bootstrap_interval,
    consistency_bias_paradox,
    failure_region,
    g_study,
    holm_adjust,
    jury_error_correlation,
    jury_majority_accuracy,
    jury_majority_accuracy_heterogeneous,
    kendall,
    mcnemar_exact,
    observed_majority_accuracy,
    position_bias,
    rank_shifts,
    shown_first_won_from_verdicts,
    spearman,
    verbosity_bias,
    wilson_interval,
)
from verdictlab.stats.variance import anova_eta_squared

# ---- intervals ---------------------------------------------------------------------------------


def test_wilson_by_hand_and_vs_statsmodels() -> None:
    # 8/10, z = 1.95996: denom = 1 + z^2/10 = 1.38415; centre = (0.8 + z^2/20)/denom = 0.71674
    # half = z/denom * sqrt(0.8*0.2/10 + z^2/400) = 1.41601 * 0.16001 = 0.22657 -> [0.4902, 0.9433]
    iv = wilson_interval(8, 10)
    assert (round(iv.low, 4), round(iv.high, 4)) == (0.4902, 0.9433)
    assert iv.n == 10 and iv.estimate == 0.8
    for k, n in [(0, 5), (5, 5), (37, 120), (1, 3)]:
        lo, hi = proportion_confint(k, n, alpha=0.1, method="wilson")
        iv = wilson_interval(k, n, confidence=0.9)
        assert (iv.low, iv.high) == pytest.approx((lo, hi), abs=1e-9)
    assert np.isnan(wilson_interval(0, 0).low)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_bootstrap_interval_resamples_pairs() -> None:
    # 30 pairs x 2 orders; statistic = share of A verdicts; drawn duplicates get distinct item ids
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"dataset": "d", "item_id": np.repeat([f"i{k}" for k in range(30)], 2),
                       "order": ["AB", "BA"] * 30, "verdict": rng.choice(["A", "B"], 60)})
    seen: list[int] = []

    def share_a(f: pd.DataFrame) -> float:
        seen.append(f["item_id"].nunique())
        return float((f["verdict"] == "A").mean())

    iv = bootstrap_interval(df, share_a, n_resamples=200, seed=1)
    assert iv.n == 30 and iv.n_resamples == 200
    assert iv.low <= iv.estimate <= iv.high
    assert set(seen) == {30}  # every resample has 30 distinct pairs, each with its 2 rows
    again = bootstrap_interval(df, share_a, n_resamples=200, seed=1)
    assert (again.low, again.high) == (iv.low, iv.high)


# ---- bias --------------------------------------------------------------------------------------


def test_position_bias_by_hand() -> None:
    # decided: 1,1,1,0 (None dropped) -> share 3/4 -> |3/4 - 1/2| = 1/4
    pb = position_bias([1, 1, True, 0, None])
    assert (pb.value, pb.share_first, pb.n, pb.n_missing) == (0.25, 0.75, 4, 1)
    assert np.isnan(position_bias([None, None]).value)


def test_shown_first_won_from_canonical_verdicts() -> None:
    # AB shows response_a first: A -> first won; BA shows response_b first: B -> first won
    out = shown_first_won_from_verdicts(["A", "B", "A", "B", "tie", None], ["AB", "AB", "BA", "BA", "AB", "BA"])
    assert out[:4].tolist() == [1.0, 0.0, 0.0, 1.0] and np.isnan(out[4:]).all()


def test_verbosity_bias_by_hand() -> None:
    # x = 1,2,3; y = 0,0,1: cov sum = (-1)(-1/3) + 0 + (1)(2/3) = 1; Sxx = 2; Syy = 2/3
    # r = 1 / sqrt(2 * 2/3) = 0.8660
    r = verbosity_bias([1, 2, 3, 4], [0, 0, 1, None])
    assert r.value == pytest.approx(np.sqrt(3) / 2) and r.n == 3
    assert np.isnan(verbosity_bias([1, 2, 3], [1, 1, 1]).value)


def test_paradox_flag() -> None:
    # seed 002: Qwen 3 8B test-retest 0.992 with position bias 0.192 -> paradox
    assert consistency_bias_paradox(0.992, 0.192)
    assert not consistency_bias_paradox(0.96, 0.05)
    assert not consistency_bias_paradox(0.90, 0.20)
    assert not consistency_bias_paradox(0.95, 0.192)  # strictly greater than 0.95
    assert not consistency_bias_paradox(float("nan"), 0.3)


# ---- significance ------------------------------------------------------------------------------


def test_mcnemar_by_hand_and_vs_statsmodels() -> None:
    # b = 1 (x right, y wrong), c = 6: p = 2 * P(Bin(7, 1/2) <= 1) = 2 * (1 + 7)/128 = 0.125
    x = [1] * 1 + [0] * 6 + [1] * 5 + [None]
    y = [0] * 1 + [1] * 6 + [1] * 5 + [1]
    r = mcnemar_exact(x, y)
    assert r.p_value == pytest.approx(0.125)
    assert (r.only_x, r.only_y, r.n_shared, r.n_dropped) == (1, 6, 12, 1)
    rng = np.random.default_rng(3)
    for _ in range(10):
        a = rng.random(40) < 0.6
        b = rng.random(40) < 0.7
        table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
        assert mcnemar_exact(a, b).p_value == pytest.approx(mcnemar(table, exact=True).pvalue, abs=1e-9)
    assert mcnemar_exact([1, 0], [1, 0]).p_value == 1.0


def test_holm_by_hand_and_vs_statsmodels() -> None:
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max -> 0.06
    assert holm_adjust([0.01, 0.04, 0.03, 0.005]).tolist() == pytest.approx([0.03, 0.06, 0.06, 0.02])
    p = np.random.default_rng(1).random(15) ** 3
    assert holm_adjust(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-12)
    out = holm_adjust([0.01, np.nan, 0.02])  # NaN is not part of the family: m = 2
    assert out[0] == pytest.approx(0.02) and np.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_rank_correlations_by_hand_and_vs_scipy() -> None:
    # y = 1,3,2,4: d = 0,-1,1,0 -> rho = 1 - 6*2/(4*15) = 0.8; 5 concordant, 1 discordant -> tau = 4/6
    assert spearman([1, 2, 3, 4], [1, 3, 2, 4]).value == pytest.approx(0.8)
    assert kendall([1, 2, 3, 4], [1, 3, 2, 4]).value == pytest.approx(2 / 3)
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=50), rng.integers(0, 5, 50)
    assert spearman(x, y).value == pytest.approx(st.spearmanr(x, y).statistic, abs=1e-9)
    assert kendall(x, y).value == pytest.approx(st.kendalltau(x, y).statistic, abs=1e-9)
    assert kendall([1, 2, None], [2, 1, 5]).n == 2


# ---- juries ------------------------------------------------------------------------------------


def test_jury_binomial_by_hand() -> None:
    # p = 0.7, k = 3: 0.7^3 + 3 * 0.7^2 * 0.3 = 0.343 + 0.441 = 0.784
    assert jury_majority_accuracy(0.7, 3) == pytest.approx(0.784)
    # k = 2: P(2 right) = 0.49, P(1 right) = 0.42 (a tie): half -> 0.49 + 0.21 = 0.70; wrong -> 0.49
    assert jury_majority_accuracy(0.7, 2) == pytest.approx(0.70)
    assert jury_majority_accuracy(0.7, 2, even_tie="wrong") == pytest.approx(0.49)
    assert jury_majority_accuracy(0.7, 2, even_tie="right") == pytest.approx(0.91)


def test_jury_beta_binomial_by_hand() -> None:
    # rho = 0.5 -> s = 1, a = 0.7, b = 0.3 (a + b = 1), k = 3:
    # P(3) = B(3.7, 0.3)/B(0.7, 0.3) = Gamma(3.7)/(Gamma(0.7) Gamma(4)) = 2.7*1.7*0.7/6 = 0.5355
    # P(2) = 3 B(2.7, 1.3)/B(0.7, 0.3) = 3 * (1.7*0.7) * 0.3 / 6 = 0.1785 -> majority = 0.714
    assert jury_majority_accuracy(0.7, 3, rho=0.5) == pytest.approx(0.714)
    assert jury_majority_accuracy(0.7, 5, rho=1.0) == pytest.approx(0.7)  # one voice
    # more correlation -> less gain from the jury
    vals = [jury_majority_accuracy(0.7, 7, rho=r) for r in (0.0, 0.1, 0.4, 0.9)]
    assert vals == sorted(vals, reverse=True)


def test_jury_heterogeneous_by_hand() -> None:
    # ps = 0.9, 0.6, 0.5: all right 0.27; exactly two: .9*.6*.5 + .9*.4*.5 + .1*.6*.5 = .48 -> 0.75
    assert jury_majority_accuracy_heterogeneous([0.9, 0.6, 0.5]) == pytest.approx(0.75)
    for k in (1, 2, 4, 5):
        assert jury_majority_accuracy_heterogeneous([0.65] * k) == pytest.approx(
            jury_majority_accuracy(0.65, k), abs=1e-12)


def test_jury_error_correlation_by_hand() -> None:
    # 2 jurors; S = 2,2,0,0: p = 1/2, Var(S) = 1, k p (1-p) = 1/2 -> rho = (2 - 1)/1 = 1
    assert jury_error_correlation([[1, 1], [1, 1], [0, 0], [0, 0]]).rho == pytest.approx(1.0)
    # S = 2,1,1,0: Var(S) = 1/2 -> rho = 0 (independent-looking)
    assert jury_error_correlation([[1, 1], [1, 0], [0, 1], [0, 0]]).rho == pytest.approx(0.0)
    assert np.isnan(jury_error_correlation([[1, 1], [1, 1]]).rho)  # p = 1: undefined
    # simulated beta-binomial jurors with rho = 0.3 recover rho roughly
    rng = np.random.default_rng(0)
    s = 1 / 0.3 - 1
    pi = rng.beta(0.7 * s, 0.3 * s, 20000)
    m = rng.random((20000, 5)) < pi[:, None]
    est = jury_error_correlation(m)
    assert est.rho == pytest.approx(0.3, abs=0.03) and est.k == 5
    assert observed_majority_accuracy(m) == pytest.approx(jury_majority_accuracy(0.7, 5, rho=0.3), abs=0.02)


# ---- variance ----------------------------------------------------------------------------------


def test_anova_one_factor_by_hand() -> None:
    # groups {1,2,3} and {5,6,7}: grand mean 4; SS_between = 3*4 + 3*4 = 24; SS_within = 2 + 2 = 4
    # eta^2 = 24/28 = 6/7
    df = pd.DataFrame({"g": list("aaabbb"), "y": [1, 2, 3, 5, 6, 7]})
    res = anova_eta_squared(df, response="y", factors=["g"])
    assert res["eta_sq"].tolist() == pytest.approx([6 / 7, 1 / 7])


def test_g_study_two_facets_by_hand() -> None:
    # p x j, 3 x 2, r = 1: Y = [[0,2],[2,4],[4,9]], grand mean 3.5
    # rows 1, 3, 6.5: SS_p = 2*(6.25 + 0.25 + 9) = 31, MS_p = 15.5
    # cols 2, 5: SS_j = 3*(2.25 + 2.25) = 13.5, MS_j = 13.5; SS_total = 47.5 -> SS_pj = 3, MS_pj = 1.5
    # sigma2_pj,e = 1.5; sigma2_p = (15.5 - 1.5)/2 = 7; sigma2_j = (13.5 - 1.5)/3 = 4; total 12.5
    y = [[0, 2], [2, 4], [4, 9]]
    df = pd.DataFrame([{"p": i, "j": j, "y": y[i][j]} for i in range(3) for j in range(2)])
    res = g_study(df, response="y", facets=["p", "j"]).set_index("component")
    assert res.loc["p", "variance"] == pytest.approx(7.0)
    assert res.loc["j", "variance"] == pytest.approx(4.0)
    assert res.loc["residual", "variance"] == pytest.approx(1.5)
    assert res["share"].sum() == pytest.approx(1.0)
    assert res.loc["p", "share"] == pytest.approx(7 / 12.5)


def test_g_study_negative_set_to_zero_and_unbalanced_raises() -> None:
    # Y = [[0,1],[1,0]]: MS_p = MS_j = 0, MS_pj = 1 -> raw sigma2_p = (0 - 1)/2 < 0 -> 0
    df = pd.DataFrame({"p": [0, 0, 1, 1], "j": [0, 1, 0, 1], "y": [0, 1, 1, 0]})
    res = g_study(df, response="y", facets=["p", "j"]).set_index("component")
    assert res.loc["p", "variance"] == 0.0 and bool(res.loc["p", "negative_raw"])
    with pytest.raises(ValueError, match="balanced"):
        g_study(df.iloc[:3], response="y", facets=["p", "j"])


def test_g_study_recovers_simulated_components_with_replicates() -> None:
    # p x j x o with 3 replicates; true sigma2: p 1.0, j 0.5, o 0 ..., p x j 0.25, error 0.1
    rng = np.random.default_rng(4)
    P, J, n_o, R = 200, 8, 2, 3
    ep, ej, epj = rng.normal(0, 1, P), rng.normal(0, np.sqrt(0.5), J), rng.normal(0, 0.5, (P, J))
    p, j, o, r = np.meshgrid(np.arange(P), np.arange(J), np.arange(n_o), np.arange(R), indexing="ij")
    y = ep[p] + ej[j] + epj[p, j] + rng.normal(0, np.sqrt(0.1), p.shape)
    df = pd.DataFrame({"p": p.ravel(), "j": j.ravel(), "o": o.ravel(), "y": y.ravel()})
    res = g_study(df, response="y", facets=["p", "j", "o"]).set_index("component")
    assert res.loc["p", "variance"] == pytest.approx(1.0, abs=0.25)
    assert res.loc["p x j", "variance"] == pytest.approx(0.25, abs=0.05)
    assert res.loc["residual", "variance"] == pytest.approx(0.1, abs=0.01)
    assert res.loc["o", "variance"] < 0.01
    assert res.attrs["replicates"] == 3


# ---- regions / rank shifts ---------------------------------------------------------------------


def test_failure_regions() -> None:
    assert failure_region(0.95, 0.05) == "trustworthy"
    assert failure_region(0.60, 0.05) == "noisy-but-fair"
    assert failure_region(0.60, 0.50) == "chaos"
    assert failure_region(1.00, 0.98) == "confidently-biased"  # Gemini-2.0-Flash VF-XML JudgeBench
    assert failure_region(float("nan"), 0.1) == "undefined"
    out = failure_region([0.95, 0.5], [0.1, 0.1], c_high=0.4)
    assert out.tolist() == ["trustworthy", "trustworthy"]


def test_rank_shifts_by_hand() -> None:
    # kappa on two benchmarks: j1 best on b1 (rank 1) and worst on b2 (rank 3) -> shift 2
    scores = {"b1": {"j1": 0.8, "j2": 0.6, "j3": 0.4}, "b2": {"j1": 0.1, "j2": 0.5, "j3": 0.3}}
    out = rank_shifts(scores).set_index("judge")
    assert out.loc["j1", "rank_b1"] == 1 and out.loc["j1", "rank_b2"] == 3
    assert out.loc["j1", "rank_shift"] == 2 and out.loc["j2", "rank_shift"] == 1
    assert out.loc["j1", "spread"] == pytest.approx(0.7)
    assert rank_shifts(scores).attrs["max_shift"] == 2


def test_g_study_verdicts_on_judgments() -> None:
    # 2 judges x 1 protocol x 2 orders x 2 reps over 3 pairs; pair "2" misses one verdict -> dropped.
    # Judge j1 always says A, j2 always B: all variance is the judge main effect.
    # With pairs 0,1 kept: cell means are 1 (j1) / 0 (j2) everywhere -> sigma2_judge = 0.5
    # (MS_judge = 2*2*2 * 0.25 * 2 / 1 = 4 -> (4 - 0)/(r * n_p * n_o) = 4/8 = 0.5), everything else 0
    rows = []
    for i in range(3):
        for j, v in (("j1", "A"), ("j2", "B")):
            for o in ("AB", "BA"):
                for r in range(2):
                    verdict = None if (i == 2 and j == "j2" and o == "BA" and r == 1) else v
                    rows.append({"dataset": "d", "item_id": str(i), "judge": j, "protocol": "direct",
                                 "order": o, "rep": r, "verdict": verdict})
    from verdictlab.stats import g_study_verdicts

    res = g_study_verdicts(pd.DataFrame(rows))
    assert res.attrs["n_pairs"] == 2 and res.attrs["n_pairs_dropped"] == 1
    comp = res.set_index("component")
    assert comp.loc["judge", "variance"] == pytest.approx(0.5)
    assert comp.loc["judge", "share"] == pytest.approx(1.0)


def test_format_dispersion_keeps_temperatures_apart() -> None:
    # judge j, dataset d: at T_s=0 protocols give T 0.5 / 0.7 (Delta 0.2); at T_s=0.7: 0.1 / 0.4 (0.3)
    from verdictlab.stats import format_dispersion

    cells = pd.DataFrame({"judge": "j", "dataset": "d", "temperature": [0.0, 0.0, 0.7, 0.7],
                          "protocol": ["p1", "p2", "p1", "p2"], "T": [0.5, 0.7, 0.1, 0.4]})
    out = format_dispersion(cells)
    assert out["delta_T_fmt"].tolist() == pytest.approx([0.2, 0.3])
    assert out["protocol_max"].tolist() == ["p2", "p2"]


def test_observed_majority_by_hand() -> None:
    # k = 3: rows right 2/3 (majority right) and 1/3 (wrong) -> 1/2
    assert observed_majority_accuracy([[1, 1, 0], [0, 0, 1]]) == pytest.approx(0.5)
    # k = 2: a 1-1 tie counts 1/2 by default, 0 with even_tie="wrong": (0.5 + 1)/2 = 0.75; (0 + 1)/2
    assert observed_majority_accuracy([[1, 0], [1, 1]]) == pytest.approx(0.75)
    assert observed_majority_accuracy([[1, 0], [1, 1]], even_tie="wrong") == pytest.approx(0.5)


def test_wilson_bounds_hold_their_estimate_exactly_at_zero_and_all() -> None:
    """At k = 0 the Wilson centre equals its half-width, so the lower bound is 0; in floating point
    centre - half came out 2.8e-17 for 0 of 10 (a phi of 0 whose interval did not hold it, which broke the
    decision picture).  Every n up to 2,000, at both extremes, and every k of small n."""
    from verdictlab.stats.intervals import wilson_bounds

    n = np.arange(1, 2001)
    lo0, _ = wilson_bounds(np.zeros_like(n), n)
    _, hi1 = wilson_bounds(n, n)
    assert (lo0 == 0.0).all() and (hi1 == 1.0).all()
    assert wilson_bounds(0, 10)[0] == 0.0
    for m in range(1, 60):
        k = np.arange(m + 1)
        lo, hi = wilson_bounds(k, np.full_like(k, m))
        assert (lo <= k / m).all() and (k / m <= hi).all()
