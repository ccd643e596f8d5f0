"""How consistent a pointwise grader is over repetitions (e.g. an inspect_ai model-graded scorer over
epochs, imported with ``verdictlab import inspect``): :func:`verdictlab.stats.repeats.repeat_consistency`
on the run's pointwise judgments, one row per cell."""

from __future__ import annotations

import pandas as pd

from ..stats.repeats import repeat_consistency
from . import AnalysisInput, register


@register("grader_consistency", title="Pointwise grader consistency over repetitions",
          description="C = share of items whose grades agree in every repetition (Wilson interval), "
                      "self-consistency = mean share of the modal grade; items graded once are not counted.",
          order=85)
def grader_consistency(inp: AnalysisInput) -> pd.DataFrame | None:
    points = inp.points
    if points.empty:
        return None
    out = repeat_consistency(points, policy=inp.policy)
    return out if (out["n_units"] > 0).any() else None
