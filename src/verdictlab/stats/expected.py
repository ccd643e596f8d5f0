"""Sampling-free reliability figures from a judge's verdict probabilities.

A label-only protocol on a judge that returns token log-probabilities gives, in one call per
(pair, order) unit, the whole verdict distribution ``p`` (canonical terms; stored as ``p_a``, the
probability of canonical A renormalised over A and B).  From it the figures of the fixed
R-repetition design (DESIGN.md "Reliability figures") have closed-form expectations, for any number
of repetitions R and any sampling temperature tau:

* the sampling distribution at temperature tau is ``s_v ∝ p_v^(1/tau)`` renormalised over the verdict
  values (greedy at tau = 0: all mass on the most likely value, shared equally on an exact tie);
* R repetitions of a unit are R independent draws from ``s``; with ``K`` the vector of counts
  (multinomial), ``N = 1`` when one value has all R draws, so ``E[N] = Σ_v s_v^R``;
* the modal verdict m is the value with the strictly largest count, and undefined ("split") when the
  top count is shared -- a split unit is inconsistent, not order-invariant and never correct, exactly
  as :func:`verdictlab.stats.reliability` counts it;  ``P(m = v)`` sums the multinomial pmf over the
  count vectors whose strict mode is v;
* the two orders of a pair are independent calls, so ``E[P(i)] = Σ_v P(m_AB = v) P(m_BA = v)``;
* ``E[1[m(i,o) = label]] = P(m(i,o) = label)``;
* the joint event of ``T_joint``: N(i,o)·P(i)·1[m(i,o) = label] = 1 exactly when all R draws of (i,o)
  are the label and the other order's mode is the label: ``s_{o,label}^R · P(m_{o'} = label)``.

Cell figures are the means of these unit/pair expectations over the same units and pairs as the
sampled figures: ``C_expected``, ``phi_expected`` (pairs with both orders), ``A_expected`` (labelled
units), ``T_expected = C_expected (A_expected − phi_expected q)`` with q = 1/2 (binary forced choice),
and ``T_joint_expected``.  Intervals come from a pair-level BCa bootstrap (pairs resampled within
the cell; bias-corrected and accelerated, since percentile bounds undercovered in simulation): they describe the uncertainty from
the finite set of pairs, the only randomness left once the sampling noise is integrated out.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.special import gammaln, xlogy

from ..vocab import CELL_KEY
from ._frame import group_codes, label_codes, order_codes, require_columns, with_cell_columns
from ._pair_bootstrap import bca_pair_bootstrap

__all__ = [
    "EXPECTED_COLUMNS",
    "UnitExpectation",
    "expected_by_cell",
    "expected_reliability",
    "sampling_distribution",
    "unit_expectation",
]

DEFAULT_BY: tuple[str, ...] = CELL_KEY
FIGURES: tuple[str, ...] = ("C", "phi", "A", "T")

#: columns of :func:`expected_reliability` after the cell keys.
EXPECTED_COLUMNS: tuple[str, ...] = (
    "n_prob_units", "n_prob_pairs", "expected_reps", "expected_temperature",
    "C_expected", "C_expected_lo", "C_expected_hi",
    "phi_expected", "phi_expected_lo", "phi_expected_hi",
    "A_expected", "A_expected_lo", "A_expected_hi",
    "T_expected", "T_expected_lo", "T_expected_hi",
    "T_joint_expected",
)


def sampling_distribution(p: np.ndarray, temperature: float) -> np.ndarray:
    """Rows of ``p`` (probabilities over verdict values) turned into the distribution a sampler at
    ``temperature`` draws from: ``p^(1/tau)`` renormalised; at tau = 0 the argmax (ties shared).

    >>> sampling_distribution(np.array([[0.8, 0.2]]), 0.5).round(4).tolist()   # .64/.68, .04/.68
    [[0.9412, 0.0588]]
    """
    p = np.atleast_2d(np.asarray(p, dtype=float))
    if not np.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    if np.any(~np.isfinite(p)) or np.any(p < 0):
        raise ValueError("probabilities must be finite and >= 0")
    totals = p.sum(axis=1, keepdims=True)
    if np.any(totals <= 0):
        raise ValueError("every row of probabilities needs a positive total")
    p = p / totals
    if temperature == 0:
        top = p >= p.max(axis=1, keepdims=True) - 1e-12
        return top / top.sum(axis=1, keepdims=True)
    # in log space so that small tau does not underflow every entry
    with np.errstate(divide="ignore"):
        logp = np.log(p) / temperature
    logp -= logp.max(axis=1, keepdims=True)
    w = np.exp(logp)
    return w / w.sum(axis=1, keepdims=True)


@lru_cache(maxsize=64)
def _compositions(reps: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All count vectors of ``reps`` draws over ``k`` values, their log multinomial coefficient and
    the index of the strict mode (-1 when the top count is shared)."""
    rows = [c for c in itertools.product(range(reps + 1), repeat=k) if sum(c) == reps]
    counts = np.array(rows, dtype=np.int64)
    log_coef = gammaln(reps + 1) - gammaln(counts + 1).sum(axis=1)
    top = counts.max(axis=1)
    unique_top = (counts == top[:, None]).sum(axis=1) == 1
    mode = np.where(unique_top, counts.argmax(axis=1), -1)
    return counts, log_coef, mode


