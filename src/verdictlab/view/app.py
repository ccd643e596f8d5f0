"""The viewer's web application (Starlette): server-side pages over a read-only run store.

Routes
------
``/``                    redirects to ``/pairs``
``/pairs``               the pairs, one row per pair per cell, filtered by the query parameters
                         ``judge, protocol, dataset, temperature, decoding`` (a cell), ``outcome``
                         (``flipped | unstable | wrong | disagree | unparsed``), ``q`` (text) and ``page``
``/pairs/<item_id>``     one pair: its question, both responses and every judgment of it, in every cell,
                         order, repetition and decoding, with the raw output and the audit trail;
                         ``?dataset=`` picks the dataset when several hold the id
``/curation``            the model-written test cases of the run, to accept, reject or edit (GET); one
                         decision recorded (POST: the viewer's one write, :mod:`verdictlab.view.curation`)
``/view.css``            the one stylesheet

Requests: the viewer reads, with one write: a curation decision (``POST /curation``) opens the store for
writing for that one decision (:meth:`Viewer.curate`).  A request whose address (path and query) passes
:data:`MAX_URL_BYTES` gets HTTP 414; a read that carries a body gets 400 (no page reads one); every other
write gets 405 from the routes.

Everything shown comes from the run's data and is untrusted: templates autoescape every value and no
template marks data safe; the pages carry no script, and a Content-Security-Policy forbids any, so a
payload that got past escaping still could not run.  Requests must name a loopback host unless the
server was bound to another address on purpose (so a web page cannot reach the viewer through DNS
rebinding).
"""

from __future__ import annotations

import getpass
import json
import secrets
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from ..core.items import PointItem
from ..core.policy import DEFAULT_POLICY, FigurePolicy
from ..store import RunStore, open_store
from .curation import (
    MAX_FORM_BYTES,
    STATUS_FILTERS,
    CaseView,
    CurationFilters,
    CurationRefused,
    case_anchor,
    case_views,
    curation_url,
    form_refusal,
    page_of,
    parse_form,
    record_decision,
    write_refusal,
)
from .index import CELL_FILTERS, Filters, PairIndex, ViewError
from .outcomes import OUTCOMES
from .pages import cell_anchor, iter_pair_cells, pair_url, pairs_url

__all__ = ["LOOPBACK_HOSTS", "MAX_URL_BYTES", "Viewer", "create_app"]

#: the longest request address (path and query string) answered; longer ones get HTTP 414.  A filter
#: query is a few hundred bytes; 16 KiB is the limit many servers keep (8-16 KiB).
MAX_URL_BYTES = 16 * 1024

#: the host names a request may use when the viewer listens on a loopback address
LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1", "[::1]")
_CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'")
# same-origin: a page's address goes to the viewer itself and to no other site; under no-referrer a browser
# sends a curation form's Origin as "null", which the write must refuse (it cannot tell it from another site)
_HEADERS = {"Content-Security-Policy": _CSP, "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin", "Cache-Control": "no-store"}


class Viewer:
    """A run opened for viewing: the read-only store, its index and a lock (one SQLite connection is
    shared by the server's worker threads).  ``cache``: a folder for the index between start-ups
    (:mod:`verdictlab.view.index_cache`); None builds it from the store every time."""

    def __init__(self, run_dir: str | Path, *, policy: FigurePolicy = DEFAULT_POLICY, cache: Path | None = None,
                 curator: str | None = None) -> None:
        self.run_dir = Path(run_dir)
        #: who curation decisions are recorded as by default (the form can say another name)
        self.curator = curator if curator is not None else _user_name()
        #: the token every curation form carries (made here, written only into this viewer's pages)
        self.token = secrets.token_urlsafe(32)
        self.store: RunStore = open_store(self.run_dir, read_only=True)
        try:
            self.index = PairIndex.from_store(self.store, policy=policy, cache=cache)
        except BaseException:
            self.store.close()
            raise
        self.lock = threading.Lock()

    def judgments_of(self, dataset: str, item_id: str) -> list[dict[str, Any]]:
        rowids = self.index.rowids_of(dataset, item_id)
        with self.lock:
            return self.store.judgments_at(rowids)

    def cases(self) -> list[CaseView]:
        """The run's model-written cases, read from the store now (decisions recorded since start-up
        included)."""
        with self.lock:
            items = self.store.items()
        counts = {(it.dataset, it.item_id): len(self.index.rowids_of(it.dataset, it.item_id)) for it in items}
        return case_views(items, counts)

    def curate(self, dataset: str, item_id: str, action: str, *, by: str, response: str | None = None) -> PointItem:
        """Record one decision on a case (:func:`verdictlab.view.curation.record_decision`) and show the
        curated case on the viewer's pages from now on."""
        with self.lock:
            new = record_decision(self.run_dir, dataset, item_id, action, by=by, response=response)
        self.index.items[(dataset, item_id)] = json.loads(new.model_dump_json())
        return new

    def close(self) -> None:
        self.store.close()


