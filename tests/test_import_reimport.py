"""Re-import is never silent (issue 11): identical rows are a no-op that says so, changed rows refuse
with a count and one example unless --replace; and the CLI flags the issue asked for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.importers import import_into
from verdictlab.importers._reimport import ReimportError
from verdictlab.store import open_store

ROWS = [{"item_id": f"i{k}", "judge": "j", "protocol": "p", "dataset": "d", "order": o, "rep": 0,
         "temperature": 0.0, "verdict": v, "label": "A"}
        for k, (o, v) in enumerate([("AB", "A"), ("BA", "A"), ("AB", "B"), ("BA", None)])]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def verdicts(run: Path) -> dict[str, str | None]:
    with open_store(run) as store:
        df = store.judgments()
    return {r.item_id: (None if r.verdict is None or r.verdict != r.verdict else r.verdict)
            for r in df.itertuples()}


def test_identical_reimport_is_a_noop_even_reordered(tmp_path):
    src = write_jsonl(tmp_path / "a.jsonl", ROWS)
    first = import_into("jsonl", src, run_dir=tmp_path / "run")
    assert (first.n_inserted, first.n_identical) == (4, 0)
    # same content, other row order (so other parse_detail row numbers): still identical
    again = import_into("jsonl", write_jsonl(tmp_path / "b.jsonl", ROWS[::-1]), run_dir=tmp_path / "run")
    assert (again.n_inserted, again.n_replaced, again.n_identical, again.n_skipped) == (0, 0, 4, 4)
    more = import_into("jsonl", write_jsonl(tmp_path / "c.jsonl", [*ROWS, {**ROWS[0], "item_id": "new"}]),
                       run_dir=tmp_path / "run")
    assert (more.n_inserted, more.n_identical) == (1, 4)


def test_changed_rows_refuse_with_count_and_example_unless_replace(tmp_path):
    run = tmp_path / "run"
    import_into("jsonl", write_jsonl(tmp_path / "a.jsonl", ROWS), run_dir=run)
    fixed = [dict(r) for r in ROWS]
    fixed[0]["verdict"] = "B"                 # a corrected verdict
    fixed[3]["verdict"] = "tie"               # a verdict where there was none
    src = write_jsonl(tmp_path / "fixed.jsonl", fixed)
    with pytest.raises(ReimportError) as err:
        import_into("jsonl", src, run_dir=run)
    msg = str(err.value)
    assert "refusing to import: 2 judgment row(s) differ" in msg
    assert "item_id='i0'" in msg and "verdict 'A' -> 'B'" in msg
    assert "0 new, 2 identical" in msg and "--replace" in msg and "Nothing was written" in msg
    assert verdicts(run) == {"i0": "A", "i1": "A", "i2": "B", "i3": None}        # untouched
    res = import_into("jsonl", src, run_dir=run, replace=True)
    assert (res.n_inserted, res.n_replaced, res.n_identical) == (0, 2, 2)
    assert verdicts(run) == {"i0": "B", "i1": "A", "i2": "B", "i3": "tie"}
    with open_store(run) as store:
        df = store.judgments().set_index("item_id")
        imports = store.get_meta("imports")
    assert df.loc["i3", "parse_status"] == "ok" and df.loc["i0", "shown_first_won"] == 0
    assert [r["n_replaced"] for r in imports] == [0, 2]


def test_changed_items_refuse_too(tmp_path):
    run = tmp_path / "run"
    with_items = [{**r, "question": "q", "response_a": "a", "response_b": "b"} for r in ROWS]
    import_into("jsonl", write_jsonl(tmp_path / "a.jsonl", with_items), run_dir=run)
    changed = [{**r, "response_b": "B!"} if r["item_id"] == "i2" else r for r in with_items]
    with pytest.raises(ReimportError, match=r"1 item\(s\) differ .* e\.g\. d/i2"):
        import_into("jsonl", write_jsonl(tmp_path / "b.jsonl", changed), run_dir=run)
    import_into("jsonl", tmp_path / "b.jsonl", run_dir=run, replace=True)
    with open_store(run) as store:
        assert {it.item_id: it.response_b for it in store.items()}["i2"] == "B!"


def test_cli_reimport_messages_and_exit_codes(tmp_path):
    runner = CliRunner()
    run = tmp_path / "run"
    src = write_jsonl(tmp_path / "a.jsonl", ROWS)
    args = ["import", "jsonl", str(src), "--run-dir", str(run)]
    assert runner.invoke(app, args).exit_code == 0
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "nothing imported: all 4 judgment(s)" in r.output and "(no-op)" in r.output
    fixed = write_jsonl(tmp_path / "fixed.jsonl", [{**ROWS[0], "verdict": "B"}, *ROWS[1:]])
    r = runner.invoke(app, ["import", "jsonl", str(fixed), "--run-dir", str(run)])
    assert r.exit_code == 3 and "1 judgment row(s) differ" in r.output
    r = runner.invoke(app, ["import", "jsonl", str(fixed), "--run-dir", str(run), "--replace", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["n_inserted"], out["n_replaced"], out["n_identical"]) == (0, 1, 3)


def test_cli_table_flags_order_rep_verdicts_map_and_items(tmp_path):
    """--map item_id=idx with --order/--rep/--judge and no label column; labels from --items."""
    runner = CliRunner()
    src = write_jsonl(tmp_path / "pos.jsonl", [{"idx": "p1", "winner": "A"}, {"idx": "p2", "winner": "B"}])
    items = write_jsonl(tmp_path / "items.jsonl", [
        {"item_id": "p1", "question": "q1", "response_a": "a1", "response_b": "b1", "label": "B"},
        {"item_id": "p2", "question": "q2", "response_a": "a2", "response_b": "b2", "label": "A"}])
    r = runner.invoke(app, ["import", "jsonl", str(src), "--run-dir", str(tmp_path / "run"),
                            "--map", "item_id=idx", "--map", "verdict=winner", "--judge", "j", "--protocol", "p",
                            "--dataset", "items", "--order", "BA", "--rep", "2", "--temperature", "0",
                            "--verdicts", "positional", "--items", "jsonl", "--items-path", str(items)])
    assert r.exit_code == 0, r.output
    with open_store(tmp_path / "run") as store:
        df = store.judgments().set_index("item_id")
    # positional A shown BA = response_b -> canonical B
    assert df.loc["p1", "verdict"] == "B" and df.loc["p2", "verdict"] == "A"
    assert df.loc["p1", "label"] == "B" and df.loc["p1", "rep"] == 2 and df.loc["p1", "order"] == "BA"
    r = runner.invoke(app, ["import", "llmbar", str(src), "--run-dir", str(tmp_path / "x"), "--order", "AB"])
    assert r.exit_code == 2 and "--order" in r.output
