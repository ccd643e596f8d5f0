"""Uncertainty: Wilson score intervals for proportions, pair-level bootstrap intervals."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

from ._frame import group_codes, require_columns

__all__ = ["Interval", "wilson_interval", "wilson_bounds", "bootstrap_interval", "percentile_bounds"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a two-sided interval and the N it stands on.

    ``successes`` is set for proportions (Wilson); ``n_resamples`` for bootstrap intervals.
    An undefined figure (n == 0) has NaN estimate and bounds."""

    estimate: float
    low: float
    high: float
    n: int
    confidence: float
    method: str
    successes: int | None = None
    n_resamples: int | None = None


def _z(confidence: float) -> float:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(_st.norm.ppf(0.5 + confidence / 2.0))


def wilson_bounds(successes: np.ndarray | float, n: np.ndarray | float, *,
                  confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised Wilson score bounds; NaN where n == 0.

    centre = (p + z^2/2n) / (1 + z^2/n),  half = z/(1 + z^2/n) * sqrt(p(1-p)/n + z^2/4n^2)."""
    z = _z(confidence)
    k = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / m
        denom = 1.0 + z * z / m
        centre = (p + z * z / (2 * m)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
        # at k = 0 the lower bound is 0 exactly (centre = half), at k = n the upper bound is 1: in floating
        # point centre - half can come out 2.8e-17, an interval that does not hold its own estimate
        lo = np.where(m > 0, np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0)), np.nan)
        hi = np.where(m > 0, np.where(k == m, 1.0, np.clip(centre + half, 0.0, 1.0)), np.nan)
    return lo, hi


def wilson_interval(successes: int, n: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval for ``successes`` out of ``n`` (NaN interval when n == 0)."""
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    lo, hi = wilson_bounds(successes, n, confidence=confidence)
    est = successes / n if n > 0 else float("nan")
    return Interval(float(est), float(lo), float(hi), int(n), confidence, "wilson",
                    successes=int(successes))


def percentile_bounds(samples: np.ndarray, *, confidence: float = 0.95,
                      axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap bounds ignoring NaN resamples (all-NaN -> NaN)."""
    _z(confidence)
    a = (1.0 - confidence) / 2.0
    samples = np.asarray(samples, dtype=float)
    with np.errstate(invalid="ignore"):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            lo = np.nanquantile(samples, a, axis=axis)
            hi = np.nanquantile(samples, 1.0 - a, axis=axis)
    return lo, hi


def bootstrap_interval(judgments: pd.DataFrame, statistic: Callable[[pd.DataFrame], float], *,
                       n_resamples: int = 1000, seed: int = 0, confidence: float = 0.95,
                       pair_key: Sequence[str] = ("dataset", "item_id")) -> Interval:
    """Percentile bootstrap of ``statistic(frame)`` resampling *pairs* (all rows of a pair move
    together: both orders and every repetition), with replacement.

    A pair drawn twice gets distinct ``item_id`` values (``"<id>~<k>"``) so the statistic sees two
    pairs, not one pair with doubled repetitions.  Generic and therefore a Python loop over
    resamples; :func:`verdictlab.stats.reliability` has a vectorised bootstrap for T.
    ``n`` of the result is the number of pairs."""
    if n_resamples < 1:
        raise ValueError("n_resamples must be >= 1")
    require_columns(judgments, list(pair_key), who="bootstrap_interval")
    est = float(statistic(judgments))
    if judgments.empty:
        return Interval(float("nan"), float("nan"), float("nan"), 0, confidence, "bootstrap-pairs",
                        n_resamples=n_resamples)
    codes, _ = group_codes(judgments, list(pair_key))
    order = np.argsort(codes, kind="stable")
    n_pairs = int(codes.max()) + 1
    counts = np.bincount(codes, minlength=n_pairs)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    sorted_frame = judgments.iloc[order].reset_index(drop=True)
    item_str = sorted_frame["item_id"].astype(str).to_numpy()
    rng = np.random.default_rng(seed)
    out = np.empty(n_resamples)
    for b in range(n_resamples):
        draw = rng.integers(0, n_pairs, size=n_pairs)
        lens = counts[draw]
        # row indices of the drawn pairs, concatenated: start of pair + offset within pair
        offs = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
        rows = np.repeat(starts[draw], lens) + offs
        sample = sorted_frame.iloc[rows].copy()
        tag = np.repeat(np.arange(n_pairs), lens).astype(str)
        sample["item_id"] = np.char.add(np.char.add(item_str[rows].astype(str), "~"), tag)
        out[b] = statistic(sample)
    lo, hi = percentile_bounds(out, confidence=confidence)
    return Interval(est, float(lo), float(hi), n_pairs, confidence, "bootstrap-pairs",
                    n_resamples=n_resamples)
