"""The viewer's curation page: a person accepts, rejects or edits each model-written test case.

``GET /curation`` lists the run's model-written perturbed cases (``meta.perturbation.origin == "model"``,
:mod:`verdictlab.core.curation`) beside their sources, with what made each (kind, template, writer,
seed, validation verdict, similarity) and every decision taken on it, filtered by status, kind and
dataset.  ``POST /curation`` -- the viewer's one write -- records one decision in the run store (the
case's ``meta.perturbation`` and the meta list ``curation``, the run's audit trail).

The write is narrow, as a tool on 127.0.0.1 needs it:

* the form is ``application/x-www-form-urlencoded`` of at most :data:`MAX_FORM_BYTES` bytes, with known
  fields only, each once;
* it carries the viewer's token, a random value made when the viewer starts and written only into its
  own pages (the synchroniser-token pattern: a page of another origin cannot read it);
* a browser's ``Origin`` (else its ``Referer``) must be the viewer's own address and ``Sec-Fetch-Site``,
  when sent, ``same-origin``: a form another site submits is refused even with a guessed token;
* the Host check of every request still applies (DNS rebinding), the Content-Security-Policy still
  forbids every script, and a text in the data stays text (templates escape it).

Every other route answers only GET: any other method gets 405.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from ..core.curation import CURATION_ACTIONS, CurationError, curate, curation_events, was_edited
from ..core.items import PointItem, perturbation_of
from ..core.vocab import CurationStatus
from ..errors import InputError
from ..store import RunStore
from .index import ViewError

__all__ = ["CASES_PER_PAGE", "FORM_FIELDS", "MAX_FORM_BYTES", "STATUS_FILTERS", "CaseView", "CurationFilters",
           "CurationRefused", "record_decision",
           "case_anchor", "case_views", "curation_url", "form_refusal", "page_of", "parse_form", "write_refusal"]

CASES_PER_PAGE = 25
#: the largest curation form read (an edited response and a few short fields)
MAX_FORM_BYTES = 1024 * 1024
#: ``pending``: generated or edited, waiting for a person's acceptance
STATUS_FILTERS: tuple[str, ...] = ("all", "pending", *(s.value for s in CurationStatus))
FORM_FIELDS: frozenset[str] = frozenset({"token", "dataset", "item_id", "action", "curator", "response",
                                         "f_status", "f_kind", "f_dataset", "f_page"})


def case_anchor(dataset: str, item_id: str) -> str:
    """The page anchor of a case: ``case-`` and 16 hex digits of a hash of its dataset and id."""
    return "case-" + hashlib.sha256(f"{dataset}\x1f{item_id}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CaseView:
    """One case as the page shows it."""

    dataset: str
    item_id: str
    anchor: str
    kind: str
    klass: str
    status: str
    source_id: str
    source_label: Any
    expected_label: Any
    question: str
    source_response: str | None
    response: str
    generated_response: str | None
    validation: Mapping[str, Any]
    similarity: Mapping[str, Any]
    made_by: tuple[tuple[str, str], ...]
    history: tuple[tuple[str, str, str, str], ...]
    n_judgments: int
    edited: bool

    @property
    def pending(self) -> bool:
        return self.status in (CurationStatus.GENERATED, CurationStatus.EDITED)


def _when(at: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(at, tz=_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def case_views(items: Iterable[Any], judgment_counts: Mapping[tuple[str, str], int]) -> list[CaseView]:
    """The model-written cases among ``items`` in dataset, source and id order."""
    items = list(items)
    sources = {(it.dataset, it.item_id): it for it in items}
    out = []
    for it in items:
        p = perturbation_of(it) if isinstance(it, PointItem) else None
        if p is None or p.origin != "model":
            continue
        raw = it.meta["perturbation"]
        src = sources.get((it.dataset, p.source_id))
        made = tuple((k, str(raw[k])) for k in ("template", "model", "seed", "variant", "target") if raw.get(k) is not None)
        out.append(CaseView(
            dataset=it.dataset, item_id=it.item_id, anchor=case_anchor(it.dataset, it.item_id), kind=p.kind,
            klass=p.perturbation_class.value, status=p.status.value, source_id=p.source_id,
            source_label=p.source_label if src is None else src.label, expected_label=it.label, question=it.question,
            source_response=None if src is None else src.response, response=it.response,
            generated_response=raw.get("generated_response"), validation=raw.get("validation") or {},
            similarity=raw.get("similarity") or {}, made_by=made,
            history=tuple((e.action, e.by, _when(e.at), e.status.value) for e in curation_events(it)),
            n_judgments=int(judgment_counts.get((it.dataset, it.item_id), 0)), edited=was_edited(it)))
    return sorted(out, key=lambda c: (c.dataset, c.source_id, c.item_id))


@dataclass(frozen=True)
class CurationFilters:
    """What the curation page shows: a status (:data:`STATUS_FILTERS`), a kind, a dataset, a page."""

    status: str = "all"
    kind: str = ""
    dataset: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> CurationFilters:
        status = params.get("status") or "all"
        if status not in STATUS_FILTERS:
            raise ViewError(f"status must be one of {', '.join(STATUS_FILTERS)}, got {status[:40]!r}")
        raw_page = params.get("page") or "1"
        if not raw_page.isdigit() or len(raw_page) > 9 or int(raw_page) < 1:
            raise ViewError(f"page must be a whole number from 1, got {raw_page[:40]!r}")
        return cls(status, (params.get("kind") or "")[:200], (params.get("dataset") or "")[:500], int(raw_page))

    def keep(self, c: CaseView) -> bool:
        if self.kind and c.kind != self.kind:
            return False
        if self.dataset and c.dataset != self.dataset:
            return False
        return self.status == "all" or (self.status == "pending" and c.pending) or c.status == self.status

    def query(self, **change: Any) -> dict[str, str]:
        values = {"status": self.status, "kind": self.kind, "dataset": self.dataset, "page": str(self.page),
                  **{k: str(v) for k, v in change.items()}}
        defaults = {"status": "all", "kind": "", "dataset": "", "page": "1"}
        return {k: v for k, v in values.items() if v != defaults[k]}


def curation_url(filters: CurationFilters, **change: Any) -> str:
    q = filters.query(**change)
    return "/curation" + (f"?{urlencode(q)}" if q else "")


def page_of(cases: Sequence[CaseView], filters: CurationFilters) -> tuple[list[CaseView], int, int]:
    """``(cases on the page, cases matching, pages)``; a page past the last shows the last."""
    matching = [c for c in cases if filters.keep(c)]
    n_pages = max(1, math.ceil(len(matching) / CASES_PER_PAGE))
    page = min(filters.page, n_pages)
    return matching[(page - 1) * CASES_PER_PAGE: page * CASES_PER_PAGE], len(matching), n_pages


def parse_form(body: bytes) -> dict[str, str]:
    """The fields of a url-encoded curation form: known fields only, each at most once (a
    :class:`ViewError` otherwise)."""
    try:
        text = body.decode("utf-8")
        fields = parse_qs(text, keep_blank_values=True, strict_parsing=False, max_num_fields=len(FORM_FIELDS))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ViewError(f"not a url-encoded form ({type(exc).__name__})") from None
    unknown = sorted(set(fields) - FORM_FIELDS)
    if unknown:
        raise ViewError(f"unknown form field(s): {', '.join(k[:40] for k in unknown[:5])}")
    twice = sorted(k for k, v in fields.items() if len(v) > 1)
    if twice:
        raise ViewError(f"form field(s) given more than once: {', '.join(twice)}")
    out = {k: v[0] for k, v in fields.items()}
    if out.get("action") not in CURATION_ACTIONS:
        raise ViewError(f"action must be one of {', '.join(CURATION_ACTIONS)}")
    for key in ("dataset", "item_id"):
        if not out.get(key):
            raise ViewError(f"the form names no {key}")
    return out


def _same_origin(value: str, origin: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return f"{parts.scheme}://{parts.netloc}".lower() == origin.lower()


def form_refusal(headers: Mapping[str, str]) -> tuple[int, str] | None:
    """Why a curation request is refused before its body is read -- ``(HTTP status, reason)`` -- or None:
    the form's type and declared size.  ``headers``: the request's headers (lower-case names)."""
    ctype = headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        return 415, "a curation is sent as a url-encoded form"
    length = headers.get("content-length")
    if length is None or not length.strip().isdigit():
        return 411, "a curation form must say its length (Content-Length)"
    if int(length) > MAX_FORM_BYTES:
        return 413, f"the form is longer than {MAX_FORM_BYTES:,} bytes"
    return None


def write_refusal(headers: Mapping[str, str], *, scheme: str, token: str, given_token: str | None) -> tuple[int, str] | None:
    """Why a curation write is refused -- ``(403, reason)`` -- or None when it may go ahead: the origin,
    the fetch site and the token (module docstring)."""
    origin = f"{scheme}://{headers.get('host', '')}"
    sent = headers.get("origin")
    if sent is not None and not _same_origin(sent, origin):
        return 403, "the form was sent from another site"
    if sent is None and headers.get("referer") is not None and not _same_origin(headers["referer"], origin):
        return 403, "the form was sent from another site"
    site = headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return 403, "the form was sent from another site"
    if not given_token or not hmac.compare_digest(given_token.encode(), token.encode()):
        return 403, "the form's token is not this viewer's (reload the curation page and try again)"
    return None


class CurationRefused(InputError):
    """A curation decision that is not recorded (bad input): the HTTP status that says why, and the reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@contextmanager
