"""Every cell against the best cell of its group (the dataset): a paired test over the pairs both judged.

The best cell of a group is the one with the highest ``value`` (T by default; the first on a tie).
Every other cell of the group is compared with it on the event T_joint counts, per pair: the number
of its two orders whose verdict is trustworthy -- reproducible (N = 1), order-invariant (P = 1) and
right -- which is 0, 1 or 2 (:class:`~verdictlab.stats.reliability.PairEvents`).  The pairs of a
comparison are the *shared* pairs: labelled A or B and judged in both orders by both cells (under
unparsed ``exclude`` an order whose verdicts are all unparsed is missing, so its pair is not
shared).  The test is the exact two-sided sign test on the shared pairs where the two cells differ
(:func:`~verdictlab.stats.significance.exact_sign_test`; McNemar's test when each pair is one unit),
and the p-values of all comparisons in the frame (every group) are Holm-adjusted as one family.

The pairs, not their two orders, are the units of the test: the orders of one pair are not
independent.  The ranking is by the factorised T the report shows; the test is on the joint event,
measured directly.  Everything is a few ``bincount`` calls over the unit table: no resampling.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ._frame import require_columns, with_cell_columns
from .reliability import DEFAULT_BY, UnitTable, pair_events, unit_table
from .significance import exact_sign_test, holm_adjust

__all__ = ["VERSUS_BEST_COLUMNS", "versus_best"]

#: the columns of :func:`versus_best` (one row per row of ``cells``, in the same order)
VERSUS_BEST_COLUMNS: tuple[str, ...] = (
    "best", "best_row", "n_shared", "n_better_best", "n_better_cell", "T_joint_shared", "T_joint_best_shared",
    "p", "p_holm", "distinguishable",
)


def _trust_per_pair(judgments: pd.DataFrame, *, policy: FigurePolicy, by: Sequence[str],
                    units: UnitTable | None) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The unit table's cells and, per eligible pair (labelled, judged in both orders): its cell,
    its item id and its count of trustworthy orders (0, 1 or 2)."""
    cells, u = units if units is not None else unit_table(judgments, policy=policy, by=by)
    ev = pair_events(u)
    n_pairs = len(u["pair_cell"])
    trusted = np.bincount(u["unit_pair"], weights=ev.unit_trustworthy.astype(float), minlength=n_pairs)
    eligible = ev.both & (u["pair_label"] >= 0)
    items = judgments["item_id"].to_numpy()[u["pair_row"][eligible]] if n_pairs else np.zeros(0, dtype=object)
    return cells, u["pair_cell"][eligible], items, trusted[eligible].astype(np.int64)


def _rows_of_cells(unit_cells: pd.DataFrame, cells: pd.DataFrame) -> np.ndarray:
    """For each cell of the unit table, its row position in ``cells`` (-1 when ``cells`` lacks it)."""
    keys = list(unit_cells.columns)
    if not keys or not len(unit_cells):
        return np.full(len(unit_cells), -1, dtype=np.int64)
    right = cells.reset_index(drop=True)
    if "step" in keys and "step" not in right.columns:
        right = right.assign(step="")
    right = right[keys].copy()
    if "step" in keys:
        right["step"] = right["step"].astype(object).fillna("")
    left = unit_cells[keys].copy()
    for k in keys:      # one type on both sides (a temperature read back as text from a report, say)
        if k == "temperature":
            left[k], right[k] = left[k].astype(float), right[k].astype(float)
        else:
            left[k], right[k] = left[k].astype(str), right[k].astype(str)
    index = pd.MultiIndex.from_frame(right)
    return np.asarray(index.get_indexer(pd.MultiIndex.from_frame(left)), dtype=np.int64)


