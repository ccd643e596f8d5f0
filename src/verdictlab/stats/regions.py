"""Cell-level summaries: failure regions on (C, phi), format dispersion of T, cross-benchmark
rank shifts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_C_HIGH", "DEFAULT_PHI_LOW", "PARADOX_BIAS", "PARADOX_RETEST", "REGIONS", "best_in_group",
           "failure_region", "format_dispersion", "rank_shifts", "region_thresholds"]

#: the four regions of the (C, phi) plane, plus "undefined" for NaN input
REGIONS = ("trustworthy", "noisy-but-fair", "chaos", "confidently-biased")

#: defaults: C >= 0.90 is "reproducible" (most Table-1 cells of the source paper sit at 0.8-1.0);
#: phi <= 0.20 is "fair" -- a flip rate of 0.20 with every flip toward one position is a position
#: bias of 0.10, the threshold of the consistency-bias paradox.
DEFAULT_C_HIGH = 0.90
DEFAULT_PHI_LOW = 0.20

#: consistency-bias paradox: test-retest above PARADOX_RETEST with position bias above PARADOX_BIAS
PARADOX_RETEST = 0.95
PARADOX_BIAS = 0.10


def region_thresholds() -> dict[str, float]:
    """The documented defaults of :func:`failure_region` as ``{"c_high", "phi_low"}``."""
    return {"c_high": DEFAULT_C_HIGH, "phi_low": DEFAULT_PHI_LOW}


def failure_region(C: Any, phi: Any, *, c_high: float = DEFAULT_C_HIGH,
                   phi_low: float = DEFAULT_PHI_LOW) -> Any:
    """Region of a cell on the (C, phi) plane:

    * ``trustworthy``         C >= c_high and phi <= phi_low (reproducible and order-invariant)
    * ``noisy-but-fair``      C <  c_high and phi <= phi_low (random, but not position-driven)
    * ``chaos``               C <  c_high and phi >  phi_low
    * ``confidently-biased``  C >= c_high and phi >  phi_low (reproducibly order-driven)

    NaN in either gives ``undefined``.  Scalars give a str, arrays an array of str."""
    c = np.asarray(C, dtype=float)
    p = np.asarray(phi, dtype=float)
    high = c >= c_high
    fair = p <= phi_low
    out = np.where(high & fair, REGIONS[0], np.where(~high & fair, REGIONS[1],
                   np.where(~high & ~fair, REGIONS[2], REGIONS[3]))).astype(object)
    out = np.where(np.isnan(c) | np.isnan(p), "undefined", out)
    return str(out) if out.ndim == 0 else out


def format_dispersion(cells: pd.DataFrame, *, by: Sequence[str] | None = None,
                      over: str = "protocol", value: str = "T", min_protocols: int = 2) -> pd.DataFrame:
    """Delta T_fmt = max - min of ``value`` over ``over`` (protocols) for each ``by`` group, with
    T_min, T_max and the protocols reaching them (cells whose ``value`` is NaN are left out of these).

    ``n_protocols`` counts the protocols of the group, ``n_protocols_with_T`` those with a defined
    ``value``; ``delta_T_fmt`` is NaN unless at least ``min_protocols`` (2) have one -- a single
    protocol has no dispersion to show.  Groups whose every value is NaN are kept (NaN figures).
    ``cells`` is e.g. the frame :func:`reliability` returns.  ``by`` defaults to (judge, dataset)
    plus temperature, step and decoding when those columns are present, so such cells are never mixed."""
    if by is None:
        by = ["judge", "dataset"] + [c for c in ("temperature", "step", "decoding") if c in cells.columns]
    by = list(by)
    need = [*by, over, value]
    missing = [c for c in need if c not in cells.columns]
    if missing:
        raise ValueError(f"format_dispersion: cells lack column(s) {missing}")
    d = cells[need].reset_index(drop=True)
    n_all = d.groupby(by, sort=True, dropna=False)[over].nunique()
    defined = d.dropna(subset=[value])
    g = defined.groupby(by, sort=True, dropna=False)[value]
    imin, imax = g.idxmin(), g.idxmax()
    out = pd.DataFrame(index=n_all.index)
    out["T_min"] = g.min().reindex(n_all.index)
    out["T_max"] = g.max().reindex(n_all.index)
    out[f"{over}_min"] = pd.Series(defined.loc[imin.to_numpy(), over].to_numpy(), index=imin.index,
                                   dtype=object).reindex(n_all.index)
    out[f"{over}_max"] = pd.Series(defined.loc[imax.to_numpy(), over].to_numpy(), index=imax.index,
                                   dtype=object).reindex(n_all.index)
    out[f"n_{over}s"] = n_all.astype(np.int64)
    n_def = g.size().reindex(n_all.index).fillna(0).astype(np.int64)
    out[f"n_{over}s_with_{value}"] = n_def
    out["delta_T_fmt"] = np.where(n_def >= min_protocols, out["T_max"] - out["T_min"], np.nan)
    return out.reset_index()


def best_in_group(cells: pd.DataFrame, *, by: str | Sequence[str] = "dataset", value: str = "T") -> np.ndarray:
    """True for the cell(s) with the highest ``value`` of their ``by`` group (the dataset), only where
    the group has at least two cells with a defined ``value``: "best" is a comparison.  Ties within
    1e-12 are all best."""
    keys = [by] if isinstance(by, str) else list(by)
    v = pd.to_numeric(cells[value], errors="coerce").astype(float)
    if not len(cells):
        return np.zeros(0, dtype=bool)
    grp = cells[keys].astype(str).agg("\x1f".join, axis=1)
    top = v.groupby(grp).transform("max")
    n = v.notna().groupby(grp).transform("sum")
    return ((n >= 2) & v.notna() & ((top - v).abs() <= 1e-12)).to_numpy(dtype=bool)


def rank_shifts(scores_by_benchmark: pd.DataFrame | Mapping[str, Mapping[str, float]], *,
                higher_is_better: bool = True) -> pd.DataFrame:
    """Cross-benchmark rank movement of judges.

    ``scores_by_benchmark``: a frame (index = judges, columns = benchmarks, e.g. kappa) or a mapping
    benchmark -> {judge: score}.  Ranks are 1 = best (ties get the average rank); per judge: the
    rank on each benchmark (``rank_<benchmark>``), ``rank_shift`` = max rank - min rank, ``score_min``,
    ``score_max`` and ``spread`` (score max - min, e.g. the kappa spread).  ``attrs["max_shift"]`` is
    the largest shift; judges missing on a benchmark get NaN rank there."""
    if isinstance(scores_by_benchmark, pd.DataFrame):
        df = scores_by_benchmark.astype(float)
    else:
        df = pd.DataFrame({b: pd.Series(s, dtype=float) for b, s in scores_by_benchmark.items()})
    ranks = df.rank(ascending=not higher_is_better, method="average")
    out = ranks.add_prefix("rank_")
    out["rank_shift"] = ranks.max(axis=1) - ranks.min(axis=1)
    out["score_min"] = df.min(axis=1)
    out["score_max"] = df.max(axis=1)
    out["spread"] = out["score_max"] - out["score_min"]
    out.index.name = "judge"
    out = out.reset_index()
    out.attrs["max_shift"] = float(out["rank_shift"].max()) if len(out) else float("nan")
    return out
