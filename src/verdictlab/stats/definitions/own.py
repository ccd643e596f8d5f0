"""verdictlab's own figures (C, phi, A, T, T_joint of :func:`~verdictlab.stats.reliability`; the
three-class accuracy and macro-F1 of :func:`~verdictlab.stats.class_figures`) in the shape of the
published definitions (:data:`~verdictlab.stats.definitions._pairs.DEFINITION_COLUMNS`), so one table
holds them side by side.  Nothing is recomputed: value, interval and N are the library's."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..intervals import wilson_bounds
from ._pairs import DEFINITION_COLUMNS

__all__ = ["CLASS_FIGURES", "RELIABILITY_FIGURES", "class_figure", "reliability_figure"]

#: figure -> (value column, N column, interval columns or None, interval kind, the reliability columns
#: whose sum is the left-out count, or None: the units outside N, ``n_units + n_units_dropped - N``)
RELIABILITY_FIGURES: dict[str, tuple[str, str, tuple[str, str] | None, str, tuple[str, ...] | None]] = {
    "C": ("C", "n_units", ("C_lo", "C_hi"), "wilson", ("n_units_dropped",)),
    "phi": ("phi", "n_order_pairs", ("phi_lo", "phi_hi"), "wilson", ("n_single_order_pairs", "n_pairs_dropped")),
    "A": ("A", "n_labelled_units", ("A_lo", "A_hi"), "wilson", None),
    "T": ("T", "n_labelled_units", ("T_lo", "T_hi"), "bootstrap over pairs", None),
    "T_joint": ("T_joint", "n_joint_units", None, "wilson", None),
}
#: figure -> (value column, interval columns, interval kind)
CLASS_FIGURES: dict[str, tuple[str, tuple[str, str], str]] = {
    "A_3class": ("A_3class", ("A_3class_lo", "A_3class_hi"), "wilson"),
    "macro_f1": ("macro_f1", ("macro_f1_lo", "macro_f1_hi"), "bootstrap over pairs"),
}


def _keys(frame: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """The cell columns of a figures frame: ``by`` and ``step`` where the cells have steps."""
    return frame[[*by, *(["step"] if "step" in frame.columns and "step" not in by else [])]]


def _shape(keys: pd.DataFrame, value: pd.Series, lo: np.ndarray, hi: np.ndarray, n: pd.Series,
           successes: np.ndarray, left_out: np.ndarray, interval: str) -> pd.DataFrame:
    out = keys.reset_index(drop=True).copy()
    cols = {"variant": "", "value": value.to_numpy(dtype=float), "lo": lo, "hi": hi,
            "n": n.to_numpy(dtype=np.int64), "successes": successes, "n_left_out": left_out.astype(np.int64),
            "standard_error": np.nan, "interval": interval}
    for k in DEFINITION_COLUMNS:
        out[k] = cols[k]
    return out


def reliability_figure(rel: pd.DataFrame, figure: str, *, by: Sequence[str],
                       confidence: float = 0.95) -> pd.DataFrame:
    """``figure`` (a key of :data:`RELIABILITY_FIGURES`) of a :func:`~verdictlab.stats.reliability`
    frame, one row per cell.  ``successes`` = value x N for a proportion; T_joint gets the Wilson
    interval of its proportion (the reliability frame carries none); ``n_left_out``: what the cell judged
    outside N, so ``n + n_left_out`` is every pair (phi) or every unit (the rest) of the cell -- for C the
    units dropped (no parsed verdict), for phi the pairs judged in one order and those with nothing parsed
    in either (as :func:`~verdictlab.stats.definitions.consistency_both_orders` counts them), for A and T
    the unlabelled and the dropped units, for T_joint the units outside two-order labelled pairs and the
    dropped ones."""
    value, n_col, bounds, interval, left_col = RELIABILITY_FIGURES[figure]
    n = rel[n_col]
    successes = np.round(rel[value].to_numpy(dtype=float) * n.to_numpy(dtype=float)) if interval == "wilson" \
        else np.full(len(rel), np.nan)
    if bounds:
        lo, hi = rel[bounds[0]].to_numpy(dtype=float), rel[bounds[1]].to_numpy(dtype=float)
    else:
        lo, hi = wilson_bounds(successes, n.to_numpy(dtype=float), confidence=confidence)
    if left_col:
        left = rel[list(left_col)].to_numpy(dtype=np.int64).sum(axis=1)
    else:
        left = (rel["n_units"] + rel["n_units_dropped"] - n).to_numpy()
    return _shape(_keys(rel, by), rel[value], lo, hi, n, successes, left, interval)


def class_figure(cls: pd.DataFrame, rel: pd.DataFrame, figure: str, *, by: Sequence[str]) -> pd.DataFrame:
    """``figure`` (a key of :data:`CLASS_FIGURES`) of a :func:`~verdictlab.stats.class_figures` frame,
    one row per cell; ``rel`` is the :func:`~verdictlab.stats.reliability` frame of the same judgments
    and cells (the same units, so the same cell order), for the units outside the three classes (the
    dropped ones, with no parsed verdict, included)."""
    value, (lo, hi), interval = CLASS_FIGURES[figure]
    n = cls["n_units_3class"]
    successes = np.round(cls["A_3class"].to_numpy(dtype=float) * n.to_numpy(dtype=float)) if interval == "wilson" \
        else np.full(len(cls), np.nan)
    left = np.clip((rel["n_units"] + rel["n_units_dropped"]).to_numpy() - n.to_numpy(), 0, None)
    return _shape(_keys(cls, by), cls[value], cls[lo].to_numpy(dtype=float), cls[hi].to_numpy(dtype=float), n,
                  successes, left, interval)
