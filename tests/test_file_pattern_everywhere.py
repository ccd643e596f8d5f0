"""Keys from each file's name (``--file-pattern`` / ``file_pattern``) for every importer, ``import votes``
and the dataset loaders (issue 32, item 1): a regular expression with named groups searched in the name of
each file of a folder.  A row key from the name fills what the row left empty and a different value in
the row is an error naming file, row and field; a whole-file key (judge ...) is its option for that file;
a file whose name does not match, or a group that names no key, is an error naming it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.items import ItemError
from verdictlab.datasets import load_dataset
from verdictlab.engine.config import DatasetSpec
from verdictlab.errors import UsageError
from verdictlab.importers import IMPORTERS, import_into, importer_names, importer_options
from verdictlab.store import open_store

PAIR = r"answer_(?P<system_a>[^-]+)-vs-answer_(?P<system_b>[^-]+)-(?P<judge>[^-]+)-reviewer"
SHOWN = r"answer_(?P<system_first>[^-]+)-vs-answer_(?P<system_second>[^-]+)-(?P<judge>[^-]+)-reviewer"
#: registered formats whose rows do not come from files named by the user, and why (none today)
NOT_READING_FILE_NAMES: dict[str, str] = {}
#: importers whose rows another module builds (that module marks each row with its file)
ROWS_BUILT_ELSEWHERE = {"prd": "verdictlab.importers.fastchat_reviews"}


def _write(path: Path, recs: list[dict[str, Any]], *, lines: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in recs) if lines else json.dumps(recs))
    return path


def _llmbar_record(i: int, winner: str) -> dict[str, Any]:
    return {"input": f"question {i}", "output_1": f"first answer {i}", "output_2": f"second answer {i}",
            "label": 1, "results": [{"swap = False": {"winner": winner}, "swap = True": {"winner": "1"}}]}


def _llmbar_folder(root: Path) -> Path:
    _write(root / "answer_x-vs-answer_y-gpt4-reviewer.result.json", [_llmbar_record(1, "1")], lines=False)
    _write(root / "answer_x-vs-answer_z-claude-reviewer.result.json", [_llmbar_record(2, "2")], lines=False)
    return root


# -- every importer that reads files takes the option ------------------------------------------------------

def test_every_importer_that_reads_files_declares_file_pattern_and_marks_its_rows() -> None:
    for name in importer_names():
        if name in NOT_READING_FILE_NAMES:
            continue
        assert "file_pattern" in [o.name for o in importer_options(name)], name
        target = IMPORTERS.entry(name).target
        if not isinstance(target, str) or name in ("csv", "jsonl", "parquet", "votes"):
            continue                       # the table and vote readers apply the pattern themselves
        module = ROWS_BUILT_ELSEWHERE.get(name, target.partition(":")[0])
        spec = importlib.util.find_spec(module)
        assert spec is not None and spec.origin is not None
        # the import layer gives each row its file's keys: the importer says which file a row came from
        assert '"_file"' in Path(spec.origin).read_text(), (name, module)


def test_the_import_help_shows_file_pattern_for_a_named_importer() -> None:
    out = CliRunner().invoke(app, ["import", "--help"], env={"COLUMNS": "200"}).output
    # every format takes it: the flag's help names no formats, and says what a non-matching name is
    text = " ".join(out[out.index("--file-pattern"):].split())
    assert text.startswith("--file-pattern REGEX a regular expression") and "does not match is an error" in text


# -- a named importer ----------------------------------------------------------------------------------------

def test_llmbar_results_take_systems_and_judge_from_each_file_name(tmp_path: Path) -> None:
    folder = _llmbar_folder(tmp_path / "results")
    res = import_into("llmbar", folder, run_dir=tmp_path / "run", file_pattern=PAIR, protocol="CoT")
    assert res.n_rows == 4
    with open_store(tmp_path / "run") as store:
        rows = store.judgments(["judge", "system_a", "system_b", "order", "verdict"]).to_dict("records")
        items = {it.item_id: it for it in store.items()}
    got = sorted((r["judge"], r["system_a"], r["system_b"], r["order"], r["verdict"]) for r in rows)
    assert got == [("claude", "x", "z", "AB", "B"), ("claude", "x", "z", "BA", "A"),
                   ("gpt4", "x", "y", "AB", "A"), ("gpt4", "x", "y", "BA", "A")]
    assert sorted((it.system_a, it.system_b) for it in items.values()) == [("x", "y"), ("x", "z")]
    assert any("--file-pattern" in n for n in res.notes)


def test_the_same_folder_through_the_command_line(tmp_path: Path) -> None:
    folder = _llmbar_folder(tmp_path / "results")
    out = CliRunner().invoke(app, ["import", "llmbar", str(folder), "--run-dir", str(tmp_path / "run"),
                                   "--protocol", "CoT", "--file-pattern", PAIR])
    assert out.exit_code == 0, out.output
    with open_store(tmp_path / "run") as store:
        assert sorted(set(store.judgments(["judge"])["judge"])) == ["claude", "gpt4"]


def test_a_row_key_the_row_has_differently_is_an_error_naming_file_row_and_field(tmp_path: Path) -> None:
    # the file holds both orders; a name saying AB conflicts with the rows of the BA game
    _write(tmp_path / "r" / "x-AB.result.json", [_llmbar_record(1, "1")], lines=False)
    with pytest.raises(ItemError) as err:
        import_into("llmbar", tmp_path / "r", run_dir=tmp_path / "run", file_pattern=r"-(?P<order>AB|BA)\.",
                    judge="j", protocol="p")
    text = str(err.value)
    assert "x-AB.result.json" in text and "row 1" in text and "field 'order'" in text and "'BA'" in text


def test_a_whole_file_key_from_the_name_and_its_option_together_are_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="judge"):
        import_into("llmbar", _llmbar_folder(tmp_path / "r"), run_dir=tmp_path / "run", file_pattern=PAIR,
                    judge="j", protocol="p")


def test_a_file_whose_name_does_not_match_and_an_unknown_group_are_errors(tmp_path: Path) -> None:
    folder = _llmbar_folder(tmp_path / "r")
    _write(folder / "stray.result.json", [_llmbar_record(3, "1")], lines=False)
    with pytest.raises(ItemError) as err:
        import_into("llmbar", folder, run_dir=tmp_path / "run", file_pattern=PAIR, protocol="p")
    assert "stray.result.json" in str(err.value) and "does not match" in str(err.value)
    with pytest.raises(ItemError, match=r"annotator.*name no key"):
        import_into("llmbar", folder, run_dir=tmp_path / "run", file_pattern=r"(?P<annotator>\w+)", judge="j",
                    protocol="p")


# -- import votes ------------------------------------------------------------------------------------------------

def _pairs_run(tmp_path: Path) -> Path:
    """A run of two pairs of question q1 (x vs y, x vs z), ids made from the question and the file's systems."""
    logs = tmp_path / "logs"
    for other in ("y", "z"):
        _write(logs / f"answer_x-vs-answer_{other}-gpt4-reviewer.jsonl",
               [{"item_id": "q1", "question": "Q", "response_a": "from x", "response_b": f"from {other}",
                 "verdict": "A"}])
    import_into("jsonl", logs, run_dir=tmp_path / "run", file_pattern=SHOWN, id_from="pair", protocol="p",
                dataset="d")
    return tmp_path / "run"


