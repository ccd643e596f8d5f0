"""Significance tests: exact McNemar on parse-shared items, Holm correction, rank correlations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

from .bias import Correlation, _corr

__all__ = ["McNemar", "exact_sign_test", "mcnemar_exact", "holm_adjust", "spearman", "kendall"]


@dataclass(frozen=True)
class McNemar:
    """Exact (binomial) McNemar test on ``n_shared`` items both systems produced a parsed verdict for.

    ``only_x`` = items x got right and y wrong, ``only_y`` the reverse; ``n_dropped`` items had a
    missing (unparsed) result on either side."""

    p_value: float
    only_x: int
    only_y: int
    n_shared: int
    n_dropped: int
    acc_x: float
    acc_y: float


def exact_sign_test(n_plus: Any, n_minus: Any) -> np.ndarray:
    """Two-sided exact sign test of ``n_plus`` against ``n_minus`` discordant items (vectorised):
    p = min(1, 2 * Binom(n_plus + n_minus, 1/2).cdf(min(n_plus, n_minus))); p = 1 with no discordant
    item.  McNemar's exact test is this test on its two discordant counts."""
    a = np.asarray(n_plus, dtype=np.int64)
    b = np.asarray(n_minus, dtype=np.int64)
    if (a < 0).any() or (b < 0).any():
        raise ValueError("discordant counts must not be negative")
    n = a + b
    with np.errstate(invalid="ignore"):
        p = np.minimum(1.0, 2.0 * _st.binom.cdf(np.minimum(a, b), n, 0.5))
    return np.where(n == 0, 1.0, p)


def mcnemar_exact(correct_x: Any, correct_y: Any) -> McNemar:
    """Exact two-sided McNemar test: p = min(1, 2 * Binom(b + c, 1/2).cdf(min(b, c))).

    Inputs are per-item correctness (bool/0-1) of two judges on the same items, missing (None/NaN)
    where a judge's verdict was unparsed; only parse-shared items (both present) are used.  With no
    discordant item (b + c = 0) p = 1."""
    x = pd.to_numeric(pd.Series(correct_x, dtype="object"), errors="raise").to_numpy(float)
    y = pd.to_numeric(pd.Series(correct_y, dtype="object"), errors="raise").to_numpy(float)
    if len(x) != len(y):
        raise ValueError(f"length mismatch: {len(x)} vs {len(y)}")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep].astype(bool), y[keep].astype(bool)
    b = int((x & ~y).sum())
    c = int((~x & y).sum())
    p = float(exact_sign_test(b, c))
    n = int(keep.sum())
    return McNemar(p, b, c, n, int((~keep).sum()),
                   float(x.mean()) if n else float("nan"), float(y.mean()) if n else float("nan"))


def holm_adjust(pvalues: Any) -> np.ndarray:
    """Holm step-down adjusted p-values (same order as given; NaN entries stay NaN and are not
    counted in the family).  adj_(i) = max_{j<=i} min(1, (m - j + 1) p_(j)) over sorted p."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    pv = p[ok]
    m = len(pv)
    if m == 0:
        return out
    if ((pv < 0) | (pv > 1)).any():
        raise ValueError("p-values must lie in [0, 1]")
    order = np.argsort(pv, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * pv[order]))
    res = np.empty(m)
    res[order] = adj
    out[ok] = res
    return out


def spearman(x: Any, y: Any, *, zero_division: float = np.nan) -> Correlation:
    """Spearman's rank correlation (pairs with a missing value dropped; constant input undefined)."""
    return _corr(x, y, "spearman", zero_division)


def kendall(x: Any, y: Any, *, zero_division: float = np.nan) -> Correlation:
    """Kendall's tau-b (pairs with a missing value dropped; constant input undefined)."""
    return _corr(x, y, "kendall", zero_division)
