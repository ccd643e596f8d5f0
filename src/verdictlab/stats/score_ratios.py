"""Score ratio per system against a baseline: FastChat's "X% of ChatGPT".

The Vicuna evaluation (FastChat ``fastchat/eval``, the "relative score" of its blog post) has a judge
score both answers of a question (a score pair such as ``[8, 7]``) and reports, per system, the sum
of the system's scores over the questions it shares with the baseline divided by the sum of the
baseline's scores over the same questions.

Input frame: ``system_a``, ``system_b``, ``score_a``, ``score_b`` (canonical: the scores of
``response_a`` / ``response_b``; NaN where unread), ``item_id`` (the pair item, the bootstrap unit;
with ``dataset`` when present).  Only judgments whose pair has the baseline on one side and both
scores read count; every such judgment adds its two scores (both presentation orders and every
repetition count, as the source's reviews in both orders do).  A negative score is refused
(FastChat's ``[-1, -1]`` marks an unread pair; it is NaN here).  Interval: percentile bootstrap over
the pair items of the system (all of an item's judgments move together).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ._frame import group_codes, require_columns
from .intervals import percentile_bounds

__all__ = ["SCORE_RATIO_COLUMNS", "score_ratios"]

SCORE_RATIO_COLUMNS: tuple[str, ...] = ("system", "baseline", "ratio", "lo", "hi", "score_sum", "baseline_sum", "n",
                                        "n_units", "n_left_out")


def score_ratios(frame: pd.DataFrame, *, baseline: str, n_bootstrap: int = 1000, seed: int = 0,
                 confidence: float = 0.95) -> pd.DataFrame:
    """Per system other than ``baseline``, best first: ``ratio`` = sum of its scores / sum of the
    baseline's (module docstring), ``lo``/``hi``, the two sums, ``n`` (scored judgments),
    ``n_units`` (pair items) and ``n_left_out`` (judgments against the baseline without both scores)."""
    require_columns(frame, ["system_a", "system_b", "score_a", "score_b", "item_id"], who="score_ratios")
    sa = pd.to_numeric(frame["score_a"], errors="coerce").to_numpy(float)
    sb = pd.to_numeric(frame["score_b"], errors="coerce").to_numpy(float)
    scored = np.isfinite(sa) & np.isfinite(sb)
    bad = scored & ((sa < 0) | (sb < 0))
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(f"score_ratios: row {pos} has scores ({sa[pos]!r}, {sb[pos]!r}); expected scores >= 0 "
                         "(an unread score is NaN)")
    a = frame["system_a"].astype(object).to_numpy()
    b = frame["system_b"].astype(object).to_numpy()
    base_a, base_b = a == baseline, b == baseline
    vs = base_a ^ base_b
    other = np.where(base_a, b, a)
    own = np.where(base_a, sb, sa)
    ref = np.where(base_a, sa, sb)
    unit, _ = group_codes(frame, ["dataset", "item_id"] if "dataset" in frame.columns else ["item_id"])
    rng = np.random.default_rng(seed)
    recs = []
    for name in sorted({str(s) for s in other[vs] if s is not None}):   # one pass per system, not per row
        mine = vs & (other == name)
        use = mine & scored
        codes, uniq = pd.factorize(unit[use])
        num = np.bincount(codes, weights=own[use], minlength=len(uniq))
        den = np.bincount(codes, weights=ref[use], minlength=len(uniq))
        ratio = num.sum() / den.sum() if den.sum() > 0 else np.nan
        lo: Any = np.nan
        hi: Any = np.nan
        if n_bootstrap > 0 and len(uniq):
            w = rng.multinomial(len(uniq), np.full(len(uniq), 1.0 / len(uniq)), size=n_bootstrap).astype(float)
            bn, bd = w @ num, w @ den
            with np.errstate(invalid="ignore", divide="ignore"):
                lo, hi = percentile_bounds(np.where(bd > 0, bn / np.where(bd > 0, bd, 1), np.nan),
                                           confidence=confidence)
        recs.append({"system": name, "baseline": baseline, "ratio": ratio, "lo": float(lo), "hi": float(hi),
                     "score_sum": float(num.sum()), "baseline_sum": float(den.sum()), "n": int(use.sum()),
                     "n_units": len(uniq), "n_left_out": int((mine & ~scored).sum())})
    out = pd.DataFrame(recs, columns=list(SCORE_RATIO_COLUMNS))
    return out.sort_values(["ratio", "system"], ascending=[False, True], kind="stable",
                           na_position="last").reset_index(drop=True)
