"""Leaderboard statistics: known values worked by hand, and cross-checks against the published
algorithms (FastChat's compute_elo and its Bradley-Terry fit, choix, scipy's Kendall tau, the
alpaca-eval package's own functions)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from verdictlab.stats import (
    alpaca_win_rate,
    bradley_terry_ratings,
    common_opponent,
    fit_bradley_terry,
    kendall_tau_b,
    ranking_stability,
    score_ratios,
    separable_pairs,
    separable_tiers,
    sequential_elo,
    top_k_overlap,
    tournament,
    tournament_patterns,
    unit_preferences,
    win_matrices,
    win_rates,
)
from verdictlab.testing.synthetic_tournament import JudgeProfile, tournament_frame


def frame(rows: list[tuple[str, str, str, str | None]], prompt: bool = False) -> pd.DataFrame:
    """(item_id, system_a, system_b, verdict) rows."""
    df = pd.DataFrame(rows, columns=["item_id", "system_a", "system_b", "verdict"])
    if prompt:
        df["prompt"] = df["item_id"].str[0]
    return df


# x beats y twice, y beats x once, x ties z, z beats y; one unparsed, one without a system
SMALL = frame([("1", "x", "y", "A"), ("1", "x", "y", "A"), ("2", "y", "x", "A"), ("3", "x", "z", "tie"),
               ("4", "z", "y", "A"), ("5", "x", "y", None), ("6", None, "y", "A")])


def test_tournament_codes_and_counts() -> None:
    t = tournament(SMALL)
    assert t.systems == ("x", "y", "z")
    assert t.n_matches == 5 and t.n_unparsed == 1 and t.n_without_system == 1
    # item 2 is (y, x) with A: coded first = x (code 0), second = y, outcome 2 (second won)
    assert list(t.first) == [0, 0, 0, 0, 1] and list(t.second) == [1, 1, 1, 2, 2]
    assert list(t.outcome) == [0, 0, 2, 1, 2]


def test_tournament_refuses_a_self_match_and_an_unknown_verdict() -> None:
    with pytest.raises(ValueError, match="row 0 has system_a == system_b"):
        tournament(frame([("1", "x", "x", "A")]))
    with pytest.raises(ValueError, match="row 1 has 'C'"):
        tournament(frame([("1", "x", "y", "A"), ("2", "x", "y", "C")]))


def test_win_rates_by_tie_rule() -> None:
    t = tournament(SMALL)
    # x: wins 2 (item 1 twice), loss 1 (item 2), tie 1 (item 3)
    #   half: (2 + 1/2) / 4 = 0.625; drop: 2 / 3; loss: 2 / 4 = 0.5
    # y: wins 1 (item 2), losses 3 (item 1 twice, item 4): half 1/4; z: win 1, tie 1: half 1.5 / 2 = 0.75
    half = win_rates(t, tie_rule="half", n_bootstrap=0).set_index("system")
    assert half.loc["x", "win_rate"] == pytest.approx(0.625) and half.loc["x", "n"] == 4
    assert half.loc["y", "win_rate"] == pytest.approx(0.25) and half.loc["z", "win_rate"] == pytest.approx(0.75)
    assert list(half.index) == ["z", "x", "y"]          # best first
    drop = win_rates(t, tie_rule="drop", n_bootstrap=0).set_index("system")
    assert drop.loc["x", "win_rate"] == pytest.approx(2 / 3) and drop.loc["x", "n"] == 3
    assert drop.loc["z", "win_rate"] == pytest.approx(1.0) and drop.loc["z", "n"] == 1
    loss = win_rates(t, tie_rule="loss", n_bootstrap=0).set_index("system")
    assert loss.loc["x", "win_rate"] == pytest.approx(0.5) and loss.loc["z", "win_rate"] == pytest.approx(0.5)
    assert (half.loc["x", ["wins", "losses", "ties", "n_units"]] == [2, 1, 1, 3]).all()
    with pytest.raises(ValueError, match="tie_rule must be one of"):
        win_rates(t, tie_rule="coin")


def test_pattern_bootstrap_is_the_unit_bootstrap() -> None:
    # patterns: item 1 (x, y: x won twice); items 2, 7 and 8 (x, y: y won once) -- three units of one
    # pattern; item 3 (x, z: one tie); item 4 (y, z: z won once)
    t = tournament(pd.concat([SMALL, frame([("7", "y", "x", "A"), ("8", "x", "y", "B")])], ignore_index=True))
    p = tournament_patterns(t)
    assert p.n_units == 6 and sorted(p.units.tolist()) == [1, 1, 1, 3]
    # the bootstrap interval holds the estimate and is reproducible for a seed
    a = win_rates(t, n_bootstrap=300, seed=3)
    b = win_rates(t, n_bootstrap=300, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert ((a["lo"] <= a["win_rate"]) & (a["win_rate"] <= a["hi"])).all()


def test_bradley_terry_two_systems_is_the_log_odds() -> None:
    # two systems, x won 3 of 4: the MLE gap theta_x - theta_y = ln(3/1); centred: +-ln(3)/2;
    # Elo = 1000 +- 400 * ln(3)/2 / ln(10) = 1000 +- 95.42
    W = np.array([[0.0, 3.0], [1.0, 0.0]])
    th = fit_bradley_terry(W, ridge=1e-12)
    assert th == pytest.approx([np.log(3) / 2, -np.log(3) / 2], abs=1e-9)
    t = tournament(frame([("1", "x", "y", "A"), ("2", "x", "y", "A"), ("3", "y", "x", "B"), ("4", "y", "x", "A")]))
    r = bradley_terry_ratings(t, n_bootstrap=0, ridge=1e-12).set_index("system")
    assert r.loc["x", "elo"] == pytest.approx(1000 + 400 * np.log(3) / 2 / np.log(10), abs=1e-6)
    assert r.loc["x", "elo"] == pytest.approx(1095.424, abs=1e-3)
    anchored = bradley_terry_ratings(t, n_bootstrap=0, ridge=1e-12, anchor=("y", 800.0)).set_index("system")
    assert anchored.loc["y", "elo"] == pytest.approx(800.0)
    assert anchored.loc["x", "elo"] - anchored.loc["y", "elo"] == pytest.approx(400 * np.log10(3), abs=1e-6)


def test_bradley_terry_counts_a_tie_as_half_a_win() -> None:
    # x beats y once and ties once: half rule W = [[1.5, ...]]: x 1.5 wins, y 0.5 -> gap ln 3;
    # drop rule: 1 win, 0 losses -> the weak ridge keeps it finite and large
    t = tournament(frame([("1", "x", "y", "A"), ("2", "x", "y", "tie")]))
    half = bradley_terry_ratings(t, n_bootstrap=0, ridge=1e-12).set_index("system")
    assert half.loc["x", "strength"] - half.loc["y", "strength"] == pytest.approx(np.log(3), abs=1e-6)
    drop = bradley_terry_ratings(t, n_bootstrap=0, tie_rule="drop").set_index("system")
    assert drop.loc["x", "strength"] - drop.loc["y", "strength"] > 10
    with pytest.raises(ValueError, match="tie_rule must be one of"):
        bradley_terry_ratings(t, tie_rule="loss")


def _fastchat_bt(W: np.ndarray) -> np.ndarray:
    """FastChat's fit_bt, restated: L-BFGS on the Bradley-Terry loss of unique (a, b, outcome) rows
    weighted by their counts, logits in base-10 units (alpha = ln 10); here from the win matrix."""
    from scipy.optimize import minimize
    from scipy.special import expit

    S = len(W)
    i, j = np.nonzero(W)
    match, out, wt = np.column_stack([i, j]), np.ones(len(i)), W[i, j]

    def loss(r: np.ndarray) -> tuple[float, np.ndarray]:
        p = expit(np.log(10) * (r[match[:, 0]] - r[match[:, 1]]))
        g = -np.log(10) * (out - p) * wt
        grad = np.zeros(S)
        np.add.at(grad, match[:, 0], g)
        np.add.at(grad, match[:, 1], -g)
        return float(-((np.log(p) * out + np.log(1 - p) * (1 - out)) * wt).sum()), grad

    r = minimize(loss, np.zeros(S), jac=True, method="L-BFGS-B", options={"maxiter": 200, "gtol": 1e-10}).x
    return 400 * (r - r.mean()) + 1000


def test_bradley_terry_agrees_with_choix_and_fastchat() -> None:
    import choix

    df = tournament_frame(n_systems=7, n_prompts=30, judges=[JudgeProfile("j", "p", tie_rate=0.1)], seed=5)
    t = tournament(df)
    p = tournament_patterns(t)
    W = win_matrices(p, p.units.astype(float))
    ours = fit_bradley_terry(W, ridge=1e-12)
    ref = choix.ilsr_pairwise_dense(W, alpha=0.0, tol=1e-12, max_iter=1000)
    assert ours == pytest.approx(ref - ref.mean(), abs=1e-6)
    r = bradley_terry_ratings(t, n_bootstrap=0, ridge=1e-12).set_index("system")
    fastchat = _fastchat_bt(W)
    assert r.loc[list(t.systems), "elo"].to_numpy() == pytest.approx(fastchat, abs=1e-3)


def test_bradley_terry_batched_equals_one_by_one() -> None:
    rng = np.random.default_rng(0)
    Ws = rng.integers(0, 6, size=(4, 5, 5)).astype(float)
    Ws[:, range(5), range(5)] = 0
    batched = fit_bradley_terry(Ws)
    for b in range(4):
        assert batched[b] == pytest.approx(fit_bradley_terry(Ws[b]), abs=1e-9)


def _fastchat_compute_elo(battles: list[tuple[int, int, float]], S: int, K: float = 4, SCALE: float = 400,
                          BASE: float = 10, INIT: float = 1000) -> np.ndarray:
    """FastChat's compute_elo, restated over (a, b, score of a) battles in the given order."""
    rating = [INIT] * S
    for a, b, sa in battles:
        ra, rb = rating[a], rating[b]
        ea = 1 / (1 + BASE ** ((rb - ra) / SCALE))
        eb = 1 / (1 + BASE ** ((ra - rb) / SCALE))
        rating[a] += K * (sa - ea)
        rating[b] += K * (1 - sa - eb)
    return np.array(rating)


