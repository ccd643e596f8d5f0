"""HaluEval general (Li et al. 2023; MIT): ChatGPT's responses to user queries, each judged by people for
hallucination -- a binary grader's test set (``rubric`` with a no-hallucination criterion, PASS = no
hallucination), fetched by name (``verdictlab datasets fetch halueval``).

Source: the release's ``data/general_data.json`` (JSON Lines: ``ID``, ``user_query``, ``chatgpt_response``,
``hallucination`` ``"yes"`` / ``"no"``, ``hallucination_spans``); ``path`` names the file, or a folder
holding it (as ``general_data.json`` or ``data/general_data.json``).  Each record is a
:class:`~verdictlab.core.items.PointItem`: question = the user's query, response = ChatGPT's response,
label ``FAIL`` when the annotators said it hallucinates (``"yes"``) and ``PASS`` otherwise; item_id = the
record's ``ID``, or ``row<N>`` (its line) when the ID is empty or shared with another record -- the pinned
file numbers its records by line, except line 1975 (no ID) and lines 2059 and 2159 (``ID`` is the text
``"ID"``), so no record is dropped and none merged; ``meta`` keeps the row, the ID and the annotated spans.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PointItem
from ._common import (
    Rows,
    check_no_options,
    check_unique,
    finish,
    json_lines,
    read_records,
    read_text,
    require_path,
)
from .registry import DatasetLoad

FILE = "general_data.json"
LABELS = {"yes": "FAIL", "no": "PASS"}


def _file(p: Path) -> Path:
    if not p.is_dir():
        return p
    for candidate in (p / FILE, p / "data" / FILE):
        if candidate.is_file():
            return candidate
    raise ItemError(f"file not found (HaluEval keeps the general set in {FILE} or data/{FILE})", path=str(p))


def _rows(source: Path) -> Rows:
    """The release's JSON Lines in a ``.json`` file (one record a line, even when there is only one); a JSON
    list of the records reads the same."""
    text = read_text(source)
    if text.lstrip().startswith("{"):
        return json_lines(text, path=str(source))
    return read_records(source)


def _record(rec: dict[str, Any], *, src: str, row: int) -> tuple[str, str, str, str, list[str]]:
    rid = rec.get("ID")
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        raise ItemError(f"must be text or an integer, got {rid!r}", path=src, row=row, field="ID")
    for field in ("user_query", "chatgpt_response"):
        if not isinstance(rec.get(field), str):
            raise ItemError("must be a string", path=src, row=row, field=field)
    verdict = rec.get("hallucination")
    if not isinstance(verdict, str) or verdict.strip().lower() not in LABELS:
        raise ItemError(f"must be 'yes' or 'no', got {verdict!r}", path=src, row=row, field="hallucination")
    spans = rec.get("hallucination_spans", [])
    if not isinstance(spans, list) or not all(isinstance(s, str) for s in spans):
        raise ItemError("must be a list of strings", path=src, row=row, field="hallucination_spans")
    return str(rid), rec["user_query"], rec["chatgpt_response"], LABELS[verdict.strip().lower()], spans


def load_halueval(path: str | None = None, *, dataset: str | None = None, limit: int | None = None,
                  **options: Any) -> DatasetLoad:
    check_no_options("halueval", options)
    source = _file(require_path(path, "halueval"))
    src, name = str(source), dataset or "halueval"
    records = [(row, _record(rec, src=src, row=row)) for row, rec in _rows(source)]
    counts = Counter(r[0] for _, r in records)
    items: list[PointItem] = []
    rows: list[int] = []
    for row, (rid, query, response, label, spans) in records:
        items.append(PointItem(
            item_id=rid if rid.strip() and counts[rid] == 1 else f"row{row}", dataset=name, question=query, response=response,
            label=label, meta={"source": "halueval", "row": row, "id": rid, "hallucination_spans": spans}))
        rows.append(row)
    check_unique(items, path=src, rows=rows)
    notes = ["pointwise items; label FAIL = annotators said the response hallucinates"]
    renamed = sum(1 for _, r in records if not r[0].strip() or counts[r[0]] > 1)
    if renamed:
        notes.append(f"{renamed} records have an empty or shared ID; their item_id is row<N> (their line)")
    return finish(name, list(items), source=src, limit=limit, notes=notes)
