"""Export a run's judgments with the stable schema (:data:`verdictlab.store.JUDGMENT_COLUMNS`).

The columns are always all of ``JUDGMENT_COLUMNS``, in that order, whatever the run holds; types
follow the SQL types (TEXT -> string, REAL -> float64, INTEGER -> int64, all nullable).  ``scores``
stays a JSON text.  Rows are sorted by the trial key so two exports of one run are identical.

- ``parquet``: pyarrow schema with those types (nulls kept as nulls); the column descriptions are
  stored as field metadata (``description``) and the schema version as table metadata.
- ``jsonl``: one JSON object per line, keys in column order, null for missing values.
- ``csv``: header row of the column names, lines ending in CRLF (RFC 4180: a carriage return inside a
  cell is then quoted, never read as the end of a row); an empty cell is null.  Text cells that a
  spreadsheet would run as a formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
  return) get a leading ``'`` (OWASP's advice against CSV injection), and so does a text cell that
  already starts with ``'``; an empty text (not null) is written as a lone ``'`` (a spreadsheet shows
  it empty, as it does any ``'``-prefixed text).  :func:`read_export` removes exactly that one quote,
  so the round trip is exact.

``partition_by=("judge", "dataset")`` (Parquet only) writes a directory of Hive-style partitions, one
directory per combination, ``OUT/judge_key=<key>/dataset_key=<key>/part-0.parquet``, one partition read
from the store at a time, so exporting millions of judgments needs the memory of the largest partition.
**Every file holds every column** -- the partition columns included, with their stored values -- and
the directories only sort the files.  A directory name cannot carry every value a run can store: a
file system limits a name to 255 bytes and refuses ``.``, ``..``, ``/`` and NUL, and Hive readers turn
``__HIVE_DEFAULT_PARTITION__`` into null (pyarrow after decoding the percent-escapes, so no escaping
of that name survives).  So the keys (:func:`partition_key`) are named ``<column>_key``, not the column:
a Hive reader (Spark, DuckDB, Ray Data, pyarrow with ``partitioning="hive"``) adds them as columns of
their own and reads ``judge``, ``dataset``, ... from the files, exactly as stored.  A key is the value
percent-encoded when that is short and not a reserved name, else a readable prefix and a hash of the
value; ``_verdictlab_export.json`` (skipped by those readers) names the partition columns and their
keys.  :func:`read_export` on the directory gives back the full frame.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote

import pandas as pd

from ..errors import InputError, UsageError
from .sqlite import JUDGMENT_COLUMN_NAMES, JUDGMENT_COLUMNS, SCHEMA_VERSION, RunStore, open_store

FORMATS = ("parquet", "jsonl", "csv")
#: columns an export can be partitioned by (text key columns with few values)
PARTITION_COLUMNS = ("judge", "dataset", "protocol", "decoding")
MANIFEST = "_verdictlab_export.json"
#: how the partition directories are named (1: ``<column>=<value>``, the partition columns only in the
#: path -- read back by :func:`read_export` still; 2: ``<column>_key=<key>``, every column in every file)
PARTITION_LAYOUT = 2
#: the value Hive readers take for null (a partition key never decodes to it but for a null value)
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
#: a partition key longer than this (bytes, percent-encoded) is a prefix and a hash (names <= 255 bytes)
MAX_KEY_BYTES = 96
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
SORT_KEY = ["judge", "dataset", "protocol", "temperature", "item_id", "order", "rep", "step"]


def judgments_frame(source: str | Path | RunStore, *, where: dict[str, Any] | None = None) -> pd.DataFrame:
    """The judgments of a run directory (or open store), stable columns and dtypes, sorted
    (``where``: only the rows whose columns have these values)."""
    if isinstance(source, RunStore):
        df = source.judgments(where=where)
    else:
        with open_store(source) as store:
            df = store.judgments(where=where)
    return _sorted(_typed(df[list(JUDGMENT_COLUMN_NAMES)].copy()))


def _sorted(df: pd.DataFrame) -> pd.DataFrame:
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


def _arrow_table(df: pd.DataFrame, schema: Any) -> Any:
    """The typed frame as an Arrow table of ``schema`` (nulls kept as nulls)."""
    import pyarrow as pa

    return pa.Table.from_pandas(df[[f.name for f in schema]], schema=schema, preserve_index=False)


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    return v


def export_judgments(source: str | Path | RunStore, *, format: str = "parquet",
                     out: str | Path | None = None, partition_by: Sequence[str] = ()) -> Path:
    """Write the judgments of ``source`` (a run directory or store) to ``out`` and return its path.

    ``out`` defaults to ``RUN_DIR/judgments.<format>``, or the directory ``RUN_DIR/judgments`` with
    ``partition_by`` (Parquet only; see the module docstring).  :func:`write_judgments` writes into an
    open binary stream instead (stdout)."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")
    if partition_by:
        return export_partitioned(source, out=out, partition_by=partition_by, format=format)
    if out is None:
        out = _run_dir(source) / f"judgments.{format}"
    out = Path(out)
    if not isinstance(source, RunStore):      # the store first: a run that cannot be read leaves no file
        with open_store(source) as store:
            return export_judgments(store, format=format, out=out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("wb") as fh:
        write_judgments(source, fh, format=format)
    return out


def write_judgments(source: str | Path | RunStore, stream: IO[bytes], *, format: str = "parquet") -> int:
    """Write the judgments of ``source`` in ``format`` into the binary ``stream`` (a file, or
    ``sys.stdout.buffer``); returns the number of judgments."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {list(FORMATS)}, got {format!r}")
    df = judgments_frame(source)
    if format == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(_arrow_table(df, _arrow_schema()), stream)
        return len(df)
    text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
    try:
        if format == "jsonl":
            for rec in df.itertuples(index=False, name=None):
                obj = {c: _plain(v) for c, v in zip(JUDGMENT_COLUMN_NAMES, rec, strict=True)}
                text.write(json.dumps(obj, ensure_ascii=False) + "\n")
        else:
            text_cols = [n for n, t, _ in JUDGMENT_COLUMNS if t == "TEXT"]
            _empty_marked(csv_safe(df, text_cols), text_cols).to_csv(text, index=False, na_rep="",
                                                                     lineterminator="\r\n")
        text.flush()
    finally:
        text.detach()          # the stream stays open: it is the caller's
    return len(df)


def _empty_marked(df: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Empty texts of ``columns`` written as a lone ``'`` (:func:`escape_formula`'s mark), so that CSV's
    empty cell means null only."""
    for c in columns:
        df[c] = df[c].mask(df[c].notna() & (df[c] == ""), "'")
    return df


def _run_dir(source: str | Path | RunStore) -> Path:
    return source.run_dir if isinstance(source, RunStore) else Path(source)


def check_partition_by(partition_by: Sequence[str], *, format: str = "parquet") -> list[str]:
    """The partition columns, checked: Parquet only, each of :data:`PARTITION_COLUMNS` at most once."""
    cols = [c.strip() for c in partition_by if c.strip()]
    if format != "parquet":
        raise UsageError(f"partitioning is for the parquet format, not {format!r}")
    bad = [c for c in cols if c not in PARTITION_COLUMNS]
    if bad or not cols or len(set(cols)) != len(cols):
        raise UsageError(f"partition columns must be distinct names of {list(PARTITION_COLUMNS)}, got {cols}")
    return cols


def export_partitioned(source: str | Path | RunStore, *, out: str | Path | None = None,
                       partition_by: Sequence[str] = ("judge", "dataset"), format: str = "parquet") -> Path:
    """Write the judgments as Hive-style Parquet partitions under the directory ``out`` (default
    ``RUN_DIR/judgments``), one partition read from the store and written at a time.  ``out``
    must not hold files already (an earlier export would mix in stale partitions)."""
    cols = check_partition_by(partition_by, format=format)
    root = Path(out) if out is not None else _run_dir(source) / "judgments"
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InputError(f"{root}: exists and is not an empty directory; remove it or choose another --out")
    root.mkdir(parents=True, exist_ok=True)
    if isinstance(source, RunStore):
        n = _write_partitions(source, root, cols)
    else:
        with open_store(source) as store:
            n = _write_partitions(store, root, cols)
    (root / MANIFEST).write_text(json.dumps({
        "content": "judgments", "verdictlab_schema_version": SCHEMA_VERSION, "partition_by": cols,
        "partition_layout": PARTITION_LAYOUT, "partition_keys": {c: key_name(c) for c in cols},
        "columns": list(JUDGMENT_COLUMN_NAMES), "n_judgments": n}, indent=2) + "\n", encoding="utf-8")
    return root


def key_name(column: str) -> str:
    """The name of a partition column's directory key: ``judge`` -> ``judge_key`` (never the column's own
    name: a Hive reader would take the column from the path instead of the file)."""
    return f"{column}_key"


def partition_key(value: str | None) -> str:
    """The directory key of a partition value: :data:`HIVE_NULL` for null; the value percent-encoded
    (every byte but ``A-Z a-z 0-9 _ . - ~``) when that is at most :data:`MAX_KEY_BYTES` bytes and
    decodes to neither ``''`` nor :data:`HIVE_NULL`; else a percent-encoded prefix of the value, ``+``
    (which the encoding never leaves bare) and 16 hex digits of its SHA-256.  Always a valid file name
    (at most 255 bytes with its ``<column>_key=``).  The value itself is in the files."""
    if value is None:
        return HIVE_NULL
    encoded = quote(value, safe="", errors="surrogatepass")
    if value not in ("", HIVE_NULL) and len(encoded) <= MAX_KEY_BYTES:
        return encoded
    prefix = ""
    for ch in value[:24]:               # whole characters, at most 48 bytes once encoded
        piece = quote(ch, safe="", errors="surrogatepass")
        if len(prefix) + len(piece) > 48:
            break
        prefix += piece
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{prefix}+{digest}"


def _write_partitions(store: RunStore, root: Path, cols: list[str]) -> int:
    """One Parquet file per partition, holding every column, in the directory named by the partition's
    keys (:func:`partition_key`); should two partitions share a directory (a hash collision, or names a
    case-insensitive file system folds together) the second gets the next file number.  Written with
    ``pyarrow.parquet.write_table`` rather than ``pyarrow.dataset.write_dataset``: the dataset writer
    leaves threads that, now and then, abort the process as the interpreter exits ("terminate called
    without an active exception", a known Arrow bug), after the export is complete."""
    import pyarrow.parquet as pq

    schema = _arrow_schema()
    n = 0
    for values in store.distinct(cols):
        df = judgments_frame(store, where=dict(zip(cols, values, strict=True)))
        target = root.joinpath(*(f"{key_name(c)}={partition_key(v)}" for c, v in zip(cols, values, strict=True)))
        target.mkdir(parents=True, exist_ok=True)
        k = 0
        while (target / f"part-{k}.parquet").exists():
            k += 1
        pq.write_table(_arrow_table(df, schema), target / f"part-{k}.parquet")
        n += len(df)
    return n


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
    if p.is_dir():
        df = _read_partitions(p)
    elif suffix == ".parquet":
        df = pd.read_parquet(p)
    elif suffix == ".jsonl":
        df = pd.read_json(p, lines=True, dtype=False)
    elif suffix == ".csv":
        df = pd.read_csv(p, dtype=str, keep_default_na=False).replace({"": None})
        for name, sql, _ in JUDGMENT_COLUMNS:
            if sql == "TEXT" and name in df.columns:
                df[name] = df[name].map(unescape_formula, na_action="ignore")
    else:
        raise InputError(f"{p}: expected .parquet, .jsonl or .csv, or a directory of partitions")
    for name in JUDGMENT_COLUMN_NAMES:
        if name not in df.columns:
            df[name] = None
    df = _typed(df[list(JUDGMENT_COLUMN_NAMES)])
    df["step"] = df["step"].fillna("")  # '' (not NULL) for single-call protocols; CSV loses the difference
    return _sorted(df) if p.is_dir() else df


def _read_partitions(root: Path) -> pd.DataFrame:
    """A partitioned export read back: every column from the files (the directory keys are not read);
    an export of the first layout (partition columns in the path only) through pyarrow's Hive reader."""
    import pyarrow as pa
    import pyarrow.dataset as ds

    manifest = root / MANIFEST
    if not manifest.is_file():
        raise InputError(f"{root}: not a partitioned verdictlab export (no {MANIFEST})")
    meta = json.loads(manifest.read_text(encoding="utf-8"))
    if meta.get("partition_layout", 1) >= 2:
        files = sorted(str(p) for p in root.rglob("*.parquet") if p.is_file())
        table = ds.dataset(files, format="parquet", schema=_arrow_schema()).to_table()
        return table.to_pandas()
    cols = meta["partition_by"]
    partitioning = ds.partitioning(pa.schema([(c, pa.string()) for c in cols]), flavor="hive")
    return ds.dataset(root, format="parquet", partitioning=partitioning).to_table().to_pandas()


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
