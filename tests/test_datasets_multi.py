"""Multi-response items: loaders and expansion into all pairs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verdictlab.core.items import ItemError
from verdictlab.datasets import load_dataset
from verdictlab.datasets.multi import MultiItem, expand_pairs, pair_systems


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


def test_multi_jsonl_expands_into_all_pairs_with_labels(tmp_path: Path):
    p = _write(tmp_path / "m.jsonl", [
        {"item_id": "q1", "question": "Q?", "responses": {"x": "rx", "y": "ry", "z": "rz", "w": "rw"},
         "scores": {"x": 3, "y": 2, "z": 2, "w": 1}, "category": "math"},
        {"item_id": 2, "question": "Q2?", "responses": {"x": "a", "y": "b", "z": "c"}, "ranking": ["z", "x", "y"]},
    ])
    load = load_dataset("multi-jsonl", path=str(p))
    assert len(load.items) == 6 + 3                       # K(K-1)/2 pairs per item
    by_pair = {frozenset((it.meta["system_a"], it.meta["system_b"])): it for it in load.items
               if it.meta["multi_id"] == "q1"}
    yz = by_pair[frozenset(("y", "z"))]
    assert yz.label == "tie"                              # equal gold scores
    xw = by_pair[frozenset(("x", "w"))]
    assert xw.label == ("A" if xw.meta["system_a"] == "x" else "B")
    assert xw.response_a == {"x": "rx", "w": "rw"}[xw.meta["system_a"]]
    assert xw.system_a == xw.meta["system_a"] and xw.category == "math"
    q2 = [it for it in load.items if it.meta["multi_id"] == "2"]
    zx = next(it for it in q2 if {it.meta["system_a"], it.meta["system_b"]} == {"z", "x"})
    assert zx.label == ("A" if zx.meta["system_a"] == "z" else "B")   # ranking: z best
    ps = pair_systems(load.items)
    assert len(ps) == 9 and set(ps["group"]) == {"q1", "2"}
    assert "seed 42" in load.notes[0]


def test_expansion_is_seeded_and_ids_name_the_systems():
    m = MultiItem(item_id="q", dataset="d", question="?", responses={"a": "1", "b": "2", "c": "3"})
    one, two = expand_pairs([m], seed=1), expand_pairs([m], seed=1)
    assert [p.item_id for p in one] == [p.item_id for p in two]
    assert all(p.item_id == f"q::{p.meta['system_a']}::{p.meta['system_b']}" for p in one)
    assert all(p.label is None for p in one)


@pytest.mark.parametrize("rec, field", [
    ({"item_id": "q", "question": "?", "responses": {"x": "1", "y": "2"}}, "responses"),
    ({"item_id": "q", "question": "?"}, "responses"),
    ({"item_id": "q", "question": "?", "responses": ["x"]}, "responses"),
    ({"item_id": "q", "question": "?", "responses": {"x": "1", "y": "2", "z": "3"}, "scores": {"v": 1}}, None),
])
def test_bad_rows_name_file_row_and_field(tmp_path: Path, rec: dict, field: str | None):
    p = _write(tmp_path / "bad.jsonl", [{"item_id": "ok", "question": "?", "responses": {"x": "1", "y": "2", "z": "3"}},
                                        rec])
    with pytest.raises(ItemError) as e:
        load_dataset("multi-jsonl", path=str(p))
    assert "bad.jsonl" in str(e.value) and "row 2" in str(e.value)
    if field:
        assert field in str(e.value)


def test_mtbench_answers_directory(tmp_path: Path):
    root = tmp_path / "mt"
    (root / "model_answer").mkdir(parents=True)
    _write(root / "question.jsonl", [{"question_id": 81, "category": "writing", "turns": ["T1", "T2"]},
                                     {"question_id": 82, "category": "math", "turns": ["U1", "U2"]}])
    for model in ("gpt-4", "llama-13b", "vicuna-13b"):
        recs = [{"question_id": 81, "model_id": model, "choices": [{"index": 0, "turns": [f"{model} a1", "a2"]}]}]
        if model != "vicuna-13b":
            recs.append({"question_id": 82, "model_id": model, "choices": [{"turns": [f"{model} b1", "b2"]}]})
        _write(root / "model_answer" / f"{model}.jsonl", recs)
    load = load_dataset("mtbench-answers", path=str(root), turn=2)
    assert len(load.items) == 3 and load.dropped[0]["row"] == "82"
    it = load.items[0]
    assert it.question == "T2" and it.response_a == "a2" and it.meta["multi_id"] == "81"
    assert {it.system_a, it.system_b} <= {"gpt-4", "llama-13b", "vicuna-13b"}
    with pytest.raises(ItemError, match="question.jsonl, row 1, field .turns.: needs question_id and turns with at least 3"):
        load_dataset("mtbench-answers", path=str(root), turn=3)


def test_loaders_that_know_the_authoring_systems_fill_system_a_and_system_b(tmp_path: Path):
    m = MultiItem(item_id="q", dataset="d", question="?", responses={"a": "1", "b": "2", "c": "3"})
    assert all((p.system_a, p.system_b) == (p.meta["system_a"], p.meta["system_b"]) for p in expand_pairs([m]))
    conv = [{"role": "user", "content": "ask"}, {"role": "assistant", "content": "reply"}]
    _write(tmp_path / "arena.jsonl", [{"question_id": "q0", "model_a": "m1", "model_b": "m2", "winner": "model_a",
                                       "judge": "u", "conversation_a": conv, "conversation_b": conv, "turn": 1}])
    it = load_dataset("arena", path=str(tmp_path / "arena.jsonl")).items[0]
    assert (it.system_a, it.system_b) == ("m1", "m2")
    # mtbench-human orders the two models by name: canonical A is the first in sorted order
    _write(tmp_path / "mt.jsonl", [{"question_id": 81, "model_a": "vicuna", "model_b": "alpaca", "winner": "model_a",
                                    "judge": "e1", "conversation_a": conv, "conversation_b": conv, "turn": 1}])
    it = load_dataset("mtbench-human", path=str(tmp_path / "mt.jsonl")).items[0]
    assert (it.system_a, it.system_b) == ("alpaca", "vicuna")