def test_sequential_elo_first_match_by_hand() -> None:
    # one match, x beats y, both at 1000: e = 1/2 each; x: 1000 + 4 (1 - 1/2) = 1002, y: 998
    t = tournament(frame([("1", "x", "y", "A")]))
    e = sequential_elo(t, n_orders=3).set_index("system")
    assert e.loc["x", "elo"] == pytest.approx(1002.0) and e.loc["y", "elo"] == pytest.approx(998.0)
    # K = 32, a tie: nothing moves (1/2 - 1/2 = 0)
    e = sequential_elo(tournament(frame([("1", "x", "y", "tie")])), k=32).set_index("system")
    assert e.loc["x", "elo"] == pytest.approx(1000.0)
    # two matches x > y then y > x at K = 32: after the first x = 1016, y = 984; the second:
    # e_y = 1 / (1 + 10^(32/400)) = 1 / 2.20226 = 0.45408; y = 984 + 32 (1 - 0.45408) = 1001.470,
    # x = 1016 - 32 (1 - 0.45408) = 998.530;
    # in the other order y wins first and x ends at 1001.47: the mean over the two orders is 1000
    t = tournament(frame([("1", "x", "y", "A"), ("2", "x", "y", "B")]))
    e = sequential_elo(t, k=32, n_orders=200, seed=1).set_index("system")
    assert e.loc["x", "lo"] == pytest.approx(998.530, abs=1e-3) and e.loc["x", "hi"] == pytest.approx(1001.470, abs=1e-3)


