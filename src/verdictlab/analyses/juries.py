"""The juries table of the report: :func:`verdictlab.stats.juries.jury_table` (majority votes of k
samples of one judge, or of several judges, with the vote rule, the error correlation and the
predicted against the observed accuracy) over the run's single-call pairwise rows, under the
report's unparsed policy."""

from __future__ import annotations

import pandas as pd

from ..stats.juries import jury_table
from . import AnalysisInput, register


@register("juries", order=20, title="Juries", spans=("judge",),
          description="Majority votes of k samples of one judge (homogeneous, one cell) or of several judges "
                      "(heterogeneous: judge empty, the jurors listed): observed accuracy beside the prediction "
                      "under independence and the ρ-corrected prediction (ρ = error correlation between "
                      "jurors); unparsed votes follow the report's policy.")
def juries_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`jury_table` over the run's single-call pairwise rows, under the report's unparsed policy."""
    pairs = inp.pairs
    if pairs.empty:
        return None
    return jury_table(pairs[pairs["step"] == ""], policy=inp.policy)
