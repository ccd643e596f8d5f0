"""Your own data in one step: a published judge log shaped like the one a newcomer met (1,392 pairs,
verdicts 0/1/2, one CSV per presentation order, no id column, question + two responses + a human
label) imports with one command per file and no glue, and the two files join into one pair per item;
every problem of a file is listed at once with its fix; derived ids, value maps and the assumed
rep / temperature are said in the import's notes."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.items import ItemError, ItemProblems, derived_item_id
from verdictlab.importers import import_into
from verdictlab.importers.tabular import import_table
from verdictlab.stats import reliability
from verdictlab.store import open_store

N_PAIRS = 1392
runner = CliRunner()


def _log(tmp_path: Path) -> tuple[Path, Path, dict[str, tuple[str, str, str]]]:
    """Two CSVs, one per order, written as the judge saw each pair: ``answer1`` was shown first,
    ``judge`` is 1 (first shown better), 2 (second) or 0 (tie), ``human`` likewise.  Returns the files
    and, per derived item id, the truth in canonical terms (A = 'alpha' answer): (gold, verdict AB,
    verdict BA)."""
    rng = random.Random(11)
    truth: dict[str, tuple[str, str, str]] = {}
    rows: dict[str, list[list[object]]] = {"AB": [], "BA": []}
    for i in range(N_PAIRS):
        q, a, b = f"Question {i}?", f"alpha answer {i}", f"beta answer {i}" + " more" * (i % 5)
        gold = rng.choice("AB")
        verdicts = {}
        for order in ("AB", "BA"):
            first, second = (a, b) if order == "AB" else (b, a)
            v = rng.choice(["A", "A", "A", "B", "tie"]) if gold == "A" else rng.choice(["B", "B", "A", "tie"])
            verdicts[order] = v

            def shown(c: str, order: str = order) -> int:      # canonical A/B/tie -> 1 / 2 / 0 as shown
                return 0 if c == "tie" else 1 if (c == "A") == (order == "AB") else 2

            rows[order].append([q, first, second, shown(gold), shown(v)])
        truth[derived_item_id(q, a, b)] = (gold, verdicts["AB"], verdicts["BA"])
    paths = []
    for order in ("AB", "BA"):
        p = tmp_path / f"published_{order}.csv"
        with p.open("w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["question", "answer1", "answer2", "human", "judge"])   # 'judge' holds the verdicts
            w.writerows(rows[order])
        paths.append(p)
    return paths[0], paths[1], truth


COMMON = ["--judge", "gpt-x", "--protocol", "published", "--dataset", "pub", "--id-from", "hash",
          "--map", "verdict=judge", "--map", "label=human", "--map-values", "verdict:0=tie,1=A,2=B"]
# the AB file shows response_a first: its columns, labels and verdicts are canonical as they stand
AB = ["--order", "AB", "--map", "response_a=answer1", "--map", "response_b=answer2",
      "--map-values", "label:0=tie,1=A,2=B"]
# the BA file shows response_b first: answer1 is canonical B, the label's 1 means B, the verdict is
# in shown terms (positional) and converted with the order
BA = ["--order", "BA", "--map", "response_a=answer2", "--map", "response_b=answer1",
      "--map-values", "label:0=tie,1=B,2=A", "--verdicts", "positional"]


def test_published_log_imports_one_command_per_file_and_joins_into_pairs(tmp_path):
    ab, ba, truth = _log(tmp_path)
    run = tmp_path / "run"
    for path, flags in ((ab, AB), (ba, BA)):
        r = runner.invoke(app, ["import", "csv", str(path), "--run-dir", str(run), *COMMON, *flags])
        assert r.exit_code == 0, r.stderr
        assert f"imported {N_PAIRS} new judgment(s)" in r.stderr
        # the summary is a message (stderr); what was assumed and derived is said, one line each
        assert "rep 0 assumed for every row (no rep column, no --rep)" in r.stderr
        assert "temperature 0 assumed for every row (no temperature column, no --temperature)" in r.stderr
        assert "item ids derived (--id-from hash)" in r.stderr
        assert "values mapped (verdict): 0 -> tie, 1 -> A, 2 -> B" in r.stderr
    with open_store(run) as store:
        j = store.judgments()
        items = {it.item_id: it for it in store.items("pub")}
    # one pair per item: both orders of every one of the 1,392 items, and nothing else
    assert len(items) == N_PAIRS and set(items) == set(truth)
    orders = j.groupby("item_id")["order"].apply(lambda s: "+".join(sorted(s)))
    assert set(orders) == {"AB+BA"} and len(orders) == N_PAIRS
    got = {(r.item_id, r.order): (r.label, r.verdict) for r in j.itertuples()}
    for item_id, (gold, v_ab, v_ba) in truth.items():
        assert got[(item_id, "AB")] == (gold, v_ab)
        assert got[(item_id, "BA")] == (gold, v_ba)
        assert items[item_id].response_a.startswith("alpha")        # canonical A is the same in both files
    # the figures stand on the joined pairs: phi = share of items whose two verdicts differ
    flips = sum(v_ab != v_ba for _, v_ab, v_ba in truth.values()) / N_PAIRS
    rel = reliability(j)
    assert rel["phi"].iloc[0] == pytest.approx(flips)


def test_the_derived_id_is_the_same_for_either_side_and_pinned():
    # unordered: the id names the comparison, whichever side a file puts each response on
    assert derived_item_id("q", "one", "two") == derived_item_id("q", "two", "one")
    assert derived_item_id("q", "one", "two") != derived_item_id("q2", "one", "two")
    # stable across versions: sha256 of JSON ["q", "one", "two"] (sorted responses), first 16 hex digits
    assert derived_item_id("q", "one", "two") == "h6583275df7368582"


def test_every_problem_of_the_file_at_once_with_its_fix(tmp_path):
    ab, _, _ = _log(tmp_path)
    r = runner.invoke(app, ["import", "csv", str(ab), "--run-dir", str(tmp_path / "r")])
    assert r.exit_code == 3
    lines = r.stderr.strip().splitlines()
    assert lines[0] == f"error: {ab}: 5 problems:"
    # the fix named for each: --id-from / --map for the id, the whole-file flag or --map for the rest
    for field, fix in (("item_id", "--id-from hash"), ("protocol", "--protocol"), ("dataset", "--dataset"),
                       ("order", "--order"), ("verdict", "--map verdict=COLUMN")):
        line = next(ln for ln in lines[1:] if f"field '{field}'" in ln)
        assert fix in line and "question, answer1, answer2, human, judge" in line, line
    assert not (tmp_path / "r" / "run.sqlite").exists()
    # the numbers: one line per distinct value, with its rows, naming --map-values
    r = runner.invoke(app, ["import", "csv", str(ab), "--run-dir", str(tmp_path / "r"), *COMMON[:8],
                            "--map", "verdict=judge", "--order", "AB", "--map", "response_a=answer1",
                            "--map", "response_b=answer2"])
    assert r.exit_code == 3
    number_lines = [ln for ln in r.stderr.splitlines() if "field 'judge'" in ln]
    assert len(number_lines) == 3 and all("--map-values verdict:0=tie,1=A,2=B" in ln for ln in number_lines)
    assert all(" more, field" in ln for ln in number_lines)      # rows listed, then "and N more"


def test_problem_list_is_cut_at_twenty_kinds(tmp_path):
    src = tmp_path / "many.jsonl"
    src.write_text("".join(json.dumps({"item_id": f"i{i}", "judge": "j", "protocol": "p", "dataset": "d",
                                       "order": "AB", "verdict": f"bad{i}"}) + "\n" for i in range(30)))
    with pytest.raises(ItemProblems) as ei:
        import_table(src)
    err = ei.value
    assert len(err.problems) == 30 and len(err.lines) == 30
    text = str(err).splitlines()
    assert text[0].endswith("30 problems:") and len(text) == 1 + 20 + 1
    assert text[-1] == "  ... and 10 more"


def test_id_from_row_and_the_notes(tmp_path):
    src = tmp_path / "r.csv"
    src.write_text("question,response_a,response_b,verdict\nq1,a,b,A\nq2,c,d,B\n")
    batch = import_table(src, judge="j", protocol="p", dataset="d", order="AB", id_from="row")
    assert [r["item_id"] for r in batch.judgments] == ["1", "2"]        # the record number, not the file line
    assert any(n.startswith("item ids derived (--id-from row)") for n in batch.notes)
    with pytest.raises(ItemError, match="--id-from hash derives item ids, but the file has an item_id column"):
        import_table(tmp_path / "r.csv", judge="j", protocol="p", dataset="d", order="AB", id_from="hash",
                     field_map={"item_id": "question"})


def test_id_from_hash_needs_the_texts(tmp_path):
    src = tmp_path / "h.csv"
    src.write_text("question,response_a,response_b,verdict\nq1,a,,A\n")
    with pytest.raises(ItemError, match=r"row 2, field 'response_b': --id-from hash needs the question and both"):
        import_table(src, judge="j", protocol="p", dataset="d", order="AB", id_from="hash")


def test_value_maps_for_verdict_label_and_order(tmp_path):
    src = tmp_path / "v.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [
        {"item_id": "i1", "shown": 0, "v": 1, "gold": "yes"},
        {"item_id": "i1", "shown": 1, "v": 2.0, "gold": "yes"},     # 2.0 reads as the key "2"
        {"item_id": "i2", "shown": 0, "v": "3", "gold": "no"},       # 3 -> empty: unparsed
    ]))
    batch = import_table(src, judge="j", protocol="p", dataset="d", field_map={"order": "shown", "verdict": "v",
                                                                              "label": "gold"},
                         value_map={"order": {0: "AB", 1: "BA"}, "verdict": {"1": "A", "2": "B", "3": ""},
                                    "label": {"yes": "A", "no": "B"}})
    got = [(r["order"], r["verdict"], r["label"], r["parse_status"]) for r in batch.judgments]
    assert got == [("AB", "A", "A", "ok"), ("BA", "B", "A", "ok"), ("AB", None, "B", "failed")]
    with pytest.raises(ItemError, match=r"--map-values verdict:1=C: 'C' is not one of \['A', 'B', 'tie'\] or empty"):
        import_table(src, judge="j", protocol="p", dataset="d", value_map={"verdict": {"1": "C"}})
    with pytest.raises(ItemError, match="--map-values applies to verdict, label, order, vote, not 'judge'"):
        import_table(src, judge="j", protocol="p", dataset="d", value_map={"judge": {"1": "x"}})


def test_map_values_flag_grammar(tmp_path):
    src = tmp_path / "x.csv"
    src.write_text("item_id,verdict\ni,1\n")
    base = ["import", "csv", str(src), "--run-dir", str(tmp_path / "r"), "--judge", "j", "--protocol", "p",
            "--dataset", "d", "--order", "AB"]
    r = runner.invoke(app, [*base, "--map-values", "verdict=1"])
    assert r.exit_code == 2 and "COLUMN:RAW=VALUE" in r.stderr
    r = runner.invoke(app, [*base, "--map-values", "verdict:1=A"])
    assert r.exit_code == 0, r.stderr
    r = runner.invoke(app, ["import", "pandalm", str(src), "--run-dir", str(tmp_path / "q"),
                            "--map-values", "verdict:1=A"])
    assert r.exit_code == 2 and "applies to the csv, jsonl, parquet and votes formats" in r.stderr


def test_a_column_taken_by_map_is_not_read_under_its_own_name(tmp_path):
    """--map verdict=judge: the 'judge' column holds verdicts; the judge id is --judge, never '1'."""
    src = tmp_path / "t.csv"
    src.write_text("item_id,judge\ni1,1\ni2,2\n")
    batch = import_table(src, judge="the-judge", protocol="p", dataset="d", order="AB",
                         field_map={"verdict": "judge"}, value_map={"verdict": {"1": "A", "2": "B"}})
    assert {r["judge"] for r in batch.judgments} == {"the-judge"}
    assert [r["verdict"] for r in batch.judgments] == ["A", "B"]
    with pytest.raises(ItemError, match=r"field 'judge': missing required column \(or give it for the whole file"):
        import_table(src, protocol="p", dataset="d", order="AB", field_map={"verdict": "judge"},
                     value_map={"verdict": {"1": "A", "2": "B"}})


def test_datasets_validate_file_lists_every_problem(tmp_path):
    src = tmp_path / "mine.csv"
    src.write_text("item_id,prompt,a,b,label\n1,q1,x,y,A\n2,,x,y,B\n3,q3,x,y,C\n3,q4,x,y,A\n5,q5,x\n")
    r = runner.invoke(app, ["datasets", "validate", str(src)])
    assert r.exit_code == 3
    lines = r.stderr.strip().splitlines()
    # row 4's label 'C' is listed beside its missing fields (it was hidden by them: 13 problems, 4 kinds), and
    # the problems come in row order (the short row 6, found while reading, was listed first)
    assert lines[0] == f"error: {src}: 14 problems (5 kinds):"
    assert "row 4, field 'label': Value error, label must be 'A', 'B', 'tie' or null, got 'C'" in lines[4]
    assert "row 6: 3 fields, but the header (line 1) has 5 columns" in lines[5]
    assert "rows 2, 3, 4, 5, field 'question': missing required field (name the column that holds it: " \
           "--map question=COLUMN" in r.stderr
    r = runner.invoke(app, ["datasets", "validate", str(src), "--map", "question=prompt", "--map", "response_a=a",
                            "--map", "response_b=b", "--format", "json"])
    assert r.exit_code == 3
    out = json.loads(r.stdout)
    assert out["ok"] is False and out["problems"] == [
        "row 3, field 'prompt': missing required field (the cell is empty)",
        "row 4, field 'label': Value error, label must be 'A', 'B', 'tie' or null, got 'C'",
        "row 6: 3 fields, but the header (line 1) has 5 columns; quote cells that hold ','"]
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"id": 1, "question": "q", "response_a": "a", "response_b": "b"}) + "\n")
    r = runner.invoke(app, ["datasets", "validate", str(good), "--map", "item_id=id"])
    assert r.exit_code == 0 and "ok: 1 item(s)" in r.stdout


def test_jsonl_dataset_lists_bad_lines_and_bad_records_together(tmp_path):
    src = tmp_path / "p.jsonl"
    src.write_text('{"item_id": "a", "question": "q", "response_a": "x", "response_b": "y"}\n'
                   "{not json\n"
                   '{"item_id": "b", "question": 3, "response_a": "x", "response_b": "y"}\n'
                   '{"item_id": "a", "question": "q", "response_a": "x", "response_b": "y"}\n')
    r = runner.invoke(app, ["datasets", "validate", str(src)])
    assert r.exit_code == 3
    body = r.stderr.splitlines()
    assert body[0] == f"error: {src}: 3 problems:"
    assert any("row 2: invalid JSON" in ln for ln in body)
    assert any("row 3, field 'question': must be a string, got int" in ln for ln in body)
    assert any("row 4, field 'item_id': duplicate item_id 'a' (first on row 1)" in ln for ln in body)


def test_python_api_takes_the_same_options(tmp_path):
    ab, ba, truth = _log(tmp_path)
    opts = dict(judge="gpt-x", protocol="published", dataset="pub", id_from="hash",
                field_map={"verdict": "judge", "label": "human", "response_a": "answer1", "response_b": "answer2"},
                value_map={"verdict": {"0": "tie", "1": "A", "2": "B"}, "label": {"0": "tie", "1": "A", "2": "B"}})
    res = import_into("csv", ab, run_dir=tmp_path / "run", order="AB", **opts)
    assert res.n_inserted == N_PAIRS and res.n_items == N_PAIRS


@pytest.mark.parametrize(("fmt", "records", "fields"), [
    ("pandalm", [{"idx": 1, "m_result": "7"}, {"idx": None, "m_result": "1"}, {"m_result": "1"}],
     ["m_result", "idx", "idx"]),
    ("judgebench", [{"pair_id": "p1", "question": "q", "response_A": "a", "response_B": "b", "label": "A>B",
                     "judge_model": "m", "judgments": [{"decision": "A>B"}]},
                    {"pair_id": "p2", "question": "q", "response_A": "a", "response_B": "b", "label": "X",
                     "judge_model": "m", "judgments": [{"decision": "A>B"}, {"decision": "B>A"}]}],
     ["judgments", "label"]),
    ("fastchat", [{"question_id": 81, "model_1": "a", "model_2": "b", "turn": 0, "judge": ["gpt-4", "pair-v2"],
                   "g1_winner": "model_1", "g2_winner": "model_2"},
                  {"question_id": 82, "model_1": "a", "model_2": "b", "turn": 1, "judge": ["gpt-4", "pair-v2"],
                   "g1_winner": "model_9", "g2_winner": "model_2"}],
     ["turn", "g1_winner"]),
])
def test_named_importers_list_every_bad_record_too(tmp_path, fmt, records, fields):
    src = tmp_path / ("x_pair.jsonl" if fmt == "fastchat" else "x.jsonl")
    src.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(ItemProblems) as ei:
        import_into(fmt, src, run_dir=tmp_path / "run")
    assert [p.field for p in ei.value.problems] == fields
    assert not (tmp_path / "run" / "run.sqlite").exists()
