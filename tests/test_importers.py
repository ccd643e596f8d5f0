"""Importers: LLMBar result files, FastChat pair judgments, csv/jsonl/parquet tables -> run store.

Includes the reproduction test: importing the two published LLMBar runs and computing
``reliability(..., unparsed="wrong")`` gives exactly the published accuracy (mean over both orders
of 1[winner == label], null counted wrong) and positional agreement (1 - phi)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.design import trial_id
from verdictlab.core.items import ItemError
from verdictlab.core.policy import FigurePolicy
from verdictlab.importers import get_importer, import_into, importer_names
from verdictlab.importers.llmbar import parse_result_path
from verdictlab.store import JUDGMENT_COLUMN_NAMES, STORE_FILENAME, open_store

RESULT_FILES = ("Natural_GPT-4_Vanilla.result.json", "Natural_ChatGPT_CoT.result.json")


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_registry_lists_formats():
    assert importer_names() == ["alpaca-eval", "csv", "fastchat", "fastchat-reviews", "inspect", "jsonl", "judgebench",
                                "llmbar", "pandalm", "parquet", "prd", "votes"]
    with pytest.raises(KeyError, match="unknown import format"):
        get_importer("nope")


# -- LLMBar ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "expected"), [
    ("Natural_GPT-4_Vanilla.result.json", {"split": "Natural", "judge": "GPT-4", "protocol": "Vanilla"}),
    ("Adversarial_Neighbor_ChatGPT_Swap_CoT.result.json",
     {"split": "Adversarial_Neighbor", "judge": "ChatGPT", "protocol": "Swap_CoT"}),
    ("Dataset/LLMBar/Adversarial/GPTOut/evaluators/PaLM2/Metrics_Reference/result.json",
     {"split": "Adversarial_GPTOut", "judge": "PaLM2", "protocol": "Metrics_Reference"}),
    ("Dataset/LLMBar/Natural/evaluators/GPT-4/CoT/result.json",
     {"split": "Natural", "judge": "GPT-4", "protocol": "CoT"}),
    ("whatever.result.json", {"split": "whatever"}),
])
def test_llmbar_names_from_path(path, expected):
    assert parse_result_path(Path(path)) == expected


def test_llmbar_import_rows_match_raw_file(shared_data, tmp_path):
    src = shared_data / "samples" / "llmbar_results" / "Natural_ChatGPT_CoT.result.json"
    raw = json.loads(src.read_text())
    res = import_into("llmbar", src, run_dir=tmp_path)
    assert res.n_rows == 200 and res.n_inserted == 200 and res.n_items == 100
    assert res.cells == (("ChatGPT", "CoT", "llmbar", 0.0),)
    with open_store(tmp_path) as store:
        df = store.judgments()
        meta = store.all_meta()
        items = {it.item_id: it for it in store.items()}
    assert list(df.columns) == list(JUDGMENT_COLUMN_NAMES)
    got = {(r.item_id, r.order): r for r in df.itertuples(index=False)}
    n_null = 0
    for i, rec in enumerate(raw):
        last = rec["results"][-1]
        label = {1: "A", 2: "B"}[int(rec["label"])]
        for key, order in (("swap = False", "AB"), ("swap = True", "BA")):
            row = got[(f"Natural-{i}", order)]
            w = last[key]["winner"]
            # swap = True winners are already in the original numbering: "1" is canonical A
            verdict = None if pd.isna(row.verdict) else row.verdict
            assert verdict == {"1": "A", "2": "B", None: None}[w]
            assert row.label == label
            assert row.trial_id == trial_id("ChatGPT", "llmbar", f"Natural-{i}", "CoT", order, 0.0, 0, "")
            if w is None:
                n_null += 1
                assert row.parse_status == "failed"
            else:
                assert row.parse_status == "ok"
                first_shown = "A" if order == "AB" else "B"
                assert row.shown_first_won == int(verdict == first_shown)
            assert row.raw_output == last[key]["completion"][0]
    assert n_null == res.n_unparsed == 1
    assert items["Natural-0"].response_a == raw[0]["output_1"]
    assert meta["imported_from"] == [str(src)] and meta["import_format"] == "llmbar"
    # a second import of the same file writes nothing new
    again = import_into("llmbar", src, run_dir=tmp_path)
    assert again.n_inserted == 0 and again.n_skipped == 200
    with open_store(tmp_path) as store:
        assert store.count() == 200 and len(store.get_meta("imports")) == 2


def test_llmbar_import_overrides_and_errors(tmp_path):
    good = {"input": "q", "output_1": "a", "output_2": "b", "label": 2,
            "results": [{"swap = False": {"completion": ["x", "stop"], "winner": "2"},
                         "swap = True": {"completion": ["y", "stop"], "winner": "1"}}]}
    f = tmp_path / "run.json"
    f.write_text(json.dumps([good]))
    with pytest.raises(ItemError, match="pass --judge"):
        import_into("llmbar", f, run_dir=tmp_path / "r0")
    res = import_into("llmbar", f, run_dir=tmp_path / "r1", judge="j", protocol="p", split="Natural",
                      dataset="mine", temperature=0.7)
    assert res.cells == (("j", "p", "mine", 0.7),)
    with open_store(tmp_path / "r1") as store:
        df = store.judgments().set_index("order")
    # AB winner "2" -> B (correct); BA winner "1" -> A: the judge flipped with the order
    assert df.loc["AB", "verdict"] == "B" and df.loc["BA", "verdict"] == "A"
    assert df.loc["BA", "shown_first_won"] == 0   # BA shows B first; A (second shown) won

    bad = dict(good, results=[{"swap = False": {"completion": [], "winner": "3"}}])
    g = tmp_path / "Natural_J_P.result.json"
    g.write_text(json.dumps([good, bad]))
    with pytest.raises(ItemError) as ei:
        import_into("llmbar", g, run_dir=tmp_path / "r2")
    assert "row 2" in str(ei.value) and "'results'" in str(ei.value)
    assert not (tmp_path / "r2" / STORE_FILENAME).exists()   # nothing written
    empty = dict(good, results=[])
    g.write_text(json.dumps([empty]))
    with pytest.raises(ItemError, match=r"row 1, field 'results'"):
        import_into("llmbar", g, run_dir=tmp_path / "r3")


# -- reproduction of the published LLMBar figures ---------------------------------------------------

def _published(raw: list[dict]) -> tuple[float, float, int, int]:
    """Accuracy (mean over both orders of 1[winner == label], null wrong) and positional agreement
    (share of pairs whose two winners are equal, None == None included), straight from the raw
    records, the way LLMBar's evaluate.py counts them."""
    hits = 0
    agree = 0
    both_null = 0
    for rec in raw:
        last = rec["results"][-1]
        w1, w2 = last["swap = False"]["winner"], last["swap = True"]["winner"]
        label = str(rec["label"])
        hits += (w1 == label) + (w2 == label)
        agree += w1 == w2
        both_null += w1 is None and w2 is None
    return hits / (2 * len(raw)), agree / len(raw), hits, both_null


