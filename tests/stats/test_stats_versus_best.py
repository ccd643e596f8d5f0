"""Every cell against its dataset's best (paired sign test on trustworthy orders, Holm), the exact sign
test, and the failure regions an interval box reaches: values worked out by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_stats_reliability import frame, units

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import (
    exact_sign_test,
    mcnemar_exact,
    pair_events,
    reliability,
    unit_table,
    versus_best,
)
from verdictlab.stats.regions import cell_regions_possible, regions_reached

SIX = {str(i): "A" for i in range(1, 7)}


def _cell(spec: dict[tuple[str, str], str], labels: dict[str, str | None], **const: object) -> pd.DataFrame:
    return frame(units(spec, labels), **const)


def _all(verdicts: str, items: dict[str, str | None] = SIX) -> dict[tuple[str, str], str]:
    return {(i, o): verdicts for i in items for o in ("AB", "BA")}


# Cell X (judge "x"): every one of the six pairs right and reproducible in both orders: 2 trustworthy
# orders per pair, T = 1.
X = _cell(_all("AA"), SIX, judge="x")
# Cell Y (judge "y"), label A everywhere, two repetitions:
#   pair 1: AB AA, BA AA           -> 2 trustworthy orders
#   pair 2: AB AA, BA BB           -> P = 0 (A vs B)            -> 0
#   pair 3: AB AB (split), BA AA   -> split mode never agrees   -> 0
#   pair 4: AB BB, BA BB           -> reproducible, invariant, wrong -> 0
#   pairs 5, 6 like pair 1         -> 2
# vs X: X has more on pairs 2, 3, 4 (3 discordant, all for X): p = 2 * (1/2)^3 = 0.25
Y = _cell({**_all("AA"), ("2", "BA"): "BB", ("3", "AB"): "AB", ("4", "AB"): "BB", ("4", "BA"): "BB"}, SIX, judge="y")
# Cell Z (judge "z"): always the wrong answer: 0 trustworthy orders on each of the six pairs.
# vs X: 6 discordant pairs, all for X: p = 2 * (1/2)^6 = 1/32 = 0.03125
Z = _cell(_all("BB"), SIX, judge="z")


def _compare(*frames: pd.DataFrame, alpha: float = 0.05, unparsed: str = "exclude"
             ) -> tuple[pd.DataFrame, pd.DataFrame]:
    j = pd.concat(frames, ignore_index=True)
    cells = reliability(j, policy=FigurePolicy(n_bootstrap=0))
    return cells, versus_best(j, cells, policy=FigurePolicy(unparsed=unparsed, confidence=1 - alpha))


def test_exact_sign_test_by_hand() -> None:
    # 3 vs 0: 2 * P(Bin(3, 1/2) <= 0) = 2/8; 6 vs 0: 2/64; 2 vs 2: min(1, 2 * 11/16) = 1; 0 vs 0: 1
    assert exact_sign_test([3, 6, 2, 0], [0, 0, 2, 0]) == pytest.approx([0.25, 0.03125, 1.0, 1.0])
    # 1 vs 4: 2 * P(Bin(5, 1/2) <= 1) = 2 * 6/32 = 0.375 -- and McNemar's exact test is the same
    assert float(exact_sign_test(1, 4)) == pytest.approx(0.375)
    assert mcnemar_exact([1, 0, 0, 0, 0, 1], [0, 1, 1, 1, 1, 1]).p_value == pytest.approx(0.375)
    with pytest.raises(ValueError, match="negative"):
        exact_sign_test(-1, 2)


def test_two_cells_by_hand() -> None:
    cells, vb = _compare(X, Y)
    assert list(cells["judge"]) == ["x", "y"]
    # T_X = 1; T_Y: C = 11/12 (only (3,AB) disagrees), phi = 2/6 (pairs 2, 3), A = 8/12 (wrong: (2,BA),
    # (3,AB) split, (4,AB), (4,BA)), T = 11/12 * (8/12 - 1/3 * 1/2) = 11/12 * 6/12 = 11/24
    assert cells["T"].tolist() == pytest.approx([1.0, 11 / 24])
    assert vb["best"].tolist() == [True, False]
    assert vb["best_row"].tolist() == [0, 0]
    assert vb["n_shared"].tolist() == [6, 6]
    assert vb["n_better_best"].tolist() == [0, 3] and vb["n_better_cell"].tolist() == [0, 0]
    # trustworthy orders on the shared pairs: X 12/12; Y 2 + 0 + 0 + 0 + 2 + 2 = 6 of 12 (= its T_joint)
    assert vb["T_joint_shared"].tolist() == pytest.approx([1.0, 0.5])
    assert vb["T_joint_best_shared"].tolist() == pytest.approx([1.0, 1.0])
    assert np.isnan(vb["p"][0]) and vb["p"][1] == pytest.approx(0.25)
    assert vb["p_holm"][1] == pytest.approx(0.25)            # a family of one
    assert vb["distinguishable"].tolist() == [False, False]
    assert vb.attrs["family_size"] == 1


def test_holm_across_the_family() -> None:
    # Y p = 0.25, Z p = 1/32.  Holm over the family of two: sorted 1/32, 0.25 -> 2 * 1/32 = 0.0625 and
    # max(0.0625, 1 * 0.25) = 0.25.  Z alone (p 0.031) would be told apart at 0.05; in the family it is not.
    _, vb = _compare(X, Y, Z)
    assert vb["p"].tolist()[1:] == pytest.approx([0.25, 1 / 32])
    assert vb["p_holm"].tolist()[1:] == pytest.approx([0.25, 0.0625])
    assert vb["distinguishable"].tolist() == [False, False, False]
    assert vb.attrs["family_size"] == 2
    # at alpha 0.1, Z is told apart, Y is not
    _, vb10 = _compare(X, Y, Z, alpha=0.1)
    assert vb10["distinguishable"].tolist() == [False, False, True]


def test_the_family_spans_datasets_and_each_dataset_has_its_own_best() -> None:
    # dataset d: X (T 1) and Z (T 0); dataset d2: copies of X and Y.  Each dataset's best is its X.
    d2 = [f.assign(dataset="d2") for f in (X, Y)]
    cells, vb = _compare(X, Z, *d2)
    # the cells come sorted by judge, then dataset
    assert list(zip(cells["dataset"], cells["judge"], strict=True)) == [("d", "x"), ("d2", "x"), ("d2", "y"),
                                                                         ("d", "z")]
    assert vb["best_row"].tolist() == [0, 1, 1, 0]
    # family: p(Y in d2) = 0.25, p(Z in d) = 1/32 -> Holm 0.25, 0.0625
    assert vb["p_holm"].tolist()[2:] == pytest.approx([0.25, 0.0625])


def test_only_shared_labelled_two_order_pairs_count() -> None:
    # Y2 = Y without the BA order of pair 2 and with pair 6 unlabelled... the label is the dataset's,
    # so X loses pair 6's label too: shared pairs = 1, 3, 4, 5 (pair 2: one order in Y2; pair 6 no label).
    labels = {**SIX, "6": None}
    x = _cell(_all("AA", labels), labels, judge="x")
    y_spec = {k: v for k, v in {**_all("AA", labels), ("3", "AB"): "AB", ("4", "AB"): "BB",
                                ("4", "BA"): "BB"}.items() if k != ("2", "BA")}
    y = _cell(y_spec, labels, judge="y")
    _, vb = _compare(x, y)
    # X better on pairs 3 and 4: p = 2 * (1/2)^2 = 0.5; Y's trustworthy orders on 1, 3, 4, 5: 2+0+0+2 = 4 of 8
    assert vb["n_shared"].tolist() == [5, 4]    # X with itself: pairs 1-5
    assert vb["n_better_best"][1] == 2 and vb["p"][1] == pytest.approx(0.5)
    assert vb["T_joint_shared"][1] == pytest.approx(0.5)


def test_unparsed_policy_decides_which_pairs_are_shared() -> None:
    # Y3: pair 1's BA order all unparsed.  exclude: pair 1 is judged in one order only -> not shared (5);
    # wrong: the unparsed unit is a wrong answer -> shared, X better there (its count 2 vs Y3's 0):
    # exclude: X better on none of 2..6 -> p 1; wrong: 1 discordant pair -> p = 2 * 1/2 = 1 (min 1)
    y3 = _cell({**_all("AA"), ("1", "BA"): "--"}, SIX, judge="y")
    _, ex = _compare(X, y3, unparsed="exclude")
    _, wr = _compare(X, y3, unparsed="wrong")
    assert ex["n_shared"][1] == 5 and ex["n_better_best"][1] == 0
    assert wr["n_shared"][1] == 6 and wr["n_better_best"][1] == 1
    assert ex["p"][1] == pytest.approx(1.0) and wr["p"][1] == pytest.approx(1.0)


def test_the_best_is_the_highest_value_and_the_first_on_a_tie() -> None:
    cells, vb = _compare(Y, X, Z)          # row order: x, y, z (reliability sorts the cells)
    assert vb["best"].tolist() == [True, False, False]
    twins = pd.concat([X, X.assign(judge="x2")], ignore_index=True)
    c2 = reliability(twins, policy=FigurePolicy(n_bootstrap=0))
    vb2 = versus_best(twins, c2)
    assert vb2["best"].tolist() == [True, False] and vb2["p"][1] == pytest.approx(1.0)
    # a group without any defined value has no best and no test
    c3 = c2.assign(T=np.nan)
    vb3 = versus_best(twins, c3)
    assert vb3["best_row"].tolist() == [-1, -1] and vb3["p"].isna().all() and not vb3["best"].any()


def test_versus_best_needs_its_columns_and_a_sane_alpha() -> None:
    cells = reliability(X, policy=FigurePolicy(n_bootstrap=0))
    with pytest.raises(ValueError, match="lacks"):
        versus_best(X, cells.drop(columns=["T"]))
    with pytest.raises(ValueError, match="confidence"):     # the test level is 1 - the policy's confidence
        versus_best(X, cells, policy=FigurePolicy(confidence=1 - 1.5))
    empty = versus_best(X.iloc[0:0], cells)
    assert empty["n_shared"].tolist() == [0] and empty["best"].tolist() == [True]


def test_pair_events_are_the_joint_events_of_reliability() -> None:
    _, u = unit_table(Y)
    ev = pair_events(u)
    # P per pair: 1 yes, 2 no, 3 no (split), 4 yes (B, B), 5, 6 yes
    assert ev.P.tolist() == [True, False, False, True, True, True]
    assert int(ev.unit_trustworthy.sum()) == 6 and int(ev.unit_joint.sum()) == 12
    assert reliability(Y, policy=FigurePolicy(n_bootstrap=0))["T_joint"][0] == pytest.approx(6 / 12)


def test_regions_reached_by_hand() -> None:
    # thresholds C 0.90, phi 0.20.  C in [0.80, 0.95] reaches both sides; phi in [0.40, 0.60] only "unfair":
    # chaos (low C) and confidently-biased (high C)
    assert regions_reached(0.80, 0.95, 0.40, 0.60) == ("chaos", "confidently-biased")
    # a box inside one region
    assert regions_reached(0.92, 0.99, 0.0, 0.1) == ("trustworthy",)
    # edges follow failure_region: C_hi = 0.90 is high; phi_lo = 0.20 is fair
    assert regions_reached(0.85, 0.90, 0.20, 0.30) == REGIONS_ALL
    assert regions_reached(0.5, 0.6, float("nan"), 0.3) == ()
    assert regions_reached(0.80, 0.95, 0.40, 0.60, c_high=0.7) == ("confidently-biased",)


REGIONS_ALL = ("trustworthy", "noisy-but-fair", "chaos", "confidently-biased")


def test_cell_regions_possible_puts_the_cells_region_first() -> None:
    cells = pd.DataFrame({
        "C": [0.88, 0.92, 0.95, 1.0, 0.7], "C_lo": [0.80, 0.85, 0.91, None, 0.6],
        "C_hi": [0.95, 0.97, 0.99, None, 0.8],
        "phi": [0.5, 0.5, 0.1, 0.3, None], "phi_lo": [0.4, 0.4, 0.05, 0.25, None],
        "phi_hi": [0.6, 0.6, 0.15, 0.35, None], "repetitions": [3, 3, 3, 1, 3]})
    assert cell_regions_possible(cells) == [
        ("chaos", "confidently-biased"),            # C 88% names chaos; its interval reaches 0.90
        ("confidently-biased", "chaos"),            # C 92%: the same box, the other region first
        ("trustworthy",),
        (),                                         # one repetition: C not measured, no region
        (),                                         # no phi
    ]



@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_the_unit_table_reliability_built_gives_the_same_comparison(unparsed: str) -> None:
    # the report hands versus_best the unit table reliability was computed from instead of building it
    # again (1.2 s of CPU at 5.4M judgments): the figures and the comparison are those of the two calls
    j = pd.concat([X, Y, Z, *(f.assign(dataset="d2") for f in (X, Y))], ignore_index=True)
    j.loc[3, "verdict"] = None                           # an unparsed verdict: the policy matters
    policy = FigurePolicy(unparsed=unparsed, n_bootstrap=0)
    units = unit_table(j, policy=policy)
    cells = reliability(j, policy=policy, units=units)
    pd.testing.assert_frame_equal(cells, reliability(j, policy=policy), check_exact=True)
    given = versus_best(j, cells, policy=policy, units=units)
    pd.testing.assert_frame_equal(given, versus_best(j, cells, policy=policy), check_exact=True)
    assert given.attrs == versus_best(j, cells, policy=policy).attrs
    assert given["p"].notna().any()
