"""A lean HTTP/1.1 client behind the provider SDKs (``openai``, ``anthropic``): same SDK, lighter transport.

At hundreds of calls per second the client's CPU per call caps throughput, and
most of it is not the SDK's own work but the generic HTTP stack under it: the client's send path
(auth flow, redirect loop, cookie jar, event hooks, response-stream wrappers) and the transport
(aiohttp's request machinery, or httpcore's).  :func:`lean_http_client` returns the SDK's own
``DefaultAsyncHttpxClient`` (so the SDK's defaults and its documented ``http_client=`` argument are
kept) with

* a transport that speaks plain-``http://`` HTTP/1.1 itself: an ``asyncio.Protocol`` per keep-alive
  connection, a small per-host pool, ``Content-Length`` and chunked bodies, the request's
  connect/read timeouts, one retry of a request that found a reused connection closed before any
  byte of the answer arrived; the answer comes back as a fully read response.  ``https://`` URLs go
  to the HTTP library's standard transport (created only when first needed, so no TLS context is
  built for a local server);
* ``send`` short-circuited to that transport for plain requests (no client auth, hooks or proxies):
  the SDK's request is sent as built, redirects are still followed through the standard path.

``VERDICTLAB_HTTP_TRANSPORT`` chooses it (``lean``, the default), the SDK's aiohttp client or plain
``httpx``; see :func:`verdictlab.judges.openai_api.fast_http_client`.
"""

from __future__ import annotations

import asyncio
import collections
import importlib
from typing import Any

_CLASSES: dict[str, type] = {}
_MAX_IDLE_PER_HOST = 256


class _Answer:
    __slots__ = ("body", "headers", "keep_alive", "reason", "status")

    def __init__(self, status: int, reason: bytes, headers: list[tuple[bytes, bytes]], body: bytes,
                 keep_alive: bool) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive


class _Connection(asyncio.Protocol):
    """One HTTP/1.1 keep-alive connection; one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future[_Answer] | None = None
        self.closed = False
        self.got_bytes = False
        self._head: tuple[int, bytes, list[tuple[bytes, bytes]], int | None, bool, bool] | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.got_bytes = True
        self.buf += data
        if self.waiter is not None and not self.waiter.done():
            try:
                answer = self._parse()
            except ValueError as exc:
                self.waiter.set_exception(exc)
                self.close()
                return
            if answer is not None:
                self.waiter.set_result(answer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionResetError("connection closed before the response was complete"))

    # -- use ----------------------------------------------------------------------------------
    def send(self, data: bytes) -> asyncio.Future[_Answer]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.got_bytes = False
        self._head = None
        self.transport.write(data)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    # -- parsing ------------------------------------------------------------------------------
    def _parse(self) -> _Answer | None:
        if self._head is None:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return None
            self._head = _parse_head(bytes(self.buf[:end]))
            del self.buf[: end + 4]
        status, reason, headers, length, chunked, keep_alive = self._head
        if chunked:
            body = _take_chunked(self.buf)
            if body is None:
                return None
        elif length is not None:
            if len(self.buf) < length:
                return None
            body = bytes(self.buf[:length])
            del self.buf[:length]
        else:                       # body until the connection closes: not supported on keep-alive
            raise ValueError("HTTP response without Content-Length or chunked encoding")
        self._head = None
        return _Answer(status, reason, headers, body, keep_alive)


def _parse_head(head: bytes) -> tuple[int, bytes, list[tuple[bytes, bytes]], int | None, bool, bool]:
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
        raise ValueError(f"malformed HTTP status line {lines[0][:80]!r}")
    status = int(parts[1])
    reason = parts[2] if len(parts) > 2 else b""
    headers: list[tuple[bytes, bytes]] = []
    length: int | None = None
    chunked = False
    keep_alive = parts[0] == b"HTTP/1.1"
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep:
            continue
        value = value.strip()
        lname = name.strip().lower()
        headers.append((name.strip(), value))
        if lname == b"content-length":
            length = int(value)
        elif lname == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif lname == b"connection":
            keep_alive = value.lower() != b"close" if keep_alive else value.lower() == b"keep-alive"
    if status in (204, 304) or 100 <= status < 200:
        length = 0
    return status, reason, headers, length, chunked, keep_alive


def _take_chunked(buf: bytearray) -> bytes | None:
    """The whole de-chunked body if ``buf`` holds all of it (then consumed), else None."""
    pos, out = 0, bytearray()
    while True:
        eol = buf.find(b"\r\n", pos)
        if eol < 0:
            return None
        size = int(bytes(buf[pos:eol]).split(b";", 1)[0].strip() or b"0", 16)
        start = eol + 2
        if size == 0:
            end = buf.find(b"\r\n\r\n", eol)          # trailers end with an empty line
            if end < 0:
                if buf[start:start + 2] == b"\r\n":
                    end = start - 2
                else:
                    return None
            del buf[: end + 4]
            return bytes(out)
        if len(buf) < start + size + 2:
            return None
        out += buf[start:start + size]
        pos = start + size + 2


class _Pool:
    """Idle keep-alive connections per (host, port)."""

    def __init__(self) -> None:
        self.idle: dict[tuple[str, int], collections.deque[_Connection]] = collections.defaultdict(collections.deque)

    async def acquire(self, host: str, port: int, connect_timeout: float | None) -> tuple[_Connection, bool]:
        idle = self.idle[(host, port)]
        while idle:
            conn = idle.pop()
            if not conn.closed:
                return conn, True
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(connect_timeout):
            _, conn = await loop.create_connection(_Connection, host, port)
        return conn, False

    def release(self, host: str, port: int, conn: _Connection, keep_alive: bool) -> None:
        idle = self.idle[(host, port)]
        if keep_alive and not conn.closed and len(idle) < _MAX_IDLE_PER_HOST:
            idle.append(conn)
        else:
            conn.close()

    def close(self) -> None:
        for idle in self.idle.values():
            while idle:
                idle.pop().close()


async def _exchange(pool: _Pool, request: Any, httpx: Any) -> _Answer:
    """Send ``request`` on a pooled connection and read the whole answer; errors as ``httpx``'s."""
    url = request.url
    host, port = url.host, url.port or 80
    timeout = request.extensions.get("timeout") or {}
    data = _wire(request)
    for attempt in (0, 1):
        try:
            conn, reused = await pool.acquire(host, port, timeout.get("connect"))
        except TimeoutError:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} timed out", request=request) from None
        except OSError as exc:
            raise httpx.ConnectError(f"cannot connect to {host}:{port}: {exc}", request=request) from exc
        try:
            async with asyncio.timeout(timeout.get("read")):
                answer = await conn.send(data)
        except TimeoutError:
            conn.close()
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None
        except ConnectionResetError as exc:
            stale = reused and not conn.got_bytes
            conn.close()
            if stale and attempt == 0:      # the server closed an idle connection: once more
                continue
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        except ValueError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc
        except BaseException:
            conn.close()                    # cancelled mid-request: the connection is unusable
            raise
        pool.release(host, port, conn, answer.keep_alive)
        return answer
    raise httpx.RemoteProtocolError("connection closed", request=request)  # pragma: no cover


