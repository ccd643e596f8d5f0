"""Generic CSV and Parquet loaders (one pair per row), with a field mapping.

Columns: ``item_id, question, response_a, response_b`` (required), ``label`` (``A``, ``B``, ``tie`` or
empty), optional ``reference`` and ``category``; any other column goes into ``meta``.
``field_map={"question": "prompt", "response_a": "chosen", ...}`` names the source column for each
of these fields.  CSV rows are numbered by the file line a record starts on (the header is line 1;
a quoted cell may span lines); Parquet rows from 1.

CSV is read with the standard :mod:`csv` module, strictly: a row with more or fewer fields than the
header, a duplicate or unnamed header column, a stray quote or bytes that are not UTF-8 are errors
naming the file line -- never shifted columns.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.guards import GuardError, check_depth, loads_json, nesting_depth
from ..core.items import ItemError, PairItem, Problems, make_pair_item, pair_item_problems
from ._common import check_no_options, check_unique, finish, missing_field, require_path
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


def _decode(data: bytes, p: Path) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ItemError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} cannot be decoded)", path=str(p),
                        row=line) from None


def _csv_header(header: list[str], p: Path, line: int) -> list[str]:
    seen: dict[str, int] = {}
    for k, name in enumerate(header, start=1):
        if not name.strip():
            raise ItemError(f"header column {k} has no name", path=str(p), row=line)
        if name in seen:
            raise ItemError(f"header names column {name!r} twice (columns {seen[name]} and {k})",
                            path=str(p), row=line, field=name)
        seen[name] = k
    return header


def read_csv_rows(path: str | Path, *, sep: str = ",",
                  problems: Problems | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Rows of a CSV (or, with ``sep="\\t"``, TSV) file as ``(line, record)``: cells are text, empty
    cells None, blank lines skipped; ``line`` is the file line the record starts on."""
    p = Path(path)
    if not p.is_file():                  # a folder, a FIFO or a device would hang or never end
        raise ItemError("not a regular file", path=str(p))
    text = _decode(p.read_bytes(), p)
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))   # a long response is one cell
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True)
    header: list[str] | None = None
    header_line = 1
    rows: list[tuple[int, dict[str, Any]]] = []
    own = problems is None               # every row with a wrong number of fields at once
    problems = Problems(str(p)) if problems is None else problems
    start = 1
    try:
        for fields in reader:
            line, start = start, reader.line_num + 1
            if not fields:
                continue
            if header is None:
                header, header_line = _csv_header(fields, p, line), line
                continue
            if len(fields) != len(header):
                problems.add(ItemError(f"{len(fields)} fields, but the header (line {header_line}) has "
                                       f"{len(header)} columns; quote cells that hold '{sep}'", path=str(p),
                                       row=line))
                continue
            rows.append((line, {c: (v if v != "" else None) for c, v in zip(header, fields, strict=True)}))
    except csv.Error as exc:         # the reader cannot go on after a stray quote: the last problem
        problems.add(ItemError(f"malformed CSV ({exc})", path=str(p), row=start))
    if header is None and not problems:
        raise ItemError("empty file (no header row)", path=str(p))
    if own:
        problems.raise_if_any()
    return rows


