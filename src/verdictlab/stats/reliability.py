"""Reliability figures per cell: C, self-consistency, phi, A, A_dec, A_max, capability gap, T, T_joint.

Definitions: docs/definitions.md, "verdictlab's own figures" (the project's reference; tests pin them).  For pair i, order o in {AB, BA},
repetitions r = 1..R and canonical verdict v(i,o,r):

* ``N(i,o) = 1`` if all R verdicts of the unit (i,o) agree; ``C`` = mean N over units.
* ``self_consistency`` = mean over units of (count of the modal verdict) / R.
* ``m(i,o)`` = modal verdict.  **Split mode**: when two or more values share the top count (e.g.
  R = 2 with one A and one B), ``m`` is undefined: the unit is not consistent (N = 0), its pair is not
  order-invariant (P = 0) and it is never correct.  Such units are counted in ``n_split_modes``.
* ``P(i) = 1`` if m(i,AB) = m(i,BA) (both defined).  ``phi`` = 1 - mean P over pairs that have
  *both* orders (``n_order_pairs``).  A pair seen in one order only counts for C and A but not for
  phi, T_joint or A_dec; those pairs are counted in ``n_single_order_pairs``.  A pair with no unit left
  at all (under ``unparsed="exclude"``: nothing parsed in either order) is in none of the figures and
  is counted in ``n_pairs_dropped`` (``n_pairs`` counts the pairs that have a unit).
* ``A`` = mean over labelled units (label A or B) of 1[m(i,o) = label(i)].  Tie or missing labels
  count for C and phi only.
* One repetition: every verdict agrees with itself, so C (and self-consistency) is not measured: NaN
  (:func:`verdictlab.stats.figure_reasons` says why), and T is only an upper bound, A - phi q.
* ``A_dec`` = accuracy on decisive (P = 1) labelled pairs (``n_decisive`` of them).
* ``q``: the accuracy credited to an undecisive pair.  ``q="auto"`` gives 1/2 when the cell has no
  judge ``tie`` verdict (binary forced choice: an undecisive pair contributes exactly 1/2); when it
  has, q is *measured* as the accuracy on undecisive labelled pairs (1/2 if there are none).  A float
  overrides.  Then ``A_max = 1 - phi (1 - q)``, ``capability_gap = A_max - A``, the order-corrected
  accuracy ``A_corrected = A - phi q``, ``T = C (A - phi q)`` (factorised form; ``A - phi q`` with C not
  measured) and ``T_joint`` = mean over labelled units of two-order
  pairs of N(i,o) P(i) 1[m(i,o) = label(i)] (the joint event, measured directly; its N is
  ``n_joint_units``).

Unparsed verdicts (verdict NULL):

* unparsed ``exclude`` (the default :class:`~verdictlab.core.policy.FigurePolicy`): unparsed judgments are dropped; a unit left with no parsed verdict
  is dropped and counted in ``n_units_dropped``; R of a unit is its number of parsed verdicts.
* unparsed ``wrong``: an unparsed verdict is a value of its own ("unparsed", next to A, B and
  tie).  It equals another unparsed verdict and never equals a label.  So a unit whose R verdicts are
  all unparsed has N = 1 (it agrees with itself across repetitions), a unit mixing unparsed and parsed
  verdicts has N = 0, its modal value may be "unparsed" (which counts in self-consistency), a pair
  whose modes are unparsed in both orders is order-invariant (P = 1), and a unit whose mode is
  "unparsed" is always wrong.  This is how LLMBar's own evaluate.py counts (with R = 1): accuracy =
  mean over both orders of 1[winner = label] with a null winner wrong, positional agreement = share
  of pairs whose two winners are equal, ``None == None`` included -- so 1 - phi is its agreement.

Intervals: Wilson for C (over ``n_units``), phi (over ``n_order_pairs``) and A (over
``n_labelled_units``; units of one pair are not independent, so read it as approximate) in
``C_lo/C_hi`` etc.; a pair-level percentile bootstrap (pairs resampled within the cell, q
re-measured in each resample when it is measured) for T in ``T_lo/T_hi``, and from the same
resamples ``C_boot_lo/hi``, ``phi_boot_lo/hi``, ``A_boot_lo/hi``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ._frame import (
    N_CODES,
    UNPARSED,
    combine,
    group_codes,
    label_codes,
    order_codes,
    require_columns,
    safe_div,
    verdict_codes,
    with_cell_columns,
)
from ._pair_bootstrap import resampled_sums
from .intervals import percentile_bounds, wilson_bounds

__all__ = ["reliability", "UnitTable", "cell_and_item_codes", "coded_reliability", "coded_units", "trust_rate", "accuracy_ceiling", "RELIABILITY_COLUMNS", "PairEvents", "pair_events",
           "unit_table"]

#: the default cells: the full cell key of :mod:`verdictlab.core.vocab` (a frame without ``decoding`` is free)
DEFAULT_BY: tuple[str, ...] = CELL_KEY

#: the columns of :func:`reliability` after the cell keys (a contract for the report).
RELIABILITY_COLUMNS: tuple[str, ...] = (
    "n_pairs", "n_labelled_pairs", "n_order_pairs", "n_single_order_pairs", "n_pairs_dropped", "n_units",
    "n_units_dropped", "n_labelled_units", "n_judgments", "n_unparsed", "parse_failure_rate",
    "repetitions", "C", "C_lo", "C_hi", "self_consistency", "phi", "phi_lo", "phi_hi",
    "A", "A_lo", "A_hi", "A_dec", "n_decisive", "q", "A_max", "capability_gap",
    "T", "T_lo", "T_hi", "T_joint", "n_joint_units", "tie_rate", "n_split_modes", "unparsed_policy",
    "confidence", "n_bootstrap", "C_boot_lo", "C_boot_hi", "phi_boot_lo", "phi_boot_hi",
    "A_boot_lo", "A_boot_hi", "q_measured", "n_orders", "n_labelled_judged", "A_corrected",
)


def trust_rate(C: float | np.ndarray, A: float | np.ndarray, phi: float | np.ndarray, *,
               q: float | np.ndarray = 0.5) -> float | np.ndarray:
    """Trustworthy verdict rate T = C (A - phi q) (docs/definitions.md; the paper's eq. 4 with q = 1/2).

    Inputs are proportions in [0, 1]; NaN propagates (an undefined input gives an undefined T)."""
    out = np.asarray(C, dtype=float) * (np.asarray(A, dtype=float)
                                        - np.asarray(phi, dtype=float) * np.asarray(q, dtype=float))
    return float(out) if np.ndim(out) == 0 else out


def accuracy_ceiling(phi: float | np.ndarray, *, q: float | np.ndarray = 0.5) -> float | np.ndarray:
    """Highest accuracy reachable at flip rate phi: A_max = 1 - phi (1 - q) (= 1 - phi/2 for q = 1/2)."""
    out = 1.0 - np.asarray(phi, dtype=float) * (1.0 - np.asarray(q, dtype=float))
    return float(out) if np.ndim(out) == 0 else out


def _cell_keys(judgments: pd.DataFrame, by: Sequence[str]) -> list[str]:
    keys = list(by)
    require_columns(judgments, keys + ["item_id", "order", "verdict", "label"], who="reliability")
    if "step" in judgments.columns and "step" not in keys:
        steps = judgments["step"]           # compared as they are: a categorical compares its codes
        if (steps.notna() & (steps != "")).any():
            keys.append("step")
    return keys


#: a unit table: the cell key frame and the unit arrays (:func:`unit_table`)
UnitTable = tuple[pd.DataFrame, dict[str, np.ndarray]]


def unit_table(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
               by: Sequence[str] = DEFAULT_BY) -> UnitTable:
    """Per-(cell, pair, order) unit arrays used by :func:`reliability` and the agreement helper.

    Returns the cell key frame and a dict of arrays: ``unit_cell, unit_pair, unit_order, mode``
    (0 A, 1 B, 2 tie, 3 unparsed, -1 split), ``N``, ``share``, ``total`` (verdicts in the unit),
    ``pair_cell, pair_label, pair_item`` (row index of a row of the pair), plus row-level codes."""
    judgments, cell, cell_frame, item = cell_and_item_codes(judgments, by)
    n_rows = len(judgments)
    order = order_codes(judgments["order"]) if n_rows else np.zeros(0, dtype=np.int64)
    vcode = verdict_codes(judgments["verdict"]) if n_rows else np.zeros(0, dtype=np.int64)
    units = coded_units(cell, len(cell_frame), item, order, vcode, policy=policy)
    pair_row = units["pair_row"]
    units["pair_label"] = label_codes(judgments["label"].iloc[pair_row]) if n_rows else np.zeros(0, int)
    return cell_frame, units


def cell_and_item_codes(judgments: pd.DataFrame, by: Sequence[str] = DEFAULT_BY
                        ) -> tuple[pd.DataFrame, np.ndarray, pd.DataFrame, np.ndarray]:
    """``(judgments, cell, cells, item)``: the rows with their cell columns made whole (a NULL step is
    ``''``), each row's cell code (row of the sorted cell frame ``cells``: the ``by`` columns, plus
    ``step`` when a row has one) and item code (in the items' sorted order)."""
    judgments = with_cell_columns(judgments, by)
    keys = _cell_keys(judgments, by)
    if "step" in keys and judgments["step"].isna().any():
        judgments = judgments.assign(step=judgments["step"].astype("object").fillna(""))  # NULL = ''
    cell, cells = group_codes(judgments, keys)
    item, _ = pd.factorize(judgments["item_id"], sort=True, use_na_sentinel=False)  # order-free: same figures whatever the row order
    return judgments, cell, cells, item.astype(np.int64)


def coded_units(cell: np.ndarray, n_cells: int, item: np.ndarray, order: np.ndarray, vcode: np.ndarray, *,
                policy: FigurePolicy = DEFAULT_POLICY) -> dict[str, np.ndarray]:
    """The unit arrays of :func:`unit_table` (all but ``pair_label``) from the rows' integer codes: cell
    (0..n_cells-1), item (codes whose order is the items' order), order (0 AB, 1 BA) and verdict (0 A,
    1 B, 2 tie, 3 unparsed).  A pair's representative row (``pair_row``) is its first row."""
    n_rows = len(cell)
    if n_rows == 0:
        pair = unit = np.zeros(0, dtype=np.int64)
    else:
        pair = combine(cell, item)
        unit = combine(pair, order)
    n_units_all = int(unit.max()) + 1 if n_rows else 0
    n_pairs_all = int(pair.max()) + 1 if n_rows else 0
    counts = np.bincount(unit * N_CODES + vcode, minlength=n_units_all * N_CODES).reshape(
        n_units_all, N_CODES)
    # one representative row per unit / pair
    unit_row = np.zeros(n_units_all, dtype=np.int64)
    unit_row[unit[::-1]] = np.arange(n_rows)[::-1]
    pair_row = np.zeros(n_pairs_all, dtype=np.int64)
    pair_row[pair[::-1]] = np.arange(n_rows)[::-1]

    # the per-unit reductions column by column: numpy's reductions along a row of 3 or 4 counts were
    # most of coded_units' time (argmax 0.78 s, the max / sums 0.9 s of the 5 calls of remedies at 5.4M
    # judgments); these are the same integers (argmax: the first column at the maximum)
    cols = [counts[:, k] for k in range(N_CODES)]
    parsed_total = np.zeros(n_units_all, dtype=np.int64)
    for c in cols[:UNPARSED]:
        parsed_total += c
    eff = cols[:UNPARSED] if policy.drops_unparsed else cols
    total = parsed_total.copy()
    for c in eff[UNPARSED:]:
        total += c
    keep = total > 0
    mx = eff[0].copy()
    for c in eff[1:]:
        np.maximum(mx, c, out=mx)
    n_at_max = np.zeros(n_units_all, dtype=np.int64)
    mode = np.full(n_units_all, len(eff) - 1, dtype=np.int64)
    for k in range(len(eff) - 1, -1, -1):       # the lowest column at the maximum is written last
        at_max = eff[k] == mx
        n_at_max += at_max
        mode[at_max] = k
    split = n_at_max > 1
    mode[split] = -1
    # N: all R verdicts agree.  Under "wrong" an unparsed verdict is a value of its own: R unparsed
    # verdicts agree (as LLMBar counts null == null); under "exclude" unparsed ones are not in eff.
    N = (mx == total) & (mode >= 0)
    share = safe_div(mx, total)
    unit_cell = cell[unit_row]
    unit_order = order[unit_row]

    return {
        "unit_cell": unit_cell[keep],
        "unit_pair": pair[unit_row][keep],
        "unit_order": unit_order[keep],
        "mode": mode[keep],
        "N": N[keep],
        "share": share[keep],
        "total": total[keep],
        "unit_split": split[keep],
        "units_dropped_cell": np.bincount(unit_cell[~keep], minlength=n_cells),
        # the orders each cell judged, readable or not (why phi is missing: one order)
        "cell_orders": (np.bincount(unit_cell * 2 + unit_order, minlength=2 * n_cells)
                        .reshape(n_cells, 2) > 0).sum(axis=1),
        "pair_cell": cell[pair_row],
        "pair_row": pair_row,
        "row_cell": cell,
        "row_vcode": vcode,
        "row_pair": pair,
    }


@dataclass(frozen=True)
class PairEvents:
    """The events of T_joint from a unit table (:func:`unit_table`).

    Per pair: ``present`` (it has a unit), ``both`` (a unit in each order), ``P`` (both orders have the
    same modal verdict, a split mode never agrees; under ``unparsed="wrong"`` unparsed equals
    unparsed).  Per unit: ``unit_correct`` (labelled A/B and its modal verdict is the label),
    ``unit_joint`` (in T_joint's denominator: a labelled unit of a pair judged in both orders) and
    ``unit_trustworthy`` (the joint event N(i,o) P(i) 1[m(i,o) = label(i)] on such a unit)."""

    present: np.ndarray
    both: np.ndarray
    P: np.ndarray
    unit_correct: np.ndarray
    unit_joint: np.ndarray
    unit_trustworthy: np.ndarray


def pair_events(u: dict[str, np.ndarray]) -> PairEvents:
    """:class:`PairEvents` of the unit arrays ``u`` of :func:`unit_table`."""
    up, uo, m = u["unit_pair"], u["unit_order"], u["mode"]
    n_pairs_all = len(u["pair_cell"])
    m_ab = np.full(n_pairs_all, -2, dtype=np.int64)  # -2: order absent
    m_ba = np.full(n_pairs_all, -2, dtype=np.int64)
    m_ab[up[uo == 0]] = m[uo == 0]
    m_ba[up[uo == 1]] = m[uo == 1]
    present = np.zeros(n_pairs_all, dtype=bool)
    present[up] = True
    both = (m_ab != -2) & (m_ba != -2)
    # unparsed == unparsed under "wrong" (LLMBar's positional agreement); a split mode never agrees
    P = both & (m_ab == m_ba) & (m_ab >= 0)
    ulab = u["pair_label"][up]
    correct = (ulab >= 0) & (m == ulab)
    joint = (ulab >= 0) & both[up]
    return PairEvents(present=present, both=both, P=P, unit_correct=correct, unit_joint=joint,
                      unit_trustworthy=joint & u["N"] & P[up] & correct)


def reliability(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY, q: float | str = "auto",
                by: Sequence[str] = DEFAULT_BY, units: UnitTable | None = None) -> pd.DataFrame:
    """Reliability figures per cell, one row per cell (see the module docstring for definitions).

    ``judgments`` is the frame :meth:`verdictlab.store.RunStore.judgments` returns (at least the
    ``by`` columns plus item_id, order, verdict, label; ``rep`` and ``step`` are used if present).
    Cells are the combinations of ``by`` (plus ``step`` when non-empty steps exist).  Undefined
    figures (e.g. A in a cell without labelled pairs) are NaN.  ``policy`` (a
    :class:`~verdictlab.core.policy.FigurePolicy`) says what an unparsed verdict counts as and sets the
    intervals; its ``n_bootstrap=0`` skips the T bootstrap (T_lo/T_hi NaN).  ``units``: the
    :func:`unit_table` of ``judgments`` with the same ``policy`` and ``by`` when the caller has it (the
    report hands the same one to :func:`verdictlab.stats.versus_best`: built twice, it cost 1.2 s of CPU
    of the 5.4M-judgment report)."""
    _check_q(q)
    cells, u = units if units is not None else unit_table(judgments, policy=policy, by=by)
    rep = None
    if "rep" in judgments.columns and len(judgments):
        rep = pd.factorize(judgments["rep"], use_na_sentinel=False)[0].astype(np.int64)
    return _figures(cells, u, rep, policy=policy, q=q)


def coded_reliability(cells: pd.DataFrame, cell: np.ndarray, item: np.ndarray, order: np.ndarray,
                      vcode: np.ndarray, label: np.ndarray, rep: np.ndarray | None, *,
                      policy: FigurePolicy = DEFAULT_POLICY, q: float | str = "auto") -> pd.DataFrame:
    """:func:`reliability` of rows given as integer codes: ``cells`` the frame of the cell keys (row g
    is cell code g; only cells with rows get a figure row, in code order), ``cell``, ``item`` (codes in
    the items' order), ``order`` (0 AB, 1 BA), ``vcode`` (0 A, 1 B, 2 tie, 3 unparsed), ``label`` (0 A,
    1 B, -1 unlabelled) and ``rep`` (None: one repetition) per row.  Same figures as
    :func:`reliability` of the frame those codes were taken from."""
    _check_q(q)
    present = np.flatnonzero(np.bincount(cell, minlength=len(cells)) > 0)
    dense = np.full(len(cells), -1, dtype=np.int64)
    dense[present] = np.arange(len(present))
    cell = dense[cell]
    u = coded_units(cell, len(present), item, order, vcode, policy=policy)
    u["pair_label"] = np.asarray(label, dtype=np.int64)[u["pair_row"]]
    return _figures(cells.iloc[present].reset_index(drop=True), u, rep, policy=policy, q=q)


def _check_q(q: float | str) -> None:
    if not (q == "auto" or isinstance(q, int | float)):
        raise ValueError(f"q must be 'auto' or a number in [0, 1], got {q!r}")
    if isinstance(q, int | float) and not 0.0 <= float(q) <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q!r}")


