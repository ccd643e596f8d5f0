"""Import judgments from a table: CSV, JSON Lines or Parquet, one judgment per row.

Columns (rename any of them with ``field_map={"verdict": "winner", ...}`` / ``--map verdict=winner``):

- trial key: ``item_id, judge, protocol, dataset, order ('AB'|'BA'), rep, temperature``.  Every key
  column but ``item_id`` may instead be given once for the whole file (options / CLI flags
  ``--judge --protocol --dataset --order --rep --temperature``); a column wins over the option.
  Where neither says, ``rep`` is 0 and ``temperature`` 0, and the import's notes say it assumed so.
- ``item_id`` may instead be derived (``id_from`` / ``--id-from``): ``hash`` -- a stable hash of the
  question and the two responses as an unordered pair (:func:`verdictlab.core.items.derived_item_id`: the
  same for a pair's AB and BA rows, whichever side a file put each response on), or ``row`` -- the
  record's position in the file (1, 2, ...; files of the two orders join only if their records are
  in the same order).  The import says in one line how its ids were made.
- ``verdict``: ``A``/``B``/``tie``; empty = the judge's output was not parsed.  Its terms are the
  ``verdicts`` option, a recorded rule (ImportBatch ``rule`` and every row's ``parse_detail``):

  * ``canonical`` (default): ``A`` is ``response_a`` whatever the order (verdictlab's own terms);
  * ``positional``: ``A`` is the response shown *first*, ``B`` the one shown second; it is converted
    to canonical terms with the row's order (``BA`` swaps A and B; ``tie`` and empty stay).

  A number (``1``/``2``/``0``, as some logs write) is read only through a value map that says what
  it means: ``value_map={"verdict": {"0": "tie", "1": "A", "2": "B"}}`` / ``--map-values
  verdict:0=tie,1=A,2=B`` (also for ``label`` and ``order``); without one it is refused with a
  message saying so.  Values the map does not name are read as usual.
- ``label`` (gold, canonical ``A``/``B``/``tie``/empty): optional -- absent means unlabelled, and
  ``--items`` can attach labels by item id afterwards.  One item has one label (and one category,
  question, response_a, response_b, reference): rows of one item that disagree are refused.
- soft preferences and score pairs (:mod:`verdictlab.importers._preferences`): ``p_a`` (P(response_a)
  wins) or ``p_first`` (P(the response shown first) wins), stored as ``p_a``; ``score_a``/``score_b``
  or ``score_first``/``score_second`` (both responses scored in one call), stored in ``scores``.  With
  no verdict column the verdict is derived from them by a stated rule (higher P or score wins, equal is
  a tie), recorded in the notes and every row's ``parse_detail``.
- optional: ``step, category, system_a, system_b, raw_output, parse_status, parse_detail, fallback_rule,
  latency_s, tokens_in, tokens_out, cost_usd``; with ``question, response_a, response_b`` (and ``reference``)
  the rows also give the items.  Without ``parse_status`` a row is 'ok' when it has a verdict and
  'failed' when it has none.
- numbers are range-checked (:mod:`verdictlab.core.ranges`): temperature in [0, 2], rep >= 0, tokens,
  cost and latency >= 0 (probabilities in [0, 1] and scores >= 0: :mod:`._preferences`).  Words of a fixed vocabulary (order, verdict, label,
  parse_status) are read with surrounding spaces removed; ids and names are kept as written.

Keys beyond the columns (:mod:`verdictlab.importers._keys`, shared by the named importers):

- ``PATH`` may be a folder: every file of the format in it is read (``file_pattern`` /
  ``--file-pattern REGEX``: named groups of a regular expression searched in each file's name give keys
  for its rows -- ``judge``, ``dataset``, ``protocol``, ``order``, ``item_id``, ``system_a``,
  ``system_b``, ``category``, ``step`` ...; the file name fills a key the row leaves empty, a row with a
  different value is an error naming file, row and field, and a group that gives a whole-file option's
  key (``judge`` ...) together with that option is a usage error (:mod:`._file_keys`); ``system_first`` / ``system_second`` name the systems shown first and
  second, made canonical by sorting the two names, with the order that says which came first).
- a source written ``column[i]`` reads element ``i`` of a list-valued column: ``--map
  score_first=score[0] --map score_second=score[1]``.
- an id join: ``answers`` / ``--answers PATH`` (a file or a folder of ``answer_*.jsonl`` /
  ``*generations*.jsonl`` records ``answer_id, model_id, text``) and ``--map
  answer_first_id=answer1_id --map answer_second_id=answer2_id`` give each row its two responses'
  systems and texts, canonical A being the system whose name sorts first and the order the one the ids
  were shown in (``answer_a_id`` / ``answer_b_id``: the ids in canonical order).  ``--id-from pair``
  makes the item id ``<item_id>-<A>-vs-<B>`` from a question id column and the two systems.

Every problem of the file is reported at once (:class:`verdictlab.core.items.ItemProblems`), each with
file, row and column, and with the fix where there is one (``--map``, ``--map-values``, ``--id-from``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..core.collector import gc_paused
from ..core.items import ItemError, PairItem, Problems, make_pair_item, text_id
from ..core.ranges import COST_USD, LATENCY_S, REP, TEMPERATURE, TOKENS, Range
from ..core.vocab import ORDERS, PARSE_STATUSES, swap
from ..datasets._common import read_records
from ..datasets.columns import ID_SOURCES as FILE_ID_SOURCES
from ..datasets.columns import ColumnReader, derived_id
from ..datasets.columns import check_value_map as check_words
from ..datasets.tabular import read_table_rows
from ._batch import ImportBatch, check_batch, check_options, checked, judgment_row
from ._file_keys import judgment_pattern
from ._keys import (
    Answers,
    add_list_values,
    files_of,
    fills,
    list_sources,
    pair_item_id,
    shown_pair,
)
from ._preferences import PREFERENCE_COLUMNS, Preference, read_preference

KEY_COLUMNS = ("item_id", "judge", "protocol", "dataset", "order", "rep", "temperature")
REQUIRED = (*KEY_COLUMNS, "verdict")
TEXT_OPTIONAL = ("step", "category", "raw_output", "parse_detail", "fallback_rule", "system_a", "system_b")
NUMBER_OPTIONAL: dict[str, Range] = {"latency_s": LATENCY_S, "cost_usd": COST_USD, "tokens_in": TOKENS,
                                     "tokens_out": TOKENS}
ITEM_COLUMNS = ("question", "response_a", "response_b")
ITEM_TEXTS = (*ITEM_COLUMNS, "reference")
KNOWN = (set(REQUIRED) | {"label"} | set(TEXT_OPTIONAL) | set(NUMBER_OPTIONAL) | {"parse_status", "reference"}
         | set(ITEM_COLUMNS) | set(PREFERENCE_COLUMNS))
VERDICT_TERMS = ("canonical", "positional")
#: a file's id sources, and pair: the item_id column is the question's id, the item id adds the two systems
ID_SOURCES = (*FILE_ID_SOURCES, "pair")
#: what a key column is when neither a column nor an option says (the import notes the assumption)
ASSUMED = {"rep": 0, "temperature": 0.0}
#: the columns a value map may translate, and the words each may be mapped to ("" = empty)
VALUE_MAP_TARGETS: dict[str, tuple[str, ...]] = {"verdict": ("A", "B", "tie", ""), "label": ("A", "B", "tie", ""),
                                                 "order": ORDERS, "vote": ("A", "B", "tie", "")}
_WORDS = {"A": "A", "B": "B", "a": "A", "b": "B", "tie": "tie", "Tie": "tie", "TIE": "tie"}
_EXACT = frozenset({"A", "B", "tie"})     # cells read as they are
_RULES = {
    "canonical": "table-canonical: verdict A/B names response_a/response_b whatever the order",
    "positional": "table-positional: verdict A/B names the response shown first/second; "
                  "canonical = swap(verdict, order)",
}
_ID_NOTES = {
    "hash": "item ids derived (--id-from hash): 'h' + 16 hex digits of SHA-256 over the question and the two "
            "responses as an unordered pair -- the same id for a pair's rows in either order or file",
    "row": "item ids derived (--id-from row): the record's position in the file (1, 2, ...); files of the two "
           "orders join only if their records are in the same order",
    "pair": "item ids derived (--id-from pair): '<item_id>-<A>-vs-<B>', the question's id and its two systems in "
            "sorted order -- the same id for the pair in either order or file",
}


def check_value_map(value_map: Mapping[str, Mapping[Any, Any]] | None) -> dict[str, dict[str, str]]:
    """``{"verdict": {"0": "tie", ...}}`` with every column and target checked (:class:`ItemError`)
    against :data:`VALUE_MAP_TARGETS`."""
    return check_words(value_map, VALUE_MAP_TARGETS)


def _float(v: Any, *, path: str, row: int, field: str, range_: Range | None = None) -> float:
    if isinstance(v, bool):
        raise ItemError(f"must be a number, got {v!r}", path=path, row=row, field=field)
    try:
        f = v if type(v) is float else float(v)
    except (TypeError, ValueError):
        raise ItemError(f"must be a number, got {v!r}", path=path, row=row, field=field) from None
    if not math.isfinite(f):
        raise ItemError(f"must be a finite number, got {v!r}", path=path, row=row, field=field)
    return f if range_ is None else checked(range_, f, path=path, row=row, field=field)


def _int(v: Any, *, path: str, row: int, field: str, range_: Range | None = None) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v if range_ is None else checked(range_, v, path=path, row=row, field=field)
    f = _float(v, path=path, row=row, field=field)
    if not f.is_integer():
        raise ItemError(f"must be an integer, got {v!r}", path=path, row=row, field=field)
    return int(f) if range_ is None else checked(range_, int(f), path=path, row=row, field=field)


def _verdict_word(v: Any, *, what: str, path: str, row: int, field: str) -> str | None:
    """``A``/``B``/``tie`` (or None for empty) from a verdict or label cell, with an error that says
    which of the two it is."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, str) and v.strip() in _WORDS:
        return _WORDS[v.strip()]
    empty = "empty (the judge's output was not parsed)" if what == "verdict" else "empty (unlabelled)"
    hint = ""
    if isinstance(v, int | float) and not isinstance(v, bool) or (isinstance(v, str) and v.strip().isdigit()):
        hint = ("; a number is not read as a verdict or label here (its meaning depends on the source): say "
                f"what your numbers mean with --map-values {what}:0=tie,1=A,2=B (value_map in Python), use a "
                "named importer such as pandalm, or write A/B/tie")
    raise ItemError(f"{what} must be 'A', 'B', 'tie' or {empty}, got {v!r}{hint}", path=path, row=row,
                    field=field)