def read_table_rows(path: str | Path, *, problems: Problems | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Rows of a CSV or Parquet file as ``(row, record)``; CSV cells are text, empty cells None.  Rows
    with the wrong number of cells are left out and recorded in ``problems`` (raised without one)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return read_csv_rows(p, sep="\t" if suffix == ".tsv" else ",", problems=problems)
    if suffix != ".parquet":
        raise ItemError("expected a .csv, .tsv or .parquet file", path=str(p))
    try:
        df = pd.read_parquet(p)
    except Exception as exc:  # parser errors from pyarrow
        raise ItemError(f"cannot read table ({type(exc).__name__}: {exc})", path=str(p)) from None
    cols = list(df.columns)
    rows = []
    for i, values in enumerate(df.itertuples(index=False, name=None)):
        rows.append((i + 1, {c: to_python(v) for c, v in zip(cols, values, strict=True)}))
    return rows


def rows_to_pair_items(rows: list[tuple[int, dict[str, Any]]], *, path: str, dataset: str,
                       field_map: dict[str, str] | None = None, problems: Problems | None = None) -> list[PairItem]:
    """Generic records -> :class:`PairItem` s (shared by the CSV and Parquet loaders).  Every problem
    of every row is collected and raised at once (:class:`~verdictlab.core.items.ItemProblems`), with the
    problems already in ``problems`` (the file's unreadable rows)."""
    inverse = {src: dst for dst, src in (field_map or {}).items()}
    items: list[PairItem] = []
    item_rows: list[int] = []
    problems = Problems(path) if problems is None else problems
    for row, raw in rows:
        rec = {inverse.get(k, k): v for k, v in raw.items()}
        n = problems.count
        _check_record(rec, raw, path=path, row=row, field_map=field_map or {}, problems=problems)
        if problems.count > n:      # the record's other fields are checked too: every problem of the row
            known = {f for f in REQUIRED if rec.get(f) is None or (f != "item_id" and not isinstance(rec[f], str))}
            for exc in pair_item_problems({k: v for k, v in rec.items() if k in ITEM_FIELDS - {"meta"}}, path=path,
                                          row=row, known=known | {"meta"}, dataset=dataset):
                problems.add(exc)
            continue
        rec.setdefault("label", None)
        rec["dataset"] = dataset
        extra = {k: rec.pop(k) for k in list(rec) if k not in ITEM_FIELDS}
        if extra:
            rec["meta"] = {**(rec.get("meta") or {}), **extra}
        if rec.get("meta") is None:
            rec.pop("meta", None)
        try:
            items.append(make_pair_item(rec, path=path, row=row))
            item_rows.append(row)
        except ItemError as exc:
            problems.add(exc)
    check_unique(items, path=path, rows=item_rows, problems=problems)
    problems.raise_if_any()
    return items


def _check_record(rec: dict[str, Any], raw: dict[str, Any], *, path: str, row: int, field_map: dict[str, str],
                  problems: Problems) -> None:
    """Required fields present, texts text, ``meta`` JSON, nesting within the limit (``rec`` is
    changed in place: ``meta`` parsed)."""
    for f in REQUIRED:
        if rec.get(f) is None:
            src = field_map.get(f, f)
            problems.add(missing_field(f, path=path, row=row, source=src, empty=src in raw))
    for f in ("question", "response_a", "response_b"):
        if rec.get(f) is not None and not isinstance(rec[f], str):
            problems.add(ItemError(f"must be a string, got {type(rec[f]).__name__}", path=path, row=row,
                                   field=field_map.get(f, f)))
    try:
        if isinstance(rec.get("meta"), str):
            rec["meta"] = _meta_json(rec["meta"], path=path, row=row)
        check_depth(rec)
    except GuardError as exc:
        problems.add(ItemError(str(exc), path=path, row=row, field=_deepest_field(rec)))
    except ItemError as exc:
        problems.add(exc)


def _meta_json(text: str, *, path: str, row: int) -> Any:
    try:
        return loads_json(text)
    except json.JSONDecodeError:
        raise ItemError("meta must be a JSON object", path=path, row=row, field="meta") from None
    except GuardError as exc:
        raise ItemError(str(exc), path=path, row=row, field="meta") from None


def _deepest_field(rec: dict[str, Any]) -> str | None:
    depths = {k: nesting_depth(v, stop_at=10_000) for k, v in rec.items()}
    return max(depths, key=lambda k: depths[k]) if depths else None


def _load_table(kind: str, path: str | None, *, dataset: str | None,
                field_map: dict[str, str] | None, limit: int | None,
                options: dict[str, Any]) -> DatasetLoad:
    check_no_options(kind, options)
    p = require_path(path, kind)
    problems = Problems(str(p))
    rows = read_table_rows(p, problems=problems)
    if not rows and not problems:
        raise ItemError("no records", path=str(p))
    name = dataset or p.stem
    items = rows_to_pair_items(rows, path=str(p), dataset=name, field_map=field_map, problems=problems)
    return finish(name, list(items), source=str(p), limit=limit)


def load_csv(path: str | None, *, dataset: str | None = None, field_map: dict[str, str] | None = None,
             limit: int | None = None, **options: Any) -> DatasetLoad:
    return _load_table("csv", path, dataset=dataset, field_map=field_map, limit=limit, options=options)


def load_parquet(path: str | None, *, dataset: str | None = None,
                 field_map: dict[str, str] | None = None, limit: int | None = None,
                 **options: Any) -> DatasetLoad:
    return _load_table("parquet", path, dataset=dataset, field_map=field_map, limit=limit,
                       options=options)
