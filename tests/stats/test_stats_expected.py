"""Sampling-free (expected) reliability figures from verdict probabilities."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import reliability
from verdictlab.stats.expected import expected_reliability, sampling_distribution, unit_expectation


def test_sampling_distribution_temperature():
    # tau = 1 keeps p; tau = 0.5 squares and renormalises: .64/.68 = .941176, .04/.68 = .058824
    p = np.array([[0.8, 0.2]])
    assert np.allclose(sampling_distribution(p, 1.0), p)
    assert np.allclose(sampling_distribution(p, 0.5), [[0.64 / 0.68, 0.04 / 0.68]])
    # tau = 2: sqrt(.8) = .894427, sqrt(.2) = .447214 -> .666667 / .333333
    assert np.allclose(sampling_distribution(p, 2.0), [[2 / 3, 1 / 3]])
    # greedy: argmax, an exact tie shared
    assert np.allclose(sampling_distribution(np.array([[0.3, 0.7], [0.5, 0.5]]), 0.0), [[0, 1], [0.5, 0.5]])
    with pytest.raises(ValueError):
        sampling_distribution(p, -1.0)


def test_unit_expectation_hand_worked():
    # s = (.8, .2), R = 3: E[N] = .512 + .008 = .52; P(mode A) = P(#A >= 2) = .512 + 3*.64*.2 = .896
    ue = unit_expectation(np.array([[0.8, 0.2]]), 3)
    assert ue.consistent[0] == pytest.approx(0.52)
    assert ue.mode_prob[0].tolist() == pytest.approx([0.896, 0.104])
    assert ue.split[0] == pytest.approx(0.0)
    # R = 2: split when one A and one B: 2*.8*.2 = .32; mode A = .64, mode B = .04
    ue2 = unit_expectation(np.array([[0.8, 0.2]]), 2)
    assert ue2.mode_prob[0].tolist() == pytest.approx([0.64, 0.04])
    assert ue2.split[0] == pytest.approx(0.32)
    # self-consistency R = 2: top count 2 with prob .68, 1 with .32 -> (2*.68 + .32)/2 = .84
    assert ue2.self_consistency[0] == pytest.approx(0.84)


def _frame(p_a: dict[tuple[str, str], float], labels: dict[str, str], reps: int, temperature: float = 1.0):
    rows = []
    for (item, order), pa in p_a.items():
        for r in range(reps):
            rows.append({"judge": "j", "protocol": "direct", "dataset": "d", "temperature": temperature,
                         "item_id": item, "order": order, "rep": r, "label": labels[item], "p_a": pa,
                         "verdict": None})
    return pd.DataFrame(rows)


def test_cell_figures_hand_worked():
    # one pair, label A, p_a(AB) = .8, p_a(BA) = .6, R = 1, tau = 1
    # C not measured (one draw always agrees with itself: NaN); P = .8*.6 + .2*.4 = .56 -> phi = .44
    # A = (.8 + .6)/2 = .7; T <= .7 - .44/2 = .48 (the upper bound); T_joint = (.8*.6 + .6*.8)/2 = .48
    df = _frame({("i1", "AB"): 0.8, ("i1", "BA"): 0.6}, {"i1": "A"}, reps=1)
    out = expected_reliability(df, repetitions=1, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert np.isnan(out["C_expected"])
    assert out["phi_expected"] == pytest.approx(0.44)
    assert out["A_expected"] == pytest.approx(0.7)
    assert out["T_expected"] == pytest.approx(0.48)
    assert out["T_joint_expected"] == pytest.approx(0.48)
    # R = 3: C = mean(.8^3+.2^3, .6^3+.4^3) = (.52 + .28)/2 = .40
    out3 = expected_reliability(df, repetitions=3, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert out3["C_expected"] == pytest.approx(0.40)


def _enumerate_expectation(p_units: list[float], labels: list[str], items: list[str], orders: list[str],
                           reps: int) -> dict[str, float]:
    """Brute force: every assignment of R verdicts to every unit, weighted by its probability, run
    through the sampled-figure function ``reliability`` (each assignment its own cell, so one call);
    returns E[C], E[phi], E[A]."""
    n_units = len(p_units)
    rows = []
    weights = {}
    for k, draws in enumerate(itertools.product("AB", repeat=n_units * reps)):
        weight = 1.0
        for u in range(n_units):
            for r in range(reps):
                v = draws[u * reps + r]
                weight *= p_units[u] if v == "A" else 1.0 - p_units[u]
                rows.append({"judge": "j", "protocol": "direct", "dataset": f"d{k:05d}", "temperature": 1.0,
                             "item_id": items[u], "order": orders[u], "rep": r, "label": labels[u],
                             "verdict": v})
        weights[f"d{k:05d}"] = weight
    cells = reliability(pd.DataFrame(rows), policy=FigurePolicy(n_bootstrap=0))
    w = cells["dataset"].map(weights).to_numpy()
    assert w.sum() == pytest.approx(1.0)
    return {k: float((w * cells[k].to_numpy(dtype=float)).sum()) for k in ("C", "phi", "A")}


@pytest.mark.parametrize("reps", [1, 2, 3])
def test_expected_equals_enumerated_sampled_figures(reps):
    # C, phi and A are means over units/pairs, so their expectation under sampling equals the
    # expected figures exactly (split modes included for even R).
    items = ["i1", "i1", "i2", "i2"]
    orders = ["AB", "BA", "AB", "BA"]
    labels = ["A", "A", "B", "B"]
    p_units = [0.9, 0.3, 0.55, 0.2]
    truth = _enumerate_expectation(p_units, labels, items, orders, reps)
    df = _frame({(i, o): p for i, o, p in zip(items, orders, p_units, strict=True)},
                {"i1": "A", "i2": "B"}, reps=1)
    out = expected_reliability(df, repetitions=reps, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert out["C_expected"] == pytest.approx(truth["C"], abs=1e-12, nan_ok=True)
    assert out["phi_expected"] == pytest.approx(truth["phi"], abs=1e-12)
    assert out["A_expected"] == pytest.approx(truth["A"], abs=1e-12)


def test_simulated_sampled_run_falls_in_expected_interval():
    # 300 pairs with known p; sample R = 10 verdicts per unit at tau = 1 and compare the sampled
    # figures with the expected ones (the sampled figures vary around the expectations by their
    # own sampling noise, which is small next to the pair-bootstrap interval of 300 pairs).
    rng = np.random.default_rng(3)
    n, reps = 300, 10
    p = {}
    labels = {}
    rows = []
    for i in range(n):
        labels[f"i{i}"] = "A" if rng.random() < 0.5 else "B"
        for o in ("AB", "BA"):
            pa = float(rng.beta(2, 2))
            p[(f"i{i}", o)] = pa
            for r in range(reps):
                v = "A" if rng.random() < pa else "B"
                rows.append({"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 1.0,
                             "item_id": f"i{i}", "order": o, "rep": r, "label": labels[f"i{i}"],
                             "verdict": v, "p_a": pa})
    df = pd.DataFrame(rows)
    sampled = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    exp = expected_reliability(df, repetitions=reps, policy=FigurePolicy(n_bootstrap=300, seed=1)).iloc[0]
    for name in ("C", "phi", "A"):
        assert exp[f"{name}_expected_lo"] <= sampled[name] <= exp[f"{name}_expected_hi"], name


def test_greedy_and_missing_probabilities():
    df = _frame({("i1", "AB"): 0.7, ("i1", "BA"): 0.4}, {"i1": "B"}, reps=2, temperature=0.0)
    out = expected_reliability(df, repetitions=5, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    # greedy: AB always A, BA always B: C = 1, phi = 1, A = 1/2, T = 1*(.5 - .5) = 0
    assert (out["C_expected"], out["phi_expected"], out["A_expected"], out["T_expected"]) == \
        pytest.approx((1.0, 1.0, 0.5, 0.0))
    empty = expected_reliability(df.assign(p_a=np.nan), repetitions=5)
    assert empty.empty
    with pytest.raises(ValueError, match="p_a"):
        expected_reliability(df.assign(p_a=1.5), repetitions=5)


# -- unreadable replies ----------------------------------------------------------------------------

def test_unit_expectation_with_unreadable_draws_hand_worked():
    # s = (.75, .25), u = .2, R = 2: a draw is A .6, B .2, unreadable .2
    s = np.array([[0.75, 0.25]])
    ex = unit_expectation(s, 2, unreadable=0.2, policy=FigurePolicy(unparsed="exclude"))
    # exclude: dropped only when both draws are unreadable: kept = 1 - .04 = .96
    # N = P(every readable draw agrees, >= 1 readable) = (.6 + .2)^2 - .04 + (.2 + .2)^2 - .04 = .72
    # mode A: AA .36 + A,unreadable 2*.6*.2 = .24 -> .60; mode B: BB .04 + B,unreadable .08 -> .12;
    # split: AB 2*.6*.2 = .24
    assert (ex.kept[0], ex.consistent[0]) == (pytest.approx(0.96), pytest.approx(0.72))
    assert ex.mode_prob[0].tolist() == pytest.approx([0.60, 0.12])
    assert ex.split[0] == pytest.approx(0.24)
    assert ex.all_same[0].tolist() == pytest.approx([0.60, 0.12])      # every readable draw is v
    wr = unit_expectation(s, 2, unreadable=0.2, policy=FigurePolicy(unparsed="wrong"))
    # wrong: unreadable is a value: N = .36 + .04 + .04 = .44; modes A .36, B .04, unreadable .04;
    # split AB .24 + A,unreadable .24 + B,unreadable .08 = .56
    assert (wr.kept[0], wr.consistent[0]) == (pytest.approx(1.0), pytest.approx(0.44))
    assert wr.mode_prob[0].tolist() == pytest.approx([0.36, 0.04, 0.04])
    assert wr.split[0] == pytest.approx(0.56)
    assert wr.all_same[0].tolist() == pytest.approx([0.36, 0.04])
    # u = 0 is the model without unreadable replies
    assert unit_expectation(s, 2, unreadable=0.0).mode_prob[0].tolist() == pytest.approx([0.5625, 0.0625])
    with pytest.raises(ValueError, match="unreadable"):
        unit_expectation(s, 2, unreadable=1.5)


def _enumerate_sums(p_units, u_units, labels, items, orders, reps, unparsed):
    """Brute force over every assignment of A / B / unreadable to every draw: the expectations of the
    sampled figures' numerators and denominators (reliability's own counts)."""
    n_units = len(p_units)
    rows, weights = [], {}
    for k, draws in enumerate(itertools.product("AB-", repeat=n_units * reps)):
        weight = 1.0
        for un in range(n_units):
            for r in range(reps):
                v = draws[un * reps + r]
                pa, u = p_units[un], u_units[un]
                weight *= u if v == "-" else (1 - u) * (pa if v == "A" else 1 - pa)
                rows.append({"judge": "j", "protocol": "direct", "dataset": f"d{k:05d}", "temperature": 1.0,
                             "item_id": items[un], "order": orders[un], "rep": r, "label": labels[un],
                             "verdict": None if v == "-" else v})
        weights[f"d{k:05d}"] = weight
    cells = reliability(pd.DataFrame(rows), policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0))
    w = cells["dataset"].map(weights).to_numpy()
    assert w.sum() == pytest.approx(1.0)

    def e(num: str, den: str) -> float:
        n = cells[den].to_numpy(float)
        x = np.nan_to_num(cells[num].to_numpy(float)) * n
        return float((w * x).sum() / (w * n).sum())

    return {"C": e("C", "n_units"), "phi": e("phi", "n_order_pairs"), "A": e("A", "n_labelled_units")}


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
@pytest.mark.parametrize("reps", [1, 2])
def test_expected_with_unreadable_equals_enumerated_sampled_sums(reps, unparsed):
    # each figure is a ratio of sums; its expected form is E[numerator] / E[denominator] (exact when
    # no unit can drop out, i.e. under "wrong"; the ratio of expectations under "exclude")
    items, orders, labels = ["i1", "i1", "i2", "i2"], ["AB", "BA", "AB", "BA"], ["A", "A", "B", "B"]
    p_units, u_units = [0.9, 0.3, 0.55, 0.2], [0.1, 0.4, 0.0, 0.25]
    truth = _enumerate_sums(p_units, u_units, labels, items, orders, reps, unparsed)
    df = _frame({(i, o): p for i, o, p in zip(items, orders, p_units, strict=True)}, {"i1": "A", "i2": "B"}, reps=1)
    df["u"] = u_units
    out = expected_reliability(df, repetitions=reps, policy=FigurePolicy(n_bootstrap=0, unparsed=unparsed), unreadable="u").iloc[0]
    for name in ("C", "phi", "A"):
        if name == "C" and reps == 1:      # one draw agrees with itself: C is not measured
            assert np.isnan(out["C_expected"])
            continue
        assert out[f"{name}_expected"] == pytest.approx(truth[name], abs=1e-12), name
