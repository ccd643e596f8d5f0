"""Reliability figures (docs/definitions.md, "verdictlab's own figures"): hand-worked values, policies, identities, LLMBar."""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import accuracy_ceiling, reliability, trust_rate
from verdictlab.store import JUDGMENT_COLUMN_NAMES


def frame(rows: list[tuple], **const: object) -> pd.DataFrame:
    """rows: (item_id, order, rep, verdict, label) -> a judgments frame with every store column."""
    df = pd.DataFrame(rows, columns=["item_id", "order", "rep", "verdict", "label"])
    base = {"judge": "j", "protocol": "direct", "dataset": "d", "temperature": 0.0, "step": ""}
    base.update(const)
    for k, v in base.items():
        df[k] = v
    df["parse_status"] = np.where(df["verdict"].isna(), "failed", "ok")
    for c in JUDGMENT_COLUMN_NAMES:
        if c not in df.columns:
            df[c] = None
    return df[list(JUDGMENT_COLUMN_NAMES)]


def units(spec: dict[tuple[str, str], str], labels: dict[str, str | None]) -> list[tuple]:
    """spec[(item, order)] = verdict string, one char per rep ('A', 'B', 'T' tie, '-' unparsed)."""
    code = {"A": "A", "B": "B", "T": "tie", "-": None}
    return [(i, o, r, code[ch], labels[i]) for (i, o), s in spec.items() for r, ch in enumerate(s)]


EXAMPLE = units({("1", "AB"): "AAA", ("1", "BA"): "AAB", ("2", "AB"): "AAA", ("2", "BA"): "BB-"},
                {"1": "A", "2": "B"})


def test_hand_example_exclude() -> None:
    # Units (exclude drops the one unparsed verdict of (2,BA)):
    #   (1,AB) AAA  N=1 share 3/3 mode A   (1,BA) AAB  N=0 share 2/3 mode A
    #   (2,AB) AAA  N=1 share 1   mode A   (2,BA) BB   N=1 share 2/2 mode B
    # C = 3/4; self-consistency = (1 + 2/3 + 1 + 1)/4 = 11/12
    # P(1) = 1 (A,A), P(2) = 0 (A,B) -> phi = 1/2
    # correct: (1,AB) (1,BA) (2,BA) -> A = 3/4; decisive pair 1 is right -> A_dec = 1
    # T = 3/4 * (3/4 - 1/2 * 1/2) = 0.375; A_max = 1 - 1/2 * 1/2 = 0.75; gap = 0
    # T_joint = mean N*P*correct = (1 + 0 + 0 + 0)/4 = 0.25
    r = reliability(frame(EXAMPLE), policy=FigurePolicy(n_bootstrap=200)).iloc[0]
    assert r["C"] == pytest.approx(0.75)
    assert r["self_consistency"] == pytest.approx(11 / 12)
    assert r["phi"] == pytest.approx(0.5)
    assert r["A"] == pytest.approx(0.75)
    assert r["A_dec"] == pytest.approx(1.0)
    assert r["T"] == pytest.approx(0.375)
    assert r["A_max"] == pytest.approx(0.75)
    assert r["capability_gap"] == pytest.approx(0.0)
    assert r["T_joint"] == pytest.approx(0.25)
    assert (r["n_pairs"], r["n_units"], r["n_judgments"], r["n_unparsed"]) == (2, 4, 12, 1)
    assert (r["n_order_pairs"], r["n_decisive"], r["repetitions"]) == (2, 1, 3)
    assert r["parse_failure_rate"] == pytest.approx(1 / 12)
    assert r["q"] == 0.5 and r["unparsed_policy"] == "exclude"
    assert r["C_lo"] <= r["C"] <= r["C_hi"]
    assert r["T_lo"] <= r["T"] <= r["T_hi"]
    assert "step" not in r.index  # no non-empty steps


def test_hand_example_wrong() -> None:
    # Under "wrong" (2,BA) = B,B,unparsed: "unparsed" is a third value, unlike B -> N = 0, mode B
    # (2 of 3), share 2/3 (as under exclude it was 2/2 = 1).
    # C = (1 + 0 + 1 + 0)/4 = 1/2; phi and A unchanged (1/2, 3/4); T = 1/2 * (3/4 - 1/4) = 0.25
    # self-consistency = (1 + 2/3 + 1 + 2/3)/4 = 5/6
    r = reliability(frame(EXAMPLE), policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]
    assert (r["C"], r["phi"], r["A"], r["T"]) == pytest.approx((0.5, 0.5, 0.75, 0.25))
    assert r["self_consistency"] == pytest.approx(5 / 6)
    assert np.isnan(r["T_lo"])  # no bootstrap asked


