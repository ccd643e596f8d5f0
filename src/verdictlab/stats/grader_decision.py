"""The decision between graders: which to rank first, which cannot be told apart from the best, and
the reasons to avoid one -- as codes and numbers (the words are the caller's).

Ranking value: ``T_g`` where every grader of the group has it, else ``T_bound`` (= C x A, what T_g can
at most be when invariance is unmeasured) for all of them -- one value for the whole group, never a
mix.  Against the best: per source item the **trust event** -- right x consistent (where measured) x
invariant under all its preserving cases (where measured) -- compared on the items both graders have
it for, with the exact sign test on the items where they differ (McNemar's exact test: each item is
one unit), Holm-adjusted across the group.

Avoid codes, each against a documented default (an upper interval bound below the line: even the
figure's best case fails it, so a small sample is not condemned by its point estimate):

* ``inconsistent``: C_hi < :data:`AVOID_THRESHOLDS` ``C_min`` (0.80);
* ``disagrees_with_humans``: kappa_hi < ``kappa_min`` (0.40, the bottom of "moderate" agreement);
* ``not_invariant:<kind>``: a preserving kind's invariance upper bound < ``invariance_min`` (0.90);
* ``insensitive:<kind>``: a changing kind's sensitivity upper bound < ``sensitivity_min`` (0.50: it
  follows a flipped label less often than a coin would);
* ``unparsed``: more than ``unparsed_max`` (10 %) of its judgments unparsed;
* ``worse_than_best``: distinguishable from the best (Holm-adjusted p < ``alpha``) and ranked lower.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.vocab import PerturbationClass
from .significance import exact_sign_test, holm_adjust

__all__ = ["AVOID_THRESHOLDS", "VERSUS_BEST_GRADER_COLUMNS", "grader_avoid_codes", "grader_versus_best",
           "ranking_value"]

#: the documented defaults of the avoid codes (module docstring)
AVOID_THRESHOLDS: dict[str, float] = {"C_min": 0.80, "kappa_min": 0.40, "invariance_min": 0.90,
                                      "sensitivity_min": 0.50, "unparsed_max": 0.10, "alpha": 0.05}
VERSUS_BEST_GRADER_COLUMNS: tuple[str, ...] = ("rank", "best", "n_shared", "n_better_best", "n_better_cell", "p",
                                               "p_holm", "distinguishable")


def ranking_value(T: Sequence[float], T_bound: Sequence[float]) -> tuple[np.ndarray, str]:
    """``(values, name)``: T_g for every grader when all have it, else the bound C x A for all."""
    t = np.asarray(T, dtype=float)
    if len(t) and not np.isnan(t).any():
        return t, "T_g"
    return np.asarray(T_bound, dtype=float), "T_bound"


def grader_avoid_codes(*, C_hi: float, kappa_hi: float, n_unparsed: int, n_judgments: int,
                       effects: pd.DataFrame, worse_than_best: bool = False,
                       thresholds: dict[str, float] | None = None) -> tuple[str, ...]:
    """The avoid codes of one grader cell (module docstring); ``effects`` has ``kind``, ``class`` and
    ``rate_hi`` per perturbation kind.  A figure that is NaN (unmeasured) gives no code."""
    th = {**AVOID_THRESHOLDS, **(thresholds or {})}
    codes: list[str] = []
    if C_hi < th["C_min"]:
        codes.append("inconsistent")
    if kappa_hi < th["kappa_min"]:
        codes.append("disagrees_with_humans")
    for kind, cls, hi in zip(effects["kind"], effects["class"], effects["rate_hi"], strict=True):
        if cls == PerturbationClass.PRESERVING and hi < th["invariance_min"]:
            codes.append(f"not_invariant:{kind}")
        elif cls == PerturbationClass.CHANGING and hi < th["sensitivity_min"]:
            codes.append(f"insensitive:{kind}")
    if n_judgments and n_unparsed > th["unparsed_max"] * n_judgments:
        codes.append("unparsed")
    if worse_than_best:
        codes.append("worse_than_best")
    return tuple(codes)


def grader_versus_best(events: pd.DataFrame, values: Sequence[float] | np.ndarray, *, alpha: float = AVOID_THRESHOLDS["alpha"]
                       ) -> pd.DataFrame:
    """One row per grader (``values`` in order: the ranking value of grader ``g`` = 0..G-1) with
    :data:`VERSUS_BEST_GRADER_COLUMNS`.  ``events`` has ``grader`` (0..G-1), ``item`` and ``event`` (0/1,
    NaN = not measured).  ``rank`` is 1 for the highest value (ties share the better rank, NaN last
    and unranked); the best is the first of rank 1."""
    v = np.asarray(values, dtype=float)
    G = len(v)
    out = pd.DataFrame(index=range(G), columns=list(VERSUS_BEST_GRADER_COLUMNS), dtype=object)
    ranks = pd.Series(v).rank(method="min", ascending=False)
    out["rank"] = pd.Series([None if np.isnan(r) else int(r) for r in ranks], index=out.index, dtype=object)
    best = int(np.nanargmax(v)) if G and not np.isnan(v).all() else -1
    out["best"] = [g == best for g in range(G)]
    ev = events.dropna(subset=["event"])
    wide = ev.pivot_table(index="item", columns="grader", values="event", aggfunc="first")
    for g in range(G):
        if best < 0 or g not in wide.columns or best not in wide.columns:
            continue
        x, y = wide[best], wide[g]
        shared = x.notna() & y.notna()
        b = int((shared & (x == 1) & (y == 0)).sum())
        c = int((shared & (x == 0) & (y == 1)).sum())
        out.loc[g, ["n_shared", "n_better_best", "n_better_cell"]] = [int(shared.sum()), b, c]
        out.loc[g, "p"] = float(exact_sign_test(b, c)) if g != best else np.nan
    p = pd.to_numeric(out["p"], errors="coerce").to_numpy(float)
    out["p_holm"] = holm_adjust(p)
    out["distinguishable"] = pd.Series([None if np.isnan(x) else bool(x < alpha) for x in out["p_holm"]],
                                       index=out.index, dtype=object)
    return out