def test_sequential_elo_is_fastchats_compute_elo_per_order() -> None:
    df = tournament_frame(n_systems=5, n_prompts=20, judges=[JudgeProfile("j", "p", tie_rate=0.2)], seed=2)
    t = tournament(df)
    score = (2 - t.outcome) / 2.0
    rng = np.random.default_rng(11)
    expected = []
    index = np.arange(t.n_matches, dtype=np.int32)
    for _ in range(4):                   # the same permutations as sequential_elo(seed=11) draws
        rng.shuffle(index)
        expected.append(_fastchat_compute_elo(list(zip(t.first[index], t.second[index], score[index],
                                                       strict=True)), t.n_systems))
    got = sequential_elo(t, n_orders=4, seed=11).set_index("system")
    assert got.loc[list(t.systems), "elo"].to_numpy() == pytest.approx(np.mean(expected, axis=0), abs=1e-9)
    interp = sequential_elo(t, n_orders=4, seed=11, compiled=False).set_index("system")
    assert interp.loc[list(t.systems), "elo"].to_numpy() == pytest.approx(got.loc[list(t.systems), "elo"], abs=1e-9)


def test_score_ratio_by_hand() -> None:
    # base scores 8 and 6 (sum 14); x scores 7 and 7 (sum 14) -> 100%; y: 9 / 8 -> 112.5%;
    # a [-1, -1] pair is unread (NaN) and left out; an unpaired row (x vs y) is not against the base
    df = pd.DataFrame({"item_id": ["1", "2", "3", "4", "5"], "system_a": ["x", "base", "base", "y", "x"],
                       "system_b": ["base", "x", "y", "base", "y"], "score_a": [7, 6, 8, np.nan, 5],
                       "score_b": [8, 7, 9, np.nan, 5]})
    r = score_ratios(df, baseline="base", n_bootstrap=100).set_index("system")
    assert r.loc["x", "ratio"] == pytest.approx(1.0) and r.loc["x", "n"] == 2
    assert r.loc["y", "ratio"] == pytest.approx(9 / 8) and r.loc["y", "n_left_out"] == 1
    with pytest.raises(ValueError, match="row 0 has scores"):
        score_ratios(df.assign(score_a=[-1, 6, 8, 1, 1]), baseline="base")


