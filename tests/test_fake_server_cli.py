"""`verdictlab fake-server`: an OpenAI-compatible server to audit an API judge with no account, and an
authentication failure (HTTP 401) that names the environment variable the key was read from."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verdictlab.cli.fake_server_cmd import DEFAULT_KEY
from verdictlab.cli.main import app
from verdictlab.judges.openai_api import auth_hint
from verdictlab.store import open_store
from verdictlab.testing import FakeConfig, FakeOpenAIServer

runner = CliRunner()
pytest.importorskip("openai")

#: wrong keys made at import (no key-shaped literal tracked); the server accepts only DEFAULT_KEY
WRONG_KEY = f"sk-wrong-key-{uuid.uuid4().hex}"
WRONG_ANTHROPIC_KEY = f"sk-ant-wrong-{uuid.uuid4().hex}"


def _get(url: str, key: str | None) -> tuple[int, dict[str, object]]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_command_prints_its_base_url_and_serves_until_stopped() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "verdictlab.cli.main", "fake-server", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()             # stdout: the base URL alone
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), url
        status, body = _get(url + "/models", DEFAULT_KEY)
        assert status == 200 and body["data"], body
        status, body = _get(url + "/models", None)       # no key: 401, like a real provider
        assert status == 401, body
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.stderr is not None
    assert "fake OpenAI-compatible server at" in proc.stderr.read()


def test_a_port_in_use_is_a_usage_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = runner.invoke(app, ["fake-server", "--port", str(port)])
    assert r.exit_code == 2 and f"127.0.0.1:{port}: in use; choose another --port" in r.stderr


def _config(tmp: Path, judge: str) -> Path:
    (tmp / "pairs.jsonl").write_text("".join(
        json.dumps({"item_id": f"i{i}", "question": f"What is {i}+1?", "response_a": str(i + 1),
                    "response_b": str(i + 2), "label": "A"}) + "\n" for i in range(3)), encoding="utf-8")
    cfg = tmp / "api.yaml"
    cfg.write_text(f"name: api\ndatasets: [{{name: jsonl, path: pairs.jsonl}}]\njudges: ['{judge}']\n"
                   "protocols: [direct, vf-json]\nrepetitions: 2\n", encoding="utf-8")
    return cfg


def test_an_api_judge_audited_end_to_end_through_the_fake_server(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeOpenAIServer(FakeConfig(api_key=DEFAULT_KEY)) as srv:
        monkeypatch.setenv("VERDICTLAB_API_KEY", DEFAULT_KEY)
        cfg = _config(tmp_path, f"openai-compatible:fake-judge@{srv.base_url}")
        r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
        assert r.exit_code == 0, r.output
    rep = runner.invoke(app, ["report", str(tmp_path / "run"), "--format", "json", "--bootstrap", "0"])
    cells = json.loads(rep.stdout)["cells"]
    assert len(cells) == 2 and all(c["n_judgments"] == 12 for c in cells), cells


@pytest.mark.parametrize(("judge_tail", "env", "named"), [
    ("", {}, "no key was sent: set VERDICTLAB_API_KEY, or name another variable with #key_env=NAME"),
    ("", {"VERDICTLAB_API_KEY": WRONG_KEY}, "the key was read from VERDICTLAB_API_KEY"),
    ("#key_env=MY_FAKE_KEY", {"MY_FAKE_KEY": WRONG_KEY}, "the key was read from MY_FAKE_KEY"),
])
def test_a_401_names_the_variable_the_key_was_read_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        judge_tail: str, env: dict[str, str], named: str) -> None:
    monkeypatch.delenv("VERDICTLAB_API_KEY", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with FakeOpenAIServer(FakeConfig(api_key=DEFAULT_KEY)) as srv:
        cfg = _config(tmp_path, f"openai-compatible:fake-judge@{srv.base_url}{judge_tail}")
        r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert r.exit_code == 4, r.output                       # the judge is halted: an incomplete run
    assert "HTTP 401" in r.stderr and named in r.stderr, r.stderr
    assert "sk-wrong-key" not in r.output                   # the variable's name, never its value
    with open_store(tmp_path / "run") as st:
        errors = set(st.judgments()["error"].dropna())
    assert errors and all(named in e for e in errors), errors


def test_an_anthropic_401_names_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("anthropic")
    monkeypatch.setenv("ANTHROPIC_API_KEY", WRONG_ANTHROPIC_KEY)
    with FakeOpenAIServer(FakeConfig(api_key=DEFAULT_KEY)) as srv:    # it answers 401 to any other key
        cfg = _config(tmp_path, f"anthropic:claude-test@{srv.base_url.removesuffix('/v1')}")
        r = runner.invoke(app, ["run", str(cfg), "--run-dir", str(tmp_path / "run"), "--no-progress"])
    assert r.exit_code == 4 and "HTTP 401" in r.stderr, r.output
    assert "the key was read from ANTHROPIC_API_KEY" in r.stderr and "sk-ant-wrong" not in r.output


def test_auth_hint_only_for_authentication_failures() -> None:
    assert auth_hint(401, "OPENAI_API_KEY", ()) == " (the key was read from OPENAI_API_KEY; check its value)"
    assert auth_hint(403, None, ("OPENAI_API_KEY", "VERDICTLAB_API_KEY")) == \
        " (no key was sent: set OPENAI_API_KEY or VERDICTLAB_API_KEY)"
    assert auth_hint(429, "OPENAI_API_KEY", ()) == "" and auth_hint(None, None, ()) == ""
