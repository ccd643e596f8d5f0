"""Perturbation kinds written by rules, the near-duplicate measure, and the suite's bookkeeping: known
values worked out by hand, every case a valid item of the data contract."""

from __future__ import annotations

import json
import random

import pytest

from verdictlab.core.items import ItemError, PointItem, perturbation_of
from verdictlab.datasets import load_dataset
from verdictlab.datasets.near_duplicates import DEFAULT_THRESHOLD, most_similar, similarity, words
from verdictlab.datasets.perturb import DETERMINISTIC_KINDS, KINDS, perturb_items
from verdictlab.datasets.perturb_cases import NotApplicable, case_rng
from verdictlab.datasets.perturb_format import casing, list_style, markdown, whitespace
from verdictlab.datasets.perturb_verbosity import PADDING_SENTENCES, pad
from verdictlab.datasets.perturbation_suite import load_perturbations, suite_lines

TEXT = "Ice floats. It is less dense than water. See `rho` at https://example.org/Ice for more."


def _item(i: int = 0, response: str = TEXT, label: object = 4, **kw: object) -> PointItem:
    return PointItem(item_id=f"s{i}", dataset="d", question="Why?", response=response, label=label,
                     scale=(1, 2, 3, 4, 5), **kw)


# -- the similarity measure ---------------------------------------------------------------------------

def test_similarity_known_values():
    # words a b c / a b d: one matching block "a b" (M = 2), ratio 2*2/(3+3) = 2/3
    assert similarity("a b c", "A, b; d") == pytest.approx(2 / 3)
    # same words reversed: SequenceMatcher finds one matching word ("a" or "c"): 2*1/6 = 1/3
    assert similarity("a b c", "c b a") == pytest.approx(1 / 3)
    assert similarity("", "...") == 1.0 and similarity("x", "") == 0.0
    assert words("It's 2 Cats") == ["it", "s", "2", "cats"]
    # a lead-in of 3 words before 27: 2*27/(27+30) = 0.947 >= 0.9 -- a copy
    body = " ".join(f"w{i}" for i in range(27))
    assert similarity(body, "In other words " + body) == pytest.approx(54 / 57)
    assert similarity(body, "In other words " + body) >= DEFAULT_THRESHOLD
    assert most_similar("a b c", [("x", "a b d"), ("y", "a b c")]) == ("y", 1.0)
    assert most_similar("a", []) == (None, 0.0)


# -- rules --------------------------------------------------------------------------------------------

def test_whitespace_layouts_change_only_whitespace():
    for seed in range(6):
        edit = whitespace(TEXT, random.Random(seed))
        assert edit.response != TEXT and edit.response.split() == TEXT.split()
        assert edit.params["layout"] in ("double_space", "sentence_lines", "blank_lines")


def test_markdown_strips_or_adds():
    assert markdown("**Bold** and `code`.", random.Random(0)).response == "Bold and code."
    added = markdown("First sentence. Second one.", random.Random(0))
    assert added.response == "## Answer\n\n**First sentence.** Second one." and added.params == {"direction": "add"}


def test_list_style_swaps_markers_or_lists_prose():
    assert list_style("Steps:\n- a\n- b", random.Random(0)).response == "Steps:\n1. a\n2. b"
    assert list_style("1. a\n2) b", random.Random(0)).response == "- a\n- b"
    assert list_style("One. Two.", random.Random(0)).response == "- One.\n- Two."
    with pytest.raises(NotApplicable, match="neither a list nor two sentences"):
        list_style("Just one sentence", random.Random(0))


def test_casing_leaves_code_and_addresses():
    edit = casing(TEXT, random.Random(1))
    assert "`rho`" in edit.response and "https://example.org/Ice" in edit.response
    assert edit.response.replace("`rho`", "").lower() == TEXT.replace("`rho`", "").lower()
    with pytest.raises(NotApplicable):
        casing("123 456", random.Random(0))


