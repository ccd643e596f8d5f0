"""The gold label of a pair from its annotators' votes: one stated rule, the same everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verdictlab.core.items import ItemError, make_pair_item
from verdictlab.core.vocab import GOLD_RULES, gold_label
from verdictlab.datasets import load_dataset


@pytest.mark.parametrize(("votes", "expected"), [
    # votes                      majority, majority-or-none, mean-sign, unanimous
    (["A", "A", "A"],            ("A", "A", "A", "A")),
    (["A", "A", "B"],            ("A", "A", "A", None)),       # 2 of 3 > half; mean (1+1-1)/3 > 0
    (["A", "tie", "tie"],        ("tie", "tie", "A", None)),   # ties hold the majority; mean 1/3 > 0
    (["B", "tie", "tie"],        ("tie", "tie", "B", None)),
    (["A", "B", "tie"],          ("tie", None, "tie", None)),  # no majority; mean 0
    (["A", "B"],                 ("tie", None, "tie", None)),
    (["tie", "tie", "B"],        ("tie", "tie", "B", None)),
    (["B"],                      ("B", "B", "B", "B")),
    (["A", "A", "B", "B", "tie"], ("tie", None, "tie", None)),  # 2 of 5 is not more than half
    ([],                         (None, None, None, None)),
])
def test_gold_label_by_hand(votes: list[str], expected: tuple[str | None, ...]) -> None:
    assert tuple(gold_label(votes, rule) for rule in GOLD_RULES) == expected


def test_ties_dropped_and_bad_input() -> None:
    assert gold_label(["A", "B"], "mean-sign, ties dropped") is None
    assert gold_label(["A", "tie", "tie"], "majority, ties dropped") is None
    assert gold_label(["A", "tie", "tie"], "mean-sign, ties dropped") == "A"
    with pytest.raises(ValueError, match="gold rule"):
        gold_label(["A"], "plurality")
    with pytest.raises(ValueError, match="a vote must be"):
        gold_label(["A", "1"], "majority")
    with pytest.raises(ItemError, match="gold rule"):
        make_pair_item({"item_id": "1", "dataset": "d", "question": "?", "response_a": "a", "response_b": "b",
                        "label_rule": "plurality"}, path="f", row=1)


def test_mtbench_human_items_carry_their_votes_and_rule(tmp_path: Path) -> None:
    conv = [{"role": "user", "content": "ask"}, {"role": "assistant", "content": "reply"}]
    recs = [{"question_id": 81, "model_a": "vicuna", "model_b": "alpaca", "winner": w, "judge": j,
             "conversation_a": conv, "conversation_b": conv, "turn": 1}
            for w, j in (("model_a", "e1"), ("tie", "e2"), ("tie", "e3"))]   # vicuna (= canonical B), tie, tie
    f = tmp_path / "mt.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    maj = load_dataset("mtbench-human", path=str(f)).items[0]
    assert [(v.annotator, v.vote) for v in maj.votes] == [("e1", "B"), ("e2", "tie"), ("e3", "tie")]
    assert (maj.label, maj.label_rule) == ("tie", "majority")
    sign = load_dataset("mtbench-human", path=str(f), vote_rule="mean-sign").items[0]
    assert (sign.label, sign.label_rule) == ("B", "mean-sign")
