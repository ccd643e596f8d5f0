""""All problems at once" holds across kinds: a line that is not JSON is one problem among the others of
the file, never the end of the listing (it hid every other problem, and ``--format json`` gave
``"problems": []``), and a row lists every one of its problems (``verdict: 7, tokens_in: -3, p_a: 5``
listed two of three; a missing field hid a bad label).  The class: every importer that reads JSON Lines
(tables, FastChat judgments and reviews, votes) lists a broken line among its rows' problems."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app

runner = CliRunner()
ROW = {"judge": "j", "dataset": "d", "item_id": "1", "protocol": "p", "order": "AB", "temperature": 0, "rep": 0}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_row_lists_all_three_of_its_problems(tmp_path: Path) -> None:
    src = _write(tmp_path / "j.jsonl", [json.dumps({**ROW, "verdict": 7, "tokens_in": -3, "p_a": 5})])
    r = runner.invoke(app, ["import", "jsonl", str(src), "--run-dir", str(tmp_path / "r"), "--format", "json"])
    assert r.exit_code == 3
    problems = json.loads(r.stdout)["problems"]
    assert len(problems) == 3, problems
    assert [p.split(":")[0] for p in problems] == ["row 1, field 'verdict'", "row 1, field 'tokens_in'",
                                                  "row 1, field 'p_a'"]


def test_an_invalid_json_line_is_one_problem_among_the_others_of_an_import(tmp_path: Path) -> None:
    src = _write(tmp_path / "j.jsonl", [json.dumps({**ROW, "verdict": 7}), "{oops",
                                        json.dumps({**ROW, "item_id": "2", "order": "XY", "verdict": "A"})])
    r = runner.invoke(app, ["import", "jsonl", str(src), "--run-dir", str(tmp_path / "r"), "--format", "json"])
    assert r.exit_code == 3
    problems = json.loads(r.stdout)["problems"]
    assert [p.split(":")[0] for p in problems] == ["row 1, field 'verdict'", "row 2", "row 3, field 'order'"]
    assert "invalid JSON" in problems[1]
    assert "3 problems" in r.stderr and "invalid JSON" in r.stderr and "'XY'" in r.stderr


def test_one_problem_alone_is_listed_in_json_too(tmp_path: Path) -> None:
    src = _write(tmp_path / "j.jsonl", ["{oops"])
    r = runner.invoke(app, ["import", "jsonl", str(src), "--run-dir", str(tmp_path / "r"), "--format", "json"])
    assert r.exit_code == 3
    assert json.loads(r.stdout)["problems"] == ["row 1: invalid JSON: Expecting property name enclosed in double "
                                                "quotes (column 2)"]
    r = runner.invoke(app, ["import", "jsonl", str(tmp_path / "missing.jsonl"), "--run-dir", str(tmp_path / "r"),
                            "--format", "json"])
    assert r.exit_code == 3 and json.loads(r.stdout)["problems"] == ["file not found"]


@pytest.mark.parametrize("suffix", ["jsonl", "csv"])
def test_a_dataset_row_lists_its_bad_label_beside_its_missing_fields(tmp_path: Path, suffix: str) -> None:
    if suffix == "jsonl":
        src = _write(tmp_path / "p.jsonl", [json.dumps({"id": "1", "question": "q", "response_a": "a", "label": "Z"}),
                                            "{not json"])
    else:
        src = _write(tmp_path / "p.csv", ["id,question,response_a,label", "1,q,a,Z", '2,"q,a'])
    r = runner.invoke(app, ["datasets", "validate", str(src), "--format", "json"])
    assert r.exit_code == 3
    problems = json.loads(r.stdout)["problems"]
    fields = [p.split(": ")[0] for p in problems]
    assert "row 2, field 'item_id'" in fields and "row 2, field 'response_b'" in fields or \
        "row 1, field 'item_id'" in fields and "row 1, field 'response_b'" in fields, problems
    assert any("label" in f for f in fields), problems                # the bad label, beside the missing fields
    assert any("invalid JSON" in p or "malformed CSV" in p for p in problems), problems   # and the broken line


# -- the class: every importer that reads JSON Lines lists a broken line among its rows' problems -----------
def _fastchat(tmp_path: Path) -> tuple[list[str], Path]:
    def match(qid: int, g1: str) -> str:
        return json.dumps({"question_id": qid, "model_1": "a", "model_2": "b", "g1_winner": g1, "g2_winner": "tie",
                           "judge": ["gpt-4", "pair-v2"], "g1_judgment": "..", "g2_judgment": "..", "turn": 1})
    return ["fastchat"], _write(tmp_path / "gpt-4_pair.jsonl", [match(1, "model_3"), "{oops", match(3, "model_9")])


def _fastchat_reviews(tmp_path: Path) -> tuple[list[str], Path]:
    gen = tmp_path / "generations"
    gen.mkdir()
    for system in ("alpha", "bravo"):
        _write(gen / f"answer_{system}.jsonl", [json.dumps({"answer_id": f"{system}-q{q}", "model_id": system,
                                                            "question_id": q, "text": f"{system} {q}"})
                                                for q in (1, 2, 3)])
    reviews = tmp_path / "ratings-gpt4"
    reviews.mkdir()

    def review(q: int, score: object) -> str:
        return json.dumps({"question_id": q, "answer1_id": f"alpha-q{q}", "answer2_id": f"bravo-q{q}", "score": score})
    _write(reviews / "r.jsonl", [review(1, [8]), "{oops", review(3, "high")])
    return ["fastchat-reviews", "--answers", str(gen)], reviews / "r.jsonl"


def _votes(tmp_path: Path) -> tuple[list[str], Path]:
    rows = [json.dumps({**ROW, "order": o, "verdict": "A", "question": "?", "response_a": "a", "response_b": "b"})
            for o in ("AB", "BA")]
    r = runner.invoke(app, ["import", "jsonl", str(_write(tmp_path / "j.jsonl", rows)), "--run-dir",
                            str(tmp_path / "r")])
    assert r.exit_code == 0, r.stderr
    return ["votes"], _write(tmp_path / "votes.jsonl", [json.dumps({"item_id": "1", "annotator": "x", "vote": "maybe"}),
                                                        "{oops", json.dumps({"item_id": "1", "vote": "A"})])


@pytest.mark.parametrize("source", [_fastchat, _fastchat_reviews, _votes])
def test_every_json_lines_importer_lists_a_broken_line_among_the_rows_problems(tmp_path: Path, source) -> None:
    """Rows 1 and 3 are wrong, line 2 is not JSON: all three are listed, in row order (the broken line ended
    the listing of these readers)."""
    (fmt, *flags), src = source(tmp_path)
    r = runner.invoke(app, ["import", fmt, str(src), "--run-dir", str(tmp_path / "r"), *flags, "--format", "json"])
    assert r.exit_code == 3, r.output
    problems = json.loads(r.stdout)["problems"]
    rows = [p.split(":")[0].split(",")[0] for p in problems]
    assert rows == ["row 1", "row 2", "row 3"] and "invalid JSON" in problems[1], problems