def test_padding_has_the_stated_size_and_is_reproducible():
    edit = pad("Answer.", random.Random(3), chars=120)
    added = edit.response[len("Answer.\n\n"):]
    assert len(added) >= 120 and edit.params["chars"] == len(edit.response) - len("Answer.")
    assert added == " ".join(PADDING_SENTENCES[i] for i in edit.params["sentences"])
    assert pad("Answer.", random.Random(3), chars=120) == edit           # same draw, same padding
    with pytest.raises(ValueError, match="at least 1"):
        pad("x", random.Random(0), chars=0)


def test_case_rng_is_independent_of_order():
    assert case_rng(7, "d", "s1", "k").random() == case_rng(7, "d", "s1", "k").random()
    assert case_rng(7, "d", "s1", "k").random() != case_rng(8, "d", "s1", "k").random()


# -- the suite ----------------------------------------------------------------------------------------

def test_rule_cases_fill_the_contract():
    items = [_item(0), _item(1, "Only one sentence"), _item(2, "Two. Sentences.", label=None)]
    suite = perturb_items(items, list(DETERMINISTIC_KINDS), seed=5)
    for case in suite.cases:
        p = perturbation_of(case)
        assert p is not None and p.origin == "deterministic" and p.counts() and p.status == "generated"
        src = next(it for it in items if it.item_id == p.source_id)
        assert case.item_id == f"{src.item_id}~{p.kind}" and case.dataset == "d" and case.label == src.label
        assert case.meta["perturbation"]["seed"] == 5 and "params" in case.meta["perturbation"]
    counts = suite.counts()
    # list_style does not apply to the one-sentence item; the transcript kinds apply to no item here
    assert counts["format.list_style"] == {"kept": 2, "not_applicable": 1}
    assert counts["transcript.drop_tool_result"] == {"not_applicable": 3}
    assert counts["verbosity.pad"] == {"kept": 3}
    assert [it.item_id for it in suite.items][:3] == ["s0", "s0~format.whitespace", "s0~format.markdown"]
    again = perturb_items(items, list(DETERMINISTIC_KINDS), seed=5)
    assert again.cases == suite.cases                                      # seeded: the same suite


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match="unknown perturbation kind"):
        perturb_items([_item()], ["format.nope"])
    with pytest.raises(ValueError, match="written by a model"):
        perturb_items([_item()], ["paraphrase"])
    from verdictlab.core.items import PairItem

    with pytest.raises(ValueError, match="point items"):
        perturb_items([PairItem(item_id="p", dataset="d", question="q", response_a="a", response_b="b")],
                      ["format.casing"])
    assert set(KINDS) == {*DETERMINISTIC_KINDS, "paraphrase", "label_flip", "synthetic"}


def test_suite_file_round_trips_and_is_checked(tmp_path):
    suite = perturb_items([_item(0), _item(1)], ["format.casing", "verbosity.pad"], seed=1)
    path = tmp_path / "suite.jsonl"
    path.write_text("".join(suite_lines(suite.items)), encoding="utf-8")
    load = load_perturbations(str(path))
    assert load.items == suite.items and load.name == "d"
    assert load.notes == ["perturbation suite: 2 source item(s), 4 case(s)"]
    assert load_dataset("perturbations", path=str(path), dataset="e").items[0].dataset == "e"
    # a case whose source is not in the file, a duplicate id and a malformed contract: each named
    lines = path.read_text(encoding="utf-8").splitlines()
    bad_meta = json.loads(lines[1])
    bad_meta["meta"]["perturbation"]["class"] = "neutral"
    (tmp_path / "bad.jsonl").write_text("\n".join([lines[1], lines[0], lines[0], json.dumps(bad_meta), "[1]"]) + "\n",
                                        encoding="utf-8")
    with pytest.raises(ItemError) as err:
        load_perturbations(str(tmp_path / "bad.jsonl"))
    text = str(err.value)
    assert "row 3, field 'item_id': duplicate item_id 's0'" in text
    assert "row 4, field 'meta.perturbation.class'" in text and "row 5: must be a JSON object" in text
    (tmp_path / "orphan.jsonl").write_text(lines[1] + "\n", encoding="utf-8")
    with pytest.raises(ItemError, match="row 1, field 'meta.perturbation.source_id': its source item 's0' is not"):
        load_perturbations(str(tmp_path / "orphan.jsonl"))
