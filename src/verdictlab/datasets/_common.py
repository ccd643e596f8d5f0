"""Shared plumbing for the dataset loaders: reading JSON / JSON Lines sources, checking fields with
errors that name file, row and field, majority votes, tie policies and conversation formatting.

Every helper raises :class:`verdictlab.core.items.ItemError` on bad input, so a loader either returns a
complete :class:`DatasetLoad` or nothing at all.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.guards import GuardError, input_limits, loads_json, nesting_depth
from ..core.items import ItemError, PairItem, PointItem, Problems
from .load import DatasetLoad

TIE_POLICIES = ("keep", "drop")

# (row number (1-based), record) pairs; a row is the line of a JSON Lines file or the position of
# the record in a JSON list / hub split.
Rows = list[tuple[int, dict[str, Any]]]


def require_path(path: str | None, loader: str) -> Path:
    if not path:
        raise ItemError(f"the {loader} dataset needs a 'path' (or 'hub' where supported)", field="path")
    p = Path(path)
    if not p.exists():
        raise ItemError("file not found", path=str(p))
    return p


def split_lines(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of a JSON Lines text, split on ``\\n`` only (a trailing ``\\r`` is
    dropped, so ``\\r\\n`` files read the same).

    Not ``str.splitlines()``: that also splits on U+2028 / U+2029 (and \\x1c-\\x1e, \\x85, \\v, \\f),
    which ``json.dumps(..., ensure_ascii=False)`` writes raw inside strings, so a valid record would
    be cut in two.  Every JSON Lines reader of the package goes through this function."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [(i, line[:-1] if line.endswith("\r") else line) for i, line in enumerate(lines, start=1)]


def json_error(exc: json.JSONDecodeError, *, with_line: bool = False) -> str:
    """A JSON decoding error as ``"<what> (line L, column C)"``: ``exc.msg`` may end in "at"
    ("Unterminated string starting at"), so the position is never glued on with another "at"."""
    where = f"line {exc.lineno}, column {exc.colno}" if with_line else f"column {exc.colno}"
    return f"{exc.msg.removesuffix(' at')} ({where})"


def read_records(path: str | Path, *, problems: Problems | None = None) -> Rows:
    """Read a JSON list, a JSON object holding one list, or JSON Lines; return ``(row, record)``.

    Rows are 1-based: the line number for JSON Lines, the position in the list for JSON.  With
    ``problems``, a JSON Lines line that cannot be read is recorded there and the other lines are
    returned, so the caller lists it among the problems of the rows it checks (without, they are raised
    at once, before any row is checked)."""
    p = Path(path)
    if not p.is_file():
        raise ItemError("file not found", path=str(p))
    text = read_text(p)
    if p.suffix.lower() != ".jsonl":
        try:
            return _rows_from_document(parse_json(text, path=str(p), row=None), p)
        except json.JSONDecodeError as exc:
            # several JSON objects one per line is JSON Lines whatever the file is called
            if not (text.lstrip().startswith("{") and exc.msg == "Extra data"):
                raise ItemError(f"invalid JSON: {json_error(exc, with_line=True)}", path=str(p)) from None
    return json_lines(text, path=str(p), problems=problems)


def json_lines(text: str, *, path: str, problems: Problems | None = None, bare: str | None = None) -> Rows:
    """The records of a JSON Lines text (lines from :func:`split_lines`; blank lines skipped; each
    line one JSON object), as ``(line number, record)``.  With ``bare``, a line holding one plain value
    (a string, a number, true / false or null) is the record ``{bare: value}`` (a file of bare labels)."""
    max_depth = input_limits().max_depth       # read once per file, not per line
    rows: Rows = []
    own = problems is None               # every bad line of the file at once: raised here, or the caller's
    problems = Problems(path) if problems is None else problems
    for lineno, line in split_lines(text):
        if not line.strip():
            continue
        try:
            rec = parse_json(line, path=path, row=lineno, max_depth=max_depth)
        except json.JSONDecodeError as exc:
            problems.add(ItemError(f"invalid JSON: {json_error(exc)}", path=path, row=lineno))
            continue
        except ItemError as exc:
            problems.add(exc)
            continue
        if bare is not None and (rec is None or isinstance(rec, str | int | float | bool)):
            rec = {bare: rec}
        if not isinstance(rec, dict):
            problems.add(ItemError("each line must be a JSON object", path=path, row=lineno))
            continue
        rows.append((lineno, rec))
    if own:
        problems.raise_if_any()
    return rows


def parse_json(text: str, *, path: str | None, row: int | None, max_depth: int | None = None) -> Any:
    """One JSON value from a user's file, within the input limits (:func:`verdictlab.core.guards.loads_json`:
    no NaN/Infinity, no number that overflows, nesting depth limited).  Malformed JSON raises
    :class:`json.JSONDecodeError` (the caller words it); a limit -> :class:`ItemError` naming the
    offending top-level field."""
    try:
        return loads_json(text, max_depth=max_depth)
    except GuardError as exc:
        raise ItemError(str(exc), path=path, row=row, field=_offending_field(text)) from None


def _offending_field(text: str) -> str | None:
    """The top-level key of a JSON object whose value is too deep or holds a non-finite number."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    limit = input_limits().max_depth
    for key, value in doc.items():
        if nesting_depth(value, stop_at=limit) >= limit or _non_finite(value):
            return str(key)
    return None


