"""Juries: majority votes over several verdicts, with an explicit quorum and tie rule.

A *homogeneous* jury is one judge sampled K times at one temperature (its repetitions); a
*heterogeneous* jury is several judges, one vote each.  Votes are canonical verdicts (``A``, ``B``,
``tie``) or missing (unparsed).

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

Figures (:func:`jury_table`): observed majority accuracy for K = 1, 3, 5, ... (with ``k_effective``, the
effective number of independent jurors K / (1 + (K - 1) rho)) beside the independence
prediction (binomial for homogeneous, Poisson-binomial for heterogeneous juries) and the
rho-corrected beta-binomial prediction from :mod:`verdictlab.stats`, rho being the error correlation
estimated from the vote matrix.  A jury verdict ``tie`` earns ``tie_credit`` (default 1/2, like an
undecided pair in A).  Unparsed votes and juries without a verdict follow the cell figures' unparsed
policy: ``unparsed="wrong"`` (the function default) counts them as wrong; ``"exclude"`` (the report's
default) leaves them out -- juror accuracy on parsed votes, jury accuracy on juries with a verdict,
rho on units every juror answered -- and counts them (``n_no_verdict``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..vocab import UnparsedPolicy
from . import AnalysisInput, register

TIE_RULES: tuple[str, ...] = ("tie", "none")
_VALUES = ("A", "B", "tie")


def default_quorum(k: int) -> int:
    """A strict majority of the seats: ``k // 2 + 1``."""
    return int(k) // 2 + 1


def vote_counts(counts: np.ndarray, *, quorum: int | np.ndarray, tie_rule: str = "tie") -> tuple[np.ndarray, np.ndarray]:
    """Vectorised majority vote.

    ``counts`` is an (n, 3) array of parsed votes for ``A``, ``B``, ``tie`` per jury.  Returns
    ``(verdicts, statuses)``: object arrays with ``"A" | "B" | "tie" | None`` and
    ``"ok" | "split" | "no_quorum"``.
    """
    if tie_rule not in TIE_RULES:
        raise ValueError(f"tie_rule must be one of {TIE_RULES}, got {tie_rule!r}")
    c = np.asarray(counts, dtype=np.int64).reshape(-1, 3)
    n_parsed = c.sum(axis=1)
    top = c.max(axis=1)
    n_top = (c == top[:, None]).sum(axis=1)
    winner = np.asarray(_VALUES, dtype=object)[c.argmax(axis=1)]
    verdict = np.full(len(c), "tie" if tie_rule == "tie" else None, dtype=object)
    verdict[n_top == 1] = winner[n_top == 1]
    status = np.where(n_top == 1, "ok", "split").astype(object)
    no_q = n_parsed < np.asarray(quorum)
    verdict[no_q] = None
    status[no_q] = "no_quorum"
    if tie_rule == "none":
        verdict[status == "split"] = None
    return verdict, status


def majority_vote(votes: Sequence[str | None], *, quorum: int | None = None, tie_rule: str = "tie") -> tuple[str | None, str]:
    """The rule of :func:`vote_counts` for one jury: ``(verdict, status)``."""
    bad = [v for v in votes if v is not None and v not in _VALUES]
    if bad:
        raise ValueError(f"votes must be 'A', 'B', 'tie' or None, got {bad[0]!r}")
    counts = np.array([[sum(v == x for v in votes) for x in _VALUES]])
    q = default_quorum(len(votes)) if quorum is None else quorum
    v, s = vote_counts(counts, quorum=q, tie_rule=tie_rule)
    return v[0], s[0]


def _count_matrix(verdicts: pd.Series) -> np.ndarray:
    s = verdicts.astype("object")
    return np.stack([(s == x).to_numpy() for x in _VALUES], axis=1).astype(np.int64)


# -- juries from stored judgments -----------------------------------------------------------------
@dataclass(frozen=True)
class JuryRow:
    kind: str                 # homogeneous | heterogeneous
    jurors: str               # judge id, or the judge ids joined by ' | '
    k: int
    n_evaluations: int        # (pair, order) units with a label A/B
    n_ok: int
    n_split: int
    n_no_verdict: int
    accuracy: float           # observed majority accuracy (tie -> tie_credit, no verdict -> 0)
    p_single: float           # mean single-juror accuracy on the same units
    rho: float                # error correlation from the vote matrix
    predicted_independent: float
    predicted_rho: float
    k_effective: float = float("nan")  # effective independent jurors k / (1 + (k - 1) rho)


JURY_COLUMNS: tuple[str, ...] = tuple(JuryRow.__dataclass_fields__)
_UNIT = ["dataset", "item_id", "protocol", "order", "step"]


