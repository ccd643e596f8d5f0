"""Three-class figures: accuracy with ties as a class (``A_3class``) and macro-F1 with per-class
precision / recall (``macro_f1``), per cell, as PandaLM and similar sources report them.

Units are those of :func:`verdictlab.stats.reliability` -- one per (cell, pair, order), predicted
value = the unit's modal verdict over its repetitions (``m(i,o)``) -- but every *labelled* pair counts,
tie labels included (``A`` counts only A/B labels).  Classes are ``A``, ``B`` and ``tie``.

* ``A_3class`` = mean over units whose pair has a label A, B or tie of 1[m(i,o) = label(i)];
  N = ``n_units_3class``; Wilson interval (units of one pair are not independent: approximate, as
  for ``A``).
* precision_k = #(m = k and label = k) / #(m = k); recall_k = #(m = k and label = k) / #(label = k);
  f1_k = 2 P R / (P + R).  An undefined ratio (no unit predicted / labelled k, or P = R = 0) takes
  ``zero_division`` (default 0.0, the value scikit-learn's ``precision_recall_fscore_support`` uses).
* ``macro_f1`` = unweighted mean of f1_k over the classes present among the labels or the predictions
  (scikit-learn's ``average="macro"`` with ``labels`` = those classes).  It is the mean of the
  per-class F1, not the harmonic mean of macro precision and macro recall.
* A unit without a defined prediction -- a split mode (two values tie for the most votes), or an
  unparsed mode under unparsed ``wrong`` -- is wrong for accuracy and a miss for recall; it is no
  class of its own (``n_no_prediction``).  Under unparsed ``exclude`` (default) a unit with no
  parsed verdict is dropped, as in :func:`reliability`.
* ``macro_f1_lo/hi``: pair-level percentile bootstrap (pairs resampled within the cell with all their
  units; ``n_bootstrap`` resamples; vectorised as resample-weight x per-pair confusion counts).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ._frame import label_codes
from .intervals import percentile_bounds, wilson_bounds
from .reliability import DEFAULT_BY, unit_table

__all__ = ["CLASSES", "CLASS_COLUMNS", "class_figures", "macro_f1_score", "per_class_scores"]

CLASSES: tuple[str, ...] = ("A", "B", "tie")
_K = len(CLASSES)
_NO_PRED = _K   # prediction column of units without a defined prediction (split / unparsed mode)

#: the columns of :func:`class_figures` after the cell keys (a contract for the report)
CLASS_COLUMNS: tuple[str, ...] = (
    "n_units_3class", "n_pairs_3class", "n_no_prediction", "A_3class", "A_3class_lo", "A_3class_hi",
    "macro_f1", "macro_f1_lo", "macro_f1_hi",
    *(f"{m}_{c}" for c in CLASSES for m in ("precision", "recall", "f1", "support")),
    "unparsed_policy", "confidence", "n_bootstrap",
)


def per_class_scores(confusion: np.ndarray, *, zero_division: float = 0.0) -> dict[str, np.ndarray]:
    """Precision, recall, F1 and support per class from confusion counts.

    ``confusion[..., g, p]``: units with gold class g (rows, K = 3) and prediction p (K + 1 columns,
    the last = no prediction).  Leading axes (e.g. bootstrap resamples) broadcast.  Returns arrays of
    shape ``(..., K)`` plus ``present`` (class among the labels or the predictions)."""
    c = np.asarray(confusion, dtype=float)
    tp = np.diagonal(c[..., :_K], axis1=-2, axis2=-1)
    predicted = c[..., :_K].sum(axis=-2)
    support = c.sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = np.where(predicted > 0, tp / np.where(predicted > 0, predicted, 1), zero_division)
        recall = np.where(support > 0, tp / np.where(support > 0, support, 1), zero_division)
        denom = precision + recall
        f1 = np.where(denom > 0, 2 * precision * recall / np.where(denom > 0, denom, 1), zero_division)
    return {"precision": precision, "recall": recall, "f1": f1, "support": support,
            "present": (predicted > 0) | (support > 0)}


def macro_f1_score(confusion: np.ndarray, *, zero_division: float = 0.0) -> np.ndarray | float:
    """Mean F1 over the classes present (see :func:`per_class_scores`); NaN with no unit."""
    s = per_class_scores(confusion, zero_division=zero_division)
    n_present = s["present"].sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(n_present > 0, (s["f1"] * s["present"]).sum(axis=-1) / np.maximum(n_present, 1),
                       np.nan)
    return float(out) if np.ndim(out) == 0 else out


def _unit_confusion(judgments: pd.DataFrame, *, policy: FigurePolicy,
                    by: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Cell keys, and per labelled unit: cell code, pair code, confusion-cell index g * (K+1) + p."""
    cells, u = unit_table(judgments, policy=policy, by=by)
    if len(u["pair_row"]):      # a categorical label column whose every value is missing included
        gold_pair = label_codes(judgments["label"].iloc[u["pair_row"]], ties=True)
    else:
        gold_pair = np.zeros(0, dtype=np.int64)
    gold = gold_pair[u["unit_pair"]] if len(u["unit_pair"]) else np.zeros(0, dtype=np.int64)
    mode = u["mode"]
    pred = np.where((mode >= 0) & (mode < _K), mode, _NO_PRED)
    keep = gold >= 0
    return cells, u["unit_cell"][keep], u["unit_pair"][keep], (gold * (_K + 1) + pred)[keep]


