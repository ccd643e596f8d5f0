"""Human labels from a file: the labels ``verdictlab validate --human`` and ``plan-labels --human`` use.

A label file is JSON Lines, a JSON list, or CSV (``.csv``) / TSV (``.tsv``) with a header, one labelled
item per row:

* ``item_id`` (required, unless ``id_from`` derives it): the item's id, text or an integer;
* ``label`` (required): ``A`` / ``B`` / ``tie`` for a pair, ``PASS`` / ``FAIL`` / ``UNKNOWN`` for a
  point item (any case; JSON ``true`` / ``false`` are PASS / FAIL); empty or ``null`` = no label;
* ``dataset`` (optional): the item's dataset.  An item is named by its full key, dataset and id:
  without this column an id must name items of one dataset only in the run (the join in
  :func:`verdictlab.analyses.human_labels.human_label_keys` refuses an ambiguous id).

A published file is read as it is, with the import's options (:mod:`verdictlab.datasets.columns`, the
same code): ``field_map`` (``--map item_id=question_id --map label=score``) names the columns,
``value_map`` (``--map-values label:1=A,2=B,0=tie``) says what raw labels mean, and ``id_from="row"``
(``--id-from row``) numbers the records 1, 2, ... where the file has no id -- a bare list of labels
(a JSON list of values, or JSON Lines of one value each) is such a file.

Every problem of the file is found and listed at once (:class:`HumanLabelProblems`; one alone is a
:class:`HumanLabelError`, an :class:`~verdictlab.core.items.ItemError`: exit code 3 in the CLI), each
naming the file, the row (file line) and the field as the file calls it: a missing or repeated column,
a CSV written with another separator, a label outside the words above, one item labelled twice
differently, a line that is not JSON, a file without any label.  A caller that checks the rows further
(the join on a run's items, :func:`verdictlab.analyses.human_labels.human_label_keys`) passes its
``problems`` to list its own beside the reader's, then :func:`raise_label_problems`.  The CSV and JSON Lines are read by the package's readers
(:func:`verdictlab.datasets.tabular.read_csv_rows`, :func:`verdictlab.datasets._common.json_lines`):
strict field counts, records split on ``\\n`` only, BOM dropped, JSON within the input limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.items import ItemError, ItemProblems, Problems
from .columns import ID_SOURCES, ColumnReader, check_value_map, derived_id

PAIR_LABELS: tuple[str, ...] = ("A", "B", "tie")
POINT_LABELS: tuple[str, ...] = ("PASS", "FAIL", "UNKNOWN")
_LABEL_WORDS = {w.lower(): w for w in (*PAIR_LABELS, *POINT_LABELS)}
_OTHER_SEPARATORS = ((";", "';'"), ("\t", "tabs"), ("|", "'|'"))
#: the fields a label file's ``field_map`` may name, and what ``value_map`` may translate
FIELDS: tuple[str, ...] = ("item_id", "label", "dataset", "question", "response_a", "response_b")
VALUE_MAP_TARGETS: dict[str, tuple[str, ...]] = {"label": (*PAIR_LABELS, *POINT_LABELS, "")}


class HumanLabelError(ItemError):
    """A human-label file that cannot be used; the message names file, row and field."""


class HumanLabelProblems(HumanLabelError, ItemProblems):
    """Several problems of one label file, every one listed (:class:`~verdictlab.core.items.ItemProblems`)."""


@dataclass(frozen=True)
class HumanLabel:
    """One row of a label file: the item it names (``dataset`` None when the file does not say) and its
    label (None = no label), with the file line it came from."""

    row: int
    item_id: str
    label: str | None
    dataset: str | None = None

    @property
    def kind(self) -> str | None:
        """``"pair"`` for A / B / tie, ``"point"`` for PASS / FAIL / UNKNOWN, None without a label."""
        if self.label in PAIR_LABELS:
            return "pair"
        return "point" if self.label in POINT_LABELS else None


@dataclass(frozen=True)
class HumanLabels:
    """The rows of one label file, in file order; ``columns``: the file's column of each field
    (``item_id``, ``label``, ``dataset``) where ``--map`` names another."""

    path: str
    rows: tuple[HumanLabel, ...]
    columns: Mapping[str, str] = field(default_factory=dict)

    def column(self, name: str) -> str:
        """The file's name of the column of field ``name`` (a problem names the column the user wrote)."""
        return self.columns.get(name, name)

    @property
    def n_labelled(self) -> int:
        return sum(r.label is not None for r in self.rows)