def test_reproduces_published_llmbar_accuracy_and_positional_agreement(shared_data, tmp_path):
    from verdictlab.stats import reliability

    folder = shared_data / "samples" / "llmbar_results"
    res = import_into("llmbar", folder, run_dir=tmp_path)
    assert res.n_rows == 400
    with open_store(tmp_path) as store:
        rel = reliability(store.judgments(), policy=FigurePolicy(unparsed="wrong", n_bootstrap=0))
    rel = rel.set_index(["judge", "protocol"])
    for fname, key in zip(RESULT_FILES, (("GPT-4", "Vanilla"), ("ChatGPT", "CoT")), strict=True):
        raw = json.loads((folder / fname).read_text())
        acc, agreement, hits, _ = _published(raw)
        row = rel.loc[key]
        assert row["n_pairs"] == 100
        assert row["A"] == pytest.approx(acc, abs=1e-12)
        assert round(row["A"] * 200) == hits
        assert 1 - row["phi"] == pytest.approx(agreement, abs=1e-12)
    # the values themselves (from the raw files, for the record): GPT-4 Vanilla A = 191/200 = 0.955,
    # agreement 95/100; ChatGPT CoT A = 148/200 = 0.74, agreement 64/100 (one null winner, counted wrong)
    assert rel.loc[("GPT-4", "Vanilla"), "A"] == pytest.approx(0.955)
    assert rel.loc[("ChatGPT", "CoT"), "phi"] == pytest.approx(0.36)


