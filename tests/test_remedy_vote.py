"""The both-orders-vote remedy (JudgeBench's two-order rule) against both-orders, case by case."""

from __future__ import annotations

import pandas as pd
import pytest

from verdictlab.analyses.remedy_vote import both_orders_vote
from verdictlab.core.design import trial_id
from verdictlab.core.judgment import JUDGMENT_COLUMN_NAMES, judgment_dict

# (AB verdict, BA verdict) -> (both-orders-vote verdict, parse_status, fallback_rule present)
CASES = {
    "aa": (("A", "A"), ("A", "ok", False)),
    "bb": (("B", "B"), ("B", "ok", False)),
    "ab": (("A", "B"), ("tie", "ok", False)),       # one vote each -> tie
    "at": (("A", "tie"), ("A", "ok", False)),        # the tie abstains: A wins 1-0
    "tb": (("tie", "B"), ("B", "ok", False)),
    "tt": (("tie", "tie"), ("tie", "ok", False)),
    "an": (("A", None), ("A", "fallback", True)),    # unparsed abstains, recorded as a fallback
    "nb": ((None, "B"), ("B", "fallback", True)),
    "nn": ((None, None), (None, "failed", True)),  # nothing read -> no verdict (it was a tie), recorded
}


def frame() -> pd.DataFrame:
    rows = []
    for item, ((va, vb), _) in CASES.items():
        for order, v in (("AB", va), ("BA", vb)):
            rows.append(judgment_dict(judge="j", dataset="d", item_id=item, protocol="direct", order=order,
                                      temperature=0.0, rep=0, verdict=v, label="A", cost_usd=0.5))
    # judged in one order only: no derived row
    rows.append(judgment_dict(judge="j", dataset="d", item_id="single", protocol="direct", order="AB",
                              temperature=0.0, rep=0, verdict="A", label="A"))
    return pd.DataFrame(rows)


def test_vote_rule_case_by_case():
    out = both_orders_vote(frame())
    assert list(out.columns) == list(JUDGMENT_COLUMN_NAMES)
    assert set(out["item_id"]) == set(CASES)
    assert len(out) == 2 * len(CASES)
    assert set(out["protocol"]) == {"direct+both-orders-vote"}
    for item, (_, (verdict, status, has_rule)) in CASES.items():
        rows = out[out["item_id"] == item]
        assert set(rows["order"]) == {"AB", "BA"}
        assert [None if pd.isna(v) else v for v in rows["verdict"]] == [verdict, verdict], item
        assert rows["parse_status"].tolist() == [status, status], item
        assert rows["fallback_rule"].notna().all() == has_rule, item
    nn = out[out["item_id"] == "nn"].iloc[0]
    assert nn["fallback_rule"] == "both-orders-vote: both orders unparsed -> no verdict"
    assert out[out["item_id"] == "at"].iloc[0]["parse_detail"] == "votes AB=A BA=tie -> A"


def test_rows_are_consistent_derived_judgments():
    out = both_orders_vote(frame())
    r = out[(out["item_id"] == "aa") & (out["order"] == "BA")].iloc[0]
    assert r["trial_id"] == trial_id("j", "d", "aa", "direct+both-orders-vote", "BA", 0.0, 0, "")
    assert r["shown_first_won"] == 0.0          # BA shows B first; A won
    assert out[(out["item_id"] == "aa") & (out["order"] == "AB")].iloc[0]["shown_first_won"] == 1.0
    assert pd.isna(out[out["item_id"] == "ab"].iloc[0]["shown_first_won"])
    assert out["cost_usd"].sum() == pytest.approx(0.5 * 2 * len(CASES))   # the calls consumed


def test_differs_from_both_orders_only_where_an_order_abstains():
    from verdictlab.analyses.remedies import both_orders

    vote = both_orders_vote(frame()).set_index(["item_id", "order"])["verdict"]
    agree = both_orders(frame()).set_index(["item_id", "order"])["verdict"]
    differ = sorted({i for (i, _), v in vote.items() if v != agree.get((i, _)) and not
                     (pd.isna(v) and pd.isna(agree.get((i, _))))})
    assert differ == ["an", "at", "nb", "tb"]       # two unparsed orders: no verdict under both rules


def test_empty_and_single_order_input():
    single = frame()
    single = single[single["order"] == "AB"]
    out = both_orders_vote(single)
    assert out.empty and list(out.columns) == list(JUDGMENT_COLUMN_NAMES)
