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


def test_import_votes_relabels_a_run_by_the_stated_rule(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from verdictlab.analyses import AnalysisInput
    from verdictlab.cli.main import app
    from verdictlab.importers import import_into
    from verdictlab.store import open_store

    rows = [{"item_id": i, "judge": "j", "protocol": "p", "dataset": "d", "order": o, "verdict": "A",
             "question": "?", "response_a": f"a{i}", "response_b": f"b{i}"} for i in ("1", "2") for o in ("AB", "BA")]
    (tmp_path / "j.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    import_into("jsonl", tmp_path / "j.jsonl", run_dir=tmp_path / "run")
    # one column per annotator, numbers through a value map: item 1 votes A, tie, tie; item 2 B, B, A
    (tmp_path / "votes.csv").write_text("item_id,w1,w2,w3\n1,1,3,3\n2,2,2,1\n")
    res = CliRunner().invoke(app, ["import", "votes", str(tmp_path / "votes.csv"), "--run-dir", str(tmp_path / "run"),
                                   "--annotators", "w1,w2,w3", "--gold-rule", "mean-sign",
                                   "--map-values", "vote:1=A,2=B,3=tie"])
    assert res.exit_code == 0, res.output
    with open_store(tmp_path / "run") as st:
        items = {it.item_id: it for it in st.items()}
        labels = st.judgments(["item_id", "label"]).drop_duplicates().set_index("item_id")["label"].to_dict()
        inp = AnalysisInput(st.judgments(), items=st.items())
    # mean-sign: item 1 (+1, 0, 0) -> A (a strict majority would say tie); item 2 (-1, -1, +1) -> B
    assert (items["1"].label, items["2"].label, items["1"].label_rule) == ("A", "B", "mean-sign")
    assert labels == {"1": "A", "2": "B"}           # every stored judgment relabelled by the same rule
    assert sorted(inp.votes["annotator"]) == ["w1", "w1", "w2", "w2", "w3", "w3"]
    # one vote per row; a pair the run does not hold and a bad vote are named with file, row and field
    (tmp_path / "long.jsonl").write_text("".join(json.dumps(r) + "\n" for r in [
        {"item_id": "1", "annotator": "x", "vote": "B"}, {"item_id": "9", "annotator": "x", "vote": "A"},
        {"item_id": "2", "annotator": "x", "vote": "maybe"}]))
    with pytest.raises(ItemError) as err:
        import_into("votes", tmp_path / "long.jsonl", run_dir=tmp_path / "run")
    assert "row 3, field 'vote'" in str(err.value)
    (tmp_path / "long.jsonl").write_text('{"item_id": "9", "annotator": "x", "vote": "A"}\n')
    with pytest.raises(ItemError, match="row 1, field 'item_id': no pair '9' in this run"):
        import_into("votes", tmp_path / "long.jsonl", run_dir=tmp_path / "run")