def read_rows(p: Path, problems: Problems | None = None) -> list[tuple[int, dict[str, Any]]]:
    """The rows of a table or JSON (Lines) file; with ``problems``, unreadable rows and lines are recorded
    there, among the problems of the rows that were read."""
    if p.suffix.lower() in (".csv", ".tsv", ".parquet"):
        return read_table_rows(p, problems=problems)
    return read_records(p, problems=problems)


@dataclass(frozen=True, kw_only=True)
class _Spec(ColumnReader):
    """What holds for every row of one file (source column names resolved once: rows are many); where
    each field is read and what its values mean is the :class:`~verdictlab.datasets.columns.ColumnReader`
    it extends (``--map``, ``--map-values``)."""

    src: str
    name: str
    defaults: dict[str, Any]
    verdicts: str
    id_from: str = "column"
    absent: frozenset[str] = frozenset()      # fields no row has (reported once, then not per row)
    detail: str = ""       # "imported from NAME row "
    # the optional fields whose column the file has (resolved once: rows are many)
    texts_present: tuple[tuple[str, str], ...] = ()
    numbers_present: tuple[tuple[str, str, Range], ...] = ()
    items_present: bool = False
    # (field, source column) of the trial key when no column is taken by --map or value-mapped
    plain_key: tuple[tuple[str, str], ...] = ()
    plain_words: tuple[str, str] | tuple[()] = ()     # the verdict and label columns, when read as written
    preferences_present: tuple[str, ...] = ()          # soft-preference / score-pair fields the file has
    derive_verdict: bool = False       # no verdict column: the verdict comes from the preferences (_preferences)

    @classmethod
    def resolved(cls, field_map: dict[str, str], **kwargs: Any) -> _Spec:
        """A spec that knows which fields' own columns another field was mapped to: with
        ``--map verdict=judge`` the column 'judge' holds verdicts, so the judge id comes from
        ``--judge``, never from the verdict cells."""
        return cls(field_map=field_map, taken=ColumnReader.taken_by(field_map, KNOWN), **kwargs)

    def err(self, msg: str, row: int, name: str) -> ItemError:
        return ItemError(msg, path=self.src, row=row, field=self.field_map.get(name, name))


