"""Figures that compare cells: how much T moves across protocols (format dispersion) or across the
cells of one judge (spread), the best cell of a dataset, how judges' ranks move across benchmarks, how
far the factorised T is from the jointly measured T_joint, and what a temperature sweep does to C and
to the order-corrected accuracy.  Input: a cell-figures frame (one row per cell, the columns of
:func:`verdictlab.stats.reliability`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["JointGap", "TemperatureEffect", "best_in_group", "format_dispersion", "joint_gap", "rank_shifts",
           "spread_by", "temperature_effect"]


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


def spread_by(cells: pd.DataFrame, *, by: str | Sequence[str] = "judge", value: str = "T") -> pd.DataFrame:
    """Range of ``value`` over the cells of each ``by`` group (default: T over every cell of a judge):
    ``n_cells`` with a defined value, ``<value>_min``, ``<value>_max`` and ``spread`` = max - min (0 for one
    cell).  Groups without a defined value are left out."""
    keys = [by] if isinstance(by, str) else list(by)
    d = cells[[*keys, value]].assign(**{value: pd.to_numeric(cells[value], errors="coerce")}).dropna(subset=[value])
    g = d.groupby(keys, sort=True)[value]
    out = pd.DataFrame({"n_cells": g.size(), f"{value}_min": g.min(), f"{value}_max": g.max()})
    out["spread"] = out[f"{value}_max"] - out[f"{value}_min"]
    return out.reset_index()


@dataclass(frozen=True)
class JointGap:
    """How far the factorised T is from T_joint (the joint event measured directly) over the cells
    with both: ``mean_abs`` = mean |T_joint - T|; ``largest`` = the signed T_joint - T of largest size and
    ``largest_row`` its row position in the frame (None when ``n_cells`` is 0)."""

    n_cells: int
    mean_abs: float
    largest: float
    largest_row: int | None


def joint_gap(cells: pd.DataFrame) -> JointGap:
    """:class:`JointGap` of a cell-figures frame (cells without T or T_joint left out)."""
    if not {"T", "T_joint"} <= set(cells.columns):
        return JointGap(0, float("nan"), float("nan"), None)
    t = pd.to_numeric(cells["T"], errors="coerce").to_numpy(dtype=float)
    tj = pd.to_numeric(cells["T_joint"], errors="coerce").to_numpy(dtype=float)
    both = ~(np.isnan(t) | np.isnan(tj))
    if not both.any():
        return JointGap(0, float("nan"), float("nan"), None)
    gap = np.where(both, tj - t, 0.0)
    row = int(np.argmax(np.abs(gap)))
    return JointGap(int(both.sum()), float(np.abs(gap[both]).mean()), float(gap[row]), row)


@dataclass(frozen=True)
class TemperatureEffect:
    """Mean change of C and of the order-corrected accuracy A - phi q from the lowest to the highest
    temperature, over the ``n_lines`` (judge, protocol, dataset, decoding) combinations run at both
    (NaN changes when there are none; ``t_low == t_high`` when the run has one temperature)."""

    t_low: float
    t_high: float
    n_lines: int
    d_C: float
    d_corrected_accuracy: float


def temperature_effect(cells: pd.DataFrame, *,
                       line: Sequence[str] = ("judge", "protocol", "dataset", "decoding")) -> TemperatureEffect:
    """:class:`TemperatureEffect` of a cell-figures frame: cells with C, A and phi defined; q = 1/2 where a
    cell has none.  ``line`` columns missing from the frame are left out of the line key."""
    needed = ("C", "A", "phi", "temperature")
    num = {c: pd.to_numeric(cells[c], errors="coerce") for c in needed} if set(needed) <= set(cells.columns) else {}
    if not num:
        return TemperatureEffect(float("nan"), float("nan"), 0, float("nan"), float("nan"))
    q = pd.to_numeric(cells["q"], errors="coerce").fillna(0.5) if "q" in cells.columns else 0.5
    keys = [c for c in line if c in cells.columns]
    d = cells[keys].astype(str).assign(t=num["temperature"], C=num["C"], corrected=num["A"] - num["phi"] * q)
    d = d.dropna(subset=["t", "C", "corrected"])
    temps = sorted(set(d["t"]))
    if not temps:
        return TemperatureEffect(float("nan"), float("nan"), 0, float("nan"), float("nan"))
    lo, hi = temps[0], temps[-1]
    both = d[d["t"] == lo].merge(d[d["t"] == hi], on=keys, suffixes=("_lo", "_hi")) if hi != lo else d.iloc[0:0]
    if both.empty:
        return TemperatureEffect(float(lo), float(hi), 0, float("nan"), float("nan"))
    return TemperatureEffect(float(lo), float(hi), len(both), float((both["C_hi"] - both["C_lo"]).mean()),
                             float((both["corrected_hi"] - both["corrected_lo"]).mean()))


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
