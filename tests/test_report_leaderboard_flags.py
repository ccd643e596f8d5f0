"""``verdictlab report``'s leaderboard flags: ``--tie-rule``, ``--baseline SYSTEM`` and
``--alpaca-reference FILE`` reach the leaderboard analyses; a file that is not AlpacaEval's df_gamed.csv,
an unknown system and an unknown tie rule are refused with what was wrong named."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from verdictlab.engine.config import load_config
from verdictlab.engine.run import run_config
from verdictlab.errors import EXIT_INPUT, EXIT_USAGE, InputError
from verdictlab.importers.alpaca_reference import GAMED_COLUMNS, read_alpaca_reference
from verdictlab.stats import WIN_RATE_TIE_RULES, AlpacaReference

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "verdictlab", *map(str, args)], capture_output=True, text=True,
                          timeout=300, check=False)


def _gamed(path: Path) -> Path:
    # two gamed models over three instructions; the difficulty is read from each index's first row
    pd.DataFrame({"model": ["g1", "g1", "g1", "g2", "g2", "g2"], "index": [0, 1, 2, 0, 1, 2],
                  "preference": [1.2, 1.5, 1.9, 1.1, 1.0, 2.0], "std_delta_len": [0.1, -0.2, 0.3, 0.0, 0.5, -0.1],
                  "instruction_difficulty": [0.3, -0.4, 1.1, 0.3, -0.4, 1.1],
                  "not_gamed_baseline": [True, True, True, False, False, False]}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("board")
    for name in ("leaderboard.yaml", "leaderboard.jsonl"):
        shutil.copy(EXAMPLES / name, tmp)
    run_config(load_config(tmp / "leaderboard.yaml"), tmp / "run", progress=False)
    return tmp / "run"


def test_the_flags_reach_the_leaderboard_analyses(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    r = _cli("report", run_dir, "--format", "json", "-o", out, "--bootstrap", "50", "--tie-rule", "loss",
             "--baseline", "sys02", "--alpaca-reference", _gamed(tmp_path / "df_gamed.csv"))
    assert r.returncode == 0, r.stderr
    tables = json.loads(out.read_text())["run"]["analyses"]

    def col(name: str, column: str) -> set[object]:
        t = tables[name]
        return {row[t["columns"].index(column)] for row in t["rows"]}

    assert col("leaderboard", "tie_rule") == {"loss"}
    # the given baseline, not the common opponent (a round robin has none: no table without the flag)
    assert col("alpaca_eval_by_system", "baseline") == {"sys02"}
    assert "sys02" not in col("alpaca_eval_by_system", "system")
    # the reference was read: the LC figure now lacks only the pairs' instruction index
    assert {str(m) for m in col("alpaca_eval_by_system", "lc_missing")} == {
        "needs each pair's AlpacaEval instruction index (column 'instruction')"}


def test_a_file_of_another_shape_is_an_input_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "leaderboard.csv"
    pd.DataFrame({"model": ["a"], "win_rate": [50.0]}).to_csv(bad, index=False)
    r = _cli("report", tmp_path / "no-run-needed", "--alpaca-reference", bad)
    assert r.returncode == EXIT_INPUT, r.stderr
    assert str(bad) in r.stderr and "df_gamed.csv" in r.stderr and "instruction_difficulty" in r.stderr


def test_an_unknown_system_or_tie_rule_is_a_usage_error(run_dir: Path) -> None:
    r = _cli("report", run_dir, "--format", "json", "--bootstrap", "20", "--baseline", "gpt-9")
    assert r.returncode == EXIT_USAGE and "'gpt-9' is not a system of this run" in r.stderr
    assert "sys00" in r.stderr
    r = _cli("report", run_dir, "--tie-rule", "coin")
    assert r.returncode == EXIT_USAGE and "--tie-rule" in r.stderr


def test_the_tie_rules_offered_are_the_statistics(tmp_path: Path) -> None:
    from verdictlab.cli.report_cmd import TieRule

    assert tuple(t.value for t in TieRule) == WIN_RATE_TIE_RULES


def test_reading_df_gamed(tmp_path: Path) -> None:
    ref = AlpacaReference.from_gamed(read_alpaca_reference(_gamed(tmp_path / "df_gamed.csv")))
    assert ref.difficulty.tolist() == [0.3, -0.4, 1.1] and ref.gamed is not None
    assert set(GAMED_COLUMNS) <= set(ref.gamed.columns) and "model" not in ref.gamed.columns


@pytest.mark.parametrize(("text", "words"), [
    (None, "no such file"),
    ("", "EmptyDataError"),
    ("index,preference\n0,1.0\n", "lacks the column(s) std_delta_len, instruction_difficulty, not_gamed_baseline"),
    ("index,preference,std_delta_len,instruction_difficulty,not_gamed_baseline\n0,1.0,0.1,0.2,True\n"
     "1,high,0.1,0.2,True\n", "row 3, field preference: 'high' is not a number"),
])
def test_reading_a_bad_file_names_it(tmp_path: Path, text: str | None, words: str) -> None:
    path = tmp_path / "gamed.csv"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError) as err:
        read_alpaca_reference(path)
    assert str(path) in str(err.value) and words in str(err.value)
