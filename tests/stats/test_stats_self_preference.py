"""Self-preference figures against hand-worked values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.stats.self_preference import (
    family_side,
    newcombe_difference,
    self_preference,
    two_proportion_test,
)


def test_self_preference_hand_worked():
    # 10 own-vs-other units, own side A.  Gold own (label A) on 4 units: the judge picks A on 3.
    # Gold other (label B) on 6 units: the judge picks A (own, wrongly) on 3.
    # own_rate = 6/10; gold_own_rate = 4/10; excess = 0.2;
    # McNemar picked-own vs gold-own: 3 units picked own where gold is other, 1 the reverse ->
    #   p = 2 * Binom(4, .5).cdf(1) = 2 * 5/16 = 0.625.
    # P(own | own wrong) = 3/6 = .5; P(other | other wrong) = 1/4 = .25; harm = .25.
    # Pooled z: p = 4/10, se = sqrt(.4 * .6 * (1/6 + 1/4)) = sqrt(.1) = .316228, z = .790569,
    #   p = 2 * (1 - Phi(.790569)) = 0.4292.
    units = pd.DataFrame({"own_side": ["A"] * 10,
                          "label": ["A"] * 4 + ["B"] * 6,
                          "mode": ["A", "A", "A", "B"] + ["A", "A", "A", "B", "B", "B"]})
    r = self_preference(units)
    assert (r.n_units, r.n_labelled) == (10, 10)
    assert r.own_rate == pytest.approx(0.6) and r.gold_own_rate == pytest.approx(0.4)
    assert r.excess == pytest.approx(0.2) and r.excess_p == pytest.approx(0.625)
    assert r.p_own_when_own_wrong == pytest.approx(0.5) and r.n_own_wrong == 6
    assert r.p_other_when_other_wrong == pytest.approx(0.25) and r.n_other_wrong == 4
    assert r.harm == pytest.approx(0.25)
    assert r.harm_z == pytest.approx(0.790569, abs=1e-5) and r.harm_p == pytest.approx(0.4292, abs=1e-4)
    assert r.harm_lo < 0.25 < r.harm_hi


def test_ties_and_non_own_units_are_left_out():
    units = pd.DataFrame({"own_side": ["A", None, "B"], "label": ["A", "A", None], "mode": ["tie", "A", "B"]})
    r = self_preference(units)
    assert r.n_units == 1 and r.own_rate == 1.0 and r.n_labelled == 0 and np.isnan(r.gold_own_rate)


def test_two_proportion_and_newcombe_edge_cases():
    assert np.isnan(two_proportion_test(0, 0, 1, 2)[1])
    assert np.isnan(two_proportion_test(0, 5, 0, 5)[0])   # pooled rate 0: undefined
    # Newcombe (method 10) for 5/10 vs 5/10: d = 0, symmetric interval (l, u Wilson of .5 at n=10:
    # .2366, .7634 -> half-width sqrt(2) * .2634 = .3725).
    d, lo, hi = newcombe_difference(5, 10, 5, 10)
    assert d == 0 and lo == pytest.approx(-0.3725, abs=1e-3) and hi == pytest.approx(0.3725, abs=1e-3)


def test_family_side_by_name_and_by_mapping():
    s = family_side(["Llama-3-8B", "gpt-4o", "llama-2", None], ["gpt-4o", "Llama-3-70B", "llama-3", "x"], "llama")
    assert s.tolist() == ["A", "B", None, None]
    s2 = family_side(["m1", "m2"], ["m2", "m1"], "acme", system_family={"m1": "acme", "m2": "other"})
    assert s2.tolist() == ["A", "B"]