def _user_name() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):     # no user name in the environment or the password database
        return "curator"


def create_app(run: str | Path | Viewer, *, policy: FigurePolicy = DEFAULT_POLICY,
               allowed_hosts: Sequence[str] | None = LOOPBACK_HOSTS) -> Starlette:
    """The viewer's application over ``run`` (a run directory, opened read-only, or a :class:`Viewer`).
    ``allowed_hosts=None`` accepts any Host header (for a server bound to a non-loopback address)."""
    viewer = run if isinstance(run, Viewer) else Viewer(run, policy=policy)
    env = _environment()
    css = resources.files("verdictlab.view").joinpath("templates/view.css").read_text(encoding="utf-8")

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(run=_run_summary(viewer), **context)
        return HTMLResponse(html, status_code=status, headers=_HEADERS)

    def home(request: Request) -> Response:
        return RedirectResponse("/pairs", status_code=307, headers=_HEADERS)

    def pairs(request: Request) -> Response:
        try:
            filters = Filters.from_query(request.query_params)
        except ViewError as exc:
            return page("message.html", 400, title="Bad request", message=str(exc))
        return page("pairs.html", listing=viewer.index.page(filters), choices=viewer.index.choices,
                    cell_filters=CELL_FILTERS, outcomes=OUTCOMES)

    def pair(request: Request) -> Response:
        item_id = request.path_params["item_id"]
        datasets = viewer.index.datasets_of(item_id)
        dataset = request.query_params.get("dataset") or (datasets[0] if len(datasets) == 1 else None)
        if dataset is None and len(datasets) > 1:
            return page("choose.html", 300, title=f"Pair {item_id}", item_id=item_id, datasets=datasets)
        if dataset is None or dataset not in datasets:
            where = f" in dataset {dataset!r}" if dataset else ""
            return page("message.html", 404, title="No such pair", message=f"no pair {item_id!r}{where} in this run")
        # streamed: the top of the page (question, responses, outcomes per cell) goes out before the
        # pair's judgments are read and rendered
        cells = iter_pair_cells(viewer.index, lambda: viewer.judgments_of(dataset, item_id), dataset, item_id)
        chunks = env.get_template("pair.html").generate(
            run=_run_summary(viewer), item_id=item_id, dataset=dataset, rows=viewer.index.rows_of(dataset, item_id),
            item=viewer.index.item(dataset, item_id) or {}, cells=cells)
        return StreamingResponse(_coalesced(chunks), media_type="text/html; charset=utf-8", headers=_HEADERS)

    def stylesheet(request: Request) -> Response:
        return Response(css, media_type="text/css", headers=_HEADERS)

    async def not_found(request: Request, exc: Exception) -> Response:
        return page("message.html", 404, title="Not found", message=f"no page at {request.url.path}")

    middleware = [] if allowed_hosts is None else [Middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))]
    middleware.append(Middleware(_RequestShape))
    app = Starlette(routes=[Route("/", home), Route("/pairs", pairs), Route("/pairs/{item_id:path}", pair),
                            *_curation_routes(viewer, page), Route("/view.css", stylesheet)],
                    middleware=middleware, exception_handlers={404: not_found})
    app.state.viewer = viewer
    return app


def _curation_routes(viewer: Viewer, page: Callable[..., HTMLResponse]) -> list[Route]:
    """``GET /curation`` (the cases) and ``POST /curation`` (one decision: :mod:`verdictlab.view.curation`)."""

    def curation(request: Request) -> Response:
        try:
            filters = CurationFilters.from_query(request.query_params)
        except ViewError as exc:
            return page("message.html", 400, title="Bad request", message=str(exc))
        cases = viewer.cases()
        shown, n_matching, n_pages = page_of(cases, filters)
        return page("curation.html", title="Curation", cases=shown, n_matching=n_matching, n_pages=n_pages,
                    n_cases=len(cases), filters=filters, statuses=STATUS_FILTERS,
                    kinds=sorted({c.kind for c in cases}), datasets=sorted({c.dataset for c in cases}),
                    counts=_status_counts(cases), token=viewer.token, curator=viewer.curator)

    async def curate_case(request: Request) -> Response:
        headers = {k.lower(): v for k, v in request.headers.items()}
        refused = form_refusal(headers)
        if refused is None:
            body = await request.body()
            if len(body) > MAX_FORM_BYTES:
                refused = (413, f"the form is longer than {MAX_FORM_BYTES:,} bytes")
        if refused is not None:
            return page("message.html", refused[0], title="Not recorded", message=refused[1])
        try:
            form = parse_form(body)
        except ViewError as exc:
            return page("message.html", 400, title="Not recorded", message=str(exc))
        refused = write_refusal(headers, scheme=request.url.scheme, token=viewer.token, given_token=form.get("token"))
        if refused is not None:
            return page("message.html", refused[0], title="Not recorded", message=refused[1])
        try:
            await run_in_threadpool(viewer.curate, form["dataset"], form["item_id"], form["action"],
                                    by=form.get("curator", ""),
                                    response=form.get("response") if form["action"] == "edit" else None)
        except CurationRefused as exc:
            return page("message.html", exc.status, title="Not recorded", message=str(exc))
        try:
            back = CurationFilters.from_query({k[2:]: v for k, v in form.items() if k.startswith("f_")})
        except ViewError:
            back = CurationFilters()
        target = curation_url(back) + "#" + case_anchor(form["dataset"], form["item_id"])
        return RedirectResponse(target, status_code=303, headers=_HEADERS)

    return [Route("/curation", curation, methods=["GET"]), Route("/curation", curate_case, methods=["POST"])]


