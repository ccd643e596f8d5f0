"""Cell columns ``A_3class`` and ``macro_f1`` (with per-class precision / recall / F1 / support and
their N and intervals) from :func:`verdictlab.stats.class_figures`: the three-class figures that
sources such as PandaLM report, merged into every report cell (JSON ``cells[i].A_3class``, ...)."""

from __future__ import annotations

import pandas as pd

from ..stats.classes import CLASS_COLUMNS, class_figures
from . import AnalysisInput, CellColumn, register_cell_columns

#: what the report cells get (the policy columns are the report's own)
COLUMNS: tuple[str, ...] = tuple(c for c in CLASS_COLUMNS
                                 if c not in ("unparsed_policy", "confidence", "n_bootstrap"))

#: the columns the report's tables show, with their labels (every column of COLUMNS reaches the JSON)
SHOWN: tuple[str | CellColumn, ...] = tuple(
    {"A_3class": CellColumn("A_3class", "A 3-class", title="accuracy with tie labels as a third class"),
     "macro_f1": CellColumn("macro_f1", "macro F1", title="mean of the per-class F1 over A, B, tie")}.get(c, c)
    for c in COLUMNS)


@register_cell_columns("classes", columns=SHOWN)
def classes(inp: AnalysisInput) -> pd.DataFrame | None:
    """One row per cell (the full cell key: free and constrained decoding are separate cells)."""
    pairs = inp.pairs
    if pairs.empty:
        return None
    out = class_figures(pairs, policy=inp.policy)
    return out.drop(columns=["unparsed_policy", "confidence", "n_bootstrap"])
