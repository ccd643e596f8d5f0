"""`verdictlab compare` read at 80 terminal columns: a a judge id folds at most once, inside its own line.

The defect: with the stratum and "x vs y" as two folding columns beside six figure columns, a long judge
id was wrapped over five lines at 80 columns.  Now each stratum is a table under its own heading and each
side of a comparison is a line of its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.testing import synthetic_run
from verdictlab.testing.synthetic_run import write_synthetic_run

#: judge ids as long as real ones (a local model's path-like id, an API model with its settings)
LONG = ("llamacpp:smollm2-135m-instruct-q8_0", "openai:gpt-4o-mini-2024-07-18")


def test_compare_at_80_columns_keeps_each_judge_id_on_its_line(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for judge, profile in zip(LONG, list(synthetic_run._PROFILES.values()), strict=True):
        monkeypatch.setitem(synthetic_run._PROFILES, judge, profile)
    run = tmp_path / "run"
    write_synthetic_run(run, datasets=("llmbar-natural",), protocols=("direct",), temperatures=(0.0,),
                        judges=LONG, n_items=12, repetitions=1).close()
    res = CliRunner().invoke(app, ["compare", str(run)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "direct · llmbar-natural · temp=0" in res.output          # the stratum is the table's heading
    assert "T=0" not in res.output                                    # T is the trustworthy rate elsewhere
    rule = next(i for i, line in enumerate(lines) if "────" in line)
    end = next((i for i in range(rule + 1, len(lines)) if not lines[i].strip()), len(lines))
    body = lines[rule + 1:end]
    assert len(body) <= 4, res.output          # two ids of one comparison: at most two lines each (was five)
    for judge in LONG:
        assert any(judge[:24] in line for line in body), (judge, res.output)