def _non_finite(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, float) and not np.isfinite(v):
            return True
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def read_text(path: Path) -> str:
    """A file's UTF-8 text without a leading byte-order mark; not UTF-8 -> :class:`ItemError`
    naming the line of the first byte that cannot be decoded."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ItemError(f"not UTF-8 text (byte 0x{data[exc.start]:02x} cannot be decoded)", path=str(path),
                        row=line) from None


def _rows_from_document(doc: Any, p: Path) -> Rows:
    if isinstance(doc, dict):
        lists = [v for v in doc.values() if isinstance(v, list)]
        if len(lists) == 1:
            doc = lists[0]
        else:
            return [(1, doc)]
    if not isinstance(doc, list):
        raise ItemError("expected a JSON list of records", path=str(p))
    rows: Rows = []
    for i, rec in enumerate(doc, start=1):
        if not isinstance(rec, dict):
            raise ItemError(f"record must be a JSON object, got {type(rec).__name__}", path=str(p), row=i)
        rows.append((i, rec))
    return rows


def get_str(rec: dict[str, Any], field: str, *, path: str | None, row: int,
            allow_empty: bool = True, default: Any = ...) -> str:
    """A string field; numbers are not silently accepted as text."""
    if field not in rec or rec[field] is None:
        if default is not ...:
            return default
        raise ItemError("missing required field", path=path, row=row, field=field)
    v = rec[field]
    if not isinstance(v, str):
        raise ItemError(f"must be a string, got {type(v).__name__}", path=path, row=row, field=field)
    if not allow_empty and not v.strip():
        raise ItemError("must not be empty", path=path, row=row, field=field)
    return v


def get_field(rec: dict[str, Any], field: str, *, path: str | None, row: int) -> Any:
    if field not in rec:
        raise ItemError("missing required field", path=path, row=row, field=field)
    return rec[field]


def first_present(rec: dict[str, Any], names: Sequence[str]) -> str | None:
    """The first of ``names`` present (and not None) in ``rec``."""
    for n in names:
        if n in rec and rec[n] is not None:
            return n
    return None


def as_int_choice(value: Any, choices: Iterable[int], *, path: str | None, row: int, field: str) -> int:
    """An integer (or its decimal text, e.g. ``"1"``) that must be one of ``choices``."""
    allowed = tuple(choices)
    v = value
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v.strip())
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, bool) or not isinstance(v, int) or v not in allowed:
        raise ItemError(f"must be one of {list(allowed)}, got {value!r}", path=path, row=row, field=field)
    return v


def majority(votes: Sequence[Any]) -> Any | None:
    """The value held by a strict majority (> half) of ``votes``; ``None`` if there is none."""
    if not votes:
        return None
    value, n = Counter(votes).most_common(1)[0]
    return value if n * 2 > len(votes) else None


def check_tie_policy(tie_policy: str) -> str:
    if tie_policy not in TIE_POLICIES:
        raise ItemError(f"tie_policy must be one of {list(TIE_POLICIES)}, got {tie_policy!r}",
                        field="tie_policy")
    return tie_policy


def check_no_options(loader: str, options: dict[str, Any]) -> None:
    """Unknown loader options are an error, never silently ignored (a typo would change results).

    ``seed`` is the one exception: the engine passes the run seed to every loader, and a loader
    without randomness has nothing to use it for."""
    options = {k: v for k, v in options.items() if k != "seed"}
    if options:
        raise ItemError(f"unknown option(s) for the {loader} dataset: {', '.join(sorted(options))}",
                        field=sorted(options)[0])


def check_unique(items: Sequence[PairItem | PointItem], *, path: str | None,
                 rows: Sequence[int] | None = None, problems: Problems | None = None) -> None:
    """No item id twice; every duplicate is recorded in ``problems`` (raised here without one)."""
    own = problems is None
    problems = Problems(path) if problems is None else problems
    seen: dict[str, int] = {}
    for i, it in enumerate(items):
        row = rows[i] if rows is not None else i + 1
        if it.item_id in seen:
            problems.add(ItemError(f"duplicate item_id {it.item_id!r} (first on row {seen[it.item_id]})",
                                   path=path, row=row, field="item_id"))
        else:
            seen[it.item_id] = row
    if own:
        problems.raise_if_any()


def missing_field(field: str, *, path: str | None, row: int, source: str | None = None,
                  empty: bool = False) -> ItemError:
    """The error for a required field a record lacks, with the fix: fill the cell, or name the
    column that holds the field."""
    why = ("the cell is empty" if empty else
           f"name the column that holds it: --map {field}=COLUMN, field_map in a config")
    return ItemError(f"missing required field ({why})", path=path, row=row, field=source or field)


def finish(name: str, items: list[PairItem | PointItem], *, source: str | None,
           dropped: list[dict[str, Any]] | None = None, notes: list[str] | None = None,
           reordered: bool = False, seed: int | None = None, limit: int | None = None) -> DatasetLoad:
    """Build the :class:`DatasetLoad`; ``limit`` keeps the first N items (recorded in the notes)."""
    notes = list(notes or [])
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ItemError(f"limit must be a positive integer, got {limit!r}", field="limit")
        if limit < len(items):
            notes.append(f"limited to the first {limit} of {len(items)} items")
            items = items[:limit]
    if not items:
        raise ItemError("no items left to load", path=source)
    return DatasetLoad(name=name, items=items, source=source, dropped=list(dropped or []),
                       reordered=reordered, seed=seed, notes=notes)


def seeded_sample(n_total: int, n: int | None, seed: int) -> list[int]:
    """Indices of a seeded sample of ``n`` of ``n_total`` rows without replacement, in source order
    (``numpy.random.default_rng(seed).choice``); all rows when ``n`` is None or >= n_total."""
    if n is None or n >= n_total:
        return list(range(n_total))
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ItemError(f"sample must be a positive integer, got {n!r}", field="sample")
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(n_total, size=n, replace=False))


# -- conversations --------------------------------------------------------------------------------

def split_conversation(conv: Any, *, path: str | None, row: int,
                       field: str) -> tuple[list[str], list[str]]:
    """``[{"role": "user"|"assistant", "content": ...}, ...]`` -> (user turns, assistant turns)."""
    if not isinstance(conv, list) or not conv:
        raise ItemError("must be a non-empty list of {role, content} messages", path=path, row=row,
                        field=field)
    users: list[str] = []
    assistants: list[str] = []
    for k, msg in enumerate(conv):
        if not isinstance(msg, dict) or "role" not in msg or "content" not in msg:
            raise ItemError(f"message {k} must be an object with 'role' and 'content'", path=path,
                            row=row, field=field)
        content = msg["content"]
        if not isinstance(content, str):
            raise ItemError(f"message {k} content must be a string", path=path, row=row, field=field)
        role = msg["role"]
        if role == "user":
            users.append(content)
        elif role == "assistant":
            assistants.append(content)
        elif role == "system":
            continue
        else:
            raise ItemError(f"message {k} has unknown role {role!r}", path=path, row=row, field=field)
    return users, assistants


def format_turns(texts: Sequence[str], upto: int, *, speaker: str) -> str:
    """The first ``upto`` turns; a single turn is returned as is, several are labelled."""
    texts = list(texts[:upto])
    if len(texts) == 1:
        return texts[0]
    return "\n\n".join(f"[{speaker}, turn {i}]\n{t}" for i, t in enumerate(texts, start=1))