def test_unit_without_parsed_verdict_dropped_and_counted() -> None:
    # (2,BA) all unparsed: exclude drops the unit -> pair 2 is single-order: counts for C and A, not phi.
    # units kept: (1,AB) AA N=1, (1,BA) AA N=1, (2,AB) BB N=1 -> C = 1
    # phi over pair 1 only: P=1 -> phi = 0; A = (1 + 1 + 1)/3 = 1 (labels A, A, B)
    rows = units({("1", "AB"): "AA", ("1", "BA"): "AA", ("2", "AB"): "BB", ("2", "BA"): "--"},
                 {"1": "A", "2": "B"})
    r = reliability(frame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert (r["n_units"], r["n_units_dropped"], r["n_single_order_pairs"], r["n_order_pairs"]) == (3, 1, 1, 1)
    assert (r["C"], r["phi"], r["A"]) == pytest.approx((1.0, 0.0, 1.0))
    # wrong: the unit stays with mode "unparsed"; its two unparsed verdicts agree (N = 1) but it is
    # wrong, and pair 2 (B vs unparsed) is not invariant.
    # C = 4/4 = 1, phi = 1/2, A = 3/4, T = 1 * (3/4 - 1/2 * 1/2) = 0.5
    w = reliability(frame(rows), policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]
    assert (w["C"], w["phi"], w["A"], w["T"]) == pytest.approx((1.0, 0.5, 0.75, 0.5))
    assert (w["n_units"], w["n_units_dropped"], w["n_order_pairs"]) == (4, 0, 2)


def test_wrong_policy_unparsed_is_its_own_value() -> None:
    # LLMBar's evaluate.py counts winner None == None as positional agreement, and None never equals
    # the label.  R = 2, labels 1:A 2:B 3:A 4:B ('-' = unparsed):
    #   (1,AB) --  N=1 mode U share 1   (1,BA) --  N=1 mode U share 1   P(1) = 1 (U = U), both wrong
    #   (2,AB) BB  N=1 mode B share 1   (2,BA) B-  split (1 B, 1 U): N=0 share 1/2   P(2) = 0
    #   (3,AB) AA  N=1 mode A share 1   (3,BA) --  N=1 mode U share 1   P(3) = 0 (A vs U)
    #   (4,AB) BB  N=1 mode B           (4,BA) BB  N=1 mode B           P(4) = 1, both right
    # C = 7/8; self-consistency = (7 + 1/2)/8 = 15/16; phi = 2/4 = 1/2
    # correct units: (2,AB) (3,AB) (4,AB) (4,BA) -> A = 4/8 = 1/2
    # decisive labelled pairs 1 and 4: A_dec = (0 + 0 + 1 + 1)/4 = 1/2; n_decisive = 2
    # no tie verdicts -> q = 1/2: T = 7/8 * (1/2 - 1/2 * 1/2) = 7/32
    # T_joint = mean over the 8 units of N*P*correct = only pair 4's two units -> 2/8 = 1/4
    rows = units({("1", "AB"): "--", ("1", "BA"): "--", ("2", "AB"): "BB", ("2", "BA"): "B-",
                  ("3", "AB"): "AA", ("3", "BA"): "--", ("4", "AB"): "BB", ("4", "BA"): "BB"},
                 {"1": "A", "2": "B", "3": "A", "4": "B"})
    w = reliability(frame(rows), policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]
    assert (w["C"], w["self_consistency"], w["phi"], w["A"]) == pytest.approx((7 / 8, 15 / 16, 0.5, 0.5))
    assert (w["A_dec"], w["n_decisive"], w["T"], w["T_joint"]) == pytest.approx((0.5, 2, 7 / 32, 0.25))
    assert (w["n_units"], w["n_split_modes"], w["n_unparsed"], w["n_judgments"]) == (8, 1, 7, 16)
    # exclude on the same rows: pair 1 has no parsed verdict (2 units dropped), (3,BA) dropped too;
    # kept (2,AB) BB, (2,BA) B, (3,AB) AA, (4,AB) BB, (4,BA) BB: all N = 1 -> C = 1;
    # two-order pairs 2 and 4 both invariant -> phi = 0; all 5 units right -> A = 1
    x = reliability(frame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert (x["C"], x["phi"], x["A"]) == pytest.approx((1.0, 0.0, 1.0))
    assert (x["n_units"], x["n_units_dropped"], x["n_order_pairs"]) == (5, 3, 2)


def test_split_mode_is_undefined() -> None:
    # R = 2: (1,AB) = A,B is a split mode -> N=0, not invariant, not correct.
    # (1,BA) = AA. C = 1/2, phi = 1 (pair 1 not invariant), A = (0 + 1)/2 = 1/2, n_split_modes = 1
    rows = units({("1", "AB"): "AB", ("1", "BA"): "AA"}, {"1": "A"})
    r = reliability(frame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert (r["C"], r["phi"], r["A"], r["n_split_modes"]) == pytest.approx((0.5, 1.0, 0.5, 1))
    assert r["self_consistency"] == pytest.approx((0.5 + 1.0) / 2)


def test_tie_label_counts_for_c_and_phi_only_and_q_measured_with_tie_verdicts() -> None:
    # pair 1 label A: AB=A, BA=A (decisive, right); pair 2 label B: AB=tie, BA=B (undecisive);
    # pair 3 label tie: AB=A, BA=B (counts for C and phi only).
    # C not measured (R=1: NaN; T is then its upper bound A - phi q). phi = 2/3. Labelled units: 1AB ok, 1BA ok, 2AB wrong, 2BA ok -> A = 3/4
    # judge gave a tie -> q measured on undecisive labelled pairs: pair 2 units: 0 + 1 -> q = 1/2
    # A_dec = 1; T = 1 * (3/4 - 2/3 * 1/2) = 5/12
    rows = units({("1", "AB"): "A", ("1", "BA"): "A", ("2", "AB"): "T", ("2", "BA"): "B",
                  ("3", "AB"): "A", ("3", "BA"): "B"}, {"1": "A", "2": "B", "3": "tie"})
    r = reliability(frame(rows), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert np.isnan(r["C"])
    assert (r["phi"], r["A"], r["A_dec"]) == pytest.approx((2 / 3, 0.75, 1.0))
    assert r["q"] == pytest.approx(0.5) and bool(r["q_measured"])
    assert r["T"] == pytest.approx(5 / 12)
    assert (r["n_pairs"], r["n_labelled_pairs"], r["n_labelled_units"]) == (3, 2, 4)
    assert r["tie_rate"] == pytest.approx(1 / 6)
    # now make pair 2's BA a tie too: undecisive? no -- tie,tie is invariant -> decisive and wrong.
    # make pair 2 = (tie, A): undecisive, both wrong -> q = 0; A = 2/4; T = 1*(1/2 - 2/3*0) = 1/2
    rows2 = [r_ if r_[:2] != ("2", "BA") else ("2", "BA", 0, "A", "B") for r_ in rows]
    r2 = reliability(frame(rows2), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert (r2["q"], r2["A"], r2["T"]) == pytest.approx((0.0, 0.5, 0.5))
    # a float q overrides: q = 0.5 -> T = 1/2 - 2/3*1/2 = 1/6
    r3 = reliability(frame(rows2), q=0.5, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert r3["T"] == pytest.approx(1 / 6)


def test_cells_and_steps() -> None:
    a = frame(EXAMPLE, judge="j1")
    b = frame(EXAMPLE, judge="j2", temperature=0.7)
    out = reliability(pd.concat([a, b]), policy=FigurePolicy(n_bootstrap=0))
    assert list(out["judge"]) == ["j1", "j2"] and list(out["temperature"]) == [0.0, 0.7]
    assert out["T"].tolist() == pytest.approx([0.375, 0.375])
    s = pd.concat([frame(EXAMPLE, step="c1"), frame(EXAMPLE, step="c2")])
    out = reliability(s, policy=FigurePolicy(n_bootstrap=0))
    assert list(out["step"]) == ["c1", "c2"] and len(out) == 2
    # a NULL step is the same as '' (one aggregate cell, not two)
    agg = pd.concat([frame(EXAMPLE[:6], step=None), frame(EXAMPLE[6:], step=""), frame(EXAMPLE, step="c1")])
    out = reliability(agg, policy=FigurePolicy(n_bootstrap=0))
    assert list(out["step"]) == ["", "c1"] and out["T"].tolist() == pytest.approx([0.375, 0.375])


def test_bad_values_raise() -> None:
    df = frame(EXAMPLE)
    df.loc[0, "verdict"] = "C"
    with pytest.raises(ValueError, match="row 0"):
        reliability(df)
    with pytest.raises(ValueError, match="unparsed"):
        reliability(frame(EXAMPLE), policy=FigurePolicy(unparsed="drop"))


def test_scalar_helpers() -> None:
    # paper Table 1, Gemini-2.0-Flash VF-XML JudgeBench: C=1.00, phi=0.98, A=0.51 -> T = 0.51 - 0.49 = 0.02
    assert trust_rate(1.0, 0.51, 0.98) == pytest.approx(0.02)
    assert accuracy_ceiling(0.98) == pytest.approx(0.51)
    assert accuracy_ceiling(0.4, q=0.25) == pytest.approx(1 - 0.4 * 0.75)


def _random_frame(rng: np.random.Generator, n_items: int, R: int, p_tie: float = 0.0,
                  p_none: float = 0.0, p_label_tie: float = 0.0) -> pd.DataFrame:
    rows = []
    labels = {str(i): ("tie" if rng.random() < p_label_tie else rng.choice(["A", "B"]))
              for i in range(n_items)}
    bias = rng.random(n_items)
    for i, o, r in product(range(n_items), ("AB", "BA"), range(R)):
        u = rng.random()
        v = "A" if rng.random() < bias[i] else "B"
        if u < p_tie:
            v = "tie"
        elif u < p_tie + p_none:
            v = None
        rows.append((str(i), o, r, v, labels[str(i)]))
    return frame(rows)


def _naive(df: pd.DataFrame, unparsed: str) -> dict[str, float]:
    """Straight transcription of docs/definitions.md with Python loops (reference for the vectorised code)."""
    modes, Ns, lab = {}, {}, {}
    for (i, o), g in df.groupby(["item_id", "order"]):
        vs = [v if isinstance(v, str) else "<unparsed>" for v in g["verdict"]]
        if unparsed == "exclude":
            vs = [v for v in vs if v != "<unparsed>"]
            if not vs:
                continue
        cnt = pd.Series(vs).value_counts()
        top = cnt[cnt == cnt.max()]
        modes[(i, o)] = top.index[0] if len(top) == 1 else None
        Ns[(i, o)] = int(len(cnt) == 1)  # under "wrong", "<unparsed>" is one more value
        lab[i] = g["label"].iloc[0]
    C = np.mean(list(Ns.values()))
    items = {i for i, _ in modes}
    P = {i: int(modes[(i, "AB")] is not None and modes[(i, "AB")] == modes[(i, "BA")])
         for i in items if (i, "AB") in modes and (i, "BA") in modes}
    phi = 1 - np.mean(list(P.values()))
    corr = [int(modes[u] == lab[u[0]]) for u in modes if lab[u[0]] in ("A", "B")]
    A = np.mean(corr)
    # one repetition: C is not measured (NaN) and T is its upper bound A - phi/2
    R = int(df["rep"].nunique())
    return {"C": C if R > 1 else float("nan"), "phi": phi, "A": A, "T": (C if R > 1 else 1.0) * (A - phi / 2)}


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
@pytest.mark.parametrize("R", [1, 2, 3])
def test_vectorised_matches_naive_loops(unparsed: str, R: int) -> None:
    rng = np.random.default_rng(R)
    df = _random_frame(rng, 40, R, p_none=0.15, p_label_tie=0.1)
    r = reliability(df, policy=FigurePolicy(unparsed=unparsed, n_bootstrap=0)).iloc[0]
    ref = _naive(df, unparsed)
    for k, v in ref.items():
        assert r[k] == pytest.approx(v, abs=1e-12, nan_ok=True), k


def test_identity_A_equals_mix_of_decisive_and_q() -> None:
    # binary verdicts, all labelled, both orders, odd R (no split modes):
    # every undecisive pair has one right and one wrong mode -> A = (1 - phi) A_dec + phi / 2
    for seed in range(20):
        rng = np.random.default_rng(seed)
        df = _random_frame(rng, int(rng.integers(5, 60)), int(rng.choice([1, 3, 5])))
        r = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
        assert r["n_split_modes"] == 0
        a_dec = 0.0 if r["n_decisive"] == 0 else r["A_dec"]
        assert r["A"] == pytest.approx((1 - r["phi"]) * a_dec + r["phi"] * 0.5, abs=1e-12)
        assert r["A"] <= r["A_max"] + 1e-12


def test_bootstrap_reproducible_and_brackets() -> None:
    df = _random_frame(np.random.default_rng(7), 80, 3)
    a = reliability(df, policy=FigurePolicy(n_bootstrap=300, seed=3))
    b = reliability(df, policy=FigurePolicy(n_bootstrap=300, seed=3))
    assert a["T_lo"].iloc[0] == b["T_lo"].iloc[0]
    assert a["T_lo"].iloc[0] < a["T"].iloc[0] < a["T_hi"].iloc[0]
    for k in ("C", "phi", "A"):
        assert a[f"{k}_boot_lo"].iloc[0] <= a[k].iloc[0] <= a[f"{k}_boot_hi"].iloc[0]
    # the pair bootstrap of C is close to its Wilson interval at this size (both ~ +-0.06)
    assert a["C_boot_hi"].iloc[0] - a["C_boot_lo"].iloc[0] == pytest.approx(
        a["C_hi"].iloc[0] - a["C_lo"].iloc[0], abs=0.05)


def test_output_has_the_contract_columns() -> None:
    from verdictlab.stats import RELIABILITY_COLUMNS

    out = reliability(frame(EXAMPLE), policy=FigurePolicy(n_bootstrap=10))
    assert list(out.columns[:4]) == ["judge", "protocol", "dataset", "temperature"]
    assert set(RELIABILITY_COLUMNS) <= set(out.columns)


def llmbar_frame(path) -> pd.DataFrame:
    data = json.loads(path.read_text())
    to_v = {"1": "A", "2": "B", None: None}
    rows = []
    for k, rec in enumerate(data):
        res = rec["results"][-1]
        lab = {1: "A", 2: "B"}[rec["label"]]
        rows.append((str(k), "AB", 0, to_v[res["swap = False"]["winner"]], lab))
        rows.append((str(k), "BA", 0, to_v[res["swap = True"]["winner"]], lab))
    return frame(rows, dataset="llmbar-natural")


@pytest.mark.parametrize("name,acc,agree", [
    # published per-run figures (accuracy over both orders, null wrong; positional agreement)
    ("Natural_ChatGPT_CoT", 0.740, 0.64),
    ("Natural_GPT-4_Vanilla", 0.955, 0.95),
])
def test_llmbar_published_figures(shared_data, name: str, acc: float, agree: float) -> None:
    path = shared_data / "samples" / "llmbar_results" / f"{name}.result.json"
    # independent recount from the file, the way the source computes them
    data = json.loads(path.read_text())
    res = [(r["results"][-1]["swap = False"]["winner"], r["results"][-1]["swap = True"]["winner"],
            str(r["label"])) for r in data]
    assert np.mean([(a == lab) + (b == lab) for a, b, lab in res]) / 2 == pytest.approx(acc)
    assert np.mean([a == b for a, b, _ in res]) == pytest.approx(agree)
    r = reliability(llmbar_frame(path), policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]
    assert r["A"] == pytest.approx(acc, abs=1e-12)
    assert 1 - r["phi"] == pytest.approx(agree, abs=1e-12)
    # R = 1: a unit of one verdict always agrees with itself, so C is not measured (NaN, "one repetition")
    assert np.isnan(r["C"]) and r["n_units"] == 200


def test_repetitions_count_the_distinct_reps_of_each_cell() -> None:
    # cell t=0: reps 0, 1, 2 (rep 1 twice) -> 3; cell t=1: reps 0 and 5 -> 2 (distinct values, not the largest + 1);
    # the rows interleaved so a cell's reps are not contiguous
    a = frame([("i1", "AB", 0, "A", "A"), ("i1", "AB", 1, "A", "A"), ("i2", "AB", 1, "B", "A"),
               ("i1", "AB", 2, "A", "A")], temperature=0.0)
    b = frame([("i1", "AB", 5, "A", "A"), ("i1", "AB", 0, "B", "A")], temperature=1.0)
    both = pd.concat([a.iloc[:2], b.iloc[:1], a.iloc[2:], b.iloc[1:]], ignore_index=True)
    r = reliability(both, policy=FigurePolicy(n_bootstrap=0)).set_index("temperature")
    assert r.loc[0.0, "repetitions"] == 3 and r.loc[1.0, "repetitions"] == 2