def _records(p: Path, problems: Problems) -> list[tuple[int, dict[str, Any]]]:
    """The file's records; a row that cannot be read is recorded in ``problems`` and left out."""
    from ._common import _rows_from_document, json_lines, parse_json, read_text
    from .tabular import read_csv_rows

    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        _check_separator(p, sep)
        return read_csv_rows(p, sep=sep, problems=problems)
    if not p.is_file():
        raise HumanLabelError("not a regular file" if p.exists() else "file not found", path=str(p))
    text = read_text(p)
    if suffix == ".json":
        import json

        try:
            doc = parse_json(text, path=str(p), row=None)
        except json.JSONDecodeError as exc:
            raise HumanLabelError(f"invalid JSON ({exc.msg}, line {exc.lineno})", path=str(p)) from None
        if isinstance(doc, list):      # a bare list of labels: each value is a row's label
            doc = [v if isinstance(v, dict) else {"label": v} for v in doc]
        return _rows_from_document(doc, p)
    return json_lines(text, path=str(p), problems=problems, bare="label")


def _check_separator(p: Path, sep: str) -> None:
    """A header written with another separator (``item_id;label``) is refused by name, instead of
    reading as one column and failing on a missing ``item_id``."""
    try:
        with p.open(encoding="utf-8-sig", newline="") as fh:
            head = fh.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError):
        return       # the CSV reader names the problem (not a file, not UTF-8) with its line
    if sep in head:
        return
    sep_name = "tabs" if sep == "\t" else repr(sep)
    for other, name in _OTHER_SEPARATORS:
        if other != sep and other in head:
            tsv = " (or save it as .tsv)" if other == "\t" else ""
            raise HumanLabelError(f"the header {head[:80]!r} has its columns separated by {name}, not {sep_name}; "
                                  f"write the file with {sep_name} between columns{tsv}", path=str(p), row=1)


def _label(value: Any, *, path: str, row: int, field: str = "label") -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    word = _LABEL_WORDS.get(str(value).strip().lower()) if isinstance(value, str) else None
    if word is None:
        hint = "; say what your values mean with --map-values label:RAW=WORD" if not isinstance(value, str) else ""
        raise HumanLabelError(f"expected A, B, tie (pairs) or PASS, FAIL, UNKNOWN (point items), got {value!r}{hint}",
                              path=path, row=row, field=field)
    return word


def _text_field(value: Any, name: str, *, path: str, row: int, required: bool) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise HumanLabelError("missing", path=path, row=row, field=name)
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise HumanLabelError(f"expected text or an integer, got {value!r}", path=path, row=row, field=name)
    return str(value)


@dataclass(frozen=True, kw_only=True)
class _Reading(ColumnReader):
    """How one label file is read: its field and value maps, and where its ids come from."""

    path: str
    id_from: str = "column"

    def row(self, rec: dict[str, Any], *, row: int, index: int, problems: Problems) -> HumanLabel | None:
        """One record as a label row; its problems -- all of them -- recorded, then None."""
        n = problems.count
        item_id = None
        try:
            if self.id_from != "column":
                item_id = derived_id(self, rec, id_from=self.id_from, index=index, path=self.path, row=row)
            elif not self.has(rec, "item_id"):
                raise HumanLabelError("missing column (name the column of the ids: --map item_id=COLUMN; or number "
                                      "the records: --id-from row)", path=self.path, row=row,
                                      field=self.source("item_id"))
            else:
                item_id = _text_field(self.col(rec, "item_id")[1], self.source("item_id"), path=self.path, row=row,
                                      required=True)
        except ItemError as exc:
            problems.add(exc)
        label = dataset = None
        try:
            if not self.has(rec, "label"):
                raise HumanLabelError(f"missing column (the file needs a '{self.source('label')}' column, or name "
                                      "the column of the labels: --map label=COLUMN)", path=self.path, row=row,
                                      field=self.source("label"))
            label = _label(self.col(rec, "label")[1], path=self.path, row=row, field=self.source("label"))
        except ItemError as exc:
            problems.add(exc)
        try:
            dataset = _text_field(self.col(rec, "dataset")[1], self.source("dataset"), path=self.path, row=row,
                                  required=False)
        except ItemError as exc:
            problems.add(exc)
        if problems.count > n or item_id is None:
            return None
        return HumanLabel(row=row, item_id=item_id, label=label, dataset=dataset)


