"""Serve the viewer with uvicorn: bind first (a port in use fails at once, before the index is
built), build the index, announce the address, serve until Ctrl-C."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable
from pathlib import Path

from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..core.stopping import longer_grace
from ..core.viewer_links import DEFAULT_HOST, DEFAULT_PORT
from ..errors import UsageError
from .app import LOOPBACK_HOSTS, Viewer, create_app

VIEWER_STOP_S = 3.0     # the stop grace while uvicorn serves (see serve)
HEAD_BYTES = 8 * 1024 * 1024     # the longest request head read (an address past MAX_URL_BYTES then gets 414)

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "AddressError", "is_loopback", "serve"]


class AddressError(UsageError):
    """The viewer cannot listen on the address asked for (in use, not a local address, not resolvable)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and the loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port); :class:`AddressError` if not possible."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise AddressError(f"--host {host}: not an address of this machine ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = "in use" if exc.errno in (98, 48) else (exc.strerror or str(exc)).lower()
        raise AddressError(f"{host}:{port}: {reason}; choose another --port (0 picks a free one)") from None
    sock.set_inheritable(True)
    return sock


def serve(run_dir: str | Path, *, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT,
          policy: FigurePolicy = DEFAULT_POLICY, cache: Path | None = None,
          on_ready: Callable[[str, Viewer], None] | None = None, curator: str | None = None) -> None:
    """Serve the viewer of ``run_dir`` on ``host:port`` until interrupted (Ctrl-C raises
    ``KeyboardInterrupt`` after a clean shutdown).  ``on_ready(url, viewer)`` is called once the
    index is built (or read from ``cache``, see :class:`~verdictlab.view.app.Viewer`) and uvicorn
    serves on the socket.  ``curator``: the name curation decisions are recorded under by default."""
    import uvicorn

    sock = bind(host, port)
    try:
        viewer = Viewer(run_dir, policy=policy, cache=cache, curator=curator)
    except BaseException:
        sock.close()
        raise
    try:
        app = create_app(viewer, allowed_hosts=LOOPBACK_HOSTS if is_loopback(host) else None)
        # h11 reads request heads of up to 8 MiB (past its default, 16 KiB, it answered 400 and closed the
        # connection with the rest unread: the client saw a reset); the app answers an address over
        # MAX_URL_BYTES with a 414
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                               timeout_graceful_shutdown=1, h11_max_incomplete_event_size=HEAD_BYTES))
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in str(bound_host) else str(bound_host)
        url = f"http://{shown}:{bound_port}/pairs"

        async def serve_then_announce() -> None:
            # the address is announced once uvicorn serves (its signal handling in place): a stop right
            # after the announcement is uvicorn's clean shutdown, never an interrupted start-up (which
            # left an un-awaited coroutine and a RuntimeWarning after "viewer stopped")
            task = asyncio.ensure_future(server.serve(sockets=[sock]))
            while not (server.started or task.done()):
                await asyncio.sleep(0.005)
            if server.started and on_ready is not None:
                on_ready(url, viewer)
            await task

        # uvicorn's clean stop (its next 0.1 s tick, then closing the connections) can pass the usual
        # 0.8 s grace on a loaded machine; the viewer only reads, but "viewer stopped" is the true ending
        with longer_grace(VIEWER_STOP_S), asyncio.Runner(loop_factory=server.config.get_loop_factory()) as runner:
            runner.run(serve_then_announce())
    finally:
        sock.close()
        viewer.close()
