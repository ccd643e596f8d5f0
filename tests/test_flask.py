"""flask: one call per criterion, aggregate by majority with quorum and an explicit tie rule."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from verdictlab.analyses.flask import aggregate_criteria, flask_table
from verdictlab.core.items import PairItem
from verdictlab.protocols import get_protocol
from verdictlab.protocols.flask import FlaskProtocol


def _item(dataset: str) -> PairItem:
    return PairItem(item_id="1", dataset=dataset, question="Q", response_a="ra", response_b="rb", label="A")


def test_steps_follow_the_rubric_family() -> None:
    p = FlaskProtocol()
    assert p.steps(_item("llmbar")) == ("adherence", "relevance", "completeness", "clarity")
    assert p.steps(_item("judgebench")) == ("accuracy", "completeness", "coherence", "format")
    assert get_protocol("flask-correctness").steps(_item("llmbar"))[0] == "accuracy"


def test_messages_name_one_criterion() -> None:
    p = FlaskProtocol()
    msgs = p.messages(_item("llmbar"), "BA", step="relevance")
    assert "ONE criterion" in msgs[0]["content"]
    user = msgs[1]["content"]
    assert "[Criterion: Relevance]" in user and "Adherence" not in user
    assert user.index("Response A:\nrb") < user.index("Response B:\nra")
    with pytest.raises(ValueError, match="unknown criterion"):
        p.messages(_item("llmbar"), "AB", step="beauty")
    r = p.parse('{"rationale": "B follows it.", "score_A": 2, "score_B": 4, "winner": "B"}')
    assert (r.verdict, r.status) == ("B", "ok")


def _rows(votes: dict[str, list[str | None]]) -> pd.DataFrame:
    crit = ["c1", "c2", "c3", "c4"]
    return pd.DataFrame([{"judge": "j", "dataset": "d", "item_id": item, "protocol": "flask", "order": "AB",
                          "temperature": 0.0, "rep": 0, "step": c, "label": "A", "verdict": v,
                          "parse_status": "failed" if v is None else "ok", "cost_usd": 0.25}
                         for item, vs in votes.items() for c, v in zip(crit, vs, strict=True)])


VOTES = _rows({"p1": ["A", "A", "B", "A"],      # 3-1 -> A
               "p2": ["B", "A", "B", "A"],      # 2-2 split
               "p3": ["A", None, None, "B"],    # 2 parsed < quorum 3 -> no verdict
               "p4": ["B", "B", "B", None]})    # 3 parsed = quorum -> B


def test_aggregate_vote_quorum_and_tie_rules() -> None:
    agg = aggregate_criteria(VOTES).set_index("item_id")
    assert (agg["step"] == "").all() and (agg["protocol"] == "flask").all()
    assert agg.loc["p1", "verdict"] == "A"
    assert agg.loc["p2", "verdict"] == "tie"
    assert pd.isna(agg.loc["p3", "verdict"]) and agg.loc["p3", "parse_status"] == "failed"
    assert agg.loc["p4", "verdict"] == "B"
    assert agg.loc["p1", "cost_usd"] == pytest.approx(1.0)            # 4 calls at 0.25
    assert json.loads(agg.loc["p1", "scores"])["calls"] == 4
    none = aggregate_criteria(VOTES, tie_rule="none").set_index("item_id")
    assert pd.isna(none.loc["p2", "verdict"])
    prio = aggregate_criteria(VOTES, tie_rule="priority").set_index("item_id")
    # c1 (most important) said B, and B is one of the tied values
    assert prio.loc["p2", "verdict"] == "B"
    assert (prio.loc["p2", "parse_status"], prio.loc["p2", "fallback_rule"]) == ("fallback", "criterion-priority")
    prio2 = aggregate_criteria(VOTES, tie_rule="priority", priority=["c2", "c1", "c3", "c4"]).set_index("item_id")
    assert prio2.loc["p2", "verdict"] == "A"


def test_flask_run_with_sim_judge(tmp_path: Path) -> None:
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    data = tmp_path / "llmbar_mini.jsonl"
    with data.open("w") as fh:
        for i in range(10):
            fh.write(json.dumps({"item_id": f"p{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A" if i % 2 else "B"}) + "\n")
    cfg = config_from_dict({"name": "f", "datasets": [{"name": "jsonl", "path": str(data)}],
                            "judges": ["sim:skill=1,noise=0.2,seed=2"], "protocols": ["flask", "geval"],
                            "repetitions": 2})
    run_config(cfg, tmp_path / "run", progress=False)
    df = open_store(tmp_path / "run").judgments()
    fl = df[df["protocol"] == "flask"]
    # one row per criterion call: 10 pairs x 2 orders x 2 reps x 4 criteria
    assert len(fl) == 160 and set(fl["step"]) == {"adherence", "relevance", "completeness", "clarity"}
    assert (df.loc[df["protocol"] == "geval", "step"] == "").all()
    t = flask_table(df)
    assert (t["calls_per_evaluation"] == 4).all()
    assert list(t["step"]) == ["", "adherence", "clarity", "completeness", "relevance"]
    # per-criterion noise: each criterion call keeps the preferred verdict with p = 0.9, so
    # criterion C = 0.9^2 + 0.1^2 = 0.82 in expectation; the aggregate is steadier than a criterion
    crit_c = t.loc[t["step"] != "", "C"].mean()
    assert 0.6 < crit_c < 0.95
    assert t.loc[t["step"] == "", "C"].iloc[0] >= crit_c - 0.05
