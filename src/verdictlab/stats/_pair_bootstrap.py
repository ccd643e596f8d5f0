"""Pair-level bootstrap of figures that are functions of per-pair sums, with BCa bounds.

The figures of a cell (C, phi, A, T and their expected forms) are functions of column sums of a
per-pair statistics matrix ``stats`` (n pairs x k sums).  Resampling pairs is then one weight matrix
product, and the jackknife (leave one pair out) is ``total - stats``.  Bounds are bias-corrected and
accelerated (BCa; Efron 1987): the percentile bounds undercover for skewed figures such as a small C
estimated from few consistent units, which the adaptive and log-probability designs run into.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from scipy import stats as _st

FigureFn = Callable[[np.ndarray], np.ndarray]

#: at most this many resample weights (resamples x rows) are held at once.  Every resample built at once,
#: a cell of 100,000 pairs at 1,000 resamples held 0.8 GB of draws, 0.8 GB of counts and 0.8 GB of
#: floats: the 5.4M-judgment report peaked at 5.1 GB in one process (5.9 GB of PSS in two) with it; a
#: chunk of 1M weights is 8 MB of draws and 8 MB of weights (1M against 4M: the same CPU, 0.73 s against
#: 0.74 s for 100,000 pairs x 1,000 resamples, and a quarter of the memory; `bench/resample_bench.py`).
RESAMPLE_CHUNK = 1_000_000


def _draws(n: int, n_boot: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The draws of one ``rng.integers(0, n, size=(n_boot, n))`` a few resamples at a time
    (:data:`RESAMPLE_CHUNK` at most): a generator's integers come in the same sequence whether drawn in
    one call or in consecutive ones."""
    step = max(1, RESAMPLE_CHUNK // max(n, 1))
    for start in range(0, n_boot, step):
        yield rng.integers(0, n, size=(min(step, n_boot - start), n))


def _count_into(out: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """``out[i]`` = how often each of the ``n`` rows is drawn in ``draws[i]``, for every resample ``i``.

    One ``np.bincount`` per resample into a float matrix: the previous form (one bincount of all the
    chunk's draws shifted by ``i * n``, then ``astype(float)``) cost 1.26-1.68 s of CPU for 100,000 rows x
    1,000 resamples against 0.73 s for this one (same counts; ``bench/resample_bench.py``: ratio 0.70 at load 2)."""
    n = out.shape[1]
    for i, row in enumerate(draws):
        out[i] = np.bincount(row, minlength=n)
    return out


def resample_weights(n: int, n_boot: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """How often each of ``n`` rows is drawn in each of ``n_boot`` resamples with replacement, as float
    matrices of a few resamples x ``n`` (:data:`RESAMPLE_CHUNK` weights at most), each a new array.  The
    draws are those of one ``rng.integers(0, n, size=(n_boot, n))``."""
    for draws in _draws(n, n_boot, rng):
        yield _count_into(np.empty(draws.shape), draws)


def resampled_sums(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """The column sums of ``values`` (n rows, or n x k) in each of ``n_boot`` resamples of its rows:
    ``(n_boot,)`` or ``(n_boot, k)``, the weights of :func:`resample_weights` counted into one reused
    matrix."""
    x = np.asarray(values, dtype=float)
    buf = np.empty((min(max(1, RESAMPLE_CHUNK // max(len(x), 1)), n_boot), len(x)))
    parts = [_count_into(buf[:len(d)], d) @ x for d in _draws(len(x), n_boot, rng)]
    return np.concatenate(parts) if parts else np.zeros((0, *x.shape[1:]))


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
    sums = resampled_sums(stats, n_boot, rng)    # (B, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = figures(sums)                       # (B, m)
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
