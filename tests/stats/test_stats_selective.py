"""Selective evaluation with a guaranteed agreement: hand values, the guarantee by simulation, edge cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as st

from verdictlab.stats.selective import min_calibration_items, selective_threshold


def test_min_items_by_hand() -> None:
    # 0.9^22 = 0.0985 <= 0.1 < 0.9^21 = 0.1094 -> 22;  0.8^8 = 0.168 <= 0.2 < 0.8^7 = 0.210 -> 8
    assert min_calibration_items(0.9, 0.1) == 22
    assert min_calibration_items(0.8, 0.2) == 8


def test_threshold_by_hand() -> None:
    # 10 items at confidence 0.9, all agree; 10 at 0.7, 5 agree.  target 0.8, delta 0.2, no holdout.
    # t = 0.9: n = 10, k = 10, p = P(Bin(10, .8) >= 10) = 0.8^10 = 0.107 <= 0.2 -> certified
    # t = 0.7: n = 20, k = 15, p = P(Bin(20, .8) >= 15) = 0.804 > 0.2 -> stop
    # lower bound (Clopper-Pearson, one-sided 0.8): Beta(0.2; 10, 1) = 0.2^(1/10) = 0.8513
    c = np.r_[np.full(10, 0.9), np.full(10, 0.7)]
    a = np.r_[np.ones(15), np.zeros(5)]
    assert st.binom.sf(14, 20, 0.8) == pytest.approx(0.8042, abs=1e-4)
    r = selective_threshold(c, a, target=0.8, delta=0.2, holdout=0.0)
    assert r.threshold == 0.9 and r.coverage == 0.5 and r.agreement == 1.0
    assert r.lower_bound == pytest.approx(0.2 ** (1 / 10))
    assert (r.n_calibration, r.n_kept, r.n_test) == (20, 10, 0)
    assert r.test_coverage is None and r.test_agreement is None


def test_fixed_sequence_stops_at_first_failure() -> None:
    # top 10 agree (certified), next 10 all disagree (fails), then 30 more that agree: a lower
    # threshold would pass again on its own, but fixed-sequence testing has stopped at the failure.
    c = np.r_[np.full(10, 0.95), np.full(10, 0.9), np.full(30, 0.8)]
    a = np.r_[np.ones(10), np.zeros(10), np.ones(30)]
    r = selective_threshold(c, a, target=0.7, delta=0.2, holdout=0.0)
    # at 0.8: 40/50 = 0.8 agree, P(Bin(50, .7) >= 40) = 0.079 <= 0.2 would be "certified" alone
    assert st.binom.sf(39, 50, 0.7) < 0.2
    assert r.threshold == 0.95


def test_holdout_figures() -> None:
    rng = np.random.default_rng(0)
    c = rng.uniform(0.5, 1.0, 2000)
    a = (rng.random(2000) < c).astype(float)
    r = selective_threshold(c, a, target=0.9, delta=0.1, holdout=0.5, seed=1)
    assert r.n_calibration == 1000 and r.n_test == 1000
    assert r.threshold is not None and r.test_agreement is not None and r.test_coverage is not None
    # P(agree | c) = c, so agreement above t is (1 + t)/2 >= 0.9 needs t >= 0.8; coverage = 2(1 - t)
    assert 0.8 <= r.threshold < 0.9
    assert r.test_coverage == pytest.approx(2 * (1 - r.threshold), abs=0.06)
    assert r.test_agreement == pytest.approx((1 + r.threshold) / 2, abs=0.03)


@pytest.mark.parametrize(("slope", "intercept", "min_power"), [(1.0, 0.0, 0.5), (0.8, 0.15, 0.05)])
def test_guarantee_holds_in_simulation(slope: float, intercept: float, min_power: float) -> None:
    """Over 400 replicates (600 calibration items each), the returned threshold's true agreement is
    below the target in at most delta of them (+ a 3-sigma binomial tolerance).

    P(agree | c) = intercept + slope * c with c ~ U(0.5, 1), so the true agreement among items with
    confidence >= t is intercept + slope * (1 + t) / 2: a calibrated judge (1, 0) reaches 0.9 at
    t = 0.8, an over-confident one (0.8, 0.15) only at t = 0.875."""
    target, delta, reps, n = 0.9, 0.1, 400, 600
    rng = np.random.default_rng(12)
    conf = rng.uniform(0.5, 1.0, (reps, n))
    agree = (rng.random((reps, n)) < intercept + slope * conf).astype(float)
    thresholds = np.array([
        np.nan if (t := selective_threshold(conf[i], agree[i], target=target, delta=delta,
                                            holdout=0.0).threshold) is None else t
        for i in range(reps)])
    certified = ~np.isnan(thresholds)
    assert certified.mean() > min_power  # the procedure is not vacuous
    true_agreement = intercept + slope * (1 + thresholds[certified]) / 2
    violations = int(np.sum(true_agreement < target))
    tolerance = 3 * math.sqrt(delta * (1 - delta) / reps)
    assert violations / reps <= delta + tolerance


def test_edge_cases() -> None:
    few = selective_threshold(np.full(30, 0.9), np.ones(30), target=0.9, delta=0.1, holdout=0.5)
    # 15 calibration items < 22 needed -> None; need ceil(22 / 0.5) = 44 items in all
    assert few.threshold is None and "at least 44" in str(few.reason)
    bad = selective_threshold(np.full(100, 0.9), np.r_[np.ones(50), np.zeros(50)], holdout=0.0)
    assert bad.threshold is None and bad.coverage == 0.0 and "no threshold" in str(bad.reason)
    # constant confidence: one candidate threshold, certified when agreement is high enough
    good = selective_threshold(np.full(100, 0.9), np.ones(100), holdout=0.0)
    assert good.threshold == 0.9 and good.coverage == 1.0
    with pytest.raises(ValueError):
        selective_threshold([0.5, 0.6], [1, 2])
    with pytest.raises(ValueError):
        selective_threshold([0.5], [1], target=1.0)
