"""Calibration (ECE, MCE, Brier, bins) and cross-fitted recalibration: hand values, sklearn, edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from verdictlab.stats.calibration import MIN_CALIBRATION, calibration, recalibrate

# 20 items: 10 at confidence 0.65 with 5 correct, 10 at confidence 0.95 with 9 correct
CONF = np.r_[np.full(10, 0.65), np.full(10, 0.95)]
CORRECT = np.r_[np.ones(5), np.zeros(5), np.ones(9), np.zeros(1)]


def test_calibration_by_hand() -> None:
    # 10 uniform bins: 0.65 in (0.6, 0.7], 0.95 in (0.9, 1.0]
    # gaps |0.5 - 0.65| = 0.15 and |0.9 - 0.95| = 0.05 -> ECE = 0.5*0.15 + 0.5*0.05 = 0.10, MCE = 0.15
    # Brier = (5*0.35^2 + 5*0.65^2 + 9*0.05^2 + 1*0.95^2)/20 = (0.6125 + 2.1125 + 0.0225 + 0.9025)/20 = 0.1825
    cal = calibration(CONF, CORRECT, n_bins=10)
    assert cal.ece == pytest.approx(0.10)
    assert cal.mce == pytest.approx(0.15)
    assert cal.brier == pytest.approx(0.1825)
    assert [(b.n, b.mean_confidence, b.accuracy) for b in cal.bins] == [
        (10, pytest.approx(0.65), 0.5), (10, pytest.approx(0.95), 0.9)]
    assert cal.bins[0].lo == pytest.approx(0.6) and cal.bins[0].hi == pytest.approx(0.7)
    # quantile strategy: tied confidences share a bin; same two groups -> same ECE
    assert calibration(CONF, CORRECT, n_bins=4, strategy="quantile").ece == pytest.approx(0.10)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_bins_match_sklearn(strategy: str) -> None:
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss

    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 500)
    correct = (rng.random(500) < conf**2).astype(float)
    cal = calibration(conf, correct, n_bins=10, strategy=strategy)  # type: ignore[arg-type]
    prob_true, prob_pred = calibration_curve(correct, conf, n_bins=10, strategy=strategy)
    assert [b.accuracy for b in cal.bins] == pytest.approx(list(prob_true))
    assert [b.mean_confidence for b in cal.bins] == pytest.approx(list(prob_pred))
    assert cal.brier == pytest.approx(brier_score_loss(correct, conf))
    weights = np.array([b.n for b in cal.bins]) / 500
    assert cal.ece == pytest.approx(float(np.sum(weights * np.abs(prob_true - prob_pred))))


@pytest.mark.parametrize("method", ["platt", "isotonic"])
def test_recalibration_fixes_overconfidence_out_of_sample(method: str) -> None:
    rng = np.random.default_rng(1)
    conf = rng.uniform(0.5, 1.0, 600)
    correct = (rng.random(600) < 0.5 + 0.5 * (conf - 0.5)).astype(float)  # over-confident judge
    rec = recalibrate(conf, correct, method=method, n_folds=5, seed=0)  # type: ignore[arg-type]
    assert rec.reason is None and rec.after is not None and rec.confidence is not None
    assert rec.before.ece is not None and rec.after.ece is not None
    assert rec.before.ece > 0.15
    assert rec.after.ece < rec.before.ece / 2
    assert len(rec.confidence) == 600


def test_recalibration_is_cross_fitted() -> None:
    # isotonic fitted in-sample on pure noise reaches a tiny ECE; cross-fitted it cannot
    rng = np.random.default_rng(2)
    conf = rng.uniform(0.5, 1.0, 200)
    correct = (rng.random(200) < 0.7).astype(float)
    from sklearn.isotonic import IsotonicRegression

    in_sample = IsotonicRegression(y_min=0, y_max=1).fit(conf, correct).predict(conf)
    in_ece = calibration(in_sample, correct).ece
    rec = recalibrate(conf, correct, method="isotonic")
    assert rec.after is not None and rec.after.ece is not None and in_ece is not None
    assert rec.after.ece > in_ece


def test_edge_cases_give_none_with_reason() -> None:
    few = calibration(CONF[:MIN_CALIBRATION - 1], CORRECT[:MIN_CALIBRATION - 1])
    assert few.ece is None and f"at least {MIN_CALIBRATION}" in str(few.reason)
    always = recalibrate(CONF, np.ones(20))
    assert always.after is None and "always right" in str(always.reason)
    flat = recalibrate(np.full(40, 0.8), np.r_[np.ones(30), np.zeros(10)])
    assert flat.after is None and "constant" in str(flat.reason)
    # constant confidence still has a defined ECE (one bin): |0.75 - 0.8| = 0.05
    assert calibration(np.full(40, 0.8), np.r_[np.ones(30), np.zeros(10)]).ece == pytest.approx(0.05)
    rare = recalibrate(CONF, np.r_[np.ones(18), np.zeros(2)], n_folds=5)
    assert rare.after is None and "smaller class" in str(rare.reason)
    with pytest.raises(ValueError):
        calibration([0.5, 1.2], [1, 0])
    with pytest.raises(ValueError):
        calibration([0.5, 0.7], [1, 2])


def test_without_scikit_learn_recalibration_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sklearn" else real(name, *a))
    rec = recalibrate(CONF, CORRECT)
    assert rec.after is None and "verdictlab[labels]" in str(rec.reason)
    assert rec.before.ece == pytest.approx(0.10)  # calibration itself needs no scikit-learn


def _reference_fit(method: str, conf: np.ndarray, correct: np.ndarray, seed: int) -> np.ndarray:
    """Out-of-fold confidences from scikit-learn under its default configuration (input checks on)."""
    from sklearn.isotonic import IsotonicRegression
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    out = np.empty_like(conf)
    for train, test in StratifiedKFold(n_splits=5, shuffle=True, random_state=seed).split(conf[:, None], correct):
        if method == "platt":
            def logit(p: np.ndarray) -> np.ndarray:
                q = np.clip(p, 1e-6, 1 - 1e-6)
                return np.log(q / (1 - q))[:, None]
            model = LogisticRegression(C=1e6, solver="newton-cholesky").fit(logit(conf[train]), correct[train])
            out[test] = model.predict_proba(logit(conf[test]))[:, 1]
        else:
            iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(conf[train], correct[train])
            out[test] = iso.predict(conf[test])
    return out


def test_recalibrations_equal_each_method_alone_and_sklearn_bit_for_bit() -> None:
    # both methods share the folds and skip scikit-learn's input checks: the numbers must not move
    from verdictlab.stats.calibration import recalibrations

    rng = np.random.default_rng(5)
    conf = rng.uniform(0.5, 1.0, 300)
    correct = (rng.random(300) < conf).astype(float)
    platt, iso = recalibrations(conf, correct, methods=("platt", "isotonic"), seed=3)
    assert (platt.method, iso.method) == ("platt", "isotonic")
    for rec in (platt, iso):
        alone = recalibrate(conf, correct, method=rec.method, seed=3)  # type: ignore[arg-type]
        assert rec == alone
        assert rec.confidence == tuple(_reference_fit(rec.method, conf, correct, 3).tolist())
    # an undefined recalibration gives each method the same reason
    both = recalibrations(CONF, np.ones(20), methods=("platt", "isotonic"))
    assert [r.reason for r in both] == [recalibrate(CONF, np.ones(20)).reason] * 2
    with pytest.raises(ValueError, match="method must be"):
        recalibrations(CONF, CORRECT, methods=("platt", "beta"))  # type: ignore[arg-type]
