"""How a user's file is read column by column, shared by every reader that takes ``--map``,
``--map-values`` and ``--id-from`` (the table importers, :mod:`verdictlab.importers.tabular`, and the
human-label files, :mod:`verdictlab.datasets.human_labels`), so the three mean the same everywhere:

* a **field map** (``--map FIELD=COLUMN``, ``field_map``) names the file's column that holds a field;
  a column another field is mapped to is no longer read under its own name (``--map verdict=judge``:
  the 'judge' column holds verdicts, so the judge is not read from it);
* a **value map** (``--map-values FIELD:RAW=WORD,...``, ``value_map``) says what a raw value means
  (``label:1=A,2=B,0=tie``): a number is read as a word only through it; values it does not name are
  read as written (:func:`value_key` is how a cell is looked up: ``2`` and ``2.0`` are both ``"2"``);
* the **id source** (``--id-from``, ``id_from``): ``column`` (the item_id column, default), ``row``
  (the record's position in the file, 1, 2, ...) or ``hash`` (:func:`verdictlab.items.derived_item_id`
  over the question and the two responses).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.items import ItemError, derived_item_id

__all__ = ["ID_SOURCES", "ColumnReader", "check_value_map", "derived_id", "value_key"]

ID_SOURCES: tuple[str, ...] = ("column", "hash", "row")
_ITEM_TEXTS = ("question", "response_a", "response_b")


def value_key(v: Any) -> str:
    """How a cell is looked up in a value map: text stripped, ``2`` and ``2.0`` both ``"2"``,
    booleans ``"true"``/``"false"``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return v.strip() if isinstance(v, str) else str(v)


def check_value_map(value_map: Mapping[str, Mapping[Any, Any]] | None,
                    targets: Mapping[str, tuple[str, ...]]) -> dict[str, dict[str, str]]:
    """``{"label": {"0": "tie", ...}}`` with every column and word checked against ``targets`` (column
    -> the words it may be mapped to, ``""`` for empty); :class:`ItemError` naming the bad entry."""
    out: dict[str, dict[str, str]] = {}
    for column, mapping in (value_map or {}).items():
        allowed = targets.get(column)
        if allowed is None:
            raise ItemError(f"--map-values applies to {', '.join(targets)}, not {column!r}", field="map-values")
        if not isinstance(mapping, Mapping) or not mapping:
            raise ItemError(f"--map-values {column}: expected RAW=VALUE pairs", field="map-values")
        for raw, word in mapping.items():
            if word is None:
                word = ""
            if word not in allowed:
                raise ItemError(f"--map-values {column}:{raw}={word}: {word!r} is not one of "
                                f"{[w for w in allowed if w]}" + (" or empty" if "" in allowed else ""),
                                field="map-values")
            out.setdefault(column, {})[value_key(raw)] = word
    return out


@dataclass(frozen=True, kw_only=True)
class ColumnReader:
    """A field map and a value map, resolved once for a file (rows are many): where each field is read
    and what its raw values mean.  ``taken``: the fields whose own column another field is mapped to."""

    field_map: dict[str, str]
    value_map: dict[str, dict[str, str]] = field(default_factory=dict)
    taken: frozenset[str] = frozenset()

    @staticmethod
    def taken_by(field_map: Mapping[str, str], known: set[str] | frozenset[str]) -> frozenset[str]:
        """The fields of ``known`` whose own column another field is mapped to (and that are not mapped
        elsewhere themselves)."""
        sources = {src for dst, src in field_map.items() if src != dst}
        return frozenset(name for name in known if name in sources and name not in field_map)

    def source(self, name: str) -> str:
        return self.field_map.get(name, name)

    def has(self, rec: Mapping[str, Any], name: str) -> bool:
        return name not in self.taken and self.source(name) in rec

    def col(self, rec: Mapping[str, Any], name: str) -> tuple[str, Any]:
        """(source column name, value or None), through the value map of that field if any."""
        srcname = self.field_map.get(name, name)
        if name in self.taken:
            return srcname, None
        v = rec.get(srcname)
        if v is not None and self.value_map:
            vmap = self.value_map.get(name)
            word = vmap.get(value_key(v)) if vmap else None
            if word is not None:
                return srcname, word or None
        return srcname, v


def derived_id(reader: ColumnReader, rec: Mapping[str, Any], *, id_from: str, index: int, path: str | None,
               row: int) -> str:
    """A record's item id when ``id_from`` is ``row`` (``index``, its position: 1, 2, ...) or ``hash`` (of
    its question and two responses, read through ``reader``); :class:`ItemError` for a hash without them."""
    if id_from == "row":
        return str(index)
    texts = [reader.col(rec, name) for name in _ITEM_TEXTS]
    missing = [src for src, v in texts if not isinstance(v, str)]
    if missing:
        raise ItemError(f"--id-from hash needs the question and both responses as text; {missing[0]!r} is "
                        "empty or missing (--map names the columns)", path=path, row=row, field=missing[0])
    return derived_item_id(*(v for _, v in texts))
