"""Judge's Verdict (Han et al. 2025): pointwise answers graded by human annotators against a reference
(the evaluator-replacement audit used a 200-item TechQA slice with three-level labels).

This loader yields :class:`PointItem` s (one response each, graded label), not pairs.

Source: a JSON / JSON Lines / Parquet file (or a hub id).  Field names vary between releases, so
each field is looked up under a few names (first match wins; ``field_map`` renames explicitly):

- ``item_id``: ``item_id``, ``id``, ``item_name``, ``uid`` (else the 0-based record position)
- ``question``: ``question``, ``query``, ``prompt``
- ``response``: ``response``, ``answer``, ``gen_answer``, ``generated_answer``, ``model_answer``
- ``reference``: ``reference``, ``gt_answer``, ``ground_truth``, ``reference_answer`` (optional)
- ``label``: ``label``, ``score``, ``human_score``; or a list of annotator grades under
  ``annotations`` / ``human_scores`` / ``scores`` (numbers or objects with a ``score``), whose strict
  majority is the label (``None`` with ``meta["no_majority"]`` when there is none)
- ``category``: ``category``, ``dataset_name``, ``source``, ``subset``
- ``meta`` (optional): an object kept in the item's meta as written; a perturbed copy of another item
  carries ``meta.perturbation`` (the data contract in docs/architecture.md), checked here

``scale`` lists the allowed grades (e.g. ``[0, 1, 2]``); without it the scale is the sorted set of
grades seen.  A grade outside the scale is an error naming file, row and field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..core.items import PERTURBATION_KEY, ItemError, Perturbation, PointItem
from ._common import check_no_options, check_unique, finish, first_present, majority
from .hub import source_rows
from .registry import DatasetLoad

ALIASES: dict[str, tuple[str, ...]] = {
    "item_id": ("item_id", "id", "item_name", "uid"),
    "question": ("question", "query", "prompt"),
    "response": ("response", "answer", "gen_answer", "generated_answer", "model_answer"),
    "reference": ("reference", "gt_answer", "ground_truth", "reference_answer"),
    "label": ("label", "score", "human_score"),
    "votes": ("annotations", "human_scores", "scores"),
    "category": ("category", "dataset_name", "source", "subset"),
}


def _grade(value: Any, *, path: str, row: int, field: str) -> float | int | str:
    if isinstance(value, bool):
        raise ItemError(f"grade must be a number or a label, got {value!r}", path=path, row=row, field=field)
    if isinstance(value, (int, float, str)):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if isinstance(value, dict) and "score" in value:
        return _grade(value["score"], path=path, row=row, field=field)
    raise ItemError(f"grade must be a number or a label, got {value!r}", path=path, row=row, field=field)


def _row_text(rec: dict[str, Any], pick: Callable[[str], str | None], *, src: str, row: int,
              index: int, field_map: dict[str, str]) -> dict[str, Any]:
    """question, response, reference, item_id and category of one row, each type-checked."""
    out: dict[str, Any] = {}
    for key in ("question", "response"):
        f = pick(key)
        if f is None:
            raise ItemError(f"missing required field (looked for {list(ALIASES[key])})", path=src,
                            row=row, field=field_map.get(key, key))
        if not isinstance(rec[f], str):
            raise ItemError(f"must be a string, got {type(rec[f]).__name__}", path=src, row=row, field=f)
        out[key] = rec[f]
    f = pick("reference")
    out["reference"] = rec[f] if f is not None else None
    if out["reference"] is not None and not isinstance(out["reference"], str):
        raise ItemError("must be a string", path=src, row=row, field=f)
    f = pick("item_id")
    out["item_id"] = str(rec[f]) if f is not None else str(index)
    f = pick("category")
    out["category"] = str(rec[f]) if f is not None else None
    return out


def _row_label(rec: dict[str, Any], pick: Callable[[str], str | None], *, src: str, row: int,
               meta: dict[str, Any]) -> float | int | str | None:
    """The row's grade: its label field, else the majority of its annotator votes (recorded in meta)."""
    f_label = pick("label")
    f_votes = pick("votes")
    if f_label is not None:
        return _grade(rec[f_label], path=src, row=row, field=f_label)
    if f_votes is None:
        raise ItemError(f"no grade found (looked for {list(ALIASES['label'] + ALIASES['votes'])})",
                        path=src, row=row, field="label")
    raw = rec[f_votes]
    if not isinstance(raw, list) or not raw:
        raise ItemError("must be a non-empty list of annotator grades", path=src, row=row,
                        field=f_votes)
    votes = [_grade(v, path=src, row=row, field=f_votes) for v in raw]
    meta["votes"] = votes
    label = majority(votes)
    if label is None:
        meta["no_majority"] = True
    return label


