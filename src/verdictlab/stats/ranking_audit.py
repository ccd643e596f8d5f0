"""The leaderboard audited: does a judge's ranking of systems survive another order, repetition,
temperature, protocol or judge, does it match the humans', and which systems can it not separate?

Rankings are Bradley-Terry rankings (:mod:`verdictlab.stats.bradley_terry`, ties half).  Several
*variants* of one tournament (one presentation order, one repetition, another configuration, the
human labels) are compared on the prompts they share.

Kendall tau between two rankings: tau-b over the systems both rank (ties in strength handled as
tau-b does; equal to ``scipy.stats.kendalltau``).  Its interval and the probability that the top
system changes come from one bootstrap over prompts: each resample draws the prompts with
replacement, refits every variant on the same drawn prompts, and computes tau and whether the two
variants' top systems differ.  ``p_top_changes`` = the share of resamples in which they differ.
Top-k overlap = |top k of a  intersected with  top k of b| / k.

Separable pairs: for systems x and y, on every prompt where both played, their win shares on that
prompt (wins + ties/2 over matches) are compared; the exact two-sided sign test counts the prompts
where x did better and those where y did better (equal shares carry no sign and drop out).  Why the
sign test: the per-prompt win shares are coarse (a few matches per prompt), tied often and far from
normal, and prompts are the unit a leaderboard generalises over; the sign test is exact under
exchangeable prompts and assumes nothing about the shares' distribution (a paired t test would
assume near-normal differences, the Wilcoxon signed-rank test symmetric ones and few ties).  Holm's
step-down adjustment is applied across all pairs of systems of the tournament.  When systems meet
different opponents on a prompt (random pairings), the opponent mix adds noise to the shares but no
bias in expectation.

Separable groups (tiers): from the top of the Bradley-Terry ranking, a tier is the best remaining
system together with every remaining system the test cannot separate from it.  ``rank_ub`` =
1 + the number of systems separably better than the system (the Arena's "rank (UB)" idea).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from .bradley_terry import fit_bradley_terry
from .intervals import Interval, percentile_bounds
from .significance import exact_sign_test, holm_adjust
from .tournament import Tournament

__all__ = ["RankedSystem", "RankingStability", "LeaderboardAudit", "STABILITY_COLUMNS", "SEPARABLE_COLUMNS",
           "kendall_tau_b", "top_k_overlap", "ranking_stability", "separable_pairs", "separable_tiers",
           "leaderboard_audit"]

STABILITY_COLUMNS: tuple[str, ...] = ("variant_a", "variant_b", "tau", "tau_lo", "tau_hi", "n_systems", "n_prompts",
                                      "top_a", "top_b", "top_changed", "p_top_changes", "top_k", "top_k_overlap",
                                      "n_bootstrap")
SEPARABLE_COLUMNS: tuple[str, ...] = ("system_x", "system_y", "n_prompts", "n_x_better", "n_y_better", "p_value",
                                      "p_holm", "separable", "better")


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between score vectors along the last axis (shape (..., S)); a system with NaN
    in either is left out of that row.  NaN where fewer than two systems or a constant row remain."""
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    i, j = np.triu_indices(x.shape[-1], k=1)
    dx = np.sign(x[..., i] - x[..., j])
    dy = np.sign(y[..., i] - y[..., j])
    ok = np.isfinite(dx) & np.isfinite(dy)
    dx, dy = np.where(ok, dx, 0.0), np.where(ok, dy, 0.0)
    s = (dx * dy).sum(axis=-1)
    nx = (dx != 0).sum(axis=-1)
    ny = (dy != 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((nx > 0) & (ny > 0), s / np.sqrt(nx.astype(float) * ny), np.nan)


def top_k_overlap(x: np.ndarray, y: np.ndarray, k: int) -> float:
    """|top k of x  and  top k of y| / k over the systems both score (higher is better)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    both = np.flatnonzero(np.isfinite(x) & np.isfinite(y))
    k = min(k, len(both))
    if k == 0:
        return float("nan")
    tx = set(both[np.argsort(-x[both], kind="stable")[:k]])
    ty = set(both[np.argsort(-y[both], kind="stable")[:k]])
    return len(tx & ty) / k


def _prompt_wins(t: Tournament, prompt_index: np.ndarray, n_prompts: int) -> sparse.csr_matrix:
    """(P, S*S) wins per prompt: entry (p, i*S + j) = wins of i over j on prompt p (ties half)."""
    S = t.n_systems
    p = prompt_index[t.prompt]
    first_won = (2 - t.outcome) / 2.0
    rows = np.concatenate([p, p])
    cols = np.concatenate([t.first * S + t.second, t.second * S + t.first])
    vals = np.concatenate([first_won, 1.0 - first_won])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(n_prompts, S * S))


def _common_prompts(variants: Mapping[str, Tournament]) -> tuple[dict[str, np.ndarray], int]:
    """Each variant's prompt codes mapped onto one index of every prompt name."""
    names = pd.Index(sorted({p for t in variants.values() for p in t.prompts}))
    return {k: names.get_indexer(list(t.prompts)) for k, t in variants.items()}, len(names)


def _strengths(variants: Mapping[str, Tournament], *, n_bootstrap: int, seed: int
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], int]:
    """Point strengths and (B, S) prompt-bootstrap strengths per variant, every variant refitted on
    the same drawn prompts."""
    index, P = _common_prompts(variants)
    S = next(iter(variants.values())).n_systems
    mats = {k: _prompt_wins(t, index[k], P) for k, t in variants.items()}
    point = {k: fit_bradley_terry(np.asarray(m.sum(axis=0)).reshape(S, S)) for k, m in mats.items()}
    boot: dict[str, np.ndarray] = {}
    if n_bootstrap > 0 and P:
        counts = np.random.default_rng(seed).multinomial(P, np.full(P, 1.0 / P), size=n_bootstrap).astype(float)
        for k, m in mats.items():
            W = np.asarray((m.T @ counts.T).T).reshape(n_bootstrap, S, S)
            boot[k] = fit_bradley_terry(W)
    return point, boot, P


