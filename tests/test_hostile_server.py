"""Issue 16 items 3, 9 and 12: a faulty or careless OpenAI-compatible server.

A tiny local HTTP server answers every chat completion with what the test sets: a usage count of
1e300 (item 3), a completion that echoes the API key (item 9); a closed port gives a refused
connection (item 12)."""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from verdictlab.cli.main import app

runner = CliRunner()


class _Server:
    def __init__(self, content: str, usage: dict[str, Any]) -> None:
        body = {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                             "finish_reason": "stop"}],
                "usage": usage}
        payload = json.dumps(body).encode()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _run(tmp: Path, base_url: str, key: str, monkeypatch: pytest.MonkeyPatch, *, n: int = 2,
         extra: str = "") -> tuple[Any, Path]:
    with (tmp / "pairs.jsonl").open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({"item_id": f"i{i}", "question": "q", "response_a": "a", "response_b": "b",
                                 "label": "A"}) + "\n")
    cfg = tmp / "audit.yaml"
    cfg.write_text(f"name: srv\ndatasets: [{{name: jsonl, path: pairs.jsonl}}]\n"
                   f"judges:\n  - id: openai-compatible:m@{base_url}\n    max_retries: 0\n    timeout_s: 5\n"
                   f"protocols: [direct]\nrepetitions: 1\ntemperatures: [0.0]\ncache: on\n{extra}")
    monkeypatch.setenv("VERDICTLAB_API_KEY", key)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    rd = tmp / "run"
    return runner.invoke(app, ["run", str(cfg), "--run-dir", str(rd), "--no-progress"]), rd


def test_item3_usage_1e300_is_stored_not_a_crash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    with _Server("A", {"prompt_tokens": 10, "completion_tokens": 1e300, "total_tokens": 1e300}) as srv:
        r, rd = _run(tmp_path, srv.base_url, key, monkeypatch)
        assert "Traceback" not in r.output + r.stderr
        assert r.exit_code == 0, (r.output, r.stderr)
        con = sqlite3.connect(rd / "run.sqlite")
        rows = con.execute("SELECT verdict, tokens_in, tokens_out FROM judgments").fetchall()
        con.close()
        assert len(rows) == 4 and all(v in ("A", "B") for v, _, _ in rows)
        assert all(out is None or 0 <= out < 2**53 for _, _, out in rows)
        r2, _ = _run(tmp_path, srv.base_url, key, monkeypatch)         # a resume does not crash either
        assert r2.exit_code == 0 and "0 trials judged this run, 4 already done" in r2.output


def test_item9_a_key_echoed_in_a_completion_is_masked_before_storage(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    with _Server(f"A -- by the way, your key is {key}", {"prompt_tokens": 10, "completion_tokens": 5}) as srv:
        r, rd = _run(tmp_path, srv.base_url, key, monkeypatch)
        assert r.exit_code == 0, (r.output, r.stderr)
    raw = (rd / "run.sqlite").read_bytes()
    wal = rd / "run.sqlite-wal"
    raw += wal.read_bytes() if wal.exists() else b""
    assert key.encode() not in raw, "the echoed key reached the store (judgments or cache table)"
    con = sqlite3.connect(rd / "run.sqlite")
    outputs = [o for (o,) in con.execute("SELECT raw_output FROM judgments")]
    cached = [c for (c,) in con.execute("SELECT response FROM cache")]
    con.close()
    assert outputs and all("[redacted]" in o and o.startswith("A -- by the way") for o in outputs)
    assert cached and all(key not in c for c in cached)
    out = tmp_path / "j.jsonl"
    assert runner.invoke(app, ["export", str(rd), "--format", "jsonl", "--out", str(out)]).exit_code == 0
    assert key not in out.read_text()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_item12_refused_connection_is_not_called_a_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = f"sk-test-{uuid.uuid4()}"
    r, rd = _run(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1", key, monkeypatch, n=1)
    assert r.exit_code == 4, (r.output, r.stderr)           # every trial failed for good: incomplete run
    con = sqlite3.connect(rd / "run.sqlite")
    errors = [e for (e,) in con.execute("SELECT error FROM judgments")]
    con.close()
    assert errors and all("refused" in e.lower() and "timed out" not in e.lower() for e in errors), errors


def test_item8_a_halted_judge_leaves_the_run_incomplete_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: a judge halted after repeated failures with most trials undone exited 0."""
    key = f"sk-test-{uuid.uuid4()}"
    r, rd = _run(tmp_path, f"http://127.0.0.1:{_closed_port()}/v1", key, monkeypatch, n=40)   # 80 trials
    assert r.exit_code == 4, (r.output, r.stderr)
    assert "halted after" in r.output
    assert "incomplete run: " in r.stderr and " of 80 trials not judged (rerun to resume)" in r.stderr
    con = sqlite3.connect(rd / "run.sqlite")
    (n_rows,) = con.execute("SELECT COUNT(*) FROM judgments").fetchone()
    con.close()
    assert 8 <= n_rows < 80
