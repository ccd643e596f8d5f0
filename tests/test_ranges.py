"""The ranges of numbers from outside (verdictlab.core.ranges): each range's check on known values, every
range listed in docs/errors.md, and each entry point (config, import rows, import flags, CLI flags)
refusing an out-of-range number with the range in the message."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.items import ItemError
from verdictlab.core.ranges import (
    CONFIDENCE,
    HALF_WIDTH,
    RANGES,
    REP,
    TEMPERATURE,
    TOKENS,
    RangeError,
)
from verdictlab.engine.config import ConfigError, load_config
from verdictlab.importers.tabular import import_table

DOCS = Path(__file__).resolve().parents[1] / "docs" / "errors.md"


@pytest.mark.parametrize(("range_", "value", "expected"), [
    (TEMPERATURE, 0, 0), (TEMPERATURE, 2.0, 2.0), (TEMPERATURE, 0.7, 0.7),   # closed ends are inside
    (TOKENS, 0, 0), (TOKENS, 12.0, 12),            # a whole float is the integer it names
    (REP, 3, 3),
    (HALF_WIDTH, 0.03, 0.03),
])
def test_values_inside_are_returned(range_, value, expected):
    got = range_.check(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("range_", "value", "message"), [
    (TEMPERATURE, -3, "temperature must be in [0, 2], got -3"),
    (TEMPERATURE, 1e300, "temperature must be in [0, 2], got 1e+300"),
    (TEMPERATURE, math.nan, "temperature must be a finite number, got nan"),     # never "less than 1"
    (TEMPERATURE, math.inf, "temperature must be a finite number, got inf"),
    (TEMPERATURE, True, "temperature must be a number, got True"),              # a boolean is no number
    (TEMPERATURE, "0.5", "temperature must be a number, got '0.5'"),            # readers parse text first
    (TOKENS, -1, "tokens must be an integer >= 0, got -1"),
    (TOKENS, 1.5, "tokens must be an integer, got 1.5"),
    (REP, -1, "rep must be an integer >= 0, got -1"),
    (HALF_WIDTH, 0.0, "half-width must be in (0, 1), got 0.0"),                  # open ends are outside
    (HALF_WIDTH, 1, "half-width must be in (0, 1), got 1"),
    (CONFIDENCE, math.nan, "confidence must be a finite number, got nan"),
])
def test_values_outside_are_refused_with_the_range(range_, value, message):
    with pytest.raises(RangeError) as ei:
        range_.check(value)
    assert str(ei.value) == message


def test_every_range_is_listed_in_docs_errors():
    text = DOCS.read_text(encoding="utf-8")
    for r in RANGES:
        assert f"| `{r.name}` | {r.describe()} |" in text, f"docs/errors.md does not list {r.name}: {r.describe()}"


# -- entry points -------------------------------------------------------------------------------------

def _config(tmp_path: Path, **extra: object) -> Path:
    (tmp_path / "pairs.jsonl").write_text("".join(json.dumps({"item_id": f"i{i}", "question": "q", "response_a": "a",
                                                              "response_b": "b", "label": "A"}) + "\n"
                                                  for i in range(12)))
    cfg = {"name": "r", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}], "judges": ["sim:seed=1"],
           "protocols": ["direct"], **extra}
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


@pytest.mark.parametrize(("extra", "message"), [
    # a NaN precision target was reported as "Input should be less than 1"
    ({"repetitions": 3, "precision": {"T": math.nan}}, r"field 'precision.T': Input should be a finite number"),
    ({"repetitions": 3, "precision": {"T": 0.05, "confidence": math.inf}},
     r"field 'precision.confidence': Input should be a finite number"),
    ({"budget": {"max_usd": math.nan}}, r"field 'budget.max_usd': Input should be a finite number"),
    ({"temperatures": [-3]}, r"field 'temperatures': Value error, temperature -3 is outside \[0, 2\]"),
    ({"temperatures": [1e300]}, r"temperature 1e\+300 is outside \[0, 2\]"),
    ({"seed": -1}, r"field 'seed': Input should be greater than or equal to 0"),
    ({"repetitions": 0}, r"field 'repetitions': Input should be greater than or equal to 1"),
])
def test_config_numbers_are_range_checked(tmp_path, extra, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_config(tmp_path, **extra))


def _row(**over: object) -> dict[str, object]:
    return {"item_id": "i", "judge": "j", "protocol": "p", "dataset": "d", "order": "AB", "rep": 0,
            "temperature": 0.0, "verdict": "A", **over}


@pytest.mark.parametrize(("column", "value", "message"), [
    ("temperature", -3, r"row 1, field 'temperature': temperature must be in \[0, 2\], got -3"),
    ("temperature", 1e300, r"row 1, field 'temperature': temperature must be in \[0, 2\], got 1e\+300"),
    ("tokens_in", -5, r"row 1, field 'tokens_in': tokens must be an integer >= 0, got -5"),
    ("tokens_out", -1, r"row 1, field 'tokens_out': tokens must be an integer >= 0, got -1"),
    ("cost_usd", -0.01, r"row 1, field 'cost_usd': cost_usd must be >= 0, got -0.01"),
    ("latency_s", -2.0, r"row 1, field 'latency_s': latency_s must be >= 0, got -2.0"),
    ("p_a", 1.5, r"row 1, field 'p_a': must be a probability in \[0, 1\], got 1.5"),     # importers._preferences
    ("rep", -1, r"row 1, field 'rep': rep must be an integer >= 0, got -1"),
])
def test_import_rows_are_range_checked(tmp_path, column, value, message):
    src = tmp_path / "j.jsonl"
    src.write_text(json.dumps(_row(**{column: value})) + "\n")
    with pytest.raises(ItemError, match=message):
        import_table(src)


@pytest.mark.parametrize(("flags", "message"), [
    (["--temperature", "-3"], "temperature must be in [0, 2], got -3.0"),
    (["--temperature", "1e300"], "temperature must be in [0, 2], got 1e+300"),
    (["--rep", "-1"], "rep must be an integer >= 0, got -1"),
])
def test_import_flags_are_range_checked_for_every_format(tmp_path, flags, message):
    rec = _row()
    del rec["temperature"], rec["rep"]
    src = tmp_path / "j.jsonl"
    src.write_text(json.dumps(rec) + "\n")
    for fmt in ("jsonl", "pandalm"):          # checked before any importer reads its source
        r = CliRunner().invoke(app, ["import", fmt, str(src), "--run-dir", str(tmp_path / fmt), *flags])
        assert r.exit_code == 3 and message in r.stderr, (fmt, r.stderr)
        assert not (tmp_path / fmt / "run.sqlite").exists()


def test_selftest_seed_below_zero_is_a_usage_error():
    r = CliRunner().invoke(app, ["selftest", "--seed", "-1"])
    assert r.exit_code == 2 and "--seed" in r.stderr and "internal error" not in r.stderr


def test_nan_is_never_inside_a_range():
    # a fast path that asks contains() alone must not let NaN through (every comparison with NaN is false)
    assert not any(r.contains(math.nan) for r in RANGES)
    assert TEMPERATURE.contains(math.inf) is False and TOKENS.contains(math.inf) is True   # check() refuses inf


@pytest.mark.parametrize("command", [["report", "RUN"], ["drift", "RUN", "RUN"], ["validate", "RUN"]])
def test_a_negative_seed_flag_is_a_usage_error_everywhere(tmp_path, command):
    """numpy's generators take no negative seed: `report --seed -1` was an internal error."""
    argv = [str(tmp_path) if a == "RUN" else a for a in command]
    r = CliRunner().invoke(app, [*argv, "--seed", "-1"])
    assert r.exit_code == 2 and "--seed" in r.stderr and "internal error" not in r.stderr