def _transport_class(httpx: Any) -> type:
    """The lean transport class for one HTTP library (``httpx`` or ``httpx2``)."""

    class LeanTransport(httpx.AsyncBaseTransport):
        def __init__(self, **fallback_kwargs: Any) -> None:
            self._pool = _Pool()
            self._fallback: Any = None
            self._fallback_kwargs = fallback_kwargs

        async def handle_async_request(self, request: Any) -> Any:
            if request.url.scheme != "http":
                if self._fallback is None:
                    self._fallback = httpx.AsyncHTTPTransport(**self._fallback_kwargs)
                return await self._fallback.handle_async_request(request)
            answer = await _exchange(self._pool, request, httpx)
            # the body is complete: a byte stream marked as read (Response(content=...) would re-encode
            # it and walk the content decoders, several times the cost)
            response = httpx.Response(answer.status, headers=answer.headers, stream=httpx.ByteStream(answer.body),
                                      extensions={"http_version": b"HTTP/1.1", "reason_phrase": answer.reason})
            if not _ENCODED.search(answer.headers):
                response._content = answer.body
            return response

        async def aclose(self) -> None:
            self._pool.close()
            if self._fallback is not None:
                await self._fallback.aclose()

    return LeanTransport


def _plain_request(client: Any, httpx: Any, method: str, url: Any, content: bytes, headers: Any, timeout: Any,
                   extensions: Any) -> Any:
    """A request with a bytes body built as the library's ``build_request`` would (client headers
    merged, Host and Content-Length added, the timeout as an extension), without re-parsing the URL
    or re-encoding the body."""
    ext = {} if extensions is None else dict(extensions)
    if "timeout" not in ext:
        ext["timeout"] = (client.timeout if timeout is None else httpx.Timeout(timeout)).as_dict()
    hdrs = client._merge_headers(headers)
    auto = []
    if "Host" not in hdrs:
        auto.append((b"Host", url.netloc))
    if "Content-Length" not in hdrs and "Transfer-Encoding" not in hdrs:
        auto.append((b"Content-Length", str(len(content)).encode("ascii")))
    request = httpx.Request.__new__(httpx.Request)
    request.method = method.upper()
    request.url = url
    request.headers = httpx.Headers(auto + hdrs.raw) if auto else hdrs
    request.extensions = ext
    request.stream = httpx.ByteStream(content)
    request._content = content
    return request