def test_votes_files_per_system_pair_find_their_pair_from_the_file_name(tmp_path: Path) -> None:
    run = _pairs_run(tmp_path)
    votes = tmp_path / "votes"
    _write(votes / "answer_x-vs-answer_y-h1-reviewer.jsonl", [{"item_id": "q1", "vote": "B"}])
    _write(votes / "answer_x-vs-answer_z-h1-reviewer.jsonl", [{"item_id": "q1", "vote": "A"}])
    pattern = r"answer_(?P<system_a>[^-]+)-vs-answer_(?P<system_b>[^-]+)-(?P<annotator>[^-]+)-reviewer"
    res = import_into("votes", votes, run_dir=run, file_pattern=pattern)
    assert res.n_rows == 2 and res.n_items == 2
    with open_store(run) as store:
        labels = {it.item_id: (it.label, [v.annotator for v in it.votes]) for it in store.items()}
    assert labels == {"q1-x-vs-y": ("B", ["h1"]), "q1-x-vs-z": ("A", ["h1"])}


def test_a_votes_row_that_contradicts_its_file_name_is_an_error(tmp_path: Path) -> None:
    run = _pairs_run(tmp_path)
    _write(tmp_path / "votes" / "answer_x-vs-answer_y-h1-reviewer.jsonl",
           [{"item_id": "q1", "vote": "B", "annotator": "h2"}])
    pattern = r"answer_(?P<system_a>[^-]+)-vs-answer_(?P<system_b>[^-]+)-(?P<annotator>[^-]+)-reviewer"
    with pytest.raises(ItemError) as err:
        import_into("votes", tmp_path / "votes", run_dir=run, file_pattern=pattern)
    text = str(err.value)
    assert "answer_x-vs-answer_y-h1-reviewer.jsonl" in text and "row 1" in text and "field 'annotator'" in text
    with pytest.raises(ItemError, match="name no key of a vote"):
        import_into("votes", tmp_path / "votes", run_dir=run, file_pattern=PAIR)


