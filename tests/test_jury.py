"""Juries: the vote rule, homogeneous and heterogeneous jury tables, and a sim run."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.policy import FigurePolicy
from verdictlab.stats.juries import (
    heterogeneous_jury_table,
    homogeneous_jury_table,
    jury_table,
    majority_vote,
    vote_counts,
)


def test_majority_vote_rule() -> None:
    assert majority_vote(["A", "A", "B"]) == ("A", "ok")
    # two failures out of three seats: below the default quorum of 2 -> no verdict, not a jury of one
    assert majority_vote(["A", None, None]) == (None, "no_quorum")
    assert majority_vote(["A", None, None], quorum=1) == ("A", "ok")
    assert majority_vote(["A", "B", None]) == ("tie", "split")
    assert majority_vote(["A", "B", None], tie_rule="none") == (None, "split")
    assert majority_vote(["tie", "tie", "A"]) == ("tie", "ok")
    with pytest.raises(ValueError):
        majority_vote(["A", "maybe"])
    v, s = vote_counts(np.array([[2, 1, 0], [1, 1, 1], [0, 0, 1]]), quorum=2)
    assert list(v) == ["A", "tie", None] and list(s) == ["ok", "split", "no_quorum"]


def _rows(judge: str, votes: dict[str, list[str | None]], label: str = "A") -> list[dict]:
    return [{"judge": judge, "dataset": "d", "item_id": item, "protocol": "vf-json", "order": "AB",
             "temperature": 0.7, "rep": r, "step": "", "label": label, "verdict": v}
            for item, vs in votes.items() for r, v in enumerate(vs)]


def test_homogeneous_jury_by_hand() -> None:
    df = pd.DataFrame(_rows("j", {"p1": ["A", "A", "A"], "p2": ["A", "A", "B"], "p3": ["B", "B", "A"],
                                  "p4": ["A", None, None]}))
    t = homogeneous_jury_table(df, judge="j", temperature=0.7, sizes=(1, 3, 5)).set_index("k")
    assert list(t.index) == [1, 3]                     # 5 > the 3 repetitions stored
    # K=1 uses rep 0: A, A, B, A -> 3/4
    assert t.loc[1, "accuracy"] == pytest.approx(3 / 4)
    # K=3: p1 A right, p2 A right, p3 B wrong, p4 one parsed vote < quorum 2 -> no verdict (wrong)
    assert t.loc[3, "accuracy"] == pytest.approx(2 / 4)
    assert t.loc[3, "n_no_verdict"] == 1 and t.loc[3, "n_ok"] == 3
    # juror accuracy with unparsed votes wrong: rights per item 3, 2, 1, 1 of 3 -> p = 7/12
    assert t.loc[3, "p_single"] == pytest.approx(7 / 12)
    # rho: S = (3,2,1,1), mean 7/4, population var 0.6875; k p (1-p) = 3*7/12*5/12 = 105/144
    #   rho = (0.6875 / (105/144) - 1) / 2 = -0.0285714
    assert t.loc[3, "rho"] == pytest.approx((0.6875 / (105 / 144) - 1) / 2)
    # independence: 3 p^2 (1-p) + p^3 = (735 + 343) / 1728; negative rho is clipped to 0
    assert t.loc[3, "predicted_independent"] == pytest.approx(1078 / 1728)
    assert t.loc[3, "predicted_rho"] == pytest.approx(1078 / 1728)
    # effective jurors K / (1 + (K - 1) rho) with the row's own rho: 3 / (1 - 2 * 0.0285714) = 3.1818...
    assert t.loc[3, "k_effective"] == pytest.approx(3 / (1 + 2 * t.loc[3, "rho"]))


def test_homogeneous_jury_follows_the_unparsed_policy() -> None:
    """The same votes under unparsed="exclude" (the report's default policy), by hand:
    K=3: juries with a verdict p1 right, p2 right, p3 wrong -> 2/3 (p4 has none: counted, left out);
    p_single on parsed votes: rights 3 + 2 + 1 + 1 of 3 + 3 + 3 + 1 votes -> 7/10;
    rho on units every juror answered (p1..p3): S = (3, 2, 1), p = 6/9, Var(S) = 2/3 = k p (1-p) -> rho 0,
    so k_effective = 3."""
    df = pd.DataFrame(_rows("j", {"p1": ["A", "A", "A"], "p2": ["A", "A", "B"], "p3": ["B", "B", "A"],
                                  "p4": ["A", None, None]}))
    t = homogeneous_jury_table(df, judge="j", temperature=0.7, policy=FigurePolicy(unparsed="exclude")).set_index("k")
    assert t.loc[1, "accuracy"] == pytest.approx(3 / 4)
    assert t.loc[3, "accuracy"] == pytest.approx(2 / 3) and t.loc[3, "n_no_verdict"] == 1
    assert t.loc[3, "p_single"] == pytest.approx(7 / 10)
    assert t.loc[3, "rho"] == pytest.approx(0.0, abs=1e-12) and t.loc[3, "k_effective"] == pytest.approx(3.0)


def test_heterogeneous_jury_by_hand() -> None:
    rows = (_rows("j1", {"u1": ["A"], "u2": ["A"], "u3": ["A"], "u4": ["B"]})
            + _rows("j2", {"u1": ["A"], "u2": ["B"], "u3": ["A"], "u4": ["A"]})
            + _rows("j3", {"u1": ["B"], "u2": ["A"], "u3": [None], "u4": ["A"]}))
    t = heterogeneous_jury_table(pd.DataFrame(rows), judges=["j1", "j2", "j3"], temperature=0.7).set_index("k")
    assert t.loc[1, "accuracy"] == pytest.approx(3 / 4)
    # u1 AAB, u2 ABA, u3 AA- (2 parsed = quorum), u4 BAA -> all A: 4/4
    assert t.loc[3, "accuracy"] == pytest.approx(1.0) and t.loc[3, "n_no_verdict"] == 0
    # Poisson-binomial, ps = (.75, .75, .5): P(3 right) = .28125, P(2 right) = .28125 + 2 * .09375
    assert t.loc[3, "predicted_independent"] == pytest.approx(0.28125 + 0.46875)
    assert t.loc[3, "jurors"] == "j1 | j2 | j3"


def test_sim_jury_errors_are_correlated(tmp_path: Path) -> None:
    """The sim judge fixes its preference per pair and adds per-call noise: repeated samples make
    correlated errors, so the rho-corrected prediction tracks the observed jury accuracy far better
    than independence does."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    data = tmp_path / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(80):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A" if i % 2 else "B"}) + "\n")
    cfg = config_from_dict({"name": "j", "datasets": [{"name": "jsonl", "path": str(data)}],
                            "judges": ["sim:skill=0.5,noise=0.3,seed=5"], "protocols": ["direct"],
                            "temperatures": [0.7], "repetitions": 5})
    run_config(cfg, tmp_path / "run", progress=False)
    df = open_store(tmp_path / "run").judgments()
    t = jury_table(df).set_index("k")
    assert list(t.index) == [1, 3, 5] and (t["kind"] == "homogeneous").all()
    assert t.loc[5, "rho"] > 0.3
    err_rho = abs(t.loc[5, "accuracy"] - t.loc[5, "predicted_rho"])
    err_ind = abs(t.loc[5, "accuracy"] - t.loc[5, "predicted_independent"])
    assert err_rho < err_ind
    # K=1 observed equals the single-juror accuracy of rep 0 (no quorum issue without failures)
    assert t.loc[1, "n_no_verdict"] == 0


