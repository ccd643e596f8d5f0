"""Selective evaluation with a guaranteed human-agreement level ("Trust or Escalate", Jung et al. 2025).

The judge decides an item only when its confidence is at least a threshold t; other items go to people.
On a calibration split, for thresholds t from high to low, test

    H0(t): agreement with humans among items with confidence >= t  <  target

with the exact one-sided binomial test, p(t) = P(Binomial(n_t, target) >= k_t) (n_t items kept, k_t of
them agreeing; p(t) <= delta exactly when the one-sided Clopper-Pearson lower bound at level 1 - delta is
>= target).  Fixed-sequence testing: walk down the thresholds and stop at the first H0 not rejected; the
lowest threshold rejected so far is returned.  Because the hypotheses are tested in a fixed order, each at
level delta, the chance that the returned threshold's true agreement is below ``target`` is at most
delta.

Candidate thresholds: the confidence of the item at each ``n_steps``-quantile of the calibration items
ranked by confidence (kept counts n/n_steps, 2n/n_steps, ...; tied confidences kept together), skipping
those that keep fewer than n_min = ceil(log(delta) / log(target)) items (even k = n gives
target^n > delta, so they can never be rejected).  The candidates depend only on the confidences, never
on the agreements, so the order is fixed given the confidences and the guarantee holds.  A coarse grid
matters for power: every extra hypothesis on the way down is one more chance to stop early.

The items are split at random (``seed``) into a calibration part and a held-out part (``holdout``);
the held-out part reports the agreement and coverage an independent sample sees at that threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as _st

__all__ = ["SelectiveResult", "min_calibration_items", "selective_threshold"]


@dataclass(frozen=True)
class SelectiveResult:
    """The certified threshold (None when none can be certified, with ``reason``) and what it does.

    ``coverage`` / ``agreement`` / ``lower_bound``: on the calibration split (share of items the judge
    decides, agreement on them, exact lower bound).  ``test_*``: on the held-out split (None when the
    split is empty or keeps nothing)."""

    threshold: float | None
    coverage: float | None
    agreement: float | None
    lower_bound: float | None
    n_calibration: int
    n_kept: int
    test_coverage: float | None
    test_agreement: float | None
    n_test: int
    n_test_kept: int
    target: float
    delta: float
    reason: str | None = None


def min_calibration_items(target: float, delta: float) -> int:
    """Fewest kept items whose all-agree result certifies ``target``: ceil(log(delta) / log(target)).

    target 0.9, delta 0.1: log(0.1)/log(0.9) = 21.85 -> 22 (0.9^22 = 0.098 <= 0.1 < 0.9^21 = 0.109)."""
    return int(math.ceil(math.log(delta) / math.log(target) - 1e-12))


def _split(n: int, holdout: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    perm = np.random.default_rng(seed).permutation(n)
    n_test = int(round(holdout * n))
    return np.sort(perm[n_test:]), np.sort(perm[:n_test])


def _candidates(cs: np.ndarray, n_steps: int) -> np.ndarray:
    """Indices (into confidences sorted high to low) of the last item kept by each candidate threshold:
    the item at each n/n_steps quantile, moved to the end of its tie group; distinct, increasing."""
    last_of_group = np.flatnonzero(np.append(cs[1:] != cs[:-1], True))
    pos = np.ceil(np.arange(1, n_steps + 1) * cs.size / n_steps).astype(np.int64) - 1
    ends = last_of_group[np.searchsorted(last_of_group, pos, side="left")]
    return np.unique(ends)


def _certify(c: np.ndarray, a: np.ndarray, target: float, delta: float,
             n_steps: int) -> tuple[float, int, int] | None:
    """Fixed-sequence test on one split: (threshold, n kept, k agreeing) or None."""
    order = np.argsort(-c, kind="stable")
    cs, cum = c[order], np.cumsum(a[order])
    ends = _candidates(cs, n_steps)
    n_kept, k_kept = ends + 1, cum[ends].astype(np.int64)
    testable = n_kept >= min_calibration_items(target, delta)
    ends, n_kept, k_kept = ends[testable], n_kept[testable], k_kept[testable]
    pvals = _st.binom.sf(k_kept - 1, n_kept, target)
    fails = np.flatnonzero(pvals > delta)
    stop = int(fails[0]) if fails.size else int(ends.size)
    if stop == 0:
        return None
    j = stop - 1
    return float(cs[ends[j]]), int(n_kept[j]), int(k_kept[j])


def selective_threshold(confidence: Sequence[float] | np.ndarray, agree: Sequence[float] | np.ndarray, *,
                        target: float = 0.9, delta: float = 0.1, holdout: float = 0.5,
                        n_steps: int = 20, seed: int = 0) -> SelectiveResult:
    """Lowest confidence threshold at which the judge agrees with humans >= ``target`` with
    probability >= 1 - ``delta`` (module docstring).  ``agree`` is 1 when the judge's verdict equals the
    human label.  ``holdout`` in [0, 1) is the share kept out of calibration for the held-out figures;
    ``n_steps`` the number of candidate thresholds (quantiles of the calibration confidences)."""
    if not 0.0 < target < 1.0:
        raise ValueError(f"target must be in (0, 1), got {target!r}")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if not 0.0 <= holdout < 1.0:
        raise ValueError(f"holdout must be in [0, 1), got {holdout!r}")
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1, got {n_steps}")
    c = np.asarray(confidence, dtype=float)
    a = np.asarray(agree, dtype=float)
    if c.ndim != 1 or a.shape != c.shape:
        raise ValueError(f"confidence and agree must be 1-d of the same length, got {c.shape} and {a.shape}")
    if not np.all(np.isfinite(c)) or not np.all((a == 0) | (a == 1)):
        raise ValueError("confidence must be finite and agree must hold 0/1")
    cal, test = _split(c.size, holdout, seed)
    empty = SelectiveResult(None, None, None, None, n_calibration=int(cal.size), n_kept=0,
                            test_coverage=None, test_agreement=None, n_test=int(test.size), n_test_kept=0,
                            target=target, delta=delta)
    n_min = min_calibration_items(target, delta)
    if cal.size < n_min:
        need = int(math.ceil(n_min / (1.0 - holdout)))
        return replace(empty, reason=f"too few labelled items: {c.size} (need at least {need} so that "
                                     f"{n_min} are in the calibration split)")
    found = _certify(c[cal], a[cal], target, delta, n_steps)
    if found is None:
        return replace(empty, coverage=0.0,
                       reason=f"no threshold certifies agreement >= {target:g} at delta {delta:g}: on the "
                              "judge's most confident items its agreement is too low, or they are too few, "
                              "to be sure")
    thr, n_kept, k_kept = found
    lower = float(_st.beta.ppf(delta, k_kept, n_kept - k_kept + 1)) if k_kept > 0 else 0.0
    kept_test = c[test] >= thr
    n_tk = int(kept_test.sum())
    return replace(empty, threshold=thr, coverage=n_kept / cal.size, agreement=k_kept / n_kept,
                   lower_bound=lower, n_kept=n_kept,
                   test_coverage=float(kept_test.mean()) if test.size else None,
                   test_agreement=float(a[test][kept_test].mean()) if n_tk else None, n_test_kept=n_tk)
