"""A real browser for the tests marked ``browser``: Debian's chromium driven by Playwright.

Playwright is told where chromium is (``executable_path``) and never downloads a browser of its own.
:data:`SKIP_REASON` says why the browser tests cannot run here (None when they can).
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)

try:
    import playwright.sync_api as _pw
except ImportError:     # the dev extra installs it
    _pw = None  # type: ignore[assignment]

SKIP_REASON: str | None = (
    "Debian chromium not installed (run `make browser`)" if CHROMIUM is None
    else "playwright not installed (pip install -e '.[dev]')" if _pw is None else None)

#: ``pytestmark`` of a browser test module: marked ``browser``, skipped with the reason where it cannot run
BROWSER_TEST = [pytest.mark.browser, pytest.mark.skipif(SKIP_REASON is not None, reason=str(SKIP_REASON))]

#: hostile names: a dataset whose script would set the title to PWNED, a judge id whose image would mark the body
EVIL_DATASET = "evil<script>document.title='PWNED'</script>"
EVIL_JUDGE = "<img src=x onerror=\"document.body.setAttribute('data-pwned','judge')\">"


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless chromium (a Playwright ``Browser``)."""
    assert CHROMIUM is not None and _pw is not None, SKIP_REASON
    with _pw.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def served(app: Any) -> Iterator[str]:
    """Serve an ASGI application with uvicorn on a free loopback port in a thread; yields its base URL."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        for _ in range(500):
            if server.started:
                break
            thread.join(0.02)
        assert server.started, "the viewer did not start"
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