def _top(x: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(x), -np.inf, x).argmax(axis=-1)


def ranking_stability(variants: Mapping[str, Tournament], comparisons: Sequence[tuple[str, str]], *,
                      n_bootstrap: int = 200, seed: int = 0, confidence: float = 0.95, top_k: int = 3
                      ) -> pd.DataFrame:
    """One row per comparison ``(a, b)`` of two variants (tournaments coded with the same systems):
    Kendall tau-b with its prompt-bootstrap interval, the two top systems and whether they differ,
    ``p_top_changes``, the top-k overlap (module docstring); ``n_systems`` = systems both rank,
    ``n_prompts`` = prompts of the union."""
    systems = {t.systems for t in variants.values()}
    if len(systems) > 1:
        raise ValueError("ranking_stability: the variants must be coded with the same systems")
    point, boot, P = _strengths(variants, n_bootstrap=n_bootstrap, seed=seed)
    names = next(iter(systems))
    recs = []
    for a, b in comparisons:
        xa, xb = point[a], point[b]
        both = np.isfinite(xa) & np.isfinite(xb)
        tau = float(kendall_tau_b(xa, xb))
        lo: Any = np.nan
        hi: Any = np.nan
        p_change = np.nan
        if boot:
            ba = np.where(both, boot[a], np.nan)
            bb = np.where(both, boot[b], np.nan)
            lo, hi = percentile_bounds(kendall_tau_b(ba, bb), confidence=confidence)
            p_change = float((_top(ba) != _top(bb)).mean())
        ta, tb = (names[int(_top(np.where(both, x, np.nan)))] if both.any() else None for x in (xa, xb))
        recs.append({"variant_a": a, "variant_b": b, "tau": tau, "tau_lo": float(lo), "tau_hi": float(hi),
                     "n_systems": int(both.sum()), "n_prompts": P, "top_a": ta, "top_b": tb,
                     "top_changed": bool(ta != tb), "p_top_changes": p_change, "top_k": top_k,
                     "top_k_overlap": top_k_overlap(np.where(both, xa, np.nan), xb, top_k),
                     "n_bootstrap": n_bootstrap if boot else 0})
    return pd.DataFrame(recs, columns=list(STABILITY_COLUMNS))


def _prompt_shares(t: Tournament) -> tuple[np.ndarray, np.ndarray]:
    """(P, S) wins (ties half) and matches per prompt and system."""
    S, P = t.n_systems, len(t.prompts)
    first_won = (2 - t.outcome) / 2.0
    won = (np.bincount(t.prompt * S + t.first, weights=first_won, minlength=P * S)
           + np.bincount(t.prompt * S + t.second, weights=1.0 - first_won, minlength=P * S))
    games = np.bincount(t.prompt * S + t.first, minlength=P * S) + np.bincount(t.prompt * S + t.second,
                                                                               minlength=P * S)
    return won.reshape(P, S), games.reshape(P, S)