def _client_class(httpx: Any, client_base: type, transport_cls: type) -> type:
    """The SDK's client class with the lean send path, for one HTTP library."""
    default = httpx.USE_CLIENT_DEFAULT if hasattr(httpx, "USE_CLIENT_DEFAULT") else None

    class LeanClient(client_base):
        """The SDK's default async client, sending plain requests straight to the lean transport."""

        def __init__(self, **kwargs: Any) -> None:
            kwargs.setdefault("transport", transport_cls(limits=kwargs.get("limits") or httpx.Limits()))
            super().__init__(**kwargs)
            self._lean_transport = kwargs["transport"]
            self._urls: dict[str, Any] = {}

        def build_request(self, method: str, url: Any, *, content: Any = None, data: Any = None, files: Any = None,
                          json: Any = None, params: Any = None, headers: Any = None, cookies: Any = None,
                          timeout: Any = default, extensions: Any = None) -> Any:
            """The SDK's request as built, for a plain-http bytes body, without re-parsing its URL and
            re-encoding its body (the same method, URL, headers, Host and Content-Length as the
            library's own ``build_request``); anything else goes to the library's."""
            merged = self._merge_url(url)
            if (not isinstance(content, bytes) or data is not None or files or json is not None or params
                    or cookies or self.cookies or self.params or merged.scheme != "http"):
                return super().build_request(method, url, content=content, data=data, files=files, json=json,
                                             params=params, headers=headers, cookies=cookies, timeout=timeout,
                                             extensions=extensions)
            return _plain_request(self, httpx, method, merged, content, headers,
                                  None if timeout is default else timeout, extensions)

        def _merge_url(self, url: Any) -> Any:
            # the SDK posts to the same few URLs: parse each once (URL objects are immutable)
            if not isinstance(url, str):
                return super()._merge_url(url)
            merged = self._urls.get(url)
            if merged is None:
                merged = super()._merge_url(url)
                if len(self._urls) < 256:
                    self._urls[url] = merged
            return merged

        def _plain(self, request: Any, auth: Any) -> bool:
            return (request.url.scheme == "http" and hasattr(request, "_content") and (auth is default or auth is None) and self._auth is None
                    and not self._event_hooks["request"] and not self._event_hooks["response"]
                    and self._transport_for_url(request.url) is self._lean_transport)

        async def send(self, request: Any, *, stream: bool = False, auth: Any = default,
                       follow_redirects: Any = default) -> Any:
            if self.is_closed or not self._plain(request, auth):
                return await super().send(request, stream=stream, auth=auth, follow_redirects=follow_redirects)
            self._set_timeout(request)
            response = await self._lean_transport.handle_async_request(request)
            response.request = request
            if response.is_redirect and (self.follow_redirects if follow_redirects is default else follow_redirects):
                return await super().send(request, stream=stream, auth=auth, follow_redirects=follow_redirects)
            return response

    return LeanClient


class _EncodedCheck:
    """Is the body content-encoded (gzip, ...)?  Then the library decodes it as usual."""

    @staticmethod
    def search(headers: list[tuple[bytes, bytes]]) -> bool:
        return any(n.lower() == b"content-encoding" and v.strip().lower() not in (b"", b"identity")
                   for n, v in headers)


_ENCODED = _EncodedCheck()


def _wire(request: Any) -> bytes:
    """The request as HTTP/1.1 bytes (its own headers; no compression asked for)."""
    head = [request.method.encode("ascii"), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
    for name, value in request.headers.raw:
        if name.lower() == b"accept-encoding":
            continue
        head += [name, b": ", value, b"\r\n"]
    head.append(b"accept-encoding: identity\r\n\r\n")
    return b"".join(head) + request.content


def lean_http_client(sdk: Any) -> Any:
    """An instance of the SDK's ``DefaultAsyncHttpxClient`` with the lean transport and send path,
    or None when the SDK has no such class (then the caller keeps the SDK's default)."""
    base = getattr(sdk, "DefaultAsyncHttpxClient", None)
    if not isinstance(base, type):
        return None
    lib_base = next((c for c in base.__mro__ if c.__name__ == "AsyncClient"), None)
    if lib_base is None:
        return None
    lib_name = lib_base.__module__.split(".")[0]
    key = f"{lib_name}:{base.__module__}.{base.__qualname__}"
    cls = _CLASSES.get(key)
    if cls is None:
        httpx = importlib.import_module(lib_name)
        cls = _client_class(httpx, base, _transport_class(httpx))
        _CLASSES[key] = cls
    return cls()


__all__ = ["lean_http_client"]
