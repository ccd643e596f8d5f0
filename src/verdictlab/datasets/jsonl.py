"""Generic JSON Lines loader: one pair per line.

Fields: ``item_id, question, response_a, response_b, label`` (``A``, ``B``, ``tie`` or null) and
optional ``reference``, ``category``, ``meta``.  ``field_map`` renames source fields to these names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..items import ItemError, make_pair_item
from .registry import DatasetLoad

REQUIRED = ("item_id", "question", "response_a", "response_b")


def load_jsonl(path: str | None, *, dataset: str | None = None,
               field_map: dict[str, str] | None = None, limit: int | None = None,
               **options: Any) -> DatasetLoad:
    from ._common import check_no_options, finish, json_lines, read_text

    check_no_options("jsonl", options)
    if not path:
        raise ItemError("the jsonl dataset needs a 'path'", field="path")
    p = Path(path)
    if not p.is_file():
        raise ItemError("file not found", path=str(p))
    name = dataset or p.stem
    inverse = {src: dst for dst, src in (field_map or {}).items()}
    items = []
    seen: dict[str, int] = {}
    # the package's one JSON Lines reader: records split on "\n" only (U+2028 inside a string is no
    # line end), a BOM dropped, errors naming the line
    for lineno, raw in json_lines(read_text(p), path=str(p)):
        rec = {inverse.get(k, k): v for k, v in raw.items()}
        for f in REQUIRED:
            if f not in rec:
                raise ItemError("missing required field", path=str(p), row=lineno, field=f)
        for f in ("question", "response_a", "response_b"):
            if not isinstance(rec[f], str):
                raise ItemError(f"must be a string, got {type(rec[f]).__name__}",
                                path=str(p), row=lineno, field=f)
        if "label" not in rec:
            rec["label"] = None
        rec.setdefault("dataset", name)
        allowed = {"item_id", "dataset", "question", "response_a", "response_b", "label",
                   "reference", "category", "meta"}
        extra = {k: rec.pop(k) for k in list(rec) if k not in allowed}
        if extra:
            rec["meta"] = {**(rec.get("meta") or {}), **extra}
        item = make_pair_item(rec, path=str(p), row=lineno)
        if item.item_id in seen:
            raise ItemError(f"duplicate item_id {item.item_id!r} (first on row {seen[item.item_id]})",
                            path=str(p), row=lineno, field="item_id")
        seen[item.item_id] = lineno
        items.append(item)
    if not items:
        raise ItemError("no records", path=str(p))
    return finish(name, list(items), source=str(p), limit=limit)
