"""Keys that live outside the columns -- file names, list-valued columns, an id join -- in the generic
table importer and the FastChat-style review importer built on the same code (importers/_keys.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verdictlab.core.items import ItemError
from verdictlab.importers import get_importer, import_into
from verdictlab.store import open_store

ANSWERS = {"alpha": {1: "a1", 2: "a2"}, "bravo": {1: "b1", 2: "b2"}}


def _jsonl(path: Path, recs: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _answers(root: Path) -> Path:
    for system, by_q in ANSWERS.items():
        _jsonl(root / "generations" / f"answer_{system}.jsonl",
               [{"answer_id": f"{system}-q{q}", "model_id": f"{system}:v1", "question_id": q, "text": t}
                for q, t in by_q.items()])
    _jsonl(root / "question.jsonl", [{"question_id": q, "text": f"question {q}"} for q in (1, 2)])
    return root / "generations"


def _review(q: int, first: str, second: str, score: Any) -> dict[str, Any]:
    return {"review_id": f"r{q}{first}", "question_id": q, "answer1_id": f"{first}-q{q}",
            "answer2_id": f"{second}-q{q}", "reviewer_id": 1, "text": f"review of {first} then {second}",
            "score": score}


def test_fastchat_reviews_take_systems_and_order_from_the_answer_ids(tmp_path: Path) -> None:
    answers = _answers(tmp_path)
    reviews = tmp_path / "ratings-gpt4"
    # regression: this file is NAMED bravo-vs-alpha but SHOWS alpha first (answer1 = alpha's answer), as
    # real releases do; its rows must be order AB (alpha = canonical A shown first), not BA
    _jsonl(reviews / "answer_bravo-vs-answer_alpha-gpt4-reviewer.jsonl",
           [_review(1, "alpha", "bravo", [8, 6]), _review(2, "alpha", "bravo", [-1, -1])])
    _jsonl(reviews / "answer_alpha-vs-answer_bravo-gpt4-reviewer.jsonl",
           [_review(1, "bravo", "alpha", 1), _review(2, "bravo", "alpha", 3)])
    batch = get_importer("fastchat-reviews")(reviews, answers=answers)
    rows = {(r["item_id"], r["order"]): r for r in batch.judgments}
    assert set(rows) == {("1-alpha:v1-vs-bravo:v1", o) for o in ("AB", "BA")} | {
        ("2-alpha:v1-vs-bravo:v1", o) for o in ("AB", "BA")}
    ab1 = rows[("1-alpha:v1-vs-bravo:v1", "AB")]
    assert (ab1["verdict"], ab1["judge"], ab1["system_a"], ab1["system_b"]) == ("A", "gpt4", "alpha:v1", "bravo:v1")
    assert json.loads(ab1["scores"]) == {"score_a": 8, "score_b": 6}
    # [-1, -1]: not read -> a failed parse, never a verdict
    unread = rows[("2-alpha:v1-vs-bravo:v1", "AB")]
    assert (unread["verdict"], unread["parse_status"]) == (None, "failed") and "[-1, -1]" in unread["parse_detail"]
    # three-class: 1 = answer 1 (bravo, shown first in BA) -> canonical B; 3 = tie
    assert rows[("1-alpha:v1-vs-bravo:v1", "BA")]["verdict"] == "B"
    assert rows[("2-alpha:v1-vs-bravo:v1", "BA")]["verdict"] == "tie"
    item = next(it for it in batch.items if it.item_id == "1-alpha:v1-vs-bravo:v1")
    assert (item.question, item.response_a, item.response_b) == ("question 1", "a1", "b1")


def test_fastchat_reviews_refuse_a_bad_score_naming_file_row_and_field(tmp_path: Path) -> None:
    answers = _answers(tmp_path)
    reviews = _jsonl(tmp_path / "reviews" / "r.jsonl", [_review(1, "alpha", "bravo", [8]),
                                                          _review(2, "alpha", "ghost", 1)])
    with pytest.raises(ItemError) as err:
        get_importer("fastchat-reviews")(reviews.parent, answers=answers)
    text = str(err.value)
    assert "r.jsonl" in text and "row 1" in text and "field 'score'" in text
    assert "row 2" in text and "answer id 'ghost-q2' is in no answers file" in text


def test_a_table_folder_with_keys_in_file_names_list_columns_and_an_id_join(tmp_path: Path) -> None:
    answers = _answers(tmp_path)
    logs = tmp_path / "logs"
    # one file per judge and shown pair; the score pair is a list; the rows name the answers they show
    _jsonl(logs / "judge-j1__alpha-vs-bravo.jsonl",
           [{"qid": 1, "first": "alpha-q1", "second": "bravo-q1", "score": [9, 3]}])
    _jsonl(logs / "judge-j1__bravo-vs-alpha.jsonl",
           [{"qid": 1, "first": "bravo-q1", "second": "alpha-q1", "score": [3, 9]}])
    _jsonl(logs / "judge-j2__alpha-vs-bravo.jsonl",
           [{"qid": 2, "first": "alpha-q2", "second": "bravo-q2", "score": [5, 5]}])
    opts = {"file_pattern": r"^judge-(?P<judge>[^_]+)__", "answers": str(answers), "id_from": "pair",
            "protocol": "p", "dataset": "d",
            "field_map": {"item_id": "qid", "answer_first_id": "first", "answer_second_id": "second",
                          "score_first": "score[0]", "score_second": "score[1]"}}
    import_into("jsonl", logs, run_dir=tmp_path / "run", **opts)
    with open_store(tmp_path / "run") as st:
        df = st.judgments(["judge", "item_id", "order", "verdict", "system_a", "system_b"])
        items = {it.item_id: it for it in st.items()}
    got = sorted(map(tuple, df.to_numpy().tolist()))
    assert got == [("j1", "1-alpha:v1-vs-bravo:v1", "AB", "A", "alpha:v1", "bravo:v1"),
                   ("j1", "1-alpha:v1-vs-bravo:v1", "BA", "A", "alpha:v1", "bravo:v1"),
                   ("j2", "2-alpha:v1-vs-bravo:v1", "AB", "tie", "alpha:v1", "bravo:v1")]
    assert items["1-alpha:v1-vs-bravo:v1"].response_b == "b1"


def test_file_name_keys_and_list_columns_report_bad_input(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _jsonl(logs / "judge-j1.jsonl", [{"item_id": 1, "order": "AB", "score": 7}])
    _jsonl(logs / "other.jsonl", [{"item_id": 1, "order": "AB", "score": [1, 2]}])
    with pytest.raises(ItemError) as err:
        import_into("jsonl", logs, run_dir=tmp_path / "run", file_pattern=r"^judge-(?P<judge>\w+)",
                    protocol="p", dataset="d", field_map={"score_first": "score[0]", "score_second": "score[1]"})
    text = str(err.value)
    assert "other.jsonl: the file name does not match --file-pattern" in text
    assert "judge-j1.jsonl" in text and "field 'score'" in text and "cell is int 7" in text
    with pytest.raises(ItemError, match="name no key"):
        import_into("jsonl", logs, run_dir=tmp_path / "run", file_pattern=r"(?P<reviewer>\w+)")
    # the file name gives a system pair as shown: canonical by name, the order says which came first
    _jsonl(tmp_path / "one" / "bravo-vs-alpha.jsonl", [{"item_id": 1, "verdict": "A"}])
    batch = get_importer("jsonl")(tmp_path / "one", file_pattern=r"(?P<system_first>\w+)-vs-(?P<system_second>\w+)",
                                  judge="j", protocol="p", dataset="d", verdicts="positional")
    r = batch.judgments[0]
    assert (r["system_a"], r["system_b"], r["order"], r["verdict"]) == ("alpha", "bravo", "BA", "B")


def test_alpaca_eval_annotations_become_judgments_with_systems(tmp_path: Path) -> None:
    # a small synthetic annotations.json in AlpacaEval's format: the baseline is generator_1
    recs = [{"instruction": f"task {i}", "output_1": f"base {i}", "generator_1": "gpt4_1106_preview",
             "output_2": f"model {i}", "generator_2": "my-model", "annotator": "weighted_alpaca_eval_gpt4_turbo",
             "dataset": "helpful_base", "preference": pref, "raw_completion": {"m": "x"} if i == 0 else "M"}
            for i, pref in enumerate([1.9, 1.2, 1.5, None, 1.0])]
    f = tmp_path / "annotations.json"
    f.write_text(json.dumps(recs))
    batch = get_importer("alpaca-eval")(f)
    rows = batch.judgments
    # canonical A = the name that sorts first: 'gpt4_1106_preview' < 'my-model'; shown output_1 first -> AB
    assert {(r["system_a"], r["system_b"], r["order"], r["judge"]) for r in rows} == {
        ("gpt4_1106_preview", "my-model", "AB", "weighted_alpaca_eval_gpt4_turbo")}
    # P(A) = 2 - preference (A is output_1): 0.1, 0.8, 0.5, none, 1.0
    assert [r["p_a"] for r in rows] == [pytest.approx(0.1), pytest.approx(0.8), 0.5, None, 1.0]
    assert [r["verdict"] for r in rows] == ["B", "A", "tie", None, "A"]
    assert rows[3]["parse_status"] == "failed"
    assert batch.items[0].item_id == "0-gpt4_1106_preview-vs-my-model" and batch.items[0].response_b == "model 0"
    recs[1]["preference"] = 3.5
    f.write_text(json.dumps(recs))
    with pytest.raises(ItemError, match=r"row 2, field 'preference': must be in \[1, 2\]"):
        get_importer("alpaca-eval")(f)