def _no_run_writing(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock (``RUN/run.lock``, the one ``verdictlab run`` and ``verdictlab perturb``
    hold while they write) for an edit, or refuse it (409) while a run holds it: the run judges the items it
    read at its start, so an edit now would leave its judgments describing another text."""
    path = run_dir / "run.lock"
    with path.open("a+") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no advisory lock
            yield
            return
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise CurationRefused(409, f"a verdictlab run is writing {run_dir}: edit the case once it has "
                                       "finished (accepting or rejecting it can wait too, or go ahead)") from None
        yield


def record_decision(run_dir: str | Path, dataset: str, item_id: str, action: str, *, by: str,
                    response: str | None = None, at: float | None = None) -> PointItem:
    """Record one decision on a generated case of the run in ``run_dir`` (opened for writing for this
    decision only): the case's ``meta.perturbation`` (:func:`verdictlab.core.curation.curate`) and an
    entry of the run's audit trail, the meta list ``curation`` (the decision, who, when, the dataset, the
    case, its kind, its status before).  Returns the curated case.  :class:`CurationRefused` when the case
    is not there (404), the decision cannot be recorded (400), or it would edit a case the run already
    judged, or a run is writing the directory (409: its judgments would describe another text)."""
    run_dir = Path(run_dir)
    with _no_run_writing(run_dir) if action == "edit" else nullcontext(), RunStore(run_dir, create=False) as store:
        item = store.item_record(dataset, item_id)
        if item is None:
            raise CurationRefused(404, f"no case {item_id!r} in dataset {dataset!r}")
        if not isinstance(item, PointItem):
            raise CurationRefused(400, f"{dataset}/{item_id} is a pair, not a generated case")
        if action == "edit" and store.item_judgment_count(dataset, item_id):
            raise CurationRefused(409, f"case {dataset}/{item_id} was already judged: an edit would leave its "
                                       "judgments describing another text; reject it instead, or edit cases "
                                       "before the grader runs")
        before = perturbation_of(item)
        try:
            new = curate(item, action, by=by, at=time.time() if at is None else at, response=response)
        except CurationError as exc:
            raise CurationRefused(400, str(exc)) from None
        event = {**curation_events(new)[-1].model_dump(mode="json"), "dataset": dataset, "item_id": item_id,
                 "kind": None if before is None else before.kind,
                 "status_before": None if before is None else before.status.value}
        if action == "edit":
            event["chars"] = len(new.response)
        store.record_curation(new, event)
    return new
