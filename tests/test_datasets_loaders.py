"""Loaders on small fixture files written by the tests: mapping, ties, aggregation, seeded
re-ordering and sampling, field maps, and errors that name file, row and field."""

from __future__ import annotations

import builtins
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from verdictlab.core.items import ItemError, PairItem, PointItem
from verdictlab.datasets import load_dataset, reorder_fixed_pairs
from verdictlab.datasets.hub import HubUnavailableError


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def write_json(path: Path, records) -> Path:
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


# -- LLMBar / PandaLM on fixtures (errors) ---------------------------------------------------------

def test_llmbar_bad_label_names_file_row_field(tmp_path):
    f = write_json(tmp_path / "Natural.json", [
        {"input": "q", "output_1": "a", "output_2": "b", "label": 1},
        {"input": "q", "output_1": "a", "output_2": "b", "label": 3},
    ])
    with pytest.raises(ItemError) as ei:
        load_dataset("llmbar", path=str(f))
    msg = str(ei.value)
    assert str(f) in msg and "row 2" in msg and "'label'" in msg


def test_llmbar_missing_field_and_unknown_option(tmp_path):
    f = write_json(tmp_path / "Natural.json", [{"input": "q", "output_1": "a", "label": 1}])
    with pytest.raises(ItemError, match=r"row 1, field 'output_2'"):
        load_dataset("llmbar", path=str(f))
    g = write_json(tmp_path / "N2.json", [{"input": "q", "output_1": "a", "output_2": "b", "label": 1}])
    with pytest.raises(ItemError, match="tie_polcy"):
        load_dataset("llmbar", path=str(g), tie_polcy="drop")
    # the run seed the engine passes to every loader is accepted
    assert len(load_dataset("llmbar", path=str(g), seed=7).items) == 1


def test_missing_path_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("VERDICTLAB_CACHE_DIR", str(tmp_path / "empty-cache"))   # llmbar not fetched
    with pytest.raises(ItemError, match="file not found"):
        load_dataset("pandalm", path=str(tmp_path / "nope.json"))
    with pytest.raises(ItemError, match="needs a 'path'"):
        load_dataset("llmbar")
    with pytest.raises(ItemError, match="run `verdictlab datasets fetch llmbar`"):   # and how to get one
        load_dataset("llmbar")


def _panda(idx, votes, r1="x", r2="y"):
    return {"idx": idx, "motivation_app": "App", "cmp_key": "m1_m2", "instruction": "Do it",
            "input": "", "response1": r1, "response2": r2,
            "annotator1": votes[0], "annotator2": votes[1], "annotator3": votes[2]}


def test_pandalm_majority_tie_and_no_majority(tmp_path):
    f = write_json(tmp_path / "t.json", [
        _panda(0, (1, 1, 2)),   # majority 1 -> A
        _panda(1, (2, 2, 0)),   # majority 2 -> B
        _panda(2, (0, 0, 1)),   # majority 0 -> tie (kept)
        _panda(3, (0, 1, 2)),   # no majority -> None, flagged
    ])
    keep = load_dataset("pandalm", path=str(f))
    assert [it.label for it in keep.items] == ["A", "B", "tie", None]
    assert keep.items[3].meta["no_majority"] is True
    assert keep.items[0].question == "Do it"          # empty input adds nothing
    drop = load_dataset("pandalm", path=str(f), tie_policy="drop")
    assert [it.item_id for it in drop.items] == ["0", "1", "3"]   # the no-majority pair stays
    assert drop.dropped == [{"row": 3, "item_id": "2", "reason": "tie majority"}]
    with pytest.raises(ItemError, match="tie_policy"):
        load_dataset("pandalm", path=str(f), tie_policy="sometimes")


def test_pandalm_bad_vote_names_annotator(tmp_path):
    f = write_json(tmp_path / "t.json", [_panda(0, (1, 1, 2)), _panda(1, (1, 5, 2))])
    with pytest.raises(ItemError, match=r"row 2, field 'annotator2'"):
        load_dataset("pandalm", path=str(f))


