"""Agreement of pointwise verdicts with human labels: graded scales (:func:`grade_agreement`) and
PASS / FAIL / UNKNOWN rubrics (:func:`rubric_agreement_figures`), for one cell's aligned arrays of
normalised values (None = no value: an unparsed verdict or a missing label).

Unparsed verdicts follow the cell figures' policy: under ``"exclude"`` they are counted and left out;
under ``"wrong"`` an unparsed verdict is a category of its own (:data:`UNPARSED`) that matches no human
label -- it enters exact match / agreement and kappa, never Spearman nor the disagreement directions.
UNKNOWN rubric answers are counted apart, never folded into pass or fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from .agreement import cohen_kappa, disagreement_counts
from .significance import spearman

__all__ = ["UNPARSED", "GradeAgreement", "RubricAgreement", "grade_agreement", "rubric_agreement_figures"]

#: the category an unparsed verdict becomes under ``unparsed="wrong"`` (matches no human label)
UNPARSED = "unparsed"


@dataclass(frozen=True)
class GradeAgreement:
    """Judge grades against human grades: ``n`` compared items, ``n_unlabelled`` (no human grade),
    ``n_unparsed`` (labelled items without a judge grade), exact match, Cohen's kappa (plain and
    quadratic-weighted on the scale order) and Spearman's rho (NaN when undefined)."""

    n: int
    n_unlabelled: int
    n_unparsed: int
    exact_match: float
    kappa: float
    kappa_quadratic: float
    spearman: float


def _numeric(values: Any) -> np.ndarray:
    return pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)


def grade_agreement(labels: Sequence[Any], verdicts: Sequence[Any], *, scale: Sequence[Any] | None = None,
                    policy: FigurePolicy = DEFAULT_POLICY) -> GradeAgreement:
    """:class:`GradeAgreement` of aligned human grades and judge grades (normalised text, None when
    missing).  ``scale`` orders the categories for the weighted kappa (default: the numeric order of
    the grades seen)."""
    lab = pd.Series(labels, dtype=object)
    ver = pd.Series(verdicts, dtype=object)
    labelled = lab.notna().to_numpy()
    n_unparsed = int((labelled & ver.isna().to_numpy()).sum())
    if not policy.drops_unparsed:
        ver = ver.where(ver.notna(), UNPARSED)
    both = labelled & ver.notna().to_numpy()
    a, b = lab[both].to_numpy(dtype=object), ver[both].to_numpy(dtype=object)
    if scale is not None:
        cats = list(scale)
    else:
        seen = sorted((set(a) | set(b)) - {UNPARSED}, key=lambda x: (_numeric([x])[0], x))
        cats = list(seen)
    if not policy.drops_unparsed and (b == UNPARSED).any():
        cats = [*cats, UNPARSED]
    n = int(both.sum())
    graded = b != UNPARSED
    rho = spearman(_numeric(a[graded]), _numeric(b[graded])) if int(graded.sum()) > 1 else None
    return GradeAgreement(
        n=n, n_unlabelled=int((~labelled).sum()), n_unparsed=n_unparsed,
        exact_match=float(np.mean(a == b)) if n else float("nan"),
        kappa=cohen_kappa(a, b, labels=cats).value if n else float("nan"),
        kappa_quadratic=cohen_kappa(a, b, labels=cats, weights="quadratic").value if n else float("nan"),
        spearman=rho.value if rho else float("nan"))


@dataclass(frozen=True)
class RubricAgreement:
    """PASS / FAIL / UNKNOWN verdicts against human PASS / FAIL labels: ``n`` items with a human
    PASS/FAIL, ``n_compared`` (both PASS/FAIL, and under ``"wrong"`` unparsed verdicts too),
    ``n_unknown`` judge UNKNOWN answers, ``n_unparsed``, ``unknown_rate``, ``agreement``, Cohen's
    ``kappa`` and both disagreement directions (``judge_passed_human_failed`` is the dangerous one)."""

    n: int
    n_compared: int
    n_unknown: int
    n_unparsed: int
    unknown_rate: float
    agreement: float
    kappa: float
    judge_passed_human_failed: int
    judge_failed_human_passed: int


def rubric_agreement_figures(human: Sequence[Any], judge: Sequence[Any], *,
                             policy: FigurePolicy = DEFAULT_POLICY) -> RubricAgreement:
    """:class:`RubricAgreement` of aligned human labels and judge verdicts, each ``PASS`` / ``FAIL`` /
    ``UNKNOWN`` or None."""
    hum = pd.Series(human, dtype=object)
    jud = pd.Series(judge, dtype=object)
    human_pf = hum.isin(["PASS", "FAIL"]).to_numpy()
    pf = jud.isin(["PASS", "FAIL"]).to_numpy()
    missing = jud.isna().to_numpy()
    both = human_pf & pf if policy.drops_unparsed else human_pf & (pf | missing)
    h = hum[both].to_numpy(dtype=object)
    j = jud[both].where(jud[both].notna(), UNPARSED).to_numpy(dtype=object)
    n_both = int(both.sum())
    cats = ["PASS", "FAIL", UNPARSED] if (j == UNPARSED).any() else ["PASS", "FAIL"]
    dec = j != UNPARSED
    dis = disagreement_counts(h[dec], j[dec], positive="PASS") if dec.any() else None
    unknown = (jud == "UNKNOWN").to_numpy()
    return RubricAgreement(
        n=int(human_pf.sum()), n_compared=n_both, n_unknown=int((human_pf & unknown).sum()),
        n_unparsed=int((human_pf & missing).sum()),
        unknown_rate=float(unknown[human_pf].mean()) if human_pf.any() else float("nan"),
        agreement=float(np.mean(h == j)) if n_both else float("nan"),
        kappa=cohen_kappa(h, j, labels=cats).value if n_both else float("nan"),
        judge_passed_human_failed=int(dis.judge_passed_human_failed or 0) if dis else 0,
        judge_failed_human_passed=int(dis.judge_failed_human_passed or 0) if dis else 0)
