"""Importers declare their options (name, type, help, default) where they are registered; ``verdictlab import``
builds its flags from the declarations, so a new importer's option is a flag without touching the CLI."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.errors import UsageError
from verdictlab.importers import (
    COMMON_OPTIONS,
    get_importer,
    importer_names,
    importer_options,
    register_importer,
)
from verdictlab.importers.options import ImporterOption, parse_field_map, parse_value_map

runner = CliRunner()


def _keywords(fn: object) -> set[str]:
    return {n for n, p in inspect.signature(fn).parameters.items()  # type: ignore[arg-type]
            if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}


def test_every_declared_option_is_a_keyword_of_its_importer() -> None:
    from verdictlab.importers.tabular import import_table

    for name in importer_names():
        if name == "inspect":          # needs the 'inspect' extra to load; checked by its signature below
            continue
        fn = get_importer(name)
        takes = _keywords(import_table if name in ("csv", "jsonl", "parquet") else fn)
        # file_pattern: the importer reads it, or the import layer applies it to the rows (_file_keys)
        own = [o.name for o in importer_options(name) if o not in COMMON_OPTIONS and o.name != "file_pattern"]
        assert set(own) <= takes, (name, set(own) - takes)


def test_an_option_is_declared_once_and_with_a_known_type() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        register_importer("twice", "x:y", options=(ImporterOption("judge"),))
    with pytest.raises(ValueError, match="type must be"):
        ImporterOption("n", type=list)
    with pytest.raises(ValueError, match="keyword name"):
        ImporterOption("not-a-name")


def test_the_option_parsers_read_the_flags_text() -> None:
    assert parse_field_map(["verdict=winner", " q = question "]) == {"verdict": "winner", "q": "question"}
    assert parse_value_map(["verdict:0=tie,1=A,2=B", "label:x="]) == {
        "verdict": {"0": "tie", "1": "A", "2": "B"}, "label": {"x": ""}}
    with pytest.raises(UsageError, match="COLUMN=SOURCE_COLUMN"):
        parse_field_map(["verdict"])


def test_import_help_lists_every_declared_flag_with_its_formats() -> None:
    shown = " ".join(runner.invoke(app, ["import", "--help"]).stdout.split())
    for name in importer_names():
        for opt in importer_options(name):
            assert opt.flag_name in shown, (name, opt.flag_name)
    assert "pandalm: an unreadable output is a tie" in shown and "Default: tie." in shown
    assert ("Source format: alpaca-eval, csv, fastchat, fastchat-reviews, inspect, jsonl, judgebench, llmbar, "
            "pandalm, parquet, prd, votes.") in shown


def test_a_flag_the_format_does_not_declare_is_a_usage_error(tmp_path) -> None:
    src = tmp_path / "x.jsonl"
    src.write_text("{}\n", encoding="utf-8")
    r = runner.invoke(app, ["import", "llmbar", str(src), "--run-dir", str(tmp_path / "r"), "--garbage", "tie"])
    assert r.exit_code == 2 and "Invalid value for --garbage: applies to the pandalm format" in r.stderr
    r = runner.invoke(app, ["import", "csv", str(src), "--run-dir", str(tmp_path / "r"), "--map", "verdict"])
    assert r.exit_code == 2 and "Invalid value for --map: expected COLUMN=SOURCE_COLUMN, got 'verdict'" in r.stderr


def test_the_command_line_loads_no_importer_to_build_its_flags() -> None:
    """The flags come from the registrations: building the command imports no importer module, no pandas."""
    code = ("import sys; from typer.main import get_command; from verdictlab.cli.main import app; "
            "get_command(app); print(sorted(m for m in sys.modules if m.startswith('verdictlab.importers.') "
            "or m in ('pandas', 'pydantic')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['verdictlab.importers.options']"
