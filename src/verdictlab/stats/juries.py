"""Juries: majority votes over several verdicts, the error correlation between jurors, and the
predicted against the observed majority accuracy.

The vote rule (:func:`vote_counts`, normative)
-----------------------------------------------
* ``n_parsed`` = votes that carry a verdict.  If ``n_parsed < quorum`` there is **no verdict**
  (``status = "no_quorum"``): parse failures can never silently shrink a jury into a smaller one.
  The default quorum is a strict majority of the seats, ``K // 2 + 1``.
* Otherwise the value with the most parsed votes wins (``status = "ok"``).  A ``tie`` vote is a value
  like ``A`` and ``B``.
* When two or more values share the top count the **tie rule** decides: ``"tie"`` (default) -- the
  jury's verdict is ``tie``; ``"none"`` -- no verdict (``status = "split"``).  Either way the status
  says ``split`` so it is counted.

Predictions.  A jury of k jurors, each right with probability p, decides by majority.  Independent
jurors (Condorcet) give a binomial prediction; correlated jurors are modelled as exchangeable with
intra-class correlation rho: the number of right votes is beta-binomial with a = p s, b = (1 - p) s,
s = 1/rho - 1 (rho = 0 is the binomial limit, rho = 1 a single juror repeated k times).  Even k: a
tied vote is resolved by ``even_tie``: "half" (a fair coin: counts 1/2, the default), "wrong" (a tie
is a failure) or "right".  An undefined input (NaN p or rho: e.g. a cell without one parsed vote)
gives an undefined (NaN) prediction, never an exception.

Jury tables (:func:`jury_table`), one row per (cell, jury size K): a *homogeneous* jury is one judge
sampled K times in one cell (its repetitions); a *heterogeneous* jury is several judges of the same
protocol, dataset, temperature and decoding, one vote each (its ``judge`` is undefined: the jurors are
listed in ``jurors``).  Observed majority accuracy (a jury verdict ``tie`` earns ``tie_credit``, default
1/2, like an undecided pair in A) beside the independence prediction (binomial for homogeneous,
Poisson-binomial for heterogeneous juries) and the rho-corrected beta-binomial prediction, rho being
the error correlation estimated from the vote matrix, with ``k_effective`` = K / (1 + (K - 1) rho).
Unparsed votes and juries without a verdict follow the cell figures' unparsed policy:
unparsed ``wrong`` (the function default, :data:`UNPARSED_WRONG`) counts them as wrong; ``exclude`` (the report's default)
leaves them out -- juror accuracy on parsed votes, jury accuracy on juries with a verdict, rho on units
every juror answered -- and counts them (``n_no_verdict``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as _st

from ..core.policy import FigurePolicy
from ..core.vocab import CELL_KEY, VERDICTS, UnparsedPolicy

__all__ = ["JURY_COLUMNS", "JURY_TABLE_COLUMNS", "VOTE_TIE_RULES", "JuryCorrelation", "JuryRow", "default_quorum",
           "effective_jurors", "heterogeneous_jury_table", "homogeneous_jury_table", "jury_error_correlation",
           "jury_majority_accuracy", "jury_majority_accuracy_heterogeneous", "jury_table", "majority_vote",
           "observed_majority_accuracy", "priority_verdicts", "vote_codes", "vote_counts"]

#: the policy of these functions unless told otherwise: an unparsed vote is a wrong vote
UNPARSED_WRONG = FigurePolicy(unparsed=UnparsedPolicy.WRONG)

_TIE_CREDIT = {"half": 0.5, "wrong": 0.0, "right": 1.0}


@dataclass(frozen=True)
class JuryCorrelation:
    """Intra-class error correlation rho of k jurors over ``n_items`` items, mean juror accuracy p."""

    rho: float
    p: float
    k: int
    n_items: int

    def __float__(self) -> float:
        return self.rho


def _tie_credit(even_tie: str) -> float:
    if even_tie not in _TIE_CREDIT:
        raise ValueError(f"even_tie must be one of {tuple(_TIE_CREDIT)}, got {even_tie!r}")
    return _TIE_CREDIT[even_tie]


def jury_error_correlation(correct_matrix: Any, *, zero_division: float = np.nan) -> JuryCorrelation:
    """Error correlation rho from an items x jurors 0/1 matrix of correctness (no missing values).

    Moment (ANOVA-free) estimator of the exchangeable intra-class correlation: with S_i the number
    of jurors right on item i, p = mean(S)/k and Var(S) (population variance over items),
    Var(S) = k p (1 - p) (1 + (k - 1) rho)  =>  rho = (Var(S) / (k p (1 - p)) - 1) / (k - 1).
    Undefined (p in {0, 1} or k < 2) -> ``zero_division``."""
    m = np.asarray(correct_matrix, dtype=float)
    if m.ndim != 2:
        raise ValueError("correct_matrix must be 2-D: items x jurors")
    if np.isnan(m).any():
        raise ValueError("correct_matrix has missing values; keep items every juror answered")
    n, k = m.shape
    if n == 0 or k < 2:
        return JuryCorrelation(float(zero_division), float("nan"), k, n)
    s = m.sum(axis=1)
    p = float(s.mean() / k)
    if p <= 0.0 or p >= 1.0:
        return JuryCorrelation(float(zero_division), p, k, n)
    rho = (float(s.var()) / (k * p * (1 - p)) - 1.0) / (k - 1)
    return JuryCorrelation(rho, p, k, n)


def _majority_from_pmf(pmf: np.ndarray, k: int, tie: float) -> float:
    j = np.arange(k + 1)
    win = pmf[2 * j > k].sum()
    if k % 2 == 0:
        win += tie * pmf[k // 2]
    return float(win)


def jury_majority_accuracy(p: float, k: int, *, rho: float = 0.0, even_tie: str = "half") -> float:
    """Predicted accuracy of a majority vote of ``k`` exchangeable jurors of accuracy ``p`` whose
    errors correlate with ``rho`` (binomial for rho = 0, beta-binomial for 0 < rho < 1, p itself for
    rho = 1).  Negative rho is not modelled (raise).  NaN p or rho (undefined: no parsed vote, or a
    correlation that cannot be estimated) gives NaN."""
    tie = _tie_credit(even_tie)
    if k < 1:
        raise ValueError("k must be >= 1")
    if np.isnan(p) or np.isnan(rho):
        return float("nan")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be in [0, 1], got {p}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    j = np.arange(k + 1)
    if rho == 0.0 or p in (0.0, 1.0):
        pmf = _st.binom.pmf(j, k, p)
    elif rho == 1.0:
        # all jurors vote together: right with probability p (no tie possible)
        return float(p)
    else:
        s = 1.0 / rho - 1.0
        pmf = _st.betabinom.pmf(j, k, p * s, (1.0 - p) * s)
    return _majority_from_pmf(pmf, k, tie)


def jury_majority_accuracy_heterogeneous(ps: Any, *, even_tie: str = "half") -> float:
    """Majority accuracy of independent jurors with their own accuracies ``ps`` (Poisson-binomial
    distribution of the number of right votes, by exact convolution).  A NaN accuracy (a juror without
    one parsed vote) gives NaN."""
    tie = _tie_credit(even_tie)
    ps = np.asarray(ps, dtype=float).ravel()
    if len(ps) == 0:
        raise ValueError("need at least one juror")
    if np.isnan(ps).any():
        return float("nan")
    if ((ps < 0) | (ps > 1)).any():
        raise ValueError("accuracies must lie in [0, 1]")
    pmf = np.array([1.0])
    for p in ps:  # k jurors, O(k^2): a loop over jurors, not judgments
        pmf = np.convolve(pmf, [1.0 - p, p])
    return _majority_from_pmf(pmf, len(ps), tie)


def observed_majority_accuracy(correct_matrix: Any, *, even_tie: str = "half") -> float:
    """Observed accuracy of the majority vote of the jurors (items x jurors 0/1 correctness;
    binary choice, so the majority is right iff more than half the jurors are)."""
    tie = _tie_credit(even_tie)
    m = np.asarray(correct_matrix, dtype=float)
    k = m.shape[1]
    s = m.sum(axis=1)
    return float(np.mean(np.where(2 * s > k, 1.0, np.where(2 * s == k, tie, 0.0))))


def effective_jurors(k: int, rho: float) -> float:
    """Effective number of independent jurors of a jury of ``k`` whose errors correlate with mean
    ``rho``: k / (1 + (k - 1) rho) (the design effect of an exchangeable cluster).  rho = 0 gives k,
    rho = 1 gives 1; a negative rho (anti-correlated errors) gives more than k.  Undefined (NaN) for
    NaN rho, k < 1, or rho <= -1 / (k - 1) (no exchangeable k-variable model has it)."""
    if k < 1 or not np.isfinite(rho):
        return float("nan")
    denom = 1.0 + (k - 1) * float(rho)
    return float(k / denom) if denom > 0 else float("nan")


# -- the vote rule -------------------------------------------------------------------------------------

VOTE_TIE_RULES: tuple[str, ...] = ("tie", "none")


def default_quorum(k: int) -> int:
    """A strict majority of the seats: ``k // 2 + 1``."""
    return int(k) // 2 + 1


