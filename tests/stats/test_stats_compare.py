"""paired_mcnemar and `verdictlab compare`: hand-worked p-values, parse-shared units, Holm family."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest
from test_stats_reliability import frame
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.core.policy import FigurePolicy
from verdictlab.stats import paired_mcnemar
from verdictlab.store import RunStore


def three_judges() -> pd.DataFrame:
    """5 items x 2 orders = 10 labelled units (label A), 3 reps.
    j1: right everywhere.  j2: wrong (B) on 8 units, right on 2.  j3: like j2 but unparsed on unit
    (0, AB) -- all three reps null -- and a split mode on (1, AB) (R=3 with A, B, tie: no majority)."""
    parts = []
    for j in ("j1", "j2", "j3"):
        rows = []
        for i in range(5):
            for o in ("AB", "BA"):
                for r in range(3):
                    v = "A"
                    if j in ("j2", "j3") and i != 4:
                        v = "B"
                    if j == "j3" and (i, o) == (0, "AB"):
                        v = None
                    if j == "j3" and (i, o) == (1, "AB"):
                        v = ["A", "B", "tie"][r]
                    rows.append((str(i), o, r, v, "A"))
        parts.append(frame(rows, judge=j))
    return pd.concat(parts, ignore_index=True)


def test_adjacent_pairs_by_hand() -> None:
    # j1 vs j2: 10 shared units; j1 only right on 8, j2 only right on 0
    #   p = 2 * P(Bin(8, 1/2) <= 0) = 2/256 = 0.0078125
    # j2 vs j3 (exclude): unit (0,AB) unparsed for j3 -> dropped: 9 shared; (1,AB) is a split mode
    #   for j3 -> wrong, j2 wrong too -> no discordant unit -> p = 1
    # Holm over 2 tests: 0.0078125 * 2 = 0.015625; 1.0
    res = paired_mcnemar(three_judges(), order=["j1", "j2", "j3"])
    assert list(zip(res.judge_x, res.judge_y, strict=True)) == [("j1", "j2"), ("j2", "j3")]
    assert res["n_shared"].tolist() == [10, 9] and res["n_dropped"].tolist() == [0, 1]
    assert (res["only_x"].tolist(), res["only_y"].tolist()) == ([8, 0], [0, 0])
    assert res["p"].tolist() == pytest.approx([2 / 256, 1.0])
    assert res["p_holm"].tolist() == pytest.approx([4 / 256, 1.0])
    assert res["significant"].tolist() == [True, False]
    assert res["acc_x"].iloc[0] == 1.0 and res["acc_y"].iloc[0] == pytest.approx(0.2)


def test_all_pairs_and_wrong_policy() -> None:
    # all pairs: (j1,j2) (j1,j3) (j2,j3); under "wrong" j3's unparsed unit stays (as wrong): 10 shared
    # j1 vs j3: j1 only right on 8 (j3 right only on items 4: 2 units) -> p = 2/256; family of 3
    res = paired_mcnemar(three_judges(), all_pairs=True, policy=FigurePolicy(unparsed="wrong"))
    assert len(res) == 3 and res.attrs["family_size"] == 3
    row = res[(res.judge_x == "j1") & (res.judge_y == "j3")].iloc[0]
    assert row["n_shared"] == 10 and row["p"] == pytest.approx(2 / 256)
    assert row["p_holm"] == pytest.approx(3 * 2 / 256)


def _write_store(run_dir, df: pd.DataFrame, judges: list[str]) -> None:
    store = RunStore(run_dir)
    recs = df.to_dict("records")
    for r in recs:
        key = f"{r['judge']}|{r['item_id']}|{r['order']}|{r['rep']}"
        r["trial_id"] = hashlib.sha1(key.encode()).hexdigest()
    store.add_judgments(recs)
    store.set_meta("config", {"judges": [{"id": j} for j in judges], "protocols": ["direct"]})
    store.close()


def test_cli_table_and_json(tmp_path) -> None:
    _write_store(tmp_path / "run", three_judges(), ["j3", "j2", "j1"])  # config order j3, j2, j1
    runner = CliRunner()
    out = runner.invoke(app, ["compare", str(tmp_path / "run"), "--format", "json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["order"] == ["j3", "j2", "j1"] and payload["family_size"] == 2
    first = payload["comparisons"][0]
    assert (first["judge_x"], first["judge_y"], first["n_shared"]) == ("j3", "j2", 9)
    table = runner.invoke(app, ["compare", str(tmp_path / "run"), "--all-pairs"])
    assert table.exit_code == 0 and "McNemar" in table.output and "j1" in table.output
    missing = runner.invoke(app, ["compare", str(tmp_path / "nope")])
    assert missing.exit_code == 5      # store problem (docs/errors.md)


def test_cli_two_runs_same_judge_are_kept_apart(tmp_path) -> None:
    df = three_judges()
    _write_store(tmp_path / "a", df[df.judge == "j1"], ["j1"])
    _write_store(tmp_path / "b", df[df.judge.isin(["j1", "j2"])], ["j1", "j2"])
    out = CliRunner().invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json"])
    assert out.exit_code == 0, out.output
    payload = json.loads(out.output)
    assert payload["order"] == ["a/j1", "b/j1", "j2"]
    assert payload["comparisons"][0]["p"] == 1.0  # the same judge twice: no discordant unit