def _row_meta(rec: dict[str, Any], *, src: str, row: int) -> dict[str, Any]:
    """The row's own ``meta`` object, kept as written; a ``perturbation`` in it must follow the data
    contract of a perturbed item (:class:`verdictlab.core.items.Perturbation`)."""
    raw = rec.get("meta")
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ItemError(f"must be an object, got {type(raw).__name__}", path=src, row=row, field="meta")
    if PERTURBATION_KEY in raw:
        try:
            Perturbation.model_validate(raw[PERTURBATION_KEY])
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err.get("loc", ()))
            raise ItemError(err.get("msg", str(exc)), path=src, row=row,
                            field=f"meta.{PERTURBATION_KEY}" + (f".{where}" if where else "")) from None
    return dict(raw)


def _scale(staged: list[tuple[int, dict[str, Any]]], scale: list[Any] | None, *, src: str,
           field_map: dict[str, str]) -> tuple[Any, ...]:
    """The given scale (every grade must be on it), else the grades seen, numbers first."""
    if scale is None:
        return tuple(sorted({o["label"] for _, o in staged if o["label"] is not None},
                            key=lambda g: (1, 0.0, g) if isinstance(g, str) else (0, float(g), "")))
    scale_t = tuple(scale)
    for row, o in staged:
        if o["label"] is not None and o["label"] not in scale_t:
            raise ItemError(f"grade {o['label']!r} is not on the scale {list(scale_t)}", path=src,
                            row=row, field=field_map.get("label", "label"))
    return scale_t


def load_judges_verdict(path: str | None = None, *, hub: str | None = None, split: str = "train",
                        scale: list[Any] | None = None, field_map: dict[str, str] | None = None,
                        dataset: str | None = None, limit: int | None = None,
                        **options: Any) -> DatasetLoad:
    check_no_options("judges-verdict", options)
    src, rows = source_rows(path, hub, loader="judges-verdict", split=split)
    name = dataset or "judges-verdict"
    field_map = dict(field_map or {})
    staged: list[tuple[int, dict[str, Any]]] = []
    for index, (row, rec) in enumerate(rows):
        def pick(key: str, rec: dict[str, Any] = rec) -> str | None:
            if key in field_map:
                return field_map[key] if field_map[key] in rec else None
            return first_present(rec, ALIASES[key])

        out = _row_text(rec, pick, src=src, row=row, index=index, field_map=field_map)
        meta: dict[str, Any] = {"source": "judges-verdict", "row": row}
        meta.update(_row_meta(rec, src=src, row=row))
        out["label"] = _row_label(rec, pick, src=src, row=row, meta=meta)
        out["meta"] = meta
        staged.append((row, out))

    scale_t = _scale(staged, scale, src=src, field_map=field_map)
    items: list[PointItem] = []
    for row, o in staged:
        try:
            items.append(PointItem(dataset=name, scale=scale_t, **o))
        except Exception as exc:  # pydantic validation: name the row
            raise ItemError(str(exc).splitlines()[0], path=src, row=row) from None
    check_unique(items, path=src, rows=[r for r, _ in staged])
    notes = [f"pointwise items; scale {list(scale_t)}" + (" (inferred)" if scale is None else "")]
    return finish(name, list(items), source=src, notes=notes, limit=limit)