def vote_counts(counts: np.ndarray, *, quorum: int | np.ndarray, tie_rule: str = "tie") -> tuple[np.ndarray, np.ndarray]:
    """Vectorised majority vote (the rule of the module docstring).

    ``counts`` is an (n, 3) array of parsed votes for ``A``, ``B``, ``tie`` per jury.  Returns
    ``(verdicts, statuses)``: object arrays with ``"A" | "B" | "tie" | None`` and
    ``"ok" | "split" | "no_quorum"``.
    """
    verdict, status = vote_codes(counts, quorum=quorum, tie_rule=tie_rule)
    return _VERDICT_OF_CODE[verdict], _STATUS_OF_CODE[status]


#: the verdict of a vote code (-1: no verdict) and the status of a status code of :func:`vote_codes`
_VERDICT_OF_CODE = np.array([*VERDICTS, None], dtype=object)
_STATUS_OF_CODE = np.array(["ok", "split", "no_quorum"], dtype=object)
_OK, _SPLIT, _NO_QUORUM = 0, 1, 2


def vote_codes(counts: np.ndarray, *, quorum: int | np.ndarray, tie_rule: str = "tie") -> tuple[np.ndarray, np.ndarray]:
    """:func:`vote_counts` as integer codes: ``(verdicts, statuses)`` with the verdict's index in
    :data:`verdictlab.core.vocab.VERDICTS` (0 A, 1 B, 2 tie; -1 no verdict) and the status 0 ok, 1 split,
    2 no_quorum."""
    if tie_rule not in VOTE_TIE_RULES:
        raise ValueError(f"tie_rule must be one of {VOTE_TIE_RULES}, got {tie_rule!r}")
    c = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    n_parsed = c.sum(axis=1)
    top = c.max(axis=1)
    single = (c == top[:, None]).sum(axis=1) == 1
    verdict = np.full(len(c), VERDICTS.index("tie") if tie_rule == "tie" else -1, dtype=np.int64)
    verdict[single] = c.argmax(axis=1)[single]
    status = np.where(single, _OK, _SPLIT)
    no_q = n_parsed < np.asarray(quorum)
    verdict[no_q] = -1
    status[no_q] = _NO_QUORUM
    if tie_rule == "none":
        verdict[status == _SPLIT] = -1
    return verdict, status


