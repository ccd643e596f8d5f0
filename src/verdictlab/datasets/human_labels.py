"""Human labels from a file: the labels ``verdictlab validate --human`` and ``plan-labels --human`` use.

A label file is JSON Lines, or CSV (``.csv``) / TSV (``.tsv``) with a header, one labelled item per
row:

* ``item_id`` (required): the item's id, text or an integer;
* ``label`` (required): ``A`` / ``B`` / ``tie`` for a pair, ``PASS`` / ``FAIL`` / ``UNKNOWN`` for a
  point item (any case; JSON ``true`` / ``false`` are PASS / FAIL); empty or ``null`` = no label;
* ``dataset`` (optional): the item's dataset.  An item is named by its full key, dataset and id:
  without this column an id must name items of one dataset only in the run (the join in
  :func:`verdictlab.analyses.human_labels.human_label_keys` refuses an ambiguous id).

Every problem is a :class:`HumanLabelError` (an :class:`~verdictlab.core.items.ItemError`: exit code 3 in
the CLI) naming the file, the row (file line) and the field: a missing or repeated column, a CSV
written with another separator, a label outside the words above, one item labelled twice
differently, a file without any label.  The CSV and JSON Lines are read by the package's readers
(:func:`verdictlab.datasets.tabular.read_csv_rows`, :func:`verdictlab.datasets._common.json_lines`):
strict field counts, records split on ``\\n`` only, BOM dropped, JSON within the input limits; when
they find several unreadable rows, every one is listed (:class:`HumanLabelProblems`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.items import ItemError, ItemProblems

PAIR_LABELS: tuple[str, ...] = ("A", "B", "tie")
POINT_LABELS: tuple[str, ...] = ("PASS", "FAIL", "UNKNOWN")
_LABEL_WORDS = {w.lower(): w for w in (*PAIR_LABELS, *POINT_LABELS)}
_OTHER_SEPARATORS = ((";", "';'"), ("\t", "tabs"), ("|", "'|'"))


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
    """The rows of one label file, in file order."""

    path: str
    rows: tuple[HumanLabel, ...]

    @property
    def n_labelled(self) -> int:
        return sum(r.label is not None for r in self.rows)


def _records(p: Path) -> list[tuple[int, dict[str, Any]]]:
    from ._common import json_lines, read_text
    from .tabular import read_csv_rows

    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        _check_separator(p, sep)
        return read_csv_rows(p, sep=sep)
    if not p.is_file():
        raise HumanLabelError("not a regular file" if p.exists() else "file not found", path=str(p))
    return json_lines(read_text(p), path=str(p))


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


def _label(value: Any, *, path: str, row: int) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, bool):
        return "PASS" if value else "FAIL"
    word = _LABEL_WORDS.get(str(value).strip().lower()) if isinstance(value, str) else None
    if word is None:
        raise HumanLabelError(f"expected A, B, tie (pairs) or PASS, FAIL, UNKNOWN (point items), got {value!r}",
                              path=path, row=row, field="label")
    return word


def _text_field(rec: dict[str, Any], field: str, *, path: str, row: int, required: bool) -> str | None:
    value = rec.get(field)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise HumanLabelError("missing", path=path, row=row, field=field)
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise HumanLabelError(f"expected text or an integer, got {value!r}", path=path, row=row, field=field)
    return str(value)


def _row(rec: dict[str, Any], *, path: str, row: int) -> HumanLabel:
    if "label" not in rec:
        raise HumanLabelError("missing (the file needs a 'label' column)", path=path, row=row, field="label")
    item_id = _text_field(rec, "item_id", path=path, row=row, required=True)
    assert item_id is not None
    return HumanLabel(row=row, item_id=item_id, label=_label(rec["label"], path=path, row=row),
                      dataset=_text_field(rec, "dataset", path=path, row=row, required=False))


def read_human_labels(path: str | Path) -> HumanLabels:
    """The rows of a label file (module docstring), checked: every row names an item and carries a
    known label word or none; one item (the same dataset and id) is not labelled twice differently;
    at least one row carries a label."""
    p = Path(path)
    where = str(p)
    try:
        records = _records(p)
    except HumanLabelError:
        raise
    except ItemProblems as exc:   # several unreadable rows: every one listed, as the readers list them
        raise HumanLabelProblems(exc.problems, path=exc.path, n_more=exc.n_more) from None
    except ItemError as exc:      # the package readers' errors already name file, row and field
        raise HumanLabelError(str(exc)) from None
    rows: list[HumanLabel] = []
    seen: dict[tuple[str | None, str], HumanLabel] = {}
    for row, rec in records:
        lab = _row(rec, path=where, row=row)
        first = seen.setdefault((lab.dataset, lab.item_id), lab)
        if first.label != lab.label:
            raise HumanLabelError(f"item {lab.item_id!r} already labelled {first.label!r} in row {first.row}, "
                                  f"now {lab.label!r}", path=where, row=row, field="label")
        rows.append(lab)
    if not rows:
        raise HumanLabelError("no labels found (an empty file, or a header without rows)", path=where)
    if not any(r.label is not None for r in rows):
        raise HumanLabelError(f"every label is empty ({len(rows)} row(s)); write A, B or tie for pairs, PASS, "
                              "FAIL or UNKNOWN for point items in the 'label' column", path=where, field="label")
    return HumanLabels(path=where, rows=tuple(rows))


__all__ = ["HumanLabel", "HumanLabelError", "HumanLabelProblems", "HumanLabels", "PAIR_LABELS", "POINT_LABELS", "read_human_labels"]
