"""Bias figures: position bias, verbosity bias, the consistency-bias paradox flag."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.vocab import DECISIVE, first_shown_array

__all__ = ["PositionBias", "Correlation", "position_bias", "verbosity_bias", "consistency_bias_paradox",
           "shown_first_won_from_verdicts"]


@dataclass(frozen=True)
class PositionBias:
    """|share of decided judgments won by the first-shown response - 1/2| on ``n`` judgments."""

    value: float
    share_first: float
    n: int
    n_first: int
    n_missing: int

    def __float__(self) -> float:
        return self.value


@dataclass(frozen=True)
class Correlation:
    """A correlation coefficient with its N (pairs with both values present) and two-sided p-value."""

    value: float
    n: int
    p_value: float
    method: str

    def __float__(self) -> float:
        return self.value


def shown_first_won_from_verdicts(verdict: Any, order: Any) -> np.ndarray:
    """1.0 if the first-shown response won, 0.0 if the second did, NaN for tie/unparsed.

    Canonical verdict A means response_a won; order AB shows response_a first, BA shows response_b
    first.  So the first-shown won iff (AB and A) or (BA and B)."""
    v = pd.Series(verdict, dtype="object").to_numpy()
    o = pd.Series(order, dtype="object").to_numpy()
    out = np.full(len(v), np.nan)
    decided = np.isin(v, DECISIVE)
    out[decided] = (v == first_shown_array(o))[decided]
    return out


def position_bias(shown_first_won: Any, *, zero_division: float = np.nan) -> PositionBias:
    """Position bias = |share of first-shown wins - 1/2| over decided judgments.

    ``shown_first_won``: booleans / 0-1 values, missing (None/NaN) for ties and unparsed verdicts,
    which are dropped and counted.  A judge with no decided judgment gets ``zero_division``."""
    x = pd.to_numeric(pd.Series(shown_first_won, dtype="object"), errors="raise").to_numpy(float)
    miss = np.isnan(x)
    x = x[~miss]
    bad = (x != 0) & (x != 1)
    if bad.any():
        raise ValueError(f"shown_first_won must be 0/1/missing, got {x[bad][0]!r}")
    n = len(x)
    if n == 0:
        return PositionBias(float(zero_division), float("nan"), 0, 0, int(miss.sum()))
    k = int(x.sum())
    share = k / n
    return PositionBias(abs(share - 0.5), share, n, k, int(miss.sum()))


def _corr(x: Any, y: Any, method: str, zero_division: float) -> Correlation:
    from scipy import stats

    a = pd.to_numeric(pd.Series(x, dtype="object"), errors="raise").to_numpy(float)
    b = pd.to_numeric(pd.Series(y, dtype="object"), errors="raise").to_numpy(float)
    if len(a) != len(b):
        raise ValueError(f"length mismatch: {len(a)} vs {len(b)}")
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    n = len(a)
    if n < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return Correlation(float(zero_division), n, float("nan"), method)
    if method == "pearson":
        r = stats.pearsonr(a, b)
    elif method == "spearman":
        r = stats.spearmanr(a, b)
    else:
        r = stats.kendalltau(a, b)
    return Correlation(float(r.statistic), n, float(r.pvalue), method)


def verbosity_bias(len_diff: Any, chose_a: Any, *, zero_division: float = np.nan) -> Correlation:
    """Verbosity bias = Pearson r between the length difference (len(response_a) - len(response_b))
    and the verdict (1 if the judge chose A, 0 if B; ties/unparsed missing and dropped).

    Positive r: the judge favours the longer response.  Constant input -> ``zero_division``."""
    return _corr(len_diff, chose_a, "pearson", zero_division)


def consistency_bias_paradox(test_retest: float, position_bias: float, *,
                             retest_threshold: float = 0.95, bias_threshold: float = 0.10) -> bool:
    """True when a judge is highly reproducible (test-retest > ``retest_threshold``) yet strongly
    position-biased (position bias > ``bias_threshold``) -- stability without validity.
    NaN inputs give False (the flag needs both figures)."""
    tr, pb = float(test_retest), float(position_bias)
    if np.isnan(tr) or np.isnan(pb):
        return False
    return bool(tr > retest_threshold and pb > bias_threshold)
