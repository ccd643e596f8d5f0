"""Inputs that were internal errors (exit 1) or hangs and are now clear refusals: a NUL byte (or any
control character) in a run name, a garbage / http:// / ray:// --ray-address or Ray config address,
and a Ray address where nothing listens (127.0.0.1:1 hung for minutes and ignored SIGTERM)."""

from __future__ import annotations

import json
import re
import time

import pytest
import yaml
from typer.testing import CliRunner

from verdictlab.cli.main import app
from verdictlab.engine.config import ConfigError, check_ray_address, load_config

runner = CliRunner()


def _config(tmp_path, **over):
    (tmp_path / "pairs.jsonl").write_text("".join(
        json.dumps({"item_id": f"i{i}", "question": "q", "response_a": "a", "response_b": "b", "label": "A"}) + "\n"
        for i in range(4)))
    data = {"name": "ok", "datasets": [{"name": "jsonl", "path": "pairs.jsonl"}], "judges": ["sim:seed=1"],
            "protocols": ["direct"], "repetitions": 1, **over}
    p = tmp_path / "audit.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


@pytest.mark.parametrize("name", ["a\x00b", "run\nname", "esc\x1b[31m", "tab\there"])
def test_a_run_name_with_a_control_character_is_refused(tmp_path, name):
    with pytest.raises(ConfigError, match=r"field 'name': Value error, name must be printable text"):
        load_config(_config(tmp_path, name=name))
    # without --run-dir the name is the default run dir: a NUL byte was an internal error there
    r = runner.invoke(app, ["run", str(_config(tmp_path, name=name))])
    assert r.exit_code == 3 and "internal error" not in r.stderr


@pytest.mark.parametrize("address", ["127.0.0.1:6379", "head-node:6379", "[::1]:6379", "auto", "local",
                                     " 10.0.0.5:6379 "])
def test_ray_addresses_that_ray_can_use(address):
    assert check_ray_address(address) == address.strip()


@pytest.mark.parametrize(("address", "message"), [
    ("garbage", "is not HOST:PORT"),
    ("127.0.0.1:99999", "is not HOST:PORT"),
    ("127.0.0.1", "is not HOST:PORT"),
    ("http://127.0.0.1:8265", "is an HTTP address (the dashboard or job API)"),
    ("https://ray.example.com", "is an HTTP address"),
    ("ray://127.0.0.1:10001", "ray:// addresses are not supported"),
])
def test_ray_addresses_that_it_cannot_are_refused_on_the_flag_and_in_the_config(tmp_path, address, message):
    r = runner.invoke(app, ["run", str(_config(tmp_path)), "--run-dir", str(tmp_path / "r"), "--executor", "ray",
                            "--ray-address", address, "--no-progress"])
    assert r.exit_code == 2 and message in r.stderr and "internal error" not in r.stderr
    with pytest.raises(ConfigError, match=f"field 'ray.address'.*{re.escape(message)}"):
        load_config(_config(tmp_path, executor="ray", ray={"address": address}))


def test_a_ray_address_where_nothing_listens_fails_at_once(tmp_path):
    t0 = time.monotonic()
    r = runner.invoke(app, ["run", str(_config(tmp_path)), "--run-dir", str(tmp_path / "r"), "--executor", "ray",
                            "--ray-address", "127.0.0.1:1", "--no-progress"])
    elapsed = time.monotonic() - t0
    assert r.exit_code == 3, r.output
    assert "cannot reach the Ray cluster at 127.0.0.1:1 (connection refused)" in r.stderr
    assert "ray start --head" in r.stderr
    assert elapsed < 30          # before: minutes inside ray.init, deaf to SIGTERM
