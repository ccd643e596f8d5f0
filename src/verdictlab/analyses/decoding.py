"""Free vs constrained decoding: what forcing the output format does to a judge.

For every (judge, protocol, dataset, temperature) judged in both decoding modes, the pairs judged in
both are compared: C, phi, A, T and the parse-failure rate of each mode, the differences
constrained - free with paired bootstrap intervals (the same pair resample for both modes), the
constrained mechanism the backend recorded (the report adds a one-line reading,
:func:`verdictlab.report.readings.decoding_reading`).  Figures:
:func:`verdictlab.stats.decoding.decoding_effect`.  The rows compare two cells (``spans=("decoding",)``).
"""

from __future__ import annotations

import pandas as pd

from ..stats.decoding import decoding_effect
from . import AnalysisInput, register


@register("decoding", title="Free vs constrained decoding",
          description="Each row pairs a judge x protocol's free and constrained cells on the same pairs: "
                      "dC, dphi, dA, dT = constrained - free with paired 95% bootstrap intervals, the "
                      "parse-failure rate of each mode, the mechanism that forced the format, and a reading. "
                      "A constraint that removes unparsed outputs but leaves phi high only hides a guess.",
          order=20, spans=("decoding",))
def decoding(inp: AnalysisInput) -> pd.DataFrame | None:
    frame = inp.pairs
    if frame.empty or "decoding" not in frame.columns or frame["decoding"].nunique() < 2:
        return None
    out = decoding_effect(frame, policy=inp.policy)
    return out if not out.empty else None
