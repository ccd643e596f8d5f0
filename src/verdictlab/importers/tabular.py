"""Import judgments from a table: CSV, JSON Lines or Parquet, one judgment per row.

Columns (rename any of them with ``field_map={"verdict": "winner", ...}`` / ``--map verdict=winner``):

- trial key: ``item_id, judge, protocol, dataset, order ('AB'|'BA'), rep, temperature``.  Every key
  column but ``item_id`` may instead be given once for the whole file (options / CLI flags
  ``--judge --protocol --dataset --order --rep --temperature``); a column wins over the option.
- ``verdict``: ``A``/``B``/``tie``; empty = the judge's output was not parsed.  Its terms are the
  ``verdicts`` option, a recorded rule (ImportBatch ``rule`` and every row's ``parse_detail``):

  * ``canonical`` (default): ``A`` is ``response_a`` whatever the order (verdictlab's own terms);
  * ``positional``: ``A`` is the response shown *first*, ``B`` the one shown second; it is converted
    to canonical terms with the row's order (``BA`` swaps A and B; ``tie`` and empty stay).

  A number (``1``/``2``/``0``, as some logs write) is refused with a message saying so: a named
  importer (e.g. ``pandalm``) knows what its source's numbers mean, a generic table does not.
- ``label`` (gold, canonical ``A``/``B``/``tie``/empty): optional -- absent means unlabelled, and
  ``--items`` can attach labels by item id afterwards.
- soft preferences and score pairs (:mod:`verdictlab.importers._preferences`): ``p_a`` (P(response_a)
  wins) or ``p_first`` (P(the response shown first) wins), stored as ``p_a``; ``score_a``/``score_b``
  or ``score_first``/``score_second`` (both responses scored in one call), stored in ``scores``.  With
  no verdict column the verdict is derived from them by a stated rule (higher P or score wins, equal is
  a tie), recorded in the notes and every row's ``parse_detail``.
- optional: ``step, category, raw_output, parse_status, parse_detail, fallback_rule, latency_s,
  tokens_in, tokens_out, cost_usd``; with ``question, response_a, response_b`` (and ``reference``)
  the rows also give the items (one item per dataset and item_id; rows that disagree are an error).
  Without ``parse_status`` a row is 'ok' when it has a verdict and 'failed' when it has none.

Every problem is reported with file, row and column, and says which field it is (verdict or label).
"""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..datasets._common import read_records
from ..datasets.tabular import read_table_rows
from ..items import ItemError, PairItem, make_pair_item
from ..vocab import ORDERS, PARSE_STATUSES, swap
from ._batch import ImportBatch, judgment_row
from ._preferences import PREFERENCE_COLUMNS, Preference, read_preference

KEY_COLUMNS = ("item_id", "judge", "protocol", "dataset", "order", "rep", "temperature")
REQUIRED = (*KEY_COLUMNS, "verdict")
TEXT_OPTIONAL = ("step", "category", "raw_output", "parse_detail", "fallback_rule")
FLOAT_OPTIONAL = ("latency_s", "cost_usd")
INT_OPTIONAL = ("tokens_in", "tokens_out")
ITEM_COLUMNS = ("question", "response_a", "response_b")
KNOWN = (set(REQUIRED) | {"label"} | set(TEXT_OPTIONAL) | set(FLOAT_OPTIONAL) | set(INT_OPTIONAL)
         | {"parse_status", "reference"} | set(ITEM_COLUMNS) | set(PREFERENCE_COLUMNS))
VERDICT_TERMS = ("canonical", "positional")
_WORDS = {"A": "A", "B": "B", "a": "A", "b": "B", "tie": "tie", "Tie": "tie", "TIE": "tie"}
_RULES = {
    "canonical": "table-canonical: verdict A/B names response_a/response_b whatever the order",
    "positional": "table-positional: verdict A/B names the response shown first/second; "
                  "canonical = swap(verdict, order)",
}


def _float(v: Any, *, path: str, row: int, field: str) -> float:
    if type(v) is float and math.isfinite(v):
        return v
    if isinstance(v, bool):
        raise ItemError(f"must be a number, got {v!r}", path=path, row=row, field=field)
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ItemError(f"must be a number, got {v!r}", path=path, row=row, field=field) from None
    if not math.isfinite(f):
        raise ItemError(f"must be a finite number, got {v!r}", path=path, row=row, field=field)
    return f


def _int(v: Any, *, path: str, row: int, field: str) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    f = _float(v, path=path, row=row, field=field)
    if not f.is_integer():
        raise ItemError(f"must be an integer, got {v!r}", path=path, row=row, field=field)
    return int(f)