def separable_pairs(t: Tournament, *, alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of systems that played (x before y by name): prompts both played, prompts where x
    (y) had the higher win share, the exact sign test's p-value, its Holm adjustment across the
    pairs, ``separable`` (adjusted p < ``alpha``) and the ``better`` system when separable (module
    docstring)."""
    won, games = _prompt_shares(t)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(games > 0, won / np.maximum(games, 1), np.nan)
    present = games > 0
    S = t.n_systems
    i, j = np.triu_indices(S, k=1)
    n_shared = np.zeros(len(i), dtype=np.int64)
    x_better = np.zeros(len(i), dtype=np.int64)
    y_better = np.zeros(len(i), dtype=np.int64)
    for x in range(S - 1):       # one row of pairs at a time: (P, S - x - 1) arrays, no loop over prompts
        sel = i == x
        ys = j[sel]
        both = present[:, [x]] & present[:, ys]
        d = np.where(both, share[:, [x]] - share[:, ys], 0.0)
        n_shared[sel] = both.sum(axis=0)
        x_better[sel] = (d > 0).sum(axis=0)
        y_better[sel] = (d < 0).sum(axis=0)
    played = n_shared > 0
    p = np.where(played, exact_sign_test(x_better, y_better), np.nan)
    adj = holm_adjust(p)
    sep = np.nan_to_num(adj, nan=1.0) < alpha
    names = np.asarray(t.systems, dtype=object)
    better = np.where(x_better > y_better, names[i], names[j])
    better[~sep] = None
    out = pd.DataFrame({"system_x": names[i], "system_y": names[j], "n_prompts": n_shared, "n_x_better": x_better,
                        "n_y_better": y_better, "p_value": p, "p_holm": adj, "separable": sep, "better": better},
                       columns=list(SEPARABLE_COLUMNS))
    out.attrs["alpha"] = alpha
    return out[played].reset_index(drop=True)


def separable_tiers(ranking: Sequence[str], pairs: pd.DataFrame) -> tuple[tuple[str, ...], ...]:
    """Tiers from the top of ``ranking`` (best first): the best remaining system and every remaining
    system not separable from it (module docstring).  Pairs missing from ``pairs`` never played on a
    shared prompt and are not separable."""
    sep = {frozenset((x, y)) for x, y, s in zip(pairs["system_x"], pairs["system_y"], pairs["separable"],
                                                strict=True) if s}
    left = list(ranking)
    tiers = []
    while left:
        head = left[0]
        tier = [s for s in left if s == head or frozenset((head, s)) not in sep]
        tiers.append(tuple(tier))
        left = [s for s in left if s not in tier]
    return tuple(tiers)


@dataclass(frozen=True)
class RankedSystem:
    """One system of a judge's ranking: its Elo-scale rating with its interval, its rank, the rank's
    bootstrap range and ``rank_ub`` = 1 + the systems separably better than it."""

    system: str
    rating: Interval
    rank: int
    rank_lo: int
    rank_hi: int
    rank_ub: int


@dataclass(frozen=True)
class RankingStability:
    """Whether one variant's ranking keeps another's: tau with its interval, the two tops, whether the
    top changed and how often it changes under resampled prompts."""

    variant_a: str
    variant_b: str
    tau: Interval
    top_a: str | None
    top_b: str | None
    top_changed: bool
    p_top_changes: float
    top_k_overlap: float


@dataclass(frozen=True)
class LeaderboardAudit:
    """What a decision panel shows about one judge configuration's leaderboard: the ranking with
    intervals, the separable tiers, the stability of the ranking under each variant."""

    ranking: tuple[RankedSystem, ...]
    tiers: tuple[tuple[str, ...], ...]
    stability: tuple[RankingStability, ...]
    n_separable_pairs: int
    n_pairs: int


def leaderboard_audit(ratings: pd.DataFrame, pairs: pd.DataFrame, stability: pd.DataFrame, *,
                      confidence: float = 0.95) -> LeaderboardAudit:
    """Assemble the typed audit from :func:`~verdictlab.stats.bradley_terry.bradley_terry_ratings`,
    :func:`separable_pairs` and :func:`ranking_stability` tables of one configuration."""
    better = pairs.loc[pairs["separable"], "better"].astype(str)
    losers = np.where(pairs.loc[pairs["separable"], "system_x"].astype(str) == better,
                      pairs.loc[pairs["separable"], "system_y"], pairs.loc[pairs["separable"], "system_x"])
    n_above = pd.Series(losers).value_counts()
    ranking = tuple(RankedSystem(str(r.system), Interval(float(r.elo), float(r.lo), float(r.hi), int(r.n), confidence,
                                                         "bootstrap-pairs"), int(r.rank), int(r.rank_lo),
                                 int(r.rank_hi), 1 + int(n_above.get(str(r.system), 0)))
                    for r in ratings.itertuples(index=False))
    tiers = separable_tiers([s.system for s in ranking], pairs)
    stab = tuple(RankingStability(str(r.variant_a), str(r.variant_b),
                                  Interval(float(r.tau), float(r.tau_lo), float(r.tau_hi), int(r.n_systems),
                                           confidence, "bootstrap-prompts"),
                                  r.top_a, r.top_b, bool(r.top_changed), float(r.p_top_changes),
                                  float(r.top_k_overlap)) for r in stability.itertuples(index=False))
    return LeaderboardAudit(ranking, tiers, stab, int(pairs["separable"].sum()), len(pairs))

