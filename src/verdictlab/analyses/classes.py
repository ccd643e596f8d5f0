"""Cell columns ``A_3class`` and ``macro_f1`` (with per-class precision / recall / F1 / support and
their N and intervals) from :func:`verdictlab.stats.class_figures`: the three-class figures that
sources such as PandaLM report, merged into every report cell (JSON ``cells[i].A_3class``, ...)."""

from __future__ import annotations

import pandas as pd

from ..stats.classes import CLASS_COLUMNS, class_figures
from . import AnalysisInput, register_cell_columns

#: what the report cells get (the policy columns are the report's own)
COLUMNS: tuple[str, ...] = tuple(c for c in CLASS_COLUMNS
                                 if c not in ("unparsed_policy", "confidence", "n_bootstrap"))


@register_cell_columns("classes", columns=COLUMNS)
def classes(inp: AnalysisInput) -> pd.DataFrame | None:
    """One row per cell (the full cell key: free and constrained decoding are separate cells)."""
    pairs = inp.pairs
    if pairs.empty:
        return None
    out = class_figures(pairs, policy=inp.policy)
    return out.drop(columns=["unparsed_policy", "confidence", "n_bootstrap"])