def _absent_fields(spec: _Spec, rows: list[tuple[int, dict[str, Any]]], columns: dict[str, None],
                   problems: Problems) -> frozenset[str]:
    """The required fields that no row has and no option gives: one problem each, naming the file's
    columns and the fix (the whole-file option, ``--map``, ``--id-from``)."""
    shown = ", ".join(list(columns)[:12]) + (", ..." if len(columns) > 12 else "")
    absent = set()
    for name in REQUIRED:
        if spec.has(columns, name) or spec.defaults.get(name) is not None or name in ASSUMED:
            continue
        if name == "item_id" and spec.id_from != "column":
            continue
        if name == "verdict" and any(spec.has(columns, n) for n in PREFERENCE_COLUMNS):
            continue              # derived from the soft preference / score pair (_preferences)
        absent.add(name)
        fix = f"name your column: --map {name}=COLUMN (field_map in Python); the file's columns: {shown or 'none'}"
        if name == "item_id":
            msg = f"missing required column; derive ids with --id-from hash (question + both responses) or row, or {fix}"
        elif name == "verdict":
            msg = (f"missing required column (or give a soft preference p_a / p_first or a score pair to derive "
                   f"it from); {fix}")
        else:
            msg = f"missing required column (or give it for the whole file: --{name}); or {fix}"
        problems.add(ItemError(msg, path=spec.src, row=rows[0][0], field=spec.source(name)))
    if spec.id_from != "column" and spec.has(columns, "item_id"):
        problems.add(ItemError(f"--id-from {spec.id_from} derives item ids, but the file has an item_id column "
                               "(drop --id-from, or --map item_id=OTHER to read another column)",
                               path=spec.src, field=spec.source("item_id")))
    return frozenset(absent)


