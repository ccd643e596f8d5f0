"""`verdictlab datasets list|show|validate`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from verdictlab.cli.datasets_cmd import parse_options
from verdictlab.cli.main import app

runner = CliRunner()


def test_list_names_every_loader():
    r = runner.invoke(app, ["datasets", "list", "--format", "json"])
    assert r.exit_code == 0, r.output
    names = json.loads(r.stdout)
    for name in ("llmbar", "pandalm", "judgebench", "mtbench-human", "alpacafarm", "rewardbench", "arena",
                 "judges-verdict", "csv", "parquet", "jsonl"):
        assert name in names and names[name]


def test_parse_options_reads_yaml_values():
    assert parse_options(["tie_policy=drop", "sample=200", "splits=[Natural, Adversarial_GPTOut]"]) == {
        "tie_policy": "drop", "sample": 200, "splits": ["Natural", "Adversarial_GPTOut"]}


def test_validate_good_and_malformed(tmp_path):
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"item_id": "1", "question": "q", "response_a": "a", "response_b": "b",
                                "label": "tie"}) + "\n")
    r = runner.invoke(app, ["datasets", "validate", "jsonl", "--path", str(good), "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["ok"] and out["summary"]["n_items"] == 1 and out["summary"]["n_ties"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + '{"item_id": "2", "question": "q", "response_a": "a"}\n')
    r = runner.invoke(app, ["datasets", "validate", "jsonl", "--path", str(bad)])
    assert r.exit_code == 3     # input error (docs/errors.md)
    assert "row 2" in r.output and "'response_b'" in r.output
    r = runner.invoke(app, ["datasets", "validate", "jsonl", "--path", str(bad), "--format", "json"])
    assert r.exit_code == 3 and json.loads(r.stdout)["ok"] is False
    r = runner.invoke(app, ["datasets", "validate", "nosuch", "--path", str(bad)])
    assert r.exit_code == 3 and "unknown dataset 'nosuch'" in r.output


def test_show_pandalm_with_option(shared_data):
    path = str(shared_data / "pandalm" / "testset-v1.json")
    r = runner.invoke(app, ["datasets", "show", "pandalm", "--path", path, "-O", "tie_policy=drop",
                            "--n", "2", "--format", "json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["summary"]["n_items"] == 894 and len(out["items"]) == 2
    r = runner.invoke(app, ["datasets", "show", "llmbar", "--path", str(shared_data / "llmbar"), "--n", "1"])
    assert r.exit_code == 0, r.output
    assert "Natural-0" in r.output and "419" in r.output
