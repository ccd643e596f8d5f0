"""Keys from a file's name: :class:`FilePattern`, a regular expression with named groups searched in the
name of each file of a folder (``--file-pattern`` of every importer, ``file_pattern`` of a dataset entry).

For a dataset, :func:`load_files` reads every file of a folder with one loader, each file's items given
the keys of its name (:data:`ITEM_FIELDS`: ``item_id``, ``system_a``, ``system_b``, ``category``): the name
fills a field the item left empty; an item with a different value is an error naming the file, the item
and the field.  A file whose name does not match is an error naming the file.  The items of all files
form one dataset (the entry's ``dataset``, else the folder's name): an item id in two files is an error.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.items import ItemError, PairItem, PointItem, Problems
from .load import DatasetLoad

#: the fields a file-name group may give (and the ``annotator`` of a vote file)
FILE_FIELDS: frozenset[str] = frozenset({"item_id", "judge", "protocol", "dataset", "order", "rep", "temperature",
                                         "system_a", "system_b", "system_first", "system_second", "category",
                                         "step", "annotator"})


class FilePattern:
    """A regular expression with named groups, searched in a file's name (without its folder)."""

    def __init__(self, pattern: str, fields: frozenset[str] = FILE_FIELDS, *, reader: str = "") -> None:
        """``fields``: the keys this reader can take from a file name (``reader`` names it in the error
        for a group it cannot take: a votes file has no judge, a dataset item no order)."""
        try:
            self.regex = re.compile(pattern)
        except re.error as exc:
            raise ItemError(f"not a regular expression: {exc}", field="file-pattern") from None
        names = set(self.regex.groupindex)
        if not names:
            raise ItemError("the pattern names no group; name the key it gives, e.g. (?P<judge>[^_]+)",
                            field="file-pattern")
        unknown = sorted(names - fields)
        if unknown:
            where = f" of {reader}" if reader else ""
            raise ItemError(f"group(s) {unknown} name no key{where}; known: {sorted(fields)}", field="file-pattern")
        self.pattern = pattern

    def keys(self, path: Path) -> dict[str, str]:
        """The named groups' values for ``path``'s file name; an :class:`ItemError` when it does not match."""
        m = self.regex.search(path.name)
        if m is None:
            raise ItemError(f"the file name does not match --file-pattern {self.pattern!r}", path=str(path))
        return {k: v for k, v in m.groupdict().items() if v is not None}


def fills(have: Any, value: Any, *, name: str, what: str, path: str, row: int | None = None,
          field: str | None = None) -> bool:
    """Whether the file name's ``value`` for key ``name`` fills ``have`` (the value of the row or item,
    ``what``): yes when it is empty, no when it is the same, and an :class:`ItemError` naming the file,
    row and field when it differs -- the file's content and its name disagree, never a silent choice."""
    if have is None or have == "":
        return True
    if str(have) != str(value):
        raise ItemError(f"the file name gives {name} {value!r}, {what} has {have!r}: fix the file, its name or the "
                        "file pattern", path=path, row=row, field=field or name)
    return False


#: the keys a dataset's file name may give its items (a dataset has no judge, order or trial)
ITEM_FIELDS: frozenset[str] = frozenset({"item_id", "system_a", "system_b", "category"})


def _filled(it: PairItem | PointItem, keys: dict[str, str], f: Path) -> PairItem | PointItem:
    update = {}
    for name, value in keys.items():
        if name not in type(it).model_fields:
            raise ItemError(f"a {type(it).__name__} has no {name} (the file name gives {value!r})", path=str(f),
                            field=name)
        if fills(getattr(it, name), value, name=name, what=f"item {it.item_id!r}", path=str(f)):
            update[name] = value
    return it.model_copy(update=update) if update else it


def load_files(loader: Callable[..., DatasetLoad], path: str | None, pattern: str,
               options: dict[str, Any]) -> DatasetLoad:
    """Every file of the folder ``path`` (or the file ``path``) read by ``loader`` with ``options``, its
    items given the keys of its name by ``pattern`` (module docstring)."""
    fp = FilePattern(pattern, ITEM_FIELDS, reader="a dataset item")
    if not path or not Path(path).exists():
        raise ItemError("file_pattern reads the files of a folder: give the folder as the path", path=path,
                        field="path")
    p = Path(path)
    files = [p] if p.is_file() else sorted(f for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
    if not files:
        raise ItemError("no file in this folder", path=str(p))
    name = options.get("dataset") or (p.stem if p.is_file() else p.name)
    problems = Problems(str(p))
    items: list[PairItem | PointItem] = []
    where: dict[str, Path] = {}
    loads = []
    for f in files:
        try:
            keys = fp.keys(f)
            load = loader(str(f), **options)
            for it in load.items:
                it = _filled(it, keys, f).model_copy(update={"dataset": name})
                if it.item_id in where:
                    raise ItemError(f"item id {it.item_id!r} is also in {where[it.item_id].name}: one dataset has "
                                    "one item per id", path=str(f), field="item_id")
                where[it.item_id] = f
                items.append(it)
            loads.append(load)
        except ItemError as exc:
            problems.add(exc)
    problems.raise_if_any()
    notes = [f"{len(items)} item(s) from {len(files)} file(s) of {p.name}, keys from each file name by "
             f"file_pattern {pattern!r}"]
    for load in loads:
        notes += [n for n in load.notes if n not in notes]
    return DatasetLoad(name=str(name), items=items, source=str(p),
                       dropped=[d for load in loads for d in load.dropped],
                       reordered=any(load.reordered for load in loads),
                       seed=next((load.seed for load in loads if load.seed is not None), None), notes=notes)


__all__ = ["FILE_FIELDS", "ITEM_FIELDS", "FilePattern", "fills", "load_files"]
