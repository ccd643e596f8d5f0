"""Debate analyses: round-1 against final accuracy of two-judge debates (:mod:`verdictlab.debate`
runs them; each round is a judgment row with ``step = "round-N"``, the final verdict a row with
``step = ""`` and protocol ``debate``)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ..vocab import DEFAULT_UNPARSED, ParseStatus, UnparsedPolicy, check_unparsed
from . import DEBATE_PROTOCOL, AnalysisInput, register

PROTOCOL_ID = DEBATE_PROTOCOL


def debate_summary(judgments: pd.DataFrame, *, unparsed: str = DEFAULT_UNPARSED) -> pd.DataFrame:
    """Per debate (pair of judges, temperature): round-1 accuracy (each debater and their mean), final
    accuracy (a final ``tie`` scores 1/2), rounds used, share of debates ending in agreement, fallback
    rows, and finals depending on a fallback.

    Unparsed verdicts follow the cell figures' policy: ``"exclude"`` (default) leaves unparsed round-1
    verdicts and finals without a verdict out of the accuracies (finals without a verdict are counted,
    ``n_final_no_verdict``); ``"wrong"`` counts them as wrong."""
    check_unparsed(unparsed)
    d = judgments[judgments["protocol"] == PROTOCOL_ID].copy()
    d["step"] = d["step"].fillna("")
    finals = d[d["step"] == ""]
    out = []
    for (fj, temp), f in finals.groupby(["judge", "temperature"]):
        lab = f["label"].isin(["A", "B"])
        keys = set(zip(f["dataset"], f["item_id"], f["order"], f["rep"], strict=True))
        rounds = d[(d["step"] != "") & (d["temperature"] == temp)]
        rounds = rounds[[k in keys for k in zip(rounds["dataset"], rounds["item_id"], rounds["order"], rounds["rep"],
                                                 strict=True)]]
        r1 = rounds[(rounds["step"] == "round-1") & rounds["label"].isin(["A", "B"])]
        if unparsed == UnparsedPolicy.EXCLUDE:
            r1 = r1[r1["verdict"].notna()]
        r1_acc = r1.groupby("judge").apply(lambda g: float((g["verdict"] == g["label"]).mean()), include_groups=False)
        fl = f[lab]
        fv = fl["verdict"]
        score = np.where(fv == fl["label"], 1.0, np.where(fv == "tie", 0.5, 0.0))
        has = fv.notna().to_numpy() if unparsed == UnparsedPolicy.EXCLUDE else np.ones(len(fv), dtype=bool)
        sc = [json.loads(x) if isinstance(x, str) else {} for x in f["scores"]]
        out.append({
            "debate": fj, "temperature": temp, "n_debates": len(f), "n_labelled": int(lab.sum()),
            "round1_accuracy": float(r1_acc.mean()) if len(r1_acc) else np.nan,
            "round1_accuracy_by_judge": {k: round(v, 4) for k, v in r1_acc.items()},
            "final_accuracy": float(score[has].mean()) if has.any() else np.nan,
            "final_minus_round1": (float(score[has].mean()) - float(r1_acc.mean())) if has.any() and len(r1_acc) else np.nan,
            "n_final_no_verdict": int(fv.isna().sum()),
            "n_final_tie": int((f["verdict"] == "tie").sum()),
            "mean_rounds": float(np.mean([s.get("rounds", np.nan) for s in sc])) if sc else np.nan,
            "agreement_rate": float(np.mean([bool(s.get("agreed")) for s in sc])) if sc else np.nan,
            "n_round_rows": len(rounds), "n_round_fallbacks": int((rounds["parse_status"] == ParseStatus.FALLBACK).sum()),
            "n_round_failed": int((rounds["parse_status"] == ParseStatus.FAILED).sum()),
            "n_final_depending_on_fallback": int((f["fallback_rule"] == "depends-on-fallback").sum()),
        })
    return pd.DataFrame(out)


@register("debate", order=60, title="Debate",
          description="Rounds of debate and how the verdict changes across them (round-1 vs final accuracy; "
                      "unparsed verdicts under the report's policy).")
def debate_analysis(inp: AnalysisInput) -> pd.DataFrame | None:
    """:func:`debate_summary` over the run's debate rows."""
    if inp.debate.empty:
        return None
    return debate_summary(inp.debate, unparsed=inp.unparsed)
