"""The sim judge's planted biases (issue 14 knobs): anchoring, self-preference, verbosity."""

from __future__ import annotations

import numpy as np
import pytest

from verdictlab.judges.sim import SimJudge


def _view(order: str, chars=(10, 10), models=(None, None), meta=None) -> dict:
    return {"shown_chars": list(chars), "shown_models": list(models), "item_meta": meta or {}}


def test_sim_planted_biases_follow_their_documented_rates():
    n = 4000
    # anchoring G = .4, skill .8: P(picks anchor) = G + (1 - G) * P(base picks anchor)
    j = SimJudge("sim", "skill=0.8,anchoring=0.4")
    picks = [j.decide({"order": "AB", "dataset": "d", "item_id": str(i), "label_shown": "A",
                       "item_view": _view("AB", meta={"anchor_side": "B"})})[0] for i in range(n)]
    # label A, anchor B: base picks B w.p. (1 - .8)/2 = .1 -> P(B) = .4 + .6 * .1 = .46
    assert np.mean(np.array(picks) == "B") == pytest.approx(0.46, abs=0.03)
    # self-preference P = .5, family "own": own response shown second (B), label A (own wrong)
    j = SimJudge("sim", "skill=0.8,self_pref=0.5,family=own")
    picks = [j.decide({"order": "AB", "dataset": "d", "item_id": str(i), "label_shown": "A",
                       "item_view": _view("AB", models=("other-1", "Own-2"))})[0] for i in range(n)]
    # P(own | own wrong) = P + (1 - P)(1 - S)/2 = .5 + .5 * .1 = .55
    assert np.mean(np.array(picks) == "B") == pytest.approx(0.55, abs=0.03)
    # verbosity V = .3, order BA: shown first is canonical B and is longer; label A
    j = SimJudge("sim", "skill=1.0,verbosity=0.3")
    picks = [j.decide({"order": "BA", "dataset": "d", "item_id": str(i), "label_shown": "B",
                       "item_view": _view("BA", chars=(50, 10))})[0] for i in range(n)]
    # shown verdict "A" = first shown = the longer = canonical B: P = .3 (skill 1 picks the label otherwise)
    assert np.mean(np.array(picks) == "A") == pytest.approx(0.3, abs=0.03)
    # no item view: the knobs are inert
    assert j.decide({"order": "AB", "dataset": "d", "item_id": "1", "label_shown": "A"})[0] == "A"


def test_sim_self_pref_needs_a_family():
    from verdictlab.judges.base import JudgeConfigError

    with pytest.raises(JudgeConfigError, match="family"):
        SimJudge("sim", "self_pref=0.3")
