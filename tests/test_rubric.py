"""rubric (PASS/FAIL/UNKNOWN per criterion), pointwise graded scoring, agreement and `verdictlab review`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from verdictlab.analyses.rubric import pointwise_agreement, rubric_agreement
from verdictlab.core.items import PairItem, PointItem
from verdictlab.protocols import get_protocol
from verdictlab.protocols.pointwise import make_pointwise, parse_grade
from verdictlab.protocols.rubric import CriteriaError, RubricProtocol, extract_reasoning, parse_pass_fail

CRITERIA = """\
criteria:
  - name: grounded
    pass_if: every number in the response appears in the reference
    fail_if: it states a number the reference does not support
  - name: answers
    pass_if: it answers the question asked
    fail_if: it answers another question
"""


def _point(i: int = 1, label: object = "pass", **meta: object) -> PointItem:
    return PointItem(item_id=str(i), dataset="support", question="When does the shop open?", response="At 9.",
                     reference="9 am", label=label, meta=dict(meta))


# -- rubric protocol --------------------------------------------------------------------------------
def test_rubric_prompt_has_conditions_reference_and_unknown(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(CRITERIA)
    p = get_protocol(f"rubric@{f}")
    assert p.steps(_point()) == ("grounded", "answers")
    system, user = (m["content"] for m in p.messages(_point(), "AB", step="grounded"))
    assert "UNKNOWN" in system
    assert "Reference answer:\n9 am" in user
    assert "PASS if: every number" in user and "FAIL if: it states" in user
    assert user.index("Reference") < user.index("Response:") < user.index("Criterion: grounded")
    no_ref = RubricProtocol(criteria=f, use_reference=False).messages(_point(), "AB", step="answers")[1]["content"]
    assert "Reference" not in no_ref
    with pytest.raises(ValueError, match="PointItem"):
        p.messages(PairItem(item_id="1", dataset="d", question="q", response_a="a", response_b="b"), "AB",
                   step="grounded")


def test_criteria_file_errors_name_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("criteria:\n  - name: x\n    pass_if: ok\n")
    with pytest.raises(CriteriaError, match=r"bad.yaml: field 'criteria\[0\].fail_if'"):
        RubricProtocol(criteria=bad)
    with pytest.raises(CriteriaError, match="not found"):
        RubricProtocol(criteria=tmp_path / "missing.yaml")


@pytest.mark.parametrize("text, verdict, status", [
    ("<reasoning>Says 9, reference says 9 am.</reasoning><result>PASS</result>", "PASS", "ok"),
    ("<reasoning>No hours given.</reasoning>\n<result>UNKNOWN", "UNKNOWN", "ok"),   # stop sequence cut
    ("Thinking... <result>fail</result>", "FAIL", "repaired"),
    ("The price is invented.\nResult: FAIL", "FAIL", "repaired"),
    ("<result>PASS</result> or maybe <result>FAIL</result>", None, "failed"),
    ("<reasoning>The response", None, "failed"),
    ("", None, "failed"),
])
def test_parse_pass_fail(text: str, verdict: str | None, status: str) -> None:
    r = parse_pass_fail(text)
    assert (r.verdict, r.status) == (verdict, status), r.detail


def test_extract_reasoning() -> None:
    assert extract_reasoning("<reasoning>because</reasoning><result>PASS</result>") == "because"
    assert extract_reasoning('{"rationale": "short", "score": 2}') == "short"


def test_rubric_agreement_by_hand() -> None:
    human = ["PASS"] * 6 + ["FAIL"] * 4
    judge = ["PASS", "PASS", "PASS", "PASS", "FAIL", "UNKNOWN", "FAIL", "FAIL", "PASS", None]
    df = pd.DataFrame({"judge": "j", "dataset": "d", "protocol": "rubric", "temperature": 0.0, "step": "grounded",
                       "item_id": [str(i) for i in range(10)], "label": [h.lower() for h in human], "verdict": judge})
    r = rubric_agreement(df).iloc[0]
    # compared (both PASS/FAIL): 8 items -- (P,P) x4, (P,F) x1, (F,F) x2, (F,P) x1
    assert (r["n"], r["n_compared"], r["n_unknown"], r["n_unparsed"]) == (10, 8, 1, 1)
    assert r["agreement"] == pytest.approx(6 / 8)
    # p_o = 0.75; marginals human 5 P / 3 F, judge 5 P / 3 F -> p_e = (25 + 9) / 64
    # kappa = (0.75 - 34/64) / (1 - 34/64) = 7/15
    assert r["kappa"] == pytest.approx(7 / 15)
    assert (r["judge_passed_human_failed"], r["judge_failed_human_passed"]) == (1, 1)
    assert r["unknown_rate"] == pytest.approx(0.1)


def test_per_criterion_human_labels_from_items() -> None:
    items = [_point(1, label="pass", labels={"grounded": "fail"})]
    df = pd.DataFrame({"judge": ["j", "j"], "dataset": "support", "protocol": "rubric", "temperature": 0.0,
                       "step": ["grounded", "answers"], "item_id": "1", "label": "pass", "verdict": ["FAIL", "PASS"]})
    r = rubric_agreement(df, items=items).set_index("step")
    assert r.loc["grounded", "agreement"] == 1.0 and r.loc["answers", "agreement"] == 1.0


# -- pointwise grading -------------------------------------------------------------------------------
@pytest.mark.parametrize("text, verdict, status", [
    ('{"rationale": "right", "score": 2', "2", "ok"),
    ('```json\n{"score": "1", "rationale": "x"}\n```', "1", "repaired"),
    ('{"rationale": "cut off, "score": 3, "ext', "3", "repaired"),
    ('{"rationale": "x", "score": "partial"}', "partial", "repaired"),
    ("no idea", None, "failed"),
])
def test_parse_grade(text: str, verdict: str | None, status: str) -> None:
    r = parse_grade(text)
    assert (r.verdict, r.status) == (verdict, status), r.detail


def test_pointwise_scale_in_prompt() -> None:
    p = make_pointwise(template_path="0-2")
    assert p.scale == (0, 1, 2)
    item = _point(label=2)
    assert "Grades, worst to best: 0, 1, 2." in p.messages(item, "AB")[1]["content"]
    item5 = PointItem(item_id="x", dataset="d", question="q", response="r", label=4, scale=(1, 2, 3, 4, 5))
    assert "1, 2, 3, 4, 5" in p.messages(item5, "AB")[1]["content"]   # the item's own scale wins


def test_pointwise_agreement_by_hand() -> None:
    df = pd.DataFrame({"judge": "j", "dataset": "jv", "protocol": "pointwise", "temperature": 0.0, "step": "",
                       "item_id": [str(i) for i in range(6)], "label": ["0", "1", "2", "2", "1", "0"],
                       "verdict": ["0", "1", "1", "2", "2", None]})
    r = pointwise_agreement(df).iloc[0]
    assert (r["n"], r["n_unparsed"]) == (5, 1)
    assert r["exact_match"] == pytest.approx(3 / 5)
    # marginals human 0:1 1:2 2:2, judge 0:1 1:2 2:2 -> p_e = (1 + 4 + 4) / 25; kappa = (0.6 - 0.36) / 0.64
    assert r["kappa"] == pytest.approx(0.375)
    # ranks x = (1, 2.5, 4.5, 4.5, 2.5), y = (1, 2.5, 2.5, 4.5, 4.5): sum dxdy = 5, sum dx^2 = sum dy^2 = 9
    assert r["spearman"] == pytest.approx(5 / 9)


# -- runs with the simulated judge, and the review export ------------------------------------------------
def _write_points(path: Path, labels: list[object]) -> None:
    with path.open("w") as fh:
        for i, lab in enumerate(labels):
            fh.write(json.dumps({"id": f"q{i}", "question": f"question {i}", "response": f"answer {i}",
                                 "reference": f"ref {i}", "label": lab}) + "\n")


def _run(tmp_path: Path, data: Path, protocol: str, judge: str) -> pd.DataFrame:
    from verdictlab.engine import run_config
    from verdictlab.engine.config import config_from_dict
    from verdictlab.store import open_store

    cfg = config_from_dict({"name": "pt", "datasets": [{"name": "judges-verdict", "path": str(data)}],
                            "judges": [judge], "protocols": [protocol], "repetitions": 1})
    run_config(cfg, tmp_path / "run", progress=False)
    with open_store(tmp_path / "run") as st:
        return st.judgments()


def test_rubric_run_and_review_export(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    data = tmp_path / "passfail.jsonl"
    _write_points(data, ["pass", "fail"] * 20)
    df = _run(tmp_path, data, "rubric", "sim:skill=0.7,seed=4")
    # one row per item and criterion, one order only (pointwise)
    assert len(df) == 40 * 2 and set(df["step"]) == {"correct", "on_task"} and set(df["order"]) == {"AB"}
    assert set(df["verdict"]) <= {"PASS", "FAIL", "UNKNOWN"} and (df["parse_status"] == "ok").all()
    agr = rubric_agreement(df)
    # sim: right with p = 0.7 per (item, criterion); wrong answers are UNKNOWN a fifth of the time
    assert 0.5 < agr["agreement"].mean() < 0.95 and agr["n_unknown"].sum() > 0
    n_dis = int((agr["n"] - agr["n_compared"] + (agr["n_compared"] * (1 - agr["agreement"]))).sum().round())

    out = tmp_path / "rev.jsonl"
    res = CliRunner().invoke(app, ["review", str(tmp_path / "run"), "--out", str(out)])
    assert res.exit_code == 0, res.output
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(recs) == n_dis       # every disagreement and every UNKNOWN, nothing else
    kinds = {r["kind"] for r in recs}
    assert kinds <= {"judge_passed_human_failed", "judge_failed_human_passed", "judge_unknown"}
    r0 = recs[0]
    assert r0["judge_reasoning"] and r0["human_label"] in ("PASS", "FAIL") and r0["response"].startswith("answer")
    res = CliRunner().invoke(app, ["review", str(tmp_path / "run"), "--format", "csv"])
    assert res.exit_code == 0 and (tmp_path / "run" / "review.csv").is_file()
    assert len(pd.read_csv(tmp_path / "run" / "review.csv")) == n_dis


def test_review_shows_human_critique(tmp_path: Path) -> None:
    from verdictlab.workflows.review import review_frame

    items = [_point(1, label="fail", critique="The shop opens at 10 on Sundays."), _point(2, label="pass")]
    df = pd.DataFrame({"judge": "j", "dataset": "support", "protocol": "rubric", "item_id": ["1", "2"],
                       "step": "grounded", "order": "AB", "temperature": 0.0, "rep": 0, "label": ["fail", "pass"],
                       "verdict": ["PASS", "PASS"], "parse_status": "ok",
                       "raw_output": ["<reasoning>Both say 9.</reasoning><result>PASS</result>"] * 2})
    rv = review_frame(df, items)
    assert len(rv) == 1
    row = rv.iloc[0]
    assert row["kind"] == "judge_passed_human_failed"
    assert row["judge_reasoning"] == "Both say 9." and row["human_critique"] == "The shop opens at 10 on Sundays."


def test_pointwise_run_with_sim_judge(tmp_path: Path) -> None:
    data = tmp_path / "graded.jsonl"
    _write_points(data, [0, 1, 2] * 20)
    df = _run(tmp_path, data, "pointwise@0-2", "sim:skill=0.8,seed=3")
    assert len(df) == 60 and (df["parse_status"] == "ok").all()
    assert set(df["verdict"]) <= {"0", "1", "2"}
    r = pointwise_agreement(df).iloc[0]
    assert r["n"] == 60
    assert 0.6 <= r["exact_match"] <= 0.95 and r["kappa"] > 0.3 and r["spearman"] > 0.3
    assert not np.isnan(r["kappa_quadratic"])


def test_review_pairwise_wrong_winner() -> None:
    from verdictlab.workflows.review import review_frame

    items = [PairItem(item_id="1", dataset="d", question="q", response_a="a", response_b="b", label="A"),
             PairItem(item_id="2", dataset="d", question="q", response_a="a", response_b="b", label="B")]
    df = pd.DataFrame({"judge": "j", "dataset": "d", "protocol": "cot-json", "item_id": ["1", "2"], "step": "",
                       "order": "BA", "temperature": 0.0, "rep": 0, "label": ["A", "B"], "verdict": ["B", "B"],
                       "parse_status": "ok",
                       "raw_output": ['{"rationale": "the second one is longer", "winner": "A"}'] * 2})
    rv = review_frame(df, items)
    assert list(rv["item_id"]) == ["1"] and rv.iloc[0]["kind"] == "wrong_winner"
    assert rv.iloc[0]["judge_reasoning"] == "the second one is longer"
    assert rv.iloc[0]["response_a"] == "a" and rv.iloc[0]["human_label"] == "A"
