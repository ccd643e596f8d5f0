"""Agreement of pointwise verdicts with human labels: graded scales (:func:`pointwise_agreement`) and
PASS / FAIL / UNKNOWN rubrics (:func:`rubric_agreement`), per cell and step.  Exact match, Cohen's kappa (unweighted and quadratic-weighted on the scale order) and Spearman's
rho between judge and human grades, on items where both exist; unparsed verdicts are counted and follow
the cell figures' unparsed policy.  UNKNOWN rubric answers are counted separately, never folded into
pass or fail, with both disagreement directions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ..protocols.pointwise import grade_text
from ..protocols.rubric import human_label, normalise_result
from ..stats import with_cell_columns
from ..stats.pointwise import UNPARSED, grade_agreement, rubric_agreement_figures
from . import AnalysisInput, register

__all__ = ["UNPARSED", "pointwise_agreement", "rubric_agreement"]

#: one row per cell and step (rubric criteria and graded scales are judged per step)
_GROUP = [*CELL_KEY, "step"]


def _keyed(judgments: pd.DataFrame) -> pd.DataFrame:
    return with_cell_columns(judgments).assign(step=judgments["step"].fillna("").astype(str))


def pointwise_agreement(judgments: pd.DataFrame, *, scale: Sequence[Any] | None = None,
                        policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """Exact match, kappa (plain and quadratic-weighted) and Spearman between judge and human grades
    (:func:`verdictlab.stats.pointwise.grade_agreement`), one row per cell and step.  Rows with a
    missing human label are left out (``n_unlabelled``); unparsed verdicts are counted (``n_unparsed``)
    and follow the unparsed policy.  ``scale`` orders the categories for the weighted kappa (default:
    numeric order of the grades seen)."""
    cats = [grade_text(x) for x in scale] if scale is not None else None
    out = []
    for key, g in _keyed(judgments).groupby(_GROUP, dropna=False, sort=True):
        fig = grade_agreement(g["label"].map(grade_text), g["verdict"].map(grade_text), scale=cats, policy=policy)
        out.append({**dict(zip(_GROUP, key, strict=True)), **asdict(fig)})
    return pd.DataFrame(out)


def rubric_agreement(judgments: pd.DataFrame, *, items: Sequence[Any] | None = None,
                     policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """Agreement of PASS / FAIL / UNKNOWN verdicts with human pass/fail labels
    (:func:`verdictlab.stats.pointwise.rubric_agreement_figures`), one row per cell and step.
    ``items`` (PointItems) supply per-criterion labels (``meta["labels"]``); without them the
    ``label`` column is used."""
    df = _keyed(judgments)
    if items is not None:
        by_id = {(it.dataset, str(it.item_id)): it for it in items}
        df["_human"] = [human_label(by_id.get((d, str(i))), s) if (d, str(i)) in by_id else normalise_result(lab)
                        for d, i, s, lab in zip(df["dataset"], df["item_id"], df["step"], df["label"], strict=True)]
    else:
        df["_human"] = df["label"].map(normalise_result)
    df["_judge"] = df["verdict"].map(normalise_result)
    out = []
    for key, g in df.groupby(_GROUP, dropna=False, sort=True):
        fig = rubric_agreement_figures(g["_human"], g["_judge"], policy=policy)
        out.append({**dict(zip(_GROUP, key, strict=True)), **asdict(fig)})
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
    return rubric_agreement(rub, items=list(inp.items) if inp.items is not None else None, policy=inp.policy)


@register("pointwise", order=80, title="Pointwise grades",
          description="Graded pointwise verdicts against the human labels.")
def pointwise_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    _, grd = _split_points(inp.points)
    if grd.empty:
        return None
    return pointwise_agreement(grd, policy=inp.policy)
