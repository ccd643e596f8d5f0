"""A small, fast, fault-injecting OpenAI-compatible chat-completions server for tests and benches.

Pure standard library (``asyncio`` HTTP/1.1 with keep-alive), bound to 127.0.0.1 on a free port.
Run it in-process on a background thread (:class:`FakeOpenAIServer`) or as a separate process
(:class:`FakeOpenAIProcess`, ``python -m verdictlab.testing.fake_openai``) so its CPU time does not
count against the client being measured.

Endpoints
---------
``POST /v1/chat/completions``  the OpenAI chat API (``model, messages, temperature, max_tokens`` or
                               ``max_completion_tokens, stop, seed, logprobs, top_logprobs``).
``GET  /v1/models``            lists ``FakeConfig.models`` (or the one requested).
``GET  /_fake/stats``          request counts by outcome (JSON).
``POST /_fake/config``         update knobs at run time (JSON object of :class:`FakeConfig` fields).
``POST /_fake/reset``          zero the counters.

Answers
-------
The verdict is a deterministic function of ``seed`` and the prompt (and, for temperature > 0, of
how many times that prompt was seen), so a run is reproducible whatever the arrival order.  The
reply speaks the format the prompt asks for: a JSON object if the prompt shows one (using its
``"winner"``/``"verdict"`` key), XML if it shows ``<winner>``/``<verdict>`` tags, else one letter.
``stop`` sequences cut the reply the way a real server does.

Faults (per request, each with its own probability, drawn deterministically from ``seed``):
``rate_limit`` (429 + ``Retry-After``), ``server_error`` (500/502/503), ``hang`` (never answers:
the client times out), ``malformed`` (200 with a non-JSON body), ``truncated`` (200 whose content
is a JSON verdict cut in half).  A wrong ``Authorization`` header gets 401; a model matching
``reject_temperature_models`` answers 400 (``param: temperature``) to any request that sets it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

FAULT_KINDS: tuple[str, ...] = ("rate_limit", "server_error", "hang", "malformed", "truncated")


@dataclass
class FakeConfig:
    """Knobs of the fake server.  All probabilities are per request."""

    api_key: str = "sk-test-fake"
    latency_s: float = 0.0            # fixed latency of every answer
    jitter_s: float = 0.0             # + uniform(0, jitter_s)
    p_rate_limit: float = 0.0
    p_server_error: float = 0.0
    p_hang: float = 0.0
    p_malformed: float = 0.0
    p_truncated: float = 0.0
    retry_after_s: float | None = 0.01   # sent as retry-after-ms (and whole seconds in Retry-After)
    hang_s: float = 3600.0            # how long a hung request sleeps (the client gives up first)
    seed: int = 0
    p_first: float = 0.5              # chance the verdict is "A" (the response shown first)
    reply_format: str = "auto"        # auto | letter | json | xml
    logprob_top: float = 0.8          # probability given to the chosen verdict token
    logprobs_omit_other: bool = False  # leave the other choice out of top_logprobs
    reject_temperature_models: tuple[str, ...] = ("o1*", "o3*", "reasoner*")
    reject_models: tuple[str, ...] = ("bad-*",)   # answer 400 (invalid request) to these models
    echo_key_in_errors: bool = False  # a careless provider: the 401 message repeats the key sent
    models: tuple[str, ...] = ("fake-judge",)

    def update(self, data: dict[str, Any]) -> None:
        names = {f.name for f in dataclasses.fields(self)}
        for k, v in data.items():
            if k not in names:
                raise ValueError(f"unknown fake-server knob {k!r}")
            if isinstance(v, list):
                v = tuple(v)
            setattr(self, k, v)


def _unit(*parts: object) -> float:
    """A deterministic number in [0, 1) from the parts."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


_JSON_KEY = re.compile(r'\{\s*"(winner|verdict|preferred|choice)"')
_XML_TAG = re.compile(r"<(winner|verdict|choice)>")