def majority_vote(votes: Sequence[str | None], *, quorum: int | None = None, tie_rule: str = "tie") -> tuple[str | None, str]:
    """The rule of :func:`vote_counts` for one jury: ``(verdict, status)``."""
    bad = [v for v in votes if v is not None and v not in VERDICTS]
    if bad:
        raise ValueError(f"votes must be 'A', 'B', 'tie' or None, got {bad[0]!r}")
    counts = np.array([[sum(v == x for v in votes) for x in VERDICTS]])
    q = default_quorum(len(votes)) if quorum is None else quorum
    v, s = vote_counts(counts, quorum=q, tie_rule=tie_rule)
    return v[0], s[0]


def priority_verdicts(counts: np.ndarray, statuses: np.ndarray, ordered_votes: Sequence[Sequence[str | None]]
                      ) -> np.ndarray:
    """The priority tie rule for juries whose seats are ranked (FLASK's criteria, most important
    first): for each ``split`` jury, the vote of the highest-ranked seat among the values that share
    the top count (None when no ranked seat voted one of them); None for the other juries.
    ``ordered_votes[i]`` are jury i's parsed votes in seat rank order."""
    c = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    top = c.max(axis=1)
    out = np.full(len(c), None, dtype=object)
    for i in np.flatnonzero(np.asarray(statuses) == "split").tolist():
        tied = {x for x, n in zip(VERDICTS, c[i], strict=True) if n == top[i]}
        out[i] = next((v for v in ordered_votes[i] if v in tied), None)
    return out