# -- JudgeBench -----------------------------------------------------------------------------------

def _jb(pid, label, source="mmlu-pro-law"):
    return {"pair_id": pid, "original_id": 1, "source": source, "question": f"Q{pid}",
            "response_model": "gpt-4o", "response_A": f"A{pid}", "response_B": f"B{pid}", "label": label}


def test_judgebench_labels_and_category(tmp_path):
    f = write_jsonl(tmp_path / "jb.jsonl", [_jb("p1", "A>B"), _jb("p2", "B>A", "livebench-math")])
    load = load_dataset("judgebench", path=str(f))
    a, b = load.items
    assert (a.item_id, a.label, a.response_a, a.category) == ("p1", "A", "Ap1", "mmlu-pro-law")
    assert (b.item_id, b.label, b.response_b, b.category) == ("p2", "B", "Bp2", "livebench-math")


def test_judgebench_bad_label_and_duplicate_id(tmp_path):
    f = write_jsonl(tmp_path / "jb.jsonl", [_jb("p1", "A>B"), _jb("p2", "A>>B")])
    with pytest.raises(ItemError, match=r"row 2, field 'label'"):
        load_dataset("judgebench", path=str(f))
    g = write_jsonl(tmp_path / "jb2.jsonl", [_jb("p1", "A>B"), _jb("p1", "B>A")])
    with pytest.raises(ItemError, match=r"row 2, field 'item_id'.*duplicate"):
        load_dataset("judgebench", path=str(g))


# -- hub ------------------------------------------------------------------------------------------

