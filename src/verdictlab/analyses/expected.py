"""Cell columns ``C_expected``, ``phi_expected``, ``A_expected``, ``T_expected`` (with ``_lo``/``_hi``
and ``_run_lo``/``_run_hi``) from :func:`verdictlab.stats.expected.expected_by_cell`: the
sampling-free figures of the R-repetition design, computed from the judge's verdict probabilities
(the ``p_a`` column) where the judge gives them (label-only protocols on judges with
log-probabilities).

One row per cell on the full cell key: a free cell never gets the figures of the constrained cell of
the same judge and protocol (only the rows of a cell that carry ``p_a`` stand behind its figures).
R is the cell's own repetition count unless the report asks for another (``inp.extra["expected_reps"]``,
``verdictlab report RUN --expected-reps R``); the temperature is the cell's own (greedy at 0).

Unreadable replies.  P(A) says how the judge splits its verdict between the labels, not how often its
reply can be read at all: a free-decoding judge also writes replies that start elsewhere ("The answer
...") and are not parsed.  The expected figures model that probability from **the cell's observed
parse-failure rate** (the share of its judgments with no verdict; 0 for constrained decoding, which
always yields a label): each draw is unreadable with that probability, independently, at a temperature
above 0; at temperature 0 a reply is deterministic, so a unit's own observed share is used instead.
Unreadable draws then count as the report's unparsed policy says (left out, or a value of their own),
exactly as in the sampled figures.  A cell with no readable reply at all cannot be modelled: its figures
are left empty and ``expected_unreadable_from`` says so.
"""

from __future__ import annotations

import pandas as pd

from ..stats.expected import EXPECTED_COLUMNS, expected_by_cell
from . import AnalysisInput, CellColumn, register_cell_columns

#: what the report cells get: the expected figures and where their unreadable share comes from
COLUMNS: tuple[str, ...] = (*EXPECTED_COLUMNS, "expected_unreadable_from")

FROM_CELL = "observed parse-failure rate of the cell"
FROM_UNIT = "observed parse-failure share of each unit (temperature 0: replies are deterministic)"
NOT_MODELLED = "not modelled: the cell has no readable reply"
_FROM = {"cell": FROM_CELL, "unit": FROM_UNIT, "none": "none: every draw a label"}

_LABELS = {"C_expected": ("C expected", "C expected from the verdict probabilities"),
           "phi_expected": ("φ expected", "φ expected from the verdict probabilities"),
           "A_expected": ("A expected", "A expected from the verdict probabilities"),
           "T_expected": ("T expected", "T expected from the verdict probabilities"),
           "unreadable_expected": ("unreadable (expected model)", "the share of unreadable replies the model draws")}
#: the columns the report's tables show, with their labels (every column of COLUMNS reaches the JSON)
SHOWN: tuple[str | CellColumn, ...] = tuple(
    CellColumn(c, _LABELS[c][0], title=_LABELS[c][1]) if c in _LABELS else c for c in COLUMNS)


@register_cell_columns("expected", columns=SHOWN)
def expected(inp: AnalysisInput) -> pd.DataFrame | None:
    out = expected_by_cell(inp.pairs, repetitions=inp.extra.get("expected_reps"), policy=inp.policy,
                           n_runs=inp.policy.n_bootstrap)
    if out.empty:
        return None
    source = out["unreadable_from"].map(_FROM).where(out["modelled"].astype(bool), NOT_MODELLED)
    return out.drop(columns=["unreadable_from", "modelled"]).assign(expected_unreadable_from=source)
