"""The ``perturbations`` loader: a perturbation suite as ``verdictlab perturb`` writes it -- JSON Lines,
one point item per line exactly as verdictlab holds it (``item_id``, ``dataset``, ``question``,
``response``, ``label``, ``scale``, ``reference``, ``category``, ``meta``, and ``transcript`` for an
agent's run), the sources and their cases (``meta.perturbation``, the data contract in
docs/architecture.md).

Read back exactly as written, so a run over the file judges the very items the suite holds (and a run
whose store holds the suite's curated cases keeps the person's decisions: core/curation.py).  Checked on
load, every problem named by line and field: each line a point item, one dataset per file (``dataset``
renames it), ids unique, each case's ``meta.perturbation`` well formed and its ``source_id`` an item of
the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core.items import ItemError, PointItem, Problems, perturbation_of
from ._common import check_no_options, finish
from .registry import DatasetLoad

__all__ = ["load_perturbations", "suite_lines"]


def suite_lines(items: Iterable[PointItem]) -> Iterator[str]:
    """The lines of a suite file (what :func:`load_perturbations` reads back), one item each."""
    for it in items:
        yield json.dumps(it.model_dump(mode="json"), ensure_ascii=False) + "\n"


def _item(line: str, *, src: str, row: int) -> PointItem:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ItemError(f"not a JSON object ({exc.msg})", path=src, row=row) from None
    if not isinstance(rec, dict):
        raise ItemError(f"must be a JSON object, got {type(rec).__name__}", path=src, row=row)
    try:
        item = PointItem.model_validate(rec)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or None
        raise ItemError(err.get("msg", str(exc)), path=src, row=row, field=field) from None
    try:
        perturbation_of(item)
    except ItemError as exc:
        raise ItemError(exc.detail, path=src, row=row, field=exc.field) from None
    return item


def _check_sources(items: list[tuple[int, PointItem]], src: str, problems: Problems) -> None:
    ids = {it.item_id for _, it in items}
    for row, it in items:
        p = perturbation_of(it)
        if p is not None and p.source_id not in ids:
            problems.add(ItemError(f"its source item {p.source_id!r} is not in this file", path=src, row=row,
                                   field="meta.perturbation.source_id"))


def load_perturbations(path: str | None = None, *, dataset: str | None = None, limit: int | None = None,
                       **options: Any) -> DatasetLoad:
    check_no_options("perturbations", options)
    if path is None:
        raise ItemError("the perturbations loader reads a suite file: give its path", field="path")
    src = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ItemError(f"cannot read the file ({exc.strerror})", path=src) from None
    problems = Problems(src)
    staged: list[tuple[int, PointItem]] = []
    seen: dict[str, int] = {}
    for row, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            it = _item(line, src=src, row=row)
        except ItemError as exc:
            problems.add(exc)
            continue
        if it.item_id in seen:
            problems.add(ItemError(f"duplicate item_id {it.item_id!r} (first on row {seen[it.item_id]})", path=src,
                                   row=row, field="item_id"))
            continue
        seen[it.item_id] = row
        staged.append((row, it))
    _check_sources(staged, src, problems)
    names = sorted({it.dataset for _, it in staged})
    if len(names) > 1:
        problems.add(ItemError(f"one dataset per suite file, found {', '.join(names)}", path=src, field="dataset"))
    problems.raise_if_any()
    items = [it for _, it in staged]
    name = dataset or (names[0] if names else "perturbations")
    if dataset:
        items = [it.model_copy(update={"dataset": dataset}) for it in items]
    n_cases = sum(perturbation_of(it) is not None for it in items)
    notes = [f"perturbation suite: {len(items) - n_cases} source item(s), {n_cases} case(s)"]
    return finish(name, list(items), source=src, notes=notes, limit=limit)