def _item_id(spec: _Spec, rec: dict[str, Any], row: int, index: int) -> str:
    if spec.id_from != "column":
        return derived_id(spec, rec, id_from=spec.id_from, index=index, path=spec.src, row=row)
    return _text_key(spec, rec, row, "item_id")


def _text_key(spec: _Spec, rec: dict[str, Any], row: int, name: str) -> str:
    srcname, v = spec.col(rec, name)
    if v is None:
        if spec.defaults.get(name) is None:
            raise spec.err("is empty" if spec.has(rec, name) else "missing required column", row, name)
        return str(spec.defaults[name])
    return text_id(v, path=spec.src, row=row, field=srcname)


def _key_value(spec: _Spec, rec: dict[str, Any], row: int, name: str) -> Any:
    srcname, v = spec.col(rec, name)
    if name == "temperature" and type(v) is float and TEMPERATURE.contains(v):
        return v                           # the common case (NaN fails contains)
    if v is None:
        v = spec.defaults.get(name)
        if v is None:
            if name in ASSUMED and not spec.has(rec, name):
                return ASSUMED[name]
            hint = f" (or give it for the whole file: --{name})"
            raise spec.err(f"{'is empty' if spec.has(rec, name) else 'missing required column'}{hint}", row, name)
    if name == "order":
        word = v.strip() if isinstance(v, str) else v
        if word not in ORDERS:
            raise spec.err(f"order must be 'AB' or 'BA', got {v!r}", row, "order")
        return word
    if name == "rep":
        return v if type(v) is int and v >= 0 else _int(v, path=spec.src, row=row, field=srcname, range_=REP)
    return _float(v, path=spec.src, row=row, field=srcname, range_=TEMPERATURE)


def _plain_key(spec: _Spec, rec: dict[str, Any]) -> dict[str, Any] | None:
    """The trial key when every cell is already what it must be (text ids, 'AB'/'BA', an int rep >= 0, a
    float temperature in range) -- the common case of a large log, checked without a call per cell;
    None sends the row through the full checks of :func:`_key`."""
    vals: dict[str, Any] = {}
    for name, src in spec.plain_key:
        v = rec.get(src)
        if v is None:
            if src in rec:                  # an empty cell: the full checks say so
                return None
            v = spec.defaults.get(name)
            if v is None:
                v = ASSUMED.get(name)
                if v is None:
                    return None
        vals[name] = v
    if spec.id_from != "column":
        return None
    for name in ("item_id", "judge", "protocol", "dataset"):
        v = vals[name]
        if type(v) is not str or not v.strip():
            return None
    t, rep = vals["temperature"], vals["rep"]
    if vals["order"] not in ORDERS or type(rep) is not int or rep < 0:
        return None
    if type(t) is int:
        t = vals["temperature"] = float(t)
    if type(t) is not float or not TEMPERATURE.contains(t):
        return None
    return vals


def _key(spec: _Spec, rec: dict[str, Any], row: int, index: int, problems: Problems) -> dict[str, Any] | None:
    if spec.plain_key:
        plain = _plain_key(spec, rec)
        if plain is not None:
            return plain
    vals: dict[str, Any] = {}
    for name in KEY_COLUMNS:
        if name in spec.absent:
            continue
        try:        # try/except, not a context manager per cell: rows are many
            if name == "item_id":
                vals[name] = _item_id(spec, rec, row, index)
            elif name in ("judge", "protocol", "dataset"):
                vals[name] = _text_key(spec, rec, row, name)
            else:
                vals[name] = _key_value(spec, rec, row, name)
        except ItemError as exc:
            problems.add(exc)
    return vals if len(vals) == len(KEY_COLUMNS) else None


def _optional(spec: _Spec, rec: dict[str, Any], row: int, problems: Problems) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    for name, srcname in spec.texts_present:
        v = rec.get(srcname)
        if v is not None:
            extra[name] = v if type(v) is str else str(v)
    for name, srcname, range_ in spec.numbers_present:
        v = rec.get(srcname)
        if v is None:
            continue
        if type(v) is (int if range_.integer else float) and range_.contains(v) and (range_.integer or math.isfinite(v)):
            extra[name] = v             # the common case, without a call per check
            continue
        try:
            extra[name] = (_int if range_.integer else _float)(v, path=spec.src, row=row, field=srcname, range_=range_)
        except ItemError as exc:
            problems.add(exc)
    return extra


