"""The generated test cases of a run and where they stand with the people curating them: per dataset,
kind, class and origin, how many cases the run holds, how many a person accepted, rejected or edited,
how many wait for a decision and how many enter the grader figures (only deterministic and accepted
cases count: the data contract in docs/architecture.md).  Counts from
:func:`verdictlab.stats.curation_counts`; the decisions themselves (who, when) are in the run's audit
trail (meta ``curation``) and on each case."""

from __future__ import annotations

import pandas as pd

from ..core.curation import was_edited
from ..core.items import PointItem, perturbation_of
from ..stats import curation_counts
from . import AnalysisInput, register

__all__ = ["case_frame", "perturbation_curation"]


def case_frame(items: list[object] | tuple[object, ...]) -> pd.DataFrame:
    """One row per perturbed case: dataset, kind, class, origin, status, edited."""
    rows = []
    for it in items:
        p = perturbation_of(it) if isinstance(it, PointItem) else None
        if p is not None and isinstance(it, PointItem):
            rows.append({"dataset": it.dataset, "kind": p.kind, "class": p.perturbation_class.value,
                         "origin": p.origin, "status": p.status.value, "edited": was_edited(it)})
    return pd.DataFrame(rows, columns=["dataset", "kind", "class", "origin", "status", "edited"])


@register("perturbation_curation", order=85, title="Generated test cases and their curation",
          description="Per dataset and perturbation kind: cases in the run, accepted, rejected and edited by a "
                      "person, still pending, and counted in the grader figures (rule-written cases count as "
                      "written; model-written ones once accepted).")
def perturbation_curation(inp: AnalysisInput) -> pd.DataFrame | None:
    cases = case_frame(list(inp.items or ()))
    if cases.empty:
        return None
    return curation_counts(cases)