class _Handler:
    """The request logic (shared by the thread and process runners)."""

    def __init__(self, config: FakeConfig) -> None:
        self.config = config
        self.stats: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self.bodies: deque[dict[str, Any]] = deque(maxlen=256)   # last request bodies, for tests

    # -- answer building --------------------------------------------------------------------
    def _verdict(self, body: dict[str, Any], prompt: str) -> str:
        temp = body.get("temperature")
        key = prompt
        nth = self._seen[key]
        self._seen[key] += 1
        draw = _unit(self.config.seed, "verdict", prompt, nth if temp not in (None, 0, 0.0) else 0)
        return "A" if draw < self.config.p_first else "B"

    def _content(self, verdict: str, prompt: str) -> tuple[str, str]:
        fmt = self.config.reply_format
        if fmt == "auto":
            if _JSON_KEY.search(prompt) or "json" in prompt.lower():
                fmt = "json"
            elif _XML_TAG.search(prompt) or "xml" in prompt.lower():
                fmt = "xml"
            else:
                fmt = "letter"
        if fmt == "json":
            m = _JSON_KEY.search(prompt)
            k = m.group(1) if m else "winner"
            reason_first = bool(re.search(r'\{\s*"rationale"', prompt))
            if reason_first:
                return fmt, json.dumps({"rationale": "It answers the question more directly.", k: verdict})
            return fmt, json.dumps({k: verdict, "rationale": "It answers the question more directly."})
        if fmt == "xml":
            m = _XML_TAG.search(prompt)
            t = m.group(1) if m else "winner"
            if re.search(r"<judgment>\s*<rationale>", prompt):
                return fmt, (f"<judgment><rationale>It answers the question more directly.</rationale>"
                             f"<{t}>{verdict}</{t}></judgment>")
            return fmt, (f"<judgment><{t}>{verdict}</{t}><rationale>It answers the question more "
                         f"directly.</rationale></judgment>")
        return "letter", verdict

    def _logprobs(self, content: str, verdict: str, fmt: str, k: int) -> dict[str, Any]:
        other = "B" if verdict == "A" else "A"
        first = content[:1] if fmt != "letter" else verdict
        top: list[tuple[str, float]]
        p = min(max(self.config.logprob_top, 1e-6), 1 - 1e-6)
        if fmt == "letter":
            top = [(verdict, p)]
            if not self.config.logprobs_omit_other:
                top.append((other, (1 - p) * 0.9))
            top += [(" " + verdict, (1 - p) * 0.05), ("The", (1 - p) * 0.03), ("**", (1 - p) * 0.01)]
        else:
            top = [(first, 0.99), (" " + first, 0.005), ("`", 0.004)]
        top = top[:max(k, 1)]

        def entry(tok: str, prob: float) -> dict[str, Any]:
            return {"token": tok, "logprob": math.log(prob), "bytes": list(tok.encode())}

        first_entry = entry(first, dict(top).get(first, p))
        first_entry["top_logprobs"] = [entry(t, q) for t, q in top] if k > 0 else []
        rest = content[len(first):]
        out = [first_entry]
        if rest:
            e = entry(rest, 0.99)
            e["top_logprobs"] = [entry(rest, 0.99)] if k > 0 else []
            out.append(e)
        return {"content": out, "refusal": None}

    # -- request handling -------------------------------------------------------------------
    async def handle(self, method: str, path: str, headers: dict[str, str],
                     raw: bytes) -> tuple[int, dict[str, str], bytes] | None:
        """Return (status, headers, body), or ``None`` to hang (never answer)."""
        cfg = self.config
        path = path.split("?", 1)[0]
        if path == "/_fake/stats":
            return 200, {}, json.dumps(dict(self.stats)).encode()
        if path == "/_fake/reset" and method == "POST":
            self.stats.clear()
            self._seen.clear()
            return 200, {}, b"{}"
        if path == "/_fake/config" and method == "POST":
            try:
                cfg.update(json.loads(raw or b"{}"))
            except (ValueError, TypeError) as exc:
                return 400, {}, json.dumps({"error": {"message": str(exc)}}).encode()
            return 200, {}, json.dumps(dataclasses.asdict(cfg), default=list).encode()

        self.stats["requests"] += 1
        if headers.get("authorization", "") != f"Bearer {cfg.api_key}":
            self.stats["unauthorized"] += 1
            sent = headers.get("authorization", "").removeprefix("Bearer ")
            echo = f": {sent}" if cfg.echo_key_in_errors else ""
            return _error(401, f"Incorrect API key provided{echo}.", "invalid_request_error",
                          code="invalid_api_key")
        if path.rstrip("/") in ("/v1/models", "/models") and method == "GET":
            data = [{"id": m, "object": "model", "owned_by": "verdictlab-fake"} for m in cfg.models]
            return 200, {}, json.dumps({"object": "list", "data": data}).encode()
        if path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions") or method != "POST":
            self.stats["not_found"] += 1
            return _error(404, f"no route {method} {path}", "invalid_request_error")
        try:
            body = json.loads(raw)
            messages = body["messages"]
            model = str(body["model"])
            prompt = "\n".join(str(m.get("content", "")) for m in messages)
        except (ValueError, KeyError, TypeError, AttributeError):
            self.stats["bad_request"] += 1
            return _error(400, "request body must be JSON with 'model' and 'messages'",
                          "invalid_request_error")

        self.bodies.append(body)
        if any(fnmatch.fnmatchcase(model, p) for p in cfg.reject_models):
            self.stats["bad_request"] += 1
            return _error(400, f"The model '{model}' cannot be used with this request.",
                          "invalid_request_error", param="model", code="invalid_value")
        if "temperature" in body and any(fnmatch.fnmatchcase(model, p) for p in cfg.reject_temperature_models):
            self.stats["rejected_temperature"] += 1
            return _error(400, "Unsupported parameter: 'temperature' is not supported with this model.",
                          "invalid_request_error", param="temperature", code="unsupported_parameter")

        # faults: one draw per request, deterministic in (seed, prompt, how often it was seen)
        attempt_key = f"{model}\x1e{prompt}\x1e{body.get('temperature')}"
        nth = self._seen["attempt:" + attempt_key]
        self._seen["attempt:" + attempt_key] += 1
        u = _unit(cfg.seed, "fault", attempt_key, nth)
        fault = None
        acc = 0.0
        for kind in FAULT_KINDS:
            acc += float(getattr(cfg, f"p_{kind}"))
            if u < acc:
                fault = kind
                break

        delay = cfg.latency_s + (cfg.jitter_s * _unit(cfg.seed, "jitter", attempt_key, nth)
                                 if cfg.jitter_s else 0.0)
        if fault == "hang":
            self.stats["hang"] += 1
            await asyncio.sleep(cfg.hang_s)
            return None
        if delay > 0:
            await asyncio.sleep(delay)
        if fault == "rate_limit":
            self.stats["rate_limit"] += 1
            extra = {}
            if cfg.retry_after_s is not None:
                extra = {"retry-after-ms": str(int(cfg.retry_after_s * 1000)),
                         "retry-after": str(max(0, math.ceil(cfg.retry_after_s)))}
            status, hdrs, payload = _error(429, "Rate limit reached for requests (fake).", "requests",
                                           code="rate_limit_exceeded")
            hdrs.update(extra)
            return status, hdrs, payload
        if fault == "server_error":
            self.stats["server_error"] += 1
            status = (500, 502, 503)[int(_unit(cfg.seed, "5xx", attempt_key, nth) * 3)]
            return _error(status, "The server had an error while processing your request (fake).",
                          "server_error")
        if fault == "malformed":
            self.stats["malformed"] += 1
            return 200, {}, b"<html>upstream proxy error: not json"

        verdict = self._verdict(body, prompt)
        fmt, content = self._content(verdict, prompt)
        if fault == "truncated":
            self.stats["truncated"] += 1
            js = json.dumps({"winner": verdict, "rationale": "It answers the question more directly."})
            content = js[: len(js) // 2]
            fmt = "json"
        else:
            self.stats["ok"] += 1
        finish = "stop"
        stops = body.get("stop") or []
        if isinstance(stops, str):
            stops = [stops]
        for s in stops:
            i = content.find(s) if s else -1
            if i >= 0:
                content = content[:i]
        max_toks = body.get("max_completion_tokens") or body.get("max_tokens")
        n_out = max(1, len(content) // 4)
        if isinstance(max_toks, int) and n_out > max_toks:
            content = content[: max_toks * 4]
            n_out = max_toks
            finish = "length"
        n_in = max(1, len(prompt) // 4)
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish,
                                  "message": {"role": "assistant", "content": content, "refusal": None},
                                  "logprobs": None}
        if body.get("logprobs"):
            choice["logprobs"] = self._logprobs(content, verdict, fmt, int(body.get("top_logprobs") or 0))
        resp = {
            "id": f"chatcmpl-fake{self.stats['requests']}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": f"fp_fake_{cfg.seed}",
            "choices": [choice],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }
        return 200, {}, json.dumps(resp).encode()


def _error(status: int, message: str, type_: str, *, param: str | None = None,
           code: str | None = None) -> tuple[int, dict[str, str], bytes]:
    return status, {}, json.dumps({"error": {"message": message, "type": type_, "param": param,
                                             "code": code}}).encode()


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}


async def _serve_connection(handler: _Handler, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            try:
                method, target, _version = lines[0].split(" ", 2)
            except ValueError:
                return
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if headers.get("transfer-encoding", "").lower() == "chunked":
                parts = []
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
                    chunk = await reader.readexactly(size + 2)
                    if size == 0:
                        break
                    parts.append(chunk[:-2])
                body = b"".join(parts)
            else:
                n = int(headers.get("content-length", "0") or 0)
                body = await reader.readexactly(n) if n else b""
            result = await handler.handle(method, target, headers, body)
            if result is None:            # hang: drop the connection without answering
                return
            status, extra, payload = result
            ctype = "text/html" if payload.startswith(b"<html>") else "application/json"
            out = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
                   f"content-type: {ctype}", f"content-length: {len(payload)}",
                   "connection: keep-alive"]
            out += [f"{k}: {v}" for k, v in extra.items()]
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + payload)
            await writer.drain()
            if headers.get("connection", "").lower() == "close":
                return
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        # cancelled at shutdown (e.g. a hung request): end quietly
        return
    finally:
        with contextlib.suppress(Exception):
            writer.close()


