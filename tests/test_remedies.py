"""Remedies as derived protocols: both-orders, order-average, majority@k, and the remedy table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses.remedies import (
    both_orders,
    derive,
    majority_at_k,
    order_average,
    remedy_table,
)
from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import calls_per_verdict, reliability
from verdictlab.store import JUDGMENT_COLUMN_NAMES


def frame(rows: list[tuple]) -> pd.DataFrame:
    """rows: (item_id, label, order, rep, verdict[, p_a])"""
    recs = []
    for r in rows:
        item, label, order, rep, verdict = r[:5]
        recs.append({"trial_id": f"{item}{order}{rep}", "judge": "sim:x", "dataset": "d", "item_id": item,
                     "protocol": "vf-json", "order": order, "temperature": 0.0, "rep": rep, "step": "",
                     "label": label, "verdict": verdict,
                     "parse_status": "failed" if verdict is None else "ok",
                     "p_a": r[5] if len(r) > 5 else np.nan, "cost_usd": 0.01, "tokens_in": 10, "tokens_out": 2})
    return pd.DataFrame(recs)


BOTH = frame([
    ("p1", "A", "AB", 0, "A"), ("p1", "A", "BA", 0, "A"),     # agree, right
    ("p2", "A", "AB", 0, "A"), ("p2", "A", "BA", 0, "B"),     # flip -> tie
    ("p3", "B", "AB", 0, "B"), ("p3", "B", "BA", 0, "B"),     # agree, right
    ("p4", "B", "AB", 0, "A"), ("p4", "B", "BA", 0, None),    # unparsed in BA -> unparsed
    ("p5", "A", "AB", 0, "A"),                                # one order only -> dropped
])


def test_both_orders_verdicts() -> None:
    d = both_orders(BOTH)
    assert list(d.columns) == list(JUDGMENT_COLUMN_NAMES)
    assert set(d["protocol"]) == {"vf-json+both-orders"}
    got = d.groupby("item_id")["verdict"].agg(lambda s: list(s))
    assert got["p1"] == ["A", "A"] and got["p2"] == ["tie", "tie"] and got["p3"] == ["B", "B"]
    assert pd.isna(got["p4"]).all()
    assert "p5" not in got.index
    assert set(d.loc[d["item_id"] == "p4", "parse_status"]) == {"failed"}
    # costs of the consumed calls are kept: 8 stored calls of p1..p4 at 0.01
    assert d["cost_usd"].sum() == pytest.approx(0.08)
    assert d["trial_id"].is_unique


def test_both_orders_moves_phi_and_tie_rate() -> None:
    # base (unparsed excluded): units p1AB+, p1BA+, p2AB+, p2BA-, p3AB+, p3BA+, p4AB-, p5AB+ -> A = 6/8
    # pairs with both orders parsed: p1 P=1, p2 P=0, p3 P=1 -> phi = 1/3
    base = reliability(BOTH, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert base["A"] == pytest.approx(6 / 8)
    assert base["phi"] == pytest.approx(1 / 3)
    # derived: p1 A,A (right), p2 tie,tie (not the label), p3 B,B (right); p4 unparsed -> dropped
    #   A = 4/6, phi = 0, tie_rate = 2/6, C = 1 -> T = 1 * (2/3 - 0) = 2/3
    rel = reliability(both_orders(BOTH), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert rel["A"] == pytest.approx(4 / 6)
    assert rel["phi"] == pytest.approx(0.0)
    assert rel["tie_rate"] == pytest.approx(2 / 6)
    assert rel["T"] == pytest.approx(2 / 3)


def test_order_average() -> None:
    f = frame([
        ("p1", "A", "AB", 0, "A", 0.8), ("p1", "A", "BA", 0, "B", 0.4),   # mean 0.6 -> A
        ("p2", "B", "AB", 0, "A", 0.3), ("p2", "B", "BA", 0, "B", 0.7),   # mean 0.5 -> tie
        ("p3", "B", "AB", 0, "B", 0.2), ("p3", "B", "BA", 0, "B", 0.1),   # mean 0.15 -> B
        ("p4", "B", "AB", 0, "B", 0.2), ("p4", "B", "BA", 0, "B"),        # no p_a in BA -> dropped
    ])
    d = order_average(f)
    got = d.groupby("item_id")["verdict"].first()
    assert got.to_dict() == {"p1": "A", "p2": "tie", "p3": "B"}
    assert d.loc[d["item_id"] == "p1", "p_a"].tolist() == pytest.approx([0.6, 0.6])
    assert order_average(BOTH).empty   # no log-probabilities at all


def test_majority_at_k_quorum_and_tie_rule() -> None:
    f = frame([
        *[("p1", "A", "AB", r, v) for r, v in enumerate(["A", "A", "B", "B"])],   # block0 A; rep 3 incomplete
        *[("p2", "A", "AB", r, v) for r, v in enumerate(["A", None, None])],      # 1 parsed < quorum 2
        *[("p3", "A", "AB", r, v) for r, v in enumerate(["A", "B", None])],       # 1-1 split -> tie
        *[("p4", "B", "AB", r, v) for r, v in enumerate(["B", "B", None])],       # 2 parsed, B
    ])
    d = majority_at_k(f, k=3)
    got = d.set_index("item_id")["verdict"]
    assert got["p1"] == "A" and pd.isna(got["p2"]) and got["p3"] == "tie" and got["p4"] == "B"
    assert len(d) == 4 and (d["rep"] == 0).all()
    assert set(d["protocol"]) == {"vf-json+majority@3"}
    v2 = json.loads(d.set_index("item_id").loc["p2", "scores"])
    assert v2["unparsed"] == 2 and v2["vote"] == "no_quorum"
    # the consumed calls' costs are summed per block: 3 calls at 0.01
    assert d.set_index("item_id").loc["p1", "cost_usd"] == pytest.approx(0.03)
    none_rule = majority_at_k(f, k=3, tie_rule="none").set_index("item_id")["verdict"]
    assert pd.isna(none_rule["p3"])
    # an explicit quorum of 1 lets the lone parsed vote of p2 stand
    assert majority_at_k(f, k=3, quorum=1).set_index("item_id").loc["p2", "verdict"] == "A"


def test_chain_and_costs() -> None:
    assert calls_per_verdict("both-orders") == 2 and calls_per_verdict("majority@5") == 5
    assert calls_per_verdict("majority@3+both-orders") == 6
    f = frame([(i, "A", o, r, "A") for i in ("p1", "p2") for o in ("AB", "BA") for r in range(3)])
    d = derive(f, "majority@3+both-orders")
    assert set(d["protocol"]) == {"vf-json+majority@3+both-orders"} and (d["verdict"] == "A").all()
    with pytest.raises(ValueError, match="unknown remedy"):
        derive(f, "best-of-both")


def test_remedy_table() -> None:
    t = remedy_table(BOTH)
    assert list(t["remedy"]) == ["none", "both-orders", "order-average", "majority@3"]
    row = t.set_index("remedy")
    assert row.loc["both-orders", "dphi"] == pytest.approx(0 - 1 / 3)
    assert row.loc["both-orders", "dA"] == pytest.approx(4 / 6 - 6 / 8)
    assert row.loc["both-orders", "calls_per_verdict"] == 2
    assert row.loc["both-orders", "extra_calls_per_verdict"] == 1
    assert (t["new_calls"] == 0).all()
    assert "log-probabilities" in row.loc["order-average", "note"]
    assert np.isnan(row.loc["majority@3", "A"]) and "3 repetitions" in row.loc["majority@3", "note"]


def test_a_cell_with_no_readable_reply_has_no_remedy_figure() -> None:
    """Two pairs, both orders, every reply unparsed: both-orders-vote made each pair a tie out of two
    abstentions (n_pairs 2, C 1, phi 0, tie rate 1) while the cell itself had 0 pairs.  Now no remedy
    has a pair or a figure there, and each row says why."""
    unread = frame([(p, "A", o, 0, None) for p in ("p1", "p2") for o in ("AB", "BA")])
    t = remedy_table(unread, remedies=("both-orders", "both-orders-vote")).set_index("remedy")
    assert list(t.index) == ["none", "both-orders", "both-orders-vote"]
    assert (t["n_pairs"] == 0).all() and t[["A", "phi", "C", "T", "tie_rate"]].isna().all().all()
    assert (t["note"] == "no readable replies").all()
    # one readable order is enough for a vote: the note is only for cells with nothing read
    half = frame([("p1", "A", "AB", 0, "A"), ("p1", "A", "BA", 0, None)])
    vote = remedy_table(half, remedies=("both-orders-vote",)).set_index("remedy").loc["both-orders-vote"]
    assert vote["n_pairs"] == 1 and vote["A"] == 1.0 and vote["note"] == ""


def test_remedies_on_a_sim_run(tmp_path: Path) -> None:
    """A position-locked sim judge: both-orders turns every locked pair into a tie (phi -> 0)."""
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    data = tmp_path / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(40):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A" if i % 2 else "B"}) + "\n")
    cfg = config_from_dict({"name": "r", "datasets": [{"name": "jsonl", "path": str(data)}],
                            "judges": ["sim:skill=1,position_lock=0.5,noise=0,seed=3"],
                            "protocols": ["vf-json"], "repetitions": 3})
    run_config(cfg, tmp_path / "run", progress=False)
    df = open_store(tmp_path / "run").judgments()
    t = remedy_table(df).set_index("remedy")
    # noise 0: a locked pair flips (P = 0), an unlocked one is right in both orders
    locked_share = t.loc["none", "phi"]
    assert 0.2 < locked_share < 0.8
    assert t.loc["both-orders", "phi"] == pytest.approx(0.0)
    assert t.loc["both-orders", "tie_rate"] == pytest.approx(locked_share)
    # majority@3 of identical repetitions changes nothing
    assert t.loc["majority@3", "A"] == pytest.approx(t.loc["none", "A"])
    assert t.loc["majority@3", "calls_per_verdict"] == 3


def test_extra_tables_route_rows(tmp_path: Path) -> None:
    """The report's entry point: pairwise tables see pairwise rows only; flask enters the remedy
    table through its aggregate verdict."""
    from verdictlab.analyses import extra_tables
    from verdictlab.analyses._frames import pointwise_mask
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    data = tmp_path / "pairs.jsonl"
    with data.open("w") as fh:
        for i in range(6):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A" if i % 2 else "B"}) + "\n")
    cfg = config_from_dict({"name": "x", "datasets": [{"name": "jsonl", "path": str(data)},
                                                      {"name": "jsonl", "path": str(data), "probe": "padding"}],
                            "judges": ["sim:skill=0.8,noise=0.1,seed=1"], "protocols": ["vf-json", "flask"],
                            "repetitions": 3})
    run_config(cfg, tmp_path / "run", progress=False)
    with open_store(tmp_path / "run") as st:
        df, items = st.judgments(), st.items()
    t = extra_tables(df, items)
    assert {"remedies", "juries", "flask", "geval", "probes"} <= set(t)
    assert {"flask", "vf-json"} == set(t["remedies"]["protocol"])
    assert "debate" not in t and "rubric" not in t
    mixed = pd.DataFrame({"dataset": ["d", "d"], "item_id": ["1", "2"], "verdict": ["PASS", "A"]})
    assert list(pointwise_mask(mixed)) == [True, False]


def test_worst_parse_status_ranks_each_value_and_reads_missing_or_unknown_as_failed() -> None:
    from verdictlab.stats.remedies import worst_parse_status

    # ok < repaired < fallback < failed; None and an unknown word are failed
    got = worst_parse_status(["ok", "repaired", None, "weird", "ok"], ["fallback", "ok", "ok", "ok", "ok"])
    assert list(got) == ["fallback", "repaired", "failed", "failed", "ok"]


def test_paired_orders_keeps_the_first_row_of_each_order_and_only_keys_judged_in_both() -> None:
    from verdictlab.analyses._frames import paired_positions

    def paired_orders(df, key):             # the rows at the paired positions, indexed by the key
        ab, ba = paired_positions(df, key)
        return df.iloc[ab].set_index(key), df.iloc[ba].set_index(key)

    # keys k1 (AB twice, BA once), k2 (BA only), k3 (BA before AB): k1 and k3 pair, in the AB rows' order
    df = pd.DataFrame({"k": ["k3", "k1", "k1", "k2", "k1", "k3"], "order": ["BA", "AB", "AB", "BA", "BA", "AB"],
                       "v": [1, 2, 3, 4, 5, 6]})
    ab, ba = paired_orders(df, ["k"])
    assert list(ab.index) == ["k1", "k3"] and list(ba.index) == ["k1", "k3"]
    assert list(ab["v"]) == [2, 6] and list(ba["v"]) == [5, 1]
