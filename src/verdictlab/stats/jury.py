"""Juries: error correlation between jurors and predicted majority-vote accuracy.

A jury of k jurors, each right with probability p, decides by majority.  Independent jurors
(Condorcet) give a binomial prediction; correlated jurors are modelled as exchangeable with
intra-class correlation rho: the number of right votes is beta-binomial with a = p s, b = (1 - p) s,
s = 1/rho - 1 (rho = 0 is the binomial limit, rho = 1 a single juror repeated k times).

Even k: a tied vote is resolved by ``even_tie``: "half" (a fair coin: counts 1/2, the default),
"wrong" (a tie is a failure) or "right".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as _st

__all__ = ["JuryCorrelation", "effective_jurors", "jury_error_correlation", "jury_majority_accuracy",
           "jury_majority_accuracy_heterogeneous", "observed_majority_accuracy"]

_TIE_CREDIT = {"half": 0.5, "wrong": 0.0, "right": 1.0}


@dataclass(frozen=True)
class JuryCorrelation:
    """Intra-class error correlation rho of k jurors over ``n_items`` items, mean juror accuracy p."""

    rho: float
    p: float
    k: int
    n_items: int

    def __float__(self) -> float:
        return self.rho


def _tie_credit(even_tie: str) -> float:
    if even_tie not in _TIE_CREDIT:
        raise ValueError(f"even_tie must be one of {tuple(_TIE_CREDIT)}, got {even_tie!r}")
    return _TIE_CREDIT[even_tie]


def jury_error_correlation(correct_matrix: Any, *, zero_division: float = np.nan) -> JuryCorrelation:
    """Error correlation rho from an items x jurors 0/1 matrix of correctness (no missing values).

    Moment (ANOVA-free) estimator of the exchangeable intra-class correlation: with S_i the number
    of jurors right on item i, p = mean(S)/k and Var(S) (population variance over items),
    Var(S) = k p (1 - p) (1 + (k - 1) rho)  =>  rho = (Var(S) / (k p (1 - p)) - 1) / (k - 1).
    Undefined (p in {0, 1} or k < 2) -> ``zero_division``."""
    m = np.asarray(correct_matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError("correct_matrix must be 2-D: items x jurors")
    if np.isnan(m).any():
        raise ValueError("correct_matrix has missing values; keep items every juror answered")
    n, k = m.shape
    if n == 0 or k < 2:
        return JuryCorrelation(float(zero_division), float("nan"), k, n)
    s = m.sum(axis=1)
    p = float(s.mean() / k)
    if p <= 0.0 or p >= 1.0:
        return JuryCorrelation(float(zero_division), p, k, n)
    rho = (float(s.var()) / (k * p * (1 - p)) - 1.0) / (k - 1)
    return JuryCorrelation(rho, p, k, n)


def _majority_from_pmf(pmf: np.ndarray, k: int, tie: float) -> float:
    j = np.arange(k + 1)
    win = pmf[2 * j > k].sum()
    if k % 2 == 0:
        win += tie * pmf[k // 2]
    return float(win)


def jury_majority_accuracy(p: float, k: int, *, rho: float = 0.0, even_tie: str = "half") -> float:
    """Predicted accuracy of a majority vote of ``k`` exchangeable jurors of accuracy ``p`` whose
    errors correlate with ``rho`` (binomial for rho = 0, beta-binomial for 0 < rho < 1, p itself for
    rho = 1).  Negative rho is not modelled (raise)."""
    tie = _tie_credit(even_tie)
    if k < 1:
        raise ValueError("k must be >= 1")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    j = np.arange(k + 1)
    if rho == 0.0 or p in (0.0, 1.0):
        pmf = _st.binom.pmf(j, k, p)
    elif rho == 1.0:
        # all jurors vote together: right with probability p (no tie possible)
        return float(p)
    else:
        s = 1.0 / rho - 1.0
        pmf = _st.betabinom.pmf(j, k, p * s, (1.0 - p) * s)
    return _majority_from_pmf(pmf, k, tie)


def jury_majority_accuracy_heterogeneous(ps: Any, *, even_tie: str = "half") -> float:
    """Majority accuracy of independent jurors with their own accuracies ``ps`` (Poisson-binomial
    distribution of the number of right votes, by exact convolution)."""
    tie = _tie_credit(even_tie)
    ps = np.asarray(ps, dtype=float).ravel()
    if len(ps) == 0:
        raise ValueError("need at least one juror")
    if ((ps < 0) | (ps > 1)).any():
        raise ValueError("accuracies must lie in [0, 1]")
    pmf = np.array([1.0])
    for p in ps:  # k jurors, O(k^2): a loop over jurors, not judgments
        pmf = np.convolve(pmf, [1.0 - p, p])
    return _majority_from_pmf(pmf, len(ps), tie)


def observed_majority_accuracy(correct_matrix: Any, *, even_tie: str = "half") -> float:
    """Observed accuracy of the majority vote of the jurors (items x jurors 0/1 correctness;
    binary choice, so the majority is right iff more than half the jurors are)."""
    tie = _tie_credit(even_tie)
    m = np.asarray(correct_matrix, dtype=float)
    k = m.shape[1]
    s = m.sum(axis=1)
    return float(np.mean(np.where(2 * s > k, 1.0, np.where(2 * s == k, tie, 0.0))))


def effective_jurors(k: int, rho: float) -> float:
    """Effective number of independent jurors of a jury of ``k`` whose errors correlate with mean
    ``rho``: k / (1 + (k - 1) rho) (the design effect of an exchangeable cluster).  rho = 0 gives k,
    rho = 1 gives 1; a negative rho (anti-correlated errors) gives more than k.  Undefined (NaN) for
    NaN rho, k < 1, or rho <= -1 / (k - 1) (no exchangeable k-variable model has it)."""
    if k < 1 or not np.isfinite(rho):
        return float("nan")
    denom = 1.0 + (k - 1) * float(rho)
    return float(k / denom) if denom > 0 else float("nan")
