"""Bradley-Terry strengths of the systems of a tournament by maximum likelihood, on the Elo scale,
with pair-bootstrap intervals.

Model: P(i beats j) = 1 / (1 + exp(-(theta_i - theta_j))).  With W[i, j] the wins of i over j (a tie
is half a win for each side under the ``half`` rule, as FastChat's ``compute_elo_mle_with_tie`` and
``fit_bt`` count it; left out under ``drop``), the log-likelihood is
sum_ij W[i, j] log sigma(theta_i - theta_j).  It is maximised with a weak ridge (``ridge`` / 2 times
sum theta^2, default 1e-6) that fixes the scale's origin (the strengths sum to 0) and keeps a system
that never lost finite; at the optimum the gradient of the likelihood sums to 0, so the strengths are
centred.

Elo scale (FastChat's ``scale_and_offset``): elo = init + scale * theta / ln(base), default
init 1000, scale 400, base 10 -- a 400-point gap is 10:1 odds.  ``anchor=(system, rating)`` shifts
every rating so that system has that rating (the Arena anchors one model).

Fit: Newton's method on all bootstrap resamples at once (one batched linear solve per step).
Hand-written rather than ``choix`` for the bootstrap: ``bench/leaderboard_bench.py`` measures it
against ``choix.ilsr_pairwise_dense`` fitted once per resample (the package's own loop) on the same
win matrices; the tests check the two agree to 1e-6 on the point estimate and against FastChat's
L-BFGS fit of the same loss.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import expit

from .intervals import percentile_bounds
from .tournament import Tournament, TournamentPatterns, check_tie_rule, pattern_draws, tournament_patterns

__all__ = ["BT_TIE_RULES", "RATING_COLUMNS", "fit_bradley_terry", "win_matrices", "bradley_terry_ratings",
           "elo_scale", "ranks_of"]

BT_TIE_RULES: tuple[str, ...] = ("half", "drop")
RATING_COLUMNS: tuple[str, ...] = ("system", "elo", "lo", "hi", "strength", "rank", "rank_lo", "rank_hi", "n",
                                   "tie_rule")


def fit_bradley_terry(wins: np.ndarray, *, ridge: float = 1e-6, max_iter: int = 100, tol: float = 1e-9,
                      max_step: float = 2.0) -> np.ndarray:
    """Strengths (natural log scale, centred) maximising the ridge-penalised Bradley-Terry likelihood
    of each win matrix in ``wins`` (shape (S, S) or (B, S, S); ``wins[..., i, j]`` = wins of i over j,
    fractional allowed).  Newton steps are capped at ``max_step`` per strength (a damped start when
    a system nearly always wins).  A system with no match in a matrix gets NaN there."""
    if ridge <= 0:
        raise ValueError(f"ridge must be > 0, got {ridge!r}")
    W = np.asarray(wins, dtype=float)
    single = W.ndim == 2
    W = W[None] if single else W
    B, S, _ = W.shape
    N = W + W.transpose(0, 2, 1)
    won = W.sum(axis=2)
    theta = np.zeros((B, S))
    active = np.ones(B, dtype=bool)
    diag = np.arange(S)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        th, n = theta[idx], N[idx]
        p = expit(th[:, :, None] - th[:, None, :])
        grad = won[idx] - (n * p).sum(axis=2) - ridge * th
        w = n * p * (1.0 - p)
        # the likelihood does not move when every strength shifts by the same amount: 1 1^T / S added to
        # the negative Hessian fixes that direction (the strengths stay centred) without the tiny ridge
        # alone having to, which left round-off steps along it that never fell under ``tol``
        hess = 1.0 / S - w
        hess[:, diag, diag] += w.sum(axis=2) + ridge
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        step = np.clip(step - step.mean(axis=1, keepdims=True), -max_step, max_step)
        theta[idx] = th + step
        active[idx] = np.abs(step).max(axis=1) > tol
    theta -= theta.mean(axis=1, keepdims=True)
    theta[N.sum(axis=2) == 0] = np.nan
    return theta[0] if single else theta


def win_matrices(p: TournamentPatterns, weights: np.ndarray, *, tie_rule: str = "half") -> np.ndarray:
    """(..., S, S) win matrices from pattern ``weights`` (..., G): W[i, j] = wins of i over j, a tie
    adding 1/2 to both sides (``half``) or nothing (``drop``)."""
    check_tie_rule(tie_rule, BT_TIE_RULES)
    S = p.n_systems
    c = p.counts.astype(float)
    half = 0.5 if tie_rule == "half" else 0.0
    G = len(p.units)
    rows = np.concatenate([np.arange(G), np.arange(G)])
    cols = np.concatenate([p.first * S + p.second, p.second * S + p.first])
    vals = np.concatenate([c[:, 0] + half * c[:, 1], c[:, 2] + half * c[:, 1]])
    cells = sparse.csr_matrix((vals, (rows, cols)), shape=(G, S * S))
    w = np.asarray(weights, dtype=float)
    flat = w.reshape(-1, G)
    out = np.asarray((cells.T @ flat.T).T)
    return out.reshape(*w.shape[:-1], S, S)


def elo_scale(strength: np.ndarray, *, init: float = 1000.0, scale: float = 400.0, base: float = 10.0) -> np.ndarray:
    """Natural-log strengths on the Elo scale: init + scale * strength / ln(base)."""
    return init + scale * np.asarray(strength, dtype=float) / np.log(base)


def ranks_of(scores: np.ndarray) -> np.ndarray:
    """Rank 1 = highest score along the last axis (ties broken by position; NaN ranked last)."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    return (-s).argsort(axis=-1, kind="stable").argsort(axis=-1, kind="stable") + 1