def _figures(cells: pd.DataFrame, u: dict[str, np.ndarray], rep: np.ndarray | None, *, policy: FigurePolicy,
             q: float | str) -> pd.DataFrame:
    """The figure rows of the cells ``cells`` from their unit arrays ``u`` (:func:`unit_table`) and the
    rows' repetition codes ``rep``."""
    G = len(cells)
    confidence, n_bootstrap = policy.confidence, policy.n_bootstrap
    uc, up, m = u["unit_cell"], u["unit_pair"], u["mode"]
    n_pairs_all = len(u["pair_cell"])

    def per_cell(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
        return np.bincount(idx, weights=np.asarray(x, dtype=float), minlength=G)

    # ---- pairs: modes in both orders; units: correct, joint events ------------------------------
    ev = pair_events(u)
    present, both, P = ev.present, ev.both, ev.P
    lab = u["pair_label"]
    labelled_pair = lab >= 0
    pc = u["pair_cell"]
    u_labelled = lab[up] >= 0
    correct = ev.unit_correct
    u_both = both[up]
    u_P = P[up]

    n_units = per_cell(np.ones_like(m), uc)
    sum_N = per_cell(u["N"], uc)
    C = safe_div(sum_N, n_units)
    self_cons = safe_div(per_cell(u["share"], uc), n_units)
    n_split = per_cell(u["unit_split"], uc)

    n_pairs = per_cell(present, pc)
    n_lab_pairs = per_cell(present & labelled_pair, pc)
    n_labelled_judged = per_cell(labelled_pair, pc)     # readable or not (why A is missing: no labels)
    n_order_pairs = per_cell(both, pc)
    n_single = n_pairs - n_order_pairs
    n_pairs_dropped = per_cell(~present, pc)     # judged, but no unit left (nothing parsed, "exclude")
    n_flip = per_cell(both & ~P, pc)
    phi = safe_div(n_flip, n_order_pairs)

    n_lab_units = per_cell(u_labelled, uc)
    n_correct = per_cell(correct, uc)
    A = safe_div(n_correct, n_lab_units)

    dec_units = u_labelled & u_P
    A_dec = safe_div(per_cell(correct & dec_units, uc), per_cell(dec_units, uc))
    n_decisive = per_cell(P & labelled_pair, pc)
    undec_units = u_labelled & u_both & ~u_P
    undec_correct = per_cell(correct & undec_units, uc)
    undec_n = per_cell(undec_units, uc)

    # ---- row-level counts --------------------------------------------------------------------
    rc, rv = u["row_cell"], u["row_vcode"]
    n_judgments = np.bincount(rc, minlength=G).astype(float)
    n_unparsed = per_cell(rv == UNPARSED, rc)
    n_tie = per_cell(rv == 2, rc)
    n_parsed = n_judgments - n_unparsed
    tie_rate = safe_div(n_tie, n_parsed)
    if rep is not None:
        cr = combine(rc, rep)
        cell_of = np.zeros(int(cr.max(initial=-1)) + 1, dtype=np.int64)
        cell_of[cr] = rc                    # one entry per distinct (cell, rep)
        repetitions = np.bincount(cell_of, minlength=G).astype(float)
    else:
        repetitions = np.ones(G)

    # ---- q, ceiling, T -------------------------------------------------------------------------
    if q == "auto":
        measured = n_tie > 0
        q_arr = np.where(measured, np.where(undec_n > 0, safe_div(undec_correct, undec_n), 0.5), 0.5)
    else:
        measured = np.zeros(G, dtype=bool)
        q_arr = np.full(G, float(q))
    A_max = 1.0 - phi * (1.0 - q_arr)
    A_corrected = A - phi * q_arr
    # one repetition: C is not measured (every verdict agrees with itself) and T is at most A - phi q
    one_rep = repetitions < 2
    T = np.where(one_rep, A_corrected, C * A_corrected)
    n_joint_units = per_cell(ev.unit_joint, uc)
    T_joint = safe_div(per_cell(ev.unit_trustworthy, uc), n_joint_units)

    C_lo, C_hi = wilson_bounds(sum_N, n_units, confidence=confidence)
    phi_lo, phi_hi = wilson_bounds(n_flip, n_order_pairs, confidence=confidence)
    A_lo, A_hi = wilson_bounds(n_correct, n_lab_units, confidence=confidence)

    # ---- pair-level bootstrap of T -----------------------------------------------------------
    T_lo = np.full(G, np.nan)
    T_hi = np.full(G, np.nan)
    boot = {k: (np.full(G, np.nan), np.full(G, np.nan)) for k in ("C", "phi", "A")}
    if n_bootstrap > 0 and n_pairs_all:
        def per_pair(x: np.ndarray) -> np.ndarray:
            return np.bincount(up, weights=np.asarray(x, dtype=float), minlength=n_pairs_all)

        stats = np.column_stack([
            per_pair(u["N"]), per_pair(np.ones_like(m)),          # C numerator / denominator
            (both & ~P).astype(float), both.astype(float),         # phi
            per_pair(correct), per_pair(u_labelled),               # A
            per_pair(correct & undec_units), per_pair(undec_units),  # measured q
        ])
        boot = _bootstrap(stats, pc, present, G, q_arr, measured, n_bootstrap, policy.seed, confidence)
        T_lo, T_hi = boot["T"]
    C, self_cons = np.where(one_rep, np.nan, C), np.where(one_rep, np.nan, self_cons)
    C_lo, C_hi = np.where(one_rep, np.nan, C_lo), np.where(one_rep, np.nan, C_hi)
    boot["C"] = (np.where(one_rep, np.nan, boot["C"][0]), np.where(one_rep, np.nan, boot["C"][1]))

    out = cells.copy()
    cols = {
        "n_pairs": n_pairs, "n_labelled_pairs": n_lab_pairs, "n_order_pairs": n_order_pairs,
        "n_single_order_pairs": n_single, "n_pairs_dropped": n_pairs_dropped, "n_units": n_units,
        "n_units_dropped": u["units_dropped_cell"].astype(float),
        "n_labelled_units": n_lab_units, "n_judgments": n_judgments, "n_unparsed": n_unparsed,
        "parse_failure_rate": safe_div(n_unparsed, n_judgments), "repetitions": repetitions,
        "C": C, "C_lo": C_lo, "C_hi": C_hi, "self_consistency": self_cons,
        "phi": phi, "phi_lo": phi_lo, "phi_hi": phi_hi, "A": A, "A_lo": A_lo, "A_hi": A_hi,
        "A_dec": A_dec, "n_decisive": n_decisive, "q": q_arr, "A_max": A_max,
        "capability_gap": A_max - A, "T": T, "T_lo": T_lo, "T_hi": T_hi, "T_joint": T_joint,
        "n_joint_units": n_joint_units,
        "tie_rate": tie_rate, "n_split_modes": n_split, "A_corrected": A_corrected,
        "n_orders": u["cell_orders"].astype(float), "n_labelled_judged": n_labelled_judged,
        "C_boot_lo": boot["C"][0], "C_boot_hi": boot["C"][1], "phi_boot_lo": boot["phi"][0],
        "phi_boot_hi": boot["phi"][1], "A_boot_lo": boot["A"][0], "A_boot_hi": boot["A"][1],
    }
    for k, v in cols.items():
        out[k] = v
    for k in ("n_pairs", "n_labelled_pairs", "n_order_pairs", "n_single_order_pairs", "n_pairs_dropped", "n_units",
              "n_units_dropped", "n_labelled_units", "n_judgments", "n_unparsed", "repetitions",
              "n_decisive", "n_split_modes", "n_joint_units", "n_orders", "n_labelled_judged"):
        out[k] = out[k].astype(np.int64)
    out["unparsed_policy"] = policy.unparsed.value
    out["q_measured"] = measured
    out["confidence"] = confidence
    out["n_bootstrap"] = int(n_bootstrap)
    return out


def _bootstrap(stats: np.ndarray, pair_cell: np.ndarray, present: np.ndarray, G: int,
               q_arr: np.ndarray, measured: np.ndarray, n_boot: int, seed: int,
               confidence: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Resample pairs within each cell: the resampled sums of the pairs' stats (streamed weights,
    :func:`~verdictlab.stats._pair_bootstrap.resampled_sums`).
    Returns percentile bounds of C, phi, A and T per cell."""
    names = ("C", "phi", "A", "T")
    out = {k: (np.full(G, np.nan), np.full(G, np.nan)) for k in names}
    idx_all = np.flatnonzero(present)
    cell_of = pair_cell[idx_all]
    order = np.argsort(cell_of, kind="stable")
    idx_all, cell_of = idx_all[order], cell_of[order]
    bounds = np.searchsorted(cell_of, np.arange(G + 1))
    seeds = np.random.SeedSequence(seed).spawn(G)
    for g in range(G):  # a loop over cells; each cell's resamples are one matrix product
        rows = idx_all[bounds[g]:bounds[g + 1]]
        n = len(rows)
        if n == 0:
            continue
        rng = np.random.default_rng(seeds[g])
        S = resampled_sums(stats[rows], n_boot, rng)  # (B, 8)
        with np.errstate(invalid="ignore", divide="ignore"):
            C = S[:, 0] / S[:, 1]
            phi = S[:, 2] / S[:, 3]
            A = S[:, 4] / S[:, 5]
            q = np.where(S[:, 7] > 0, S[:, 6] / S[:, 7], 0.5) if measured[g] else q_arr[g]
            T = C * (A - phi * q)
        lo, hi = percentile_bounds(np.column_stack([C, phi, A, T]), confidence=confidence, axis=0)
        for k, name in enumerate(names):
            out[name][0][g] = lo[k]
            out[name][1][g] = hi[k]
    return out
