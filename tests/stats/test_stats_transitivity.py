"""Transitivity, Bradley-Terry and Kendall tau against hand-worked values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.stats.transitivity import (
    bradley_terry,
    kendall_vs_reference,
    pair_outcomes,
    transitivity,
    triple_outcomes,
    weak_order_consistent,
)


def _rows(item: str, pairs: list[tuple[str, str, list[str]]]) -> list[dict]:
    """(sys_a, sys_b, verdicts) -> one row per verdict of one multi-response item."""
    return [{"group": item, "sys_a": a, "sys_b": b, "verdict": v} for a, b, vs in pairs for v in vs]


def test_weak_order_table_has_the_13_weak_orders_of_three_items():
    # Fubini number: 3! strict orders + 6 with one tie + 1 all tied = 13 of the 27 outcome triples.
    grid = np.array(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1])).reshape(3, -1)
    ok = weak_order_consistent(*grid)
    assert ok.sum() == 13
    assert not weak_order_consistent(1, 1, -1)      # x>y, y>z, z>x: the strict cycle
    assert not weak_order_consistent(0, 0, 1)       # x~y, y~z but x>z: a tie violation
    assert weak_order_consistent(1, 1, 1) and weak_order_consistent(0, 0, 0)


def test_position_following_pair_is_a_tie_and_modal_counts_are_pooled():
    # AB says A (x), BA says B (y): one verdict each way -> top count shared -> tie (outcome 0).
    # The second pair is stored with sys_a = z, sys_b = y; it is re-keyed as (y, z): verdicts B, B
    # are for z, so n_y (= z) = 2 and the outcome is -1 (the second-named system, z, wins).
    df = pd.DataFrame(_rows("q", [("x", "y", ["A", "B"]), ("z", "y", ["A", "A", None])]))
    out = pair_outcomes(df)
    xy = out[(out.sys_x == "x") & (out.sys_y == "y")].iloc[0]
    assert (xy.n_x, xy.n_y, xy.n_tie, xy.outcome) == (1, 1, 0, 0.0)
    yz = out[(out.sys_x == "y") & (out.sys_y == "z")].iloc[0]
    assert (yz.n_x, yz.n_y, yz.outcome) == (0, 2, -1.0)


def _cycle_item() -> pd.DataFrame:
    # item q1: x>y, y>z, z>x (a strict cycle) and w loses to all three.
    # Triples: {x,y,z} cycle; {w,x,y}, {w,x,z}, {w,y,z} transitive -> 1 of 4 non-transitive.
    beats = [("x", "y"), ("y", "z"), ("z", "x"), ("x", "w"), ("y", "w"), ("z", "w")]
    return pd.DataFrame(_rows("q1", [(a, b, ["A", "A"]) for a, b in beats]))


def test_share_of_nontransitive_triples_with_wilson_interval():
    res = transitivity(pair_outcomes(_cycle_item()))
    assert (res.n_triples, res.n_nontransitive, res.n_strict_cycles) == (4, 1, 1)
    assert res.share == pytest.approx(0.25)
    # Wilson 95%, k=1, n=4: z^2 = 3.8415, denom = 1.96037, centre = (0.25 + 0.48018)/1.96037 = 0.37247,
    # half = 1.95996/1.96037 * sqrt(0.046875 + 0.060023) = 0.32689 -> (0.0456, 0.6994)
    assert res.low == pytest.approx(0.0456, abs=5e-4) and res.high == pytest.approx(0.6994, abs=5e-4)
    assert (res.n_items, res.n_items_cycle, res.n_items_strict_cycle) == (1, 1, 1)


def test_tie_rule_weak_order_vs_exclude():
    # item q2: x~y (position-following), y~z, x>z -> a tie violation: non-transitive under the
    # weak-order rule, left out under "exclude".
    df = pd.DataFrame(_rows("q2", [("x", "y", ["A", "B"]), ("y", "z", ["B", "A"]), ("x", "z", ["A", "A"])]))
    out = pair_outcomes(df)
    weak = transitivity(out)
    assert (weak.n_triples, weak.n_nontransitive, weak.n_strict_cycles, weak.n_items_cycle) == (1, 1, 0, 1)
    excl = transitivity(out, tie_rule="exclude")
    assert (excl.n_triples, excl.n_excluded) == (0, 1) and np.isnan(excl.share)
    with pytest.raises(ValueError, match="tie_rule"):
        triple_outcomes(out, tie_rule="coin")


def test_unjudged_pair_excludes_its_triples():
    df = pd.DataFrame(_rows("q3", [("x", "y", ["A"]), ("y", "z", [None]), ("x", "z", ["A"])]))
    res = transitivity(pair_outcomes(df))
    assert (res.n_triples, res.n_excluded) == (0, 1)


def test_bradley_terry_two_systems_matches_log_odds():
    # x beats y 3 times, y beats x once: BT MLE log(p_x/p_y) = log(3/1) = 1.0986 -> centred +-0.5493.
    df = pd.DataFrame(_rows("q1", [("x", "y", ["A", "A", "A", "B"])]) + _rows("q2", [("x", "y", [])]))
    out = bradley_terry(pair_outcomes(df), n_boot=50, alpha=0.0)
    assert list(out["system"]) == ["x", "y"]
    assert out["strength"].iloc[0] == pytest.approx(0.5493, abs=1e-3)
    assert out["strength"].iloc[1] == pytest.approx(-0.5493, abs=1e-3)
    assert (out["wins"].tolist(), out["losses"].tolist()) == ([3, 1], [1, 3])


def test_bradley_terry_recovers_order_and_bootstrap_brackets_estimate():
    rng = np.random.default_rng(1)
    true = {"s1": 1.0, "s2": 0.3, "s3": -0.2, "s4": -1.1}
    rows = []
    for q in range(60):
        for a, b in [("s1", "s2"), ("s1", "s3"), ("s1", "s4"), ("s2", "s3"), ("s2", "s4"), ("s3", "s4")]:
            p = 1 / (1 + np.exp(-(true[a] - true[b])))
            rows += _rows(f"q{q}", [(a, b, ["A" if rng.random() < p else "B" for _ in range(2)])])
    out = bradley_terry(pair_outcomes(pd.DataFrame(rows)), n_boot=100, seed=3)
    assert list(out["system"]) == ["s1", "s2", "s3", "s4"]
    assert ((out["lo"] <= out["strength"]) & (out["strength"] <= out["hi"])).all()
    assert out.attrs["n_items"] == 60


def test_kendall_tau_against_reference_ranking():
    # strengths order x > y > z; reference x > z > y: pairs (x,y) and (x,z) concordant, (y,z)
    # discordant -> tau = (2 - 1) / 3 = 1/3.
    r = kendall_vs_reference({"x": 2.0, "y": 1.0, "z": 0.0}, ["x", "z", "y"])
    assert r.value == pytest.approx(1 / 3) and r.n == 3
    assert kendall_vs_reference({"x": 2.0, "y": 1.0}, {"x": 5, "y": 1, "q": 0}).value == pytest.approx(1.0)
