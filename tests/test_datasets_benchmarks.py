"""Loaders on the real benchmark files (LLMBar, PandaLM) in the shared data folder.

Expected values are recomputed here from the raw JSON with plain Python, independently of the
loaders, so a mapping mistake (label 1 -> B, output_1 -> response_b, majority wrong) fails."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from verdictlab.core.items import ItemError, PairItem
from verdictlab.datasets import load_dataset

SPLITS = {"Natural": 100, "Adversarial_Neighbor": 134, "Adversarial_GPTInst": 92,
          "Adversarial_GPTOut": 47, "Adversarial_Manual": 46}


def test_llmbar_folder_has_419_pairs_by_split(shared_data):
    load = load_dataset("llmbar", path=str(shared_data / "llmbar"))
    # 100 + 134 + 92 + 47 + 46 = 419
    assert len(load.items) == 419
    assert load.summary()["categories"] == SPLITS
    assert load.summary()["n_ties"] == 0
    assert len({it.item_id for it in load.items}) == 419
    assert load.items[0].item_id == "Natural-0"  # Natural first


def test_llmbar_mapping_matches_raw_records(shared_data):
    load = load_dataset("llmbar", path=str(shared_data / "llmbar"))
    by_id = {it.item_id: it for it in load.items}
    for split in SPLITS:
        raw = json.loads((shared_data / "llmbar" / f"{split}.json").read_text())
        for i, rec in enumerate(raw):
            it = by_id[f"{split}-{i}"]
            assert isinstance(it, PairItem)
            assert it.question == rec["input"]
            assert it.response_a == rec["output_1"]   # output_1 is canonical A
            assert it.response_b == rec["output_2"]
            assert it.label == {1: "A", 2: "B"}[int(rec["label"])]
            assert it.category == split


def test_llmbar_single_file_and_split_filter(shared_data):
    one = load_dataset("llmbar", path=str(shared_data / "llmbar" / "Natural.json"))
    assert len(one.items) == 100 and {it.category for it in one.items} == {"Natural"}
    some = load_dataset("llmbar", path=str(shared_data / "llmbar"),
                        splits=["Adversarial_GPTOut", "Adversarial_Manual"])
    assert len(some.items) == 47 + 46
    with pytest.raises(ItemError, match="Adversarial_Nope"):
        load_dataset("llmbar", path=str(shared_data / "llmbar"), splits=["Adversarial_Nope"])


def _raw_majority(rec):
    votes = [rec["annotator1"], rec["annotator2"], rec["annotator3"]]
    value, n = Counter(votes).most_common(1)[0]
    return {0: "tie", 1: "A", 2: "B"}[value] if n >= 2 else None


def test_pandalm_keep_ties_labels_are_majority_of_three(shared_data):
    path = shared_data / "pandalm" / "testset-v1.json"
    raw = json.loads(path.read_text())
    load = load_dataset("pandalm", path=str(path))
    assert len(load.items) == 999 == len(raw)
    expected = Counter(_raw_majority(r) for r in raw)
    got = Counter(it.label for it in load.items)
    assert got == expected
    assert load.summary()["n_ties"] == expected["tie"] > 0   # ties kept as ties
    for it, rec in zip(load.items, raw, strict=True):
        assert it.item_id == str(rec["idx"])
        assert it.response_a == str(rec["response1"])
        assert it.label == _raw_majority(rec)


def test_pandalm_drop_ties_leaves_894_valid_pairs(shared_data):
    """Seed 003: "after removing tie-majority examples, 894 valid pairwise examples remain"."""
    path = shared_data / "pandalm" / "testset-v1.json"
    raw = json.loads(path.read_text())
    n_tie_majority = sum(_raw_majority(r) == "tie" for r in raw)
    load = load_dataset("pandalm", path=str(path), tie_policy="drop")
    assert len(load.items) == 999 - n_tie_majority
    assert len(load.items) == 894                       # the figure the paper reports
    assert load.summary()["dropped_reasons"] == {"tie majority": n_tie_majority}
    assert all(it.label in ("A", "B") for it in load.items)
    assert all(d["reason"] == "tie majority" for d in load.dropped)


def test_pandalm_boolean_responses_are_read_as_text_and_noted(shared_data):
    load = load_dataset("pandalm", path=str(shared_data / "pandalm" / "testset-v1.json"))
    coerced = [it for it in load.items if "coerced_bool_to_text" in it.meta]
    assert len(coerced) == 6
    assert any("JSON boolean" in n for n in load.notes)
    assert all(isinstance(it.response_a, str) and isinstance(it.response_b, str) for it in load.items)