def _jury_accuracy(counts: np.ndarray, labels: np.ndarray, *, quorum: int, tie_rule: str,
                   tie_credit: float, unparsed: str = UnparsedPolicy.WRONG.value) -> tuple[float, int, int, int]:
    verdict, status = vote_counts(counts, quorum=quorum, tie_rule=tie_rule)
    correct = (verdict == labels).astype(float)
    correct[verdict == "tie"] = tie_credit
    if unparsed == UnparsedPolicy.EXCLUDE:
        correct = correct[pd.notna(verdict)]
    return (float(correct.mean()) if len(correct) else float("nan"), int((status == "ok").sum()),
            int((status == "split").sum()), int((verdict == None).sum()))  # noqa: E711


def _juror_accuracy(votes: pd.DataFrame | pd.Series, labels: pd.Series, unparsed: str) -> float:
    """Mean single-juror accuracy: unparsed votes wrong (``"wrong"``) or left out (``"exclude"``)."""
    right = votes.eq(labels, axis=0).to_numpy(dtype=float)
    if unparsed == UnparsedPolicy.EXCLUDE:
        right = right[votes.notna().to_numpy()]
    return float(right.mean()) if right.size else float("nan")


def _k_effective(k: int, rho: float) -> float:
    """:func:`verdictlab.stats.jury.effective_jurors` of the row's k and its own rho."""
    from ..stats.jury import effective_jurors

    return effective_jurors(k, rho)


def _predictions(p: float | Sequence[float], k: int, rho: float) -> tuple[float, float]:
    """(independence prediction, rho-corrected prediction).  The beta-binomial model has no
    negative correlation: a negative estimate is clipped to 0 for the prediction (the table keeps
    the estimate itself)."""
    from .. import stats

    r = min(max(rho, 0.0), 1.0) if np.isfinite(rho) else float("nan")
    if isinstance(p, float):
        ind = stats.jury_majority_accuracy(p, k, rho=0.0)
        pm = p
    else:
        ind = stats.jury_majority_accuracy_heterogeneous(list(p))
        pm = float(np.mean(p))
    cor = stats.jury_majority_accuracy(pm, k, rho=r) if np.isfinite(r) else float("nan")
    return float(ind), float(cor)


def _vote_matrix(frame: pd.DataFrame, seat: str) -> tuple[pd.DataFrame, pd.Series]:
    """(units x seats) canonical verdicts and the unit labels (labelled A/B units only)."""
    f = frame[frame["label"].isin(["A", "B"])].copy()
    f["step"] = f["step"].fillna("") if "step" in f else ""
    mat = f.pivot_table(index=_UNIT, columns=seat, values="verdict", aggfunc="first", dropna=False)
    labels = f.groupby(_UNIT, dropna=False)["label"].first().reindex(mat.index)
    return mat, labels


def _rho(mat: pd.DataFrame, labels: pd.Series, unparsed: str = UnparsedPolicy.WRONG.value) -> float:
    from .. import stats

    # "wrong": an unparsed vote is an error, as in the juror accuracies p (no unit is dropped);
    # "exclude": units with an unparsed vote are left out
    if unparsed == UnparsedPolicy.EXCLUDE:
        keep = mat.notna().all(axis=1)
        mat, labels = mat[keep], labels[keep]
    correct = mat.eq(labels, axis=0).astype(float)
    return float(stats.jury_error_correlation(correct.to_numpy()).rho)


def homogeneous_jury_table(judgments: pd.DataFrame, *, judge: str, temperature: float,
                           sizes: Sequence[int] = (1, 3, 5), protocol: str | None = None,
                           quorum: int | None = None, tie_rule: str = "tie",
                           tie_credit: float = 0.5, unparsed: str = UnparsedPolicy.WRONG.value) -> pd.DataFrame:
    """Juries of K samples of one judge at one temperature (its repetitions 0..K-1)."""
    f = judgments[(judgments["judge"] == judge) & np.isclose(judgments["temperature"].astype(float), temperature)]
    if protocol is not None:
        f = f[f["protocol"] == protocol]
    if f.empty:
        raise ValueError(f"no judgments for judge {judge!r} at temperature {temperature}")
    mat, labels = _vote_matrix(f, "rep")
    rho = _rho(mat, labels, unparsed)
    rows = []
    for k in sizes:
        if k > mat.shape[1]:
            continue
        sub = mat.iloc[:, :k]
        counts = np.stack([(sub == x).sum(axis=1).to_numpy() for x in _VALUES], axis=1)
        acc, n_ok, n_split, n_none = _jury_accuracy(counts, labels.to_numpy(dtype=object),
                                                    quorum=quorum or default_quorum(k), tie_rule=tie_rule,
                                                    tie_credit=tie_credit, unparsed=unparsed)
        p = _juror_accuracy(sub, labels, unparsed)
        ind, cor = _predictions(p, k, rho)
        rows.append(JuryRow("homogeneous", judge, k, len(sub), n_ok, n_split, n_none, acc, p, rho, ind, cor,
                            _k_effective(k, rho)))
    return pd.DataFrame([r.__dict__ for r in rows], columns=list(JURY_COLUMNS))


