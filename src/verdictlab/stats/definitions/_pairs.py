"""The per-pair view the published definitions read, and the result frame they all return.

:func:`order_pairs` gives one entry per (cell, pair): the pair's label in three classes and the
modal verdict of each presentation order, computed by :func:`verdictlab.stats.reliability.unit_table`
(the same units, modes and split rule as C, phi and A).  Verdict codes:

``A`` 0, ``B`` 1, ``tie`` 2, ``UNPARSED`` 3 (the mode is "unparsed": only under unparsed ``wrong``),
``SPLIT`` -1 (two values share the most votes: no modal verdict), ``MISSING`` -2 (the order was not
judged, or under unparsed ``exclude`` left no parsed verdict).

Every definition returns :data:`DEFINITION_COLUMNS` after the cell keys: ``variant`` (e.g. the order
of a per-order figure, '' otherwise), ``value``, ``lo``/``hi`` (the interval named in ``interval``),
``n`` (the denominator), ``successes`` (for a proportion), ``n_left_out`` (the pairs -- units for a
figure over (pair, order) units, rows for one over judgments -- of the cell outside the denominator:
no label, a tie label where ties are left out, one order only, no readable preference, ...; so
``n + n_left_out`` is everything the cell judged) and ``standard_error`` (where the source reports one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.policy import FigurePolicy
from ...core.vocab import UnparsedPolicy
from .._frame import label_codes, safe_div
from .._pair_bootstrap import resampled_sums
from ..intervals import percentile_bounds, wilson_bounds
from ..reliability import DEFAULT_BY, unit_table

__all__ = ["A", "B", "DEFINITION_COLUMNS", "MISSING", "SPLIT", "TIE", "UNPARSED", "UNPARSED_DROPPED", "UNPARSED_WRONG", "OrderPairs",
           "order_pairs", "proportion_frame", "ratio_frame", "standard_error"]

A, B, TIE, UNPARSED = 0, 1, 2, 3
#: the rule of a source that counts an unparsed output as a value of its own (never right)
UNPARSED_WRONG = FigurePolicy(unparsed=UnparsedPolicy.WRONG)
#: the rule of a source that leaves an unparsed output out
UNPARSED_DROPPED = FigurePolicy(unparsed=UnparsedPolicy.EXCLUDE)
SPLIT = -1
MISSING = -2

#: the columns every definition returns after the cell keys (a contract for the analyses and report)
DEFINITION_COLUMNS: tuple[str, ...] = ("variant", "value", "lo", "hi", "n", "successes", "n_left_out",
                                       "standard_error", "interval")


@dataclass(frozen=True)
class OrderPairs:
    """Per pair (arrays of one length): ``cell`` code (a row of ``cells``), ``item`` (a row of the
    judgments frame of the pair, for its item id), ``label`` (0 A, 1 B, 2 tie, -1 none) and the modal
    verdicts ``ab`` / ``ba`` of the two orders (codes in the module docstring)."""

    cells: pd.DataFrame
    cell: np.ndarray
    label: np.ndarray
    ab: np.ndarray
    ba: np.ndarray
    policy: FigurePolicy

    @property
    def n_cells(self) -> int:
        return len(self.cells)

    @property
    def both(self) -> np.ndarray:
        """Pairs with a modal value (or a split) in both orders."""
        return (self.ab != MISSING) & (self.ba != MISSING)

    def per_cell(self, x: np.ndarray) -> np.ndarray:
        """Sum of ``x`` (one value per pair) within each cell."""
        return np.bincount(self.cell, weights=np.asarray(x, dtype=float), minlength=self.n_cells)


def order_pairs(judgments: pd.DataFrame, *, policy: FigurePolicy, by: Sequence[str] = DEFAULT_BY) -> OrderPairs:
    """The pairs of ``judgments`` with their label and the modal verdict of each order under the
    unparsed policy of ``policy`` (``exclude``: unparsed verdicts dropped; ``wrong``: a value of its own)."""
    cells, u = unit_table(judgments, policy=policy, by=by)
    n_pairs = len(u["pair_cell"])
    if n_pairs:      # a categorical label column whose every value is missing (no gold labels) included
        label = label_codes(judgments["label"].iloc[u["pair_row"]], ties=True)
    else:
        label = np.zeros(0, dtype=np.int64)
    modes = np.full((2, n_pairs), MISSING, dtype=np.int64)
    modes[u["unit_order"], u["unit_pair"]] = u["mode"]
    return OrderPairs(cells=cells, cell=np.asarray(u["pair_cell"], dtype=np.int64), label=label,
                      ab=modes[0], ba=modes[1], policy=policy)


def _frame(cells: pd.DataFrame, cols: dict[str, object]) -> pd.DataFrame:
    out = cells.reset_index(drop=True).copy()
    for k in DEFINITION_COLUMNS:
        out[k] = cols.get(k, np.nan)
    for k in ("n", "n_left_out"):
        out[k] = np.asarray(out[k], dtype=np.int64)
    return out


def proportion_frame(cells: pd.DataFrame, successes: np.ndarray, n: np.ndarray, left_out: np.ndarray, *,
                     confidence: float, variant: str = "") -> pd.DataFrame:
    """A proportion per cell with its Wilson interval (NaN where n = 0)."""
    lo, hi = wilson_bounds(successes, n, confidence=confidence)
    return _frame(cells, {"variant": variant, "value": safe_div(successes, n), "lo": lo, "hi": hi, "n": n,
                          "successes": np.asarray(successes, dtype=float), "n_left_out": left_out,
                          "interval": "wilson"})


def standard_error(total: np.ndarray, total_sq: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Standard error of a mean from the sums of x and x^2 over n values: the sample standard deviation
    (ddof = 1) over sqrt(n), pandas' ``sem``; NaN for n < 2."""
    n_f = np.asarray(n, dtype=float)
    mean = safe_div(total, n_f)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n_f > 1, (total_sq - n_f * mean ** 2) / np.where(n_f > 1, n_f - 1, 1), np.nan)
        return np.sqrt(np.clip(var, 0.0, None) / n_f)