def _vote_count_matrix(codes: np.ndarray) -> np.ndarray:
    """(units, 3) counts of A / B / tie votes over the seats (columns) of a units x seats code matrix
    (:func:`_vote_matrix`)."""
    return np.stack([(codes == i).sum(axis=1) for i in range(len(VERDICTS))], axis=1)


# -- jury tables from stored judgments ----------------------------------------------------------------

@dataclass(frozen=True)
class JuryRow:
    kind: str                 # homogeneous | heterogeneous
    jurors: str               # judge id, or the judge ids joined by ' | '
    k: int
    n_evaluations: int        # (pair, order) units with a label A/B
    n_ok: int
    n_split: int
    n_no_verdict: int
    accuracy: float           # observed majority accuracy (tie -> tie_credit, no verdict -> per policy)
    p_single: float           # mean single-juror accuracy on the same units
    rho: float                # error correlation from the vote matrix
    predicted_independent: float
    predicted_rho: float
    k_effective: float = float("nan")  # effective independent jurors k / (1 + (k - 1) rho)


JURY_COLUMNS: tuple[str, ...] = tuple(JuryRow.__dataclass_fields__)
#: the columns of :func:`jury_table`: the full cell key (``judge`` undefined for a heterogeneous
#: jury), then :data:`JURY_COLUMNS`
JURY_TABLE_COLUMNS: tuple[str, ...] = (*CELL_KEY, *JURY_COLUMNS)
_UNIT = ["dataset", "item_id", "protocol", "order", "step"]


def _jury_accuracy(counts: np.ndarray, label_codes: np.ndarray, *, quorum: int, tie_rule: str,
                   tie_credit: float, policy: FigurePolicy = UNPARSED_WRONG) -> tuple[float, int, int, int]:
    """(accuracy, n ok, n split, n without a verdict) of the juries' votes ``counts`` against their
    units' label codes (0 A, 1 B; any other code: no label)."""
    verdict, status = vote_codes(counts, quorum=quorum, tie_rule=tie_rule)
    correct = (verdict == label_codes).astype(float)
    correct[verdict == VERDICTS.index("tie")] = tie_credit
    if policy.drops_unparsed:
        correct = correct[verdict >= 0]
    return (float(correct.mean()) if len(correct) else float("nan"), int((status == _OK).sum()),
            int((status == _SPLIT).sum()), int((verdict < 0).sum()))


def _juror_accuracy(mat: _VoteMatrix, policy: FigurePolicy) -> float:
    """Mean single-juror accuracy over the seats of ``mat``: unparsed votes wrong (``"wrong"``) or left
    out (``"exclude"``)."""
    right = mat.right().astype(float)
    if policy.drops_unparsed:
        right = right[mat.codes != _NONE]
    return float(right.mean()) if right.size else float("nan")


def _predictions(p: float | Sequence[float], k: int, rho: float) -> tuple[float, float]:
    """(independence prediction, rho-corrected prediction).  The beta-binomial model has no
    negative correlation: a negative estimate is clipped to 0 for the prediction (the table keeps
    the estimate itself).  Undefined inputs give undefined predictions."""
    r = min(max(rho, 0.0), 1.0) if np.isfinite(rho) else float("nan")
    if isinstance(p, float):
        ind = jury_majority_accuracy(p, k, rho=0.0)
        pm = p
    else:
        ind = jury_majority_accuracy_heterogeneous(list(p))
        pm = float(np.mean(p))
    return float(ind), float(jury_majority_accuracy(pm, k, rho=r))


#: a vote's integer code: the index of its verdict in VERDICTS, _OTHER for any other value, _NONE for none
_OTHER, _NONE = len(VERDICTS), -1
_CODE = {x: i for i, x in enumerate(VERDICTS)}


def _verdict_codes(values: Any) -> np.ndarray:
    """Integer codes of verdict values (see ``_OTHER``, ``_NONE``)."""
    codes, uniques = pd.factorize(pd.Series(values), use_na_sentinel=True)    # one lookup per distinct value
    table = np.array([_CODE.get(u, _OTHER) if isinstance(u, str) else _OTHER for u in uniques] + [_NONE], dtype=np.int64)
    return table[codes]