def test_hub_without_datasets_library_says_what_is_needed(monkeypatch):
    real_import = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets" or name.startswith("datasets."):
            raise ImportError("No module named 'datasets'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    for loader in ("judgebench", "mtbench-human", "rewardbench", "arena", "alpacafarm"):
        with pytest.raises(HubUnavailableError) as ei:
            load_dataset(loader, hub="owner/name")
        msg = str(ei.value)
        assert "network" in msg and "verdictlab[hub]" in msg, loader


def test_path_and_hub_together_is_an_error(tmp_path):
    f = write_jsonl(tmp_path / "jb.jsonl", [_jb("p1", "A>B")])
    with pytest.raises(ItemError, match="either 'path' or 'hub'"):
        load_dataset("judgebench", path=str(f), hub="ScalerLab/JudgeBench")


# -- MT-Bench human -------------------------------------------------------------------------------

def _conv(model: str, turns: int = 2) -> list[dict]:
    out = []
    for t in range(1, turns + 1):
        out += [{"role": "user", "content": f"question turn {t}"},
                {"role": "assistant", "content": f"{model} answer turn {t}"}]
    return out


def _mt(qid, ma, mb, winner, judge, turn):
    return {"question_id": qid, "model_a": ma, "model_b": mb, "winner": winner, "judge": judge,
            "conversation_a": _conv(ma), "conversation_b": _conv(mb), "turn": turn}


@pytest.fixture
def mt_file(tmp_path):
    return write_jsonl(tmp_path / "mt.jsonl", [
        # turn 1: three experts, in both model orders.  Canonical A = "alpaca" (sorted first).
        _mt(81, "vicuna", "alpaca", "model_a", "expert_1", 1),   # vicuna wins -> B
        _mt(81, "alpaca", "vicuna", "model_b", "expert_2", 1),   # vicuna wins -> B
        _mt(81, "alpaca", "vicuna", "tie", "expert_3", 1),       # tie
        # turn 2: two experts disagree -> no strict majority
        _mt(81, "vicuna", "alpaca", "model_b", "expert_1", 2),   # alpaca wins -> A
        _mt(81, "alpaca", "vicuna", "tie (bothbad)", "expert_2", 2),
    ])


def test_mtbench_human_majority_vote(mt_file):
    load = load_dataset("mtbench-human", path=str(mt_file))
    by_id = {it.item_id: it for it in load.items}
    t1 = by_id["81-alpaca-vs-vicuna-t1"]
    # votes B, B, tie: 2 of 3 is a strict majority -> B
    assert t1.meta["votes"] == ["B", "B", "tie"] and t1.label == "B"
    assert t1.response_a == "alpaca answer turn 1" and t1.response_b == "vicuna answer turn 1"
    assert t1.question == "question turn 1"
    t2 = by_id["81-alpaca-vs-vicuna-t2"]
    # votes A, tie: neither has more than half -> tie under the majority rule
    assert t2.meta["votes"] == ["A", "tie"] and t2.label == "tie"
    assert "question turn 1" in t2.question and "question turn 2" in t2.question
    assert "alpaca answer turn 1" in t2.response_a and "alpaca answer turn 2" in t2.response_a
    assert t2.category == "turn-2"


def test_mtbench_human_unanimous_and_tie_drop(mt_file):
    una = load_dataset("mtbench-human", path=str(mt_file), vote_rule="unanimous")
    assert {it.item_id: it.label for it in una.items} == {"81-alpaca-vs-vicuna-t1": None,
                                                          "81-alpaca-vs-vicuna-t2": None}
    drop = load_dataset("mtbench-human", path=str(mt_file), tie_policy="drop")
    assert [it.item_id for it in drop.items] == ["81-alpaca-vs-vicuna-t1"]
    assert drop.summary()["dropped_reasons"] == {"tie label": 1}
    with pytest.raises(ItemError, match="vote_rule"):
        load_dataset("mtbench-human", path=str(mt_file), vote_rule="plurality")


def test_mtbench_human_bad_winner(tmp_path):
    f = write_jsonl(tmp_path / "mt.jsonl", [_mt(81, "a", "b", "model_c", "e", 1)])
    with pytest.raises(ItemError, match=r"row 1, field 'winner'"):
        load_dataset("mtbench-human", path=str(f))


# -- AlpacaFarm -----------------------------------------------------------------------------------

def test_alpacafarm_preference_mapping(tmp_path):
    f = write_json(tmp_path / "alpaca_human_preference.json", [
        {"instruction": "Say hi", "input": "", "output_1": "hi", "output_2": "hello", "preference": 1},
        {"instruction": "Translate", "input": "chat", "output_1": "cat", "output_2": "dog", "preference": 2},
    ])
    load = load_dataset("alpacafarm", path=str(f))
    assert [(it.item_id, it.label) for it in load.items] == [("0", "A"), ("1", "B")]
    assert load.items[1].question == "Translate\n\nchat"
    bad = write_json(tmp_path / "bad.json", [{"instruction": "x", "input": "", "output_1": "a",
                                             "output_2": "b", "preference": 0}])
    with pytest.raises(ItemError, match=r"row 1, field 'preference'"):
        load_dataset("alpacafarm", path=str(bad))


# -- RewardBench ----------------------------------------------------------------------------------

@pytest.fixture
def rb_file(tmp_path):
    recs = [{"prompt": f"p{i}", "chosen": f"good {i}", "chosen_model": "m1", "rejected": f"bad {i}",
             "rejected_model": "m2", "subset": "chat" if i % 2 else "safety", "id": i} for i in range(40)]
    return write_jsonl(tmp_path / "rb.jsonl", recs)


def test_rewardbench_reorders_fixed_order_with_seed(rb_file):
    load = load_dataset("rewardbench", path=str(rb_file))
    assert load.reordered is True and load.seed == 42
    # independent coins: numpy default_rng(42).integers(0, 2, 40); heads -> rejected goes first
    coins = np.random.default_rng(42).integers(0, 2, size=40).astype(bool)
    for it, coin in zip(load.items, coins, strict=True):
        i = int(it.item_id)
        if coin:
            assert (it.response_a, it.response_b, it.label) == (f"bad {i}", f"good {i}", "B")
        else:
            assert (it.response_a, it.response_b, it.label) == (f"good {i}", f"bad {i}", "A")
        assert it.meta["swapped"] == bool(coin)
    assert load.summary()["labels"] == {"A": int((~coins).sum()), "B": int(coins.sum())}
    assert 0 < coins.sum() < 40
    assert reorder_fixed_pairs(list(range(40)), seed=42) == coins.tolist()


def test_rewardbench_seed_subsets_and_no_reorder(rb_file):
    a = load_dataset("rewardbench", path=str(rb_file), seed=42)
    b = load_dataset("rewardbench", path=str(rb_file), seed=7)
    assert [it.label for it in a.items] != [it.label for it in b.items]
    again = load_dataset("rewardbench", path=str(rb_file), seed=42)
    assert [it.label for it in again.items] == [it.label for it in a.items]
    # a subset filter does not change any item's order
    chat = load_dataset("rewardbench", path=str(rb_file), subsets=["chat"])
    full = {it.item_id: it.label for it in a.items}
    assert len(chat.items) == 20 and all(full[it.item_id] == it.label for it in chat.items)
    fixed = load_dataset("rewardbench", path=str(rb_file), reorder=False)
    assert fixed.reordered is False and {it.label for it in fixed.items} == {"A"}
    assert any("EVERY label is 'A'" in n for n in fixed.notes)


# -- Arena ----------------------------------------------------------------------------------------

def _battle(i, winner="model_a", empty=False):
    conv_a = [{"role": "user", "content": f"ask {i}"}, {"role": "assistant", "content": "" if empty else f"left {i}"}]
    conv_b = [{"role": "user", "content": f"ask {i}"}, {"role": "assistant", "content": f"right {i}"}]
    return {"question_id": f"q{i}", "model_a": "m1", "model_b": "m2", "winner": winner, "judge": "arena_user",
            "conversation_a": conv_a, "conversation_b": conv_b, "turn": 1, "anony": True,
            "language": "English", "tstamp": 0.0}


def test_arena_winner_mapping_and_drops(tmp_path):
    f = write_jsonl(tmp_path / "arena.jsonl", [
        _battle(0, "model_a"), _battle(1, "model_b"), _battle(2, "tie"), _battle(3, "tie (bothbad)"),
        _battle(4, "model_a", empty=True)])
    load = load_dataset("arena", path=str(f))
    assert [(it.item_id, it.label) for it in load.items] == [("q0", "A"), ("q1", "B"), ("q2", "tie"),
                                                             ("q3", "tie")]
    assert load.items[3].meta["winner"] == "tie (bothbad)"
    assert load.items[0].response_a == "left 0" and load.items[0].question == "ask 0"
    assert load.dropped == [{"row": 5, "item_id": "q4", "reason": "empty response"}]
    nt = load_dataset("arena", path=str(f), tie_policy="drop")
    assert [it.item_id for it in nt.items] == ["q0", "q1"]


def test_arena_seeded_sample(tmp_path):
    f = write_jsonl(tmp_path / "arena.jsonl", [_battle(i, "model_b") for i in range(30)])
    load = load_dataset("arena", path=str(f), sample=8)
    expected = sorted(np.random.default_rng(42).choice(30, size=8, replace=False).tolist())
    assert [it.item_id for it in load.items] == [f"q{i}" for i in expected]
    assert load.seed == 42
    other = load_dataset("arena", path=str(f), sample=8, seed=1)
    assert [it.item_id for it in other.items] != [it.item_id for it in load.items]


def test_arena_malformed_conversation(tmp_path):
    bad = _battle(0)
    bad["conversation_b"] = [{"role": "user"}]
    f = write_jsonl(tmp_path / "arena.jsonl", [_battle(1), bad])
    with pytest.raises(ItemError, match=r"row 2, field 'conversation_b'"):
        load_dataset("arena", path=str(f))


# -- Judge's Verdict ------------------------------------------------------------------------------

def test_judges_verdict_point_items(tmp_path):
    f = write_jsonl(tmp_path / "jv.jsonl", [
        {"item_name": "t1", "question": "How?", "gen_answer": "Like so", "gt_answer": "Like so", "score": 2,
         "dataset_name": "TechQA"},
        {"item_name": "t2", "question": "Why?", "gen_answer": "No idea", "gt_answer": "Because", "score": 0,
         "dataset_name": "TechQA"},
    ])
    load = load_dataset("judges-verdict", path=str(f), scale=[0, 1, 2])
    a, b = load.items
    assert isinstance(a, PointItem)
    assert (a.item_id, a.response, a.reference, a.label, a.category) == ("t1", "Like so", "Like so", 2, "TechQA")
    assert b.label == 0 and a.scale == (0, 1, 2)
    s = load.summary()
    # responses "Like so" (7 chars) and "No idea" (7 chars)
    assert s["kind"] == "point" and s["response_chars"] == {"mean": 7.0, "median": 7.0, "min": 7, "max": 7}
    assert s["labels"] == {"0": 1, "2": 1}
    with pytest.raises(ItemError, match=r"row 1, field 'label'.*not on the scale"):
        load_dataset("judges-verdict", path=str(f), scale=[0, 1])


def test_judges_verdict_annotator_majority_and_field_map(tmp_path):
    f = write_json(tmp_path / "jv.json", [
        {"id": 1, "query": "q", "answer": "a", "annotations": [{"score": 1}, {"score": 1}, {"score": 0}]},
        {"id": 2, "query": "q", "answer": "b", "annotations": [0, 1, 2]},
    ])
    load = load_dataset("judges-verdict", path=str(f))
    assert [it.label for it in load.items] == [1, None]       # 1,1,0 -> 1; 0,1,2 -> no majority
    assert load.items[1].meta["no_majority"] is True
    g = write_jsonl(tmp_path / "jv2.jsonl", [{"uid": "x", "ask": "q", "reply": "r", "grade": 1}])
    load2 = load_dataset("judges-verdict", path=str(g),
                         field_map={"question": "ask", "response": "reply", "label": "grade"})
    assert (load2.items[0].question, load2.items[0].response, load2.items[0].label) == ("q", "r", 1)
    with pytest.raises(ItemError, match=r"row 1, field 'response'"):
        load_dataset("judges-verdict", path=str(g), field_map={"question": "ask"})


# -- CSV / Parquet / JSONL ------------------------------------------------------------------------

def _frame():
    return pd.DataFrame({"id": ["x1", "x2", "x3"], "prompt": ["q1", "q2", "q3"],
                         "first": ["a1", "a2", "a3"], "second": ["b1", "b2", "b3"],
                         "gold": ["A", "tie", None], "note": ["n1", "n2", "n3"]})


FIELD_MAP = {"item_id": "id", "question": "prompt", "response_a": "first", "response_b": "second",
             "label": "gold"}


def test_csv_and_parquet_with_field_map(tmp_path):
    df = _frame()
    df.to_csv(tmp_path / "pairs.csv", index=False)
    df.to_parquet(tmp_path / "pairs.parquet", index=False)
    for name, fn in (("csv", "pairs.csv"), ("parquet", "pairs.parquet")):
        load = load_dataset(name, path=str(tmp_path / fn), field_map=FIELD_MAP)
        assert load.name == "pairs"
        assert [(it.item_id, it.label) for it in load.items] == [("x1", "A"), ("x2", "tie"), ("x3", None)]
        assert isinstance(load.items[0], PairItem) and load.items[0].response_b == "b1"
        assert load.items[0].meta == {"note": "n1"}      # unmapped columns go to meta


def test_csv_errors_name_line_and_column(tmp_path):
    df = _frame()
    df.loc[1, "first"] = None
    df.to_csv(tmp_path / "pairs.csv", index=False)
    # CSV rows are file lines: header is line 1, the second record is line 3
    with pytest.raises(ItemError, match=r"pairs.csv, row 3, field 'first'"):
        load_dataset("csv", path=str(tmp_path / "pairs.csv"), field_map=FIELD_MAP)
    df2 = _frame()
    df2.loc[0, "gold"] = "maybe"
    df2.to_parquet(tmp_path / "p.parquet", index=False)
    with pytest.raises(ItemError, match=r"p.parquet, row 1, field 'label'"):
        load_dataset("parquet", path=str(tmp_path / "p.parquet"), field_map=FIELD_MAP)


def test_limit_keeps_first_items_and_says_so(tmp_path):
    _frame().to_csv(tmp_path / "pairs.csv", index=False)
    load = load_dataset("csv", path=str(tmp_path / "pairs.csv"), field_map=FIELD_MAP, limit=2)
    assert [it.item_id for it in load.items] == ["x1", "x2"]
    assert any("limited to the first 2 of 3" in n for n in load.notes)


def test_summary_reports_labels_ties_dropped_lengths(tmp_path):
    f = write_json(tmp_path / "t.json", [_panda(0, (1, 1, 2), "abcd", "ab"), _panda(1, (0, 0, 2)),
                                         _panda(2, (0, 0, 0))])
    s = load_dataset("pandalm", path=str(f), tie_policy="drop").summary()
    assert s["n_items"] == 1 and s["labels"] == {"A": 1}
    assert s["n_dropped"] == 2 and s["dropped_reasons"] == {"tie majority": 2}
    assert s["response_a_chars"]["max"] == 4 and s["response_b_chars"]["min"] == 2


def test_judges_verdict_inferred_scale_is_numeric_order(tmp_path):
    f = write_jsonl(tmp_path / "jv.jsonl", [
        {"id": i, "question": "q", "response": "r", "score": s} for i, s in enumerate([1, 0.5, 0, 1])])
    load = load_dataset("judges-verdict", path=str(f))
    assert load.items[0].scale == (0, 0.5, 1)


def test_nested_conversations_read_from_parquet(tmp_path):
    """Hub exports are Parquet; nested message lists come back as numpy arrays and must still load."""
    recs = [_mt(81, "vicuna", "alpaca", "model_a", "e1", 1), _mt(81, "vicuna", "alpaca", "model_a", "e2", 2)]
    pd.DataFrame(recs).to_parquet(tmp_path / "mt.parquet", index=False)
    load = load_dataset("mtbench-human", path=str(tmp_path / "mt.parquet"))
    assert [(it.item_id, it.label) for it in load.items] == [("81-alpaca-vs-vicuna-t1", "B"),
                                                             ("81-alpaca-vs-vicuna-t2", "B")]
    pd.DataFrame([_battle(0, "model_b")]).to_parquet(tmp_path / "arena.parquet", index=False)
    arena = load_dataset("arena", path=str(tmp_path / "arena.parquet"))
    assert arena.items[0].label == "B" and arena.items[0].response_b == "right 0"


def test_jsonl_limit_and_unknown_option(tmp_path):
    f = write_jsonl(tmp_path / "p.jsonl", [
        {"item_id": str(i), "question": "q", "response_a": "a", "response_b": "b", "label": "A"} for i in range(3)])
    assert [it.item_id for it in load_dataset("jsonl", path=str(f), limit=2).items] == ["0", "1"]
    with pytest.raises(ItemError, match="unknown option"):
        load_dataset("jsonl", path=str(f), splitt="x")
    assert len(load_dataset("jsonl", path=str(f), seed=3).items) == 3


def test_llmbar_repository_layout(tmp_path):
    rec = {"input": "q", "output_1": "a", "output_2": "b", "label": 2}
    (tmp_path / "Natural").mkdir()
    (tmp_path / "Adversarial" / "Neighbor").mkdir(parents=True)
    (tmp_path / "Natural" / "evaluators" / "GPT-4" / "CoT").mkdir(parents=True)
    write_json(tmp_path / "Natural" / "dataset.json", [rec, rec])
    write_json(tmp_path / "Adversarial" / "Neighbor" / "dataset.json", [rec])
    write_json(tmp_path / "Natural" / "evaluators" / "GPT-4" / "CoT" / "result.json", [rec])
    load = load_dataset("llmbar", path=str(tmp_path))
    assert [it.item_id for it in load.items] == ["Natural-0", "Natural-1", "Adversarial_Neighbor-0"]
    assert load.items[2].label == "B" and load.items[2].category == "Adversarial_Neighbor"
