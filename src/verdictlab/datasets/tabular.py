"""Generic CSV and Parquet loaders (one pair per row), with a field mapping.

Columns: ``item_id, question, response_a, response_b`` (required), ``label`` (``A``, ``B``, ``tie`` or
empty), optional ``reference`` and ``category``; any other column goes into ``meta``.
``field_map={"question": "prompt", "response_a": "chosen", ...}`` names the source column for each
of these fields.  CSV rows are numbered by file line (the header is line 1); Parquet rows from 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..items import ItemError, PairItem, make_pair_item
from ._common import check_no_options, check_unique, finish, require_path
from .registry import DatasetLoad

REQUIRED = ("item_id", "question", "response_a", "response_b")
ITEM_FIELDS = {"item_id", "dataset", "question", "response_a", "response_b", "label", "reference",
               "category", "meta"}


def to_python(value: Any) -> Any:
    """numpy / pandas scalars and arrays (as Parquet gives them) -> plain Python; NaN -> None."""
    if isinstance(value, np.ndarray):
        return [to_python(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [to_python(v) for v in value]
    if isinstance(value, dict):
        return {k: to_python(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        value = value.item()
    if value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def read_table_rows(path: str | Path) -> list[tuple[int, dict[str, Any]]]:
    """Rows of a CSV or Parquet file as ``(row, record)``; CSV cells are text, empty cells None."""
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        if suffix == ".parquet":
            df = pd.read_parquet(p)
            first = 1
        elif suffix in (".csv", ".tsv"):
            df = pd.read_csv(p, dtype=str, keep_default_na=False, sep="\t" if suffix == ".tsv" else ",")
            df = df.replace({"": None})
            first = 2
        else:
            raise ItemError("expected a .csv, .tsv or .parquet file", path=str(p))
    except ItemError:
        raise
    except Exception as exc:  # parser errors from pandas / pyarrow
        raise ItemError(f"cannot read table ({type(exc).__name__}: {exc})", path=str(p)) from None
    cols = list(df.columns)
    rows = []
    for i, values in enumerate(df.itertuples(index=False, name=None)):
        rows.append((i + first, {c: to_python(v) for c, v in zip(cols, values, strict=True)}))
    return rows


def rows_to_pair_items(rows: list[tuple[int, dict[str, Any]]], *, path: str, dataset: str,
                       field_map: dict[str, str] | None = None) -> list[PairItem]:
    """Generic records -> :class:`PairItem` s (shared by the CSV and Parquet loaders)."""
    inverse = {src: dst for dst, src in (field_map or {}).items()}
    items: list[PairItem] = []
    for row, raw in rows:
        rec = {inverse.get(k, k): v for k, v in raw.items()}
        for f in REQUIRED:
            if rec.get(f) is None:
                src_name = (field_map or {}).get(f, f)
                raise ItemError("missing required field", path=path, row=row, field=src_name)
        for f in ("question", "response_a", "response_b"):
            if not isinstance(rec[f], str):
                raise ItemError(f"must be a string, got {type(rec[f]).__name__}", path=path, row=row,
                                field=(field_map or {}).get(f, f))
        if isinstance(rec.get("meta"), str):
            try:
                rec["meta"] = json.loads(rec["meta"])
            except json.JSONDecodeError:
                raise ItemError("meta must be a JSON object", path=path, row=row, field="meta") from None
        rec.setdefault("label", None)
        rec["dataset"] = dataset
        extra = {k: rec.pop(k) for k in list(rec) if k not in ITEM_FIELDS}
        if extra:
            rec["meta"] = {**(rec.get("meta") or {}), **extra}
        if rec.get("meta") is None:
            rec.pop("meta", None)
        items.append(make_pair_item(rec, path=path, row=row))
    check_unique(items, path=path, rows=[r for r, _ in rows])
    return items


def _load_table(kind: str, path: str | None, *, dataset: str | None,
                field_map: dict[str, str] | None, limit: int | None,
                options: dict[str, Any]) -> DatasetLoad:
    check_no_options(kind, options)
    p = require_path(path, kind)
    rows = read_table_rows(p)
    if not rows:
        raise ItemError("no records", path=str(p))
    name = dataset or p.stem
    items = rows_to_pair_items(rows, path=str(p), dataset=name, field_map=field_map)
    return finish(name, list(items), source=str(p), limit=limit)


def load_csv(path: str | None, *, dataset: str | None = None, field_map: dict[str, str] | None = None,
             limit: int | None = None, **options: Any) -> DatasetLoad:
    return _load_table("csv", path, dataset=dataset, field_map=field_map, limit=limit, options=options)


def load_parquet(path: str | None, *, dataset: str | None = None,
                 field_map: dict[str, str] | None = None, limit: int | None = None,
                 **options: Any) -> DatasetLoad:
    return _load_table("parquet", path, dataset=dataset, field_map=field_map, limit=limit,
                       options=options)
