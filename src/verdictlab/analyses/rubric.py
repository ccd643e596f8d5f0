"""Agreement of pointwise verdicts with human labels: graded scales (:func:`pointwise_agreement`) and
PASS / FAIL / UNKNOWN rubrics (:func:`rubric_agreement`), per judge x dataset x protocol x temperature x
step.  Exact match, Cohen's kappa (unweighted and quadratic-weighted on the scale order) and Spearman's
rho between judge and human grades, on items where both exist; unparsed verdicts are counted and follow
the cell figures' unparsed policy.  UNKNOWN rubric answers are counted separately, never folded into
pass or fail, with both disagreement directions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..protocols.pointwise import grade_text
from ..protocols.rubric import human_label, normalise_result
from ..vocab import DEFAULT_UNPARSED, UnparsedPolicy, check_unparsed
from . import AnalysisInput, register

#: the category an unparsed verdict becomes under ``unparsed="wrong"`` (matches no human label)
UNPARSED = "unparsed"


def _check(unparsed: str) -> None:
    check_unparsed(unparsed)


_GROUP = ["judge", "dataset", "protocol", "temperature", "step"]


def _num(values: pd.Series) -> pd.Series:
    return pd.to_numeric(values, errors="coerce")


def pointwise_agreement(judgments: pd.DataFrame, *, scale: Sequence[Any] | None = None,
                        unparsed: str = DEFAULT_UNPARSED) -> pd.DataFrame:
    """Exact match, kappa (plain and quadratic-weighted) and Spearman between judge and human grades.

    One row per (judge, dataset, protocol, temperature, step).  Rows with a missing human label are
    left out (``n_unlabelled``); unparsed verdicts are counted (``n_unparsed``) and left out of the
    figures.  ``scale`` orders the categories for the weighted kappa (default: numeric order of the
    grades seen).  Under ``unparsed="wrong"`` an unparsed verdict is a grade of its own that matches no
    human grade: it enters exact match and kappa (``n`` includes it) but not Spearman."""
    from ..stats import cohen_kappa, spearman

    _check(unparsed)

    df = judgments.copy()
    df["step"] = df["step"].fillna("").astype(str)
    out = []
    for key, g in df.groupby(_GROUP, dropna=False, sort=True):
        lab = g["label"].map(grade_text)
        ver = g["verdict"].map(grade_text)
        labelled = lab.notna()
        n_unparsed = int((labelled & ver.isna()).sum())
        if unparsed == UnparsedPolicy.WRONG:
            ver = ver.astype(object).where(ver.notna(), UNPARSED)
        both = labelled & ver.notna()
        a, b = lab[both].to_numpy(dtype=object), ver[both].to_numpy(dtype=object)
        cats = [grade_text(x) for x in scale] if scale is not None else None
        if cats is None:
            seen = sorted((set(a) | set(b)) - {UNPARSED}, key=lambda x: (_num(pd.Series([x])).iloc[0], x))
            cats = list(seen)
        if unparsed == UnparsedPolicy.WRONG and (b == UNPARSED).any():
            cats = [*cats, UNPARSED]
        n = int(both.sum())
        k = cohen_kappa(a, b, labels=cats) if n else None
        kw = cohen_kappa(a, b, labels=cats, weights="quadratic") if n else None
        graded = b != UNPARSED
        rho = (spearman(_num(pd.Series(a[graded])).to_numpy(), _num(pd.Series(b[graded])).to_numpy())
               if int(graded.sum()) > 1 else None)
        out.append({**dict(zip(_GROUP, key, strict=True)), "n": n, "n_unlabelled": int((~labelled).sum()),
                    "n_unparsed": n_unparsed,
                    "exact_match": float(np.mean(a == b)) if n else np.nan,
                    "kappa": k.value if k else np.nan, "kappa_quadratic": kw.value if kw else np.nan,
                    "spearman": rho.value if rho else np.nan})
    return pd.DataFrame(out)


def rubric_agreement(judgments: pd.DataFrame, *, items: Sequence[Any] | None = None,
                     unparsed: str = DEFAULT_UNPARSED) -> pd.DataFrame:
    """Agreement of PASS / FAIL / UNKNOWN verdicts with human pass/fail labels.

    Per (judge, dataset, protocol, temperature, step): ``n`` items with a human PASS/FAIL label;
    ``n_unknown`` judge UNKNOWN answers (counted apart, never folded into pass or fail);
    ``n_unparsed``; on the items where both are PASS/FAIL: ``agreement``, Cohen's ``kappa``,
    ``judge_passed_human_failed`` (the dangerous direction) and ``judge_failed_human_passed``.
    ``items`` (PointItems) supply per-criterion labels (``meta["labels"]``); without them the
    ``label`` column is used.  Under ``unparsed="wrong"`` an unparsed verdict on a PASS/FAIL item is
    compared as a wrong answer: it enters ``n_compared`` and ``agreement`` (never matching) and kappa
    as a category of its own; the disagreement directions count PASS/FAIL answers only."""
    from ..stats import cohen_kappa, disagreement_counts

    _check(unparsed)

    df = judgments.copy()
    df["step"] = df["step"].fillna("").astype(str)
    if items is not None:
        by_id = {(it.dataset, str(it.item_id)): it for it in items}
        df["_human"] = [human_label(by_id.get((d, str(i))), s) if (d, str(i)) in by_id else normalise_result(lab)
                        for d, i, s, lab in zip(df["dataset"], df["item_id"], df["step"], df["label"], strict=True)]
    else:
        df["_human"] = df["label"].map(normalise_result)
    df["_judge"] = df["verdict"].map(normalise_result)
    out = []
    for key, g in df.groupby(_GROUP, dropna=False, sort=True):
        human_pf = g["_human"].isin(["PASS", "FAIL"])
        judge = g["_judge"]
        pf = judge.isin(["PASS", "FAIL"])
        both = human_pf & (pf | judge.isna()) if unparsed == UnparsedPolicy.WRONG else human_pf & pf
        h = g.loc[both, "_human"].to_numpy(dtype=object)
        j = judge[both].astype(object).where(judge[both].notna(), UNPARSED).to_numpy(dtype=object)
        n_both = int(both.sum())
        cats = ["PASS", "FAIL", UNPARSED] if (j == UNPARSED).any() else ["PASS", "FAIL"]
        k = cohen_kappa(h, j, labels=cats) if n_both else None
        dec = j != UNPARSED
        dis = disagreement_counts(h[dec], j[dec], positive="PASS") if dec.any() else None
        out.append({**dict(zip(_GROUP, key, strict=True)), "n": int(human_pf.sum()), "n_compared": n_both,
                    "n_unknown": int((human_pf & (judge == "UNKNOWN")).sum()),
                    "n_unparsed": int((human_pf & judge.isna()).sum()),
                    "unknown_rate": float((judge[human_pf] == "UNKNOWN").mean()) if human_pf.any() else np.nan,
                    "agreement": float(np.mean(h == j)) if n_both else np.nan,
                    "kappa": k.value if k else np.nan,
                    "judge_passed_human_failed": dis.judge_passed_human_failed if dis else 0,
                    "judge_failed_human_passed": dis.judge_failed_human_passed if dis else 0})
    return pd.DataFrame(out)


def _split_points(points: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rubric rows, graded rows) of the pointwise rows."""
    rub = points[points["verdict"].isin(["PASS", "FAIL", "UNKNOWN"])
                 | points["protocol"].astype(str).str.startswith("rubric")]
    return rub, points.drop(rub.index)


@register("rubric", order=70, title="Rubric (pointwise)",
          description="PASS / FAIL / UNKNOWN per criterion against the human labels.")
def rubric_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    rub, _ = _split_points(inp.points)
    if rub.empty:
        return None
    return rubric_agreement(rub, items=list(inp.items) if inp.items is not None else None, unparsed=inp.unparsed)


@register("pointwise", order=80, title="Pointwise grades",
          description="Graded pointwise verdicts against the human labels.")
def pointwise_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    _, grd = _split_points(inp.points)
    if grd.empty:
        return None
    return pointwise_agreement(grd, unparsed=inp.unparsed)
