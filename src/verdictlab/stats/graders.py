"""Figures of a pointwise grader (PASS/FAIL or a score on a scale), as deep as a pairwise judge's.

Everything here works on one cell's aligned arrays; the analyses (``grader_cells`` and its siblings)
choose the rows and call these.  Grades and labels are normalised text (``"PASS"``, ``"3"``); ``None``
is no value.

Grades per item
    :func:`item_grades` reduces repetitions to one grade per (cell, item, step): the **modal** grade
    (a split mode is :data:`SPLIT_GRADE`: it equals no label and no other grade, as a split modal
    verdict does for pairs), whether every repetition agreed (``N``, as in
    C for pairs) and the vote share of the mode (the top-label confidence used for calibration).
    The unparsed policy: ``exclude`` leaves unparsed grades out (counted); ``wrong`` makes an unparsed
    grade a value of its own (:data:`UNPARSED_GRADE`), equal to another unparsed grade and to no label.

Agreement with the human label (:func:`grader_agreement`)
    accuracy (Wilson), Cohen's kappa, and for ordinal scales the quadratic-weighted kappa, Spearman's
    rho and the mean absolute error (each a percentile bootstrap over items).  An unparsed grade under
    ``wrong`` counts in accuracy and kappa (a category matching no label) but not in rho or MAE, which
    need a number; it is counted in ``n_unparsed`` either way.

Perturbations (:func:`perturbation_effects`), paired over the same source items
    a unit is (source item, perturbed case); per kind:

    * preserving kinds: **invariance** = share of units whose grade on the perturbed case equals the
      grade on the source (no label needed);
    * changing kinds: **sensitivity** = share of units, among those whose source the grader graded
      right, whose perturbed case it also grades right (its grade moved with the meaning).  A grader
      that was wrong on the source says nothing about noticing the edit: those units are counted
      (``n_source_wrong``) and left out;
    * both: exact McNemar of correctness on the source against correctness on the perturbed case,
      over labelled units (Holm-adjusted across the kinds of the cell).

Trust (:func:`grader_trust`) -- the definition and its reasoning are in docs/definitions.md
    T_g = C * (A - iota * q), iota = 1 - invariance pooled over the preserving units, q = the mean
    correctness of the two grades of a unit whose grade changed (exactly 1/2 for a binary grader:
    two different grades under one expected label, one of them right); T_g_joint = the joint event
    measured directly per labelled source item (consistent, invariant under all its preserving cases,
    right).  Intervals: a bootstrap over source items (all of an item's repetitions and perturbed cases
    move with it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import Missing, PerturbationClass
from .intervals import percentile_bounds, wilson_bounds
from .significance import exact_sign_test, holm_adjust

__all__ = ["GRADE_KINDS", "ITEM_GRADE_COLUMNS", "PERTURBATION_EFFECT_COLUMNS", "SPLIT_GRADE", "UNPARSED_GRADE",
           "GraderAgreement", "GraderTrust", "grade_kind", "grader_agreement", "grader_trust", "item_grades",
           "level_calibration", "perturbation_effects"]

#: an unparsed grade as a value of its own (``unparsed="wrong"``): equal to another unparsed grade only
UNPARSED_GRADE = "unparsed"
#: the grade of an item whose repetitions split between two modes: equal to no label and no other grade
SPLIT_GRADE = "split"
#: how a grader's scale is read: two levels, three or more numeric levels in order, or unordered words
GRADE_KINDS: tuple[str, ...] = ("binary", "ordinal", "nominal")
ITEM_GRADE_COLUMNS: tuple[str, ...] = ("grade", "n_reps", "n_unparsed", "consistent", "mode_share", "split")
PERTURBATION_EFFECT_COLUMNS: tuple[str, ...] = (
    "kind", "class", "n_units", "n_ungraded", "n_source_wrong", "n_counted", "n_kept", "rate", "rate_lo",
    "rate_hi", "n_labelled", "accuracy_source", "accuracy_perturbed", "only_source_right",
    "only_perturbed_right", "p_mcnemar", "p_holm")


def _numeric(values: Sequence[object] | np.ndarray) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)


def grade_kind(levels: Sequence[object]) -> str:
    """``binary`` (two levels), ``ordinal`` (three or more, all numeric) or ``nominal`` (otherwise)."""
    lv = [x for x in dict.fromkeys(levels) if x is not None and x not in (UNPARSED_GRADE, SPLIT_GRADE)]
    if len(lv) <= 2:
        return "binary"
    return "ordinal" if not np.isnan(_numeric(lv)).any() else "nominal"


def item_grades(frame: pd.DataFrame, *, unit: Sequence[str], policy: FigurePolicy = DEFAULT_POLICY
                ) -> pd.DataFrame:
    """One row per ``unit`` (e.g. cell key + item + step) of a frame with a ``grade`` column (``None``
    = unparsed): the modal ``grade`` (:data:`SPLIT_GRADE` for a tie between modes, ``None`` when no
    grade was counted), ``n_reps`` grades counted
    under the policy, ``n_unparsed``, ``consistent`` (1.0 when every counted grade agrees, NaN with
    fewer than two), ``mode_share`` (share of the modal grade) and ``split`` (a tie for the mode)."""
    keys = list(unit)
    g = frame["grade"].astype(object)
    missing = g.isna()
    df = frame[keys].copy()
    df["_g"] = g.where(~missing, UNPARSED_GRADE) if not policy.drops_unparsed else g
    df["_miss"] = missing.to_numpy()
    base = df.groupby(keys, dropna=False, sort=True)["_miss"].agg(n_unparsed="sum")
    counted = df[df["_g"].notna()]
    votes = counted.groupby([*keys, "_g"], dropna=False, sort=True).size().rename("votes").reset_index()
    top = votes.groupby(keys, dropna=False, sort=True)["votes"].agg(max_votes="max", n_reps="sum")
    at_top = votes.merge(top["max_votes"].reset_index(), on=keys)
    at_top = at_top[at_top["votes"] == at_top["max_votes"]]
    modal = at_top.groupby(keys, dropna=False, sort=True).agg(n_modes=("_g", "size"), mode=("_g", "first"))
    out = base.join(top).join(modal).reset_index()
    n_reps = out["n_reps"].fillna(0).astype(int).to_numpy()
    top_votes = out["max_votes"].fillna(0).to_numpy(float)
    split = (out["n_modes"].fillna(0) > 1).to_numpy()
    out["grade"] = [None if r == 0 else SPLIT_GRADE if sp else m
                    for m, sp, r in zip(out["mode"], split, n_reps, strict=True)]
    out["n_reps"] = n_reps
    out["n_unparsed"] = out["n_unparsed"].astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["mode_share"] = np.where(n_reps > 0, top_votes / np.maximum(n_reps, 1), np.nan)
    out["consistent"] = np.where(n_reps >= 2, (top_votes == n_reps) * 1.0, np.nan)
    out["split"] = split
    return out[[*keys, *ITEM_GRADE_COLUMNS]]


# -- agreement -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraderAgreement:
    """A grader's modal grades against the human labels on one cell's labelled items.

    ``n`` compared items; ``n_unlabelled``, ``n_unparsed`` (labelled items without a grade, whatever
    the policy); a split mode (:data:`SPLIT_GRADE`) is compared and wrong, as for pairs;
    ``accuracy`` (Wilson), ``kappa`` and -- ordinal scales -- ``kappa_quadratic``, ``spearman``, ``mae``
    (percentile bootstrap over items; ``n_graded`` items with a number on both sides).  NaN where
    undefined (no item, constant ratings, a nominal scale for the ordinal figures)."""

    kind: str
    n: int
    n_unlabelled: int
    n_unparsed: int
    n_graded: int
    accuracy: float
    accuracy_lo: float
    accuracy_hi: float
    kappa: float
    kappa_lo: float
    kappa_hi: float
    kappa_quadratic: float
    kappa_quadratic_lo: float
    kappa_quadratic_hi: float
    spearman: float
    spearman_lo: float
    spearman_hi: float
    mae: float
    mae_lo: float
    mae_hi: float


def _kappa_tables(tables: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted Cohen's kappa of each ``k x k`` contingency table in ``tables`` (..., k, k):
    1 - sum(w * observed) / sum(w * expected), expected = outer(row sums, column sums) / n; NaN when
    the expected disagreement is 0 (both raters constant and equal)."""
    total = tables.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = tables.sum(axis=-1)[..., :, None] * tables.sum(axis=-2)[..., None, :] / total[..., None, None]
        obs = (weights * tables).sum(axis=(-2, -1))
        exp = (weights * expected).sum(axis=(-2, -1))
        return np.where(exp > 0, 1.0 - obs / np.where(exp > 0, exp, 1.0), np.nan)


