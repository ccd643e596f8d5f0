"""Import judgments from a table: CSV, JSON Lines or Parquet, one judgment per row.

Columns (rename with ``field_map={"verdict": "winner", ...}`` / ``--map verdict=winner``):

- required: ``item_id, judge, protocol, dataset, order ('AB'|'BA'), rep, temperature, verdict``
  (canonical ``A``/``B``/``tie``; empty = the judge's output was not parsed), ``label`` (gold, canonical
  ``A``/``B``/``tie``/empty).  ``judge``, ``protocol``, ``dataset``, ``rep`` and ``temperature`` may be
  given once for the whole file instead (options / CLI flags); a column wins over the option.
- optional: ``step, category, raw_output, parse_status, parse_detail, fallback_rule, p_a, latency_s,
  tokens_in, tokens_out, cost_usd``; with ``question, response_a, response_b`` (and ``reference``)
  the rows also give the items (one item per dataset and item_id; rows that disagree are an error).  Without ``parse_status`` a row is 'ok' when it has a verdict and
  'failed' when it has none.

Verdicts must already be canonical (A = response_a) -- the ``order`` column only says how the pair
was shown.  Every problem is reported with file, row and column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..datasets._common import read_records
from ..datasets.tabular import read_table_rows
from ..items import ItemError, PairItem, make_pair_item, normalise_label
from ..store import PARSE_STATUSES
from ._batch import ImportBatch, judgment_row

KEY_COLUMNS = ("item_id", "judge", "protocol", "dataset", "order", "rep", "temperature")
REQUIRED = (*KEY_COLUMNS, "verdict", "label")
TEXT_OPTIONAL = ("step", "category", "raw_output", "parse_detail", "fallback_rule")
FLOAT_OPTIONAL = ("p_a", "latency_s", "cost_usd")
INT_OPTIONAL = ("tokens_in", "tokens_out")
ITEM_COLUMNS = ("question", "response_a", "response_b")
KNOWN = (set(REQUIRED) | set(TEXT_OPTIONAL) | set(FLOAT_OPTIONAL) | set(INT_OPTIONAL)
         | {"parse_status", "reference"} | set(ITEM_COLUMNS))


def _float(v: Any, *, path: str, row: int, field: str) -> float:
    if isinstance(v, bool):
        raise ItemError(f"must be a number, got {v!r}", path=path, row=row, field=field)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise ItemError(f"must be a number, got {v!r}", path=path, row=row, field=field) from None


def _int(v: Any, *, path: str, row: int, field: str) -> int:
    f = _float(v, path=path, row=row, field=field)
    if not f.is_integer():
        raise ItemError(f"must be an integer, got {v!r}", path=path, row=row, field=field)
    return int(f)


def read_rows(p: Path) -> list[tuple[int, dict[str, Any]]]:
    if p.suffix.lower() in (".csv", ".tsv", ".parquet"):
        return read_table_rows(p)
    return read_records(p)


def import_table(path: str | Path, *, format: str = "table", judge: str | None = None,
                 protocol: str | None = None, dataset: str | None = None,
                 temperature: float | None = None, rep: int | None = None,
                 field_map: dict[str, str] | None = None, **options: Any) -> ImportBatch:
    if options:
        raise ItemError(f"unknown option(s) for the {format} importer: {', '.join(sorted(options))}")
    p = Path(path)
    if not p.is_file():
        raise ItemError("file not found", path=str(p))
    src = str(p)
    field_map = dict(field_map or {})
    unknown_targets = set(field_map) - KNOWN
    if unknown_targets:
        raise ItemError(f"--map names unknown judgment column(s) {sorted(unknown_targets)}; known: "
                        f"{sorted(KNOWN)}", path=src, field=sorted(unknown_targets)[0])
    defaults = {"judge": judge, "protocol": protocol, "dataset": dataset, "temperature": temperature,
                "rep": rep}
    rows = read_rows(p)
    if not rows:
        raise ItemError("no records", path=src)
    judgments: list[dict[str, Any]] = []
    items: list[PairItem] = []
    for row, rec in rows:
        def col(name: str, rec: dict[str, Any] = rec) -> tuple[str, Any]:
            """(source column name, value or None)."""
            srcname = field_map.get(name, name)
            return srcname, rec.get(srcname)

        vals: dict[str, Any] = {}
        for name in REQUIRED:
            srcname, v = col(name)
            if srcname not in rec:
                if defaults.get(name) is not None:
                    v = defaults[name]
                elif name not in ("verdict", "label"):
                    raise ItemError("missing required column (or pass it as an option)", path=src,
                                    row=row, field=srcname)
                else:
                    raise ItemError("missing required column", path=src, row=row, field=srcname)
            vals[name] = v
        for name in ("item_id", "judge", "protocol", "dataset"):
            v = vals[name]
            if v is None or (isinstance(v, str) and not v.strip()) or isinstance(v, bool):
                raise ItemError("must not be empty", path=src, row=row, field=field_map.get(name, name))
            vals[name] = str(v)
        if vals["order"] not in ("AB", "BA"):
            raise ItemError(f"must be 'AB' or 'BA', got {vals['order']!r}", path=src, row=row,
                            field=field_map.get("order", "order"))
        vals["rep"] = _int(vals["rep"], path=src, row=row, field=field_map.get("rep", "rep"))
        if vals["rep"] < 0:
            raise ItemError("must be >= 0", path=src, row=row, field=field_map.get("rep", "rep"))
        vals["temperature"] = _float(vals["temperature"], path=src, row=row,
                                     field=field_map.get("temperature", "temperature"))
        for name in ("verdict", "label"):
            try:
                vals[name] = normalise_label(vals[name])
            except ValueError as exc:
                raise ItemError(str(exc), path=src, row=row, field=field_map.get(name, name)) from None
        extra: dict[str, Any] = {}
        for name in TEXT_OPTIONAL:
            srcname, v = col(name)
            if v is not None:
                extra[name] = str(v)
        for name in FLOAT_OPTIONAL:
            srcname, v = col(name)
            if v is not None:
                extra[name] = _float(v, path=src, row=row, field=srcname)
        if extra.get("p_a") is not None and not 0.0 <= extra["p_a"] <= 1.0:
            raise ItemError("must be a probability in [0, 1]", path=src, row=row, field=field_map.get("p_a", "p_a"))
        for name in INT_OPTIONAL:
            srcname, v = col(name)
            if v is not None:
                extra[name] = _int(v, path=src, row=row, field=srcname)
        srcname, status = col("parse_status")
        if status is not None:
            if status not in PARSE_STATUSES:
                raise ItemError(f"must be one of {list(PARSE_STATUSES)}, got {status!r}", path=src,
                                row=row, field=srcname)
            if status == "failed" and vals["verdict"] is not None:
                raise ItemError("a 'failed' parse cannot have a verdict", path=src, row=row, field=srcname)
            if status != "failed" and vals["verdict"] is None:
                raise ItemError(f"parse_status {status!r} needs a verdict (use 'failed' for none)",
                                path=src, row=row, field=srcname)
        step = extra.pop("step", "")
        category = extra.pop("category", None)
        raw_output = extra.pop("raw_output", None)
        parse_detail = extra.pop("parse_detail", None)
        r = judgment_row(judge=vals["judge"], dataset=vals["dataset"], item_id=vals["item_id"],
                         protocol=vals["protocol"], order=vals["order"], temperature=vals["temperature"],
                         rep=vals["rep"], verdict=vals["verdict"], label=vals["label"], step=step,
                         category=category, raw_output=raw_output, parse_status=status,
                         parse_detail=parse_detail or f"imported from {p.name} row {row}", **extra)
        r["_row"] = row
        judgments.append(r)
        texts = {name: col(name)[1] for name in ITEM_COLUMNS}
        if all(isinstance(t, str) for t in texts.values()):
            ref = col("reference")[1]
            items.append(make_pair_item(
                {"item_id": vals["item_id"], "dataset": vals["dataset"], **texts, "label": vals["label"],
                 "category": category, "reference": ref if isinstance(ref, str) else None},
                path=src, row=row))
    notes = [f"{len(judgments)} judgment row(s) from {p.name}"]
    if items:
        notes.append("items taken from the question / response_a / response_b columns")
    return ImportBatch(format=format, source=src, judgments=judgments, items=items, notes=notes)


def import_csv(path: str | Path, **options: Any) -> ImportBatch:
    return import_table(path, format="csv", **options)


def import_jsonl(path: str | Path, **options: Any) -> ImportBatch:
    return import_table(path, format="jsonl", **options)


def import_parquet(path: str | Path, **options: Any) -> ImportBatch:
    return import_table(path, format="parquet", **options)