@dataclass(frozen=True)
class _VoteMatrix:
    """Units x seats verdict codes of one jury, its seats and the unit labels (object: ``A``/``B``,
    NaN for a unit without rows)."""

    codes: np.ndarray
    seats: list[Any]
    labels: np.ndarray

    @cached_property
    def label_codes(self) -> np.ndarray:
        """The labels' verdict codes; a unit without a label gets a code no vote has."""
        return pd.Series(self.labels, dtype=object).map(_CODE).fillna(_NONE - 1).to_numpy(dtype=int)

    def right(self) -> np.ndarray:
        """Units x seats: the vote equals the unit's label."""
        return self.codes == self.label_codes[:, None]

    def seat(self, i: int) -> _VoteMatrix:
        """The votes of seat ``i`` alone."""
        return self._with(self.codes[:, [i]], [self.seats[i]])

    def first(self, k: int) -> _VoteMatrix:
        """The votes of the first ``k`` seats."""
        return self._with(self.codes[:, :k], self.seats[:k])

    def _with(self, codes: np.ndarray, seats: list[Any]) -> _VoteMatrix:
        out = _VoteMatrix(codes, seats, self.labels)
        out.__dict__["label_codes"] = self.label_codes      # computed once per jury
        return out




@dataclass(frozen=True)
class _JuryCodes:
    """The rows of a jury table as integer codes: the sorted codes of the unit columns (``_UNIT``; a
    missing step is ``''``), of ``rep`` and ``judge`` (missing values last) with their sorted values,
    the vote codes (:func:`_verdict_codes`) and the label (0 A, 1 B, -1 any other or none)."""

    units: list[np.ndarray]
    rep: np.ndarray
    reps: np.ndarray
    judge: np.ndarray
    judges: np.ndarray
    vote: np.ndarray
    label: np.ndarray

    @classmethod
    def of(cls, frame: pd.DataFrame) -> _JuryCodes:
        n = len(frame)
        units = []
        for col in _UNIT:
            if col == "step":
                units.append(_step_codes(frame["step"]) if "step" in frame else np.zeros(n, dtype=np.int64))
            else:               # a categorical sorts in its categories' order, as pivot_table
                units.append(pd.factorize(frame[col], sort=True, use_na_sentinel=False)[0].astype(np.int64))
        rep, reps = pd.factorize(frame["rep"], sort=True, use_na_sentinel=False) if "rep" in frame \
            else (np.zeros(n, dtype=np.int64), np.zeros(1 if n else 0))
        judge, judges = pd.factorize(frame["judge"], sort=True, use_na_sentinel=False)
        label_of = {"A": 0, "B": 1}
        codes, uniques = pd.factorize(frame["label"], use_na_sentinel=True)
        label = np.array([label_of.get(u, -1) for u in uniques] + [-1], dtype=np.int64)[codes]
        return cls(units, rep.astype(np.int64), np.asarray(reps, dtype=object), judge.astype(np.int64),
                   np.asarray(judges, dtype=object), _verdict_codes(frame["verdict"]), label)


def _step_codes(steps: pd.Series) -> np.ndarray:
    """Codes of the steps as text sorted, a missing step being ``''``: the distinct values filled and
    sorted once (not a text per row)."""
    codes, uniques = pd.factorize(steps, use_na_sentinel=True)
    filled = pd.Series([*np.asarray(uniques, dtype=object), ""], dtype=object)
    ranks = pd.factorize(filled, sort=True)[0]
    return ranks[codes].astype(np.int64)         # code -1 (missing) takes the last entry: ''


def _dense(codes: np.ndarray) -> tuple[np.ndarray, int]:
    """``(dense codes, n)``: the codes renumbered 0..n-1 in their order (a bincount, not a sort)."""
    if not len(codes):
        return codes, 0
    present = np.zeros(int(codes.max()) + 1, dtype=bool)
    present[codes] = True
    rank = np.cumsum(present) - 1
    return rank[codes], int(rank[-1]) + 1


def _first_at(keys: np.ndarray, n_keys: int) -> np.ndarray:
    """The position of the first occurrence of each key present (keys 0..n_keys-1), in key order."""
    first = np.full(n_keys, -1, dtype=np.int64)
    first[keys[::-1]] = np.arange(len(keys) - 1, -1, -1)
    return first[first >= 0]


