"""Pair-level bootstrap of figures that are functions of per-pair sums, with BCa bounds.

The figures of a cell (C, phi, A, T and their expected forms) are functions of column sums of a
per-pair statistics matrix ``stats`` (n pairs x k sums).  Resampling pairs is then one weight matrix
product, and the jackknife (leave one pair out) is ``total - stats``.  Bounds are bias-corrected and
accelerated (BCa; Efron 1987): the percentile bounds undercover for skewed figures such as a small C
estimated from few consistent units, which the adaptive and log-probability designs run into.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import stats as _st

FigureFn = Callable[[np.ndarray], np.ndarray]


def bca_pair_bootstrap(stats: np.ndarray, figures: FigureFn, *, n_boot: int, rng: np.random.Generator,
                       confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """BCa bounds of ``figures(column sums)`` (shape (..., m)) over resampled pairs.

    z0 = Φ⁻¹(share of resamples below the estimate, ties counting half); the acceleration
    a = Σ d³ / (6 (Σ d²)^1.5) with d the jackknife deviations from their mean; the bounds are the
    resample quantiles at Φ(z0 + (z0 + z_α)/(1 − a (z0 + z_α))) for α and 1 − α.  NaN where a figure
    is undefined in the full sample or in every resample."""
    n, _k = stats.shape
    total = stats.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = figures(total[None, :])[0]
    m = len(point)
    lo, hi = np.full(m, np.nan), np.full(m, np.nan)
    if n < 2 or n_boot <= 0:
        return lo, hi
    draw = rng.integers(0, n, size=(n_boot, n))
    W = np.bincount((draw + (np.arange(n_boot) * n)[:, None]).ravel(),
                    minlength=n_boot * n).reshape(n_boot, n).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = figures(W @ stats)                  # (B, m)
        jack = figures(total[None, :] - stats)     # (n, m)
    alpha = (1.0 - confidence) / 2.0
    z_lo, z_hi = _st.norm.ppf(alpha), _st.norm.ppf(1 - alpha)
    for j in range(m):
        b = boot[:, j]
        b = b[np.isfinite(b)]
        if not np.isfinite(point[j]) or len(b) < 2:
            continue
        share = (np.sum(b < point[j]) + 0.5 * np.sum(b == point[j])) / len(b)
        z0 = float(_st.norm.ppf(np.clip(share, 1.0 / (2 * len(b)), 1 - 1.0 / (2 * len(b)))))
        jk = jack[:, j]
        jk = jk[np.isfinite(jk)]
        d = jk.mean() - jk if len(jk) > 1 else np.zeros(1)
        den = 6.0 * float(np.sum(d * d)) ** 1.5
        a = float(np.sum(d ** 3)) / den if den > 0 else 0.0
        q_lo = _st.norm.cdf(z0 + (z0 + z_lo) / (1 - a * (z0 + z_lo)))
        q_hi = _st.norm.cdf(z0 + (z0 + z_hi) / (1 - a * (z0 + z_hi)))
        lo[j], hi[j] = np.quantile(b, q_lo), np.quantile(b, q_hi)
    return lo, hi
