"""Generic JSON Lines loader: one pair per line.

Fields: ``item_id, question, response_a, response_b, label`` (``A``, ``B``, ``tie`` or null) and
optional ``reference``, ``category``, ``meta``.  ``field_map`` renames source fields to these names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, Problems, make_pair_item, pair_item_problems
from ._common import check_no_options, finish, json_lines, missing_field, read_text
from .registry import DatasetLoad

REQUIRED = ("item_id", "question", "response_a", "response_b")
ALLOWED = {"item_id", "dataset", "question", "response_a", "response_b", "label", "reference", "category", "meta"}


def load_jsonl(path: str | None, *, dataset: str | None = None,
               field_map: dict[str, str] | None = None, limit: int | None = None,
               **options: Any) -> DatasetLoad:
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
    problems = Problems(str(p))      # every problem of the file at once
    # the package's one JSON Lines reader: records split on "\n" only (U+2028 inside a string is no
    # line end), a BOM dropped, errors naming the line
    for lineno, raw in json_lines(read_text(p), path=str(p), problems=problems):
        rec = {inverse.get(k, k): v for k, v in raw.items()}
        item = _item(rec, name, path=str(p), row=lineno, field_map=field_map or {}, problems=problems)
        if item is None:
            continue
        if item.item_id in seen:
            problems.add(ItemError(f"duplicate item_id {item.item_id!r} (first on row {seen[item.item_id]})",
                                   path=str(p), row=lineno, field="item_id"))
            continue
        seen[item.item_id] = lineno
        items.append(item)
    problems.raise_if_any()
    if not items:
        raise ItemError("no records", path=str(p))
    return finish(name, list(items), source=str(p), limit=limit)


def _item(rec: dict[str, Any], name: str, *, path: str, row: int, field_map: dict[str, str],
          problems: Problems) -> PairItem | None:
    """One record as a pair item, or None with its problems recorded."""
    known: set[str] = set()
    for f in REQUIRED:
        if f not in rec:
            problems.add(missing_field(f, path=path, row=row, source=field_map.get(f, f)))
            known.add(f)
    for f in ("question", "response_a", "response_b"):
        if f in rec and not isinstance(rec[f], str):
            problems.add(ItemError(f"must be a string, got {type(rec[f]).__name__}", path=path, row=row, field=f))
            known.add(f)
    if known:        # the record's other fields are checked too: every problem of the row at once
        for exc in pair_item_problems({k: v for k, v in rec.items() if k in ALLOWED}, path=path, row=row,
                                      known=known, dataset=name):
            problems.add(exc)
        return None
    if "label" not in rec:
        rec["label"] = None
    rec.setdefault("dataset", name)
    extra = {k: rec.pop(k) for k in list(rec) if k not in ALLOWED}
    if extra:
        rec["meta"] = {**(rec.get("meta") or {}), **extra}
    try:
        return make_pair_item(rec, path=path, row=row)
    except ItemError as exc:
        problems.add(exc)
        return None