def _vote_matrix(frame: pd.DataFrame, seat: str, seats: Sequence[Any] | None = None) -> _VoteMatrix:
    """The units x seats votes of the labelled A/B units (the first non-null verdict of a (unit, seat));
    the units are every combination of the unit columns' values (a unit without rows has no votes and
    no label); the seats sorted, or ``seats`` in that order (a seat without a labelled row: KeyError)."""
    return _coded_vote_matrix(_JuryCodes.of(frame), np.arange(len(frame)), seat, seats)


def _coded_vote_matrix(codes: _JuryCodes, rows: np.ndarray, seat: str, seats: Sequence[Any] | None = None
                       ) -> _VoteMatrix:
    """:func:`_vote_matrix` of the rows at positions ``rows`` (in row order) of the coded frame ``codes``."""
    rows = rows[codes.label[rows] >= 0]
    n = len(rows)
    unit_codes, sizes = [], []
    for col in codes.units:
        inverse, size = _dense(col[rows])                # the values in this jury, in their sorted order
        unit_codes.append(inverse)
        sizes.append(size)
    seat_all, seat_values = (codes.rep, codes.reps) if seat == "rep" else (codes.judge, codes.judges)
    seat_codes, n_seats = _dense(seat_all[rows])
    seat_levels = np.flatnonzero(np.bincount(seat_all[rows], minlength=1)) if n else np.zeros(0, dtype=np.int64)
    n_units = int(np.prod(sizes)) if n else 0
    unit = np.ravel_multi_index(unit_codes, sizes) if n else np.zeros(0, dtype=np.intp)
    vote = codes.vote[rows]
    matrix = np.full((n_units, n_seats), _NONE)
    cast = np.flatnonzero(vote != _NONE)
    at = cast[_first_at(unit[cast] * n_seats + seat_codes[cast], n_units * n_seats)]   # a seat's first vote
    matrix[unit[at], seat_codes[at]] = vote[at]
    label_codes = np.full(n_units, _NONE - 1, dtype=np.int64)        # a unit without rows has no label
    first_row = _first_at(unit, n_units)
    label_codes[unit[first_row]] = codes.label[rows][first_row]
    labels = np.array(["A", "B", np.nan], dtype=object)[np.where(label_codes >= 0, label_codes, 2)]
    seat_list = list(seat_values[seat_levels])
    if seats is not None:
        where = {s: i for i, s in enumerate(seat_list)}
        missing = [s for s in seats if s not in where]
        if missing:
            raise KeyError(f"no labelled votes for seat(s) {missing}")
        matrix = matrix[:, [where[s] for s in seats]]
        seat_list = list(seats)
    out = _VoteMatrix(matrix, seat_list, labels)
    out.__dict__["label_codes"] = label_codes
    return out


def _rho(mat: _VoteMatrix, policy: FigurePolicy = UNPARSED_WRONG) -> float:
    # "wrong": an unparsed vote is an error, as in the juror accuracies p (no unit is dropped);
    # "exclude": units with an unparsed vote are left out
    right = mat.right()
    if policy.drops_unparsed:
        right = right[(mat.codes != _NONE).all(axis=1)]
    return float(jury_error_correlation(right.astype(float)).rho)


def _rows_at(judgments: pd.DataFrame, temperature: float, protocol: str | None) -> pd.DataFrame:
    f = judgments[np.isclose(judgments["temperature"].astype(float), temperature)]
    return f if protocol is None else f[f["protocol"] == protocol]


def homogeneous_jury_table(judgments: pd.DataFrame, *, judge: str, temperature: float,
                           sizes: Sequence[int] = (1, 3, 5), protocol: str | None = None,
                           quorum: int | None = None, tie_rule: str = "tie",
                           tie_credit: float = 0.5, policy: FigurePolicy = UNPARSED_WRONG) -> pd.DataFrame:
    """Juries of K samples of one judge at one temperature (its repetitions 0..K-1), one row per K
    (columns :data:`JURY_COLUMNS`).  The rows given are one jury's: select one cell first
    (:func:`jury_table` does)."""
    f = _rows_at(judgments[judgments["judge"] == judge], temperature, protocol)
    if f.empty:
        raise ValueError(f"no judgments for judge {judge!r} at temperature {temperature}")
    return _homogeneous_rows(f, judge, sizes, quorum=quorum, tie_rule=tie_rule, tie_credit=tie_credit,
                             policy=policy)


