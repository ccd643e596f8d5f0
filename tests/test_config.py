"""Run config: loading, defaults, path resolution and errors that name the file and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from verdictlab.engine.config import ConfigError, RunConfig, config_from_dict, load_config

MINIMAL = """\
name: quick
datasets: [{name: jsonl, path: data/pairs.jsonl, seed: 7, split: test}]
judges:
  - "sim:skill=0.8,position_lock=0.2,noise=0.05,seed=1"
  - {id: "openai:gpt-4o-mini", concurrency: 32, requests_per_minute: 500, timeout_s: 30,
     max_retries: 2, params: {max_tokens: 300, seed: 7, top_p: 0.9}}
protocols: [direct, vf-json]
orders: [AB, BA]
temperatures: [0.0, 0.7]
repetitions: 5
budget: {max_calls: 100, max_tokens: null, max_usd: 1.5}
cache: off
seed: 42
"""


def write(tmp_path: Path, text: str, name: str = "audit.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_load_full_config(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, MINIMAL))
    assert cfg.name == "quick"
    ds = cfg.datasets[0]
    assert ds.name == "jsonl"
    # extra keys become loader options
    assert ds.options == {"seed": 7, "split": "test"}
    # relative paths resolve against the config's folder, not the working directory
    assert cfg.resolved_path(ds) == str(tmp_path.resolve() / "data" / "pairs.jsonl")
    sim, oai = cfg.judges
    assert sim.id.startswith("sim:") and sim.concurrency == 8 and sim.max_retries == 5
    assert oai.concurrency == 32 and oai.requests_per_minute == 500 and oai.timeout_s == 30
    assert oai.params == {"max_tokens": 300, "seed": 7, "top_p": 0.9}
    assert cfg.temperatures == [0.0, 0.7]
    assert cfg.budget.max_calls == 100 and cfg.budget.max_usd == 1.5 and cfg.budget.max_tokens is None
    # YAML reads a bare `off` as False; it still means the cache policy "off"
    assert cfg.cache == "off"
    assert cfg.public_dict()["source"] == str(tmp_path / "audit.yaml")


def test_defaults() -> None:
    cfg = config_from_dict({"name": "x", "datasets": ["demo"], "judges": ["sim:"], "protocols": ["direct"]})
    assert cfg.orders == ["AB", "BA"]
    assert cfg.temperatures == [0.0]
    assert cfg.repetitions == 3
    assert cfg.cache == "auto"
    assert cfg.seed == 42
    assert cfg.datasets[0].name == "demo" and cfg.datasets[0].path is None
    assert cfg.budget.max_calls is None


def test_absolute_path_kept(tmp_path: Path) -> None:
    cfg = config_from_dict({"name": "x", "datasets": [{"name": "jsonl", "path": "/abs/p.jsonl"}],
                            "judges": ["sim:"], "protocols": ["direct"]}, source=tmp_path / "c.yaml")
    assert cfg.resolved_path(cfg.datasets[0]) == "/abs/p.jsonl"


@pytest.mark.parametrize("patch, field", [
    ({"orders": ["AB", "XY"]}, "orders.1"),
    ({"repetitions": 0}, "repetitions"),
    ({"judges": ["nocolon"]}, "judges.0.id"),
    ({"judges": [{"id": "sim:", "concurrency": 0}]}, "judges.0.concurrency"),
    ({"judges": [{"id": "sim:", "params": {"max_tokens": -1}}]}, "judges.0.params"),
    ({"protocols": []}, "protocols"),
    ({"protocols": ["direct", "direct"]}, "duplicates"),
    ({"temperatures": [3.0]}, "temperatures"),
    ({"cache": "sometimes"}, "cache"),
    ({"budget": {"max_calls": -1}}, "budget.max_calls"),
    ({"budget": {"max_dollars": 3}}, "budget.max_dollars"),
    ({"colour": "blue"}, "colour"),
    ({"name": "a/b"}, "name"),
])
def test_errors_name_file_and_field(tmp_path: Path, patch: dict, field: str) -> None:
    base = {"name": "x", "datasets": [{"name": "jsonl", "path": "p.jsonl"}], "judges": ["sim:"],
            "protocols": ["direct"]}
    src = tmp_path / "bad.yaml"
    with pytest.raises(ConfigError) as ei:
        config_from_dict({**base, **patch}, source=src)
    msg = str(ei.value)
    assert str(src) in msg
    assert field in msg


def test_missing_required_field(tmp_path: Path) -> None:
    p = write(tmp_path, "name: x\njudges: ['sim:']\nprotocols: [direct]\n")
    with pytest.raises(ConfigError, match=r"bad|audit.yaml: field 'datasets'"):
        load_config(p)


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    p = write(tmp_path, "name: x\ndatasets: [\n  judges: : :\n")
    with pytest.raises(ConfigError, match=r"audit.yaml, line \d+, column \d+: invalid YAML"):
        load_config(p)
    with pytest.raises(ConfigError, match="empty"):
        load_config(write(tmp_path, "", "empty.yaml"))
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(write(tmp_path, "- a\n- b\n", "list.yaml"))


def test_model_is_plain_pydantic() -> None:
    # the schema is usable programmatically (e.g. to build configs in notebooks)
    cfg = RunConfig(name="n", datasets=[{"name": "demo"}], judges=["sim:"], protocols=["direct"])
    assert cfg.judge_ids() == ["sim:"]