def _bootstrap_f1(pair: np.ndarray, conf_idx: np.ndarray, *, n_bootstrap: int,
                  rng: np.random.Generator, zero_division: float) -> np.ndarray:
    """macro-F1 of ``n_bootstrap`` pair resamples of one cell (NaN array when n_bootstrap == 0).

    A resample's confusion counts are the sum of its drawn pairs' confusion rows.  Pairs with equal
    rows are interchangeable, so each resample only counts its draws per *kind* of pair (at most a few
    dozen kinds: gold class x the modal verdicts of two orders) and multiplies by the kinds' rows, the
    draws themselves unchanged (same calls, same sizes).

    The counting is one gather from a uint8 table of kinds (when fewer than 256: 100 KB, in cache) and
    one bincount per resample row.  One bincount over a whole chunk (an int32 table, every row offset by
    its resample) cost 1.10 s of CPU per 10^8 draws against 0.23 s this way (the draws: 0.31 s); at
    5.4M judgments (nine cells of 100,000 pairs, 1,000 resamples) ``_bootstrap_f1`` went from 8.1 to
    about 4.5 s, the same counts."""
    if n_bootstrap <= 0 or len(pair) == 0:
        return np.full(max(n_bootstrap, 0), np.nan)
    codes, pair_dense = np.unique(pair, return_inverse=True)
    n_pairs = len(codes)
    width = _K * (_K + 1)
    per_pair = np.bincount(pair_dense * width + conf_idx, minlength=n_pairs * width).reshape(n_pairs, width)
    kinds, kind_of = _kinds(per_pair)
    n_kinds = len(kinds)
    table = kind_of.astype(np.uint8 if n_kinds <= 256 else np.intp)
    out = np.empty(n_bootstrap)
    chunk = max(1, min(n_bootstrap, 2_000_000 // max(n_pairs, 1)))
    counts = np.empty((chunk, n_kinds), dtype=np.int64)
    picked = np.empty(n_pairs, dtype=table.dtype)
    for start in range(0, n_bootstrap, chunk):
        b = min(chunk, n_bootstrap - start)
        draws = rng.integers(0, n_pairs, size=(b, n_pairs))
        # how many pairs of each kind each resample drew
        for r in range(b):
            counts[r] = np.bincount(table.take(draws[r], out=picked, mode="clip"), minlength=n_kinds)
        conf = (counts[:b] @ kinds).reshape(b, _K, _K + 1)
        out[start:start + b] = macro_f1_score(conf, zero_division=zero_division)
    return out


def _kinds(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a small non-negative count matrix and each row's index among them (int32):
    a row read as the digits of one integer (a row-wise ``np.unique(axis=0)`` sorts structured rows,
    ten times slower), unless those integers would overflow."""
    base = int(rows.max(initial=0)) + 1
    if base ** rows.shape[1] >= 2 ** 62:
        kinds, kind_of = np.unique(rows, axis=0, return_inverse=True)
        return kinds, kind_of.reshape(-1).astype(np.int32)
    number = rows @ (base ** np.arange(rows.shape[1], dtype=np.int64))
    _, first, kind_of = np.unique(number, return_index=True, return_inverse=True)
    return rows[first], kind_of.reshape(-1).astype(np.int32)


def _cell_columns(unit_cell: np.ndarray, unit_pair: np.ndarray, conf_idx: np.ndarray, n_cells: int, *,
                  confidence: float, zero_division: float) -> dict[str, np.ndarray]:
    """The figures of every cell at once but the F1 interval (the same element-wise arithmetic as one
    cell at a time)."""
    conf = np.bincount(unit_cell * (_K * (_K + 1)) + conf_idx,
                       minlength=n_cells * _K * (_K + 1)).reshape(n_cells, _K, _K + 1)
    n = conf.sum(axis=(1, 2))
    correct = np.trace(conf[:, :, :_K], axis1=1, axis2=2)
    lo, hi = wilson_bounds(correct, n, confidence=confidence)
    s = per_class_scores(conf, zero_division=zero_division)
    f1 = np.asarray(macro_f1_score(conf, zero_division=zero_division), dtype=float).reshape(n_cells)
    has = n > 0
    pair_cell = np.zeros(int(unit_pair.max(initial=-1)) + 1, dtype=np.int64)
    pair_cell[unit_pair] = unit_cell
    seen = np.zeros(len(pair_cell), dtype=bool)
    seen[unit_pair] = True
    cols: dict[str, np.ndarray] = {
        "n_units_3class": n.astype(np.int64), "n_pairs_3class": np.bincount(pair_cell[seen], minlength=n_cells),
        "n_no_prediction": conf[:, :, _NO_PRED].sum(axis=1).astype(np.int64),
        "A_3class": np.where(has, correct / np.where(has, n, 1), np.nan), "A_3class_lo": lo, "A_3class_hi": hi,
        "macro_f1": np.where(has, f1, np.nan),
    }
    for k, c in enumerate(CLASSES):
        present = s["present"][:, k]
        for m in ("precision", "recall", "f1"):
            cols[f"{m}_{c}"] = np.where(present, s[m][:, k], np.nan)
        cols[f"support_{c}"] = s["support"][:, k].astype(np.int64)
    return cols


def class_figures(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY, zero_division: float = 0.0,
                  by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """``A_3class`` and ``macro_f1`` (with per-class precision / recall / F1 / support) per cell.

    One row per cell of :func:`verdictlab.stats.reliability` (same ``by``, same unit and unparsed
    rules; see the module docstring).  A cell without a labelled pair has NaN figures and N 0.
    ``policy.n_bootstrap=0`` skips the F1 interval (NaN bounds)."""
    confidence, n_bootstrap = policy.confidence, policy.n_bootstrap
    cells, unit_cell, unit_pair, conf_idx = _unit_confusion(judgments, policy=policy, by=by)
    names = [c for c in CLASS_COLUMNS if c not in ("unparsed_policy", "confidence", "n_bootstrap")]
    G = len(cells)
    if G:
        cols = _cell_columns(unit_cell, unit_pair, conf_idx, G, confidence=confidence, zero_division=zero_division)
        cols["macro_f1_lo"], cols["macro_f1_hi"] = _f1_bounds(unit_cell, unit_pair, conf_idx, G, confidence=confidence,
                                                              n_bootstrap=n_bootstrap, seed=policy.seed,
                                                              zero_division=zero_division)
        body = pd.DataFrame({c: cols[c] for c in names})
    else:
        body = pd.DataFrame([], columns=names)
    out = pd.concat([cells.reset_index(drop=True), body], axis=1)
    out["unparsed_policy"] = policy.unparsed.value
    out["confidence"] = confidence
    out["n_bootstrap"] = n_bootstrap
    return out


def _f1_bounds(unit_cell: np.ndarray, unit_pair: np.ndarray, conf_idx: np.ndarray, n_cells: int, *,
               confidence: float, n_bootstrap: int, seed: int, zero_division: float) -> tuple[np.ndarray, np.ndarray]:
    """The macro-F1 percentile interval of every cell: the cells' resamples drawn one cell after the
    other from one generator (seeded ``seed``), in cell order."""
    lo = np.full(n_cells, np.nan)
    hi = np.full(n_cells, np.nan)
    if n_bootstrap <= 0:
        return lo, hi
    rng = np.random.default_rng(seed)
    order = np.argsort(unit_cell, kind="stable")
    bounds = np.searchsorted(unit_cell[order], np.arange(n_cells + 1))
    for g in range(n_cells):
        sel = order[bounds[g]:bounds[g + 1]]
        boot = _bootstrap_f1(unit_pair[sel], conf_idx[sel], n_bootstrap=n_bootstrap, rng=rng,
                             zero_division=zero_division)
        lo[g], hi[g] = percentile_bounds(boot, confidence=confidence)
    return lo, hi