def read_human_labels(path: str | Path, *, field_map: Mapping[str, str] | None = None,
                      value_map: Mapping[str, Mapping[Any, Any]] | None = None,
                      id_from: str = "column", problems: Problems | None = None) -> HumanLabels:
    """The rows of a label file (module docstring), checked: every row names an item and carries a
    known label word or none; one item (the same dataset and id) is not labelled twice differently;
    at least one row carries a label.  ``field_map``, ``value_map`` and ``id_from`` read a published
    file as it is (``--map``, ``--map-values``, ``--id-from``).  Every problem is listed at once; with
    ``problems`` the rows' problems are recorded there and the rows without one returned (the caller
    raises, :func:`raise_label_problems`), a file that cannot be read at all is still raised."""
    p = Path(path)
    where = str(p)
    reading = _reading(where, field_map, value_map, id_from)
    mine = problems is None
    problems = Problems(where) if problems is None else problems
    n_before = problems.count
    try:
        records = _records(p, problems)
    except HumanLabelError:
        raise
    except ItemProblems as exc:   # several unreadable rows: every one listed, as the readers list them
        raise HumanLabelProblems(exc.problems, path=exc.path, n_more=exc.n_more) from None
    except ItemError as exc:      # the package readers' errors already name file, row and field
        raise HumanLabelError(str(exc)) from None
    rows: list[HumanLabel] = []
    seen: dict[tuple[str | None, str], HumanLabel] = {}
    for index, (row, rec) in enumerate(records, start=1):
        lab = reading.row(rec, row=row, index=index, problems=problems)
        if lab is None:
            continue
        first = seen.setdefault((lab.dataset, lab.item_id), lab)
        if first.label != lab.label:
            problems.add(HumanLabelError(f"item {lab.item_id!r} already labelled {first.label!r} in row {first.row}, "
                                         f"now {lab.label!r}", path=where, row=row, field=reading.source("label")))
            continue
        rows.append(lab)
    if mine:
        raise_label_problems(problems)
    if problems.count > n_before:     # the rows' problems say why rows are missing
        return HumanLabels(path=where, rows=tuple(rows), columns=reading.field_map)
    if not rows:
        raise HumanLabelError("no labels found (an empty file, or a header without rows)", path=where)
    if not any(r.label is not None for r in rows):
        raise HumanLabelError(f"every label is empty ({len(rows)} row(s)); write A, B or tie for pairs, PASS, "
                              f"FAIL or UNKNOWN for point items in the '{reading.source('label')}' column "
                              "(or say what your values mean with --map-values label:RAW=WORD)", path=where,
                              field=reading.source("label"))
    return HumanLabels(path=where, rows=tuple(rows), columns=reading.field_map)


def _reading(where: str, field_map: Mapping[str, str] | None, value_map: Mapping[str, Mapping[Any, Any]] | None,
             id_from: str) -> _Reading:
    """The options checked: fields the map may name, words the value map may give, an id source."""
    fmap = dict(field_map or {})
    unknown = sorted(set(fmap) - set(FIELDS))
    if unknown:
        raise HumanLabelError(f"--map names unknown field(s) {unknown} of a label file; known: {list(FIELDS)}",
                              path=where, field=unknown[0])
    if id_from not in ID_SOURCES:
        raise HumanLabelError(f"id_from must be one of {list(ID_SOURCES)}, got {id_from!r}", field="id-from")
    try:
        vmap = check_value_map(value_map, VALUE_MAP_TARGETS)
    except ItemError as exc:
        raise HumanLabelError(exc.detail, path=where, field=exc.field) from None
    return _Reading(field_map=fmap, value_map=vmap, taken=ColumnReader.taken_by(fmap, set(FIELDS)), path=where,
                    id_from=id_from)


def raise_label_problems(problems: Problems) -> None:
    """Raise what ``problems`` of a label file hold: the one as a :class:`HumanLabelError`, several as
    :class:`HumanLabelProblems` (every one listed, in row order); nothing when it is empty."""
    if len(problems.found) == 1 and not problems.n_more:
        exc = problems.found[0]
        raise exc if isinstance(exc, HumanLabelError) else HumanLabelError(str(exc)) from None
    if problems:
        raise HumanLabelProblems(problems.found, path=problems.path, n_more=problems.n_more)


__all__ = ["FIELDS", "HumanLabel", "HumanLabelError", "HumanLabelProblems", "HumanLabels", "PAIR_LABELS", "POINT_LABELS",
           "VALUE_MAP_TARGETS", "raise_label_problems", "read_human_labels"]