def _homogeneous_rows(f: pd.DataFrame, judge: str, sizes: Sequence[int], *, quorum: int | None, tie_rule: str,
                      tie_credit: float, policy: FigurePolicy) -> pd.DataFrame:
    """:func:`homogeneous_jury_table` of the rows ``f`` already selected (one judge, one temperature)."""
    return _table(_homogeneous_of(_vote_matrix(f, "rep"), judge, sizes, quorum=quorum, tie_rule=tie_rule,
                                  tie_credit=tie_credit, policy=policy))


def _homogeneous_of(mat: _VoteMatrix, judge: str, sizes: Sequence[int], *, quorum: int | None, tie_rule: str,
                    tie_credit: float, policy: FigurePolicy) -> list[JuryRow]:
    """The homogeneous jury rows of one judge's vote matrix ``mat`` (its repetitions as seats)."""
    rho = _rho(mat, policy)
    rows = []
    for k in sizes:
        if k > len(mat.seats):
            continue
        sub = mat.first(k)
        acc, n_ok, n_split, n_none = _jury_accuracy(_vote_count_matrix(sub.codes), sub.label_codes,
                                                    quorum=quorum or default_quorum(k), tie_rule=tie_rule,
                                                    tie_credit=tie_credit, policy=policy)
        p = _juror_accuracy(sub, policy)
        ind, cor = _predictions(p, k, rho)
        rows.append(JuryRow("homogeneous", judge, k, len(sub.labels), n_ok, n_split, n_none, acc, p, rho, ind, cor,
                            effective_jurors(k, rho)))
    return rows


def _table(rows: list[JuryRow]) -> pd.DataFrame:
    """The jury rows as a frame of :data:`JURY_COLUMNS`."""
    return pd.DataFrame([r.__dict__ for r in rows], columns=list(JURY_COLUMNS))


def heterogeneous_jury_table(judgments: pd.DataFrame, *, judges: Sequence[str], temperature: float,
                             rep: int = 0, protocol: str | None = None, quorum: int | None = None,
                             tie_rule: str = "tie", tie_credit: float = 0.5,
                             policy: FigurePolicy = UNPARSED_WRONG) -> pd.DataFrame:
    """Juries of the first K of ``judges`` (one vote each: repetition ``rep``), K = 1, 3, 5, ...
    up to the panel size; the independence prediction is Poisson-binomial over their accuracies."""
    f = _rows_at(judgments[judgments["judge"].isin(list(judges)) & (judgments["rep"] == rep)], temperature,
                 protocol)
    missing = [j for j in judges if j not in set(f["judge"])]
    if missing:
        raise ValueError(f"no judgments for judge(s) {missing} at temperature {temperature}, rep {rep}")
    return _table(_heterogeneous_rows(_vote_matrix(f, "judge", seats=list(judges)), judges, quorum=quorum,
                                      tie_rule=tie_rule, tie_credit=tie_credit, policy=policy))


def _heterogeneous_rows(mat: _VoteMatrix, judges: Sequence[str], *, quorum: int | None, tie_rule: str,
                        tie_credit: float, policy: FigurePolicy) -> list[JuryRow]:
    """:func:`heterogeneous_jury_table` of the vote matrix ``mat`` of the ``judges``' votes."""
    rho = _rho(mat, policy)
    rows = []
    for k in range(1, len(judges) + 1, 2):
        sub = mat.first(k)
        acc, n_ok, n_split, n_none = _jury_accuracy(_vote_count_matrix(sub.codes), sub.label_codes,
                                                    quorum=quorum or default_quorum(k), tie_rule=tie_rule,
                                                    tie_credit=tie_credit, policy=policy)
        ps = [_juror_accuracy(sub.seat(i), policy) for i in range(k)]
        ind, cor = _predictions(ps if k > 1 else ps[0], k, rho)
        rows.append(JuryRow("heterogeneous", " | ".join(map(str, sub.seats)), k, len(sub.labels), n_ok, n_split, n_none, acc,
                            float(np.mean(ps)), rho, ind, cor, effective_jurors(k, rho)))
    return rows


