"""A local mirror of the pinned benchmarks for the tests, and an HTTP server to serve it.

:func:`build_mirror` lays out ``<dest>/<name>/<upstream path>`` (the layout ``verdictlab datasets fetch
--mirror`` reads) for every pinned dataset whose files are all in the shared benchmark folder, finding
each file by its SHA-256 -- so a mirror exists only for datasets whose pinned hashes agree with the
unmodified upstream copies there.  :class:`MirrorServer` serves a folder on 127.0.0.1 with HTTP ``Range``
support and the faults the fetch must survive: a 404, a corrupted body, a body cut short, a server that
answers too slowly, one that stalls half-way, one that ignores ``Range``.
"""

from __future__ import annotations

import hashlib
import http.server
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from verdictlab.datasets.pins import PINNED, PinnedDataset


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def by_hash(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` by its SHA-256."""
    return {_sha256(p): p for p in sorted(folder.rglob("*")) if p.is_file()}


def build_mirror(shared: Path, dest: Path, datasets: Iterable[PinnedDataset] | None = None) -> list[str]:
    """Lay out ``dest/<name>/<path>`` (symbolic links into ``shared``) for each dataset all of whose
    files are in ``shared``; the names laid out."""
    index = by_hash(shared)
    built = []
    for ds in PINNED.values() if datasets is None else datasets:
        if not all(f.sha256 in index for f in ds.files):
            continue
        for f in ds.files:
            target = dest / ds.name / f.path
            target.parent.mkdir(parents=True, exist_ok=True)
            if not target.exists():
                target.symlink_to(index[f.sha256])
        built.append(ds.name)
    return built


@dataclass
class Fault:
    """What the server does wrong for one file (its path under the mirror, e.g. ``tiny/a.bin``)."""

    kind: str                 # "404" | "corrupt" | "truncate" | "slow" | "stall" | "no-range"
    delay: float = 0.0        # slow: seconds before the answer; stall: seconds after half the body
    times: int | None = None  # how many requests it applies to (None: all)


@dataclass
class MirrorServer:
    """An HTTP server over ``root`` on 127.0.0.1 (a thread), with :class:`Fault` s by path; every request's
    path and ``Range`` header is kept in :attr:`requests`."""

    root: Path
    faults: dict[str, Fault] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)

    def __post_init__(self) -> None:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:   # quiet
                pass

            def do_GET(self) -> None:                                 # noqa: N802 (http.server's name)
                server._answer(self)

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> MirrorServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _fault(self, rel: str) -> Fault | None:
        fault = self.faults.get(rel)
        if fault is None or fault.times == 0:
            return None
        if fault.times is not None:
            fault.times -= 1
        return fault

    def _answer(self, h: http.server.BaseHTTPRequestHandler) -> None:
        rel = unquote(urlsplit(h.path).path).lstrip("/")
        rng = h.headers.get("Range")
        self.requests.append((rel, rng))
        fault = self._fault(rel)
        path = self.root / rel                     # (the mirror's files are links into the shared data)
        if (fault and fault.kind == "404") or ".." in rel.split("/") or not path.is_file():
            h.send_error(404)
            return
        body = path.read_bytes()
        if fault and fault.kind == "corrupt":
            body = bytes([body[0] ^ 0xFF]) + body[1:]
        if fault and fault.kind == "slow":
            time.sleep(fault.delay)
        start = int(rng.removeprefix("bytes=").split("-")[0]) if rng and not (fault and fault.kind == "no-range") else 0
        if start >= len(body) > 0:
            h.send_response(416)
            h.send_header("Content-Range", f"bytes */{len(body)}")
            h.end_headers()
            return
        h.send_response(206 if start else 200)
        if start:
            h.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        h.send_header("Content-Length", str(len(body) - start))
        h.end_headers()
        rest = body[start:]
        if fault and fault.kind in ("truncate", "stall"):
            h.wfile.write(rest[: len(rest) // 2])
            h.wfile.flush()
            if fault.kind == "stall":
                time.sleep(fault.delay)
            h.close_connection = True
            return
        h.wfile.write(rest)


@dataclass(frozen=True)
class BenchmarkMirror:
    """The pinned benchmarks found in the shared data folder ``shared``, served on 127.0.0.1 at ``url``
    (None, and no names, when that folder is absent)."""

    url: str | None
    names: frozenset[str]
    shared: Path

    def unfetchable(self, names: Iterable[str]) -> str | None:
        """Why ``datasets fetch NAMES`` cannot run in the tests (a skip reason), or None when this
        mirror serves them all."""
        names = list(names)
        if not names:
            return None
        if self.url is None:
            return (f"needs the network: `verdictlab datasets fetch {' '.join(names)}` downloads from upstream; "
                    f"the tests serve it from a mirror of the shared benchmark data, not found at {self.shared} "
                    f"(set VERDICTLAB_SHARED_DATA)")
        missing = [n for n in names if n not in self.names]
        if missing:
            return (f"needs the network: `verdictlab datasets fetch {' '.join(missing)}` downloads from "
                    f"upstream (not in the shared benchmark data the tests mirror)")
        return None