def _status_counts(cases: list[CaseView]) -> dict[str, int]:
    """Cases per curation status, and how many were edited."""
    counts = {s: 0 for s in STATUS_FILTERS[2:]}
    for c in cases:
        counts[c.status] = counts.get(c.status, 0) + 1
    counts["ever edited"] = sum(c.edited for c in cases)
    return counts


class _RequestShape:
    """Refuse before routing what no page can answer: an address over :data:`MAX_URL_BYTES` (414) and a
    GET or HEAD with a body (400); plain text with the viewer's headers (a pure ASGI layer: cheap per request)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string", b""))
        headers = dict(scope.get("headers") or [])
        has_body = headers.get(b"content-length", b"0").strip() not in (b"0", b"") or b"transfer-encoding" in headers
        body = _BodyReader(receive, done=not has_body)
        if length > MAX_URL_BYTES:
            await body.drain()
            await _plain(send, 414, f"the address is {length:,} bytes long; the viewer answers addresses up to "
                                    f"{MAX_URL_BYTES:,} bytes")
            return
        if has_body and scope["method"] in ("GET", "HEAD"):     # a write method: 405 from the routes
            await body.drain()
            await _plain(send, 400, "the viewer only reads: a request must not carry a body")
            return

        async def answer(message: Any) -> None:
            if message["type"] == "http.response.start":
                await body.drain()
            await send(message)

        await self.app(scope, body.receive, answer)


#: at most this much of a refused request's body is read before the answer (beyond it the answer goes out
#: and the connection closes under the sender)
MAX_DRAIN_BYTES = 16 * 1024 * 1024


class _BodyReader:
    """A request's body as the app reads it, and the rest read and dropped before any answer: a 400 or 405
    sent while the client was still sending its body (a 2 MB GET in the fuzz test) closed the connection
    under it, and the client got a broken pipe instead of the answer."""

    def __init__(self, receive: Any, *, done: bool) -> None:
        self._receive = receive
        self.done = done

    async def receive(self) -> Any:
        message = await self._receive()
        if message["type"] != "http.request" or not message.get("more_body"):
            self.done = True
        return message

    async def drain(self) -> None:
        seen = 0
        while not self.done and seen <= MAX_DRAIN_BYTES:
            seen += len((await self.receive()).get("body", b""))


async def _plain(send: Any, status: int, text: str) -> None:
    body = (text + "\n").encode("utf-8")
    headers = [(k.lower().encode(), v.encode()) for k, v in _HEADERS.items()]
    headers += [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _run_summary(viewer: Viewer) -> dict[str, Any]:
    ix = viewer.index
    return {"name": viewer.run_dir.name or str(viewer.run_dir), "n_judgments": ix.n_judgments,
            "n_rows": len(ix.pairs), "n_pairs": len(ix.pair_keys), "unparsed": ix.policy.unparsed.value}



def _coalesced(chunks: Iterable[str], *, first: int = 1024, size: int = 32 * 1024) -> Iterator[bytes]:
    """The template's many small pieces as a few larger chunks: the first as soon as it holds ``first``
    characters (the top of the page), then every ``size``."""
    buf: list[str] = []
    n, limit = 0, first
    for piece in chunks:
        buf.append(piece)
        n += len(piece)
        if n >= limit:
            yield "".join(buf).encode("utf-8")
            buf, n, limit = [], 0, size
    if buf:
        yield "".join(buf).encode("utf-8")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("verdictlab.view", "templates"),
                             autoescape=True,   # every {{ }} is HTML-escaped; data never gets |safe
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(pairs_url=pairs_url, pair_url=pair_url, cell_anchor=cell_anchor, curation_url=curation_url)
    env.filters["temp"] = lambda t: f"{float(t):g}"
    return env