def _best_rows(cells: pd.DataFrame, value: str, within: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``cells``: its group number and the row of its group's best (-1: no defined value)."""
    v = pd.to_numeric(cells[value], errors="coerce").to_numpy(dtype=float)
    group, _ = pd.factorize(pd.MultiIndex.from_frame(cells[list(within)].astype(str)), sort=False) \
        if within else (np.zeros(len(cells), dtype=np.int64), None)
    group = np.asarray(group, dtype=np.int64)
    n_groups = int(group.max()) + 1 if len(group) else 0
    best_of_group = np.full(n_groups, -1, dtype=np.int64)
    defined = np.flatnonzero(~np.isnan(v))
    # highest value first, then the earlier row: the first row of each group in this order is its best
    ranked = defined[np.lexsort((defined, -v[defined]))]
    seen_groups, first = np.unique(group[ranked], return_index=True)
    best_of_group[seen_groups] = ranked[first]
    return group, best_of_group[group] if len(group) else np.zeros(0, dtype=np.int64)


def versus_best(judgments: pd.DataFrame, cells: pd.DataFrame, *, value: str = "T",
                within: Sequence[str] = ("dataset",), policy: FigurePolicy = DEFAULT_POLICY,
                by: Sequence[str] = DEFAULT_BY, units: UnitTable | None = None) -> pd.DataFrame:
    """Compare every row of ``cells`` (a cell-figures frame: the cell key and ``value``, e.g. the
    output of :func:`verdictlab.stats.reliability`) with the best row of its ``within`` group.

    One row per row of ``cells``, same order: ``best`` (this row is its group's best), ``best_row``
    (row position of the group's best; -1 when no row of the group has a defined ``value``),
    ``n_shared`` (pairs both judged: labelled, both orders), ``n_better_best`` / ``n_better_cell``
    (shared pairs where the best / this cell has more trustworthy orders), ``T_joint_shared`` and
    ``T_joint_best_shared`` (the share of trustworthy orders on the shared pairs), ``p`` (exact
    two-sided sign test; NaN for the best itself and where no pair is shared), ``p_holm`` (Holm over
    every defined ``p`` of the frame) and ``distinguishable`` (``p_holm < alpha``, the test level of
    ``policy``: 1 - its confidence).  The frame's ``attrs`` hold ``family_size``, ``alpha`` and ``unparsed``.
    ``units``: the unit table of ``judgments`` with ``policy`` and ``by`` when the caller has it
    (:func:`verdictlab.stats.unit_table`, as given to :func:`verdictlab.stats.reliability`), not built again."""
    alpha = policy.alpha
    require_columns(cells, [*within, value], who="versus_best")
    cells = with_cell_columns(cells.reset_index(drop=True), by)
    n = len(cells)
    group, best_row = _best_rows(cells, value, within)
    n_shared: np.ndarray = np.zeros(n, dtype=np.int64)
    better_best: np.ndarray = np.zeros(n, dtype=np.int64)
    better_cell: np.ndarray = np.zeros(n, dtype=np.int64)
    sum_cell: np.ndarray = np.zeros(n)
    sum_best: np.ndarray = np.zeros(n)
    if n and len(judgments):
        unit_cells, pair_cell, items, trusted = _trust_per_pair(judgments, policy=policy, by=by, units=units)
        row = _rows_of_cells(unit_cells, cells)[pair_cell]
        keep = row >= 0
        row, items, trusted = row[keep], items[keep], trusted[keep]
        item_code, _ = pd.factorize(pd.Series(items, dtype=object).astype(str), sort=False)
        item_code = np.asarray(item_code, dtype=np.int64)
        n_items = int(item_code.max()) + 1 if len(item_code) else 0
        # the best's count for each (group, item) present: a table over the pairs' own (group, item)
        # codes, never groups x items (many datasets of many items would make that one huge)
        key, _ = pd.factorize(group[row] * max(n_items, 1) + item_code, sort=False)
        key = np.asarray(key, dtype=np.int64)
        best_count = np.full(int(key.max()) + 1 if len(key) else 0, -1, dtype=np.int64)
        of_best = best_row[row] == row
        best_count[key[of_best]] = trusted[of_best]
        other = best_count[key]
        shared = other >= 0
        r = row[shared]
        n_shared = np.bincount(r, minlength=n)
        better_best = np.bincount(r, weights=(other > trusted)[shared].astype(float), minlength=n).astype(np.int64)
        better_cell = np.bincount(r, weights=(trusted > other)[shared].astype(float), minlength=n).astype(np.int64)
        sum_cell = np.bincount(r, weights=trusted[shared].astype(float), minlength=n)
        sum_best = np.bincount(r, weights=other[shared].astype(float), minlength=n)
    is_best = (best_row == np.arange(n)) & (best_row >= 0)
    tested = ~is_best & (best_row >= 0) & (n_shared > 0)
    p = np.where(tested, exact_sign_test(better_best, better_cell), np.nan)
    p_holm = holm_adjust(p)
    with np.errstate(invalid="ignore", divide="ignore"):
        joint = np.where(n_shared > 0, sum_cell / (2 * n_shared), np.nan)
        joint_best = np.where(n_shared > 0, sum_best / (2 * n_shared), np.nan)
    out = pd.DataFrame({
        "best": is_best, "best_row": best_row, "n_shared": n_shared, "n_better_best": better_best,
        "n_better_cell": better_cell, "T_joint_shared": joint, "T_joint_best_shared": joint_best,
        "p": p, "p_holm": p_holm, "distinguishable": np.nan_to_num(p_holm, nan=1.0) < alpha,
    }, columns=list(VERSUS_BEST_COLUMNS))
    out.attrs.update({"family_size": int(tested.sum()), "alpha": alpha, "unparsed": policy.unparsed.value})
    return out