def _with_cell(rows: list[JuryRow], cell: dict[str, Any]) -> list[dict[str, Any]]:
    """The jury ``rows`` (one per K), each with the cell's key."""
    return [{**row.__dict__, **cell} for row in rows]


def jury_table(judgments: pd.DataFrame, *, sizes: Sequence[int] = (1, 3, 5), quorum: int | None = None,
               tie_rule: str = "tie", tie_credit: float = 0.5, policy: FigurePolicy = UNPARSED_WRONG) -> pd.DataFrame:
    """Every jury the run supports, one row per (cell, K), columns :data:`JURY_TABLE_COLUMNS`: a
    homogeneous jury per cell with at least 3 repetitions, and a heterogeneous jury per (protocol,
    dataset, temperature, decoding) with at least 3 judges (its ``judge`` is None).  Derived protocols
    (``base+remedy``) are left out.  The rows are coded once and each cell / panel is a slice of them."""
    from ._frame import group_codes, with_cell_columns

    read = [c for c in dict.fromkeys((*CELL_KEY, *_UNIT, "rep", "label", "verdict")) if c in judgments.columns]
    protocol = judgments["protocol"]
    derived = [p for p in pd.unique(protocol) if "+" in str(p)]         # one test per distinct protocol
    base = with_cell_columns(judgments.loc[~protocol.isin(derived), read] if derived else judgments[read])
    codes = _JuryCodes.of(base)
    rep_missing = base["rep"].isna().to_numpy()
    cell, cells = group_codes(base, list(CELL_KEY))
    panel_keys = [c for c in CELL_KEY if c != "judge"]
    panel_of_cell, panels = group_codes(cells, panel_keys)      # the panels sort as a groupby sorts them
    frames: list[dict[str, Any]] = []
    for key, rows in _slices(cell, cells):
        if _dense(codes.rep[rows][~rep_missing[rows]])[1] >= 3:
            mat = _coded_vote_matrix(codes, rows, "rep")
            frames += _with_cell(_homogeneous_of(mat, key["judge"], sizes, quorum=quorum, tie_rule=tie_rule,
                                                 tie_credit=tie_credit, policy=policy), key)
    first_rep = (base["rep"] == 0).fillna(False).to_numpy(dtype=bool)
    for key, panel_rows in _slices(panel_of_cell[cell], panels):
        rows = panel_rows[codes.label[panel_rows] >= 0]     # a jury is scored on labelled units: seat their judges
        judges = sorted(j for j in codes.judges[np.flatnonzero(np.bincount(codes.judge[rows], minlength=1))]
                        if pd.notna(j))
        if len(judges) >= 3:
            voting = rows[first_rep[rows]]
            have = set(codes.judges[np.flatnonzero(np.bincount(codes.judge[voting], minlength=1))])
            missing = [j for j in judges if j not in have]
            if missing:
                raise ValueError(f"no judgments for judge(s) {missing} at temperature "
                                 f"{float(key['temperature'])}, rep 0")
            mat = _coded_vote_matrix(codes, voting, "judge", seats=judges)
            frames += _with_cell(_heterogeneous_rows(mat, judges, quorum=quorum, tie_rule=tie_rule,
                                                     tie_credit=tie_credit, policy=policy), {"judge": None, **key})
    out = pd.DataFrame(frames, columns=list(JURY_TABLE_COLUMNS))
    if any(r["judge"] is None for r in frames):     # a heterogeneous jury has no judge: None, not a missing text
        out["judge"] = pd.Series([r["judge"] for r in frames], dtype=object)
    return out


def _slices(group: np.ndarray, distinct: pd.DataFrame) -> Any:
    """``(key dict, row positions in row order)`` of each group (codes ``group`` of the sorted key rows
    ``distinct``, :func:`verdictlab.stats._frame.group_codes`), in key order; a key with a missing value
    is left out, as a groupby drops it."""
    order = np.argsort(group, kind="stable")
    bounds = np.searchsorted(group[order], np.arange(len(distinct) + 1))
    complete = distinct.notna().all(axis=1).to_numpy()
    for g in np.flatnonzero(complete):
        yield dict(zip(distinct.columns, distinct.iloc[g].tolist(), strict=True)), order[bounds[g]:bounds[g + 1]]
