"""Export a run's judgments with the stable schema (:data:`verdictlab.store.JUDGMENT_COLUMNS`).

The columns are always all of ``JUDGMENT_COLUMNS``, in that order, whatever the run holds; types
follow the SQL types (TEXT -> string, REAL -> float64, INTEGER -> int64, all nullable).  ``scores``
stays a JSON text.  Rows are sorted by the trial key so two exports of one run are identical.

- ``parquet``: pyarrow schema with those types (nulls kept as nulls); the column descriptions are
  stored as field metadata (``description``) and the schema version as table metadata.
- ``jsonl``: one JSON object per line, keys in column order, null for missing values.
- ``csv``: header row of the column names; empty cell for null.  Text cells that a spreadsheet
  would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) get a
  leading ``'`` (OWASP's advice against CSV injection), and so does a text cell that already starts
  with ``'``; :func:`read_export` removes exactly that one quote, so the round trip is exact.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from .store import JUDGMENT_COLUMN_NAMES, JUDGMENT_COLUMNS, SCHEMA_VERSION, RunStore, open_store

FORMATS = ("parquet", "jsonl", "csv")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
SORT_KEY = ["judge", "dataset", "protocol", "temperature", "item_id", "order", "rep", "step"]


def judgments_frame(source: str | Path | RunStore) -> pd.DataFrame:
    """The judgments of a run directory (or open store), stable columns and dtypes, sorted."""
    if isinstance(source, RunStore):
        df = source.judgments()
    else:
        with open_store(source) as store:
            df = store.judgments()
    df = _typed(df[list(JUDGMENT_COLUMN_NAMES)].copy())
    if len(df):
        df = df.sort_values(SORT_KEY, kind="mergesort", na_position="last").reset_index(drop=True)
    return df


def _arrow_schema() -> Any:
    import pyarrow as pa

    types = {"TEXT": pa.string(), "REAL": pa.float64(), "INTEGER": pa.int64()}
    fields = [pa.field(n, types[t], nullable=True, metadata={"description": d})
              for n, t, d in JUDGMENT_COLUMNS]
    return pa.schema(fields, metadata={"verdictlab_schema_version": str(SCHEMA_VERSION),
                                       "content": "judgments"})


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def export_judgments(source: str | Path | RunStore, *, format: str = "parquet",
                     out: str | Path | None = None) -> Path:
    """Write the judgments of ``source`` (a run directory or store) to ``out`` and return its path.

    ``out`` defaults to ``RUN_DIR/judgments.<format>``."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")
    df = judgments_frame(source)
    if out is None:
        base = source.run_dir if isinstance(source, RunStore) else Path(source)
        out = base / f"judgments.{format}"
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = _arrow_schema()
        arrays = [pa.array([_plain(v) for v in df[f.name]], type=f.type) for f in schema]
        pq.write_table(pa.Table.from_arrays(arrays, schema=schema), out)
    elif format == "jsonl":
        with out.open("w", encoding="utf-8") as fh:
            for rec in df.itertuples(index=False, name=None):
                obj = {c: _plain(v) for c, v in zip(JUDGMENT_COLUMN_NAMES, rec, strict=True)}
                fh.write(json.dumps(obj, ensure_ascii=False) + "\n")
    else:
        text_cols = [n for n, t, _ in JUDGMENT_COLUMNS if t == "TEXT"]
        csv_safe(df, text_cols).to_csv(out, index=False, na_rep="")
    return out


def escape_formula(value: Any) -> Any:
    """A text cell made inert for spreadsheets: ``'`` before a leading ``= + - @``, tab, CR or ``'``."""
    if isinstance(value, str) and value.startswith((*FORMULA_STARTS, "'")):
        return "'" + value
    return value


def unescape_formula(value: Any) -> Any:
    """Undo :func:`escape_formula` (one leading ``'`` removed)."""
    if isinstance(value, str) and value.startswith("'"):
        return value[1:]
    return value


def csv_safe(df: pd.DataFrame, columns: list[str] | None = None) -> pd.DataFrame:
    """A copy of ``df`` whose text ``columns`` (default: every object/string column) are escaped
    with :func:`escape_formula`, for writing a CSV a person may open in a spreadsheet."""
    out = df.copy()
    if columns is None:
        columns = [c for c in out.columns if out[c].dtype == object or pd.api.types.is_string_dtype(out[c])]
    for c in columns:
        out[c] = out[c].map(escape_formula, na_action="ignore")
    return out


def read_export(path: str | Path) -> pd.DataFrame:
    """Read an export back (any of the three formats) with the stable columns and dtypes."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix == ".parquet":
        df = pd.read_parquet(p)
    elif suffix == ".jsonl":
        df = pd.read_json(p, lines=True, dtype=False)
    elif suffix == ".csv":
        df = pd.read_csv(p, dtype=str, keep_default_na=False).replace({"": None})
        for name, sql, _ in JUDGMENT_COLUMNS:
            if sql == "TEXT" and name in df.columns:
                df[name] = df[name].map(unescape_formula, na_action="ignore")
    else:
        raise ValueError(f"{p}: expected .parquet, .jsonl or .csv")
    for name in JUDGMENT_COLUMN_NAMES:
        if name not in df.columns:
            df[name] = None
    df = _typed(df[list(JUDGMENT_COLUMN_NAMES)])
    df["step"] = df["step"].fillna("")  # '' (not NULL) for single-call protocols; CSV loses the difference
    return df


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    """Give each judgment column its nullable dtype from the schema (TEXT -> string, REAL ->
    Float64, INTEGER -> Int64), so exports and read-backs agree whatever the format lost."""
    for name, sql, _ in JUDGMENT_COLUMNS:
        if sql == "TEXT":
            df[name] = df[name].astype("string")
        elif sql == "REAL":
            df[name] = pd.to_numeric(df[name], errors="coerce").astype("Float64")
        else:
            df[name] = pd.to_numeric(df[name], errors="coerce").astype("Int64")
    return df