@dataclass(frozen=True)
class UnitExpectation:
    """Expectations for units (rows) under R draws from ``s``: ``consistent`` = E[N],
    ``mode_prob[:, v]`` = P(strict mode = v), ``split`` = P(no strict mode), ``all_same[:, v]`` =
    P(all R draws are v) = s_v^R, ``self_consistency`` = E[top count] / R."""

    consistent: np.ndarray
    mode_prob: np.ndarray
    split: np.ndarray
    all_same: np.ndarray
    self_consistency: np.ndarray


def unit_expectation(s: np.ndarray, reps: int) -> UnitExpectation:
    """Exact expectations of the per-unit quantities for ``reps`` i.i.d. draws from each row of ``s``.

    Worked example (tested): s = (0.8, 0.2), R = 3.  E[N] = .8³ + .2³ = .512 + .008 = .52;
    P(mode A) = P(#A ≥ 2) = .512 + 3·.64·.2 = .896, P(mode B) = .104, split = 0 (R odd, K = 2)."""
    if reps < 1:
        raise ValueError(f"repetitions must be >= 1, got {reps!r}")
    s = np.atleast_2d(np.asarray(s, dtype=float))
    n, k = s.shape
    counts, log_coef, mode = _compositions(int(reps), k)
    # log pmf of every composition for every unit: (n, n_comp)
    logpmf = log_coef[None, :] + xlogy(counts[None, :, :], s[:, None, :]).sum(axis=2)
    pmf = np.exp(logpmf)
    mode_prob = np.zeros((n, k))
    for v in range(k):
        mode_prob[:, v] = pmf[:, mode == v].sum(axis=1)
    split = pmf[:, mode < 0].sum(axis=1)
    all_same = s ** reps
    top = counts.max(axis=1).astype(float)
    return UnitExpectation(consistent=all_same.sum(axis=1), mode_prob=mode_prob, split=split,
                           all_same=all_same, self_consistency=(pmf @ top) / reps)