def test_sim_heterogeneous_jury_of_independent_judges(tmp_path: Path) -> None:
    """Three sim judges with different seeds draw their pair preferences independently: their errors
    are (nearly) uncorrelated, so the Poisson-binomial prediction fits the observed majority."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    data = tmp_path / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(150):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A" if i % 2 else "B"}) + "\n")
    judges = [f"sim:skill={s},seed={k}" for k, s in enumerate((0.5, 0.6, 0.7), start=1)]
    cfg = config_from_dict({"name": "h", "datasets": [{"name": "jsonl", "path": str(data)}], "judges": judges,
                            "protocols": ["direct"], "orders": ["AB"], "repetitions": 1})
    run_config(cfg, tmp_path / "run", progress=False)
    df = open_store(tmp_path / "run").judgments()
    t = jury_table(df)
    het = t[t["kind"] == "heterogeneous"].set_index("k")
    assert list(het.index) == [1, 3]
    assert abs(het.loc[3, "rho"]) < 0.15
    assert abs(het.loc[3, "accuracy"] - het.loc[3, "predicted_independent"]) < 0.08
    # expected juror accuracies s + (1-s)/2 = 0.75, 0.80, 0.85 -> majority ~0.89 beats each juror
    assert het.loc[3, "accuracy"] > het.loc[3, "p_single"]


def test_vote_matrix_units_are_every_item_order_combination_and_a_seat_takes_its_first_vote() -> None:
    """The units of a jury are every (item, order) the cell's values combine to: an item judged in one
    order only leaves a unit without votes (no verdict); a repeated (unit, seat) row keeps its first vote.

    Label A everywhere.  i1 AB: A A B -> A (right); i1 BA: A A A -> A (right); i2 AB: B B A -> B (wrong);
    i2 BA: no rows -> no quorum.  exclude: jury accuracy 2/3 over the 3 juries with a verdict; juror
    accuracy 6 right of 9 parsed votes = 2/3.  wrong: the empty unit is a wrong jury (2/4) and its 3
    missing votes wrong (6/12).  The duplicate i1 AB rep-0 row (B, after A) changes nothing."""
    rows = _rows("j", {"i1": ["A", "A", "B"], "i2": ["B", "B", "A"]})
    rows += [{**r, "order": "BA"} for r in _rows("j", {"i1": ["A", "A", "A"]})]
    rows.append({**rows[0], "verdict": "B"})
    df = pd.DataFrame(rows)
    ex = homogeneous_jury_table(df, judge="j", temperature=0.7, sizes=(3,), policy=FigurePolicy(unparsed="exclude")).iloc[0]
    assert (ex["n_evaluations"], ex["n_ok"], ex["n_no_verdict"]) == (4, 3, 1)
    assert ex["accuracy"] == pytest.approx(2 / 3) and ex["p_single"] == pytest.approx(2 / 3)
    wr = homogeneous_jury_table(df, judge="j", temperature=0.7, sizes=(3,), policy=FigurePolicy(unparsed="wrong")).iloc[0]
    assert wr["accuracy"] == pytest.approx(2 / 4) and wr["p_single"] == pytest.approx(6 / 12)


def test_vote_codes_of_object_and_categorical_verdicts_are_the_same() -> None:
    # votes are coded once per distinct value: A, B, tie by their index, any other value "other", none "none"
    from verdictlab.stats.juries import _NONE, _OTHER, _verdict_codes

    values = ["A", "tie", None, "B", "maybe", "A", np.nan]
    want = [0, 2, _NONE, 1, _OTHER, 0, _NONE]
    assert _verdict_codes(values).tolist() == want
    assert _verdict_codes(pd.Series(values, dtype="category")).tolist() == want
    assert _verdict_codes(pd.Series([], dtype=object)).tolist() == []


def test_jury_table_keeps_a_heterogeneous_jury_without_a_judge() -> None:
    # one row per (cell, K) with the cell key; the panel of 3 judges has judge None (not a missing text)
    rows = [{"judge": j, "dataset": "d", "item_id": str(i), "protocol": "p", "order": o, "temperature": 0.0,
             "rep": r, "step": "", "label": "A", "verdict": "A" if (i + r) % 4 else "B"}
            for j in ("j1", "j2", "j3") for i in range(6) for o in ("AB", "BA") for r in range(3)]
    table = jury_table(pd.DataFrame(rows))
    homo = table[table["kind"] == "homogeneous"]
    assert sorted(homo["judge"].unique()) == ["j1", "j2", "j3"] and sorted(homo["k"].unique()) == [1, 3]
    hetero = table[table["kind"] == "heterogeneous"]
    assert hetero["judge"].tolist() == [None, None] and hetero["k"].tolist() == [1, 3]
    assert hetero["jurors"].tolist() == ["j1", "j1 | j2 | j3"]


def test_vote_codes_are_the_vote_rule_on_every_count_of_three_seats() -> None:
    # every (A, B, tie) count of a 3-seat jury, quorum 2, both tie rules: the codes name vote_counts' verdicts
    from verdictlab.stats.juries import vote_codes

    counts = np.array([c for c in np.ndindex(4, 4, 4) if sum(c) <= 3])
    for rule in ("tie", "none"):
        v, s = vote_counts(counts, quorum=2, tie_rule=rule)
        vc, sc = vote_codes(counts, quorum=2, tie_rule=rule)
        assert [("A", "B", "tie", None)[c] for c in vc] == list(v)
        assert [("ok", "split", "no_quorum")[c] for c in sc] == list(s)
    # by hand: [1, 1, 0] meets the quorum, A and B share the top -> split, tie (rule "tie") / none
    vc, sc = vote_codes(np.array([[1, 1, 0], [0, 0, 1]]), quorum=2)
    assert vc.tolist() == [2, -1] and sc.tolist() == [1, 2]


def _cell_rows(judge: str, temperature: float, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{"judge": judge, "dataset": "d", "item_id": str(i), "protocol": "p", "order": o, "temperature": temperature,
             "rep": r, "step": "", "label": "AB"[i % 2], "verdict": rng.choice(["A", "B", "tie", None])}
            for i in range(12) for o in ("AB", "BA") for r in range(3)]


@pytest.mark.parametrize("unparsed", ["exclude", "wrong"])
def test_jury_table_slices_each_cell_and_panel_out_of_interleaved_rows(unparsed: str) -> None:
    # rows of 3 judges x 2 temperatures shuffled together, a derived protocol and a cell with a missing
    # temperature: each homogeneous row equals the cell's table alone, each panel row the panel's alone
    cells = [(j, t) for j in ("j1", "j2", "j3") for t in (10.0, 2.0)]
    rows = [r for n, (j, t) in enumerate(cells) for r in _cell_rows(j, t, n)]
    rows += [{**r, "protocol": "p+both-orders"} for r in _cell_rows("j1", 2.0, 99)]
    rows += [{**r, "temperature": np.nan} for r in _cell_rows("j2", 0.0, 98)]
    df = pd.DataFrame(rows).sample(frac=1.0, random_state=0)
    table = jury_table(df, policy=FigurePolicy(unparsed=unparsed))
    homo = table[table["kind"] == "homogeneous"]
    assert list(zip(homo["judge"], homo["temperature"], strict=True))[::2] == sorted(cells)       # k = 1, 3 per cell
    for (j, t), got in homo.groupby(["judge", "temperature"]):
        alone = homogeneous_jury_table(df[df["protocol"] == "p"], judge=j, temperature=t, policy=FigurePolicy(unparsed=unparsed))
        pd.testing.assert_frame_equal(got[alone.columns].reset_index(drop=True), alone, check_exact=True)
    hetero = table[table["kind"] == "heterogeneous"]
    assert sorted(hetero["temperature"].unique()) == [2.0, 10.0]
    for t, got in hetero.groupby("temperature"):
        alone = heterogeneous_jury_table(df[df["protocol"] == "p"], judges=["j1", "j2", "j3"], temperature=t,
                                         policy=FigurePolicy(unparsed=unparsed))
        pd.testing.assert_frame_equal(got[alone.columns].reset_index(drop=True), alone, check_exact=True)


def test_jury_table_seats_only_judges_with_labelled_votes() -> None:
    """A jury is scored on labelled units.  Without gold labels (a reviewer log) there is no jury to
    score (it raised "no labelled votes for seat(s) [...]" and the report's juries table failed); a judge
    that judged only unlabelled items takes no seat, and the other three still make a panel."""
    rows = [{"judge": j, "dataset": "d", "item_id": str(i), "protocol": "p", "order": "AB", "temperature": 0.0,
             "rep": 0, "step": "", "label": None, "verdict": "A"} for j in ("j1", "j2", "j3") for i in range(4)]
    assert jury_table(pd.DataFrame(rows)).empty
    labelled = [{**r, "label": "A", "item_id": f"l{r['item_id']}"} for r in rows]
    lone = [{**r, "judge": "j4"} for r in rows if r["judge"] == "j1"]      # j4 judged only unlabelled items
    table = jury_table(pd.DataFrame(labelled + lone)).set_index("k")
    assert table.loc[3, "jurors"] == "j1 | j2 | j3" and table.loc[3, "n_evaluations"] == 4
    assert table.loc[3, "accuracy"] == pytest.approx(1.0)
