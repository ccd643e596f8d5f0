"""`verdictlab run`: summary output, --plan, --fresh/--force, config errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.store import RunStore

runner = CliRunner()


def _config(tmp_path: Path, extra: str = "") -> Path:
    with (tmp_path / "pairs.jsonl").open("w") as fh:
        for i in range(5):
            fh.write(json.dumps({"item_id": i, "question": f"q{i}", "response_a": "yes", "response_b": "no",
                                 "label": "A"}) + "\n")
    p = tmp_path / "audit.yaml"
    p.write_text("name: clitest\ndatasets: [{name: jsonl, path: pairs.jsonl}]\n"
                 "judges: ['sim:skill=0.9,seed=2']\nprotocols: [direct]\nrepetitions: 2\n" + extra)
    return p


def test_run_prints_summary_and_resumes(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    rd = tmp_path / "out"
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"])
    assert r.exit_code == 0, r.output
    # 5 items x 1 protocol x 2 orders x 2 reps = 20 trials
    assert "20 trials judged this run, 0 already done (skipped), 0 remaining" in r.output
    assert "parse failures: 0" in r.output and f"verdictlab report {rd}" in r.output
    r2 = runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"])
    assert "0 trials judged this run, 20 already done (skipped)" in r2.output
    with RunStore(rd) as st:
        assert st.count() == 20


def test_plan_and_default_run_dir(tmp_path: Path, monkeypatch) -> None:
    cfg = _config(tmp_path)
    monkeypatch.chdir(tmp_path)
    r = runner.invoke(app, ["run", str(cfg), "--plan"])
    assert r.exit_code == 0, r.output
    assert "trials: 20  done: 0  remaining: 20" in r.output
    assert "runs/clitest" in r.output and not (tmp_path / "runs" / "clitest" / "run.sqlite").exists()
    r = runner.invoke(app, ["run", str(cfg), "--no-progress"])
    assert r.exit_code == 0 and (tmp_path / "runs" / "clitest" / "run.sqlite").exists()


def test_fresh_refuses_without_force(tmp_path: Path) -> None:
    cfg = _config(tmp_path)
    rd = tmp_path / "out"
    assert runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"]).exit_code == 0
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--fresh", "--no-progress"])
    assert r.exit_code == 2 and "--force" in r.output
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--fresh", "--force", "--no-progress"])
    assert r.exit_code == 0 and "20 trials judged this run, 0 already done" in r.output


def test_budget_message_and_config_error(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "budget: {max_calls: 4}\n")
    r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "o"), "--no-progress"])
    assert r.exit_code == 4      # incomplete run (docs/errors.md): 16 trials left undone
    assert "incomplete run: 16 of 20 trials not judged (rerun to resume)" in r.output
    assert "4 trials judged this run" in r.output and "16 remaining" in r.output
    assert "budget" in r.output and "raising the budget" in r.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndatasets: [{name: jsonl, path: pairs.jsonl}]\njudges: ['sim:']\n"
                   "protocols: [direct]\norders: [AB, CD]\n")
    r = runner.invoke(app, ["run", str(bad), "--run-dir", str(tmp_path / "o2")])
    assert r.exit_code == 3 and "bad.yaml" in r.output and "orders.1" in r.output     # input error
    missing = tmp_path / "missing.yaml"
    missing.write_text("name: x\ndatasets: [{name: jsonl, path: nope.jsonl}]\njudges: ['sim:']\n"
                       "protocols: [direct]\n")
    r = runner.invoke(app, ["run", str(missing), "--run-dir", str(tmp_path / "o3")])
    assert r.exit_code == 3 and "nope.jsonl" in r.output and "not found" in r.output