def _bounds(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    lo, hi = percentile_bounds(samples, confidence=confidence)
    return float(lo), float(hi)


def _pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        den = np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
        return np.where(den > 0, (xc * yc).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def grader_agreement(labels: Sequence[object], grades: Sequence[object], *, scale: Sequence[object] | None = None,
                     kind: str | None = None, confidence: float = 0.95, n_bootstrap: int = 1000,
                     seed: int = 0) -> GraderAgreement:
    """:class:`GraderAgreement` of aligned human labels and modal grades (``None`` = no label / no
    grade; :data:`UNPARSED_GRADE` = an unparsed grade counted wrong).  ``scale`` orders the levels
    (default: numeric order of the values seen); ``kind`` defaults to :func:`grade_kind` of the scale."""
    lab = pd.Series(labels, dtype=object).where(lambda s: s.notna(), None).to_numpy(dtype=object)
    gra = pd.Series(grades, dtype=object).where(lambda s: s.notna(), None).to_numpy(dtype=object)
    labelled = np.array([v is not None for v in lab], dtype=bool)
    graded = np.array([v is not None for v in gra], dtype=bool)
    n_unparsed = int((labelled & (~graded | (gra == UNPARSED_GRADE))).sum())
    both = labelled & graded
    a, b = lab[both], gra[both]
    seen = [x for x in dict.fromkeys([*a, *b]) if x not in (UNPARSED_GRADE, SPLIT_GRADE)]
    levels = list(scale) if scale is not None else sorted(seen, key=lambda x: (np.isnan(_numeric([x])[0]),
                                                                                _numeric([x])[0], str(x)))
    levels += [x for x in seen if x not in levels]
    kind = kind or grade_kind(levels)
    cats = [*levels, UNPARSED_GRADE, SPLIT_GRADE]
    n = int(both.sum())
    hits = int((a == b).sum())
    acc_lo, acc_hi = wilson_bounds(hits, n, confidence=confidence)
    idx = pd.Index(cats)
    ca, cb = idx.get_indexer(a), idx.get_indexer(b)
    k = len(cats)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_bootstrap, n)) if n and n_bootstrap else np.zeros((0, n), dtype=np.int64)
    flat = ca * k + cb
    table = np.bincount(flat, minlength=k * k).reshape(k, k).astype(float)
    boot_tables = (np.stack([np.bincount(flat[d], minlength=k * k) for d in draws]).reshape(-1, k, k).astype(float)
                   if len(draws) else np.zeros((0, k, k)))
    plain = 1.0 - np.eye(k)
    kap, kap_b = float(_kappa_tables(table, plain)) if n else np.nan, _kappa_tables(boot_tables, plain)
    res: dict[str, tuple[float, float, float]] = {"kappa": (float(kap), *_bounds(kap_b, confidence))}
    nan3 = (np.nan, np.nan, np.nan)
    res["kappa_quadratic"] = res["spearman"] = res["mae"] = nan3
    n_num = 0
    if kind in ("ordinal", "binary") and not np.isnan(_numeric(levels)).any() and n:
        pos = np.arange(len(levels), dtype=float)
        quad = np.subtract.outer(pos, pos) ** 2
        w = np.zeros((k, k))
        w[:, :] = quad.max() if len(levels) > 1 else 1.0     # unparsed / split: the farthest miss
        w[:len(levels), :len(levels)] = quad
        w[-2:, -2:] = 0.0
        if kind == "ordinal":
            res["kappa_quadratic"] = (float(_kappa_tables(table, w)),
                                      *_bounds(_kappa_tables(boot_tables, w), confidence))
        xa, xb = _numeric(a), _numeric(b)
        num = ~np.isnan(xb)
        n_num = int(num.sum())
        if kind == "ordinal" and n_num:
            res.update(_ordinal_figures(xa, xb, num, draws, confidence))
    est = {name: tuple(float(v) for v in vals) for name, vals in res.items()}
    return GraderAgreement(
        kind=kind, n=n, n_unlabelled=int((~labelled).sum()), n_unparsed=n_unparsed, n_graded=n_num,
        accuracy=hits / n if n else float("nan"), accuracy_lo=float(acc_lo), accuracy_hi=float(acc_hi),
        kappa=est["kappa"][0], kappa_lo=est["kappa"][1], kappa_hi=est["kappa"][2],
        kappa_quadratic=est["kappa_quadratic"][0], kappa_quadratic_lo=est["kappa_quadratic"][1],
        kappa_quadratic_hi=est["kappa_quadratic"][2], spearman=est["spearman"][0], spearman_lo=est["spearman"][1],
        spearman_hi=est["spearman"][2], mae=est["mae"][0], mae_lo=est["mae"][1], mae_hi=est["mae"][2])


