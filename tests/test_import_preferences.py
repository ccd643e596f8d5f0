"""Soft preferences and score pairs through the generic table importers (``--map``): stored as P(A)
and shown-term scores, a verdict derived by the stated rule where the table has none, and the
win-rate and score-ratio definitions on what was imported."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.items import ItemError
from verdictlab.importers._preferences import RULE_FROM_P, RULE_FROM_SCORES
from verdictlab.importers.tabular import import_table
from verdictlab.protocols.geval import canonical_scores
from verdictlab.store import open_store

WHOLE_FILE = {"judge": "j", "protocol": "p", "dataset": "d", "rep": 0, "temperature": 0.0}


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_soft_preference_first_shown_becomes_p_a_with_a_derived_verdict(tmp_path: Path) -> None:
    src = write(tmp_path / "prefs.jsonl", [
        {"id": "x", "order": "AB", "prob": 0.8},      # P(first = A) .8  -> P(A) .8, verdict A
        {"id": "x", "order": "BA", "prob": 0.7},      # first shown is B: P(A) = 1 - .7 = .3 -> B
        {"id": "y", "order": "AB", "prob": 0.5},      # exactly 1/2 -> tie
        {"id": "z", "order": "AB", "prob": None},     # nothing to go on -> unparsed
    ])
    batch = import_table(src, field_map={"item_id": "id", "p_first": "prob"}, **WHOLE_FILE)
    got = {(r["item_id"], r["order"]): r for r in batch.judgments}
    assert (got[("x", "AB")]["p_a"], got[("x", "AB")]["verdict"]) == (pytest.approx(0.8), "A")
    assert (got[("x", "BA")]["p_a"], got[("x", "BA")]["verdict"]) == (pytest.approx(0.3), "B")
    assert got[("y", "AB")]["verdict"] == "tie"
    assert got[("z", "AB")]["verdict"] is None and got[("z", "AB")]["parse_status"] == "failed"
    assert f"derived {RULE_FROM_P}" in got[("x", "BA")]["parse_detail"]
    assert any(RULE_FROM_P in n for n in batch.notes)


def test_a_verdict_column_wins_and_the_preference_is_stored_beside_it(tmp_path: Path) -> None:
    src = write(tmp_path / "prefs.jsonl", [{"id": "x", "order": "BA", "winner": "A", "pa": 0.4}])
    r = import_table(src, field_map={"item_id": "id", "verdict": "winner", "p_a": "pa"}, **WHOLE_FILE).judgments[0]
    assert (r["verdict"], r["p_a"]) == ("A", pytest.approx(0.4))       # the judge's word, not the rule's
    assert "derived" not in r["parse_detail"]


def test_score_pairs_are_stored_in_shown_terms_and_give_the_verdict(tmp_path: Path) -> None:
    src = write(tmp_path / "scores.jsonl", [
        {"id": "x", "order": "AB", "s1": 8, "s2": 6},       # first (A) 8 > second (B) 6 -> A
        {"id": "x", "order": "BA", "s1": 8, "s2": 6},       # first shown is B: B 8 > A 6 -> B
        {"id": "y", "order": "AB", "s1": 7, "s2": 7},       # equal -> tie
        {"id": "z", "order": "AB", "s1": -1, "s2": -1},     # FastChat's "could not read" -> unparsed
    ])
    batch = import_table(src, field_map={"item_id": "id", "score_first": "s1", "score_second": "s2"},
                         **WHOLE_FILE)
    got = {(r["item_id"], r["order"]): r for r in batch.judgments}
    assert [got[k]["verdict"] for k in (("x", "AB"), ("x", "BA"), ("y", "AB"), ("z", "AB"))] == ["A", "B", "tie",
                                                                                                   None]
    ba = canonical_scores(got[("x", "BA")]["scores"], "BA")
    assert (ba["score_a"], ba["score_b"]) == (6, 8)
    assert got[("z", "AB")]["scores"] is None and "[-1, -1]" in got[("z", "AB")]["parse_detail"]
    assert any(RULE_FROM_SCORES in n for n in batch.notes)
    # canonical columns say the same thing in the other terms
    canon = write(tmp_path / "canon.jsonl", [{"id": "x", "order": "BA", "a": 6, "b": 8}])
    r = import_table(canon, field_map={"item_id": "id", "score_a": "a", "score_b": "b"}, **WHOLE_FILE).judgments[0]
    assert r["verdict"] == "B" and canonical_scores(r["scores"], "BA")["score_b"] == 8


@pytest.mark.parametrize(("row", "message", "column"), [
    ({"pa": 0.3, "pf": 0.4}, "not both", "pf"),
    ({"pa": 1.5}, r"probability in \[0, 1\], got 1.5", "pa"),
    ({"pa": "high"}, "must be a number", "pa"),
    ({"s1": 3}, "needs both scores; score_second is empty", "s2"),
    ({"s1": 3, "s2": -2}, "must be >= 0", "s1"),
    ({"s1": 3, "s2": 4, "a": 1, "b": 2}, "not both", "s1"),
])
def test_bad_preferences_name_file_row_and_column(tmp_path: Path, row: dict, message: str, column: str) -> None:
    src = write(tmp_path / "bad.jsonl", [{"id": "ok", "order": "AB", "pa": 0.9}, {"id": "x", "order": "AB", **row}])
    fmap = {"item_id": "id", "p_a": "pa", "p_first": "pf", "score_first": "s1", "score_second": "s2",
            "score_a": "a", "score_b": "b"}
    with pytest.raises(ItemError, match=message) as err:
        import_table(src, field_map=fmap, **WHOLE_FILE)
    assert "bad.jsonl" in str(err.value) and "row 2" in str(err.value) and f"'{column}'" in str(err.value)


def test_a_table_without_verdict_or_preference_still_needs_the_verdict(tmp_path: Path) -> None:
    src = write(tmp_path / "none.jsonl", [{"id": "x", "order": "AB"}])
    with pytest.raises(ItemError, match="missing required column .*soft preference"):
        import_table(src, field_map={"item_id": "id"}, **WHOLE_FILE)


def test_cli_import_then_win_rate_and_score_ratio(tmp_path: Path) -> None:
    # AlpacaEval-style soft preferences for response_b (model) against response_a (reference), one
    # order per pair: P(B) = .9, .6, .2 -> P(A) = .1, .4, .8; win rate of B = (.9 + .6 + .2)/3 = 1.7/3;
    # discrete: B wins twice, A once -> 2/3.  Scores (a, b): (6, 9), (5, 5), (8, 4) -> 18/19.
    pd.DataFrame({"id": ["p1", "p2", "p3"], "order": "AB", "pa": [0.1, 0.4, 0.8], "a": [6, 5, 8],
                  "b": [9, 5, 4]}).to_csv(tmp_path / "judge.csv", index=False)
    run = tmp_path / "run"
    r = CliRunner().invoke(app, ["import", "csv", str(tmp_path / "judge.csv"), "--run-dir", str(run),
                                 "--map", "item_id=id", "--map", "p_a=pa", "--map", "score_a=a", "--map", "score_b=b",
                                 "--judge", "gpt", "--protocol", "pairwise", "--dataset", "mine", "--rep", "0",
                                 "--temperature", "0"])
    assert r.exit_code == 0, r.output
    with open_store(run) as st:
        assert list(st.judgments().sort_values("item_id")["verdict"]) == ["B", "B", "A"]   # from P(A)
    r = CliRunner().invoke(app, ["report", str(run), "--format", "json", "--bootstrap", "0",
                                 "--definitions", "win-rate,win-rate-discrete,score-ratio"])
    assert r.exit_code == 0, r.output
    rows = {d["definition"]: d for d in json.loads(r.stdout)["cells"][0]["definitions"]}
    assert rows["win-rate"]["value"] == pytest.approx(1.7 / 3)
    assert rows["win-rate"]["standard_error"] == pytest.approx(pd.Series([0.9, 0.6, 0.2]).sem())
    assert rows["win-rate-discrete"]["value"] == pytest.approx(2 / 3)
    assert rows["score-ratio"]["value"] == pytest.approx(18 / 19) and rows["score-ratio"]["n"] == 3