def _parse_status(spec: _Spec, rec: dict[str, Any], row: int, verdict: str | None) -> str | None:
    status = spec.col(rec, "parse_status")[1]
    if status is None:
        return None
    if isinstance(status, str):
        status = status.strip()
    if status not in PARSE_STATUSES:
        raise spec.err(f"must be one of {list(PARSE_STATUSES)}, got {status!r}", row, "parse_status")
    if status == "failed" and verdict is not None:
        raise spec.err("a 'failed' parse cannot have a verdict", row, "parse_status")
    if status != "failed" and verdict is None:
        raise spec.err(f"parse_status {status!r} needs a verdict (use 'failed' for none)", row, "parse_status")
    return str(status)


def _words(spec: _Spec, rec: dict[str, Any], row: int, problems: Problems) -> tuple[str | None, str | None] | None:
    """(shown verdict word, label word), or None when either cell is wrong (the problem recorded)."""
    if spec.plain_words:            # the common case: A/B/tie or empty as written, no map, no call per cell
        shown, label = rec.get(spec.plain_words[0]), rec.get(spec.plain_words[1])
        if ((shown is None or type(shown) is str and shown in _EXACT)
                and (label is None or type(label) is str and label in _EXACT)):
            return shown, label
    out: list[str | None] = []
    for name in ("verdict", "label"):
        if name in spec.absent:
            continue
        if name == "verdict" and spec.derive_verdict:
            out.append(None)
            continue
        srcname, raw = spec.col(rec, name)
        try:
            out.append(_verdict_word(raw, what=name, path=spec.src, row=row, field=srcname))
        except ItemError as exc:
            problems.add(exc)
    return (out[0], out[1]) if len(out) == 2 else None


def _preference(spec: _Spec, rec: dict[str, Any], row: int, order: str) -> Preference:
    """The row's soft preference / score pair (:mod:`._preferences`)."""
    values = {name: v for name in spec.preferences_present if (v := spec.col(rec, name)[1]) is not None}
    if not values:
        return Preference()
    return read_preference(values, order, lambda msg, name: spec.err(msg, row, name))


def _detail(spec: _Spec, rec: dict[str, Any], row: int, given: str | None, key: dict[str, Any], shown: str | None,
            verdict: str | None, pref: Preference) -> str:
    """The row's ``parse_detail``: where it came from and every conversion made."""
    detail = given or f"{spec.detail}{row}"
    if spec.verdicts == "positional" and spec.col(rec, "verdict")[1] is not None:   # an empty cell too
        detail += f"; positional verdict {shown!r} shown {key['order']} -> canonical {verdict!r}"
    if spec.derive_verdict and pref.rule:
        detail += f"; verdict {verdict!r} derived {pref.rule}"
    if pref.detail:
        detail += f"; {pref.detail}"
    return detail


def _judgment(spec: _Spec, rec: dict[str, Any], row: int, index: int,
              problems: Problems) -> tuple[dict[str, Any] | None, PairItem | None, str | None]:
    """The row's judgment, its item (when the row carries the texts) and the rule that derived its
    verdict (None when the verdict came from a verdict column); (None, None, None) when the row has
    problems (recorded)."""
    n = problems.count
    key = _key(spec, rec, row, index, problems)
    words = _words(spec, rec, row, problems)
    extra = _optional(spec, rec, row, problems)
    pref = Preference()
    if spec.preferences_present:        # checked whatever else is wrong: every problem of the row at once
        try:
            pref = _preference(spec, rec, row, key["order"] if key is not None else "AB")
        except ItemError as exc:
            problems.add(exc)
    if key is None or words is None or problems.count > n:
        return None, None, None
    shown, label = words
    verdict = pref.verdict if spec.derive_verdict else swap(shown, key["order"]) if spec.verdicts == "positional" \
        else shown
    status = _parse_status(spec, rec, row, verdict)
    detail = _detail(spec, rec, row, extra.pop("parse_detail", None), key, shown, verdict, pref)
    r = judgment_row(**key, verdict=verdict, label=label, step=extra.pop("step", ""),
                     category=extra.pop("category", None), raw_output=extra.pop("raw_output", None),
                     parse_status=status, parse_detail=detail, p_a=pref.p_a, scores=pref.scores, **extra)
    r["_row"] = row
    rule = pref.rule if spec.derive_verdict else None
    if not spec.items_present:
        return r, None, rule      # no item texts in this file (the common case for big judgment logs)
    texts = {name: spec.col(rec, name)[1] for name in ITEM_COLUMNS}
    if not all(isinstance(t, str) for t in texts.values()):
        return r, None, rule
    ref = spec.col(rec, "reference")[1]
    item = make_pair_item({"item_id": key["item_id"], "dataset": key["dataset"], **texts, "label": label,
                           "category": r["category"], "reference": ref if isinstance(ref, str) else None,
                           "system_a": r["system_a"], "system_b": r["system_b"]},
                          path=spec.src, row=row)
    return r, item, rule


