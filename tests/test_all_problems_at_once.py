""""All problems at once" holds across kinds: a line that is not JSON is one problem among the others of
the file, never the end of the listing (it hid every other problem, and ``--format json`` gave
``"problems": []``), and a row lists every one of its problems (``verdict: 7, tokens_in: -3, p_a: 5``
listed two of three; a missing field hid a bad label)."""

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
