"""Figures of two-judge debates: round-1 against final accuracy.

A debate is judged in rounds (one judgment row per debater and round, ``step = "round-N"``) and ends
in a final verdict (a row with ``step = ""``).  :func:`debate_figures` takes one debate cell's final
rows and the round rows of the same debates: accuracy of each debater in round 1 and their mean,
final accuracy (a final ``tie`` scores 1/2), the change, and the counts behind them.  Unparsed verdicts
follow the cell figures' policy: unparsed ``exclude`` leaves unparsed round-1 verdicts and finals without a
verdict out of the accuracies (they are counted); ``"wrong"`` counts them as wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.vocab import DECISIVE, ParseStatus, Verdict

__all__ = ["DebateFigures", "debate_figures"]

#: the fallback rule of a final verdict that rests on a debater's fallback verdict
DEPENDS_ON_FALLBACK = "depends-on-fallback"


@dataclass(frozen=True)
class DebateFigures:
    """One debate cell: ``n_debates`` finals, ``n_labelled`` of them with an A/B label; round-1 accuracy
    (mean over debaters, and per debater), final accuracy and ``final_minus_round1`` (NaN when
    undefined); finals without a verdict or ending in ``tie``; mean rounds used and the share of
    debates ending in agreement (from the finals' ``rounds`` / ``agreed``); round rows, their
    fallbacks and failures; finals resting on a fallback."""

    n_debates: int
    n_labelled: int
    round1_accuracy: float
    final_accuracy: float
    final_minus_round1: float
    n_final_no_verdict: int
    n_final_tie: int
    mean_rounds: float
    agreement_rate: float
    n_round_rows: int
    n_round_fallbacks: int
    n_round_failed: int
    n_final_depending_on_fallback: int
    round1_accuracy_by_judge: dict[str, float] = field(default_factory=dict)


def _round1_accuracy(rounds: pd.DataFrame, policy: FigurePolicy) -> dict[str, float]:
    r1 = rounds[(rounds["step"] == "round-1") & rounds["label"].isin(DECISIVE)]
    if policy.drops_unparsed:
        r1 = r1[r1["verdict"].notna()]
    right = (r1["verdict"] == r1["label"]).astype(float)
    return {str(k): float(v) for k, v in right.groupby(r1["judge"]).mean().items()}


def debate_figures(finals: pd.DataFrame, rounds: pd.DataFrame, *, policy: FigurePolicy = DEFAULT_POLICY) -> DebateFigures:
    """:class:`DebateFigures` of one debate cell.  ``finals``: the final rows (``verdict``, ``label``,
    ``fallback_rule``, and ``rounds`` / ``agreed`` read from the stored scores, NaN where absent);
    ``rounds``: the round rows of the same debates (``judge``, ``step``, ``verdict``, ``label``,
    ``parse_status``)."""
    by_judge = _round1_accuracy(rounds, policy)
    r1 = float(np.mean(list(by_judge.values()))) if by_judge else float("nan")
    lab = finals["label"].isin(DECISIVE).to_numpy()
    fv = finals["verdict"].to_numpy(dtype=object)[lab]
    score = np.where(fv == finals["label"].to_numpy(dtype=object)[lab], 1.0, np.where(fv == Verdict.TIE, 0.5, 0.0))
    has = pd.notna(fv) if policy.drops_unparsed else np.ones(len(fv), dtype=bool)
    final = float(score[has].mean()) if has.any() else float("nan")
    rounds_used = pd.to_numeric(finals["rounds"], errors="coerce")
    return DebateFigures(
        n_debates=len(finals), n_labelled=int(lab.sum()), round1_accuracy=r1, final_accuracy=final,
        final_minus_round1=final - r1, n_final_no_verdict=int(pd.isna(fv).sum()),
        n_final_tie=int((finals["verdict"] == Verdict.TIE).sum()),
        mean_rounds=float(np.mean(rounds_used.to_numpy(dtype=float))) if len(finals) else float("nan"),
        agreement_rate=float(finals["agreed"].fillna(False).astype(bool).mean()) if len(finals) else float("nan"),
        n_round_rows=len(rounds), n_round_fallbacks=int((rounds["parse_status"] == ParseStatus.FALLBACK).sum()),
        n_round_failed=int((rounds["parse_status"] == ParseStatus.FAILED).sum()),
        n_final_depending_on_fallback=int((finals["fallback_rule"] == DEPENDS_ON_FALLBACK).sum()),
        round1_accuracy_by_judge=by_judge)