class _ItemTexts:
    """The first item seen for each (dataset, item_id), to refuse a later row whose texts differ."""

    def __init__(self, spec: _Spec) -> None:
        self.spec = spec
        self.first: dict[tuple[str, str], tuple[PairItem, int]] = {}
        self.items: list[PairItem] = []

    def add(self, item: PairItem, row: int, problems: Problems) -> None:
        key = (item.dataset, item.item_id)
        seen = self.first.get(key)
        if seen is None:
            self.first[key] = (item, row)
            self.items.append(item)
            return
        prev, prev_row = seen
        for name in ITEM_TEXTS:
            if getattr(prev, name) != getattr(item, name):
                problems.add(ItemError(f"item {item.item_id!r} of dataset {item.dataset!r} appears twice with "
                                       f"different content: its {name} differs from row {prev_row} (one item has "
                                       "one text: fix the file, or give the two items different ids)",
                                       path=self.spec.src, row=row, field=self.spec.source(name)))


def _check_options(format: str, verdicts: str, order: str | None, id_from: str, temperature: float | None,
                   rep: int | None, options: dict[str, Any]) -> None:
    if options:
        raise ItemError(f"unknown option(s) for the {format} importer: {', '.join(sorted(options))}")
    if verdicts not in VERDICT_TERMS:
        raise ItemError(f"verdicts must be one of {list(VERDICT_TERMS)}, got {verdicts!r}", field="verdicts")
    if order is not None and order not in ORDERS:
        raise ItemError(f"order must be 'AB' or 'BA', got {order!r}", field="order")
    if id_from not in ID_SOURCES:
        raise ItemError(f"id_from must be one of {list(ID_SOURCES)}, got {id_from!r}", field="id-from")
    check_options({"temperature": temperature, "rep": rep})


def _notes(spec: _Spec, p: Path, n_rows: int, n_items: int, assumed: list[str],
           derived_rules: set[str | None]) -> list[str]:
    notes = [f"{n_rows} judgment row(s) from {p.name}", f"verdict rule: {_RULES[spec.verdicts]}"]
    notes += [f"verdict rule: where the table has no verdict column, the verdict is derived {rule}"
              for rule in sorted(r for r in derived_rules if r)]
    if spec.id_from in _ID_NOTES:
        notes.append(_ID_NOTES[spec.id_from])
    notes += [f"{name} {ASSUMED[name]:g} assumed for every row (no {name} column, no --{name})" for name in assumed]
    for name, mapping in spec.value_map.items():
        notes.append(f"values mapped ({name}): " + ", ".join(f"{k} -> {v or 'empty'}" for k, v in mapping.items()))
    if n_items:
        notes.append("items taken from the question / response_a / response_b columns")
    return notes


#: the fields an id join fills (``--answers``): the ids of the two responses as shown, or as canonical
JOIN_FIELDS = ("answer_first_id", "answer_second_id", "answer_a_id", "answer_b_id")
#: the file suffixes each format reads from a folder
SUFFIXES = {"csv": (".csv", ".tsv"), "jsonl": (".jsonl", ".json"), "parquet": (".parquet",),
            "table": (".csv", ".tsv", ".jsonl", ".json", ".parquet")}