def _unit_probabilities(judgments: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per (cell, item, order) with the mean canonical P(A) of its judgments."""
    rows = judgments.loc[judgments["p_a"].notna(), keys + ["item_id", "order", "label", "p_a"]]
    if rows.empty:
        return rows
    bad = ~np.isfinite(rows["p_a"].astype(float)) | (rows["p_a"] < 0) | (rows["p_a"] > 1)
    if bad.any():
        pos = int(np.flatnonzero(bad.to_numpy())[0])
        raise ValueError(f"expected_reliability: row {pos} has p_a {rows['p_a'].iloc[pos]!r}; "
                         "expected a probability in [0, 1]")
    grouped = rows.groupby(keys + ["item_id", "order"], sort=True, dropna=False)
    return grouped.agg(p_a=("p_a", "mean"), label=("label", "first")).reset_index()


def _pair_stats(pair_idx: np.ndarray, order: np.ndarray, label: np.ndarray, ue: UnitExpectation,
                n_pairs: int) -> np.ndarray:
    """Per-pair sums (n_pairs x 8) whose column totals give the cell figures: consistent units, units,
    P(invariant) where both orders exist, both orders, P(correct) over labelled units, labelled units,
    the joint event over joint units, joint units.  ``pair_idx`` in 0..n_pairs-1, ``order`` 0/1,
    ``label`` 0 (A) / 1 (B) / -1 (unlabelled)."""
    k = ue.mode_prob.shape[1]
    ab = np.full((n_pairs, k), np.nan)
    ba = np.full((n_pairs, k), np.nan)
    ab[pair_idx[order == 0]] = ue.mode_prob[order == 0]
    ba[pair_idx[order == 1]] = ue.mode_prob[order == 1]
    both = ~np.isnan(ab[:, 0]) & ~np.isnan(ba[:, 0])
    invariant = np.where(both, np.nansum(np.nan_to_num(ab) * np.nan_to_num(ba), axis=1), 0.0)
    lab = label >= 0
    lv = np.where(lab, label, 0)
    rows = np.arange(len(order))
    correct = np.where(lab, ue.mode_prob[rows, lv], 0.0)
    # joint: all R draws are the label, and the other order's mode is the label
    other_modes = np.where((order == 0)[:, None], ba[pair_idx], ab[pair_idx])
    joint_units = lab & both[pair_idx]
    joint = np.where(joint_units, ue.all_same[rows, lv] * np.nan_to_num(other_modes[rows, lv]), 0.0)

    def per_pair(x: np.ndarray) -> np.ndarray:
        return np.bincount(pair_idx, weights=np.asarray(x, dtype=float), minlength=n_pairs)

    return np.column_stack([per_pair(ue.consistent), per_pair(np.ones(len(order))), invariant,
                            both.astype(float), per_pair(correct), per_pair(lab), per_pair(joint),
                            per_pair(joint_units)])


def _figures(q: float) -> Callable[[np.ndarray], np.ndarray]:
    """C, phi, A, T from column sums of :func:`_pair_stats` (rows = samples)."""
    def fn(S: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            C = S[:, 0] / S[:, 1]
            phi = 1.0 - S[:, 2] / S[:, 3]
            A = S[:, 4] / S[:, 5]
        return np.column_stack([C, phi, A, C * (A - phi * q)])
    return fn


def expected_reliability(judgments: pd.DataFrame, *, repetitions: int, temperature: float | None = None,
                         by: Sequence[str] = DEFAULT_BY, q: float = 0.5, confidence: float = 0.95,
                         n_bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Expected C, phi, A, T (and T_joint) per cell for ``repetitions`` draws at ``temperature``
    (None: each cell's own ``temperature`` column), from the judgments' ``p_a`` column.

    Only judgments with a ``p_a`` count (a unit's P(A) is the mean over its rows; they are the same
    prompt, so the same distribution); cells without any are left out.  The verdict space is binary
    (A/B): ``q`` = 1/2 is the credit of an undecisive pair, as for a forced choice.  Returns one row
    per cell: the cell keys, then :data:`EXPECTED_COLUMNS`.
    """
    keys = list(by)
    judgments = with_cell_columns(judgments, by)
    require_columns(judgments, keys + ["item_id", "order", "label", "p_a"], who="expected_reliability")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions!r}")
    units = _unit_probabilities(judgments, keys)
    out_rows: list[dict[str, object]] = []
    if units.empty:
        return pd.DataFrame(columns=keys + list(EXPECTED_COLUMNS))
    cell, cell_frame = group_codes(units, keys)
    rng = np.random.default_rng(seed)
    for c in range(len(cell_frame)):
        u = units.loc[cell == c]
        tau = float(cell_frame.iloc[c]["temperature"]) if temperature is None else float(temperature)
        pa = u["p_a"].to_numpy(dtype=float)
        s = sampling_distribution(np.column_stack([pa, 1.0 - pa]), tau)
        ue = unit_expectation(s, repetitions)
        pair_idx, _ = pd.factorize(u["item_id"], sort=True)
        order = order_codes(u["order"])
        label = label_codes(u["label"])
        n_pairs = int(pair_idx.max()) + 1
        stats = _pair_stats(pair_idx, order, label, ue, n_pairs)
        total = stats.sum(axis=0)
        point = dict(zip(FIGURES, _figures(q)(total[None, :])[0], strict=True))
        lo, hi = bca_pair_bootstrap(stats, _figures(q), n_boot=n_bootstrap, rng=rng, confidence=confidence)
        row: dict[str, object] = dict(cell_frame.iloc[c])
        with np.errstate(invalid="ignore", divide="ignore"):
            t_joint = float(total[6] / total[7]) if total[7] > 0 else np.nan
        row.update(n_prob_units=len(u), n_prob_pairs=n_pairs, expected_reps=int(repetitions),
                   expected_temperature=tau, T_joint_expected=t_joint)
        for j, name in enumerate(FIGURES):
            row[f"{name}_expected"] = float(point[name])
            row[f"{name}_expected_lo"] = float(lo[j])
            row[f"{name}_expected_hi"] = float(hi[j])
        out_rows.append(row)
    return pd.DataFrame(out_rows, columns=keys + list(EXPECTED_COLUMNS))


def expected_by_cell(judgments: pd.DataFrame, *, repetitions: int | None = None, by: Sequence[str] = DEFAULT_BY,
                     confidence: float = 0.95, n_bootstrap: int = 1000, seed: int = 0) -> pd.DataFrame:
    """:func:`expected_reliability` of every cell that has verdict probabilities, each for its own
    design: ``repetitions`` draws when given, else the cell's own repetition count (its distinct
    ``rep`` values among the rows with ``p_a``, at least 1).  Only rows with a ``p_a`` count, so a cell
    without any (e.g. the free-decoding cell beside a constrained one) has no row.  Returns the cell
    keys and :data:`EXPECTED_COLUMNS` (empty when no row has ``p_a``)."""
    keys = list(by)
    if judgments.empty or "p_a" not in judgments.columns or not judgments["p_a"].notna().any():
        return pd.DataFrame(columns=keys + list(EXPECTED_COLUMNS))
    with_p = with_cell_columns(judgments[judgments["p_a"].notna()], by)
    frames = []
    for _key, cell in with_p.groupby(keys, sort=True, dropna=False):
        reps = int(repetitions) if repetitions else max(1, int(cell["rep"].nunique()))
        frames.append(expected_reliability(cell, repetitions=reps, by=keys, confidence=confidence,
                                           n_bootstrap=n_bootstrap, seed=seed))
    return pd.concat(frames, ignore_index=True)