def _game(winner: str | None, *, completion: bool = True) -> dict:
    g: dict = {"winner": winner}
    if completion:
        g["completion"] = ["" if winner is None else f"Output ({'ab'[int(winner) - 1]})", ""]
    return g


def test_reproduces_llmbar_figures_with_null_winners(tmp_path):
    """A hand-made result file in the structures the LLMBar repository uses: single-step runs, a
    two-step Swap run (round 1, then the final step), a Rating step (scores, no "completion"), labels
    as int or text, and null winners in one or both orders."""
    from verdictlab.stats import reliability

    def rec(label, steps):
        return {"input": "q", "output_1": "a", "output_2": "b", "label": label, "results": steps}

    def step(w_false, w_true, **kw):
        return {"swap = False": _game(w_false, **kw), "swap = True": _game(w_true, **kw)}

    records = [
        rec(1, [step("1", "1")]),                        # both right, equal
        rec(2, [step(None, None)]),                      # both null: wrong twice, but EQUAL
        rec(1, [step(None, "1")]),                       # one null: one right, not equal
        rec("2", [step("2", None)]),                     # label as text; one null
        rec(2, [step("1", "2"), step("1", "1")]),        # Swap: round 1 conflicts; final = last step
        rec(1, [{"score_1": ["3", "stop"], "score_2": ["3", "stop"], **step(None, None, completion=False)}]),
        rec(2, [{"score_1": ["2", "stop"], "score_2": ["8", "stop"], **step("2", "2", completion=False)}]),
        rec(1, [step("2", "1")]),                        # positional flip
    ]
    f = tmp_path / "Natural_J_Mixed.result.json"
    f.write_text(json.dumps(records))
    # Expected, counted by hand the LLMBar way (final step; winner == str(label); None == None equal):
    #   correct_False: rows 1, 4, 7 -> 3;   correct_True: rows 1, 3, 7, 8 -> 4
    #   correct_average = (3 + 4) / 2 / 8 = 7/16 = 0.4375
    #   equal: rows 1, 2 (None == None), 5 ("1" == "1"), 6 (None == None), 7 -> 5/8 = 0.625
    acc, agreement, hits, both_null = _published(records)
    assert (acc, agreement, hits, both_null) == (7 / 16, 5 / 8, 7, 2)
    res = import_into("llmbar", f, run_dir=tmp_path / "run")
    assert res.n_rows == 16 and res.n_unparsed == 6
    with open_store(tmp_path / "run") as store:
        df = store.judgments()
    rel = reliability(df, policy=FigurePolicy(unparsed="wrong", n_bootstrap=0)).iloc[0]
    assert rel["A"] == pytest.approx(7 / 16)
    assert 1 - rel["phi"] == pytest.approx(5 / 8)
    # the exclude policy drops the 6 null verdicts: pairs 2 and 6 vanish, pairs 3 and 4 are
    # single-order. Two-order pairs 1, 5, 7, 8: flips in 8 only -> phi = 1/4; kept units 10, right:
    # 1AB 1BA 3BA 4AB 7AB 7BA 8BA -> A = 7/10
    ex = reliability(df, policy=FigurePolicy(unparsed="exclude", n_bootstrap=0)).iloc[0]
    assert (ex["phi"], ex["A"], ex["n_units"]) == pytest.approx((0.25, 0.7, 10))
    # the Rating step has no completion: its scores are the raw output, the verdict is imported
    rating = df[(df["item_id"] == "Natural-6") & (df["order"] == "AB")].iloc[0]
    assert rating["verdict"] == "B" and json.loads(rating["raw_output"])["score_2"] == ["8", "stop"]
    swap = df[(df["item_id"] == "Natural-4") & (df["order"] == "BA")].iloc[0]
    assert swap["verdict"] == "A" and swap["raw_output"] == "Output (a)"  # the final step, not round 1


