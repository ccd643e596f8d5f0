"""Keys from each file's name for every importer (``--file-pattern REGEX``), applied by the import layer.

An importer that does not read the pattern itself (the table importers do, :mod:`.tabular`) marks each
judgment row with the file it came from (``_file``, beside ``_row``); :func:`apply_file_keys` then
searches the :class:`~._keys.FilePattern` in that file's name and gives its named groups to the file's rows.
Which value wins:

* **row keys** -- ``item_id``, ``order``, ``system_a``, ``system_b``, ``category``, ``step`` (and
  ``system_first`` / ``system_second``: the systems shown first and second, put on ``system_a`` /
  ``system_b`` by the row's order): the file name fills a key the importer left empty; a row that
  already has a *different* value is an input error naming the file, the row and the field (the file's
  content and its name disagree -- never a silent choice).
* **whole-file keys** -- ``judge``, ``protocol``, ``dataset``, ``temperature``, ``rep``: the group is that
  option (``--judge`` ...) given for that file alone, so it wins over what the source or the importer's
  default says, as the option does; giving the option too is a usage error (two values for one key).

A file whose name does not match is an input error naming the file; so is a group that names no key.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any

from ..core.design import trial_id
from ..core.items import ItemError, PairItem, PointItem, Problems
from ..core.ranges import REP, TEMPERATURE
from ..errors import UsageError
from ._batch import ImportBatch, checked
from ._keys import FILE_FIELDS, FilePattern, fills

#: keys a file name gives as the whole-file option of that name, for its rows
OPTION_KEYS = ("judge", "protocol", "dataset", "temperature", "rep")
#: keys a file name fills where a row left them empty
ROW_KEYS = ("item_id", "order", "system_a", "system_b", "category", "step")
JUDGMENT_FIELDS: frozenset[str] = frozenset(FILE_FIELDS - {"annotator"})
_ITEM_FIELDS = ("system_a", "system_b", "category")


def judgment_pattern(pattern: str, given: Mapping[str, Any]) -> FilePattern:
    """The pattern of an import, checked before any file is read: its groups name judgment keys, and no
    group gives a key that an option of the import gives too (``given``: the import's options)."""
    fp = FilePattern(pattern, JUDGMENT_FIELDS, reader="a judgment row")
    both = sorted(k for k in OPTION_KEYS if k in fp.regex.groupindex and given.get(k) is not None)
    if both:
        raise UsageError(f"--file-pattern gives {', '.join(both)} from each file name, and --{both[0]} gives it "
                         "for every file: give one of the two")
    return fp


#: what the importer is given for a whole-file key the file name gives (replaced in every row by the name's value)
FROM_FILE_NAME = "<from the file name>"


def stand_ins(fp: FilePattern, takes: Collection[str]) -> dict[str, str]:
    """The judge, protocol or dataset the file name gives, as the importer's option (``takes``: the
    keywords it takes): an importer that needs one to read a file (LLMBar's judge) reads it, and
    :func:`apply_file_keys` puts each file's own value in its rows."""
    return {k: FROM_FILE_NAME for k in ("judge", "protocol", "dataset") if k in fp.regex.groupindex and k in takes}


def _file_values(fp: FilePattern, f: Path) -> dict[str, Any]:
    """The groups of ``f``'s name, numbers read and range-checked (an :class:`ItemError` naming the file)."""
    keys: dict[str, Any] = dict(fp.keys(f))
    for name, range_, kind in (("temperature", TEMPERATURE, float), ("rep", REP, int)):
        if name in keys:
            try:
                keys[name] = kind(keys[name])
            except ValueError:
                raise ItemError(f"the file name gives {name} {keys[name]!r}, not a number", path=str(f),
                                field=name) from None
            keys[name] = checked(range_, keys[name], path=str(f), field=name)
    return keys


def _row_values(r: dict[str, Any], keys: Mapping[str, Any]) -> dict[str, Any]:
    """The row keys ``keys`` gives this row (``system_first`` / ``system_second`` by the row's order)."""
    out = {k: v for k, v in keys.items() if k in ROW_KEYS}
    if "system_first" in keys or "system_second" in keys:
        a_first = (out.get("order") or r.get("order")) != "BA"
        for name, shown in (("system_a", "system_first" if a_first else "system_second"),
                            ("system_b", "system_second" if a_first else "system_first")):
            if shown in keys:
                out[name] = keys[shown]
    return out


def _fill(r: dict[str, Any], keys: Mapping[str, Any], *, path: str) -> None:
    """Give row ``r`` the keys of its file's name (module docstring: which wins)."""
    for name, value in _row_values(r, keys).items():
        if fills(r.get(name), value, name=name, what="the row", path=path, row=r.get("_row")):
            r[name] = value
    for name in OPTION_KEYS:
        if name in keys:
            r[name] = keys[name]
    r["trial_id"] = trial_id(r["judge"], r["dataset"], r["item_id"], r["protocol"], r["order"], r["temperature"],
                             r["rep"], r.get("step") or "", decoding=r.get("decoding"))


def apply_file_keys(batch: ImportBatch, fp: FilePattern) -> ImportBatch:
    """``batch`` with every row given the keys of its file's name (module docstring); its items follow
    their rows (a dataset from the file name, systems and category filled where empty).  Every problem
    is collected and raised at once."""
    problems = Problems(batch.source)
    by_file: dict[str, dict[str, Any] | None] = {}
    moved: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in batch.judgments:
        f = r.pop("_file", None)
        if f is None:
            raise UsageError(f"the {batch.format} importer does not say which file a row came from: "
                             "--file-pattern does not apply to it")
        if f not in by_file:
            try:
                by_file[f] = _file_values(fp, Path(f))
            except ItemError as exc:
                problems.add(exc)
                by_file[f] = None
        keys = by_file[f]
        if keys is None:
            continue
        before = (r["dataset"], r["item_id"])
        try:
            _fill(r, keys, path=f)
        except ItemError as exc:
            problems.add(exc)
        moved.setdefault(before, []).append(r)
    problems.raise_if_any()
    batch.items = _moved_items(batch.items, moved)
    batch.notes.append(f"keys from each file name by --file-pattern {fp.pattern!r} (groups: "
                       f"{', '.join(sorted(fp.regex.groupindex))}): a whole-file key as its option for that "
                       "file, a row key where the row left it empty")
    batch.checked = False            # keys changed: write_batch checks trials and items again
    return batch


def _moved_items(items: list[PairItem | PointItem], moved: Mapping[tuple[str, str], list[dict[str, Any]]]
                 ) -> list[PairItem | PointItem]:
    """Each item under the dataset its rows now have, with their systems and category where it had none."""
    out: list[PairItem | PointItem] = []
    for it in items:
        rows = moved.get((it.dataset, it.item_id))
        if not rows:
            out.append(it)
            continue
        seen: set[str] = set()
        for r in rows:
            if r["dataset"] in seen:
                continue
            seen.add(r["dataset"])
            update: dict[str, Any] = {"dataset": r["dataset"]}
            for name in _ITEM_FIELDS:
                if name in type(it).model_fields and getattr(it, name) is None and r.get(name) is not None:
                    update[name] = r[name]
            out.append(it.model_copy(update=update))
    return out


__all__ = ["FROM_FILE_NAME", "JUDGMENT_FIELDS", "OPTION_KEYS", "ROW_KEYS", "apply_file_keys", "judgment_pattern",
           "stand_ins"]
