"""Named importers (pandalm, judgebench) and the generic table options of issue 11, each on a small
file written here in the source's format, plus the reproductions of the figures those sources report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from verdictlab.analyses.remedy_vote import both_orders_vote
from verdictlab.core.items import ItemError
from verdictlab.core.policy import FigurePolicy
from verdictlab.importers._batch import write_batch
from verdictlab.importers.judgebench import file_info, import_judgebench
from verdictlab.importers.pandalm import RULE_TIE, import_pandalm
from verdictlab.importers.tabular import import_table
from verdictlab.stats import class_figures, reliability
from verdictlab.store import open_store


def write_json(path: Path, records: list[dict]) -> Path:
    path.write_text(json.dumps(records, ensure_ascii=False), encoding="utf-8")
    return path


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


# -- pandalm ---------------------------------------------------------------------------------------

def _testset(tmp_path: Path) -> Path:
    votes = {0: (1, 1, 2), 1: (2, 2, 0), 2: (0, 0, 1), 3: (1, 2, 1), 4: (2, 2, 2)}
    return write_json(tmp_path / "testset-v1.json", [
        {"idx": i, "motivation_app": "app", "cmp_key": "x_y", "instruction": f"do {i}", "input": "",
         "response1": f"one {i}", "response2": f"two {i}", "annotator1": v[0], "annotator2": v[1],
         "annotator3": v[2]} for i, v in votes.items()])


PANDA_VERDICTS = [("0", "1"), ("1", "2"), ("2", "Tie"), ("3", 0), ("4", "garbage")]


def _panda_file(tmp_path: Path, judge: str = "gpt-3.5-turbo") -> Path:
    return write_json(tmp_path / f"{judge}.json", [
        {"idx": int(i), f"{judge}_result": v, f"{judge}_reason": f"because {i}"} for i, v in PANDA_VERDICTS])


def test_pandalm_verdicts_join_and_garbage_rule(tmp_path):
    batch = import_pandalm(_panda_file(tmp_path), items_path=str(_testset(tmp_path)))
    rows = {r["item_id"]: r for r in batch.judgments}
    # labels = annotator majority: 0 -> A, 1 -> B, 2 -> tie, 3 -> A, 4 -> B
    assert [rows[i]["label"] for i in "01234"] == ["A", "B", "tie", "A", "B"]
    assert [rows[i]["verdict"] for i in "01234"] == ["A", "B", "tie", "tie", "tie"]
    g = rows["4"]
    assert (g["parse_status"], g["fallback_rule"]) == ("fallback", RULE_TIE)
    assert rows["0"]["parse_status"] == "ok" and rows["0"]["fallback_rule"] is None
    assert {r["judge"] for r in batch.judgments} == {"gpt-3.5-turbo"}
    assert {(r["order"], r["protocol"], r["dataset"]) for r in batch.judgments} == {("AB", "pandalm", "pandalm")}
    assert rows["2"]["raw_output"] == "because 2"
    assert "garbage' -> tie" in batch.notes[0] and "garbage" in rows["4"]["parse_detail"]
    assert len(batch.items) == 5
    unparsed = import_pandalm(_panda_file(tmp_path), items_path=str(_testset(tmp_path)), garbage="unparsed")
    g = {r["item_id"]: r for r in unparsed.judgments}["4"]
    assert g["verdict"] is None and g["parse_status"] == "failed"


def test_pandalm_errors_name_row_and_field(tmp_path):
    bad = write_json(tmp_path / "m.json", [{"idx": 0, "m_result": "1"}, {"idx": 1, "m_result": "3"}])
    with pytest.raises(ItemError, match=r"row 2, field 'm_result': verdict must be"):
        import_pandalm(bad)
    missing = write_json(tmp_path / "n.json", [{"idx": 99, "m_result": "1"}])
    with pytest.raises(ItemError, match=r"row 1, field 'idx': idx '99' is not in the test set"):
        import_pandalm(missing, items_path=str(_testset(tmp_path)))
    two = write_json(tmp_path / "t.json", [{"idx": 0, "a_result": "1", "b_result": "2"}])
    with pytest.raises(ItemError, match="several judges"):
        import_pandalm(two)
    assert {r["verdict"] for r in import_pandalm(two, judge="b").judgments} == {"B"}


def test_pandalm_reproduction_three_class_figures(shared_data, tmp_path):
    """PandaLM's accuracy and macro-F1 definitions, on the real test set (999 pairs, 105 tie majorities)
    with a verdict file written here whose confusion matrix is set by hand."""
    from verdictlab.datasets.pandalm import load_pandalm

    testset = shared_data / "pandalm" / "testset-v1.json"
    gold = {it.item_id: it.label for it in load_pandalm(str(testset)).items}
    assert len(gold) == 999 and list(gold.values()).count("tie") == 105
    # per gold class, in idx order: how many get each verdict
    plan = {"A": [("1", 300), ("2", 100), ("garbage", 22)],      # 422 A
            "B": [("2", 400), ("1", 50), ("Tie", 22)],          # 472 B
            "tie": [("Tie", 40), ("1", 40), ("garbage", 25)]}   # 105 tie
    queue = {lab: [v for v, n in plan[lab] for _ in range(n)] for lab in plan}
    recs = [{"idx": int(idx), "gpt-3.5-turbo_result": queue[str(lab)].pop(0)} for idx, lab in gold.items()]
    src = write_json(tmp_path / "gpt-3.5-turbo.json", recs)
    res = write_batch(import_pandalm(src, items_path=str(testset)), tmp_path / "run")
    assert res.n_rows == 999 and res.n_items == 999
    with open_store(tmp_path / "run") as store:
        df = store.judgments()
    out = class_figures(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    # garbage -> tie (PandaLM's rule).  Confusion (gold rows; predicted A, B, tie):
    #   A: 300 100 22 | B: 50 400 22 | tie: 40 0 65
    # accuracy = (300 + 400 + 65) / 999 = 765/999
    # F1_k = 2 TP / (predicted_k + support_k):  A 600/(390 + 422), B 800/(500 + 472), tie 130/(109 + 105)
    assert out["n_units_3class"] == 999
    assert out["A_3class"] == pytest.approx(765 / 999)
    assert out["macro_f1"] == pytest.approx((600 / 812 + 800 / 972 + 130 / 214) / 3)
    assert out["precision_tie"] == pytest.approx(65 / 109) and out["recall_tie"] == pytest.approx(65 / 105)
    # A and T stay on the non-tie labels: AB units only, 894 labelled A/B, 300 + 400 right
    rel = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert rel["n_labelled_units"] == 894 and rel["A"] == pytest.approx(700 / 894)
    assert rel["n_order_pairs"] == 0 and pd.isna(rel["phi"])           # one order: phi undefined
    # garbage -> unparsed instead: the 47 garbage rows drop out (excluded, counted)
    res2 = write_batch(import_pandalm(src, items_path=str(testset), garbage="unparsed"), tmp_path / "run2")
    assert res2.n_unparsed == 47
    with open_store(tmp_path / "run2") as store:
        out2 = class_figures(store.judgments(), policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    # A: 300 100 0 | B: 50 400 22 | tie: 40 0 40 -> 740 / 952
    assert out2["A_3class"] == pytest.approx(740 / 952)
    assert out2["macro_f1"] == pytest.approx((600 / 790 + 800 / 972 + 80 / 142) / 3)


# -- judgebench ------------------------------------------------------------------------------------

JB = [  # (label, game 1 decision (shown AB), game 2 decision (shown BA))
    ("A>B", "A>B", "B>A"),   # both A                       -> vote A  (right)
    ("A>B", "A>B", "A>B"),   # A, then first shown (B) won  -> vote tie (wrong)
    ("B>A", "A=B", "A>>B"),  # tie abstains, B              -> vote B  (right)
    ("B>A", None, "B>A"),    # unparsed abstains, A         -> vote A  (wrong)
    ("A>B", "A>B", None),    # A, unparsed                  -> vote A  (right)
]
JB_NAME = "dataset=judgebench,response_model=gpt-4o-2024-05-13,judge_name=arena_hard,judge_model=gpt-4o-2024-05-13.jsonl"


def _judgebench_file(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / JB_NAME, [
        {"pair_id": f"p{i}", "original_id": f"o{i}", "source": "mmlu-pro-law", "question": f"q{i}",
         "response_model": "gpt-4o-2024-05-13", "response_A": f"a{i}", "response_B": f"b{i}", "label": lab,
         "judgments": [{"judgment": {"response": f"game 1 of {i}"}, "decision": g1},
                       {"judgment": {"response": f"game 2 of {i}"}, "decision": g2}]}
        for i, (lab, g1, g2) in enumerate(JB)])


def test_judgebench_second_game_mapped_back_to_canonical(tmp_path):
    assert file_info(Path(JB_NAME))["judge_name"] == "arena_hard"
    batch = import_judgebench(_judgebench_file(tmp_path))
    got = {(r["item_id"], r["order"]): r["verdict"] for r in batch.judgments}
    assert [got[(f"p{i}", "AB")] for i in range(5)] == ["A", "A", "tie", None, "A"]
    # game 2 showed response_B first: "B>A" there means response_A won
    assert [got[(f"p{i}", "BA")] for i in range(5)] == ["A", "B", "B", "A", None]
    r = batch.judgments[0]
    assert (r["judge"], r["protocol"], r["dataset"], r["label"]) == ("gpt-4o-2024-05-13", "arena_hard",
                                                                     "judgebench", "A")
    assert json.loads(r["raw_output"]) == {"response": "game 1 of 0"}
    assert "mapped back" in batch.notes[0] and "shown BA" in batch.judgments[1]["parse_detail"]
    assert [it.category for it in batch.items] == ["mmlu-pro-law"] * 5
    assert batch.items[0].meta["response_model"] == "gpt-4o-2024-05-13"
    # judge and response model from the file name when the records do not carry them
    bare = [json.loads(line) for line in _judgebench_file(tmp_path).read_text().splitlines()]
    for rec in bare:
        del rec["response_model"]
    named = write_jsonl(tmp_path / JB_NAME.replace("gpt-4o-2024-05-13.jsonl", "claude-x.jsonl"), bare)
    b2 = import_judgebench(named)
    assert b2.judgments[0]["judge"] == "claude-x"
    assert b2.items[0].meta["response_model"] == "gpt-4o-2024-05-13"


def test_judgebench_score_is_both_orders_vote_accuracy(tmp_path):
    write_batch(import_judgebench(_judgebench_file(tmp_path)), tmp_path / "run")
    with open_store(tmp_path / "run") as store:
        df = store.judgments()
    voted = both_orders_vote(df)
    rel = reliability(voted, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    # JudgeBench: pairs 0, 2, 4 right of 5 -> 0.6 (each pair's two derived rows agree)
    assert rel["protocol"] == "arena_hard+both-orders-vote"
    assert rel["A"] == pytest.approx(3 / 5) and rel["phi"] == 0.0
    # per order: 8 parsed units; right: AB p0 p1 p4, BA p0 p2 -> 5/8
    base = reliability(df, policy=FigurePolicy(n_bootstrap=0)).iloc[0]
    assert base["A"] == pytest.approx(5 / 8)


def test_judgebench_bad_decision_names_row(tmp_path):
    p = _judgebench_file(tmp_path)
    lines = p.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["judgments"][1]["decision"] = "A>A"
    lines[1] = json.dumps(rec)
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(ItemError, match=r"row 2, field 'judgments\[1\].decision'"):
        import_judgebench(p)


# -- generic tables: --verdicts, --order, --rep, --judge, --map for every field -------------------------

def test_positional_verdicts_converted_with_the_order(tmp_path):
    src = write_jsonl(tmp_path / "pos.jsonl", [
        {"item_id": "i1", "order": "AB", "verdict": "A"},    # first shown = response_a -> A
        {"item_id": "i1", "order": "BA", "verdict": "A"},    # first shown = response_b -> B
        {"item_id": "i2", "order": "BA", "verdict": "B"},    # second shown = response_a -> A
        {"item_id": "i2", "order": "AB", "verdict": "tie"},
        {"item_id": "i3", "order": "BA", "verdict": None}])
    batch = import_table(src, judge="j", protocol="p", dataset="d", rep=0, temperature=0,
                         verdicts="positional")
    assert [r["verdict"] for r in batch.judgments] == ["A", "B", "A", "tie", None]
    assert [r["shown_first_won"] for r in batch.judgments] == [1, 1, 0, None, None]
    assert "positional verdict 'A' shown BA -> canonical 'B'" in batch.judgments[1]["parse_detail"]
    assert any("table-positional" in n for n in batch.notes)
    canon = import_table(src, judge="j", protocol="p", dataset="d", rep=0, temperature=0)
    assert [r["verdict"] for r in canon.judgments] == ["A", "A", "B", "tie", None]


def test_map_for_every_required_field_and_whole_file_options(tmp_path):
    """The issue's case: --map item_id=idx failed on 'order' (no --order) and demanded 'label'."""
    src = write_jsonl(tmp_path / "m.jsonl", [{"idx": 7, "who": "w", "how": "h", "set": "s", "shown": "BA",
                                              "r": 2, "t": 0.5, "win": "B", "gold": "B"}])
    fm = {"item_id": "idx", "judge": "who", "protocol": "how", "dataset": "set", "order": "shown",
          "rep": "r", "temperature": "t", "verdict": "win", "label": "gold"}
    r = import_table(src, field_map=fm).judgments[0]
    assert (r["item_id"], r["judge"], r["protocol"], r["dataset"], r["order"], r["rep"], r["temperature"],
            r["verdict"], r["label"]) == ("7", "w", "h", "s", "BA", 2, 0.5, "B", "B")
    bare = write_jsonl(tmp_path / "b.jsonl", [{"idx": 1, "win": "A"}])
    r = import_table(bare, field_map={"item_id": "idx", "verdict": "win"}, judge="j", protocol="p",
                     dataset="d", order="AB", rep=3, temperature=0.0).judgments[0]
    assert (r["order"], r["rep"], r["label"]) == ("AB", 3, None)
    with pytest.raises(ItemError, match=r"row 1, field 'order': missing required column \(or give it for "
                                        r"the whole file: --order\)"):
        import_table(bare, field_map={"item_id": "idx", "verdict": "win"}, judge="j", protocol="p",
                     dataset="d", rep=0, temperature=0.0)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("verdict", 1, r"field 'verdict': verdict must be 'A', 'B', 'tie' or empty \(the judge's output was not "
                   r"parsed\), got 1; a number is not read"),
    ("label", 2, r"field 'label': label must be 'A', 'B', 'tie' or empty \(unlabelled\), got 2"),
    ("verdict", "C", r"field 'verdict': verdict must be"),
    ("temperature", "inf", r"field 'temperature': must be a finite number"),
])
def test_errors_say_verdict_or_label(tmp_path, column, value, message):
    rec = {"item_id": "i", "judge": "j", "protocol": "p", "dataset": "d", "order": "AB", "rep": 0,
           "temperature": 0.0, "verdict": "A", "label": "A", column: value}
    src = tmp_path / "e.jsonl"
    src.write_text(json.dumps(rec) + "\n")
    with pytest.raises(ItemError, match=message):
        import_table(src)