def ratio_frame(cells: pd.DataFrame, cell: np.ndarray, num: np.ndarray, den: np.ndarray, n: np.ndarray,
                left_out: np.ndarray, *, policy: FigurePolicy,
                variant: str = "", successes: np.ndarray | None = None) -> pd.DataFrame:
    """sum(num) / sum(den) per cell, where ``num`` and ``den`` are per-pair sums (``cell`` gives each
    pair's cell), with a percentile bootstrap interval over pairs resampled within the cell
    (``policy``'s resamples, seed and confidence; no resamples: no interval)."""
    n_bootstrap, confidence = policy.n_bootstrap, policy.confidence
    G = len(cells)
    num_c = np.bincount(cell, weights=num, minlength=G)
    den_c = np.bincount(cell, weights=den, minlength=G)
    lo, hi = np.full(G, np.nan), np.full(G, np.nan)
    if n_bootstrap > 0:
        seeds = np.random.SeedSequence(policy.seed).spawn(G) if G else []
        for g in range(G):      # one matrix product per cell
            rows = np.flatnonzero(cell == g)
            if len(rows) == 0:
                continue
            rng = np.random.default_rng(seeds[g])
            sums = resampled_sums(np.column_stack([num[rows], den[rows]]), n_bootstrap, rng)
            with np.errstate(invalid="ignore", divide="ignore"):
                boot = sums[:, 0] / sums[:, 1]
            lo[g], hi[g] = percentile_bounds(boot, confidence=confidence)
    return _frame(cells, {"variant": variant, "value": safe_div(num_c, den_c), "lo": lo, "hi": hi, "n": n,
                          "successes": np.nan if successes is None else successes, "n_left_out": left_out,
                          "interval": "bootstrap over pairs" if n_bootstrap > 0 else "none"})
