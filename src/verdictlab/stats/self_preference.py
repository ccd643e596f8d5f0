"""Self-preference: does a judge favour responses written by its own model family, and -- the harmful
part -- does it prefer its own response when that response is the wrong one?

Inputs are per-unit rows (one modal verdict per (item, order), as :func:`verdictlab.stats.drift.unit_frame`
gives) carrying ``own_side``: the canonical side (``"A"`` / ``"B"``) written by the judge's family,
on pairs where exactly one response is the judge's family's (other units are not own-vs-other
pairs and are left out before calling).  ``mode`` is the judge's modal verdict, ``label`` the gold.

Figures (normative)
-------------------
* ``own_rate``       share of own-vs-other units with a decisive modal verdict (A or B; tie and
                     no verdict left out) where the judge picks its own side; Wilson interval.
* ``gold_own_rate``  on the labelled units among those, the share where the gold label is the own
                     side; ``judge_own_rate_labelled`` is the judge's rate on exactly those units and
                     ``excess`` = judge_own_rate_labelled - gold_own_rate (paired; exact McNemar on
                     "picked own" vs "gold own" as its test, ``excess_p``).
* ``p_own_when_own_wrong``     P(judge picks own | gold says the other is better);
  ``p_other_when_other_wrong`` P(judge picks other | gold says own is better).  A fair judge makes
                     these two error rates equal; ``harm`` = their difference, with Newcombe's
                     hybrid-score interval (from the two Wilson intervals) and a pooled two-proportion
                     z test (``harm_p``).

The two orders of an item are separate units (not independent; read p-values as approximate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

from ..core.vocab import DECISIVE
from ._frame import require_columns
from .intervals import wilson_bounds
from .significance import mcnemar_exact

__all__ = ["SelfPreference", "two_proportion_test", "newcombe_difference", "self_preference",
           "family_side"]


def two_proportion_test(x1: int, n1: int, x2: int, n2: int) -> tuple[float, float]:
    """Pooled two-proportion z test of p1 = p2: ``(z, two-sided p)``; NaN when undefined
    (an empty group, or a pooled rate of 0 or 1)."""
    if n1 <= 0 or n2 <= 0:
        return float("nan"), float("nan")
    p = (x1 + x2) / (n1 + n2)
    if p in (0.0, 1.0):
        return float("nan"), float("nan")
    z = (x1 / n1 - x2 / n2) / np.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    return float(z), float(2 * _st.norm.sf(abs(z)))


def newcombe_difference(x1: int, n1: int, x2: int, n2: int, *, confidence: float = 0.95
                        ) -> tuple[float, float, float]:
    """Difference p1 - p2 with Newcombe's hybrid score interval (his method 10):
    lo = d - sqrt((p1 - l1)^2 + (u2 - p2)^2),  hi = d + sqrt((u1 - p1)^2 + (p2 - l2)^2),
    (l, u) the Wilson bounds of each proportion.  NaN when either n is 0."""
    if n1 <= 0 or n2 <= 0:
        return float("nan"), float("nan"), float("nan")
    p1, p2 = x1 / n1, x2 / n2
    l1, u1 = (float(v) for v in wilson_bounds(x1, n1, confidence=confidence))
    l2, u2 = (float(v) for v in wilson_bounds(x2, n2, confidence=confidence))
    d = p1 - p2
    return d, d - float(np.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)), d + float(np.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2))


def family_side(system_a: Any, system_b: Any, family: str, *, system_family: dict[str, str] | None = None
                ) -> np.ndarray:
    """Which canonical side (``"A"`` / ``"B"``) is written by ``family``, per pair; None when neither
    or both are.  A system belongs to a family by ``system_family[system]`` when given, else when
    the family name occurs in the system name (case-insensitive: family ``llama`` owns
    ``Llama-3-8B-Instruct``)."""
    fam = family.lower()

    def of(s: Any) -> bool:
        if s is None or (isinstance(s, float) and np.isnan(s)):
            return False
        if system_family is not None and s in system_family:
            return system_family[s].lower() == fam
        return fam in str(s).lower()

    a = np.array([of(s) for s in pd.Series(system_a, dtype=object)], dtype=bool)
    b = np.array([of(s) for s in pd.Series(system_b, dtype=object)], dtype=bool)
    out = np.full(len(a), None, dtype=object)
    out[a & ~b] = "A"
    out[b & ~a] = "B"
    return out


@dataclass(frozen=True)
class SelfPreference:
    n_units: int
    own_rate: float
    own_lo: float
    own_hi: float
    n_labelled: int
    judge_own_rate_labelled: float
    gold_own_rate: float
    excess: float
    excess_p: float
    n_own_wrong: int
    p_own_when_own_wrong: float
    own_wrong_lo: float
    own_wrong_hi: float
    n_other_wrong: int
    p_other_when_other_wrong: float
    other_wrong_lo: float
    other_wrong_hi: float
    harm: float
    harm_lo: float
    harm_hi: float
    harm_z: float
    harm_p: float


def self_preference(units: pd.DataFrame, *, confidence: float = 0.95) -> SelfPreference:
    """Self-preference figures of one cell (module docstring).  ``units``: columns ``mode``,
    ``label`` (A / B / other = unlabelled) and ``own_side`` (A / B)."""
    require_columns(units, ["mode", "label", "own_side"], who="self_preference")
    mode = units["mode"].to_numpy(object)
    own = units["own_side"].to_numpy(object)
    lab = units["label"].to_numpy(object)
    ok = np.isin(own, DECISIVE) & np.isin(mode, DECISIVE)
    picked_own = mode == own
    n = int(ok.sum())
    k = int((picked_own & ok).sum())
    lo, hi = wilson_bounds(k, n, confidence=confidence)
    labelled = ok & np.isin(lab, DECISIVE)
    gold_own = lab == own
    n_lab = int(labelled.sum())
    judge_lab = float((picked_own & labelled).sum() / n_lab) if n_lab else float("nan")
    gold_rate = float((gold_own & labelled).sum() / n_lab) if n_lab else float("nan")
    mc = mcnemar_exact(picked_own[labelled].astype(float), gold_own[labelled].astype(float))
    own_wrong = labelled & ~gold_own          # gold: the other side is better
    other_wrong = labelled & gold_own         # gold: the own side is better
    x1, n1 = int((picked_own & own_wrong).sum()), int(own_wrong.sum())
    x2, n2 = int((~picked_own & other_wrong).sum()), int(other_wrong.sum())
    l1, u1 = wilson_bounds(x1, n1, confidence=confidence)
    l2, u2 = wilson_bounds(x2, n2, confidence=confidence)
    d, dlo, dhi = newcombe_difference(x1, n1, x2, n2, confidence=confidence)
    z, p = two_proportion_test(x1, n1, x2, n2)
    return SelfPreference(
        n_units=n, own_rate=k / n if n else float("nan"), own_lo=float(lo), own_hi=float(hi),
        n_labelled=n_lab, judge_own_rate_labelled=judge_lab, gold_own_rate=gold_rate,
        excess=judge_lab - gold_rate, excess_p=mc.p_value if n_lab else float("nan"),
        n_own_wrong=n1, p_own_when_own_wrong=x1 / n1 if n1 else float("nan"), own_wrong_lo=float(l1),
        own_wrong_hi=float(u1), n_other_wrong=n2, p_other_when_other_wrong=x2 / n2 if n2 else float("nan"),
        other_wrong_lo=float(l2), other_wrong_hi=float(u2), harm=d, harm_lo=dlo, harm_hi=dhi, harm_z=z, harm_p=p)