def test_bad_options(tmp_path):
    src = write_jsonl(tmp_path / "o.jsonl", [{"item_id": "i"}])
    with pytest.raises(ItemError, match="verdicts must be one of"):
        import_table(src, verdicts="shown")
    with pytest.raises(ItemError, match="order must be 'AB' or 'BA'"):
        import_table(src, order="ab")


def test_cli_pandalm_and_judgebench(tmp_path):
    from typer.testing import CliRunner

    from verdictlab.cli.main import app

    runner = CliRunner()
    r = runner.invoke(app, ["import", "pandalm", str(_panda_file(tmp_path)), "--items-path",
                            str(_testset(tmp_path)), "--run-dir", str(tmp_path / "p"), "--garbage", "unparsed"])
    assert r.exit_code == 0, r.output
    assert "imported 5 new judgment(s)" in r.output and "1 unparsed" in r.output
    assert "'garbage' -> unparsed" in r.output                  # the verdict rule, printed and stored
    with open_store(tmp_path / "p") as store:
        assert "'garbage' -> unparsed" in store.get_meta("imports")[0]["notes"][0]
    r = runner.invoke(app, ["import", "judgebench", str(_judgebench_file(tmp_path)), "--run-dir", str(tmp_path / "j")])
    assert r.exit_code == 0, r.output
    assert "judge=gpt-4o-2024-05-13 protocol=arena_hard dataset=judgebench" in r.output
    r = runner.invoke(app, ["import", "pandalm", str(_panda_file(tmp_path)), "--run-dir", str(tmp_path / "q"),
                            "--garbage", "maybe"])
    assert r.exit_code == 2 and "'maybe' is not one of 'tie', 'unparsed'" in r.stderr     # a choice (usage)
