"""agreement_by_cell and test_retest on judgments frames: hand values and cross-checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st
from test_stats_reliability import EXAMPLE, _random_frame, frame

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import (
    AGREEMENT_COLUMNS,
    agreement_by_cell,
    cohen_kappa,
    krippendorff_alpha,
    reliability,
    retest_by_cell,
    test_retest,
)


def test_hand_example() -> None:
    # modes: (1,AB)=A (1,BA)=A (2,AB)=A (2,BA)=B; labels A, A, B, B
    # exact match 3/4.  Contingency label x judge: (A,A)=2, (B,A)=1, (B,B)=1
    # p_o = 3/4; p_e = (2*3 + 2*1)/16 = 1/2 -> kappa = (3/4 - 1/2)/(1/2) = 1/2; deflation = 1/4
    # position: decided judgments 3 + 3 + 3 + 2 = 11; first-shown won: (1,AB) 3, (1,BA) one B = 1,
    #   (2,AB) 3, (2,BA) B,B = 2 -> 9/11 -> bias = 9/11 - 1/2 = 7/22
    # test-retest over reps: coincidences o_AA = 3 + 1 + 3 = 7, o_AB = o_BA = 1, o_BB = 2;
    #   n_A = 8, n_B = 3, n = 11; D_o = 2/11; D_e = 2*8*3/(11*10) = 48/110 -> alpha = 1 - 20/48 = 7/12
    r = agreement_by_cell(frame(EXAMPLE)).iloc[0]
    assert r["exact_match"] == pytest.approx(0.75) and r["n_exact_match"] == 4
    assert r["kappa"] == pytest.approx(0.5)
    assert r["kappa_deflation"] == pytest.approx(0.25)
    assert (r["n_judge_A_label_B"], r["n_judge_B_label_A"]) == (1, 0)
    assert r["position_bias"] == pytest.approx(7 / 22) and r["n_position"] == 11
    assert r["test_retest"] == pytest.approx(7 / 12) and r["n_retest_units"] == 4
    assert not r["consistency_bias_paradox"]
    assert np.isnan(r["verbosity_bias"]) and r["n_verbosity"] == 0
    assert set(AGREEMENT_COLUMNS) <= set(r.index)


def test_cross_check_against_scalar_functions() -> None:
    rng = np.random.default_rng(8)
    parts = []
    for j in range(3):
        df = _random_frame(rng, 50, 3, p_tie=0.05, p_none=0.05, p_label_tie=0.1)
        df["judge"] = f"j{j}"
        parts.append(df)
    df = pd.concat(parts, ignore_index=True)
    # verbosity: give every item random response lengths
    items = pd.DataFrame({"dataset": "d", "item_id": [str(i) for i in range(50)],
                          "response_a": ["x" * int(n) for n in rng.integers(1, 400, 50)],
                          "response_b": ["y" * int(n) for n in rng.integers(1, 400, 50)]})
    out = agreement_by_cell(df, items=items)
    rel = reliability(df, policy=FigurePolicy(n_bootstrap=0))
    assert out["exact_match"].to_numpy() == pytest.approx(rel["A"].to_numpy())
    for g, cell in df.groupby("judge"):
        row = out[out.judge == g].iloc[0]
        modes = cell.dropna(subset=["verdict"]).groupby(["item_id", "order"]).agg(
            v=("verdict", lambda s: s.mode().iloc[0] if len(s.mode()) == 1 else "split"),
            label=("label", "first"))
        k = cohen_kappa(modes["label"], modes["v"])
        assert row["kappa"] == pytest.approx(k.value, abs=1e-12) and row["n_agreement_units"] == k.n
        a = krippendorff_alpha([modes["label"].tolist(), modes["v"].tolist()])
        assert row["alpha"] == pytest.approx(a.value, abs=1e-12)
        # test-retest against the scalar alpha on the reps x units matrix
        mat = cell.pivot_table(index="rep", columns=["item_id", "order"], values="verdict",
                               aggfunc="first")
        assert row["test_retest"] == pytest.approx(krippendorff_alpha(mat.to_numpy()).value, abs=1e-12)
        dec = cell[cell["verdict"].isin(["A", "B"])].merge(items, on=["dataset", "item_id"])
        x = dec["response_a"].str.len() - dec["response_b"].str.len()
        r = st.pearsonr(x, (dec["verdict"] == "A").astype(float)).statistic
        assert row["verbosity_bias"] == pytest.approx(r, abs=1e-9) and row["n_verbosity"] == len(dec)


def test_paradox_flag_fires_for_reproducible_position_bias() -> None:
    # a judge that always picks the first shown response, 3 reps: test-retest = 1, bias = 1/2
    rows = []
    for i in range(10):
        lab = "A" if i % 2 else "B"
        for r in range(3):
            rows += [(str(i), "AB", r, "A", lab), (str(i), "BA", r, "B", lab)]
    df = frame(rows)
    r = agreement_by_cell(df).iloc[0]
    assert r["position_bias"] == 0.5 and r["test_retest"] == pytest.approx(1.0)
    assert bool(r["consistency_bias_paradox"])
    rel = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert (rel["C"], rel["phi"], rel["A"], rel["T"]) == pytest.approx((1.0, 1.0, 0.5, 0.0))


def test_test_retest_over_runs() -> None:
    a = frame(EXAMPLE)
    a["run"] = "r1"
    b = frame(EXAMPLE)
    b["run"] = "r2"
    both = pd.concat([a[a.rep == 0], b[b.rep == 0]])
    out = test_retest(both, rater="run")
    # identical runs at rep 0: every unit agrees; values A x6, B x2 -> D_o = 0 -> alpha = 1
    assert out["test_retest"].iloc[0] == pytest.approx(1.0)


def test_retest_by_cell_hand_value() -> None:
    # cell 0, units (item, order) -> verdict codes: (0,0) A,A; (1,0) A,B; (1,1) B,B,B; (2,0) A + unparsed
    # (one parsed value: not pairable).  Coincidences: (0,0) o_AA += (4-2)/1 = 2; (1,0) o_AB = o_BA += 1;
    # (1,1) o_BB += (9-3)/2 = 3.  n_A = 3, n_B = 4, n = 7; D_o = 2/7; D_e = 2*3*4/(7*6) = 4/7;
    # alpha = 1 - (2/7)/(4/7) = 1/2 over 3 pairable units.  Cell 1 has no judgment: NaN, 0 units.
    item = np.array([0, 0, 1, 1, 1, 1, 1, 2, 2])
    order = np.array([0, 0, 0, 0, 1, 1, 1, 0, 0])
    verdict = np.array([0, 0, 0, 1, 1, 1, 1, 0, 3])
    a, units, n = retest_by_cell(np.zeros(9, dtype=np.int64), item, order, verdict, 2)
    assert a[0] == pytest.approx(0.5) and np.isnan(a[1])
    assert units.tolist() == [3, 0] and n.tolist() == [7, 0]


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_agreement_test_retest_is_test_retests_to_the_last_bit(unparsed: str) -> None:
    """agreement_by_cell computes test_retest from the unit table's codes: the same floats as
    test_retest on a shuffled frame with steps, unparsed verdicts and R up to 4 (units whose sums
    are not exact in binary)."""
    rng = np.random.default_rng(4)
    j = pd.concat([_random_frame(rng, 40, 4, p_tie=0.2).assign(judge=judge) for judge in ("j1", "j2")])
    j = j.sample(frac=1.0, random_state=2).reset_index(drop=True)
    j["step"] = np.where(np.arange(len(j)) % 3 == 0, "s1", None)
    j.loc[j.index[::7], "verdict"] = None
    got = agreement_by_cell(j, policy=FigurePolicy(unparsed=unparsed))
    want = test_retest(j)
    assert got["test_retest"].to_numpy().tobytes() == want["test_retest"].to_numpy().tobytes()
    assert got["n_retest_units"].tolist() == want["n_retest_units"].tolist()