def test_alpaca_win_rate_by_hand_and_against_the_package() -> None:
    # preferences 1, 1, 0, 1/2, 0.8 (a soft one), and an out-of-range 1.7 left out:
    # win rate = (1 + 1 + 0 + 0.5 + 0.8) / 5 = 0.66 -> 66; discrete: 0.8 -> 1: (1+1+0+0.5+1)/5 = 70
    # SE = sd(ddof 1) / sqrt(5): values - 0.66 = .34 .34 -.66 -.16 .14; sum sq = .1156*2 + .4356 + .0256 +
    #   .0196 = .712; var = .712 / 4 = .178; sd = .42190; SE = .42190 / 2.23607 = .18868 -> 18.868
    pref = [1, 1, 0, 0.5, 0.8, 1.7]
    f = alpaca_win_rate(pref)
    assert f.win_rate == pytest.approx(66.0) and f.discrete_win_rate == pytest.approx(70.0)
    assert f.standard_error == pytest.approx(18.868, abs=1e-3)
    assert (f.n_wins, f.n_wins_base, f.n_draws, f.n_total, f.n_left_out) == (3, 1, 1, 5, 1)
    pytest.importorskip("alpaca_eval")
    from alpaca_eval.metrics import get_winrate

    pkg = get_winrate([{"preference": 1 + p} for p in pref[:5]])
    assert f.win_rate == pytest.approx(pkg["win_rate"]) and f.standard_error == pytest.approx(pkg["standard_error"])
    assert f.discrete_win_rate == pytest.approx(pkg["discrete_win_rate"])
    assert (f.n_wins, f.n_wins_base, f.n_draws, f.n_total) == (pkg["n_wins"], pkg["n_wins_base"], pkg["n_draws"],
                                                               pkg["n_total"])


