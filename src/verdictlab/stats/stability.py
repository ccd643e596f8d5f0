"""Anchoring shift and paraphrase change rate (the ``anchoring`` / ``paraphrase`` probes), as pure figures.

Anchoring (:func:`anchoring_shift`)
-----------------------------------
Matched verdicts (same item, order, repetition) without and with the anchor note; ``side`` is the
canonical side the note points to.  ``s_base`` / ``s_probe`` = share of verdicts for the anchored side;
``shift = s_probe - s_base`` (the rise toward the anchor; 0 for a judge that ignores it) and
``susceptibility = shift / (1 - s_base)`` (the share of the verdicts that could move toward the anchor
that did; it estimates the probability of following the anchor).  Intervals: percentile bootstrap
over items (all matched verdicts of an item move together).

Paraphrase (:func:`change_vs_noise`)
------------------------------------
``change`` = share of matched verdicts (same item, order, repetition) that differ between the original
and the reworded question, Wilson interval.  Beside it the judge's own repetition noise on the
original: ``noise`` = share of (item, order) verdict pairs from two different repetitions that differ.
Both compare two separate calls, so a judge whose verdicts move under rewording only as much as under
re-asking has ``excess = change - noise`` near 0 (Newcombe interval, two-proportion z test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.vocab import DECISIVE
from .intervals import percentile_bounds, wilson_bounds
from .self_preference import newcombe_difference, two_proportion_test

__all__ = ["AnchoringShift", "anchor_direction_shifts", "anchoring_shift", "ChangeVsNoise", "change_vs_noise",
           "n_changed", "repetition_disagreement"]


@dataclass(frozen=True)
class AnchoringShift:
    n: int
    n_items: int
    s_base: float
    s_probe: float
    shift: float
    shift_lo: float
    shift_hi: float
    susceptibility: float
    susceptibility_lo: float
    susceptibility_hi: float


def anchoring_shift(verdict_base: Any, verdict_probe: Any, side: Any, item: Any, *, n_boot: int = 1000,
                    seed: int = 0, confidence: float = 0.95) -> AnchoringShift:
    """Shift toward the anchor (module docstring).  Rows are matched verdicts; a missing verdict on
    either side drops the row."""
    vb = pd.Series(verdict_base, dtype=object).to_numpy()
    vp = pd.Series(verdict_probe, dtype=object).to_numpy()
    sd = pd.Series(side, dtype=object).to_numpy()
    keep = pd.notna(vb) & pd.notna(vp) & np.isin(sd, DECISIVE)
    codes, uniq = pd.factorize(pd.Series(item, dtype=object)[keep], sort=True)
    nb = (vb[keep] == sd[keep]).astype(float)
    npr = (vp[keep] == sd[keep]).astype(float)
    n, n_items = int(keep.sum()), len(uniq)
    if n == 0:
        nan = float("nan")
        return AnchoringShift(0, 0, nan, nan, nan, nan, nan, nan, nan, nan)
    per = np.column_stack([np.bincount(codes, minlength=n_items).astype(float),
                           np.bincount(codes, weights=nb, minlength=n_items),
                           np.bincount(codes, weights=npr, minlength=n_items)])

    def figs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            s_b, s_p = t[..., 1] / t[..., 0], t[..., 2] / t[..., 0]
            return s_b, s_p, s_p - s_b, (s_p - s_b) / (1.0 - s_b)

    s_b, s_p, shift, susc = figs(per.sum(axis=0))
    rng = np.random.default_rng(seed)
    w = np.stack([np.bincount(rng.integers(0, n_items, n_items), minlength=n_items) for _ in range(n_boot)])
    _, _, b_shift, b_susc = figs(w @ per)
    lo, hi = percentile_bounds(b_shift, confidence=confidence)
    slo, shi = percentile_bounds(b_susc, confidence=confidence)
    return AnchoringShift(n, n_items, float(s_b), float(s_p), float(shift), float(lo), float(hi), float(susc),
                          float(slo), float(shi))


def anchor_direction_shifts(verdict_base: Any, verdict_probe: Any, side: Any) -> dict[str, float]:
    """The shift toward the anchor per anchor direction: for ``d`` in A / B, over the matched rows whose
    anchor points to ``d``, the share of probed verdicts for ``d`` minus the share of base verdicts for
    ``d`` (NaN when no row points to ``d``)."""
    vb = pd.Series(verdict_base, dtype=object).to_numpy()
    vp = pd.Series(verdict_probe, dtype=object).to_numpy()
    sd = pd.Series(side, dtype=object).to_numpy()
    out = {}
    for d in DECISIVE:
        m = sd == d
        out[d] = float((vp[m] == d).mean() - (vb[m] == d).mean()) if m.any() else float("nan")
    return out


def repetition_disagreement(judgments: pd.DataFrame) -> tuple[int, int]:
    """``(differing, pairs)``: over every (item, order[, step]) and every two different repetitions,
    how many of the verdict pairs differ (unparsed verdicts left out)."""
    keys = [k for k in ("item_id", "order", "step") if k in judgments.columns]
    df = judgments[judgments["verdict"].notna()]
    if df.empty:
        return 0, 0
    counts = df.groupby([*keys, "verdict"], dropna=False).size().unstack(fill_value=0).to_numpy()
    tot = counts.sum(axis=1)
    pairs = tot * (tot - 1) / 2
    same = (counts * (counts - 1) / 2).sum(axis=1)
    return int((pairs - same).sum()), int(pairs.sum())


@dataclass(frozen=True)
class ChangeVsNoise:
    n: int
    change: float
    change_lo: float
    change_hi: float
    n_noise_pairs: int
    noise: float
    noise_lo: float
    noise_hi: float
    excess: float
    excess_lo: float
    excess_hi: float
    excess_p: float


def n_changed(verdict_base: Any, verdict_probe: Any) -> int:
    """How many matched rows' verdicts differ between the base and the probe.  A missing verdict differs
    from everything, another missing one included (the rows :func:`verdictlab.stats.probes.match_probe_rows`
    matches carry a verdict on both sides unless the unparsed policy counts them)."""
    probe = pd.Series(verdict_probe, dtype=object).reset_index(drop=True)
    return int((probe != pd.Series(verdict_base, dtype=object).reset_index(drop=True)).sum())


def change_vs_noise(n_changed: int, n: int, n_noise_diff: int, n_noise_pairs: int, *,
                    confidence: float = 0.95) -> ChangeVsNoise:
    """Change rate beside repetition noise (module docstring), from counts."""
    lo, hi = wilson_bounds(n_changed, n, confidence=confidence)
    nlo, nhi = wilson_bounds(n_noise_diff, n_noise_pairs, confidence=confidence)
    d, dlo, dhi = newcombe_difference(n_changed, n, n_noise_diff, n_noise_pairs, confidence=confidence)
    _, p = two_proportion_test(n_changed, n, n_noise_diff, n_noise_pairs)
    nan = float("nan")
    return ChangeVsNoise(n, n_changed / n if n else nan, float(lo), float(hi), n_noise_pairs,
                         n_noise_diff / n_noise_pairs if n_noise_pairs else nan, float(nlo), float(nhi), d, dlo, dhi, p)