# -- FastChat -------------------------------------------------------------------------------------

def _match(qid, m1, m2, g1, g2, turn=1, prompt="pair-v2"):
    return {"question_id": qid, "model_1": m1, "model_2": m2, "g1_winner": g1, "g2_winner": g2,
            "judge": ["gpt-4", prompt], "g1_user_prompt": "...", "g1_judgment": f"g1 {g1}",
            "g2_user_prompt": "...", "g2_judgment": f"g2 {g2}", "turn": turn, "tstamp": 0.0}


def test_fastchat_games_map_to_canonical_orders(tmp_path):
    f = write_jsonl(tmp_path / "gpt-4_pair.jsonl", [
        # canonical A = "alpaca" (sorted first), B = "vicuna"
        _match(81, "vicuna", "alpaca", "model_1", "model_1"),
        _match(82, "alpaca", "gpt-4", "error", "tie", turn=2, prompt="pair-v2-multi-turn"),
    ])
    res = import_into("fastchat", f, run_dir=tmp_path / "run")
    assert res.n_rows == 4 and res.n_unparsed == 1
    with open_store(tmp_path / "run") as store:
        df = store.judgments().set_index(["item_id", "order"])
    g1 = df.loc[("81-alpaca-vs-vicuna-t1", "BA")]
    # game 1 showed model_1 = vicuna (canonical B) first -> order BA; vicuna won -> B, first shown won
    assert (g1["verdict"], g1["shown_first_won"], g1["raw_output"]) == ("B", 1, "g1 model_1")
    g2 = df.loc[("81-alpaca-vs-vicuna-t1", "AB")]
    # game 2 showed model_2 = alpaca (A) first; g2_winner is already in model terms: vicuna -> B
    assert (g2["verdict"], g2["shown_first_won"]) == ("B", 0)
    assert g1["judge"] == "gpt-4" and g1["protocol"] == "pair-v2" and g1["dataset"] == "mt-bench"
    err = df.loc[("82-alpaca-vs-gpt-4-t2", "AB")]   # model_1 = alpaca = A shown first in game 1
    assert pd.isna(err["verdict"]) and err["parse_status"] == "failed"
    tie = df.loc[("82-alpaca-vs-gpt-4-t2", "BA")]
    assert tie["verdict"] == "tie" and pd.isna(tie["shown_first_won"])
    assert tie["protocol"] == "pair-v2-multi-turn"


def test_fastchat_with_human_labels_attached(tmp_path):
    f = write_jsonl(tmp_path / "gpt-4_pair.jsonl", [_match(81, "vicuna", "alpaca", "model_1", "model_2")])
    conv = lambda m: [{"role": "user", "content": "q"}, {"role": "assistant", "content": f"{m} says"}]  # noqa: E731
    human = write_jsonl(tmp_path / "human.jsonl", [
        {"question_id": 81, "model_a": "alpaca", "model_b": "vicuna", "winner": "model_b", "judge": "e1",
         "conversation_a": conv("alpaca"), "conversation_b": conv("vicuna"), "turn": 1}])
    from verdictlab.datasets import load_dataset

    items = load_dataset("mtbench-human", path=str(human)).items
    res = import_into("fastchat", f, run_dir=tmp_path / "run", items=items)
    assert res.n_items == 1
    with open_store(tmp_path / "run") as store:
        df = store.judgments()
        stored = store.items()
    assert set(df["label"]) == {"B"}                    # the expert preferred vicuna = B
    assert stored[0].dataset == "mt-bench" and stored[0].response_a == "alpaca says"