def _alpaca_fixture(n: int = 60, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A small synthetic annotation frame in AlpacaEval's format and a synthetic df_gamed frame."""
    rng = np.random.default_rng(seed)
    len_base = rng.integers(200, 800, n)
    len_model = len_base + rng.integers(-100, 400, n)
    pref = 1 + np.clip(0.5 + (len_model - len_base) / 1000 + rng.normal(0, 0.3, n), 0, 1).round(2)
    ann = pd.DataFrame({"preference": pref, "output_1": ["b" * k for k in len_base],
                        "output_2": ["m" * k for k in len_model], "generator_1": "base", "generator_2": "model",
                        "annotator": "synthetic", "instruction": [f"i{k}" for k in range(n)]})
    diff = rng.normal(0, 1, n)
    gamed = pd.concat([pd.DataFrame({"model": name, "index": np.arange(n), "preference": rng.random(n).round(2),
                                     "std_delta_len": rng.normal(shift, 1, n), "instruction_difficulty": diff,
                                     "not_gamed_baseline": False}) for name, shift in (("verbose", -1), ("concise", 1))],
                      ignore_index=True)
    return ann, gamed


@pytest.mark.parametrize("glm", ["length_controlled_v1", "length_controlled_noreg"])
def test_length_controlled_win_rate_is_the_packages(glm: str, tmp_path, monkeypatch) -> None:  # noqa: ANN001
    """The package's get_length_controlled_winrate on a synthetic annotations frame, its download of
    df_gamed.csv served a synthetic one, gives the same LC win rate as our call through its GLM."""
    pytest.importorskip("alpaca_eval")
    import alpaca_eval.metrics.glm_winrate as glm_mod

    from verdictlab.stats import AlpacaReference, length_controlled_win_rate

    ann, gamed = _alpaca_fixture()
    gamed.to_csv(tmp_path / "df_gamed.csv", index=False)
    monkeypatch.setattr(glm_mod, "hf_hub_download", lambda **kw: str(tmp_path / "df_gamed.csv"))
    pkg = glm_mod.get_length_controlled_winrate(ann.copy(), glm_name=glm, save_weights_dir=None,
                                                is_warn_extreme_changes=False)
    ref = AlpacaReference.from_gamed(gamed)
    ours = length_controlled_win_rate(ann["preference"] - 1, ann["output_2"].str.len(), ann["output_1"].str.len(),
                                      np.arange(len(ann)), reference=ref, glm=glm)
    assert ours.win_rate == pytest.approx(pkg["win_rate"]) and ours.standard_error == pytest.approx(
        pkg["standard_error"])
    assert ours.lc_win_rate == pytest.approx(pkg["length_controlled_winrate"], abs=1e-9)
    assert ours.lc_standard_error == pytest.approx(pkg["lc_standard_error"], abs=1e-9)
    assert ours.lc_win_rate < ours.win_rate    # the model wins by writing longer: length control lowers it


def test_length_controlled_needs_the_gamed_annotations_for_v1() -> None:
    pytest.importorskip("alpaca_eval")
    from verdictlab.stats import AlpacaReference, length_controlled_win_rate

    ref = AlpacaReference(difficulty=pd.Series([0.0, 1.0]))
    with pytest.raises(ValueError, match="needs the gamed baselines"):
        length_controlled_win_rate([1, 0], [5, 5], [4, 4], [0, 1], reference=ref)
    with pytest.raises(ValueError, match="instruction index 7 has no published difficulty"):
        length_controlled_win_rate([1, 0], [5, 5], [4, 4], [0, 7], reference=ref, glm="length_controlled_noreg")


def test_kendall_tau_b_and_top_k_by_hand() -> None:
    # x = (3, 2, 1), y = (3, 1, 2): pairs (1,2) +, (1,3) +, (2,3) -: tau = (2 - 1) / 3
    assert float(kendall_tau_b(np.array([3, 2, 1.0]), np.array([3, 1, 2.0]))) == pytest.approx(1 / 3)
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 4, 9).astype(float), rng.integers(0, 4, 9).astype(float)   # with ties: tau-b
    assert float(kendall_tau_b(x, y)) == pytest.approx(st.kendalltau(x, y).statistic)
    assert float(kendall_tau_b(np.array([1.0, np.nan, 2.0, 3.0]), np.array([1.0, 5.0, 3.0, 2.0]))) == pytest.approx(
        1 / 3)
    # top 2 of x = {a, b}, of y = {a, c}: overlap 1/2
    assert top_k_overlap(np.array([3, 2, 1.0]), np.array([3, 1, 2.0]), 2) == 0.5


