"""One item, one content: an import whose rows of one item disagree on any per-item field -- the gold
label, the category, the question, either response, the reference -- is refused naming file, row and
field, whatever the row order, in JSONL and CSV, within one file and across imports into one run.
Before, item x0 labelled A on its AB row and B on its BA row imported with exit 0, and A came out 1.0
or 0.75 depending only on row order.

Also the import defects of the same attack: ids and judge names that are not text (pandalm ``idx``
null/true/list, a JSON object as ``judge_model``) and order cells with spaces."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.items import ItemError, ItemProblems
from verdictlab.importers import import_into
from verdictlab.importers.judgebench import import_judgebench
from verdictlab.importers.pandalm import import_pandalm
from verdictlab.importers.tabular import import_table
from verdictlab.store import open_store

BASE = {"item_id": "x0", "judge": "j", "protocol": "p", "dataset": "d", "rep": 0, "temperature": 0.0,
        "verdict": "A", "label": "A", "category": "c", "question": "q", "response_a": "a", "response_b": "b",
        "reference": "r"}
PER_ITEM = ("label", "category", "question", "response_a", "response_b", "reference")
OTHER = {"label": "B", "category": "other", "question": "q2", "response_a": "a2", "response_b": "b2",
         "reference": "r2"}


def _write(path: Path, rows: list[dict[str, object]]) -> Path:
    if path.suffix == ".csv":
        with path.open("w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
@pytest.mark.parametrize("field", PER_ITEM)
@pytest.mark.parametrize("flip_rows", [False, True])
def test_any_per_item_field_that_differs_between_rows_is_refused(tmp_path, suffix, field, flip_rows):
    rows = [{**BASE, "order": "AB"}, {**BASE, "order": "BA", field: OTHER[field]}]
    if flip_rows:
        rows.reverse()
    src = _write(tmp_path / f"t{suffix}", rows)
    first_line = 2 if suffix == ".csv" else 1
    with pytest.raises(ItemError) as ei:
        import_into(suffix[1:], src, run_dir=tmp_path / "run")
    msg = str(ei.value)
    assert f"row {first_line + 1}, field '{field}'" in msg and f"row {first_line}" in msg, msg
    assert "x0" in msg, msg
    assert not (tmp_path / "run" / "run.sqlite").exists()           # nothing written


def test_the_reported_instance_label_a_on_ab_and_b_on_ba(tmp_path):
    src = _write(tmp_path / "x.jsonl", [
        {"item_id": "x0", "judge": "j", "protocol": "p", "dataset": "d", "order": "AB", "rep": 0,
         "temperature": 0, "verdict": "A", "label": "A"},
        {"item_id": "x0", "judge": "j", "protocol": "p", "dataset": "d", "order": "BA", "rep": 0,
         "temperature": 0, "verdict": "A", "label": "B"}])
    r = CliRunner().invoke(app, ["import", "jsonl", str(src), "--run-dir", str(tmp_path / "run")])
    assert r.exit_code == 3
    assert (f"error: {src}, row 2, field 'label': item 'x0' of dataset 'd' has label 'B' here but 'A' on row 1: "
            "one item has one label") in r.stderr


def test_a_label_on_one_row_and_none_on_another_is_a_conflict_too(tmp_path):
    src = _write(tmp_path / "x.jsonl", [{**BASE, "order": "AB"}, {**BASE, "order": "BA", "label": None}])
    with pytest.raises(ItemError, match=r"row 2, field 'label': item 'x0' of dataset 'd' has label empty here but 'A'"):
        import_table(src)


@pytest.mark.parametrize("field", ["label", "category"])
def test_per_item_fields_must_agree_across_imports(tmp_path, field):
    """The AB file and the BA file imported one after the other into one run."""
    ab = _write(tmp_path / "ab.jsonl", [{**BASE, "order": "AB"}])
    ba = _write(tmp_path / "ba.jsonl", [{**BASE, "order": "BA", field: OTHER[field]}])
    import_into("jsonl", ab, run_dir=tmp_path / "run")
    with pytest.raises(ItemError, match=rf"ba.jsonl, row 1, field '{field}': item 'x0' of dataset 'd' has {field} "
                                        rf"'{OTHER[field]}' here but '{BASE[field]}' in the judgments already stored"):
        import_into("jsonl", ba, run_dir=tmp_path / "run")
    with pytest.raises(ItemError, match="already stored"):       # --replace of other trials cannot fix it either
        import_into("jsonl", ba, run_dir=tmp_path / "run", replace=True)
    with open_store(tmp_path / "run") as store:
        assert len(store.judgments()) == 1                          # the second import wrote nothing
    # the same content imports, and re-importing a corrected file of the same trials with --replace works
    fixed = _write(tmp_path / "ba2.jsonl", [{**BASE, "order": "BA"}])
    assert import_into("jsonl", fixed, run_dir=tmp_path / "run").n_inserted == 1
    both = _write(tmp_path / "both.jsonl", [{**BASE, "order": o, field: OTHER[field]} for o in ("AB", "BA")])
    res = import_into("jsonl", both, run_dir=tmp_path / "run", replace=True)
    assert res.n_replaced == 2


def test_texts_that_differ_across_imports_are_refused(tmp_path):
    ab = _write(tmp_path / "ab.jsonl", [{**BASE, "order": "AB"}])
    ba = _write(tmp_path / "ba.jsonl", [{**BASE, "order": "BA", "response_b": "changed"}])
    import_into("jsonl", ab, run_dir=tmp_path / "run")
    with pytest.raises(ItemError, match="item\\(s\\) differ from the stored items"):
        import_into("jsonl", ba, run_dir=tmp_path / "run")


def test_every_conflict_is_listed_with_the_other_problems(tmp_path):
    rows = [{**BASE, "item_id": f"x{i}", "order": o, "label": "A" if o == "AB" else "B"}
            for i in range(3) for o in ("AB", "BA")]
    src = _write(tmp_path / "t.jsonl", rows)
    with pytest.raises(ItemProblems) as ei:
        import_table(src)
    assert len(ei.value.problems) == 3 and all(p.field == "label" for p in ei.value.problems)


# -- ids and names that are not text ------------------------------------------------------------------

@pytest.mark.parametrize(("idx", "what"), [(None, "null"), (True, "bool True"), ([1, 2], "list [1, 2]"),
                                           ({"a": 1}, "dict {'a': 1}"), (2.5, "float 2.5"), ("  ", "")])
def test_pandalm_idx_must_be_text_or_an_integer(tmp_path, idx, what):
    src = tmp_path / "p.json"
    src.write_text(json.dumps([{"idx": idx, "m_result": "1"}]))
    with pytest.raises(ItemError, match=r"row 1, field 'idx': must (be text or an integer, got|not be empty)") as ei:
        import_pandalm(src)
    assert what in str(ei.value)


def test_pandalm_integer_idx_still_imports(tmp_path):
    src = tmp_path / "p.json"
    src.write_text(json.dumps([{"idx": 7, "m_result": "1"}, {"idx": 8.0, "m_result": "2"}]))
    assert [r["item_id"] for r in import_pandalm(src).judgments] == ["7", "8"]


@pytest.mark.parametrize("judge_model", [{"name": "gpt-4o"}, ["gpt-4o"], True])
def test_judgebench_judge_model_must_be_text(tmp_path, judge_model):
    rec = {"pair_id": "p1", "source": "s", "question": "q", "response_A": "a", "response_B": "b", "label": "A>B",
           "judge_model": judge_model, "judge_name": "arena_hard",
           "judgments": [{"decision": "A>B"}, {"decision": "B>A"}]}
    src = tmp_path / "jb.jsonl"
    src.write_text(json.dumps(rec) + "\n")
    with pytest.raises(ItemError, match=r"row 1, field 'judge_model': must be text or an integer"):
        import_judgebench(src)


@pytest.mark.parametrize("column", ["item_id", "judge", "dataset"])
@pytest.mark.parametrize("value", [[1, 2], {"k": "v"}, True])
def test_table_ids_and_names_must_be_text(tmp_path, column, value):
    src = _write(tmp_path / "t.jsonl", [{**BASE, "order": "AB", column: value}])
    with pytest.raises(ItemError, match=rf"row 1, field '{column}': must be text or an integer"):
        import_table(src)


def test_order_with_spaces_is_read_like_a_verdict_with_spaces(tmp_path):
    """' A ' was stripped but ' AB' refused: every word of a fixed vocabulary is read the same way."""
    src = tmp_path / "s.csv"
    src.write_text("item_id,judge,protocol,dataset,order,verdict,label,parse_status\n"
                   "i, j,p,d, AB , A ,B , ok\n")
    r = import_table(src).judgments[0]
    assert (r["order"], r["verdict"], r["label"], r["parse_status"]) == ("AB", "A", "B", "ok")
    assert r["judge"] == " j"                         # ids and names are kept as written
    src.write_text("item_id,judge,protocol,dataset,order,verdict\ni,j,p,d,A B,A\n")
    with pytest.raises(ItemError, match="order must be 'AB' or 'BA', got 'A B'"):
        import_table(src)


@pytest.mark.parametrize("column", ["verdict", "label", "order", "rep", "temperature"])
@pytest.mark.parametrize("value", [[1, 2], {"k": "v"}, True])
def test_cells_of_any_json_type_are_refused_cleanly(tmp_path, column, value):
    src = _write(tmp_path / "t.jsonl", [{**BASE, "order": "AB", column: value}])
    with pytest.raises(ItemError, match=rf"row 1, field '{column}'"):
        import_table(src)


# -- the Parquet bulk path holds the same rules (it hands anything doubtful to the per-row import) ------

def _parquet(path: Path, rows: list[dict[str, object]]) -> Path:
    import pandas as pd

    pd.DataFrame(rows).to_parquet(path, index=False)
    return path


PLAIN = {"item_id": "x0", "judge": "j", "protocol": "p", "dataset": "d", "rep": 0, "temperature": 0.0,
         "verdict": "A", "label": "A", "category": "c", "tokens_in": 3, "latency_s": 0.5}


@pytest.mark.parametrize(("change", "message"), [
    ({"label": "B"}, r"field 'label': item 'x0' of dataset 'd' has label 'B' here but 'A'"),
    ({"category": "other"}, r"field 'category': item 'x0' of dataset 'd' has category 'other'"),
    ({"temperature": -3.0}, r"field 'temperature': temperature must be in \[0, 2\]"),
    ({"temperature": 5.0}, r"field 'temperature': temperature must be in \[0, 2\]"),
    ({"tokens_in": -1}, r"field 'tokens_in': tokens must be an integer >= 0"),
    ({"latency_s": -0.5}, r"field 'latency_s': latency_s must be >= 0"),
])
def test_the_parquet_bulk_path_refuses_what_the_per_row_import_refuses(tmp_path, change, message):
    src = _parquet(tmp_path / "t.parquet", [{**PLAIN, "order": "AB"}, {**PLAIN, "order": "BA", **change}])
    with pytest.raises(ItemError, match=message):
        import_into("parquet", src, run_dir=tmp_path / "run")
    assert not (tmp_path / "run" / "run.sqlite").exists() or _count(tmp_path / "run") == 0


def test_the_parquet_bulk_path_does_not_read_a_taken_column_twice(tmp_path):
    """--map verdict=judge: the bulk path used to read the 'judge' column as the judge id as well."""
    rows = [{k: v for k, v in PLAIN.items() if k != "judge"} | {"order": o, "judge": v}
            for o, v in (("AB", "A"), ("BA", "B"))]
    for r in rows:
        del r["verdict"]
    src = _parquet(tmp_path / "t.parquet", rows)
    res = import_into("parquet", src, run_dir=tmp_path / "run", judge="the-judge", field_map={"verdict": "judge"})
    assert res.cells == (("the-judge", "p", "d", 0.0),)
    with open_store(tmp_path / "run") as store:
        assert sorted(store.judgments()["verdict"]) == ["A", "B"]


def _count(run: Path) -> int:
    with open_store(run) as store:
        return len(store.judgments())