def test_fastchat_errors(tmp_path):
    f = write_jsonl(tmp_path / "x_pair.jsonl", [_match(1, "a", "b", "model_1", "model_2"),
                                                _match(2, "a", "b", "model_3", "model_2")])
    with pytest.raises(ItemError, match=r"row 2, field 'g1_winner'"):
        import_into("fastchat", f, run_dir=tmp_path / "r")
    single = write_jsonl(tmp_path / "x_single.jsonl", [{"question_id": 1, "model": "a", "score": 7,
                                                        "judge": ["gpt-4", "single-v1"], "turn": 1}])
    with pytest.raises(ItemError, match="single-answer grading"):
        import_into("fastchat", single, run_dir=tmp_path / "r")


# -- tables ---------------------------------------------------------------------------------------

def _table() -> pd.DataFrame:
    return pd.DataFrame({
        "item": ["i1", "i1", "i2", "i2"], "judge": ["j"] * 4, "protocol": ["direct"] * 4,
        "dataset": ["d"] * 4, "order": ["AB", "BA", "AB", "BA"], "rep": [0, 0, 0, 0],
        "temperature": [0.0, 0.0, 0.0, 0.0], "verdict": ["A", "A", "B", None],
        "label": ["A", "A", "A", "A"], "raw_output": ["[[A]]", "[[B]]", "[[B]]", "??"],
        "p_a": [0.9, 0.2, 0.1, None], "latency_s": [1.0, 1.5, 0.5, 2.0],
    })


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_table_import_all_formats(tmp_path, fmt):
    df = _table()
    path = tmp_path / f"j.{fmt}"
    if fmt == "csv":
        df.to_csv(path, index=False)
    elif fmt == "jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.to_parquet(path, index=False)
    res = import_into(fmt, path, run_dir=tmp_path / "run", field_map={"item_id": "item"})
    assert res.n_rows == 4 and res.n_unparsed == 1
    with open_store(tmp_path / "run") as store:
        got = store.judgments().set_index(["item_id", "order"])
    assert got.loc[("i1", "BA"), "verdict"] == "A"
    assert got.loc[("i1", "BA"), "shown_first_won"] == 0      # BA shows B first; A won
    assert got.loc[("i2", "BA"), "parse_status"] == "failed"
    assert pd.isna(got.loc[("i2", "BA"), "verdict"])
    assert got.loc[("i1", "AB"), "p_a"] == pytest.approx(0.9)
    assert got.loc[("i1", "AB"), "raw_output"] == "[[A]]"
    assert got.loc[("i1", "AB"), "trial_id"] == trial_id("j", "d", "i1", "direct", "AB", 0.0, 0, "")


def test_table_import_defaults_from_options(tmp_path):
    df = _table().drop(columns=["judge", "temperature"])
    df.to_csv(tmp_path / "j.csv", index=False)
    with pytest.raises(ItemError, match=r"row 2, field 'judge'"):
        import_into("csv", tmp_path / "j.csv", run_dir=tmp_path / "r", field_map={"item_id": "item"})
    res = import_into("csv", tmp_path / "j.csv", run_dir=tmp_path / "r", field_map={"item_id": "item"},
                      judge="given", temperature=0.5)
    assert res.cells == (("given", "direct", "d", 0.5),)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("order", "XY", r"row 4, field 'order'"),
    ("verdict", "C", r"row 4, field 'verdict'"),
    ("rep", 0.5, r"row 4, field 'rep'"),
    ("temperature", "hot", r"row 4, field 'temperature'"),
    ("p_a", 1.5, r"row 4, field 'p_a'"),
])
def test_table_import_errors_name_row_and_column(tmp_path, column, value, message):
    df = _table().astype(object)
    df.loc[2, column] = value
    df.to_csv(tmp_path / "j.csv", index=False)   # record 3 is line 4 (header = line 1)
    with pytest.raises(ItemError, match=message):
        import_into("csv", tmp_path / "j.csv", run_dir=tmp_path / "r", field_map={"item_id": "item"})
    assert not (tmp_path / "r" / STORE_FILENAME).exists()


