"""Chat-completions requests posted straight on an ``aiohttp`` session, for ``http://`` judges.

A judge on a local server (vLLM, llama.cpp, Ollama, SGLang) answers in milliseconds, so the client's
CPU per call bounds how many calls a run makes per second.  Through the ``openai`` SDK a call costs
about 2 ms of client CPU on its aiohttp client (3 ms on httpx), most of it the SDK's own layers: option
models, an httpx-style request and response wrapped around aiohttp's.  Posting the same JSON body on
an aiohttp session costs about a third of that; at concurrency 64 against a 50 ms server it is the
difference between 0.3 and 0.8 of the ideal rate on two cores (``bench/engine_bench.py``).

HTTP itself stays with aiohttp, a well-kept client (interim 1xx responses, bodies ended by the
server closing, gzip, chunked framing with extensions and trailers, redirects, ``Connection:
close``: ``tests/test_http_conformance.py``).  What the SDK adds is kept: the same request body
and ``Authorization`` header, and its typed exceptions -- a 4xx / 5xx answer becomes the SDK's own
exception class for that status (its documented table: 400 ``BadRequestError`` with the rejected
``param``, 401, 403, 404, 409, 422, 429 ``RateLimitError`` with the response headers, 5xx
``InternalServerError``), a failed connection ``APIConnectionError`` and a timeout
``APITimeoutError`` -- so the judge's retry decisions and parameter dropping are the same on every
transport.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

_JSON_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
MAX_CONNECTIONS = 1000     # the SDK's own default; the engine's concurrency is the real bound

_STATUS_ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 403: "PermissionDeniedError",
                  404: "NotFoundError", 409: "ConflictError", 422: "UnprocessableEntityError",
                  429: "RateLimitError"}


def http_library(sdk: Any) -> Any:
    """The HTTP library the SDK's errors are built on (``httpx2`` from openai 3, ``httpx`` before):
    its ``Request`` / ``Response`` go inside the SDK's exceptions."""
    import importlib

    base = next(c for c in sdk.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    return importlib.import_module(base.__module__.split(".")[0])


def status_error(sdk: Any, url: str, status: int, headers: Any, raw: bytes) -> Exception:
    """The SDK's exception for an answer with HTTP ``status`` (not 2xx), as the SDK itself raises it:
    the message ``Error code: N - BODY``, the body's ``error`` object (``param``, ``code``, ``type``)
    and the response headers (``Retry-After``)."""
    lib = http_library(sdk)
    response = lib.Response(status, headers=list(headers.items()), content=raw,
                            request=lib.Request("POST", url))
    try:
        body: object = json.loads(raw)
    except ValueError:
        body = raw.decode("utf-8", "replace")
    data = body.get("error", body) if isinstance(body, dict) else body
    message = f"Error code: {status} - {body}"
    name = _STATUS_ERRORS.get(status, "InternalServerError" if status >= 500 else "APIStatusError")
    cls = getattr(sdk, name)
    return cls(message, response=response, body=data)


class AiohttpChatPoster:
    """POSTs chat-completions bodies to ``BASE_URL/chat/completions`` on one aiohttp session (one per
    event loop: it is opened by the first call on a loop and closed by :meth:`aclose`).  Answers are
    the decoded JSON (``None`` for a body that is not JSON); errors are the SDK's (module docstring)."""

    def __init__(self, base_url: str, api_key: str | None, sdk: Any, *, user_agent: str) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.sdk = sdk
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": user_agent}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timeouts: dict[float, Any] = {}

    def _timeout(self, seconds: float) -> Any:
        t = self._timeouts.get(seconds)
        if t is None:
            import aiohttp

            # like the SDK's per-phase timeout: connecting, and each wait for the server's bytes
            t = self._timeouts[seconds] = aiohttp.ClientTimeout(total=None, sock_connect=seconds,
                                                                sock_read=seconds)
        return t

    def _open(self) -> Any:
        import aiohttp

        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=MAX_CONNECTIONS), headers=self._headers,
                trust_env=False)   # as the SDK's aiohttp client: no proxy variables for a local server
            self._loop = loop
        return self._session

    async def post(self, body: dict[str, Any], timeout_s: float) -> Any:
        import aiohttp

        session = self._open()
        try:
            async with session.post(self.url, data=_JSON_ENCODE(body).encode(),
                                    timeout=self._timeout(timeout_s)) as resp:
                raw = await resp.read()
                status, headers = resp.status, resp.headers
        except TimeoutError as exc:       # aiohttp's ServerTimeoutError included
            raise self.sdk.APITimeoutError(request=self._request()) from exc
        except aiohttp.ClientError as exc:
            raise self.sdk.APIConnectionError(message=f"Connection error: {exc}",
                                              request=self._request()) from exc
        if not 200 <= status < 300:
            raise status_error(self.sdk, self.url, status, headers, raw)
        try:
            return json.loads(raw)
        except ValueError:      # includes JSONDecodeError and UnicodeDecodeError
            return None

    def _request(self) -> Any:
        return http_library(self.sdk).Request("POST", self.url)

    async def aclose(self) -> None:
        session, self._session, self._loop = self._session, None, None
        if session is not None and not session.closed:
            await session.close()


__all__ = ["MAX_CONNECTIONS", "AiohttpChatPoster", "http_library", "status_error"]