def test_separable_pairs_sign_test_by_hand() -> None:
    # prompts p, q: x beats y on 6 prompts (one pair item each) and never loses: sign test
    # p = 2 * 0.5^6 = 0.03125; a third system z meets nobody on a shared prompt with x... it plays y once
    rows = [(f"{k}", "x", "y", "A") for k in range(6)] + [("9", "y", "z", "tie")]
    df = frame(rows).assign(prompt=[f"p{k}" for k in range(6)] + ["p0"])
    pairs = separable_pairs(tournament(df)).set_index(["system_x", "system_y"])
    xy = pairs.loc[("x", "y")]
    assert (xy["n_prompts"], xy["n_x_better"], xy["n_y_better"]) == (6, 6, 0)
    assert xy["p_value"] == pytest.approx(2 * 0.5 ** 6)
    # on p0 y has share (0 + 1/2) / 2 = 1/4 and z 1/2: z better on the one shared prompt: p = 1
    yz = pairs.loc[("y", "z")]
    assert (yz["n_prompts"], yz["n_x_better"], yz["n_y_better"], yz["p_value"]) == (1, 0, 1, 1.0)
    # Holm over the 3 pairs that shared prompts (x-z shares p0): the smallest p times 3 = 0.09375
    assert xy["p_holm"] == pytest.approx(3 * 2 * 0.5 ** 6) and not xy["separable"]
    sep = pd.DataFrame({"system_x": ["a", "a", "b"], "system_y": ["b", "c", "c"], "separable": [False, True, True]})
    assert separable_tiers(["a", "b", "c"], sep) == (("a", "b"), ("c",))


def test_ranking_stability_catches_an_order_driven_judge() -> None:
    fair = JudgeProfile("fair", "p", skill=1.5)
    biased = JudgeProfile("biased", "p", skill=0.2, position_bias=2.0)
    df = tournament_frame(n_systems=6, n_prompts=80, judges=[fair, biased], seed=4)
    systems = tuple(sorted(set(df["system_a"].astype(str))))
    v = {f"{j}:{o}": tournament(df[(df["judge"] == j) & (df["order"] == o)], systems=systems)
         for j in ("fair", "biased") for o in ("AB", "BA")}
    s = ranking_stability(v, [("fair:AB", "fair:BA"), ("biased:AB", "biased:BA")], n_bootstrap=100, seed=1)
    fair_row, biased_row = s.iloc[0], s.iloc[1]
    assert fair_row["tau"] > 0.7 and fair_row["tau_lo"] <= fair_row["tau"] <= fair_row["tau_hi"]
    assert biased_row["tau"] < fair_row["tau"] and biased_row["p_top_changes"] > fair_row["p_top_changes"]
    with pytest.raises(ValueError, match="same systems"):
        ranking_stability({"a": v["fair:AB"], "b": tournament(frame([("1", "x", "y", "A")]))}, [("a", "b")])


def test_common_opponent_and_unit_preferences() -> None:
    df = tournament_frame(n_systems=4, n_prompts=5, baseline=True, seed=0)
    t = tournament(df)
    assert common_opponent(t) == "sys00"
    prefs = unit_preferences(t, "sys00")
    # every unit has two matches (AB, BA); a preference is the mean of two scores in {0, 1/2, 1}
    assert len(prefs) == 15 and set(prefs["n"]) == {2} and prefs["preference"].isin([0, 0.5, 1]).all()
    assert common_opponent(tournament(tournament_frame(n_systems=4, n_prompts=5, seed=0))) is None
