"""``--set KEY=VALUE`` points a config at another base URL (or changes any setting) from the command line:
docs/api-judges.md fixed the port in the YAML with no way to change it but editing the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.engine.config import ConfigError, apply_overrides, load_config

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()


def test_a_dotted_path_sets_a_value_read_as_yaml() -> None:
    data = {"judges": [{"id": "a"}, "b"], "repetitions": 3, "protocols": ["direct"]}
    apply_overrides(data, ["judges.0.id=openai-compatible:m@http://127.0.0.1:9000/v1", "repetitions=5",
                           "protocols=[direct, vf-json]", "judges.1=c", "judges.0.concurrency=2"])
    assert data == {"judges": [{"id": "openai-compatible:m@http://127.0.0.1:9000/v1", "concurrency": 2}, "c"],
                    "repetitions": 5, "protocols": ["direct", "vf-json"]}


@pytest.mark.parametrize("item,words", [("judges.3.id=x", "a list of 2"), ("judges.1.id=x", "set it whole"),
                                        ("nothing.x=1", "has no 'nothing'"), ("judges", "KEY=VALUE"),
                                        ("=1", "KEY=VALUE"), ("a..b=1", "KEY=VALUE")])
def test_a_path_that_does_not_exist_is_refused_naming_it(item: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words.replace("(", r"\(")):
        apply_overrides({"judges": [{"id": "a"}, "b"]}, [item])


def test_run_plans_the_config_at_another_base_url(tmp_path: Path) -> None:
    example = REPO / "examples" / "api-judge.yaml"
    url = "openai-compatible:fake-judge@http://127.0.0.1:9000/v1"
    assert load_config(example, overrides=[f"judges.0.id={url}"]).judge_ids() == [url]
    r = runner.invoke(app, ["run", str(example), "--run-dir", str(tmp_path / "r"), "--plan", "--set",
                            f"judges.0.id={url}"])
    assert r.exit_code == 0 and url in r.stdout and "8399" not in r.stdout, r.output
    r = runner.invoke(app, ["run", str(example), "--plan", "--set", "judges.3.id=x"])
    assert r.exit_code == 3 and "--set judges.3.id" in r.stderr