@dataclass(frozen=True)
class _Keys:
    """Where one file's rows find keys besides their columns (:mod:`._keys`): the file name's groups,
    the ``column[i]`` sources, the answers an id join reads."""

    field_map: dict[str, str]
    file_keys: dict[str, str]
    lists: dict[str, tuple[str, int]]
    answers: Answers | None
    pair_ids: bool
    questions: Mapping[str, str] = field(default_factory=dict)

    def source(self, name: str) -> str:
        return self.field_map.get(name, name)

    def prepare(self, rec: dict[str, Any], *, path: str, row: int) -> None:
        """Put the row's keys from the file name, list columns and the id join under the source names
        of their fields (the file name fills what the row leaves empty, a different value is an error; the
        id join wins over both)."""
        if self.lists:
            add_list_values(rec, self.lists, path=path, row=row)
        for name, value in self._name_keys().items():
            if fills(rec.get(self.source(name)), value, name=name, what="the row", path=path, row=row,
                     field=self.source(name)):
                rec[self.source(name)] = value
        if self.answers is not None:
            self._join(rec, path=path, row=row)
        if self.pair_ids:
            sa, sb = rec.get(self.source("system_a")), rec.get(self.source("system_b"))
            qid = rec.get(self.source("item_id"))
            if not (isinstance(sa, str) and isinstance(sb, str)) or qid is None:
                raise ItemError("--id-from pair needs the question id (item_id) and both systems", path=path,
                                row=row, field=self.source("item_id"))
            rec[self.source("item_id")] = pair_item_id(text_id(qid, path=path, row=row, field=self.source("item_id")),
                                                       sa, sb)

    def _name_keys(self) -> dict[str, str]:
        """The file name's keys, ``system_first`` / ``system_second`` made canonical: A the name that sorts
        first, the order the one they were shown in."""
        keys = {k: v for k, v in self.file_keys.items() if k not in ("system_first", "system_second")}
        if "system_first" in self.file_keys and "system_second" in self.file_keys:
            first, second = self.file_keys["system_first"], self.file_keys["system_second"]
            a_first = first <= second
            keys.update(system_a=first if a_first else second, system_b=second if a_first else first,
                        order="AB" if a_first else "BA")
        return keys

    def _join(self, rec: dict[str, Any], *, path: str, row: int) -> None:
        assert self.answers is not None
        src = {name: self.source(name) for name in JOIN_FIELDS}
        if rec.get(src["answer_first_id"]) is not None or rec.get(src["answer_second_id"]) is not None:
            first = self.answers.get(rec.get(src["answer_first_id"]), path=path, row=row, field=src["answer_first_id"])
            second = self.answers.get(rec.get(src["answer_second_id"]), path=path, row=row,
                                      field=src["answer_second_id"])
            pair = shown_pair(first, second, path=path, row=row, field=src["answer_second_id"])
            given = rec.get(self.source("order"))
            if given is not None and given != pair.order and self.source("order") not in self.file_keys:
                raise ItemError(f"the answer ids show {pair.system_a if pair.order == 'AB' else pair.system_b!r} "
                                f"first (order {pair.order}), the order column says {given!r}", path=path, row=row,
                                field=self.source("order"))
            rec[self.source("order")] = pair.order
            values = {"system_a": pair.system_a, "system_b": pair.system_b, "response_a": pair.response_a,
                      "response_b": pair.response_b}
        elif rec.get(src["answer_a_id"]) is not None or rec.get(src["answer_b_id"]) is not None:
            a = self.answers.get(rec.get(src["answer_a_id"]), path=path, row=row, field=src["answer_a_id"])
            b = self.answers.get(rec.get(src["answer_b_id"]), path=path, row=row, field=src["answer_b_id"])
            first = a
            values = {"system_a": a.system, "system_b": b.system, "response_a": a.text, "response_b": b.text}
        else:
            return
        for name, value in values.items():
            rec[self.source(name)] = value
        if rec.get(self.source("question")) is None:     # the question file beside the answers, else empty
            rec[self.source("question")] = self.questions.get(str(first.question_id), "")


def import_table(path: str | Path, *, format: str = "table", judge: str | None = None,
                 protocol: str | None = None, dataset: str | None = None,
                 temperature: float | None = None, rep: int | None = None, order: str | None = None,
                 verdicts: str = "canonical", field_map: dict[str, str] | None = None,
                 id_from: str = "column", value_map: Mapping[str, Mapping[Any, Any]] | None = None,
                 file_pattern: str | None = None, answers: str | Path | None = None,
                 **options: Any) -> ImportBatch:
    """Read a table of judgments, or every table of a folder (see the module docstring).  Every problem
    of the files is collected and raised at once (:class:`~verdictlab.core.items.ItemProblems`; a single
    one as it is)."""
    _check_options(format, verdicts, order, id_from, temperature, rep, options)
    p = Path(path)
    if not p.exists():
        raise ItemError("file not found", path=str(p))
    field_map = dict(field_map or {})
    unknown_targets = set(field_map) - KNOWN - set(JOIN_FIELDS)
    if unknown_targets:
        raise ItemError(f"--map names unknown judgment column(s) {sorted(unknown_targets)}; known: "
                        f"{sorted(KNOWN | set(JOIN_FIELDS))}", path=str(p), field=sorted(unknown_targets)[0])
    if value_map and "vote" in value_map:
        raise ItemError("--map-values vote: applies to the votes format (a judgment table has verdicts)",
                        field="map-values")
    defaults = {"judge": judge, "protocol": protocol, "dataset": dataset, "temperature": temperature, "rep": rep,
                "order": order}
    pattern = judgment_pattern(file_pattern, defaults) if file_pattern else None
    joined = Answers.read(answers) if answers is not None else None
    questions: dict[str, str] = {}
    if answers is not None:
        from .fastchat_reviews import find_questions, read_questions

        where = Path(answers) if Path(answers).is_dir() else Path(answers).parent
        questions = read_questions(find_questions(where, where.parent))
    files = files_of(p, SUFFIXES.get(format, SUFFIXES["table"]))
    problems = Problems(str(p))
    batch = ImportBatch(format=format, source=str(p), judgments=[])
    texts: _ItemTexts | None = None
    for f in files:
        try:
            file_keys = pattern.keys(f) if pattern is not None else {}
        except ItemError as exc:
            problems.add(exc)
            continue
        keys = _Keys(field_map, file_keys, list_sources(field_map), joined, id_from == "pair", questions)
        spec = _Spec.resolved(field_map, src=str(f), name=f.name, verdicts=verdicts,
                              id_from="column" if id_from == "pair" else id_from,
                              value_map=check_value_map(value_map), detail=f"imported from {f.name} row ",
                              defaults=defaults)
        texts = _ItemTexts(spec) if texts is None else texts
        _import_file(f, spec, keys, batch, texts, problems)
    batch.items = list(texts.items) if texts is not None else []
    if len(files) > 1:
        batch.notes.insert(0, f"{len(batch.judgments)} judgment row(s) from {len(files)} file(s) of {p.name}")
    if pattern is not None:
        batch.notes.append(f"keys from each file name by --file-pattern {pattern.pattern!r}")
    if id_from == "pair":
        batch.notes.append(_ID_NOTES["pair"])
    if joined is not None:
        batch.notes.append(f"systems and response texts joined by answer id from {answers} "
                           f"({len(joined.by_id)} answer(s)); canonical A = the system whose name sorts first")
    if not problems:
        check_batch(batch, problems)
    problems.raise_if_any()
    batch.checked = True
    return batch