def _verdict_word(v: Any, *, what: str, path: str, row: int, field: str) -> str | None:
    """``A``/``B``/``tie`` (or None for empty) from a verdict or label cell, with an error that says
    which of the two it is."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, str) and v.strip() in _WORDS:
        return _WORDS[v.strip()]
    empty = "empty (the judge's output was not parsed)" if what == "verdict" else "empty (unlabelled)"
    hint = ""
    if isinstance(v, int | float) and not isinstance(v, bool):
        hint = ("; a number is not read as a verdict or label here (its meaning depends on the source: "
                "use a named importer such as pandalm, or write A/B/tie)")
    raise ItemError(f"{what} must be 'A', 'B', 'tie' or {empty}, got {v!r}{hint}", path=path, row=row,
                    field=field)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while hundreds of thousands of row dicts are built: it would
    rescan all of them again and again (~15% of the import time at 200k rows), and nothing built here
    forms a reference cycle."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_rows(p: Path) -> list[tuple[int, dict[str, Any]]]:
    if p.suffix.lower() in (".csv", ".tsv", ".parquet"):
        return read_table_rows(p)
    return read_records(p)


@dataclass(frozen=True)
class _Spec:
    """What holds for every row of one file (source column names resolved once: rows are many)."""

    src: str
    name: str
    field_map: dict[str, str]
    defaults: dict[str, Any]
    verdicts: str
    detail: str = ""       # "imported from NAME row "

    def col(self, rec: dict[str, Any], name: str) -> tuple[str, Any]:
        """(source column name, value or None)."""
        srcname = self.field_map.get(name, name)
        return srcname, rec.get(srcname)

    def err(self, msg: str, row: int, name: str) -> ItemError:
        return ItemError(msg, path=self.src, row=row, field=self.field_map.get(name, name))


def _key(spec: _Spec, rec: dict[str, Any], row: int) -> dict[str, Any]:
    vals: dict[str, Any] = {}
    fm = spec.field_map
    for name in KEY_COLUMNS:
        srcname = fm.get(name, name)
        v = rec.get(srcname)
        if v is None:
            if spec.defaults.get(name) is None:
                hint = "" if name == "item_id" else f" (or give it for the whole file: --{name})"
                what = "is empty" if srcname in rec else "missing required column"
                raise spec.err(f"{what}{hint}", row, name)
            v = spec.defaults[name]
        vals[name] = v
    for name in ("item_id", "judge", "protocol", "dataset"):
        v = vals[name]
        if type(v) is not str:
            if isinstance(v, bool):
                raise spec.err("must not be empty", row, name)
            vals[name] = str(v)
        elif not v.strip():
            raise spec.err("must not be empty", row, name)
    if vals["order"] not in ORDERS:
        raise spec.err(f"order must be 'AB' or 'BA', got {vals['order']!r}", row, "order")
    rep = vals["rep"]
    if type(rep) is not int:
        rep = vals["rep"] = _int(rep, path=spec.src, row=row, field=fm.get("rep", "rep"))
    if rep < 0:
        raise spec.err("must be >= 0", row, "rep")
    t = vals["temperature"]
    if type(t) is not float or not math.isfinite(t):
        vals["temperature"] = _float(t, path=spec.src, row=row, field=fm.get("temperature", "temperature"))
    return vals


def _optional(spec: _Spec, rec: dict[str, Any], row: int) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    fm = spec.field_map
    for name in TEXT_OPTIONAL:
        v = rec.get(fm.get(name, name))
        if v is not None:
            extra[name] = v if type(v) is str else str(v)
    for names, conv in ((FLOAT_OPTIONAL, _float), (INT_OPTIONAL, _int)):
        for name in names:
            srcname = fm.get(name, name)
            v = rec.get(srcname)
            if v is not None:
                extra[name] = conv(v, path=spec.src, row=row, field=srcname)
    return extra


def _preference(spec: _Spec, rec: dict[str, Any], row: int, order: str) -> tuple[Preference, bool]:
    """The row's soft preference / score pair, and whether the row has any of their columns (an
    empty one included: then a verdict derived from them is "none", an unparsed row)."""
    cols = [name for name in PREFERENCE_COLUMNS if spec.field_map.get(name, name) in rec]
    values = {name: v for name in cols if (v := spec.col(rec, name)[1]) is not None}
    if not values:
        return Preference(), bool(cols)
    return read_preference(values, order, lambda msg, name: spec.err(msg, row, name)), True


def _parse_status(spec: _Spec, rec: dict[str, Any], row: int, verdict: str | None) -> str | None:
    status = spec.col(rec, "parse_status")[1]
    if status is None:
        return None
    if status not in PARSE_STATUSES:
        raise spec.err(f"must be one of {list(PARSE_STATUSES)}, got {status!r}", row, "parse_status")
    if status == "failed" and verdict is not None:
        raise spec.err("a 'failed' parse cannot have a verdict", row, "parse_status")
    if status != "failed" and verdict is None:
        raise spec.err(f"parse_status {status!r} needs a verdict (use 'failed' for none)", row, "parse_status")
    return str(status)


def _judgment(spec: _Spec, rec: dict[str, Any], row: int) -> tuple[dict[str, Any], PairItem | None, str | None]:
    """The row's judgment, its item (when the row carries the texts) and the rule that derived its
    verdict (None when the verdict came from a verdict column)."""
    key = _key(spec, rec, row)
    srcname, raw_verdict = spec.col(rec, "verdict")
    pref, has_preference = _preference(spec, rec, row, key["order"])
    derived = srcname not in rec and spec.defaults.get("verdict") is None
    if derived and not has_preference:
        raise spec.err("missing required column (or give a soft preference p_a / p_first or a score pair "
                       "to derive it from)", row, "verdict")
    shown = _verdict_word(raw_verdict, what="verdict", path=spec.src, row=row, field=srcname)
    verdict = swap(shown, key["order"]) if spec.verdicts == "positional" else shown
    if derived:
        verdict = pref.verdict
    label_src, raw_label = spec.col(rec, "label")
    label = _verdict_word(raw_label, what="label", path=spec.src, row=row, field=label_src)
    extra = _optional(spec, rec, row)
    status = _parse_status(spec, rec, row, verdict)
    detail = extra.pop("parse_detail", None) or f"{spec.detail}{row}"
    if spec.verdicts == "positional" and raw_verdict is not None:
        detail += f"; positional verdict {shown!r} shown {key['order']} -> canonical {verdict!r}"
    if derived and pref.rule:
        detail += f"; verdict {verdict!r} derived {pref.rule}"
    if pref.detail:
        detail += f"; {pref.detail}"
    r = judgment_row(**key, verdict=verdict, label=label, step=extra.pop("step", ""),
                     category=extra.pop("category", None), raw_output=extra.pop("raw_output", None),
                     parse_status=status, parse_detail=detail, p_a=pref.p_a, scores=pref.scores, **extra)
    r["_row"] = row
    rule = pref.rule if derived else None
    if not isinstance(rec.get(spec.field_map.get("question", "question")), str):
        return r, None, rule      # no item texts in this row (the common case for big judgment logs)
    texts = {name: spec.col(rec, name)[1] for name in ITEM_COLUMNS}
    if not all(isinstance(t, str) for t in texts.values()):
        return r, None, rule
    ref = spec.col(rec, "reference")[1]
    item = make_pair_item({"item_id": key["item_id"], "dataset": key["dataset"], **texts, "label": label,
                           "category": r["category"], "reference": ref if isinstance(ref, str) else None},
                          path=spec.src, row=row)
    return r, item, rule


def import_table(path: str | Path, *, format: str = "table", judge: str | None = None,
                 protocol: str | None = None, dataset: str | None = None,
                 temperature: float | None = None, rep: int | None = None, order: str | None = None,
                 verdicts: str = "canonical", field_map: dict[str, str] | None = None,
                 **options: Any) -> ImportBatch:
    """Read a table of judgments (see the module docstring)."""
    if options:
        raise ItemError(f"unknown option(s) for the {format} importer: {', '.join(sorted(options))}")
    if verdicts not in VERDICT_TERMS:
        raise ItemError(f"verdicts must be one of {list(VERDICT_TERMS)}, got {verdicts!r}", field="verdicts")
    if order is not None and order not in ORDERS:
        raise ItemError(f"order must be 'AB' or 'BA', got {order!r}", field="order")
    p = Path(path)
    if not p.is_file():
        raise ItemError("file not found", path=str(p))
    field_map = dict(field_map or {})
    unknown_targets = set(field_map) - KNOWN
    if unknown_targets:
        raise ItemError(f"--map names unknown judgment column(s) {sorted(unknown_targets)}; known: "
                        f"{sorted(KNOWN)}", path=str(p), field=sorted(unknown_targets)[0])
    spec = _Spec(src=str(p), name=p.name, field_map=field_map, verdicts=verdicts,
                 detail=f"imported from {p.name} row ",
                 defaults={"judge": judge, "protocol": protocol, "dataset": dataset,
                           "temperature": temperature, "rep": rep, "order": order})
    judgments: list[dict[str, Any]] = []
    items: list[PairItem] = []
    derived_rules: set[str | None] = set()
    with _gc_paused():
        rows = read_rows(p)
        if not rows:
            raise ItemError("no records", path=str(p))
        for row, rec in rows:
            r, item, rule = _judgment(spec, rec, row)
            judgments.append(r)
            derived_rules.add(rule)
            if item is not None:
                items.append(item)
    notes = [f"{len(judgments)} judgment row(s) from {p.name}", f"verdict rule: {_RULES[verdicts]}"]
    rules = sorted(rule for rule in derived_rules if rule)
    notes += [f"verdict rule: where the table has no verdict column, the verdict is derived {rule}" for rule in rules]
    if items:
        notes.append("items taken from the question / response_a / response_b columns")
    return ImportBatch(format=format, source=str(p), judgments=judgments, items=list(items), notes=notes)


def import_csv(path: str | Path, **options: Any) -> ImportBatch:
    return import_table(path, format="csv", **options)


def import_jsonl(path: str | Path, **options: Any) -> ImportBatch:
    return import_table(path, format="jsonl", **options)


def import_parquet(path: str | Path, **options: Any) -> ImportBatch:
    return import_table(path, format="parquet", **options)
