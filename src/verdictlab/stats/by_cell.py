"""Agreement and bias figures per cell, to show beside C, phi, A, T (vectorised over cells)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import Order
from ._frame import ORDER_CODES, combine, order_codes, safe_div, sorted_codes, with_cell_columns
from .agreement import alpha_from_unit_counts, retest_by_cell
from .regions import PARADOX_BIAS, PARADOX_RETEST
from .reliability import DEFAULT_BY, unit_table

__all__ = ["agreement_by_cell", "AGREEMENT_COLUMNS", "MODAL_COLUMNS", "ONE_ORDER_REASON", "modal_verdicts"]

AGREEMENT_COLUMNS: tuple[str, ...] = (
    "n_agreement_units", "exact_match", "n_exact_match", "kappa", "alpha", "kappa_deflation",
    "n_judge_A_label_B", "n_judge_B_label_A", "position_bias", "share_first_won", "n_position",
    "position_bias_note",
    "test_retest", "n_retest_units", "consistency_bias_paradox", "verbosity_bias", "n_verbosity",
)

# label codes 0 A, 1 B, 2 tie; judge codes 0 A, 1 B, 2 tie, 3 unparsed, 4 split mode
_K = 5


def agreement_by_cell(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                      by: Sequence[str] = DEFAULT_BY, items: pd.DataFrame | None = None,
                      retest_threshold: float = PARADOX_RETEST, bias_threshold: float = PARADOX_BIAS) -> pd.DataFrame:
    """Per cell (same cells and keys as :func:`reliability`):

    * agreement of the judge's modal verdict m(i,o) with the label, one value per unit (i,o):
      ``exact_match`` on units whose label is A or B (tie-excluded; ``n_exact_match`` units; it equals
      A of :func:`reliability`), ``kappa`` (Cohen) and ``alpha`` (Krippendorff, nominal, the label and
      the judge as two raters) on units whose label is A, B or tie (``n_agreement_units``), and
      ``kappa_deflation`` = exact match - kappa on the tie-excluded units.  A split modal verdict, and
      under the unparsed policy ``wrong`` an unparsed one, is a category of its own that matches no label.
    * both disagreement counts on tie-excluded units: ``n_judge_A_label_B``, ``n_judge_B_label_A``.
    * ``position_bias`` = |share of decided judgments won by the first-shown response - 1/2| over all
      parsed A/B judgments (``n_position``), ``share_first_won``.  A cell whose judgments were not shown
      in both orders has NaN for both and ``position_bias_note`` = ``"needs both orders"`` (with one
      order the first-shown share is the share of one canonical side: position and quality confounded).
    * ``test_retest``: Krippendorff alpha over repetitions (:func:`test_retest`), ``n_retest_units``;
      ``consistency_bias_paradox`` = test_retest > ``retest_threshold`` and position_bias >
      ``bias_threshold``.
    * ``verbosity_bias``: Pearson r of len(response_a) - len(response_b) with 1[verdict = A] over
      parsed A/B judgments, when ``items`` (e.g. ``RunStore.items_frame()``: dataset, item_id,
      response_a, response_b) is given; NaN otherwise (``n_verbosity`` = 0).
    Undefined figures are NaN."""
    judgments = with_cell_columns(judgments, by)
    cells, u = unit_table(judgments, policy=policy, by=by)
    G = len(cells)
    out = cells.copy()
    lab = u["pair_label"]  # -1 for tie / missing
    raw_lab = judgments["label"].iloc[u["pair_row"]].astype("object").to_numpy() if len(judgments) else \
        np.zeros(0, dtype=object)
    lab3 = np.where(lab >= 0, lab, np.where(raw_lab == "tie", 2, -1))
    ulab = lab3[u["unit_pair"]]
    mode = u["mode"]
    pred = np.where(mode < 0, 4, mode)  # split -> 4; unparsed stays 3
    uc = u["unit_cell"]

    # ---- kappa / alpha on units with a label A/B/tie ------------------------------------------
    has = ulab >= 0
    cm = np.bincount((uc[has] * _K + ulab[has]) * _K + pred[has], minlength=G * _K * _K
                     ).reshape(G, _K, _K).astype(float)
    kappa = _kappa(cm)
    # alpha: each unit has two values (label, judge) on the same category scale
    two = np.zeros((int(has.sum()), _K))
    rows = np.arange(len(two))
    two[rows, ulab[has]] += 1.0          # one value per row in each assignment: no repeated index
    two[rows, pred[has]] += 1.0
    alpha = alpha_from_unit_counts(two, uc[has], G)[0]

    # ---- tie-excluded: exact match, deflation, disagreement counts ----------------------------
    ab = ulab <= 1
    ab &= ulab >= 0
    cm2 = np.bincount((uc[ab] * _K + ulab[ab]) * _K + pred[ab], minlength=G * _K * _K
                      ).reshape(G, _K, _K).astype(float)
    n_em = cm2.sum(axis=(1, 2))
    em = safe_div(cm2[:, 0, 0] + cm2[:, 1, 1], n_em)
    kappa2 = _kappa(cm2)

    out["n_agreement_units"] = cm.sum(axis=(1, 2)).astype(np.int64)
    out["exact_match"] = em
    out["n_exact_match"] = n_em.astype(np.int64)
    out["kappa"] = kappa
    out["alpha"] = alpha
    out["kappa_deflation"] = em - kappa2
    out["n_judge_A_label_B"] = cm2[:, 1, 0].astype(np.int64)
    out["n_judge_B_label_A"] = cm2[:, 0, 1].astype(np.int64)

    # ---- position bias (row level) -------------------------------------------------------------
    rc, rv = u["row_cell"], u["row_vcode"]
    order = order_codes(judgments["order"]) if len(judgments) else np.zeros(0, dtype=np.int64)
    order_ab = order == ORDER_CODES[Order.AB.value]
    decided = rv <= 1
    first_won = decided & (((rv == 0) & order_ab) | ((rv == 1) & ~order_ab))
    n_pos = np.bincount(rc[decided], minlength=G).astype(float)
    share = safe_div(np.bincount(rc[first_won], minlength=G), n_pos)
    # with one presentation order the first-shown share is the share of one canonical side: position
    # and quality are confounded, so a cell that did not run both orders has no position bias
    one_order = _single_order_cells(rc, order_ab, G)
    share = np.where(one_order, np.nan, share)
    out["position_bias"] = np.abs(share - 0.5)
    out["share_first_won"] = share
    out["n_position"] = n_pos.astype(np.int64)
    note = np.full(G, None, dtype=object)
    note[one_order] = ONE_ORDER_REASON
    out["position_bias_note"] = note

    # ---- test-retest and paradox -----------------------------------------------------------------
    if "rep" in judgments.columns:
        # test_retest's figures from the unit table's row codes (same cells; its units are numbered by
        # the items in the order they are met, as test_retest numbers them: same sums, same bits)
        item, _ = pd.factorize(judgments["item_id"], use_na_sentinel=False)
        tr, n_tr, _ = retest_by_cell(rc, item.astype(np.int64), order, rv, G)
        out["test_retest"] = tr
        out["n_retest_units"] = n_tr
    else:
        out["test_retest"] = np.nan
        out["n_retest_units"] = 0
    trv = out["test_retest"].to_numpy(float)
    pb = out["position_bias"].to_numpy(float)
    out["consistency_bias_paradox"] = (np.nan_to_num(trv, nan=-1) > retest_threshold) & \
        (np.nan_to_num(pb, nan=-1) > bias_threshold)

    # ---- verbosity bias ----------------------------------------------------------------------------
    vb = np.full(G, np.nan)
    nvb = np.zeros(G, dtype=np.int64)
    if items is not None and len(judgments):
        x = _length_difference(judgments, items)
        ok = decided & ~np.isnan(x)
        y = (rv == 0).astype(float)
        vb, nvb = _pearson_by_group(x[ok], y[ok], rc[ok], G)
    out["verbosity_bias"] = vb
    out["n_verbosity"] = nvb
    out["unparsed_policy"] = policy.unparsed.value
    return out


#: why a single-order cell has no position bias (``position_bias_note``; the checklist says it too)
ONE_ORDER_REASON = "needs both orders"


def _length_difference(judgments: pd.DataFrame, items: pd.DataFrame) -> np.ndarray:
    """Per judgment: len(response_a) - len(response_b) of its item (NaN when the items lack it).  The
    (dataset, item_id) keys are matched as text once per distinct pair of the judgments, not per row."""
    need = ["dataset", "item_id", "response_a", "response_b"]
    miss = [c for c in need if c not in items.columns]
    if miss:
        raise ValueError(f"agreement_by_cell: items frame lacks column(s) {miss}")
    it = items[need].drop_duplicates(["dataset", "item_id"])
    diff = (it["response_a"].astype(str).str.len() - it["response_b"].astype(str).str.len())
    key = pd.MultiIndex.from_frame(it[["dataset", "item_id"]].astype(str))
    pair = combine(*(sorted_codes(judgments[c])[0] for c in ("dataset", "item_id")))
    first = np.zeros(int(pair.max(initial=-1)) + 1, dtype=np.int64)
    first[pair[::-1]] = np.arange(len(pair))[::-1]
    pos = key.get_indexer(pd.MultiIndex.from_frame(judgments[["dataset", "item_id"]].iloc[first].astype(str)))
    x = np.where(pos >= 0, diff.to_numpy(float)[np.maximum(pos, 0)], np.nan)
    return x[pair]


def _single_order_cells(row_cell: np.ndarray, order_ab: np.ndarray, G: int) -> np.ndarray:
    """True for the cells whose judgments were not shown in both orders (AB and BA)."""
    n_ab = np.bincount(row_cell[order_ab], minlength=G) if len(row_cell) else np.zeros(G, dtype=np.int64)
    n_ba = np.bincount(row_cell[~order_ab], minlength=G) if len(row_cell) else np.zeros(G, dtype=np.int64)
    return (n_ab == 0) | (n_ba == 0)


def _kappa(cm: np.ndarray) -> np.ndarray:
    """Cohen's kappa per group from G x K x K contingency tables (NaN when undefined)."""
    n = cm.sum(axis=(1, 2))
    po = safe_div(np.trace(cm, axis1=1, axis2=2), n)
    pe = safe_div((cm.sum(axis=2) * cm.sum(axis=1)).sum(axis=1), n * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(pe < 1, (po - pe) / (1 - pe), np.nan)
    return k


def _pearson_by_group(x: np.ndarray, y: np.ndarray, g: np.ndarray, G: int) -> tuple[np.ndarray, np.ndarray]:
    n = np.bincount(g, minlength=G).astype(float)
    sx = np.bincount(g, x, G)
    sy = np.bincount(g, y, G)
    sxx = np.bincount(g, x * x, G)
    syy = np.bincount(g, y * y, G)
    sxy = np.bincount(g, x * y, G)
    cov = sxy - sx * sy / np.where(n > 0, n, 1)
    vx = sxx - sx * sx / np.where(n > 0, n, 1)
    vy = syy - sy * sy / np.where(n > 0, n, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where((vx > 1e-12) & (vy > 1e-12) & (n >= 2), cov / np.sqrt(vx * vy), np.nan)
    return r, n.astype(np.int64)



#: the columns of :func:`modal_verdicts` after the cell keys
MODAL_COLUMNS: tuple[str, ...] = ("item_id", "order", "mode", "consistent", "n_verdicts", "order_invariant")
_MODE_NAMES = np.array(["A", "B", "tie", "unparsed"], dtype=object)


def modal_verdicts(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY,
                   by: Sequence[str] = DEFAULT_BY) -> pd.DataFrame:
    """The modal verdict m(i,o) of every (cell, pair, order) unit, by the rules of :func:`reliability`.

    One row per unit that has a verdict under the policy (under unparsed ``exclude`` a unit whose every
    verdict is unparsed has none and is left out): the cell keys, ``item_id``, ``order``, ``mode``
    (``A``, ``B``, ``tie``, ``unparsed`` -- under ``"wrong"`` only -- or ``split`` when two values share
    the top count), ``consistent`` (N(i,o): all its verdicts agree), ``n_verdicts`` (R of the unit) and
    ``order_invariant`` (P(i) of its pair: both orders' modes equal and not split; ``<NA>`` when the pair
    lacks an order).  ``reliability``'s C is the mean of ``consistent`` and its phi is 1 - the mean of
    ``order_invariant`` over pairs."""
    cells, u = unit_table(judgments, policy=policy, by=by)
    m, up, uo = u["mode"], u["unit_pair"], u["unit_order"]
    out = cells.iloc[u["unit_cell"]].reset_index(drop=True)
    rows = u["pair_row"][up]
    out["item_id"] = judgments["item_id"].to_numpy()[rows] if len(rows) else np.zeros(0, dtype=object)
    out["order"] = np.where(uo == 0, Order.AB.value, Order.BA.value).astype(object)
    out["mode"] = np.where(m < 0, "split", _MODE_NAMES[np.maximum(m, 0)]).astype(object)
    out["consistent"] = u["N"].astype(bool)
    out["n_verdicts"] = u["total"].astype(np.int64)
    n_pairs = len(u["pair_cell"])
    m_ab = np.full(n_pairs, -2, dtype=np.int64)  # -2: order absent
    m_ba = np.full(n_pairs, -2, dtype=np.int64)
    m_ab[up[uo == 0]] = m[uo == 0]
    m_ba[up[uo == 1]] = m[uo == 1]
    both = (m_ab != -2) & (m_ba != -2)
    P = both & (m_ab == m_ba) & (m_ab >= 0)
    out["order_invariant"] = pd.array(np.where(both[up], P[up], False), dtype="boolean")
    out.loc[~both[up], "order_invariant"] = pd.NA
    return out
