"""The stored judgment: one row per trial, its column schema, and the one place rows are built.

:data:`JUDGMENT_COLUMNS` is the source of truth for the ``judgments`` table, exports and frames.
:func:`make_judgment` builds a :class:`Judgment` from a trial key and a verdict *in canonical
terms*; :func:`from_shown` does the same from a verdict in *shown* terms (what a parser returns),
swapping it with :func:`verdictlab.core.vocab.swap`.  Both derive ``trial_id`` and
``shown_first_won`` and check order, verdict and parse status, so the engine, the importers, the
debate runner and derived tables cannot disagree on what a row means.  :func:`judgment_frame`
gives any frame of judgment-like records the full column set in order (derived tables).
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..errors import InputError
from .design import trial_id as _trial_id
from .design import trial_ids
from .vocab import (
    DEFAULT_DECODING,
    PARSE_STATUSES,
    VERDICTS,
    ParseStatus,
    canonical_first_won,
    check_order,
    swap,
)

# (name, SQL type, description) -- the stable judgment schema, documented in the README.
JUDGMENT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("trial_id", "TEXT", "sha1 of the trial key"),
    ("judge", "TEXT", "judge id, e.g. 'sim:skill=0.8,...' or 'llamacpp:smollm2-135m'"),
    ("dataset", "TEXT", "dataset name"),
    ("item_id", "TEXT", "item id within the dataset"),
    ("protocol", "TEXT", "protocol id (direct, vf-json, ...)"),
    ("order", "TEXT", "'AB' shows response_a first, 'BA' shows response_b first"),
    ("temperature", "REAL", "sampling temperature"),
    ("rep", "INTEGER", "repetition index, 0-based"),
    ("step", "TEXT", "criterion / round for multi-call protocols, '' otherwise"),
    ("label", "TEXT", "gold label in canonical terms: A, B, tie or NULL"),
    ("category", "TEXT", "item category, if any"),
    ("raw_output", "TEXT", "the judge's raw text"),
    ("verdict", "TEXT", "parsed verdict in canonical terms: A, B, tie or NULL (unparsed)"),
    ("shown_first_won", "INTEGER", "1 if the first-shown response won, 0 if the second, NULL otherwise"),
    ("parse_status", "TEXT", "ok | repaired | fallback | failed"),
    ("parse_detail", "TEXT", "what the parser did or why it failed"),
    ("fallback_rule", "TEXT", "the rule that produced a fallback verdict, if any"),
    ("scores", "TEXT", "JSON object of protocol scores (e.g. score_a, score_b)"),
    ("p_a", "REAL", "P(canonical A wins) from token log-probabilities, if available"),
    ("latency_s", "REAL", "wall time of the successful call"),
    ("tokens_in", "INTEGER", "prompt tokens"),
    ("tokens_out", "INTEGER", "completion tokens"),
    ("cost_usd", "REAL", "cost of the call(s) in US dollars"),
    ("attempts", "INTEGER", "number of call attempts made"),
    ("error", "TEXT", "last error if the trial failed for good"),
    ("cache_hit", "INTEGER", "1 if served from the response cache"),
    ("prompt_hash", "TEXT", "sha1 of the full request (messages + parameters)"),
    ("created_at", "REAL", "unix time the row was written"),
    ("decoding", "TEXT", "free | constrained: how the judge's output was decoded (free in runs stored before decoding became a factor)"),
    ("system_a", "TEXT", "the system that wrote response_a, if known"),
    ("system_b", "TEXT", "the system that wrote response_b, if known"),
)
JUDGMENT_COLUMN_NAMES: tuple[str, ...] = tuple(c[0] for c in JUDGMENT_COLUMNS)
TRIAL_KEY_COLUMNS: tuple[str, ...] = ("judge", "dataset", "item_id", "protocol", "order", "temperature",
                                      "rep", "step", "decoding")


class JudgmentError(InputError):
    """A judgment row is inconsistent (bad order, verdict, parse status or column)."""


@dataclass(slots=True)
class Judgment:
    """One stored row (field for field :data:`JUDGMENT_COLUMNS`); build it with :func:`make_judgment`
    or :func:`from_shown`.  ``verdict`` is in canonical terms; ``scores`` is JSON text."""

    trial_id: str
    judge: str
    dataset: str
    item_id: str
    protocol: str
    order: str
    temperature: float
    rep: int
    step: str = ""
    label: str | None = None
    category: str | None = None
    raw_output: str | None = None
    verdict: str | None = None
    shown_first_won: int | None = None
    parse_status: str | None = None
    parse_detail: str | None = None
    fallback_rule: str | None = None
    scores: str | None = None
    p_a: float | None = None
    latency_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    attempts: int | None = None
    error: str | None = None
    cache_hit: int | None = 0
    prompt_hash: str | None = None
    created_at: float | None = None
    decoding: str = DEFAULT_DECODING
    system_a: str | None = None
    system_b: str | None = None

    def values(self) -> tuple[Any, ...]:
        """The row as a tuple in :data:`JUDGMENT_COLUMN_NAMES` order (what the store inserts)."""
        return _VALUES(self)

    def as_dict(self) -> dict[str, Any]:
        return dict(zip(JUDGMENT_COLUMN_NAMES, _VALUES(self), strict=True))

    @classmethod
    def from_values(cls, values: Sequence[Any]) -> Judgment:
        """The row back from :meth:`values` (how rows travel between processes: a tuple pickles
        about ten times faster than the object)."""
        return cls(*values)


_VALUES = operator.attrgetter(*JUDGMENT_COLUMN_NAMES)
assert tuple(f.name for f in fields(Judgment)) == JUDGMENT_COLUMN_NAMES, "Judgment fields != JUDGMENT_COLUMNS"


def _scores_json(scores: Mapping[str, Any] | str | None) -> str | None:
    if scores is None or isinstance(scores, str):
        return scores
    return json.dumps(dict(scores), sort_keys=True) if scores else None


def make_judgment(*, judge: str, dataset: str, item_id: str, protocol: str, order: str, temperature: float,
                  rep: int, step: str = "", decoding: str = DEFAULT_DECODING, verdict: str | None = None,
                  parse_status: str | None = None, pair: bool = True,
                  scores: Mapping[str, Any] | str | None = None, **columns: Any) -> Judgment:
    """Build a judgment row from the trial key and a *canonical* verdict.

    ``trial_id`` and ``shown_first_won`` are derived (never passed); ``parse_status`` defaults to
    ``ok`` for a verdict and ``failed`` without one.  ``pair=False`` (pointwise items) lets the
    protocol's own verdict vocabulary through and leaves ``shown_first_won`` NULL.  Any other
    column is passed by name; an unknown name raises :class:`JudgmentError`.
    """
    check_order(order)
    if pair and verdict is not None and verdict not in VERDICTS:
        raise JudgmentError(f"verdict must be A, B, tie or null, got {verdict!r}")
    if parse_status is None:
        parse_status = ParseStatus.OK.value if verdict is not None else ParseStatus.FAILED.value
    elif parse_status not in PARSE_STATUSES:
        raise JudgmentError(f"parse_status must be one of {PARSE_STATUSES}, got {parse_status!r}")
    if parse_status == ParseStatus.FAILED and verdict is not None:
        raise JudgmentError("a failed parse has no verdict")
    for name in columns:
        if name in ("trial_id", "shown_first_won"):
            raise JudgmentError(f"{name} is derived from the trial key and verdict; do not pass it")
        if name not in _NAME_SET:
            raise JudgmentError(f"unknown judgment column {name!r}")
    try:
        return Judgment(
            trial_id=_trial_id(judge, dataset, item_id, protocol, order, temperature, rep, step,
                               decoding=decoding),
            judge=judge, dataset=dataset, item_id=item_id, protocol=protocol, order=order,
            temperature=temperature, rep=rep, step=step, decoding=decoding, verdict=verdict,
            shown_first_won=canonical_first_won(verdict, order) if pair else None,
            parse_status=parse_status, scores=_scores_json(scores), **columns)
    except TypeError as exc:
        raise JudgmentError(f"unknown judgment column: {exc}") from None


def from_shown(*, shown_verdict: str | None, order: str, pair: bool = True, **kw: Any) -> Judgment:
    """:func:`make_judgment` from a verdict in *shown* terms (a parser's output)."""
    return make_judgment(verdict=swap(shown_verdict, order) if pair else shown_verdict, order=order,
                         pair=pair, **kw)


def judgment_dict(**kw: Any) -> dict[str, Any]:
    """:func:`make_judgment` as a plain dict of all columns (importers keep rows as dicts)."""
    return make_judgment(**kw).as_dict()


def as_row_values(row: Judgment | Mapping[str, Any], *, now: float) -> tuple[Any, ...]:
    """Store-ready values of a :class:`Judgment` or a column mapping (``created_at`` stamped with
    ``now`` when unset; ``scores`` as JSON; booleans as 0/1; unknown columns refused)."""
    if isinstance(row, Judgment):
        if row.created_at is None:
            row.created_at = now
        return _VALUES(row)
    if len(row) != len(_NAME_SET) or row.keys() != _NAME_SET:
        unknown = set(row) - _NAME_SET
        if unknown:
            raise JudgmentError(f"unknown judgment column(s): {sorted(unknown)}")
    rec = dict(row)
    if rec.get("created_at") is None:
        rec["created_at"] = now
    if rec.get("decoding") is None:
        rec["decoding"] = DEFAULT_DECODING
    if isinstance(rec.get("scores"), dict):
        rec["scores"] = json.dumps(rec["scores"], sort_keys=True)
    for b in ("shown_first_won", "cache_hit"):
        if isinstance(rec.get(b), bool):
            rec[b] = int(rec[b])
    ps = rec.get("parse_status")
    if ps is not None and ps not in PARSE_STATUSES:
        raise JudgmentError(f"parse_status must be one of {PARSE_STATUSES}, got {ps!r}")
    if len(rec) == len(_NAME_SET):          # a complete row (judgment_dict's): one itemgetter call
        return _GET_ALL(rec)
    return tuple(rec.get(c) for c in JUDGMENT_COLUMN_NAMES)


_NAME_SET = frozenset(JUDGMENT_COLUMN_NAMES)
_GET_ALL = operator.itemgetter(*JUDGMENT_COLUMN_NAMES)


def judgment_frame(records: Iterable[Mapping[str, Any]] | Any) -> Any:
    """A DataFrame with exactly :data:`JUDGMENT_COLUMN_NAMES` in order from records or a frame
    (missing columns NULL, ``decoding`` ``free``).  For derived tables (remedies, juries)."""
    import pandas as pd

    df = records.copy() if isinstance(records, pd.DataFrame) else pd.DataFrame.from_records(list(records))
    for c in JUDGMENT_COLUMN_NAMES:
        if c not in df.columns:
            df[c] = DEFAULT_DECODING if c == "decoding" else None
    if len(df):
        df["decoding"] = df["decoding"].fillna(DEFAULT_DECODING)
    return df[list(JUDGMENT_COLUMN_NAMES)]


def pandas_dtype(sql_type: str) -> str:
    return {"TEXT": "object", "REAL": "float64", "INTEGER": "Int64"}[sql_type]


__all__ = ["JUDGMENT_COLUMNS", "JUDGMENT_COLUMN_NAMES", "TRIAL_KEY_COLUMNS", "Judgment", "JudgmentError",
           "as_row_values", "from_shown", "judgment_dict", "judgment_frame", "make_judgment", "pandas_dtype",
           "trial_ids"]