# -- dataset loaders ---------------------------------------------------------------------------------------------

def _pairs_folder(root: Path) -> Path:
    for i, other in enumerate(("y", "z"), start=1):
        _write(root / f"answer_x-vs-answer_{other}-gpt4-reviewer.jsonl",
               [{"item_id": f"q{i}", "question": "Q", "response_a": "from x", "response_b": f"from {other}",
                 "label": "A"}])
    return root


def test_the_jsonl_loader_reads_a_folder_with_keys_from_each_file_name(tmp_path: Path) -> None:
    folder = _pairs_folder(tmp_path / "pairs")
    load = load_dataset("jsonl", path=str(folder), file_pattern=r"answer_(?P<system_a>[^-]+)-vs-answer_"
                                                               r"(?P<system_b>[^-]+)-")
    assert load.name == "pairs"
    assert sorted((it.item_id, it.dataset, it.system_a, it.system_b) for it in load.items) == [
        ("q1", "pairs", "x", "y"), ("q2", "pairs", "x", "z")]


def test_a_run_config_dataset_entry_takes_file_pattern(tmp_path: Path) -> None:
    folder = _pairs_folder(tmp_path / "pairs")
    spec = DatasetSpec.model_validate({"name": "jsonl", "path": str(folder), "dataset": "mine",
                                       "file_pattern": r"-vs-answer_(?P<system_b>[^-]+)-"})
    load = load_dataset(spec.name, path=spec.path, **spec.options)
    assert load.name == "mine" and sorted(it.system_b for it in load.items) == ["y", "z"]


def test_dataset_file_pattern_errors_name_the_file(tmp_path: Path) -> None:
    folder = _pairs_folder(tmp_path / "pairs")
    with pytest.raises(ItemError) as err:
        load_dataset("jsonl", path=str(folder), file_pattern=r"answer_(?P<system_a>[^-]+)-vs-answer_y")
    text = str(err.value)
    assert "answer_x-vs-answer_z-gpt4-reviewer.jsonl" in text and "does not match" in text
    _write(folder / "answer_x-vs-answer_y-gpt4-reviewer.jsonl",          # the item says math, the name gpt4
           [{"item_id": "q1", "question": "Q", "response_a": "a", "response_b": "b", "category": "math"}])
    with pytest.raises(ItemError) as err:
        load_dataset("jsonl", path=str(folder), file_pattern=r"-(?P<category>[^-]+)-reviewer")
    text = str(err.value)
    assert "answer_x-vs-answer_y-gpt4-reviewer.jsonl" in text and "field 'category'" in text and "'math'" in text
    with pytest.raises(ItemError, match="name no key of a dataset item"):
        load_dataset("jsonl", path=str(folder), file_pattern=PAIR)


def test_a_whole_file_key_from_the_name_wins_over_what_the_source_says_as_its_option_does(tmp_path: Path) -> None:
    # LLMBar's own file name says judge GPT-4; the pattern's judge is --judge for that file
    _write(tmp_path / "r" / "Natural_GPT-4_CoT.result.json", [_llmbar_record(1, "1")], lines=False)
    res = import_into("llmbar", tmp_path / "r", run_dir=tmp_path / "run", file_pattern=r"^(?P<dataset>[^_]+)_[^_]+_"
                      r"(?P<protocol>\w+)", judge="mine")
    assert res.cells == (("mine", "CoT", "Natural", 0.0),)
    with open_store(tmp_path / "run") as store:
        assert {it.dataset for it in store.items()} == {"Natural"}


def test_tables_follow_the_same_rule(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    _write(logs / "answer_x-vs-answer_y-gpt4-reviewer.jsonl",
           [{"item_id": "q1", "verdict": "A", "system_a": "x"}, {"item_id": "q2", "verdict": "A", "system_a": "w"}])
    with pytest.raises(ItemError) as err:
        import_into("jsonl", logs, run_dir=tmp_path / "run", file_pattern=PAIR, protocol="p", dataset="d", order="AB")
    text = str(err.value)
    assert "row 2" in text and "field 'system_a'" in text and "'w'" in text and "row 1" not in text
    with pytest.raises(UsageError, match="judge"):
        import_into("jsonl", logs, run_dir=tmp_path / "run", file_pattern=PAIR, judge="j", protocol="p")
