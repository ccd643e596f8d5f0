"""Why a figure of a cell is missing, or only an upper bound: one rule for every output.

A figure needs some of five things, and when it is missing the first one it lacks (in this order) is the
reason -- the real cause, whatever else is also lacking:

1. ``no readable replies``  -- not one of the cell's replies could be read (every figure needs one);
2. ``one order``            -- the cell judged its pairs in one presentation order only (phi, A_dec,
   A_max, the capability gap, A - phi q, T and T_joint compare the two orders);
3. ``one repetition``       -- each (pair, order) was judged once, so reproducibility (C, self-consistency)
   is not measured: every verdict agrees with itself;
4. ``no labels``            -- no pair of the cell has a gold label A or B (A and everything built on it);
5. ``too few pairs``        -- the cell has all of the above, but no pair left where the figure is
   defined (e.g. no labelled pair read in both orders).

A figure that stands on C is not missing when only C is (one repetition): with C unmeasured, T = C (A - phi q)
is at most A - phi q, so T (and T_joint) is reported as an *upper bound* with that reason.  An adaptive design
does not estimate self-consistency and T_joint (they need every repetition of every unit): ``adaptive design``.

The reasons are the words of :class:`verdictlab.core.vocab.Missing`; what they mean in a sentence is
the report's (:mod:`verdictlab.report.readings`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.vocab import Missing

__all__ = ["FIGURE_NEEDS", "UPPER_BOUND_FIGURES", "figure_reasons", "first_lack", "upper_bound_reasons"]

#: what each figure of :func:`verdictlab.stats.reliability` needs, beside a readable reply and a pair left
#: to stand on (the precedence of the reasons is the order of :class:`~verdictlab.core.vocab.Missing`)
FIGURE_NEEDS: dict[str, tuple[Missing, ...]] = {
    "C": (Missing.ONE_REPETITION,),
    "self_consistency": (Missing.ONE_REPETITION,),
    "phi": (Missing.ONE_ORDER,),
    "A": (Missing.NO_LABELS,),
    "A_dec": (Missing.ONE_ORDER, Missing.NO_LABELS),
    "A_max": (Missing.ONE_ORDER,),
    "capability_gap": (Missing.ONE_ORDER, Missing.NO_LABELS),
    "A_corrected": (Missing.ONE_ORDER, Missing.NO_LABELS),
    "T": (Missing.ONE_ORDER, Missing.NO_LABELS),
    "T_joint": (Missing.ONE_ORDER, Missing.NO_LABELS),
    "tie_rate": (),
}
#: figures that are an upper bound, not missing, when C is not measured (one repetition)
UPPER_BOUND_FIGURES: tuple[str, ...] = ("T", "T_joint")
#: figures an adaptive design does not estimate (:data:`verdictlab.stats.adaptive.UNDEFINED`)
_ADAPTIVE_UNDEFINED = ("self_consistency", "T_joint")


def _lacks(cells: pd.DataFrame) -> dict[Missing, np.ndarray]:
    """Per cell: what it lacks, from what it judged (not from what could be read)."""
    def col(name: str, default: float) -> np.ndarray:
        if name not in cells.columns:
            return np.full(len(cells), default)
        return pd.to_numeric(cells[name], errors="coerce").fillna(default).to_numpy(dtype=float)

    n_judgments, n_unparsed = col("n_judgments", 1.0), col("n_unparsed", 0.0)    # no count: not known to lack
    # a frame without the judged counts (made before they were counted) is read by its readable ones
    orders = col("n_orders", 2.0) if "n_orders" in cells.columns else \
        np.where(col("n_order_pairs", 1.0) > 0, 2.0, np.where(col("n_pairs", 0.0) > 0, 1.0, 2.0))
    labelled = col("n_labelled_judged", 1.0) if "n_labelled_judged" in cells.columns else col("n_labelled_pairs", 1.0)
    return {Missing.NO_READABLE_REPLIES: n_judgments - n_unparsed <= 0,
            Missing.ONE_ORDER: orders < 2,
            Missing.ONE_REPETITION: col("repetitions", 2.0) < 2,
            Missing.NO_LABELS: labelled <= 0}


def first_lack(cells: pd.DataFrame, needs: tuple[Missing, ...]) -> list[Missing | None]:
    """Per row of a cell-figures frame: the first thing (in the order of :class:`Missing`) of a readable
    reply and ``needs`` the cell lacks, None when it lacks none -- the reason of a figure (a
    definition's, say) that needs these and has none there; with none lacking, the reason is its own
    (``too few pairs``, or the data it counts)."""
    lacks = _lacks(cells)
    order = [m for m in Missing if m == Missing.NO_READABLE_REPLIES or m in needs]
    return [next((m for m in order if m in lacks and lacks[m][i]), None) for i in range(len(cells))]


def figure_reasons(cells: pd.DataFrame, figures: tuple[str, ...] | None = None) -> list[dict[str, str]]:
    """Per row of a cell-figures frame (:func:`verdictlab.stats.reliability`: ``n_judgments``,
    ``n_unparsed``, ``n_orders``, ``repetitions``, ``n_labelled_judged`` and the figures): ``{figure:
    reason}`` of every figure of ``figures`` (default :data:`FIGURE_NEEDS`) that is missing -- NaN, or
    not measured by construction (C at one repetition) -- with its reason (module docstring).  A figure
    that is only an upper bound is not here (:func:`upper_bound_reasons`)."""
    names = tuple(FIGURE_NEEDS) if figures is None else figures
    lacks = _lacks(cells)
    adaptive = (cells["design"].astype(object) == "adaptive").to_numpy() if "design" in cells.columns \
        else np.zeros(len(cells), dtype=bool)
    out: list[dict[str, str]] = [{} for _ in range(len(cells))]
    for name in names:
        needs = (Missing.NO_READABLE_REPLIES, *FIGURE_NEEDS.get(name, ()))
        value = pd.to_numeric(cells[name], errors="coerce").to_numpy(dtype=float) if name in cells.columns \
            else np.full(len(cells), np.nan)
        for i in range(len(cells)):
            reason = next((m for m in needs if lacks[m][i]), None)
            if reason is None and np.isnan(value[i]):
                reason = Missing.ADAPTIVE_DESIGN if adaptive[i] and name in _ADAPTIVE_UNDEFINED \
                    else Missing.TOO_FEW_PAIRS
            if reason is not None:
                out[i][name] = reason.value
    return out


def upper_bound_reasons(cells: pd.DataFrame) -> list[dict[str, str]]:
    """Per row of a cell-figures frame: ``{figure: reason}`` of the figures of
    :data:`UPPER_BOUND_FIGURES` that are defined but only an upper bound -- C not measured (one
    repetition) -- and not missing for another reason."""
    lacks = _lacks(cells)
    missing = figure_reasons(cells, UPPER_BOUND_FIGURES)
    return [{name: Missing.ONE_REPETITION.value for name in UPPER_BOUND_FIGURES
             if lacks[Missing.ONE_REPETITION][i] and name not in missing[i]}
            for i in range(len(cells))]
