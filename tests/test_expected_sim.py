"""Expected figures from the simulated judge's exact verdict probabilities (issue 13 item 1)."""

from __future__ import annotations

import json
import random
from math import comb

import pytest

from verdictlab.config import config_from_dict
from verdictlab.engine import run_config
from verdictlab.judges.sim import SimJudge
from verdictlab.stats.expected import expected_reliability
from verdictlab.store import RunStore

SPEC = "skill=0.7,position_lock=0.3,noise=0.4,seed=3,probs=1"


def _binom_mode(p: float, reps: int) -> tuple[float, float]:
    """P(strict majority for the side with probability p), P(split) for R draws (R even: k = R/2)."""
    win = sum(comb(reps, k) * p**k * (1 - p) ** (reps - k) for k in range(reps // 2 + 1, reps + 1))
    split = comb(reps, reps // 2) * (p * (1 - p)) ** (reps // 2) if reps % 2 == 0 else 0.0
    return win, split


def test_sim_expected_figures_equal_the_closed_form(tmp_path):
    rng = random.Random(1)
    rows = [{"item_id": f"i{i}", "question": f"q{i}", "response_a": "x", "response_b": "y",
             "label": rng.choice("AB")} for i in range(60)]
    (tmp_path / "p.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = config_from_dict({"name": "e", "datasets": [{"name": "jsonl", "path": str(tmp_path / "p.jsonl")}],
                            "judges": [f"sim:{SPEC}"], "protocols": ["direct"], "temperatures": [1.0],
                            "repetitions": 1})
    run_config(cfg, tmp_path / "run", progress=False)
    with RunStore(tmp_path / "run") as st:
        frame = st.judgments()
    assert frame["p_a"].notna().all()
    reps = 10
    out = expected_reliability(frame, repetitions=reps, n_bootstrap=0).iloc[0]
    # closed form from the sim's own model: every call picks its preferred side with p = 1 - N/2 = 0.8
    p = 1 - 0.4 / 2
    assert out["C_expected"] == pytest.approx(p**reps + (1 - p) ** reps)        # .8^10 + .2^10
    win, split = _binom_mode(p, reps)
    lose = 1 - win - split
    judge = SimJudge("sim", SPEC)
    inv, correct, n_lab = 0.0, 0.0, 0
    for r in rows:
        locked, pref = judge.pair_preference("p", r["item_id"], r["label"])
        if locked:   # AB prefers A (shown first), BA prefers B: modes agree only if one loses
            inv += win * lose + lose * win
            correct += (win + lose) / 2          # one order's preferred side is the label
        else:
            inv += win * win + lose * lose
            correct += win if pref == r["label"] else lose
        n_lab += 1
    assert out["phi_expected"] == pytest.approx(1 - inv / len(rows))
    assert out["A_expected"] == pytest.approx(correct / n_lab)