def _import_file(p: Path, spec: _Spec, keys: _Keys, batch: ImportBatch, texts: _ItemTexts,
                 problems: Problems) -> None:
    """The judgments (and items) of one file into ``batch``; its problems into ``problems``."""
    derived_rules: set[str | None] = set()
    n_before = len(batch.judgments)
    texts.spec = spec
    with gc_paused():
        n_problems = problems.count
        rows = read_rows(p, problems)
        if not rows:     # "no records" unless its lines were listed as unreadable
            if problems.count == n_problems:
                problems.add(ItemError("no records", path=str(p)))
            return
        if keys.lists or keys.file_keys or keys.answers is not None or keys.pair_ids:
            for row, rec in rows:
                try:
                    keys.prepare(rec, path=str(p), row=row)
                except ItemError as exc:
                    problems.add(exc)
        spec = _with_columns(spec, rows, problems)
        for index, (row, rec) in enumerate(rows, start=1):
            try:
                r, item, rule = _judgment(spec, rec, row, index, problems)
            except ItemError as exc:
                problems.add(exc)
                continue
            derived_rules.add(rule)
            if r is not None:
                batch.judgments.append(r)
            if item is not None:
                texts.add(item, row, problems)
        assumed = [name for name in ASSUMED if spec.defaults.get(name) is None
                   and not any(spec.has(rec, name) for _, rec in rows)]
    for note in _notes(spec, p, len(batch.judgments) - n_before, len(texts.items), assumed, derived_rules):
        if note not in batch.notes:
            batch.notes.append(note)


def _with_columns(spec: _Spec, rows: list[tuple[int, dict[str, Any]]], problems: Problems) -> _Spec:
    """The spec completed from the file's columns: required fields no row has (one problem each) and
    the optional fields it has."""
    columns: dict[str, None] = {}
    for _, rec in rows:
        if len(rec) != len(columns) or not rec.keys() <= columns.keys():
            columns.update(dict.fromkeys(rec))
    return replace(spec, absent=_absent_fields(spec, rows, columns, problems),
                   texts_present=tuple((n, spec.source(n)) for n in TEXT_OPTIONAL if spec.has(columns, n)),
                   numbers_present=tuple((n, spec.source(n), r) for n, r in NUMBER_OPTIONAL.items()
                                         if spec.has(columns, n)),
                   items_present=all(spec.has(columns, n) for n in ITEM_COLUMNS),
                   preferences_present=tuple(n for n in PREFERENCE_COLUMNS if spec.has(columns, n)),
                   derive_verdict=not spec.has(columns, "verdict") and any(spec.has(columns, n)
                                                                           for n in PREFERENCE_COLUMNS),
                   plain_key=(() if set(KEY_COLUMNS) & (spec.taken | set(spec.value_map)) else
                              tuple((n, spec.source(n)) for n in KEY_COLUMNS)),
                   plain_words=(() if {"verdict", "label"} & (spec.taken | set(spec.value_map) | spec.absent) else
                                (spec.source("verdict"), spec.source("label"))))


def import_csv(path: str | Path, *, file_pattern: str | None = None, **options: Any) -> ImportBatch:
    return import_table(path, format="csv", file_pattern=file_pattern, **options)


def import_jsonl(path: str | Path, *, file_pattern: str | None = None, **options: Any) -> ImportBatch:
    return import_table(path, format="jsonl", file_pattern=file_pattern, **options)


def import_parquet(path: str | Path, *, file_pattern: str | None = None, **options: Any) -> ImportBatch:
    return import_table(path, format="parquet", file_pattern=file_pattern, **options)
