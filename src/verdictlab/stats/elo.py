"""Sequential Elo as tournaments publish it, over random match orders.

The online update of FastChat's ``compute_elo`` (``fastchat/serve/monitor/elo_analysis.py``): every
system starts at ``init`` (1000); matches are played one after the other; for a match of a and b with
ratings r_a, r_b, the expected scores are e_a = 1 / (1 + base^((r_b - r_a) / scale)) and
e_b = 1 / (1 + base^((r_a - r_b) / scale)), the actual score s_a is 1 (a won), 1/2 (tie) or 0, and
r_a += K (s_a - e_a), r_b += K (1 - s_a - e_b).  Defaults as published there: K = 4, scale = 400,
base = 10, init = 1000.

The result depends on the order of the matches.  A judge's matches have no natural order, so the
figure is taken over ``n_orders`` random orders (seeded permutations): the mean rating per system and
the percentile interval over orders (the spread the order alone causes, not a sampling interval).

Each match is one parsed judgment (both presentation orders and every repetition are matches, as
every vote is a battle in an arena); ties count 1/2 (``half``, as published) or are left out
(``drop``).

The update loop is inherently sequential.  It is compiled with ``numba`` when that package is
installed (the ``ranking`` extra): ``bench/leaderboard_bench.py`` measures the compiled loop against
the same function run by the Python interpreter; without numba the interpreter runs it (same
numbers, slower).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pandas as pd

from .intervals import percentile_bounds
from .tournament import Tournament, check_tie_rule

__all__ = ["ELO_COLUMNS", "ELO_TIE_RULES", "sequential_elo", "elo_pass"]

ELO_TIE_RULES: tuple[str, ...] = ("half", "drop")
ELO_COLUMNS: tuple[str, ...] = ("system", "elo", "lo", "hi", "rank", "n", "k", "n_orders", "tie_rule")


def elo_pass(first: np.ndarray, second: np.ndarray, score: np.ndarray, ratings: np.ndarray, k: float,
             scale: float, base: float) -> None:
    """Play the matches in the order given, updating ``ratings`` in place (FastChat's update, module
    docstring).  ``score`` = the score of ``first``."""
    for m in range(len(score)):
        a = first[m]
        b = second[m]
        ra = ratings[a]
        rb = ratings[b]
        ea = 1.0 / (1.0 + base ** ((rb - ra) / scale))
        eb = 1.0 / (1.0 + base ** ((ra - rb) / scale))
        sa = score[m]
        ratings[a] = ra + k * (sa - ea)
        ratings[b] = rb + k * (1.0 - sa - eb)


@cache
def _compiled_pass() -> Any:
    """:func:`elo_pass` compiled by numba, or the function itself without numba."""
    try:
        import numba
    except ImportError:
        return elo_pass
    return numba.njit(nogil=True)(elo_pass)


def sequential_elo(t: Tournament, *, k: float = 4.0, scale: float = 400.0, base: float = 10.0,
                   init: float = 1000.0, n_orders: int = 100, seed: int = 0, confidence: float = 0.95,
                   tie_rule: str = "half", compiled: bool = True) -> pd.DataFrame:
    """Per system, best first: ``elo`` = mean over ``n_orders`` random match orders of the final
    sequential Elo rating, ``lo``/``hi`` = percentile bounds over the orders, ``rank`` by the mean,
    ``n`` = the system's matches; ``k``, ``n_orders`` and ``tie_rule`` as used.  ``compiled=False``
    runs the interpreter's loop (the reference the compiled loop is checked against)."""
    check_tie_rule(tie_rule, ELO_TIE_RULES)
    if n_orders < 1:
        raise ValueError(f"n_orders must be >= 1, got {n_orders!r}")
    keep = t.outcome != 1 if tie_rule == "drop" else np.ones(t.n_matches, dtype=bool)
    first = t.first[keep].astype(np.int32)
    second = t.second[keep].astype(np.int32)
    score = np.ascontiguousarray((2 - t.outcome[keep]) / 2.0)      # first won 1, tie 1/2, lost 0
    run = _compiled_pass() if compiled else elo_pass
    rng = np.random.default_rng(seed)
    final = np.empty((n_orders, t.n_systems))
    index = np.arange(len(score), dtype=np.int32)
    for r in range(n_orders):        # one sequential pass per order; the pass itself is compiled
        ratings = np.full(t.n_systems, float(init))
        rng.shuffle(index)
        # the matches gathered in play order first: the pass then reads memory in sequence (a pass
        # reading through the permutation was 7x slower, a cache miss per match)
        run(first[index], second[index], score[index], ratings, float(k), float(scale), float(base))
        final[r] = ratings
    n = np.bincount(first, minlength=t.n_systems) + np.bincount(second, minlength=t.n_systems)
    mean = final.mean(axis=0)
    mean[n == 0] = np.nan
    lo, hi = percentile_bounds(np.where(n > 0, final, np.nan), confidence=confidence)
    rank = (-np.where(np.isnan(mean), -np.inf, mean)).argsort(kind="stable").argsort(kind="stable") + 1
    out = pd.DataFrame({"system": list(t.systems), "elo": mean, "lo": lo, "hi": hi, "rank": rank, "n": n,
                        "k": float(k), "n_orders": n_orders, "tie_rule": tie_rule}, columns=list(ELO_COLUMNS))
    return out.sort_values("rank", kind="stable").reset_index(drop=True)
