"""Sampling-free reliability figures from a judge's verdict probabilities.

A label-only protocol on a judge that returns token log-probabilities gives, in one call per
(pair, order) unit, the whole verdict distribution ``p`` (canonical terms; stored as ``p_a``, the
probability of canonical A renormalised over A and B).  From it the figures of the fixed
R-repetition design (docs/definitions.md, "verdictlab's own figures") have closed-form expectations, for any number
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

Unreadable replies: P(A) says how the judge splits its verdict between the labels, not how often a
reply can be read at all (a free-decoding judge also writes replies that start elsewhere).  With a
per-unit probability u of an unreadable draw (``unreadable=``), a draw is the verdict v with
probability (1 − u) s_v and unreadable with probability u, and the count vectors run over the verdict
values plus "unreadable".  The figures then count those draws as the sampled ones do under the
unparsed policy: ``exclude`` leaves them out -- N = 1 when every readable draw agrees (at least one),
the mode is taken over readable draws, and a unit with no readable draw is dropped from every
denominator, so each denominator sums P(kept) = 1 − u^R instead of 1; "wrong" makes unreadable a
value of its own (it can be the mode, equals itself across orders, and is never the label).

Cell figures are ratios of these unit/pair expectations over the same units and pairs as the
sampled figures (numerator and denominator each in expectation): ``C_expected``, ``phi_expected``
(pairs with both orders), ``A_expected`` (labelled units; with one repetition ``C_expected`` is NaN, not
measured, and ``T_expected`` its upper bound ``A_expected − phi_expected q``), ``T_expected = C_expected (A_expected −
phi_expected q)`` with q = 1/2 (binary forced choice), and ``T_joint_expected``.  Intervals
``_lo/_hi`` come from a pair-level BCa bootstrap (pairs resampled within the cell; bias-corrected and
accelerated, since percentile bounds undercovered in simulation): they describe the uncertainty from
the finite set of pairs, the only randomness left once the sampling noise is integrated out.
Intervals ``_run_lo/_run_hi`` put the sampling noise back: where a sampled R-repetition run of the
same pairs falls (simulated runs), the interval to compare a sampled run with.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy.special import gammaln, xlogy

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ._frame import group_codes, label_codes, order_codes, require_columns, with_cell_columns
from ._pair_bootstrap import bca_pair_bootstrap
from .intervals import percentile_bounds

__all__ = [
    "EXPECTED_COLUMNS",
    "UNREADABLE_SOURCES",
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
    "T_joint_expected", "unreadable_expected",
    "C_expected_run_lo", "C_expected_run_hi", "phi_expected_run_lo", "phi_expected_run_hi",
    "A_expected_run_lo", "A_expected_run_hi", "T_expected_run_lo", "T_expected_run_hi",
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
def _compositions(reps: int, k: int, drops_unparsed: bool) -> tuple[np.ndarray, ...]:
    """All count vectors of ``reps`` draws over ``k`` verdict values plus "unreadable" (the last
    column), their log multinomial coefficient, and per count vector under the unparsed policy
    (``drops_unparsed``: ``exclude``, else ``wrong``):
    the strict mode (a value index; ``k`` = unreadable under "wrong"; -1 split; -2 the unit is
    dropped: "exclude" with no readable draw), N (all counted draws agree), the top share, and for
    each value v < k whether every counted draw is v."""
    rows = [c for c in itertools.product(range(reps + 1), repeat=k + 1) if sum(c) == reps]
    counts = np.array(rows, dtype=np.int64)
    log_coef = gammaln(reps + 1) - gammaln(counts + 1).sum(axis=1)
    counted = counts[:, :k] if drops_unparsed else counts
    total = counted.sum(axis=1)
    top = counted.max(axis=1)
    unique_top = (counted == top[:, None]).sum(axis=1) == 1
    mode = np.where(unique_top, counted.argmax(axis=1), -1)
    mode = np.where(total > 0, mode, -2)
    consistent = (total > 0) & (top == total)
    share = np.where(total > 0, top / np.maximum(total, 1), 0.0)
    all_value = (counts[:, :k] == total[:, None]) & (total[:, None] > 0)
    return counts, log_coef, mode, consistent.astype(float), share, all_value.astype(float)


@dataclass(frozen=True)
class UnitExpectation:
    """Expectations for units (rows) under R draws: ``kept`` = P(the unit has a counted draw: 1
    unless unparsed draws are excluded), ``consistent`` = E[N], ``mode_prob[:, v]`` = P(strict mode
    = v) (one more column, the unreadable mode, under the "wrong" policy), ``split`` = P(no strict
    mode), ``all_same[:, v]`` = P(every counted draw is the verdict v, at least one),
    ``self_consistency`` = E[top share | kept].  ``outcome_pmf[:, c]`` is the probability of the
    count vector c, whose mode (as in ``mode_prob``; -1 split, -2 dropped) and N are
    ``outcome_mode[c]`` and ``outcome_consistent[c]`` (for simulating sampled runs)."""

    consistent: np.ndarray
    mode_prob: np.ndarray
    split: np.ndarray
    all_same: np.ndarray
    self_consistency: np.ndarray
    kept: np.ndarray
    outcome_pmf: np.ndarray
    outcome_mode: np.ndarray
    outcome_consistent: np.ndarray


def unit_expectation(s: np.ndarray, reps: int, *, unreadable: np.ndarray | float | None = None,
                     policy: FigurePolicy = DEFAULT_POLICY) -> UnitExpectation:
    """Exact expectations of the per-unit quantities for ``reps`` i.i.d. draws from each row of ``s``.

    ``unreadable`` (per row, or one number): the probability that a draw is an unreadable reply; a
    draw is then the verdict v with probability (1 - u) s_v.  ``policy`` says what such draws count as:
    unparsed ``exclude`` leaves them out (a unit with none readable is dropped: ``kept`` < 1),
    ``wrong`` makes them a value of their own.

    Worked example (tested): s = (0.8, 0.2), R = 3, u = 0.  E[N] = .8³ + .2³ = .512 + .008 = .52;
    P(mode A) = P(#A ≥ 2) = .512 + 3·.64·.2 = .896, P(mode B) = .104, split = 0 (R odd, K = 2)."""
    if reps < 1:
        raise ValueError(f"repetitions must be >= 1, got {reps!r}")
    s = np.atleast_2d(np.asarray(s, dtype=float))
    n, k = s.shape
    u = np.broadcast_to(np.asarray(0.0 if unreadable is None else unreadable, dtype=float), (n,))
    if np.any(~np.isfinite(u)) or np.any(u < 0) or np.any(u > 1):
        raise ValueError("unreadable probabilities must be in [0, 1]")
    ext = np.column_stack([(1.0 - u)[:, None] * s, u])
    counts, log_coef, mode, consistent, share, all_value = _compositions(int(reps), k, policy.drops_unparsed)
    # pmf of every composition for every unit: (n, n_comp)
    pmf = np.exp(log_coef[None, :] + xlogy(counts[None, :, :], ext[:, None, :]).sum(axis=2))
    n_modes = k if policy.drops_unparsed else k + 1
    mode_prob = np.zeros((n, n_modes))
    for v in range(n_modes):
        mode_prob[:, v] = pmf[:, mode == v].sum(axis=1)
    kept = pmf[:, mode != -2].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        self_cons = np.where(kept > 0, (pmf @ share) / kept, np.nan)
    return UnitExpectation(consistent=pmf @ consistent, mode_prob=mode_prob, split=pmf[:, mode == -1].sum(axis=1),
                           all_same=pmf @ all_value, self_consistency=self_cons, kept=kept, outcome_pmf=pmf,
                           outcome_mode=mode, outcome_consistent=consistent)


def _unit_probabilities(judgments: pd.DataFrame, keys: list[str], unreadable: str | None) -> pd.DataFrame:
    """One row per (cell, item, order) with the mean canonical P(A) of its judgments (and the mean of
    the ``unreadable`` column, renamed ``u``)."""
    extra = [unreadable] if unreadable else []
    rows = judgments.loc[judgments["p_a"].notna(), keys + ["item_id", "order", "label", "p_a", *extra]]
    if rows.empty:
        return rows
    for col in ("p_a", *extra):
        vals = rows[col].astype(float)
        bad = ~np.isfinite(vals) | (vals < 0) | (vals > 1)
        if bad.any():
            pos = int(np.flatnonzero(bad.to_numpy())[0])
            raise ValueError(f"expected_reliability: row {pos} has {col} {rows[col].iloc[pos]!r}; "
                             "expected a probability in [0, 1]")
    grouped = rows.groupby(keys + ["item_id", "order"], sort=True, dropna=False)
    aggs = {"p_a": ("p_a", "mean"), "label": ("label", "first")}
    if unreadable:
        aggs["u"] = (unreadable, "mean")
    return grouped.agg(**aggs).reset_index()


def _pair_stats(pair_idx: np.ndarray, order: np.ndarray, label: np.ndarray, ue: UnitExpectation,
                n_pairs: int) -> np.ndarray:
    """Per-pair expected sums (n_pairs x 8) whose column totals give the cell figures, numerator and
    denominator alike (a unit whose draws may all be unreadable counts in a denominator only with its
    probability ``kept`` of having a verdict): consistent units, kept units, P(invariant) over pairs
    with both orders, P(both orders kept), P(correct) over labelled units, kept labelled units, the
    joint event, kept joint units.  ``pair_idx`` in 0..n_pairs-1, ``order`` 0/1, ``label`` 0 (A) /
    1 (B) / -1 (unlabelled)."""
    k = ue.mode_prob.shape[1]
    ab = np.full((n_pairs, k), np.nan)
    ba = np.full((n_pairs, k), np.nan)
    ab[pair_idx[order == 0]] = ue.mode_prob[order == 0]
    ba[pair_idx[order == 1]] = ue.mode_prob[order == 1]
    kept = np.zeros((2, n_pairs))
    kept[order, pair_idx] = ue.kept
    both = ~np.isnan(ab[:, 0]) & ~np.isnan(ba[:, 0])
    invariant = np.where(both, np.nansum(np.nan_to_num(ab) * np.nan_to_num(ba), axis=1), 0.0)
    both_kept = np.where(both, kept[0] * kept[1], 0.0)
    lab = label >= 0
    lv = np.where(lab, label, 0)
    rows = np.arange(len(order))
    correct = np.where(lab, ue.mode_prob[rows, lv], 0.0)
    # joint: every counted draw is the label, and the other order's mode is the label
    other_modes = np.where((order == 0)[:, None], ba[pair_idx], ab[pair_idx])
    other_kept = kept[1 - order, pair_idx]
    joint_units = lab & both[pair_idx]
    joint = np.where(joint_units, ue.all_same[rows, lv] * np.nan_to_num(other_modes[rows, lv]), 0.0)

    def per_pair(x: np.ndarray) -> np.ndarray:
        return np.bincount(pair_idx, weights=np.asarray(x, dtype=float), minlength=n_pairs)

    return np.column_stack([per_pair(ue.consistent), per_pair(ue.kept), invariant, both_kept, per_pair(correct),
                            per_pair(lab * ue.kept), per_pair(joint), per_pair(joint_units * ue.kept * other_kept)])


def _simulated_runs(ue: UnitExpectation, pair_idx: np.ndarray, order: np.ndarray, label: np.ndarray,
                    n_pairs: int, *, n_runs: int, rng: np.random.Generator, q: float) -> np.ndarray:
    """C, phi, A, T of ``n_runs`` simulated sampled runs of these units (n_runs x 4): each unit's R
    draws are one count vector drawn from ``ue.outcome_pmf``; the figures are then counted as
    :func:`~verdictlab.stats.reliability.reliability` counts them (split modes never consistent,
    invariant or right; dropped units out of every denominator)."""
    n = len(order)
    cum = np.cumsum(ue.outcome_pmf, axis=1)
    cum[:, -1] = 1.0
    unit_of = np.full((2, n_pairs), -1)
    unit_of[order, pair_idx] = np.arange(n)
    both = (unit_of[0] >= 0) & (unit_of[1] >= 0)
    ab_u, ba_u = unit_of[0][both], unit_of[1][both]
    lab = label >= 0
    out = np.empty((n_runs, 4))
    chunk = max(1, 4_000_000 // max(1, n * cum.shape[1]))
    for start in range(0, n_runs, chunk):
        b = min(chunk, n_runs - start)
        draw = (rng.random((b, n))[:, :, None] > cum[None, :, :]).sum(axis=2)
        mode = ue.outcome_mode[draw]                       # (b, n)
        kept = mode != -2
        N = ue.outcome_consistent[draw]
        m_ab, m_ba = mode[:, ab_u], mode[:, ba_u]
        pair_kept = kept[:, ab_u] & kept[:, ba_u]
        invariant = pair_kept & (m_ab == m_ba) & (m_ab >= 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            C = N.sum(axis=1) / kept.sum(axis=1)
            phi = 1.0 - invariant.sum(axis=1) / pair_kept.sum(axis=1)
            A = (lab & (mode == label)).sum(axis=1) / (lab & kept).sum(axis=1)
        out[start:start + b] = np.column_stack([C, phi, A, C * (A - phi * q)])
    return out


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
                         by: Sequence[str] = DEFAULT_BY, q: float = 0.5,
                         policy: FigurePolicy = DEFAULT_POLICY, unreadable: str | None = None, n_runs: int = 0) -> pd.DataFrame:
    """Expected C, phi, A, T (and T_joint) per cell for ``repetitions`` draws at ``temperature``
    (None: each cell's own ``temperature`` column), from the judgments' ``p_a`` column.

    Only judgments with a ``p_a`` count (a unit's P(A) is the mean over its rows; they are the same
    prompt, so the same distribution); cells without any are left out.  The verdict space is binary
    (A/B): ``q`` = 1/2 is the credit of an undecisive pair, as for a forced choice.  Returns one row
    per cell: the cell keys, then :data:`EXPECTED_COLUMNS`.

    ``unreadable``: the name of a column holding each judgment's probability of an unreadable reply
    (a unit's value is the mean over its rows; rows without it count as 0).  Each draw is then
    unreadable with that probability, and the figures follow ``policy`` (its unparsed rule) as the sampled
    ones do (module docstring of :mod:`verdictlab.stats.reliability`): ``exclude`` leaves unreadable
    draws out, so a unit counts in a denominator only with the probability that it has a readable
    draw; ``wrong`` makes unreadable a value of its own.  Intervals: ``policy``'s confidence, resamples
    and seed.  Without ``unreadable`` every draw is a label.
    """
    keys = list(by)
    judgments = with_cell_columns(judgments, by)
    require_columns(judgments, keys + ["item_id", "order", "label", "p_a"], who="expected_reliability")
    if repetitions < 1:
        raise ValueError(f"repetitions must be >= 1, got {repetitions!r}")
    if unreadable is not None:
        require_columns(judgments, [unreadable], who="expected_reliability")
        judgments = judgments.assign(**{unreadable: judgments[unreadable].fillna(0.0)})
    units = _unit_probabilities(judgments, keys, unreadable)
    out_rows: list[dict[str, object]] = []
    if units.empty:
        return pd.DataFrame(columns=keys + list(EXPECTED_COLUMNS))
    cell, cell_frame = group_codes(units, keys)
    rng = np.random.default_rng(policy.seed)
    confidence = policy.confidence
    for c in range(len(cell_frame)):
        u = units.loc[cell == c]
        tau = float(cell_frame.iloc[c]["temperature"]) if temperature is None else float(temperature)
        pa = u["p_a"].to_numpy(dtype=float)
        s = sampling_distribution(np.column_stack([pa, 1.0 - pa]), tau)
        ue = unit_expectation(s, repetitions, policy=policy,
                              unreadable=u["u"].to_numpy(dtype=float) if unreadable else None)
        pair_idx, _ = pd.factorize(u["item_id"], sort=True)
        order = order_codes(u["order"])
        label = label_codes(u["label"])
        n_pairs = int(pair_idx.max()) + 1
        stats = _pair_stats(pair_idx, order, label, ue, n_pairs)
        total = stats.sum(axis=0)
        point = dict(zip(FIGURES, _figures(q)(total[None, :])[0], strict=True))
        lo, hi = bca_pair_bootstrap(stats, _figures(q), n_boot=policy.n_bootstrap, rng=rng, confidence=confidence)
        row: dict[str, object] = dict(cell_frame.iloc[c])
        with np.errstate(invalid="ignore", divide="ignore"):
            t_joint = float(total[6] / total[7]) if total[7] > 0 else np.nan
        row.update(n_prob_units=len(u), n_prob_pairs=n_pairs, expected_reps=int(repetitions),
                   expected_temperature=tau, T_joint_expected=t_joint,
                   unreadable_expected=float(u["u"].mean()) if unreadable else 0.0)
        if n_runs > 0:
            runs = _simulated_runs(ue, pair_idx, order, label, n_pairs, n_runs=n_runs, rng=rng, q=q)
            r_lo, r_hi = percentile_bounds(runs, confidence=confidence, axis=0)
            for j, name in enumerate(FIGURES):
                row[f"{name}_expected_run_lo"] = float(r_lo[j])
                row[f"{name}_expected_run_hi"] = float(r_hi[j])
        for j, name in enumerate(FIGURES):
            row[f"{name}_expected"] = float(point[name])
            row[f"{name}_expected_lo"] = float(lo[j])
            row[f"{name}_expected_hi"] = float(hi[j])
        if repetitions < 2:     # one draw agrees with itself: C is not measured, T is its upper bound
            for col in ("C_expected", "C_expected_lo", "C_expected_hi", "C_expected_run_lo", "C_expected_run_hi"):
                if col in row:
                    row[col] = np.nan
        out_rows.append(row)
    return pd.DataFrame(out_rows, columns=keys + list(EXPECTED_COLUMNS))


#: where :func:`expected_by_cell` takes each cell's unreadable share from (its ``unreadable_from``)
UNREADABLE_SOURCES: tuple[str, ...] = ("cell", "unit", "none")


def _observed_unreadable(cell: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The cell's rows with column ``_u`` = each judgment's modelled probability of an unreadable
    reply: the cell's observed parse-failure rate (share of its judgments without a verdict), or at
    temperature 0 -- a reply is then deterministic -- its unit's own observed share."""
    unparsed = cell["verdict"].isna().to_numpy(dtype=float)
    if float(cell["temperature"].iloc[0]) == 0:
        unit = pd.Series(unparsed, index=cell.index).groupby([cell["item_id"], cell["order"]]).transform("mean")
        return cell.assign(_u=unit.to_numpy(dtype=float)), "unit"
    return cell.assign(_u=float(unparsed.mean()) if len(unparsed) else 0.0), "cell"


def expected_by_cell(judgments: pd.DataFrame, *, repetitions: int | None = None, by: Sequence[str] = DEFAULT_BY,
                     policy: FigurePolicy = DEFAULT_POLICY, unreadable: str | None = "observed",
                     n_runs: int = 0) -> pd.DataFrame:
    """:func:`expected_reliability` of every cell that has verdict probabilities, each for its own
    design: ``repetitions`` draws when given, else the cell's own repetition count (its distinct
    ``rep`` values, at least 1), at the cell's own temperature.  Cells are ``by`` (the full cell key;
    a missing or NULL ``decoding`` is free, :func:`with_cell_columns`); a cell none of whose rows has
    ``p_a`` (e.g. the free-decoding cell beside a constrained one) has no row.

    ``unreadable="observed"`` (default) models unreadable replies from the cell's observed
    parse-failure rate -- every judgment of the cell counts, with or without ``p_a`` -- or, at
    temperature 0, each unit's own share (``unreadable_from`` = ``"cell"`` / ``"unit"``); ``None``
    assumes every draw is a label (``"none"``).  A cell whose every judgment is unparsed cannot be
    modelled: ``modelled`` is False and its figures are NaN.  Returns the cell keys,
    :data:`EXPECTED_COLUMNS`, ``unreadable_from`` and ``modelled`` (empty when no row has ``p_a``)."""
    keys = list(by)
    cols = keys + list(EXPECTED_COLUMNS) + ["unreadable_from", "modelled"]
    if judgments.empty or "p_a" not in judgments.columns or not judgments["p_a"].notna().any():
        return pd.DataFrame(columns=cols)
    if unreadable not in ("observed", None):
        raise ValueError(f"unreadable must be 'observed' or None, got {unreadable!r}")
    frames = []
    # on the full cell key: a cell whose rows carry no p_a (a free cell beside a constrained one) gets no row
    for _key, cell in with_cell_columns(judgments, keys).groupby(keys, sort=True, dropna=False):
        if not cell["p_a"].notna().any():
            continue
        reps = int(repetitions) if repetitions else max(1, int(cell["rep"].nunique()))
        frame, source = _observed_unreadable(cell) if unreadable else (cell.assign(_u=0.0), "none")
        out = expected_reliability(frame, repetitions=reps, by=keys, policy=policy, unreadable="_u",
                                   n_runs=n_runs)
        modelled = not bool((frame["_u"] >= 1.0).all())
        if not modelled:
            figures = [c for c in EXPECTED_COLUMNS if c.startswith(("C_", "phi_", "A_", "T_"))]
            out[figures] = np.nan
        frames.append(out.assign(unreadable_from=source, modelled=modelled))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)