class FakeOpenAIServer:
    """The fake server on a background thread with its own event loop.

    >>> with FakeOpenAIServer(FakeConfig(api_key="sk-test-x", latency_s=0.01)) as srv:
    ...     srv.base_url        # 'http://127.0.0.1:PORT/v1'
    """

    def __init__(self, config: FakeConfig | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.config = config or FakeConfig()
        self.handler = _Handler(self.config)
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def stats(self) -> dict[str, int]:
        return dict(self.handler.stats)

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The last request bodies received (newest last)."""
        return list(self.handler.bodies)

    def reset(self) -> None:
        self.handler.stats.clear()
        self.handler._seen.clear()

    def start(self) -> FakeOpenAIServer:
        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                self._server = loop.run_until_complete(asyncio.start_server(
                    lambda r, w: _serve_connection(self.handler, r, w), self.host, self.port,
                    backlog=1024))
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as exc:  # pragma: no cover - bind failure
                self._error = exc
                self._ready.set()
                return
            self._ready.set()
            loop.run_forever()
            # shut down: cancel hung handlers, close the server
            self._server.close()
            for task in asyncio.all_tasks(loop):
                task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(asyncio.sleep(0))
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-openai", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None:
            raise RuntimeError(f"fake server failed to start: {self._error}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
            self._loop = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeOpenAIProcess:
    """The fake server in a child process (its CPU is not the caller's).  Stats and knobs go
    through the ``/_fake/*`` endpoints."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or FakeConfig()
        self.proc: subprocess.Popen[str] | None = None
        self.base_url = ""

    def start(self, timeout_s: float = 20.0) -> FakeOpenAIProcess:
        cfg = json.dumps(dataclasses.asdict(self.config), default=list)
        env = dict(os.environ)
        env["VERDICTLAB_FAKE_CONFIG"] = cfg   # not argv: the test key stays out of `ps`
        self.proc = subprocess.Popen([sys.executable, "-c",
                                      "from verdictlab.testing.fake_openai import main; main()"],
                                     stdout=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("LISTENING "):
                self.base_url = line.split(" ", 1)[1].strip()
                return self
        self.stop()
        raise RuntimeError("fake server process did not start")

    def _call(self, method: str, path: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        import urllib.request

        url = self.base_url.rsplit("/v1", 1)[0] + path
        req = urllib.request.Request(url, method=method,
                                     data=json.dumps(data).encode() if data is not None else None)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    @property
    def stats(self) -> dict[str, int]:
        return self._call("GET", "/_fake/stats")

    def reset(self) -> None:
        self._call("POST", "/_fake/reset", {})

    def configure(self, **knobs: Any) -> None:
        self._call("POST", "/_fake/config", knobs)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.proc.kill()
                self.proc.wait(5)
            if self.proc.stdout is not None:
                self.proc.stdout.close()
            self.proc = None

    def __enter__(self) -> FakeOpenAIProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """``python -m verdictlab.testing.fake_openai [--port N] [--knob value ...]``.
    Knobs come from ``VERDICTLAB_FAKE_CONFIG`` (JSON) and ``--name value`` pairs."""
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0)
    args, rest = parser.parse_known_args(argv)
    config = FakeConfig()
    if os.environ.get("VERDICTLAB_FAKE_CONFIG"):
        config.update(json.loads(os.environ["VERDICTLAB_FAKE_CONFIG"]))
    knobs: dict[str, Any] = {}
    for name, value in zip(rest[::2], rest[1::2], strict=False):
        try:
            parsed: Any = json.loads(value)
        except ValueError:
            parsed = value
        knobs[name.lstrip("-").replace("-", "_")] = parsed
    config.update(knobs)
    handler = _Handler(config)

    async def serve() -> None:
        server = await asyncio.start_server(lambda r, w: _serve_connection(handler, r, w),
                                            "127.0.0.1", args.port, backlog=1024)
        port = server.sockets[0].getsockname()[1]
        print(f"LISTENING http://127.0.0.1:{port}/v1", flush=True)
        async with server:
            await server.serve_forever()

    with contextlib.suppress(KeyboardInterrupt):
        try:
            import uvloop  # type: ignore[import-not-found]

            uvloop.run(serve())
        except ImportError:
            asyncio.run(serve())


if __name__ == "__main__":
    main()


__all__ = ["FAULT_KINDS", "FakeConfig", "FakeOpenAIProcess", "FakeOpenAIServer", "main"]
