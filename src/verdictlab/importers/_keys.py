"""Where an importer finds a key when a log does not write it in a column of its own.

Published judge logs keep keys in three places besides plain columns, and every importer reads them
through this module (the generic table importer's ``--file-pattern`` / ``--map`` / ``--answers``, and
the named importers built on it):

* **the file name** -- :class:`FilePattern`: a regular expression with named groups, matched against
  the name of each file of a folder (``answer_(?P<system_a>.+)-vs-answer_(?P<system_b>.+)-(?P<judge>.+)-reviewer``);
  each group names a field (``system_a``, ``system_b``, ``judge``, ``dataset``, ``order``, ``item_id``,
  ``protocol``, ``annotator``, ...) and gives its value for every row of that file.
* **a list-valued column** -- :func:`list_sources`: a source written ``name[i]`` (``--map
  score_first=score[0]``) reads element ``i`` of the list in column ``name``.
* **an id join** -- :class:`Answers`: a response id (``answer1_id``) names an answer record (``answer_id``,
  ``model_id``, ``text``, ``question_id``) in an answers file or folder, which gives that response's
  system and text.  :func:`shown_pair` turns the two shown responses of a row into the canonical pair:
  ``response_a`` is the response of the system whose name sorts first (so a pair judged in both orders,
  in two files, meets on one item), and the row's order is ``AB`` when that response was shown first.

Every problem names the file, the row and the field (:class:`verdictlab.core.items.ItemError`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.items import ItemError, text_id
from ..datasets.file_pattern import FILE_FIELDS, FilePattern, fills

_LIST_SOURCE = re.compile(r"^(?P<column>.+)\[(?P<index>-?\d+)\]$")


def files_of(path: Path, suffixes: Iterable[str]) -> list[Path]:
    """``path`` itself, or the files of the folder ``path`` (not recursive) with one of ``suffixes``,
    sorted by name; an :class:`ItemError` for a folder without any."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise ItemError("file or folder not found", path=str(path))
    wanted = tuple(s.lower() for s in suffixes)
    found = sorted(p for p in path.iterdir() if p.is_file() and p.name.lower().endswith(wanted))
    if not found:
        raise ItemError(f"no {'/'.join(wanted)} file in this folder", path=str(path))
    return found


def list_sources(field_map: Mapping[str, str]) -> dict[str, tuple[str, int]]:
    """The sources of ``field_map`` written ``column[i]``: ``{source: (column, i)}``."""
    out = {}
    for src in field_map.values():
        m = _LIST_SOURCE.match(src)
        if m:
            out[src] = (m.group("column"), int(m.group("index")))
    return out


def add_list_values(rec: dict[str, Any], sources: Mapping[str, tuple[str, int]], *, path: str, row: int) -> None:
    """Put each ``column[i]`` source's value into ``rec`` under that name (a missing or empty column
    leaves it absent); a cell that is not a list long enough is an :class:`ItemError`."""
    for src, (column, index) in sources.items():
        value = rec.get(column)
        if value is None:
            continue
        if not isinstance(value, list):
            raise ItemError(f"{src} reads element {index} of a list, but the cell is {type(value).__name__} "
                            f"{value!r}"[:200], path=path, row=row, field=column)
        if not -len(value) <= index < len(value):
            raise ItemError(f"{src}: the list has {len(value)} element(s)", path=path, row=row, field=column)
        rec[src] = value[index]


@dataclass(frozen=True)
class Answer:
    """One answer record: the system that wrote it, its text, the question it answers (if given)."""

    system: str
    text: str
    question_id: str | None
    path: str
    row: int


class Answers:
    """Answer records by id, read from JSON Lines files (``answer_*.jsonl``, ``*generations*.jsonl`` or
    any ``.jsonl`` file given by name): ``answer_id``, ``model_id`` (the system; the file name's part
    after ``answer_`` when ``system_from_file``), ``text`` and optionally ``question_id``."""

    def __init__(self, by_id: dict[str, Answer]) -> None:
        self.by_id = by_id

    @classmethod
    def read(cls, path: str | Path, *, system_from_file: bool = False) -> Answers:
        from ..datasets._common import read_records

        p = Path(path)
        files = [p] if p.is_file() else answer_files(p)
        if not files:
            raise ItemError("no answer files (answer_*.jsonl or *generations*.jsonl) here", path=str(p))
        by_id: dict[str, Answer] = {}
        for f in files:
            own = _file_system(f) if system_from_file else None
            for row, rec in read_records(f):
                aid = text_id(rec.get("answer_id"), path=str(f), row=row, field="answer_id")
                system = own or text_id(rec.get("model_id"), path=str(f), row=row, field="model_id")
                text = rec.get("text")
                if not isinstance(text, str):
                    raise ItemError("must be the answer's text", path=str(f), row=row, field="text")
                qid = rec.get("question_id")
                prev = by_id.get(aid)
                if prev is not None and (prev.system, prev.text) != (system, text):
                    raise ItemError(f"answer id {aid!r} also names another answer ({prev.path} row {prev.row})",
                                    path=str(f), row=row, field="answer_id")
                by_id[aid] = Answer(system, text, None if qid is None else str(qid), str(f), row)
        return cls(by_id)

    def get(self, answer_id: Any, *, path: str, row: int, field: str) -> Answer:
        aid = text_id(answer_id, path=path, row=row, field=field)
        found = self.by_id.get(aid)
        if found is None:
            raise ItemError(f"answer id {aid!r} is in no answers file", path=path, row=row, field=field)
        return found


def answer_files(folder: Path) -> list[Path]:
    """The answer files of a folder: ``answer_*.jsonl`` and ``*generations*.jsonl``, sorted."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".jsonl"
                  and (p.name.startswith("answer_") or "generations" in p.name))


def _file_system(path: Path) -> str:
    stem = path.stem
    return stem[len("answer_"):] if stem.startswith("answer_") else stem


@dataclass(frozen=True)
class ShownPair:
    """Two shown responses as a canonical pair: the systems and texts of ``response_a`` / ``response_b``
    and the order they were shown in."""

    system_a: str
    system_b: str
    response_a: str
    response_b: str
    order: str


def shown_pair(first: Answer, second: Answer, *, path: str, row: int, field: str) -> ShownPair:
    """The canonical pair of a row that showed ``first`` then ``second``: ``response_a`` is the answer of
    the system whose name sorts first, ``order`` ``AB`` when it was shown first (see the module
    docstring).  Two answers of one system cannot be told apart: an :class:`ItemError`."""
    if first.system == second.system:
        raise ItemError(f"both answers are by {first.system!r}: no system pair", path=path, row=row, field=field)
    if first.system < second.system:
        return ShownPair(first.system, second.system, first.text, second.text, "AB")
    return ShownPair(second.system, first.system, second.text, first.text, "BA")


def pair_item_id(question_id: Any, system_a: str, system_b: str) -> str:
    """The id of a question's pair of two systems (``<question>-<A>-vs-<B>``, systems in sorted order),
    the same whichever order a log showed them in."""
    a, b = sorted((system_a, system_b))
    return f"{question_id}-{a}-vs-{b}"


__all__ = ["FILE_FIELDS", "Answer", "Answers", "FilePattern", "fills", "ShownPair", "add_list_values", "answer_files",
           "files_of", "list_sources", "pair_item_id", "shown_pair"]
