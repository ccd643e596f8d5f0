"""Variance decomposition: ANOVA eta-squared over cells, G-study variance components."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np
import pandas as pd

__all__ = ["anova_eta_squared", "g_study", "g_study_verdicts"]


def _label(term: tuple[str, ...]) -> str:
    return " x ".join(term)


def anova_eta_squared(frame: pd.DataFrame, *, response: str, factors: Sequence[str],
                      max_order: int = 2) -> pd.DataFrame:
    """eta^2 = SS_effect / SS_total for every main effect and interaction up to ``max_order``
    factors, plus the residual, from an OLS fit with categorical factors (statsmodels,
    sequential type-I sums of squares: main effects first, then interactions, in ``factors``
    order).  The rows sum to 1; for a balanced design type-I sums equal type-II/III, so the order
    does not matter there.

    Returns a frame with columns ``source`` (e.g. ``judge``, ``judge x dataset``, ``Residual``),
    ``df``, ``sum_sq``, ``eta_sq``; attribute ``attrs["n"]`` is the number of observations."""
    try:
        import statsmodels.formula.api as smf
        from statsmodels.stats.anova import anova_lm
    except ImportError as e:  # pragma: no cover - statsmodels is a core dependency
        raise ImportError("anova_eta_squared needs statsmodels: pip install statsmodels") from e
    factors = list(factors)
    if not factors:
        raise ValueError("need at least one factor")
    cols = factors + [response]
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ValueError(f"anova_eta_squared: frame lacks column(s) {missing}")
    data = frame[cols].dropna().copy()
    names = {f: f"f{i}" for i, f in enumerate(factors)}
    data = data.rename(columns={**names, response: "y"})
    for f in names.values():
        data[f] = data[f].astype(str)
    terms: list[tuple[str, ...]] = []
    for order in range(1, max_order + 1):
        terms.extend(combinations(factors, order))
    rhs = " + ".join(":".join(f"C({names[f]})" for f in t) for t in terms)
    model = smf.ols(f"y ~ {rhs}", data=data).fit()
    table = anova_lm(model, typ=1)
    total = float(table["sum_sq"].sum())
    rows = []
    for t, (_, row) in zip([*terms, ("Residual",)], table.iterrows(), strict=True):
        rows.append({"source": "Residual" if t == ("Residual",) else _label(t), "df": float(row["df"]),
                     "sum_sq": float(row["sum_sq"]),
                     "eta_sq": float(row["sum_sq"]) / total if total > 0 else float("nan")})
    out = pd.DataFrame(rows)
    out.attrs["n"] = len(data)
    return out


def _balanced_cells(data: pd.DataFrame, facets: list[str]) -> tuple[np.ndarray, list[int], int]:
    """Cell index of every row, the facet sizes and the replicates per cell r (the same in every
    cell, else ValueError: the G-study needs a fully crossed, balanced design)."""
    codes = []
    sizes = []
    for f in facets:
        c, u = pd.factorize(data[f], sort=True)
        codes.append(c)
        sizes.append(len(u))
    cell = np.ravel_multi_index(codes, sizes)
    n_cells = int(np.prod(sizes))
    cnt = np.bincount(cell, minlength=n_cells)
    r = int(cnt[0]) if n_cells else 0
    if r < 1 or (cnt != r).any():
        raise ValueError("g_study: design is not fully crossed and balanced "
                         f"(cells have between {cnt.min()} and {cnt.max()} observations)")
    return cell, sizes, r


def _mean_squares(Y: np.ndarray, sizes: list[int], r: int, subsets: list[tuple[int, ...]]
                  ) -> tuple[dict[tuple[int, ...], float], dict[tuple[int, ...], float]]:
    """Effect mean square and degrees of freedom of every facet subset, from the cell means Y."""
    m = len(sizes)
    ms: dict[tuple[int, ...], float] = {}
    dfs: dict[tuple[int, ...], float] = {}
    for s in subsets:
        others = tuple(a for a in range(m) if a not in s)
        Z = Y.mean(axis=others, keepdims=True) if others else Y.copy()
        for a in s:
            Z = Z - Z.mean(axis=a, keepdims=True)
        ss = r * float(np.prod([sizes[a] for a in others])) * float((Z**2).sum())
        df = float(np.prod([sizes[a] - 1 for a in s]))
        dfs[s] = df
        ms[s] = ss / df if df > 0 else float("nan")
    return ms, dfs


def _solve_components(ms: dict[tuple[int, ...], float], ms_e: float, sizes: list[int], r: int,
                      subsets: list[tuple[int, ...]]) -> dict[tuple[int, ...], float]:
    """Raw (possibly negative) variance components from the expected-mean-square equations,
    solved from the highest-order interaction down."""
    m = len(sizes)
    raw: dict[tuple[int, ...], float] = {}
    for s in sorted(subsets, key=len, reverse=True):
        acc = ms[s] - ms_e
        for t in subsets:
            if len(t) > len(s) and set(s) <= set(t):
                acc -= r * raw[t] * float(np.prod([sizes[a] for a in range(m) if a not in t]))
        raw[s] = acc / (r * float(np.prod([sizes[a] for a in range(m) if a not in s])))
    return raw


def g_study(frame: pd.DataFrame, *, response: str, facets: Sequence[str]) -> pd.DataFrame:
    """Variance components of a fully crossed random-effects design (G-study, ANOVA estimators).

    ``frame`` has one row per observation; every combination of the ``facets`` levels must occur
    the same number r >= 1 of times (replicates, e.g. repetitions nested in cells).  For each subset
    S of facets, with effect mean square MS_S, the expected mean square is
    E[MS_S] = sigma2_e + r * sum_{T >= S} sigma2_T * prod_{f not in T} n_f;
    the equations are solved from the highest-order interaction down, and negative estimates are
    then set to 0 (reported in ``negative_raw``).  With r = 1 the full interaction is confounded
    with error and reported as ``residual``; with r > 1 the within-cell error is its own row
    ``residual`` and the full interaction is estimated.

    A facet with a single level carries no variance and is left out (``attrs["dropped_facets"]``).
    Returns a frame: ``component`` (``p``, ``j``, ``p x j``, ..., ``residual``), ``df``,
    ``mean_sq``, ``variance`` (>= 0), ``share`` (of the summed components), ``negative_raw``."""
    facets = list(facets)
    missing = [c for c in [*facets, response] if c not in frame.columns]
    if missing:
        raise ValueError(f"g_study: frame lacks column(s) {missing}")
    data = frame[[*facets, response]]
    if data[response].isna().any():
        raise ValueError("g_study: response has missing values; the design must be complete")
    single = [f for f in facets if data[f].nunique() < 2]
    facets = [f for f in facets if f not in single]  # one level: no variance to attribute
    if not facets:
        raise ValueError("g_study: every facet has a single level")
    cell, sizes, r = _balanced_cells(data, facets)
    n_cells = int(np.prod(sizes))
    y = data[response].to_numpy(float)
    sums = np.bincount(cell, weights=y, minlength=n_cells)
    Y = (sums / r).reshape(sizes)
    ss_within = float(((y - Y.ravel()[cell]) ** 2).sum())
    m = len(facets)
    subsets = [s for order in range(1, m + 1) for s in combinations(range(m), order)]
    ms, dfs = _mean_squares(Y, sizes, r, subsets)
    full = tuple(range(m))
    df_e = float(n_cells * (r - 1))
    # with r = 1 the error is confounded with the full interaction, whose row carries it
    ms_e = ss_within / df_e if r > 1 else 0.0
    raw = _solve_components(ms, ms_e, sizes, r, subsets)
    rows = []
    for s in subsets:
        name = _label(tuple(facets[a] for a in s))
        if r == 1 and s == full:
            name = "residual"
        rows.append({"component": name, "df": dfs[s], "mean_sq": ms[s], "negative_raw": raw[s] < 0,
                     "variance": max(raw[s], 0.0)})
    if r > 1:
        rows.append({"component": "residual", "df": df_e, "mean_sq": ms_e, "negative_raw": False,
                     "variance": ms_e})
    out = pd.DataFrame(rows)
    total = out["variance"].sum()
    out["share"] = out["variance"] / total if total > 0 else np.nan
    out.attrs["n"] = len(data)
    out.attrs["replicates"] = r
    out.attrs["dropped_facets"] = single
    return out


def g_study_verdicts(judgments: pd.DataFrame, *,
                     facets: Sequence[str] = ("pair", "judge", "protocol", "order")) -> pd.DataFrame:
    """G-study of verdict direction from a judgments frame (pair x judge x protocol x order, with
    repetitions nested in cells as replicates), via :func:`g_study`.

    Response: 1 for canonical A, 0.5 for tie, 0 for B.  ``pair`` is (dataset, item_id).  The design
    must be fully crossed and balanced, so pairs lacking any parsed verdict in any cell-repetition
    are dropped (``attrs["n_pairs_dropped"]``); every cell must have the same number of repetitions.
    Filter to one temperature first (temperature is not a facet here unless listed)."""
    need = [f for f in facets if f != "pair"] + ["dataset", "item_id", "verdict", "rep"]
    missing = [c for c in need if c not in judgments.columns]
    if missing:
        raise ValueError(f"g_study_verdicts: judgments lack column(s) {missing}")
    df = judgments.copy()
    df["pair"] = df["dataset"].astype(str) + "\x1f" + df["item_id"].astype(str)
    df["y"] = df["verdict"].map({"A": 1.0, "tie": 0.5, "B": 0.0})
    others = [f for f in facets if f != "pair"]
    n_cells = int(np.prod([df[f].nunique() for f in others])) if others else 1
    n_reps = df["rep"].nunique()
    ok = df.dropna(subset=["y"])
    per_pair = ok.groupby("pair").size()
    complete = per_pair.index[per_pair == n_cells * n_reps]
    n_dropped = df["pair"].nunique() - len(complete)
    data = ok[ok["pair"].isin(complete)]
    if data.empty:
        raise ValueError("g_study_verdicts: no pair has a parsed verdict in every cell and repetition")
    out = g_study(data, response="y", facets=list(facets))
    out.attrs["n_pairs"] = len(complete)
    out.attrs["n_pairs_dropped"] = int(n_dropped)
    return out