def heterogeneous_jury_table(judgments: pd.DataFrame, *, judges: Sequence[str], temperature: float,
                             rep: int = 0, protocol: str | None = None, quorum: int | None = None,
                             tie_rule: str = "tie", tie_credit: float = 0.5,
                             unparsed: str = UnparsedPolicy.WRONG.value) -> pd.DataFrame:
    """Juries of the first K of ``judges`` (one vote each: repetition ``rep``), K = 1, 3, 5, ...
    up to the panel size; the independence prediction is Poisson-binomial over their accuracies."""
    f = judgments[judgments["judge"].isin(list(judges)) & np.isclose(judgments["temperature"].astype(float), temperature)
                  & (judgments["rep"] == rep)]
    if protocol is not None:
        f = f[f["protocol"] == protocol]
    missing = [j for j in judges if j not in set(f["judge"])]
    if missing:
        raise ValueError(f"no judgments for judge(s) {missing} at temperature {temperature}, rep {rep}")
    mat, labels = _vote_matrix(f, "judge")
    mat = mat[list(judges)]
    rho = _rho(mat, labels, unparsed)
    rows = []
    for k in range(1, len(judges) + 1, 2):
        sub = mat.iloc[:, :k]
        counts = np.stack([(sub == x).sum(axis=1).to_numpy() for x in _VALUES], axis=1)
        acc, n_ok, n_split, n_none = _jury_accuracy(counts, labels.to_numpy(dtype=object),
                                                    quorum=quorum or default_quorum(k), tie_rule=tie_rule,
                                                    tie_credit=tie_credit, unparsed=unparsed)
        ps = [_juror_accuracy(sub[j], labels, unparsed) for j in sub.columns]
        ind, cor = _predictions(ps if k > 1 else ps[0], k, rho)
        rows.append(JuryRow("heterogeneous", " | ".join(sub.columns), k, len(sub), n_ok, n_split, n_none, acc,
                            float(np.mean(ps)), rho, ind, cor, _k_effective(k, rho)))
    return pd.DataFrame([r.__dict__ for r in rows], columns=list(JURY_COLUMNS))


def jury_table(judgments: pd.DataFrame, *, sizes: Sequence[int] = (1, 3, 5), quorum: int | None = None,
               tie_rule: str = "tie", tie_credit: float = 0.5, unparsed: str = UnparsedPolicy.WRONG.value) -> pd.DataFrame:
    """Every homogeneous jury the run supports (per judge, protocol and temperature with at least 3
    repetitions), and one heterogeneous jury per (protocol, temperature) when there are >= 3 judges."""
    frames = []
    base = judgments[~judgments["protocol"].astype(str).str.contains("+", regex=False)]
    # free and constrained decoding are different cells (as in the report): never one jury
    modes = ["decoding"] if "decoding" in base.columns else []
    if modes:
        base = base.assign(decoding=base["decoding"].fillna("free").astype(str))
    for key, g in base.groupby(["judge", "protocol", "temperature", *modes]):
        judge, proto, temp = key[:3]
        if g["rep"].nunique() >= 3:
            t = homogeneous_jury_table(g, judge=judge, temperature=float(temp), protocol=proto, sizes=sizes,
                                       quorum=quorum, tie_rule=tie_rule, tie_credit=tie_credit, unparsed=unparsed)
            frames.append(t.assign(protocol=proto, temperature=float(temp), **dict(zip(modes, key[3:], strict=True))))
    for key, g in base.groupby(["protocol", "temperature", *modes]):
        proto, temp = key[:2]
        judges = sorted(g["judge"].unique())
        if len(judges) >= 3:
            t = heterogeneous_jury_table(g, judges=judges, temperature=float(temp), protocol=proto,
                                         quorum=quorum, tie_rule=tie_rule, tie_credit=tie_credit, unparsed=unparsed)
            frames.append(t.assign(protocol=proto, temperature=float(temp), **dict(zip(modes, key[2:], strict=True))))
    if not frames:
        return pd.DataFrame(columns=[*JURY_COLUMNS, "protocol", "temperature", *modes])
    return pd.concat(frames, ignore_index=True)


@register("juries", order=20, title="Juries",
          description="Majority votes of k samples of one judge (homogeneous) or of several judges: observed "
                      "accuracy beside the prediction under independence and the ρ-corrected prediction "
                      "(ρ = error correlation between jurors); unparsed votes follow the report's policy.")
def juries_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`jury_table` over the run's single-call pairwise rows, under the report's unparsed policy."""
    pairs = inp.pairs
    if pairs.empty:
        return None
    return jury_table(pairs[pairs["step"].fillna("") == ""], unparsed=inp.unparsed)