def _ordinal_figures(xa: np.ndarray, xb: np.ndarray, num: np.ndarray, draws: np.ndarray, confidence: float
                     ) -> dict[str, tuple[float, float, float]]:
    """Spearman and MAE over the items graded with a number, and their bootstrap bounds (a resample's
    unparsed items are left out of it by a zero weight)."""
    err = np.abs(xa - xb)
    err_n = np.where(num, err, 0.0)
    mae = float(err[num].mean())
    rho = float(_pearson_rows(rankdata(xa[num]), rankdata(xb[num])))
    if not len(draws):
        return {"spearman": (rho, np.nan, np.nan), "mae": (mae, np.nan, np.nan)}
    w = num[draws].astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mae_b = (err_n[draws]).sum(axis=1) / w.sum(axis=1)
    if num.all():
        rho_b = _pearson_rows(rankdata(xa[draws], axis=1), rankdata(xb[draws], axis=1))
    else:       # rare (unparsed under "wrong"): one resample at a time
        rho_b = np.array([float(_pearson_rows(rankdata(xa[d][num[d]]), rankdata(xb[d][num[d]]))) for d in draws])
    return {"spearman": (rho, *_bounds(rho_b, confidence)), "mae": (mae, *_bounds(mae_b, confidence))}


# -- calibration across the scale --------------------------------------------------------------------------
def level_calibration(labels: Sequence[object], grades: Sequence[object], *, scale: Sequence[object]
                      ) -> pd.DataFrame:
    """Per true level of ``scale``: ``n`` items, ``n_graded`` with a grade on the scale, ``mean_grade``
    (the mean of the grades, numeric scales), the shares graded ``exact`` / ``above`` / ``below`` the
    true level (by scale position), and ``graded_<level>`` counts -- the confusion row."""
    lab = np.asarray(list(labels), dtype=object)
    gra = np.asarray(list(grades), dtype=object)
    levels = list(scale)
    pos = {v: i for i, v in enumerate(levels)}
    pl = np.array([pos.get(v, -1) for v in lab])
    pg = np.array([pos.get(v, -1) for v in gra])
    numeric = _numeric(levels)
    rows = []
    for i, level in enumerate(levels):
        mine = pl == i
        on = mine & (pg >= 0)
        m = int(on.sum())
        counts = np.bincount(pg[on], minlength=len(levels))
        mean = float(numeric[pg[on]].mean()) if m and not np.isnan(numeric).any() else float("nan")
        rows.append({"level": level, "n": int(mine.sum()), "n_graded": m, "mean_grade": mean,
                     "exact": counts[i] / m if m else float("nan"),
                     "above": counts[i + 1:].sum() / m if m else float("nan"),
                     "below": counts[:i].sum() / m if m else float("nan"),
                     **{f"graded_{lv}": int(c) for lv, c in zip(levels, counts, strict=True)}})
    return pd.DataFrame(rows)


