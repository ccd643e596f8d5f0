"""The bulk path of the Parquet table import: millions of judgments, column by column.

:func:`verdictlab.importers.tabular.import_table` checks and builds one row at a time; that is the
definition of a table import (its rules and its error messages).  For a Parquet file whose columns
already have the plain types (text, integers, floats) and a run store that holds no judgments yet,
this module does the same work on whole Arrow columns: the checks are vectorised, the derived
columns (canonical verdict, first-shown winner, parse status and detail, trial id) are computed per
column, and the rows go to the store in chunks inside ONE transaction -- so a failure still writes
nothing, and the memory is that of the Arrow table plus one chunk of rows.

It is a fast path, never a second set of rules: whenever a check finds anything the per-row import
would reject, or the file or store is not of the simple kind above (item text columns, a
``parse_status`` column, a ``--replace``, judgments already stored, an unknown option, a number out of
its range, two labels or categories for one item, a column another field is mapped to...),
:func:`bulk_import_parquet` returns ``None`` and the caller runs the per-row import, which then
raises its own error naming file, row and field.  ``tests/test_import_bulk.py`` holds the two paths
to the same stored rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.items import PairItem, PointItem
from ..core.judgment import JUDGMENT_COLUMN_NAMES, trial_ids
from ..core.ranges import COST_USD, LATENCY_S, PROBABILITY, TEMPERATURE, TOKENS, Range
from ..store import RunStore
from ..store.column_cache import FigureFrameBuilder
from ._batch import PER_ITEM_COLUMNS, ImportResult, record_import

_CHUNK = 100_000
_OPTIONS = frozenset({"judge", "protocol", "dataset", "temperature", "rep", "order", "verdicts", "field_map"})
_WORDS = {"A": "A", "B": "B", "a": "A", "b": "B", "tie": "tie", "Tie": "tie", "TIE": "tie"}
_SWAP = {"A": "B", "B": "A", "tie": "tie"}


class _NotBulk(Exception):
    """The file or the store is not for the bulk path: run the per-row import."""


def bulk_import_parquet(path: str | Path, *, run_dir: str | Path, items: Sequence[PairItem | PointItem] | None = None,
                        replace: bool = False, **options: Any) -> ImportResult | None:
    """Import a Parquet table of judgments in bulk, or return ``None`` (see the module docstring)."""
    import pyarrow.parquet as pq

    from .tabular import _RULES, ITEM_COLUMNS, KNOWN, VERDICT_TERMS

    p = Path(path)
    verdicts = options.get("verdicts") or "canonical"
    field_map = dict(options.get("field_map") or {})
    if (replace or set(options) - _OPTIONS or not p.is_file() or p.suffix.lower() != ".parquet"
            or verdicts not in VERDICT_TERMS or set(field_map) - KNOWN):
        return None
    with RunStore(run_dir) as store:
        if store.count():
            return None          # a re-import is compared row by row (importers._reimport)
        try:
            table = pq.read_table(p)
            src = {name: field_map.get(name, name) for name in KNOWN}
            if table.num_rows == 0 or any(src[c] in table.column_names for c in (*ITEM_COLUMNS, "parse_status")):
                raise _NotBulk
            _check_table(table, src, field_map, options)
            tally = _Tally(list(items or []))
            chunks = (tally.rows(_columns(table.slice(start, _CHUNK), src, options, verdicts,
                                          detail=f"imported from {p.name} row ", first_row=start + 1))
                      for start in range(0, table.num_rows, _CHUNK))
            n = table.num_rows
            inserted = store.bulk_insert(chunks, items=tally.stored_items(), expected=n)
            if inserted != n:        # a trial twice in the file: rolled back; the per-row import names both rows
                raise _NotBulk
        except _NotBulk:
            return None
        notes = [f"{n} judgment row(s) from {p.name}", f"verdict rule: {_RULES[verdicts]}", *tally.notes(n)]
        record_import(store, format="parquet", source=str(p), n_rows=n, inserted=inserted, replaced=0,
                      identical=0, notes=notes)
    tally.figures.write(run_dir)
    return ImportResult(format="parquet", source=str(p), run_dir=str(run_dir), n_rows=n, n_inserted=inserted,
                        n_items=tally.n_items, n_unparsed=tally.n_unparsed, cells=tuple(sorted(tally.cells)),
                        notes=tuple(notes))


class _Tally:
    """What the import result and the items need from every chunk: unparsed count, cells, and the
    items attached (:func:`verdictlab.importers.attach_items` on the columns: rows without a label
    or category get the item's; each matched item is stored under the datasets of its rows)."""

    def __init__(self, items: list[PairItem | PointItem]) -> None:
        self.by_id = {it.item_id: it for it in items}
        self.datasets: dict[str, set[str]] = {}
        self.matched = 0
        self.n_unparsed = 0
        self.n_items = 0
        self.cells: set[tuple[str, str, str, float]] = set()
        #: the report's figure columns of the rows, cached once the store is closed (a warm first report)
        self.figures = FigureFrameBuilder()

    def rows(self, cols: dict[str, list[Any]]) -> list[tuple[Any, ...]]:
        if self.by_id:
            self._attach(cols)
        self.n_unparsed += sum(v is None for v in cols["verdict"])
        self.cells.update(zip(cols["judge"], cols["protocol"], cols["dataset"], cols["temperature"], strict=True))
        cols["created_at"] = [time.time()] * len(cols["trial_id"])
        self.figures.add(cols)
        return list(zip(*(cols[c] for c in JUDGMENT_COLUMN_NAMES), strict=True))

    def _attach(self, cols: dict[str, list[Any]]) -> None:
        labels, cats = cols["label"], cols["category"]
        for k, (item_id, dataset) in enumerate(zip(cols["item_id"], cols["dataset"], strict=True)):
            it = self.by_id.get(item_id)
            if it is None:
                continue
            self.matched += 1
            self.datasets.setdefault(item_id, set()).add(dataset)
            if labels[k] is None and isinstance(it, PairItem):
                labels[k] = it.label
            if cats[k] is None:
                cats[k] = it.category
            if isinstance(it, PairItem):
                for name in ("system_a", "system_b"):
                    if cols[name][k] is None:
                        cols[name][k] = getattr(it, name)

    def stored_items(self) -> Iterator[PairItem | PointItem]:
        """The attached items, one per dataset of their rows (consumed after every chunk)."""
        for item_id, names in self.datasets.items():
            for name in sorted(names):
                self.n_items += 1
                yield self.by_id[item_id].model_copy(update={"dataset": name})

    def notes(self, n_rows: int) -> list[str]:
        if not self.by_id:
            return []
        return [f"items attached: {len(self.datasets)} item(s) matched {self.matched} of {n_rows} judgment(s)"]


# -- the columns, checked and derived ---------------------------------------------------------------

#: preference columns the bulk path does not read (the per-row import converts them: _preferences)
_PER_ROW_PREFERENCES = ("p_first", "score_a", "score_b", "score_first", "score_second")


def _check_table(table: Any, src: dict[str, str], field_map: dict[str, str], options: dict[str, Any]) -> None:
    """What the per-row import checks across rows, on the whole table: a column another field is
    mapped to is not read under its own name too (``--map verdict=judge``); one label and one category
    per item (dataset, item_id) over all rows.  Anything else -> :class:`_NotBulk`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    taken = {s for d, s in field_map.items() if s != d}
    if any(name in taken and name not in field_map for name in src) \
            or any(src[c] in table.column_names for c in _PER_ROW_PREFERENCES):
        raise _NotBulk
    n = table.num_rows
    keys = {"i": _filled(table, src["item_id"], None, n)}
    if src["dataset"] in table.column_names:
        keys["d"] = _filled(table, src["dataset"], options.get("dataset"), n)
    for name in PER_ITEM_COLUMNS:
        if src[name] not in table.column_names:
            continue
        col = _column(table, src[name], n)
        if _is_text(col):
            col = pc.utf8_trim_whitespace(col)
        grouped = pa.table({**keys, "v": col}).group_by(list(keys)).aggregate(
            [("v", "count_distinct", pc.CountOptions(mode="all"))])
        if grouped.num_rows and pc.max(grouped["v_count_distinct"]).as_py() > 1:
            raise _NotBulk          # the per-row import names the rows that disagree

def _columns(table: Any, src: dict[str, str], options: dict[str, Any], verdicts: str, *,
             detail: str, first_row: int) -> dict[str, list[Any]]:
    """Every judgment column as a Python list (the store's values), or :class:`_NotBulk`."""
    import pyarrow.compute as pc

    n = table.num_rows
    out: dict[str, list[Any]] = {}
    for name in ("item_id", "judge", "protocol", "dataset"):
        out[name] = _key_text(table, src[name], None if name == "item_id" else options.get(name), n)
    order = _filled(table, src["order"], options.get("order"), n)
    if not _is_text(order) or not pc.all(pc.is_in(order, value_set=_arrow(["AB", "BA"]))).as_py():
        raise _NotBulk
    out["order"] = order.to_pylist()
    out["rep"] = _key_number(table, src["rep"], options.get("rep"), n, integer=True)
    out["temperature"] = _key_number(table, src["temperature"], options.get("temperature"), n, integer=False,
                                     within=TEMPERATURE)
    if src["verdict"] not in table.column_names:
        raise _NotBulk
    shown = _words(table, src["verdict"], n)
    raw_given = [v is not None for v in _column(table, src["verdict"], n).to_pylist()]
    if verdicts == "positional":
        out["verdict"] = [_SWAP[v] if v is not None and o == "BA" else v for v, o in zip(shown, out["order"], strict=True)]
    else:
        out["verdict"] = shown
    out["label"] = _words(table, src["label"], n)
    for name in ("step", "category", "raw_output", "parse_detail", "fallback_rule", "system_a", "system_b"):
        out[name] = _text(table, src[name], n)
    # counts, prices, durations and probabilities in their ranges (verdictlab.core.ranges): else the per-row
    # import says which row is not
    for name, range_ in (("p_a", PROBABILITY), ("latency_s", LATENCY_S), ("cost_usd", COST_USD)):
        out[name] = _floats(table, src[name], n, within=range_)
    for name in ("tokens_in", "tokens_out"):
        out[name] = _ints(table, src[name], n, within=TOKENS)
    _derive(out, shown, raw_given, verdicts, detail, first_row)
    return out


def _derive(out: dict[str, list[Any]], shown: list[Any], raw_given: list[bool], verdicts: str,
            detail: str, first_row: int) -> None:
    """The columns the per-row import derives: step, parse status and detail, first-shown winner,
    bookkeeping defaults and the trial id."""
    n = len(out["order"])
    out["step"] = [s or "" for s in out["step"]]
    out["parse_status"] = ["failed" if v is None else "ok" for v in out["verdict"]]
    details = [d or f"{detail}{k}" for k, d in enumerate(out["parse_detail"], start=first_row)]
    if verdicts == "positional":
        details = [f"{d}; positional verdict {s!r} shown {o} -> canonical {v!r}" if given else d
                   for d, s, o, v, given in zip(details, shown, out["order"], out["verdict"], raw_given, strict=True)]
    out["parse_detail"] = details
    first = {("A", "AB"): 1, ("B", "AB"): 0, ("A", "BA"): 0, ("B", "BA"): 1}
    out["shown_first_won"] = [first.get((v, o)) for v, o in zip(out["verdict"], out["order"], strict=True)]
    out["attempts"] = [1] * n
    out["cache_hit"] = [0] * n
    out["decoding"] = ["free"] * n
    for name in ("scores", "error", "prompt_hash"):
        out[name] = [None] * n
    out["trial_id"] = trial_ids(*(out[c] for c in ("judge", "dataset", "item_id", "protocol", "order",
                                                    "temperature", "rep", "step")))


def _arrow(values: list[Any]) -> Any:
    import pyarrow as pa

    return pa.array(values)


def _column(table: Any, name: str, n: int) -> Any:
    import pyarrow as pa

    if name in table.column_names:
        return table.column(name).combine_chunks() if table.column(name).num_chunks != 1 \
            else table.column(name).chunk(0)
    return pa.nulls(n)


def _is_text(arr: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type))


def _filled(table: Any, name: str, default: Any, n: int) -> Any:
    """A key column with its nulls (or the whole column, when absent) given the option's value."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _column(table, name, n)
    if arr.null_count:
        if default is None:
            raise _NotBulk
        if pa.types.is_null(arr.type):
            return pa.array([default] * n)
        arr = pc.fill_null(arr, pa.scalar(default, arr.type)) if _same_kind(arr, default) else None
        if arr is None:
            raise _NotBulk
    return arr


def _same_kind(arr: Any, value: Any) -> bool:
    import pyarrow as pa

    if isinstance(value, str):
        return _is_text(arr)
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return bool(pa.types.is_integer(arr.type))
    return isinstance(value, float) and bool(pa.types.is_floating(arr.type))


def _key_text(table: Any, name: str, default: Any, n: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _filled(table, name, default, n)
    if pa.types.is_integer(arr.type):
        arr = pc.cast(arr, pa.string())
    if not _is_text(arr) or pc.any(pc.equal(pc.utf8_trim_whitespace(arr), "")).as_py():
        raise _NotBulk
    return arr.to_pylist()


def _within(arr: Any, range_: Range | None) -> None:
    """:class:`_NotBulk` unless every value of a numeric Arrow array (nulls aside) is in ``range_``."""
    import pyarrow.compute as pc

    if range_ is None or arr.null_count == len(arr):
        return
    lo, hi = pc.min_max(arr).values()
    if not (range_.contains(lo.as_py()) and range_.contains(hi.as_py())):
        raise _NotBulk


def _key_number(table: Any, name: str, default: Any, n: int, *, integer: bool,
                within: Range | None = None) -> list[Any]:
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _filled(table, name, default, n)
    if integer:
        if not pa.types.is_integer(arr.type) or pc.any(pc.less(arr, 0)).as_py():
            raise _NotBulk
        return arr.to_pylist()
    if not (pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type)):
        raise _NotBulk
    arr = pc.cast(arr, pa.float64())
    if not pc.all(pc.is_finite(arr)).as_py():
        raise _NotBulk
    _within(arr, within)
    return arr.to_pylist()


def _words(table: Any, name: str, n: int) -> list[str | None]:
    """A verdict or label column as ``A``/``B``/``tie``/None (the per-row words, spaces trimmed)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _column(table, name, n)
    if pa.types.is_null(arr.type):
        return [None] * n
    if not _is_text(arr):
        raise _NotBulk
    trimmed = pc.utf8_trim_whitespace(arr)
    known = pc.or_(pc.is_in(trimmed, value_set=_arrow(list(_WORDS))), pc.equal(trimmed, ""))
    if not pc.all(pc.fill_null(known, True)).as_py():
        raise _NotBulk
    words = {**_WORDS, "": None}
    return [None if v is None else words[v] for v in trimmed.to_pylist()]


def _text(table: Any, name: str, n: int) -> list[str | None]:
    import pyarrow as pa

    arr = _column(table, name, n)
    if not (pa.types.is_null(arr.type) or _is_text(arr)):
        raise _NotBulk
    return arr.to_pylist()


def _floats(table: Any, name: str, n: int, *, within: Range | None = None) -> list[float | None]:
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = _column(table, name, n)
    if pa.types.is_null(arr.type):
        return [None] * n
    if not (pa.types.is_floating(arr.type) or pa.types.is_integer(arr.type)):
        raise _NotBulk
    arr = pc.cast(arr, pa.float64())
    if not pc.all(pc.fill_null(pc.is_finite(arr), True)).as_py():
        raise _NotBulk
    _within(arr, within)
    return arr.to_pylist()


def _ints(table: Any, name: str, n: int, *, within: Range | None = None) -> list[int | None]:
    import pyarrow as pa

    arr = _column(table, name, n)
    if pa.types.is_null(arr.type):
        return [None] * n
    if not pa.types.is_integer(arr.type):
        raise _NotBulk
    _within(arr, within)
    return arr.to_pylist()
