"""What the viewer's pages show, as plain values for the templates: a pair's cells and judgments with
their audit trail, the links between pages, and the display formats.

Texts from the data are passed through as they are (the templates escape them); error texts, parse
details and raw outputs first go through the secret scrubber.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from ..core.redact import redact_text
from ..core.viewer_links import cell_anchor, pair_url
from ..core.vocab import DECISIVE, swap
from .index import Filters, PairIndex, PairRow

__all__ = ["MAX_RAW_CHARS", "CellView", "JudgmentView", "cell_anchor", "iter_pair_cells", "pair_cells", "pair_url",
           "pairs_url"]

#: raw outputs longer than this are cut on the page (and say so)
MAX_RAW_CHARS = 20_000


@dataclass(frozen=True, slots=True)
class JudgmentView:
    """One judgment as a pair page shows it (numbers formatted, secrets scrubbed)."""

    trial_id: str
    order: str
    rep: int
    verdict: str | None
    shown_verdict: str | None
    parse_status: str
    parse_detail: str | None
    fallback_rule: str | None
    p_a: str
    raw_output: str
    raw_cut: int
    attempts: str
    latency: str
    tokens: str
    cost: str
    cache_hit: bool
    written: str
    scores: str | None
    error: str | None
    prompt_hash: str
    retries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CellView:
    """One cell of a pair page: the cell, its outcomes for the pair (``row``) and its judgments."""

    judge: str
    protocol: str
    temperature: float
    decoding: str
    step: str
    anchor: str
    row: PairRow | None
    judgments: tuple[JudgmentView, ...]


def pair_cells(index: PairIndex, judgments: Sequence[Mapping[str, Any]], dataset: str, item_id: str) -> list[CellView]:
    """The pair's judgments (full store rows) grouped by cell and step, sorted; in each cell by order
    and repetition; with the pair's outcomes in that cell from the index."""
    return list(iter_pair_cells(index, lambda: judgments, dataset, item_id))


def iter_pair_cells(index: PairIndex, fetch: Callable[[], Sequence[Mapping[str, Any]]], dataset: str,
                    item_id: str) -> Iterator[CellView]:
    """:func:`pair_cells`, lazily: ``fetch()`` (the pair's rows from the store) is called on the first
    step, so a page can send its top before the judgments are read."""
    rows = {(r.judge, r.protocol, r.temperature, r.decoding, r.step): r for r in index.rows_of(dataset, item_id)}
    groups: dict[tuple[str, str, float, str, str], list[Mapping[str, Any]]] = {}
    for rec in fetch():
        key = (str(rec["judge"]), str(rec["protocol"]), float(rec["temperature"]),
               str(rec["decoding"]), str(rec.get("step") or ""))
        groups.setdefault(key, []).append(rec)
    for key in sorted(groups):
        recs = sorted(groups[key], key=lambda r: (str(r["order"]), int(r["rep"] or 0)))
        yield CellView(*key, anchor=cell_anchor(*key), row=rows.get(key),
                       judgments=tuple(judgment_view(r, index.retries.get(str(r["trial_id"]), ())) for r in recs))


def judgment_view(rec: Mapping[str, Any], retries: Sequence[Mapping[str, Any]] = ()) -> JudgmentView:
    """A stored judgment row (and its failed attempts) as the page shows it."""
    raw = redact_text(rec.get("raw_output") or "")
    verdict = rec.get("verdict")
    return JudgmentView(
        trial_id=str(rec["trial_id"]), order=str(rec["order"]), rep=int(rec["rep"] or 0), verdict=verdict,
        shown_verdict=swap(verdict, str(rec["order"])) if verdict in DECISIVE else verdict,
        parse_status=str(rec.get("parse_status") or ""), parse_detail=_scrubbed(rec.get("parse_detail")),
        fallback_rule=rec.get("fallback_rule"), p_a=number(rec.get("p_a")),
        raw_output=raw[:MAX_RAW_CHARS], raw_cut=max(0, len(raw) - MAX_RAW_CHARS),
        attempts=_count(rec.get("attempts")), latency=f"{number(rec.get('latency_s'))} s",
        tokens=f"{_count(rec.get('tokens_in'))} in / {_count(rec.get('tokens_out'))} out",
        cost="–" if rec.get("cost_usd") is None else f"${float(rec['cost_usd']):.6f}",
        cache_hit=bool(rec.get("cache_hit")), written=when(rec.get("created_at")), scores=_scores(rec.get("scores")),
        error=_scrubbed(rec.get("error")), prompt_hash=str(rec.get("prompt_hash") or "–"),
        retries=tuple(_retry(a) for a in retries))


def _retry(a: Mapping[str, Any]) -> str:
    kind = f" ({a['error_kind']})" if a.get("error_kind") else ""
    error = f": {redact_text(a['error'])}" if a.get("error") else ""
    return f"attempt {a.get('attempt')}: {a.get('outcome')}{kind}{error}"


def _scrubbed(text: Any) -> str | None:
    return redact_text(text) if text not in (None, "") else None


def _count(x: Any) -> str:
    return "–" if x is None else str(int(x))


def _scores(value: Any) -> str | None:
    if value in (None, ""):
        return None
    try:
        return json.dumps(json.loads(value), ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(value)


def pairs_url(filters: Filters | None = None, **change: Any) -> str:
    """The list page of ``filters`` with ``change`` applied."""
    params = (filters or Filters()).query(**change)
    return "/pairs" + (f"?{urlencode(params)}" if params else "")


def when(ts: Any) -> str:
    """A unix time as ``YYYY-MM-DD HH:MM:SS UTC``."""
    if ts is None:
        return "–"
    try:
        return _dt.datetime.fromtimestamp(float(ts), tz=_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError, OverflowError, OSError):
        return str(ts)


def number(x: Any, digits: int = 3) -> str:
    """``x`` to ``digits`` significant digits; ``–`` when missing."""
    if x is None:
        return "–"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    return "–" if math.isnan(v) else f"{v:.{digits}g}"
