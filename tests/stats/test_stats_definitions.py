"""Published figure definitions (stats.definitions): hand-worked values, working in the comments."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import reliability
from verdictlab.stats.definitions import (
    DEFINITION_COLUMNS,
    accuracy_mean_of_orders,
    accuracy_per_order,
    agreement_both_orders,
    consistency_both_orders,
    pair_verdict_agreement,
    positional_agreement,
    score_ratio,
    vote_accuracy,
    win_rate,
)
from verdictlab.stats.intervals import wilson_interval
from verdictlab.store import JUDGMENT_COLUMN_NAMES

CODE = {"A": "A", "B": "B", "T": "tie", "-": None}


def frame(spec: dict[str, tuple[str | None, str, str]], **extra: list) -> pd.DataFrame:
    """spec[item] = (label, AB verdicts, BA verdicts), one char per repetition: A, B, T (tie), - (unparsed);
    an empty string = that order was not judged."""
    rows = [(i, o, r, CODE[ch], lab) for i, (lab, ab, ba) in spec.items()
            for o, s in (("AB", ab), ("BA", ba)) for r, ch in enumerate(s)]
    df = pd.DataFrame(rows, columns=["item_id", "order", "rep", "verdict", "label"])
    for k, v in {"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "step": ""}.items():
        df[k] = v
    df["parse_status"] = np.where(df["verdict"].isna(), "failed", "ok")
    for k, v in extra.items():
        df[k] = v
    for c in JUDGMENT_COLUMN_NAMES:
        if c not in df.columns:
            df[c] = None
    return df[[*JUDGMENT_COLUMN_NAMES, *(k for k in extra if k not in JUDGMENT_COLUMN_NAMES)]]


# One repetition per order.  Pair: label | AB | BA
EXAMPLE = frame({
    "1": ("A", "A", "A"),       # both right, consistent
    "2": ("B", "A", "B"),       # a flip, right in BA
    "3": ("tie", "T", "T"),     # tie label, tie verdict twice
    "4": ("tie", "A", "A"),     # tie label, consistent and wrong
    "5": ("A", "-", "A"),       # AB unparsed, BA right
    "6": ("B", "-", "-"),       # both orders unparsed
    "7": ("B", "B", "T"),       # AB right, BA a tie
    "8": (None, "A", "B"),      # unlabelled flip
})


def row(out: pd.DataFrame, variant: str = "") -> pd.Series:
    assert list(out.columns[-len(DEFINITION_COLUMNS):]) == list(DEFINITION_COLUMNS)
    return out[out["variant"] == variant].iloc[0]


def test_agreement_both_orders_counts_a_pair_only_when_both_orders_name_the_label() -> None:
    # labelled pairs judged in both orders: 1-7 (8 has no label) -> N = 7
    # right in both orders: 1 (A, A = A), 3 (tie, tie = tie); 5 has an unparsed order (wrong), 6 both
    # -> 2/7
    r = row(agreement_both_orders(EXAMPLE))
    assert (r["value"], r["n"], r["successes"], r["n_left_out"]) == (pytest.approx(2 / 7), 7, 2, 1)
    w = wilson_interval(2, 7)
    assert (r["lo"], r["hi"], r["interval"]) == (pytest.approx(w.low), pytest.approx(w.high), "wilson")


def test_consistency_both_orders_follows_the_cell_policy() -> None:
    # exclude: pair 5 keeps BA only, pair 6 nothing -> pairs 1 2 3 4 7 8; same verdict: 1 (A A), 3 (tie tie),
    # 4 (A A) -> 3/6
    ex = row(consistency_both_orders(EXAMPLE, policy=FigurePolicy(unparsed="exclude")))
    assert (ex["value"], ex["n"], ex["n_left_out"]) == (pytest.approx(0.5), 6, 2)
    # wrong: all 8 pairs; 6 is unparsed = unparsed -> 1 3 4 6 -> 4/8
    wr = row(consistency_both_orders(EXAMPLE, policy=FigurePolicy(unparsed="wrong")))
    assert (wr["value"], wr["n"]) == (pytest.approx(0.5), 8)
    for policy in ("exclude", "wrong"):
        rel = reliability(EXAMPLE, policy=FigurePolicy(unparsed=policy, n_bootstrap=0)).iloc[0]
        got = row(consistency_both_orders(EXAMPLE, policy=FigurePolicy(unparsed=policy)))
        assert got["value"] == pytest.approx(1 - rel["phi"]) and got["n"] == rel["n_order_pairs"]


def test_accuracy_per_order_three_classes_and_without_tie_labels() -> None:
    # 3 classes, labelled pairs 1-7 in each order (N = 7):
    #   AB right: 1 (A), 3 (tie), 7 (B) -> 3/7;  BA right: 1 (A), 2 (B), 3 (tie), 5 (A) -> 4/7
    out = accuracy_per_order(EXAMPLE, ties=True)
    assert len(out) == 2
    ab, ba = row(out, "AB"), row(out, "BA")
    assert (ab["value"], ab["n"], ab["n_left_out"]) == (pytest.approx(3 / 7), 7, 1)
    assert (ba["value"], ba["n"]) == (pytest.approx(4 / 7), 7)
    # tie labels left out: pairs 1 2 5 6 7 (N = 5); AB right 1, 7 -> 2/5; BA right 1, 2, 5 -> 3/5;
    # left out: 3, 4 (tie labels), 8 (no label)
    out = accuracy_per_order(EXAMPLE, ties=False)
    ab, ba = row(out, "AB"), row(out, "BA")
    assert (ab["value"], ab["n"], ab["n_left_out"]) == (pytest.approx(2 / 5), 5, 3)
    assert ba["value"] == pytest.approx(3 / 5)


def test_pair_verdict_agreement_with_and_without_ties() -> None:
    # pair verdict (common verdict, else tie; both unparsed = error): 1 A, 2 tie, 3 tie, 4 A, 5 tie,
    # 6 error, 7 tie, 8 tie
    # with ties, labelled pairs 1-7: 1 (A = A), 3 (tie = tie) -> 2/7
    w = row(pair_verdict_agreement(EXAMPLE, ties=True))
    assert (w["value"], w["n"]) == (pytest.approx(2 / 7), 7)
    # without ties: label not tie and pair verdict not tie -> 1 (A/A), 6 (B/error) -> 1/2; the error vote
    # stays in the denominator, wrong
    wo = row(pair_verdict_agreement(EXAMPLE, ties=False))
    assert (wo["value"], wo["n"], wo["n_left_out"]) == (pytest.approx(1 / 2), 2, 6)


def test_vote_accuracy_lets_one_order_decide_when_the_other_abstains() -> None:
    # votes: 1 A+A -> A; 2 A+B -> tie; 5 unparsed abstains + A -> A; 6 -> tie; 7 B + tie -> B
    # pairs labelled A/B judged in both orders: 1 2 5 6 7 -> right 1, 5, 7 -> 3/5
    r = row(vote_accuracy(EXAMPLE))
    assert (r["value"], r["n"], r["n_left_out"]) == (pytest.approx(3 / 5), 5, 3)


def test_accuracy_mean_of_orders_is_a_under_unparsed_wrong() -> None:
    # units of pairs labelled A/B: 1 2 5 6 7 -> 10; right: 1AB 1BA 2BA 5BA 7AB -> 5/10
    r = row(accuracy_mean_of_orders(EXAMPLE, policy=FigurePolicy(n_bootstrap=300, seed=1)))
    assert (r["value"], r["n"], r["successes"], r["n_left_out"]) == (pytest.approx(0.5), 10, 5, 6)
    assert r["lo"] <= 0.5 <= r["hi"] and r["interval"] == "bootstrap over pairs"
    assert r["value"] == pytest.approx(reliability(EXAMPLE, policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]["A"])


def test_positional_agreement_counts_null_equal_null() -> None:
    # every pair has both orders under "wrong"; equal: 1 (A A), 3 (tie tie), 4 (A A), 6 (null null) -> 4/8
    r = row(positional_agreement(EXAMPLE))
    assert (r["value"], r["n"]) == (pytest.approx(0.5), 8)
    assert r["value"] == pytest.approx(1 - reliability(EXAMPLE, policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]["phi"])


def test_repetitions_use_the_modal_verdict_and_a_split_is_no_verdict() -> None:
    # pair x: AB AAB (mode A), BA AB (split: no verdict); pair y: AB TT-, BA T (modes tie, tie under
    # "wrong": T T - has mode tie)
    df = frame({"x": ("A", "AAB", "AB"), "y": ("tie", "TT-", "T")})
    # both orders right: y only (x's BA is split) -> 1/2
    assert row(agreement_both_orders(df))["value"] == pytest.approx(1 / 2)
    # split equals nothing: x inconsistent; y consistent -> 1/2
    assert row(positional_agreement(df))["value"] == pytest.approx(1 / 2)
    # per order: AB right x, y -> 2/2; BA right y -> 1/2
    out = accuracy_per_order(df)
    assert (row(out, "AB")["value"], row(out, "BA")["value"]) == (1.0, 0.5)


def test_a_pair_judged_in_one_order_leaves_the_both_order_denominators() -> None:
    df = frame({"x": ("A", "A", ""), "y": ("B", "B", "B")})
    assert (row(agreement_both_orders(df))["n"], row(agreement_both_orders(df))["n_left_out"]) == (1, 1)
    assert row(accuracy_per_order(df), "AB")["n"] == 2 and row(accuracy_per_order(df), "BA")["n"] == 1


def test_win_rate_soft_and_discrete_as_alpaca_eval_counts() -> None:
    # P(B) = 1 - p_a per judgment; a pair's preference is the mean of its judgments':
    #   p: AB .8, BA .6 -> .2, .4 -> .3;   q: AB .1 -> .9;   r: AB .5 -> .5;   s: no p_a, verdict B
    df = frame({"p": ("A", "A", "A"), "q": ("B", "B", ""), "r": ("A", "T", ""), "s": ("B", "B", "")},
               p_a=[0.8, 0.6, 0.1, 0.5, None])
    soft = row(win_rate(df), "B over A")
    # soft: pairs p q r -> (.3 + .9 + .5)/3 = 1.7/3; deviations -.2667 .3333 -.0667 -> SS = .186667,
    # var = .093333, SE = sqrt(.093333/3) = .17638; s has no preference -> left out
    assert soft["value"] == pytest.approx(1.7 / 3)
    assert soft["standard_error"] == pytest.approx(np.sqrt(0.186667 / 2 / 3), abs=1e-5)
    assert soft["standard_error"] == pytest.approx(pd.Series([0.3, 0.9, 0.5]).sem())   # AlpacaEval's sem
    assert (soft["n"], soft["n_left_out"]) == (3, 1)
    assert soft["lo"] <= 1.7 / 3 <= soft["hi"] and soft["interval"] == "bootstrap over pairs"
    # discrete: p: .2 -> 0, .4 -> 0 -> 0;  q: .9 -> 1;  r: .5 -> draw 1/2;  s: verdict B -> 1
    # -> (0 + 1 + .5 + 1)/4 = .625; SE = sem(0, 1, .5, 1) = sqrt(.6875/3/4) = .239357
    disc = row(win_rate(df, discrete=True), "B over A")
    assert (disc["value"], disc["n"]) == (pytest.approx(0.625), 4)
    assert disc["standard_error"] == pytest.approx(np.sqrt(0.6875 / 3 / 4))
    # side A is the mirror image
    assert row(win_rate(df, side="A"), "A over B")["value"] == pytest.approx(1 - 1.7 / 3)


def test_win_rate_refuses_a_probability_outside_zero_one() -> None:
    df = frame({"p": ("A", "A", "")}, p_a=[1.5])
    with pytest.raises(ValueError, match="row 0 has p_a 1.5"):
        win_rate(df)
    with pytest.raises(ValueError, match="side must be one of"):
        win_rate(df, side="C")


def test_score_ratio_pools_the_scores_of_both_orders() -> None:
    # p: AB (a 8, b 6), BA (a 7, b 7); q: AB (a 5, b 9); r: unread -> dropped
    # ratio = (6 + 7 + 9) / (8 + 7 + 5) = 22/20 = 1.1 over 3 scored judgments
    df = frame({"p": ("A", "A", "T"), "q": ("B", "B", ""), "r": ("A", "-", "")},
               score_a=[8, 7, 5, None], score_b=[6, 7, 9, None])
    r = row(score_ratio(df, policy=FigurePolicy(n_bootstrap=200, seed=2)), "B / A")
    assert (r["value"], r["n"], r["n_left_out"]) == (pytest.approx(1.1), 3, 1)
    assert r["lo"] <= r["hi"] and r["interval"] == "bootstrap over pairs"
    assert row(score_ratio(df, side="A", policy=FigurePolicy(n_bootstrap=0)), "A / B")["value"] == pytest.approx(20 / 22)


def test_score_ratio_refuses_the_parse_failure_marker_and_needs_score_columns() -> None:
    df = frame({"p": ("A", "A", "")}, score_a=[-1], score_b=[-1])
    with pytest.raises(ValueError, match="row 0 has scores"):
        score_ratio(df)
    with pytest.raises(ValueError, match="lacks column"):
        score_ratio(frame({"p": ("A", "A", "")}))


def test_definitions_are_per_cell_and_nan_without_a_denominator() -> None:
    two = pd.concat([EXAMPLE, EXAMPLE.assign(judge="k", label=None)], ignore_index=True)
    out = agreement_both_orders(two)
    assert list(out["judge"]) == ["j", "k"]
    assert out.loc[0, "value"] == pytest.approx(2 / 7)
    assert out.loc[1, "n"] == 0 and np.isnan(out.loc[1, "value"]) and np.isnan(out.loc[1, "lo"])
    assert agreement_both_orders(EXAMPLE.iloc[:0]).empty


def test_left_out_counts_every_pair_and_unit_outside_the_figure() -> None:
    """phi and consistency-both-orders (= 1 - phi, same N) reported 1 and 2 pairs left out on the same
    pairs: phi counted the pairs judged in one order but not those with nothing parsed in either.

    Three pairs, label A, one repetition, unparsed="exclude":
      p1: AB A, BA A        both orders parsed            -> in phi's N (agree)
      p2: AB A, BA -        BA unparsed: one order left   -> left out (one order)
      p3: AB -, BA -        nothing parsed                -> left out (dropped)
    phi: N 1, left out 2 (p2, p3); consistency-both-orders: N 1, left out 2.
    Units: 6 judged; 3 kept (p1 AB, p1 BA, p2 AB), 3 dropped (p2 BA, p3 AB, p3 BA).
    C: N 3 + left 3 = 6.  A and T: 3 labelled units, left 3 (the dropped).  T_joint: 2 units of two-order
    labelled pairs (p1's), left 6 - 2 = 4."""
    from verdictlab.stats import reliability
    from verdictlab.stats.definitions import consistency_both_orders, reliability_figure

    rows = [("p1", "AB", "A"), ("p1", "BA", "A"), ("p2", "AB", "A"), ("p2", "BA", None), ("p3", "AB", None),
            ("p3", "BA", None)]
    df = pd.DataFrame([{"judge": "j", "protocol": "p", "dataset": "d", "temperature": 0.0, "decoding": "free",
                        "item_id": i, "order": o, "verdict": v, "label": "A", "rep": 0, "step": ""}
                       for i, o, v in rows])
    rel = reliability(df, policy=FigurePolicy(n_bootstrap=0))
    by = ("judge", "protocol", "dataset", "temperature", "decoding")
    got = {f: tuple(reliability_figure(rel, f, by=by)[["n", "n_left_out"]].iloc[0]) for f in
           ("C", "phi", "A", "T", "T_joint")}
    assert got == {"C": (3, 3), "phi": (1, 2), "A": (3, 3), "T": (3, 3), "T_joint": (2, 4)}
    cons = consistency_both_orders(df)
    assert tuple(cons[["n", "n_left_out"]].iloc[0]) == got["phi"]
    assert int(rel["n_pairs_dropped"].iloc[0]) == 1 and int(rel["n_single_order_pairs"].iloc[0]) == 1