# -- perturbations -----------------------------------------------------------------------------------------
def perturbation_effects(kind: Sequence[str], klass: Sequence[str], grade_source: Sequence[object],
                         grade_perturbed: Sequence[object], label_source: Sequence[object],
                         label_perturbed: Sequence[object], *, confidence: float = 0.95) -> pd.DataFrame:
    """One row per perturbation kind (:data:`PERTURBATION_EFFECT_COLUMNS`) from aligned units (source
    item, perturbed case).  ``rate`` is the invariance of a preserving kind or the sensitivity of a
    changing kind (module docstring), with a Wilson interval over ``n_counted`` units (``n_kept`` of
    them invariant / sensitive).  A unit without a grade on either side is ``n_ungraded`` (left out);
    the McNemar test uses the ``n_labelled`` graded units with both labels."""
    gs = pd.Series(grade_source, dtype=object).to_numpy(dtype=object)
    gp = pd.Series(grade_perturbed, dtype=object).to_numpy(dtype=object)
    ls = pd.Series(label_source, dtype=object).to_numpy(dtype=object)
    lp = pd.Series(label_perturbed, dtype=object).to_numpy(dtype=object)
    kinds = np.asarray(list(kind), dtype=object)
    classes = np.asarray(list(klass), dtype=object)
    ok = pd.notna(gs) & pd.notna(gp)
    same = ok & (gs == gp) & (gs != SPLIT_GRADE)          # a split grade equals no other grade
    labelled = ok & pd.notna(ls) & pd.notna(lp)
    right_s = labelled & (gs == ls)
    right_p = labelled & (gp == lp)
    rows = []
    for k in sorted(set(kinds.tolist())):
        m = kinds == k
        cls = str(classes[m][0])
        if cls == PerturbationClass.PRESERVING:
            counted, kept, wrong_src = m & ok, m & same, 0
        else:
            counted, kept = m & right_s, m & right_s & right_p
            wrong_src = int((m & labelled & ~right_s).sum())
        b = int((m & right_s & ~right_p).sum())
        c = int((m & ~right_s & right_p & labelled).sum())
        n_lab = int((m & labelled).sum())
        lo, hi = wilson_bounds(int(kept.sum()), int(counted.sum()), confidence=confidence)
        n_c = int(counted.sum())
        rows.append({"kind": k, "class": cls, "n_units": int(m.sum()), "n_ungraded": int((m & ~ok).sum()),
                     "n_source_wrong": wrong_src, "n_counted": n_c, "n_kept": int(kept.sum()),
                     "rate": kept.sum() / n_c if n_c else float("nan"), "rate_lo": float(lo), "rate_hi": float(hi),
                     "n_labelled": n_lab,
                     "accuracy_source": right_s[m].sum() / n_lab if n_lab else float("nan"),
                     "accuracy_perturbed": right_p[m].sum() / n_lab if n_lab else float("nan"),
                     "only_source_right": b, "only_perturbed_right": c,
                     "p_mcnemar": float(exact_sign_test(b, c)) if n_lab else float("nan")})
    out = pd.DataFrame(rows, columns=[c for c in PERTURBATION_EFFECT_COLUMNS if c != "p_holm"])
    out["p_holm"] = holm_adjust(out["p_mcnemar"].to_numpy(float)) if len(out) else []
    return out[list(PERTURBATION_EFFECT_COLUMNS)]


