"""A raw HTTP/1.x server for transport conformance tests: it writes each reply byte for byte, so a test
can send what a real server, proxy or load balancer may legally send and a hand-written client gets
wrong.

The server speaks just enough of the chat-completions API (``POST .../chat/completions``) for an
OpenAI-compatible judge: the answer's ``content`` is what :attr:`RawReply.answer` makes of the request
body (by default the request's last message, echoed), so a test can tell whether each request got
*its own* answer and not the one before it.  How the answer is written is the :class:`RawReply` the
test sets, and it can be changed between requests (:meth:`RawHTTPServer.set_reply`):

* ``interim``: 1xx responses sent before the final one (``100 Continue``, ``103 Early Hints`` with a
  ``Link`` header, or any other 1xx status, several in a row);
* ``framing``: how the body ends -- ``length`` (``Content-Length``), ``gzip`` (gzip-encoded, with
  ``Content-Length``), ``chunked`` (chunk extensions on every chunk and a trailer section),
  ``http10`` (an ``HTTP/1.0`` answer without ``Content-Length``: the body ends when the server
  closes), ``close`` (``Connection: close`` after a ``Content-Length`` body);
* ``redirect``: ``307`` or ``308`` to the same path under ``/moved`` first (the client must send the
  same method and body again);
* ``byte_writes``: every byte of the reply in its own write (``TCP_NODELAY``: separate segments).

Pure standard library; an asyncio server on its own thread, bound to 127.0.0.1 on a free port.
``requests`` counts the requests read, ``redirected`` those that arrived under ``/moved`` with a body.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

FRAMINGS = ("length", "gzip", "chunked", "http10", "close")
_REASONS = {100: "Continue", 102: "Processing", 103: "Early Hints", 200: "OK", 307: "Temporary Redirect",
            308: "Permanent Redirect"}


def echo_last_message(body: dict[str, Any]) -> str:
    """The default answer: the request's last message, as sent."""
    messages = body.get("messages") or [{}]
    return str(messages[-1].get("content", ""))


@dataclass(frozen=True)
class RawReply:
    """How the server writes its next replies (module docstring)."""

    interim: tuple[int, ...] = ()
    framing: str = "length"
    redirect: int | None = None
    byte_writes: bool = False
    answer: Callable[[dict[str, Any]], str] = echo_last_message

    def __post_init__(self) -> None:
        if self.framing not in FRAMINGS:
            raise ValueError(f"framing must be one of {FRAMINGS}, got {self.framing!r}")
        if any(not 100 <= s < 200 or s == 101 for s in self.interim):
            raise ValueError(f"interim statuses must be 1xx other than 101, got {self.interim}")


def completion(content: str) -> bytes:
    """A chat-completions answer with ``content``."""
    return json.dumps({"id": "raw-1", "object": "chat.completion", "created": 0, "model": "raw",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}).encode()


def _status_line(version: bytes, status: int) -> bytes:
    return b"%s %d %s\r\n" % (version, status, _REASONS.get(status, "Informational").encode())


def interim_bytes(status: int) -> bytes:
    """One interim response (a 103 carries a ``Link`` header, as early hints do)."""
    extra = b"Link: </style.css>; rel=preload; as=style\r\n" if status == 103 else b""
    return _status_line(b"HTTP/1.1", status) + extra + b"\r\n"


def final_bytes(payload: bytes, framing: str) -> tuple[bytes, bool]:
    """The final response for ``payload`` in ``framing``, and whether the server closes after it."""
    head = [b"Content-Type: application/json\r\n"]
    if framing == "gzip":
        payload = gzip.compress(payload)
        head.append(b"Content-Encoding: gzip\r\n")
    if framing == "chunked":
        head += [b"Transfer-Encoding: chunked\r\n", b"Trailer: X-Checksum\r\n"]
        cut = max(1, len(payload) // 3)
        parts = [payload[:cut], payload[cut:2 * cut], payload[2 * cut:]]
        body = b"".join(b"%x;part=%d;name=\"x y\"\r\n%s\r\n" % (len(p), i, p) for i, p in enumerate(parts) if p)
        body += b"0;last=1\r\nX-Checksum: 1234\r\n\r\n"
        return _status_line(b"HTTP/1.1", 200) + b"".join(head) + b"\r\n" + body, False
    if framing == "http10":
        return _status_line(b"HTTP/1.0", 200) + b"".join(head) + b"\r\n" + payload, True
    head.append(b"Content-Length: %d\r\n" % len(payload))
    if framing == "close":
        head.append(b"Connection: close\r\n")
    return _status_line(b"HTTP/1.1", 200) + b"".join(head) + b"\r\n" + payload, framing == "close"


def redirect_bytes(status: int, path: str) -> bytes:
    return (_status_line(b"HTTP/1.1", status) + b"Location: /moved" + path.encode() + b"\r\n"
            b"Content-Length: 0\r\n\r\n")


@dataclass
class _Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


async def _read_request(reader: asyncio.StreamReader) -> _Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length") or 0))
    return _Request(method, path, headers, body)


@dataclass
class RawHTTPServer:
    """The raw server on a background thread (module docstring).  Use as a context manager."""

    reply: RawReply = field(default_factory=RawReply)
    requests: int = 0
    redirected: int = 0
    paths: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="raw-http", daemon=True)
        self._server: asyncio.base_events.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def set_reply(self, reply: RawReply | None = None, **changes: Any) -> None:
        """Replace the reply (or change some of its fields) for the requests that follow."""
        self.reply = replace(reply or self.reply, **changes)

    def __enter__(self) -> RawHTTPServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("raw HTTP server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            # connections still open (idle keep-alive) end here, on this loop, before it closes
            tasks = asyncio.all_tasks(self._loop)
            for task in tasks:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                req = await _read_request(reader)
                if req is None:
                    break
                if not await self._answer(req, writer):
                    break
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _answer(self, req: _Request, writer: asyncio.StreamWriter) -> bool:
        """Write the reply to ``req``; False when the connection is closed after it."""
        self.requests += 1
        self.paths.append(req.path)
        reply = self.reply
        moved = req.path.startswith("/moved/")
        if moved and req.body:
            self.redirected += 1
        if reply.redirect is not None and not moved:
            await self._write(writer, redirect_bytes(reply.redirect, req.path), reply.byte_writes)
            return True
        try:
            content = reply.answer(json.loads(req.body or b"{}"))
        except ValueError:
            content = "the request body was not JSON"
        data = b"".join(interim_bytes(s) for s in reply.interim)
        final, close = final_bytes(completion(content), reply.framing)
        await self._write(writer, data + final, reply.byte_writes)
        return not close

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, data: bytes, byte_writes: bool) -> None:
        if not byte_writes:
            writer.write(data)
            await writer.drain()
            return
        for i in range(len(data)):
            writer.write(data[i:i + 1])
            await writer.drain()


__all__ = ["FRAMINGS", "RawHTTPServer", "RawReply", "completion", "echo_last_message", "final_bytes",
           "interim_bytes"]