def bradley_terry_ratings(t: Tournament, *, tie_rule: str = "half", n_bootstrap: int = 1000, seed: int = 0,
                          confidence: float = 0.95, init: float = 1000.0, scale: float = 400.0, base: float = 10.0,
                          anchor: tuple[str, float] | None = None, ridge: float = 1e-6) -> pd.DataFrame:
    """Per system, best first: ``elo`` (the Bradley-Terry MLE on the Elo scale, module docstring)
    with percentile pair-bootstrap bounds ``lo``/``hi``, the natural-log ``strength``, ``rank`` and
    its bootstrap range ``rank_lo``/``rank_hi``, and ``n`` (matches the system played that the tie
    rule counts).  ``attrs``: ``n_units``, ``n_bootstrap``, ``tie_rule``, ``ridge``, the scale."""
    check_tie_rule(tie_rule, BT_TIE_RULES)
    p = tournament_patterns(t)
    W = win_matrices(p, p.units.astype(float), tie_rule=tie_rule)
    theta = fit_bradley_terry(W, ridge=ridge)
    offset = 0.0
    if anchor is not None:
        if anchor[0] not in t.systems:
            raise ValueError(f"anchor system {anchor[0]!r} is not among the systems")
        offset = float(anchor[1]) - float(elo_scale(theta, init=init, scale=scale, base=base)[
            t.systems.index(anchor[0])])
    elo = elo_scale(theta, init=init, scale=scale, base=base) + offset
    rank = ranks_of(elo)
    lo = hi = np.full(t.n_systems, np.nan)
    rlo, rhi = rank.astype(float), rank.astype(float)
    if n_bootstrap > 0 and p.n_units:
        draws = pattern_draws(p, n_bootstrap=n_bootstrap, rng=np.random.default_rng(seed))
        boot = elo_scale(fit_bradley_terry(win_matrices(p, draws, tie_rule=tie_rule), ridge=ridge), init=init,
                         scale=scale, base=base)
        if anchor is not None:
            boot += float(anchor[1]) - boot[:, [t.systems.index(anchor[0])]]
        lo, hi = percentile_bounds(boot, confidence=confidence)
        rlo, rhi = percentile_bounds(ranks_of(boot).astype(float), confidence=confidence)
    n = W.sum(axis=1) + W.sum(axis=0)
    out = pd.DataFrame({"system": list(t.systems), "elo": elo, "lo": lo, "hi": hi, "strength": theta,
                        "rank": rank, "rank_lo": np.floor(rlo).astype(int), "rank_hi": np.ceil(rhi).astype(int),
                        "n": np.round(n).astype(np.int64), "tie_rule": tie_rule}, columns=list(RATING_COLUMNS))
    out = out.sort_values("rank", kind="stable").reset_index(drop=True)
    out.attrs.update({"n_units": p.n_units, "n_bootstrap": n_bootstrap, "tie_rule": tie_rule, "ridge": ridge,
                      "init": init, "scale": scale, "base": base, "confidence": confidence})
    return out
