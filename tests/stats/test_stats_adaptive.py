"""The adaptive design's statistics: stopping rules, planning and the adaptive cell figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import reliability
from verdictlab.stats.adaptive import (
    adaptive_reliability,
    c_pair_draw,
    calls_to_decide,
    mode_decided,
    plan_adaptive,
    unit_done,
)


def test_mode_decided_hand_worked():
    # R = 10: six A's and 4 calls left: 6 > 0 + 4 -> decided
    assert mode_decided(["A"] * 6, 10)
    # five A's: 5 > 0 + 5? no
    assert not mode_decided(["A"] * 5, 10)
    # A A A A B: 4 > 1 + 5? no
    assert not mode_decided(list("AAAAB"), 10)
    # R = 3: A A decided (2 > 0 + 1); A B not (1 > 1 + 1? no)
    assert mode_decided(["A", "A"], 3)
    assert not mode_decided(["A", "B"], 3)
    # unparsed values: under 'exclude' the parsed mode of [None, None, A] with 2 left is undecided
    # (A 1 > 0 + 2? no), so the rule waits even though 'wrong' would also be undecided
    assert not mode_decided([None, None, "A"], 5)
    # all calls in: decided whatever the counts (split included)
    assert mode_decided(["A", "B"], 2)


def test_unit_done_consistency_needs_disagreement_or_all():
    # mode decided after A A (R = 3) but N is not: a C unit goes on, a mode-only unit stops
    assert unit_done(["A", "A"], 3, consistency=False)
    assert not unit_done(["A", "A"], 3, consistency=True)
    assert unit_done(["A", "A", "A"], 3, consistency=True)
    # R = 5: A B A A -> A has 3 > 1 + 1 = decided, and two parsed values seen -> N = 0 decided
    assert unit_done(list("ABAA"), 5, consistency=True)
    # an unparsed verdict is not a parsed disagreement: N under 'exclude' still open
    assert not unit_done(["A", None, "A", "A"], 5, consistency=True)
    assert calls_to_decide(list("AAAAAAAAAA"), 10, consistency=False) == 6
    assert calls_to_decide(list("AAAAAAAAAA"), 10, consistency=True) == 10
    assert calls_to_decide(list("ABBBBBBAAA"), 10, consistency=True) == 7   # B reaches 6 at call 7


def _sim_frame(n_pairs: int, reps: int, seed: int, *, p_first: float = 0.7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_pairs):
        label = "A" if rng.random() < 0.5 else "B"
        for order in ("AB", "BA"):
            p_a = p_first if order == "AB" else 1 - p_first
            p_a = 0.9 if (label == "A" and rng.random() < 0.5) else p_a
            for r in range(reps):
                rows.append({"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 1.0,
                             "item_id": f"i{i}", "order": order, "rep": r, "label": label,
                             "verdict": "A" if rng.random() < p_a else "B"})
    return pd.DataFrame(rows)


def test_adaptive_equals_fixed_when_every_pair_is_a_c_pair():
    df = _sim_frame(40, 5, 1)
    pairs = {("d", f"i{i}") for i in range(40)}
    ad = adaptive_reliability(df, c_pairs=pairs, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    fx = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    for k in ("C", "phi", "A", "T"):
        assert ad[k] == pytest.approx(fx[k])


def test_truncated_units_keep_modes_and_c_comes_from_c_pairs():
    reps = 7
    df = _sim_frame(60, reps, 2)
    c_pairs = {("d", f"i{i}") for i in range(0, 60, 3)}
    kept = []
    for (item, _order), g in df.groupby(["item_id", "order"], sort=False):
        g = g.sort_values("rep")
        seq = list(g["verdict"])
        k = calls_to_decide(seq, reps, consistency=("d", item) in c_pairs)
        kept.append(g.iloc[:k])
    trunc = pd.concat(kept)
    assert len(trunc) < len(df)
    ad = adaptive_reliability(trunc, c_pairs=c_pairs, policy=FigurePolicy(n_bootstrap=200, seed=3)).iloc[0]
    full = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    # modes are decided, so phi and A equal the full-R figures exactly
    assert ad["phi"] == pytest.approx(full["phi"])
    assert ad["A"] == pytest.approx(full["A"])
    # C equals the full-R C of the C pairs alone
    sub = df[df["item_id"].isin({i for _, i in c_pairs})]
    assert ad["C"] == pytest.approx(reliability(sub, policy=FigurePolicy(n_bootstrap=0)).iloc[0]["C"])
    assert ad["T"] == pytest.approx(ad["C"] * (ad["A"] - 0.5 * ad["phi"]))
    assert ad["T_lo"] <= ad["T"] <= ad["T_hi"]
    assert ad["n_c_pairs"] == 20


def test_plan_adaptive_tighter_target_needs_more_pairs_and_validates():
    pilot = _sim_frame(100, 10, 4, p_first=0.97)
    loose = plan_adaptive(pilot, targets={"T": 0.08}, reps=10, pool_pairs=5000)
    tight = plan_adaptive(pilot, targets={"T": 0.03}, reps=10, pool_pairs=5000)
    assert tight.n_pairs > loose.n_pairs >= 100
    assert tight.reachable and 0 < tight.c_fraction <= 1
    # never more calls than the fixed design at the same precision, which uses every call
    assert tight.expected_calls <= tight.fixed_calls * 1.0001
    unreachable = plan_adaptive(pilot, targets={"T": 0.001}, reps=10, pool_pairs=200)
    assert not unreachable.reachable and unreachable.n_pairs == 200 and unreachable.c_fraction == 1.0
    with pytest.raises(ValueError, match="precision targets"):
        plan_adaptive(pilot, targets={"kappa": 0.1}, reps=10, pool_pairs=500)
    with pytest.raises(ValueError, match="at least 10"):
        plan_adaptive(pilot[pilot["item_id"].isin(["i1", "i2"])], targets={"T": 0.1}, reps=10, pool_pairs=500)


def test_c_pair_draw_is_fixed_and_uniform():
    draws = np.array([c_pair_draw(7, "d", f"i{i}") for i in range(2000)])
    assert draws.min() >= 0 and draws.max() < 1
    assert abs(draws.mean() - 0.5) < 0.03
    assert c_pair_draw(7, "d", "i1") == c_pair_draw(7, "d", "i1") != c_pair_draw(8, "d", "i1")
