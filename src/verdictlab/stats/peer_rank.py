"""Peer rank (Li, Patel and Du 2023, "PRD", its notebook ``peer_rank/peer_ranking.ipynb``): reviewers
that are also contestants weigh each other by how well they do as contestants.

Input: one frame of judgments by several judges (reviewers) over one tournament, with ``judge``,
``system_a``, ``system_b``, ``verdict`` (canonical) and, for the vote, ``dataset, item_id, order``.  A
judgment is a battle between its two systems, scored A won = 1, tie = 1/2, B won = 0 for system A (and
the complement for B).  Unparsed verdicts are left out (counted).

* :func:`weighted_win_rates` -- the notebook's ``compute_winrates``: per system, the sum over its battles
  of its score times the reviewer's weight, divided by its number of battles (unweighted); the weights
  are divided by their mean first (a reviewer without a weight gets the mean of the others).
* :func:`peer_rank` -- ``normal_winrate``: start with equal weights; ``iterations`` times, the win rates
  under the current weights, then each reviewer's weight = its own win rate as a system, min-max scaled
  over the reviewers ((w - min) / (max - min)) and divided by the sum (a reviewer that is no system gets
  the mean).  Returns the last win rates and the weights computed from them.
* :func:`weighted_vote` -- ``weighted_vote``: per (item, order), the weighted mean of the reviewers'
  verdicts coded A = +1, B = -1, tie = 0; above ``eps`` it is A, below ``-eps`` B, else a tie.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["PeerRank", "peer_rank", "weighted_vote", "weighted_win_rates"]

_SCORE_A = {"A": 1.0, "tie": 0.5, "B": 0.0}
_SIGN = {"A": 1.0, "tie": 0.0, "B": -1.0}


@dataclass(frozen=True)
class PeerRank:
    """``win_rates`` by system (weighted, best first), ``weights`` by reviewer (summing to 1), the
    number of battles and of unparsed judgments left out."""

    win_rates: dict[str, float]
    weights: dict[str, float]
    iterations: int
    n_battles: int
    n_unparsed: int


def _filled(weights: Mapping[str, float | None], reviewers: list[str]) -> np.ndarray:
    w = np.array([np.nan if weights.get(r) is None else float(weights[r]) for r in reviewers])  # type: ignore[arg-type]
    if np.isnan(w).all():
        return np.ones(len(w))
    return np.where(np.isnan(w), np.nanmean(w), w)


def weighted_win_rates(frame: pd.DataFrame, weights: Mapping[str, float | None] | None = None) -> dict[str, float]:
    """Per system, its weighted win rate (module docstring), best first; without ``weights`` every
    reviewer weighs 1."""
    f = frame[frame["verdict"].isin(list(_SCORE_A))]
    reviewers = sorted(f["judge"].astype(str).unique())
    if weights is None:
        w = np.ones(len(reviewers))
    else:
        w = _filled(weights, reviewers)
        w = w / w.mean()
    per_judge = dict(zip(reviewers, w, strict=True))
    jw = f["judge"].astype(str).map(per_judge).to_numpy(dtype=float)
    sa = f["verdict"].map(_SCORE_A).to_numpy(dtype=float)
    systems = pd.concat([f["system_a"], f["system_b"]]).astype(str)
    wins = pd.Series(np.concatenate([sa * jw, (1.0 - sa) * jw]), index=systems.to_numpy()).groupby(level=0).sum()
    battles = systems.value_counts()
    rates = (wins / battles.reindex(wins.index)).sort_values(ascending=False, kind="mergesort")
    return {str(k): float(v) for k, v in rates.items()}


def _minmax(rates: Mapping[str, float], reviewers: list[str]) -> dict[str, float]:
    w = _filled({r: rates.get(r) for r in reviewers}, reviewers)
    span = w.max() - w.min()
    scaled = (w - w.min()) / span if span > 0 else np.ones(len(w))
    return {r: float(v) for r, v in zip(reviewers, scaled / scaled.sum(), strict=True)}


def peer_rank(frame: pd.DataFrame, *, iterations: int = 5) -> PeerRank:
    """The peer-rank weights and weighted win rates (module docstring)."""
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    reviewers = list(pd.unique(frame["judge"].astype(str)))
    weights: dict[str, float] | None = None
    rates: dict[str, float] = {}
    for _ in range(iterations):
        rates = weighted_win_rates(frame, weights)
        weights = _minmax(rates, reviewers)
    assert weights is not None
    n_unparsed = int((~frame["verdict"].isin(list(_SCORE_A))).sum())
    return PeerRank(rates, weights, iterations, len(frame) - n_unparsed, n_unparsed)


def weighted_vote(frame: pd.DataFrame, weights: Mapping[str, float] | None = None, *, eps: float = 0.01) -> pd.DataFrame:
    """One verdict per (dataset, item_id, order): the reviewers' weighted vote (module docstring), with
    the unit's ``label`` (its first) when the frame has one.  A unit whose weights sum to 0 has no vote."""
    f = frame[frame["verdict"].isin(list(_SIGN))]
    key = ["dataset", "item_id", "order"]
    w = np.ones(len(f)) if weights is None else f["judge"].astype(str).map(dict(weights)).fillna(0.0).to_numpy(float)
    x = f["verdict"].map(_SIGN).to_numpy(dtype=float)
    g = pd.DataFrame({**{k: f[k].to_numpy() for k in key}, "wx": w * x, "w": w})
    sums = g.groupby(key, sort=True, observed=True)[["wx", "w"]].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (sums["wx"] / sums["w"]).to_numpy()
    verdict = np.where(mean > eps, "A", np.where(mean < -eps, "B", "tie")).astype(object)
    verdict[~np.isfinite(mean)] = None
    out = sums.reset_index()[key].assign(verdict=verdict)
    if "label" in f.columns:
        labels = f.groupby(key, sort=True, observed=True)["label"].first().reset_index()
        out = out.merge(labels, on=key, how="left")
    return out
