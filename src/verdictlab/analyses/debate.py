"""The debate table: round-1 against final accuracy of two-judge debates (the engine's debate runs
them; each round is a judgment row with ``step = "round-N"``, the final verdict a row with
``step = ""`` and protocol ``debate``).  Figures: :func:`verdictlab.stats.debate.debate_figures`."""

from __future__ import annotations

import json
from dataclasses import asdict

import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import CELL_KEY
from ..stats import with_cell_columns
from ..stats.debate import debate_figures
from . import DEBATE_PROTOCOL, AnalysisInput, register

PROTOCOL_ID = DEBATE_PROTOCOL
_DEBATE = ["dataset", "item_id", "order", "rep"]


def _scores(finals: pd.DataFrame) -> pd.DataFrame:
    """The finals with ``rounds`` and ``agreed`` read from their stored scores (NaN where absent)."""
    sc = [json.loads(x) if isinstance(x, str) else {} for x in finals["scores"]]
    return finals.assign(rounds=[s.get("rounds", float("nan")) for s in sc], agreed=[bool(s.get("agreed")) for s in sc])


def debate_summary(judgments: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY) -> pd.DataFrame:
    """One row per debate cell (``debate`` = its judge, the debate's id; protocol ``debate``, dataset,
    temperature, decoding): the :class:`~verdictlab.stats.debate.DebateFigures` of its finals and of the round rows
    of the same debates (same dataset, item, order, repetition and temperature)."""
    d = with_cell_columns(judgments[judgments["protocol"] == PROTOCOL_ID]).assign(
        step=lambda f: f["step"].fillna(""))
    finals, rounds = d[d["step"] == ""], d[d["step"] != ""]
    out = []
    for key, f in finals.groupby(list(CELL_KEY), sort=True):
        cell = dict(zip(CELL_KEY, key, strict=True))
        mine = set(zip(*(f[c] for c in _DEBATE), strict=True))
        r = rounds[(rounds["temperature"] == cell["temperature"]) & (rounds["decoding"] == cell["decoding"])]
        r = r[[k in mine for k in zip(*(r[c] for c in _DEBATE), strict=True)]]
        fig = asdict(debate_figures(_scores(f), r, policy=policy))
        fig["round1_accuracy_by_judge"] = {k: round(v, 4) for k, v in fig["round1_accuracy_by_judge"].items()}
        out.append({"debate": cell["judge"], **cell, **fig})
    return pd.DataFrame(out)


@register("debate", order=60, title="Debate",
          description="Rounds of debate and how the verdict changes across them (round-1 vs final accuracy; "
                      "unparsed verdicts under the report's policy).")
def debate_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`debate_summary` over the run's debate rows."""
    if inp.debate.empty:
        return None
    return debate_summary(inp.debate, policy=inp.policy)
