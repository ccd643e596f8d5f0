"""Drift between two runs and control charts over a series, against hand-worked values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats.drift import (
    cusum_chart,
    drift_pair,
    drift_series,
    equivalence_decision,
    ewma_chart,
    ranking_change,
)


def _frame(verdicts: dict[str, str], labels: dict[str, str], *, protocol: str = "direct",
           judge: str = "j") -> pd.DataFrame:
    """One verdict per (item, order), the same verdict in both orders."""
    rows = [{"judge": judge, "protocol": protocol, "dataset": "d", "temperature": 0.0, "item_id": i,
             "order": o, "rep": 0, "step": "", "verdict": v, "label": labels[i]}
            for i, v in verdicts.items() for o in ("AB", "BA")]
    return pd.DataFrame(rows)


LABELS = {"1": "A", "2": "B", "3": "A", "4": "B"}


def test_drift_pair_hand_worked():
    # side a always right; side b wrong on item 1 in both orders.
    # units (item, order): 8.  Modes a: A A B B A A B B, b: B B B B A A B B.
    # flip rate = 2/8 = 0.25.  Kappa: p_o = 6/8 = .75; marginals a (A .5, B .5), b (A .25, B .75)
    # -> p_e = .5*.25 + .5*.75 = .5 -> kappa = (.75 - .5)/(1 - .5) = 0.5.
    # McNemar: only a right on 2 units, only b on 0 -> p = 2 * Binom(2, .5).cdf(0) = 0.5.
    # A_a = 1, A_b = 6/8 -> delta_A = -0.25; C = 1 and phi = 0 on both sides -> delta_T = -0.25.
    a = _frame(dict(LABELS), LABELS)
    b = _frame({**LABELS, "1": "B"}, LABELS)
    out = drift_pair(a, b, policy=FigurePolicy(n_bootstrap=200), margin=0.02)
    r = out.iloc[0]
    assert (r.n_units, r.n_items, r.n_labelled_units) == (8, 4, 8)
    assert r.flip_rate == pytest.approx(0.25) and r.kappa == pytest.approx(0.5)
    assert (r.only_a, r.only_b) == (2, 0) and r.mcnemar_p == pytest.approx(0.5)
    assert r.mcnemar_p_holm == pytest.approx(0.5)   # a family of one
    assert r.delta_A == pytest.approx(-0.25) and r.delta_T == pytest.approx(-0.25)
    assert r.delta_A_lo <= -0.25 <= r.delta_A_hi
    # 4 items: the 90% interval reaches 0 (no item-1 draw) -> neither inside nor outside +-2 pp
    assert r.equivalent == "inconclusive"


def test_identical_runs_are_equivalent_and_holm_spans_cells():
    a = pd.concat([_frame(dict(LABELS), LABELS), _frame({**LABELS, "2": "A"}, LABELS, protocol="vf-json")])
    out = drift_pair(a, a.copy(), policy=FigurePolicy(n_bootstrap=100))
    assert list(out["protocol"]) == ["direct", "vf-json"]
    assert (out["flip_rate"] == 0).all() and (out["delta_A"] == 0).all()
    assert (out["equivalent"] == "yes").all()
    assert (out["mcnemar_p"] == 1.0).all() and (out["mcnemar_p_holm"] == 1.0).all()


def test_equivalence_decision_three_ways():
    assert equivalence_decision(-0.01, 0.015, 0.02) == "yes"
    assert equivalence_decision(-0.09, -0.03, 0.02) == "no"
    assert equivalence_decision(-0.03, 0.01, 0.02) == "inconclusive"
    assert equivalence_decision(float("nan"), 0.0, 0.02) == "inconclusive"
    with pytest.raises(ValueError):
        equivalence_decision(0, 0, 0)


def test_ranking_change_reports_top_swap():
    d = pd.DataFrame({"protocol": ["p1", "p2", "p3"], "dataset": "d", "temperature": 0.0,
                      "A_a": [0.9, 0.8, 0.7], "A_b": [0.7, 0.8, 0.9]})
    r = ranking_change(d).iloc[0]
    assert r.ranking_a == ["p1", "p2", "p3"] and r.ranking_b == ["p3", "p2", "p1"]
    assert r.tau == pytest.approx(-1.0) and r.top_changed


def test_cusum_flags_the_shift_hand_worked():
    # baseline p0 = 0.8 (run 0, n = 100): sd = sqrt(.16/100) = 0.04.  Runs at 0.7: z = -2.5.
    # S-: runs 1, 2: 0; run 3: 2.5 - .5 = 2.0; run 4: 4.0 (not > 4); run 5: 6.0 -> flagged at 5;
    # last zero of S- before run 5 is run 2 -> onset 3.
    ch = cusum_chart([80, 80, 80, 70, 70, 70], [100] * 6)
    assert ch.z[3] == pytest.approx(-2.5)
    assert ch.lower.tolist() == pytest.approx([0, 0, 0, 2.0, 4.0, 6.0])
    assert (ch.first_flagged, ch.onset) == (5, 3)
    assert cusum_chart([80] * 6, [100] * 6).first_flagged is None


def test_ewma_flags_the_shift_hand_worked():
    # lam = .5: Z = 0, 0, -1.25, -1.875 at runs 1..4 (z = -2.5 from run 3).
    # limit at run t (j = t): 3 sqrt(.5/1.5 (1 - .5^(2j))): j=3 -> 1.7185, j=4 -> 1.7287.
    # |Z_3| = 1.25 < 1.7185; |Z_4| = 1.875 > 1.7287 -> first flagged run 4.
    ch = ewma_chart([80, 80, 80, 70, 70, 70], [100] * 6, lam=0.5, L=3.0)
    assert ch.upper[3] == pytest.approx(-1.25) and ch.upper[4] == pytest.approx(-1.875)
    assert ch.lower[3] == pytest.approx(1.7185, abs=1e-4)
    assert ch.first_flagged == 4


def test_drift_series_from_frames():
    rng = np.random.default_rng(0)
    labels = {str(i): "AB"[i % 2] for i in range(200)}
    frames = []
    for acc in (0.85, 0.85, 0.85, 0.7, 0.7, 0.7):
        v = {i: (lab if rng.random() < acc else ("B" if lab == "A" else "A")) for i, lab in labels.items()}
        frames.append(_frame(v, labels))
    # n per run = 200 labelled items (the two orders of an item count once); baseline = 2 runs
    ch = drift_series(frames, baseline=2)
    assert ch.n.tolist() == [200] * 6
    assert ch.first_flagged is not None and ch.first_flagged >= 3 and ch.onset == 3
    with pytest.raises(ValueError, match="method"):
        drift_series(frames, method="shewhart")
