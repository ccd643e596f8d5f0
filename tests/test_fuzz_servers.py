"""Malformed requests get an answer, never a dropped connection: the fake OpenAI server (``verdictlab
fake-server``) answers every request body a real API refuses with a 4xx, as OpenAI does, and the viewer
(``verdictlab view``) answers every request body with a 4xx (it reads none) and an over-long address
with 414.

A fuzz test (hypothesis) over JSON shapes, sizes and nesting: bytes that are not JSON, JSON of any shape,
a valid chat request with one field replaced by a value of another kind, nesting far past any limit and
large bodies; plus the exact inputs of the issue (a ``json_schema`` with ``properties: 5``, ``messages``
nested 100,000 levels deep, a 300 KB query string)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from verdictlab.testing import FakeConfig, FakeOpenAIServer
from verdictlab.testing.fake_request import RequestProblem, check_chat_body

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

KEY = "sk-test-fuzz"
VALID: dict[str, Any] = {"model": "fake-judge", "messages": [{"role": "user", "content": "Which is better? A or B"}],
                         "temperature": 0.7, "max_tokens": 16, "stop": ["\n\n"], "seed": 1, "logprobs": True,
                         "top_logprobs": 2,
                         "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": {
                             "type": "object", "properties": {"winner": {"enum": ["A", "B"]}}}}}}
#: where in a valid request a field can be replaced (a path of keys / indexes)
FIELDS: list[tuple[Any, ...]] = [
    ("model",), ("messages",), ("messages", 0), ("messages", 0, "role"), ("messages", 0, "content"),
    ("temperature",), ("max_tokens",), ("max_completion_tokens",), ("stop",), ("seed",), ("logprobs",),
    ("top_logprobs",), ("response_format",), ("response_format", "type"), ("response_format", "json_schema"),
    ("response_format", "json_schema", "schema"), ("response_format", "json_schema", "schema", "properties"),
    ("response_format", "json_schema", "schema", "properties", "winner"),
    ("response_format", "json_schema", "schema", "properties", "winner", "enum"), ("guided_choice",),
    ("guided_regex",),
]

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=False,
                    allow_infinity=False), st.text(max_size=30))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=12)


def _nested(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a":' * depth + "1" + "}" * depth)


def _replaced(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    body = json.loads(json.dumps(VALID))
    node = body
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return body


def _post(port: int, path: str, body: bytes, *, key: str = KEY, headers: dict[str, str] | None = None
          ) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"Authorization": f"Bearer {key}",
                                                         "Content-Type": "application/json", **(headers or {})})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(FakeConfig(api_key=KEY)) as srv:
        yield srv


def _chat(srv: FakeOpenAIServer, body: bytes) -> tuple[int, bytes]:
    return _post(srv.port, "/v1/chat/completions", body)


# -- the fake server ------------------------------------------------------------------------------------
def test_the_issues_two_bodies_get_400(fake: FakeOpenAIServer) -> None:
    status, payload = _chat(fake, json.dumps(_replaced(("response_format", "json_schema", "schema", "properties"),
                                                       5)).encode())
    assert status == 400, payload
    err = json.loads(payload)["error"]
    assert err["type"] == "invalid_request_error" and "properties" in err["param"]
    deep = b'{"model": "fake-judge", "messages": ' + _nested(100_000, "list").encode() + b"}"
    status, payload = _chat(fake, deep)
    assert status == 400 and b"nested" in payload, payload
    assert _chat(fake, json.dumps(VALID).encode())[0] == 200      # and the server still serves
    assert fake.stats.get("server_bug", 0) == 0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(FIELDS), value=JSON)
def test_a_field_of_the_wrong_kind_gets_a_4xx(fake: FakeOpenAIServer, path: tuple[Any, ...], value: Any) -> None:
    body = _replaced(path, value)
    try:
        check_chat_body(json.loads(json.dumps(body)))
        valid = True
    except RequestProblem:
        valid = False
    status, payload = _chat(fake, json.dumps(body).encode())
    assert status < 500, (path, value, payload[:300])
    if not valid:
        assert 400 <= status < 500, (path, value, payload[:300])
    # every answer is JSON: an error object or a completion
    assert isinstance(json.loads(payload), dict)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(body=st.one_of(
    st.binary(max_size=200),                                           # not JSON, or not UTF-8
    JSON.map(lambda v: json.dumps(v).encode()),                        # JSON of any shape
    st.tuples(st.integers(65, 200_000), st.sampled_from(["list", "dict"])).map(
        lambda t: b'{"model": "m", "messages": ' + _nested(*t).encode() + b"}"),   # nested past any limit
    st.integers(1, 3_000_000).map(lambda n: json.dumps({"model": "m", "messages": "x" * n}).encode()),  # large
    st.integers(1, 2000).map(lambda n: json.dumps({"model": "m", "messages": [{"role": "user"}] * n,
                                                   "stop": ["s"] * n}).encode())))
def test_any_malformed_body_gets_a_4xx(fake: FakeOpenAIServer, body: bytes) -> None:
    try:
        check_chat_body(json.loads(body))
        assume(False)                     # a body a real API takes: not this test's concern
    except (ValueError, RecursionError, RequestProblem):
        pass
    status, payload = _chat(fake, body)
    assert 400 <= status < 500, (body[:200], payload[:300])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(["/v1/batches", "/v1/messages/batches", "/_fake/config"]), value=st.one_of(
    JSON, st.just(None)).map(lambda v: json.dumps(v).encode()) | st.binary(max_size=100) | st.integers(
    65, 50_000).map(lambda d: _nested(d, "list").encode()))
def test_the_other_routes_answer_malformed_bodies_with_a_4xx(fake: FakeOpenAIServer, route: str, value: bytes) -> None:
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        parsed = None
    # a valid body of these routes names a file / requests / knobs that exist: an empty object (or an empty
    # body, read as one) changes nothing
    assume(parsed != {} and value.strip() != b"")
    status, payload = _post(fake.port, route, value, headers={"x-api-key": KEY})
    assert 400 <= status < 500, (route, value[:200], payload[:300])


def test_bad_framing_gets_a_4xx(fake: FakeOpenAIServer) -> None:
    for head in (b"Content-Length: abc\r\n", b"Content-Length: -5\r\n", b"Transfer-Encoding: chunked\r\n",
                 b"Content-Length: 99999999999\r\n"):
        import socket

        with socket.create_connection(("127.0.0.1", fake.port), timeout=10) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n" + head + b"\r\nzz\r\n\r\n")
            answer = s.recv(200)
        assert answer.startswith((b"HTTP/1.1 400", b"HTTP/1.1 413")), (head, answer)


# -- the viewer -----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    pytest.importorskip("uvicorn")
    sys.path.insert(0, str(Path(__file__).parent))
    from _view_runs import write_known_run

    tmp = tmp_path_factory.mktemp("viewer")
    run = write_known_run(tmp / "run")
    env = {**os.environ, "VERDICTLAB_CACHE_DIR": str(tmp / "cache")}
    proc = subprocess.Popen([sys.executable, "-m", "verdictlab.cli.main", "view", str(run), "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    serving = proc.stdout.readline()
    assert serving.startswith("serving http://127.0.0.1:"), serving
    port = urlsplit(serving.split()[1]).port
    assert port is not None
    try:
        yield port
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _request(port: int, method: str, target: str, body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, target, body=body)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def test_a_300_kb_query_string_gets_414(viewer: int) -> None:
    status, payload = _request(viewer, "GET", "/pairs?q=" + "a" * 300_000)
    assert status == 414 and b"16,384" in payload, payload[:200]
    assert _request(viewer, "GET", "/pairs?q=" + "a" * 1000)[0] == 200      # a long but usual query is served


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE"]),
       target=st.sampled_from(["/", "/pairs", "/pairs/p1", "/view.css", "/nowhere"]),
       body=st.one_of(JSON.map(lambda v: json.dumps(v).encode()), st.binary(min_size=1, max_size=200),
                      st.integers(65, 100_000).map(lambda d: _nested(d, "dict").encode()),
                      st.integers(1, 2_000_000).map(lambda n: b"x" * n)))
def test_the_viewer_answers_any_request_body_with_a_4xx(viewer: int, method: str, target: str, body: bytes) -> None:
    status, _ = _request(viewer, method, target, body)
    assert 400 <= status < 500, (method, target, body[:100], status)


def test_the_fake_server_ends_143_on_sigterm() -> None:
    """Its help and docs/errors.md say 143 (terminated); it exited 130."""
    proc = subprocess.Popen([sys.executable, "-m", "verdictlab.cli.main", "fake-server", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith("http://127.0.0.1:")
    time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 143
    assert "fake server stopped" in proc.stderr.read()


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_large_body_gets_its_4xx_not_a_broken_pipe(viewer: int, method: str) -> None:
    """The viewer answered a GET with a 600 KB body (the fuzz test's nested 99,996-deep object) before
    reading it and closed the connection: the client, still sending, got a broken pipe instead of the 400
    (the fuzz test failed once in CI, "flaky"). The rest of a refused body is read first now."""
    body = _nested(99_996, "dict").encode()
    for _ in range(5):
        status, _payload = _request(viewer, method, "/", body)
        assert status == (400 if method == "GET" else 405)
    for size in (2_000_000, 12_000_000):       # 12 MB: the client is still sending when a hasty answer closes
        assert _request(viewer, "GET", "/pairs", b"x" * size)[0] == 400
