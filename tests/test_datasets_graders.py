"""The two public grader test sets, read in their real formats from small samples written here (the
project ships neither): HelpSteer2 (ordinal 0-4 ratings) and RAGTruth (hallucination spans -> PASS/FAIL)."""

from __future__ import annotations

import gzip
import json

import pytest

from verdictlab.core.items import ItemError
from verdictlab.datasets import load_dataset


def _helpsteer(path, rows):
    path.write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")))
    return path


def _hs_row(i, helpful=3):
    return {"prompt": f"Explain thing {i}.", "response": f"Thing {i} is explained.", "helpfulness": helpful,
            "correctness": 4, "coherence": 4, "complexity": 1, "verbosity": 2}


def test_helpsteer2_reads_the_gzip_release(tmp_path):
    f = _helpsteer(tmp_path / "validation.jsonl.gz", [_hs_row(0, 0), _hs_row(1, 4), _hs_row(2, 2)])
    load = load_dataset("helpsteer2", path=str(f))
    assert [it.label for it in load.items] == [0, 4, 2]
    it = load.items[1]
    assert it.scale == (0, 1, 2, 3, 4) and it.question == "Explain thing 1." and it.meta["ratings"]["correctness"] == 4
    assert it.item_id.startswith("h") and len({i.item_id for i in load.items}) == 3
    again = load_dataset("helpsteer2", path=str(f), attribute="verbosity")
    assert [i.label for i in again.items] == [2, 2, 2] and [i.item_id for i in again.items] == [i.item_id for i in load.items]


def test_helpsteer2_bad_rows_name_file_row_field(tmp_path):
    f = _helpsteer(tmp_path / "train.jsonl.gz", [_hs_row(0), {**_hs_row(1), "helpfulness": 7}])
    with pytest.raises(ItemError, match=r"train.jsonl.gz, row 2, field 'helpfulness'.*0-4"):
        load_dataset("helpsteer2", path=str(f))
    with pytest.raises(ItemError, match="attribute must be one of"):
        load_dataset("helpsteer2", path=str(f), attribute="kindness")
    bad = tmp_path / "x.jsonl.gz"
    bad.write_bytes(b"not gzip")
    with pytest.raises(ItemError, match="not a gzip"):
        load_dataset("helpsteer2", path=str(bad))


def _ragtruth(folder, responses, sources):
    folder.mkdir()
    (folder / "response.jsonl").write_text("".join(json.dumps(r) + "\n" for r in responses), encoding="utf-8")
    (folder / "source_info.jsonl").write_text("".join(json.dumps(s) + "\n" for s in sources), encoding="utf-8")
    return folder


def _rt_response(rid, sid, labels, split="test"):
    return {"id": rid, "source_id": sid, "model": "m-7b", "temperature": 0.7, "labels": labels, "split": split,
            "quality": "good", "response": f"Answer {rid}."}


SPAN = {"start": 0, "end": 6, "text": "Answer", "meta": "not in the passages", "label_type": "Evident Baseless Info"}


def test_ragtruth_spans_become_pass_fail(tmp_path):
    folder = _ragtruth(tmp_path / "rt", [
        _rt_response("1", "s1", []), _rt_response("2", "s1", [SPAN]),
        _rt_response("3", "s2", [{**SPAN, "implicit_true": True}]),          # right though not in the material
        _rt_response("4", "s2", [SPAN], split="train")],
        [{"source_id": "s1", "task_type": "QA", "source": "MARCO", "source_info": {"question": "q"},
          "prompt": "Briefly answer: q"},
         {"source_id": "s2", "task_type": "Summary", "source": "CNN/DM", "source_info": "text", "prompt": "Summarize"}])
    load = load_dataset("ragtruth", path=str(folder))
    assert [(i.item_id, i.label, i.category) for i in load.items] == [
        ("1", "PASS", "QA"), ("2", "FAIL", "QA"), ("3", "PASS", "Summary")]
    assert load.items[1].meta["span_types"] == ["Evident Baseless Info"] and load.items[0].question == "Briefly answer: q"
    assert len(load_dataset("ragtruth", path=str(folder / "response.jsonl"), split="all").items) == 4


def test_ragtruth_errors(tmp_path):
    folder = _ragtruth(tmp_path / "rt", [_rt_response("1", "nope", [])],
                       [{"source_id": "s1", "task_type": "QA", "prompt": "p"}])
    with pytest.raises(ItemError, match=r"response.jsonl, row 1, field 'source_id'"):
        load_dataset("ragtruth", path=str(folder))
    (folder / "source_info.jsonl").unlink()
    with pytest.raises(ItemError, match="source_info.jsonl"):
        load_dataset("ragtruth", path=str(folder))