def test_table_import_duplicate_trial_and_parse_status(tmp_path):
    df = _table()
    df.loc[1, "order"] = "AB"                     # two rows for trial (i1, AB)
    df.to_csv(tmp_path / "dup.csv", index=False)
    with pytest.raises(ItemError, match="two judgments for one trial"):
        import_into("csv", tmp_path / "dup.csv", run_dir=tmp_path / "r", field_map={"item_id": "item"})
    df = _table()
    df["parse_status"] = ["ok", "repaired", "ok", "ok"]   # last row has no verdict but claims ok
    df.to_csv(tmp_path / "ps.csv", index=False)
    with pytest.raises(ItemError, match=r"row 5, field 'parse_status'"):
        import_into("csv", tmp_path / "ps.csv", run_dir=tmp_path / "r", field_map={"item_id": "item"})


# -- CLI ------------------------------------------------------------------------------------------

def test_cli_import_and_error_exit(tmp_path):
    runner = CliRunner()
    df = _table()
    df.to_csv(tmp_path / "j.csv", index=False)
    r = runner.invoke(app, ["import", "csv", str(tmp_path / "j.csv"), "--run-dir", str(tmp_path / "run"),
                            "--map", "item_id=item", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["ok"] and out["n_inserted"] == 4 and out["n_unparsed"] == 1
    df.loc[0, "order"] = "ZZ"
    df.to_csv(tmp_path / "bad.csv", index=False)
    r = runner.invoke(app, ["import", "csv", str(tmp_path / "bad.csv"), "--run-dir", str(tmp_path / "run2"),
                            "--map", "item_id=item"])
    assert r.exit_code == 3                      # bad input (docs/errors.md)
    assert "row 2" in r.output and "'order'" in r.output
    r = runner.invoke(app, ["import", "nope", str(tmp_path / "j.csv"), "--run-dir", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown import format" in r.output


def test_cli_import_llmbar_sample(shared_data, tmp_path):
    r = CliRunner().invoke(app, ["import", "llmbar", str(shared_data / "samples" / "llmbar_results"),
                                 "--run-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "imported 400 new judgment(s)" in r.output and "judge=GPT-4 protocol=Vanilla" in r.output


def test_table_import_takes_items_when_columns_exist(tmp_path):
    df = _table()
    df["question"] = ["q1", "q1", "q2", "q2"]
    df["response_a"] = ["a1", "a1", "a2", "a2"]
    df["response_b"] = ["b1", "b1", "b2", "b2"]
    df.to_csv(tmp_path / "j.csv", index=False)
    res = import_into("csv", tmp_path / "j.csv", run_dir=tmp_path / "run", field_map={"item_id": "item"})
    assert res.n_items == 2
    with open_store(tmp_path / "run") as store:
        items = {it.item_id: it for it in store.items("d")}
    assert items["i2"].response_b == "b2" and items["i2"].label == "A"
    df.loc[3, "response_b"] = "different"        # the same item with two contents
    df.to_csv(tmp_path / "k.csv", index=False)
    with pytest.raises(ItemError, match="appears twice with different content"):
        import_into("csv", tmp_path / "k.csv", run_dir=tmp_path / "run2", field_map={"item_id": "item"})
    assert not (tmp_path / "run2" / STORE_FILENAME).exists()