# -- trust --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GraderTrust:
    """T_g = C (A - iota q) and T_g_joint with bootstrap intervals over source items, the pieces
    (C over items graded at least twice, A over labelled items, iota over preserving units, q) and
    ``reason``: why T_g is undefined (``no readable replies``, ``no repetitions``, ``no human labels``, ``no meaning-preserving
    perturbations``), empty when it is defined.  ``T_bound`` = (C, or 1 when unmeasured) x A: what T_g
    can at most be when invariance is unmeasured (iota q >= 0), NaN without labels."""

    T: float
    T_lo: float
    T_hi: float
    T_joint: float
    T_joint_lo: float
    T_joint_hi: float
    T_bound: float
    C: float
    A: float
    iota: float
    q: float
    n_items: int
    n_preserving: int
    reason: str


def _trust_value(cons: np.ndarray, has_c: np.ndarray, corr: np.ndarray, has_a: np.ndarray, changed: np.ndarray,
                 n_pres: np.ndarray, q_sum: np.ndarray, joint: np.ndarray, has_j: np.ndarray, *, binary: bool
                 ) -> tuple[np.ndarray, ...]:
    """(T, T_joint, C, A, iota, q) from per-item sums (last axis = items; leading axes = resamples)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        C = cons.sum(-1) / has_c.sum(-1)
        A = corr.sum(-1) / has_a.sum(-1)
        iota = changed.sum(-1) / n_pres.sum(-1)
        q = np.full_like(iota, 0.5) if binary else np.where(changed.sum(-1) > 0, q_sum.sum(-1) / changed.sum(-1), 0.0)
        T = C * (A - iota * q)
        Tj = joint.sum(-1) / has_j.sum(-1)
    return T, Tj, C, A, iota, q


def grader_trust(consistent: Sequence[float], correct: Sequence[float], n_preserving: Sequence[int],
                 n_changed: Sequence[int], q_sum: Sequence[float], invariant: Sequence[float], *, binary: bool,
                 confidence: float = 0.95, n_bootstrap: int = 1000, seed: int = 0, readable: bool = True
                 ) -> GraderTrust:
    """:class:`GraderTrust` from one row per unperturbed (source) item of a cell:

    * ``consistent``: 1/0 when every repetition agreed / not, NaN when graded fewer than twice;
    * ``correct``: 1/0 for the modal grade against the label, NaN when unlabelled or ungraded;
    * ``n_preserving`` counted preserving units of the item, ``n_changed`` of them whose grade changed,
      ``q_sum`` = sum over the changed units of (correct on the source + correct on the case) / 2;
    * ``invariant``: 1/0 when every counted preserving case kept the grade, NaN without one.

    The joint event per item is consistent x invariant x correct, over items where all three exist.
    ``readable`` false (not one of the cell's grades could be read) makes that the reason, before any
    other: a cell whose every reply was unreadable said "no repetitions" although it had them."""
    cons = np.asarray(consistent, dtype=float)
    corr = np.asarray(correct, dtype=float)
    pres = np.asarray(n_preserving, dtype=float)
    chg = np.asarray(n_changed, dtype=float)
    qs = np.asarray(q_sum, dtype=float)
    inv = np.asarray(invariant, dtype=float)
    has_c, has_a = ~np.isnan(cons), ~np.isnan(corr)
    joint_ok = has_c & has_a & ~np.isnan(inv)
    cols = (np.nan_to_num(cons), has_c * 1.0, np.nan_to_num(corr), has_a * 1.0, chg, pres, qs,
            np.where(joint_ok, np.nan_to_num(cons) * np.nan_to_num(corr) * np.nan_to_num(inv), 0.0), joint_ok * 1.0)
    T, Tj, C, A, iota, q = (float(v) for v in _trust_value(*cols, binary=binary))
    n = len(cons)
    T_lo = T_hi = Tj_lo = Tj_hi = float("nan")
    if n and n_bootstrap:
        rng = np.random.default_rng(seed)
        weights = rng.multinomial(n, np.full(n, 1.0 / n), size=n_bootstrap).astype(float)
        Tb, Tjb, *_ = _trust_value(*(weights[:, :] * c[None, :] for c in cols), binary=binary)
        T_lo, T_hi = (float(x) for x in percentile_bounds(Tb, confidence=confidence))
        Tj_lo, Tj_hi = (float(x) for x in percentile_bounds(Tjb, confidence=confidence))
    reason = (Missing.NO_READABLE_REPLIES.value if not readable else "no repetitions" if not has_c.any() else "no human labels" if not has_a.any()
              else "no meaning-preserving perturbations" if not pres.sum() else "")
    if reason:
        T = T_lo = T_hi = float("nan")
    if not joint_ok.any():
        Tj = Tj_lo = Tj_hi = float("nan")
    bound = (C if has_c.any() else 1.0) * A if has_a.any() else float("nan")
    return GraderTrust(T=T, T_lo=T_lo, T_hi=T_hi, T_joint=Tj, T_joint_lo=Tj_lo, T_joint_hi=Tj_hi, T_bound=float(bound),
                       C=C if has_c.any() else float("nan"), A=A if has_a.any() else float("nan"),
                       iota=iota if pres.sum() else float("nan"), q=q if pres.sum() else float("nan"),
                       n_items=n, n_preserving=int(pres.sum()), reason=reason)
