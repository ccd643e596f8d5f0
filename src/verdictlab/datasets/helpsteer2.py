"""HelpSteer2 (Wang et al. 2024, NVIDIA; CC-BY-4.0): responses rated by human annotators on five
attributes, each 0-4 -- an ordinal grader's test set (``pointwise@0-4``).

Source: the release's ``train.jsonl.gz`` / ``validation.jsonl.gz`` (or the same records as ``.jsonl``,
``.json`` or ``.parquet``).  One record per response: ``prompt``, ``response`` and the five integer
ratings ``helpfulness``, ``correctness``, ``coherence``, ``complexity``, ``verbosity``.  Each record is a
:class:`~verdictlab.core.items.PointItem`: question = the prompt, response = the response, label = the
chosen ``attribute`` (default ``helpfulness``), scale ``(0, 1, 2, 3, 4)``, the other ratings in ``meta``.
The release has no ids (each prompt has two responses), so the item id is derived from the content
(:func:`~verdictlab.core.items.derived_item_id` of prompt and response): stable whatever the row order.
The project does not ship the data: fetch it (its licence asks for attribution to NVIDIA's release).
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PointItem, derived_item_id
from ._common import check_no_options, check_unique, finish, json_lines, read_records, require_path
from .registry import DatasetLoad

ATTRIBUTES: tuple[str, ...] = ("helpfulness", "correctness", "coherence", "complexity", "verbosity")
SCALE: tuple[int, ...] = (0, 1, 2, 3, 4)


def _rows(p: Path) -> list[tuple[int, dict[str, Any]]]:
    if p.suffix.lower() == ".gz":
        if not p.is_file():
            raise ItemError("file not found", path=str(p))
        try:
            text = gzip.decompress(p.read_bytes()).decode("utf-8-sig")
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise ItemError(f"not a gzip-compressed UTF-8 JSON Lines file ({type(exc).__name__})", path=str(p)) from None
        return json_lines(text, path=str(p))
    if p.suffix.lower() == ".parquet":
        from .tabular import read_table_rows

        return read_table_rows(p)
    return read_records(p)


def _rating(rec: dict[str, Any], field: str, *, src: str, row: int) -> int:
    v = rec.get(field)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v not in SCALE:
        raise ItemError(f"must be an integer rating 0-4, got {v!r}", path=src, row=row, field=field)
    return v


def _text(rec: dict[str, Any], field: str, *, src: str, row: int) -> str:
    v = rec.get(field)
    if not isinstance(v, str):
        raise ItemError(f"must be a string, got {type(v).__name__}", path=src, row=row, field=field)
    return v


def load_helpsteer2(path: str | None = None, *, attribute: str = "helpfulness", dataset: str | None = None,
                    limit: int | None = None, **options: Any) -> DatasetLoad:
    check_no_options("helpsteer2", options)
    if attribute not in ATTRIBUTES:
        raise ItemError(f"attribute must be one of {', '.join(ATTRIBUTES)}, got {attribute!r}", field="attribute")
    p = require_path(path, "helpsteer2")
    src = str(p)
    name = dataset or "helpsteer2"
    items: list[PointItem] = []
    rows: list[int] = []
    for row, rec in _rows(p):
        prompt, response = _text(rec, "prompt", src=src, row=row), _text(rec, "response", src=src, row=row)
        ratings = {a: _rating(rec, a, src=src, row=row) for a in ATTRIBUTES}
        items.append(PointItem(item_id=derived_item_id(prompt, response, ""), dataset=name, question=prompt,
                               response=response, label=ratings[attribute], scale=SCALE,
                               meta={"source": "helpsteer2", "row": row, "ratings": ratings}))
        rows.append(row)
    check_unique(items, path=src, rows=rows)
    return finish(name, list(items), source=src, limit=limit,
                  notes=[f"pointwise items; label = the human {attribute} rating on the scale 0-4"])
