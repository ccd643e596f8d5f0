"""Items: the things a judge is asked about.

A :class:`PairItem` holds two responses to one question in the dataset's *canonical* order
(``response_a`` then ``response_b``); its ``label`` is in canonical terms.  A :class:`PointItem`
holds one response with a graded label, for pointwise judges.

Label conventions
-----------------
``label`` is ``"A"`` (response_a is better), ``"B"`` (response_b is better), ``"tie"`` or ``None``
(unlabelled).  Pairs labelled ``tie`` or ``None`` count for consistency (C) and flip rate (phi)
but not for accuracy (A), decisive accuracy (A_dec) or the trustworthy rate (T).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from ..errors import InputError
from .vocab import LABELS, ORDERS, CurationStatus, PerturbationClass, check_gold_rule, swap

Label = Literal["A", "B", "tie"]
Verdict = Literal["A", "B", "tie"]
Order = Literal["AB", "BA"]

_LABEL_ALIASES = {
    "a": "A",
    "b": "B",
    "tie": "tie",
    "TIE": "tie",
    "Tie": "tie",
}


class ItemError(InputError):
    """A source record could not be turned into an item.

    The message always names the file, the row (1-based line or record number) and the field.
    """

    def __init__(self, message: str, *, path: str | None = None, row: int | None = None,
                 field: str | None = None) -> None:
        where = []
        if path is not None:
            where.append(str(path))
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.path = path
        self.row = row
        self.field = field
        self.detail = message


#: how many problems of one source are listed before "... and N more"
MAX_PROBLEMS = 20
_ROWS_SHOWN = 5


class ItemProblems(ItemError):
    """Every problem found in one source, raised once the whole source was read, so a user fixes
    them in one pass.  Problems with the same field and message are one line listing their rows;
    the first :data:`MAX_PROBLEMS` lines are shown, then "... and N more".  ``problems`` holds them all."""

    def __init__(self, problems: list[ItemError], *, path: str | None = None, n_more: int = 0) -> None:
        groups: dict[tuple[str | None, str | None, str], list[int | None]] = {}
        # in file and row order, whatever order the checks found them in (a line that is not JSON is
        # found before the rows around it are checked)
        ordered = sorted(problems, key=lambda p: (p.path is not None and p.path != path, str(p.path or ""),
                                                  p.row if p.row is not None else -1))
        for p in ordered:
            # a folder of files (llmbar, fastchat): a problem in another file than ``path`` names its file
            other = p.path if p.path is not None and p.path != path else None
            groups.setdefault((other, p.field, p.detail), []).append(p.row)
        lines = []
        for (other, field, detail), rows in groups.items():
            where = [] if other is None else [str(other)]
            known = [r for r in rows if r is not None]
            if known:
                shown = ", ".join(str(r) for r in known[:_ROWS_SHOWN])
                more = f" and {len(known) - _ROWS_SHOWN} more" if len(known) > _ROWS_SHOWN else ""
                where.append(f"{'rows' if len(known) > 1 else 'row'} {shown}{more}")
            if field is not None:
                where.append(f"field '{field}'")
            lines.append(f"{', '.join(where)}: {detail}" if where else detail)
        shown_lines = lines[:MAX_PROBLEMS]
        if len(lines) > MAX_PROBLEMS:
            shown_lines.append(f"... and {len(lines) - MAX_PROBLEMS} more")
        if n_more:
            shown_lines.append(f"... and {n_more} more problem(s) not itemised")
        n = len(problems) + n_more
        head = f"{n} problems" + (f" ({len(lines)} kinds)" if len(lines) < n else "")
        super().__init__(head + ":\n" + "\n".join(f"  {line}" for line in shown_lines), path=path)
        self.problems = problems
        self.lines = lines
        self.n_more = n_more


class Problems:
    """Collects the :class:`ItemError` s of one source instead of stopping at the first.

    A reader ``add`` s each problem and goes on (``try``/``except ItemError`` around a row: free when
    nothing is raised); :meth:`raise_if_any` raises the one problem as it is, or
    :class:`ItemProblems` for several."""

    #: problems kept in full; beyond them only counted (a column missing from a million rows)
    KEEP = 2000

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self.found: list[ItemError] = []
        self.n_more = 0

    def add(self, err: ItemError) -> None:
        for e in err.problems if isinstance(err, ItemProblems) else [err]:
            if len(self.found) < self.KEEP:
                self.found.append(e)
            else:
                self.n_more += 1

    @property
    def count(self) -> int:
        return len(self.found) + self.n_more

    def __bool__(self) -> bool:
        return bool(self.found)

    def raise_if_any(self) -> None:
        if len(self.found) == 1 and not self.n_more:
            raise self.found[0]
        if self.found:
            raise ItemProblems(self.found, path=self.path, n_more=self.n_more)


def text_id(value: Any, *, path: str | None, row: int | None, field: str) -> str:
    """An id or a name as a source wrote it: text that is not blank, or an integer (``7`` and ``7.0``
    both ``"7"``).  Anything else -- null, ``true``, a list, an object, ``2.5`` -- is refused:
    ``str()`` of it would become an id or a judge nobody wrote ("None", "True", "[1, 2]", "{...}")."""
    if isinstance(value, str):
        if not value.strip():
            raise ItemError("must not be empty", path=path, row=row, field=field)
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    what = "null" if value is None else f"{type(value).__name__} {value!r}"
    raise ItemError(f"must be text or an integer, got {what}"[:200], path=path, row=row, field=field)


def derived_item_id(question: str, response_a: str, response_b: str) -> str:
    """A stable item id from an item's content: ``h`` + 16 hex digits of the SHA-256 of the question
    and the two responses taken as an *unordered* pair.

    Unordered, so the id names the comparison, not the side a log put each response on: a log
    written once per presentation order (one file with the pair shown AB, one shown BA) gives both
    files' rows the same id, and they join into one pair.  Which response is canonical A is then
    the files' business: two files that disagree are refused when the second is imported (its items
    differ from the stored ones), never joined silently.  64 bits: a collision among a million items
    has a chance of about 3e-8."""
    pair = sorted((response_a, response_b))
    digest = hashlib.sha256(json.dumps([question, *pair], ensure_ascii=False).encode("utf-8")).hexdigest()
    return f"h{digest[:16]}"


def normalise_label(value: Any) -> str | None:
    """Map a raw label to ``"A" | "B" | "tie" | None``; raise ``ValueError`` on anything else."""
    if value is None:
        return None
    if isinstance(value, str):
        v = value.strip()
        if v == "":
            return None
        if v in LABELS:
            return v
        if v in _LABEL_ALIASES:
            return _LABEL_ALIASES[v]
    raise ValueError(f"label must be 'A', 'B', 'tie' or null, got {value!r}")


#: the field names an item of an earlier verdictlab gave the systems (read as ``system_a`` / ``system_b``)
_RENAMED_FIELDS = {"model_a": "system_a", "model_b": "system_b"}


class Vote(BaseModel):
    """One annotator's vote on a pair, in canonical terms (``A`` = response_a is better)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    annotator: str = Field(min_length=1)
    vote: Label

    @field_validator("vote", mode="before")
    @classmethod
    def _vote(cls, v: Any) -> str | None:
        return normalise_label(v)


class PairItem(BaseModel):
    """Two responses to one question, in canonical order, with an optional gold label.

    ``system_a`` / ``system_b`` name the systems that wrote ``response_a`` / ``response_b`` (None =
    unknown).  ``votes`` are the human annotators' votes on the pair (canonical terms) when the source
    has them, and ``label_rule`` the rule that made ``label`` from them
    (:func:`verdictlab.core.vocab.gold_label`); a label given directly has no rule.  An item written
    by an earlier verdictlab with ``model_a`` / ``model_b`` reads as ``system_a`` / ``system_b``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(min_length=1)
    dataset: str = Field(min_length=1)
    question: str
    response_a: str
    response_b: str
    label: Label | None = None
    reference: str | None = None
    category: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    system_a: str | None = None      # the system that wrote response_a (None = unknown)
    system_b: str | None = None      # the system that wrote response_b
    votes: tuple[Vote, ...] = ()
    label_rule: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """``model_a`` / ``model_b`` (items written before systems had their own name) -> ``system_*``."""
        if isinstance(data, dict) and any(k in data for k in _RENAMED_FIELDS):
            data = dict(data)
            for old, new in _RENAMED_FIELDS.items():
                if old in data:
                    value = data.pop(old)
                    if data.get(new) is not None and value is not None and data[new] != value:
                        raise ValueError(f"{old} {value!r} and {new} {data[new]!r} name different systems")
                    data.setdefault(new, value)
                    if data[new] is None:
                        data[new] = value
        return data

    @field_validator("label_rule")
    @classmethod
    def _label_rule(cls, v: str | None) -> str | None:
        return v if v is None else check_gold_rule(v)

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, v: Any) -> str | None:
        return normalise_label(v)

    @field_validator("item_id", mode="before")
    @classmethod
    def _item_id(cls, v: Any) -> str:
        if isinstance(v, bool) or v is None:
            raise ValueError("item_id must be a non-empty string or integer")
        if isinstance(v, int):
            return str(v)
        return v

    def shown(self, order: str) -> tuple[str, str]:
        """The two responses as shown to the judge: ``(first, second)`` for ``order``."""
        if order == ORDERS[0]:
            return self.response_a, self.response_b
        if order == ORDERS[1]:
            return self.response_b, self.response_a
        raise ValueError(f"order must be 'AB' or 'BA', got {order!r}")


class ToolCall(BaseModel):
    """A tool call an agent made: the tool (``function``) and its ``arguments``; ``id`` links the
    tool message that carried its result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    function: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class TranscriptMessage(BaseModel):
    """One message of an agent transcript: ``system`` / ``user`` / ``assistant`` (with the tool
    calls it made) or ``tool`` (a result: the call it answers, the tool, the error if it failed)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    function: str | None = None
    error: str | None = None


class Transcript(BaseModel):
    """What an agent did for one task: its messages in order.  The final answer is the point item's
    ``response`` (the graded object when a grader reads only the answer); a transcript rubric reads
    the whole of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[TranscriptMessage, ...] = Field(min_length=1)

    def tool_results(self) -> list[int]:
        """Positions of the tool messages (results), in order."""
        return [i for i, m in enumerate(self.messages) if m.role == "tool"]

    def last_assistant(self) -> int | None:
        """Position of the last assistant message that carries text (the final answer), or None."""
        return next((i for i in range(len(self.messages) - 1, -1, -1)
                     if self.messages[i].role == "assistant" and self.messages[i].content.strip()), None)


class PointItem(BaseModel):
    """One response with a graded label (e.g. 3-level correctness or a 1-5 score).

    ``transcript``: when the graded object is an agent's run (an inspect_ai sample), its messages and
    tool calls; ``response`` is then the agent's final answer and the label says whether the task was
    completed (``PASS`` / ``FAIL``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(min_length=1)
    dataset: str = Field(min_length=1)
    question: str
    response: str
    label: float | int | str | None = None
    scale: tuple[Any, ...] | None = None
    reference: str | None = None
    category: str | None = None
    meta: dict[str, Any] = Field(default_factory=dict)
    transcript: Transcript | None = None

    @field_validator("item_id", mode="before")
    @classmethod
    def _item_id(cls, v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        return v

    @model_serializer(mode="wrap")
    def _without_empty_transcript(self, handler: SerializerFunctionWrapHandler) -> Any:
        """An item without a transcript is written as before transcripts existed (a store or an
        export of answers-only items reads the same in an earlier verdictlab)."""
        data = handler(self)
        if isinstance(data, dict) and data.get("transcript") is None:
            data.pop("transcript", None)
        return data


#: the ``PointItem.meta`` key that makes an item a perturbed copy of another (:class:`Perturbation`)
PERTURBATION_KEY = "perturbation"
#: how a perturbation was written: by a rule (counts as generated) or by a model (counts once accepted)
PERTURBATION_ORIGINS: tuple[str, ...] = ("deterministic", "model")
_KIND = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$"


class Perturbation(BaseModel):
    """What makes a :class:`PointItem` a perturbed copy of another item: ``item.meta["perturbation"]``.

    The perturbed item lives in the same dataset as its source (so the grader's figures on both sit in
    one cell) under an id of its own; its ``label`` is the *expected* label -- the source's label for a
    ``preserving`` perturbation, the flipped label for a ``changing`` one.  Fields:

    * ``source_id``: the ``item_id`` of the unperturbed item (same dataset);
    * ``kind``: dotted name of the perturbation, e.g. ``format.whitespace``, ``verbosity.pad``,
      ``paraphrase``, ``label_flip``;
    * ``class``: ``preserving`` (the grade must not change) or ``changing`` (the gold label flips);
    * ``origin``: ``deterministic`` (written by a rule) or ``model`` (written by a model);
    * ``status``: the curation status, ``generated`` / ``accepted`` / ``rejected`` / ``edited``;
    * ``source_label``: the source item's label as the generator saw it (optional; the figures join
      the source item itself).

    Only cases that :meth:`counts` enter the figures: deterministic ones, and model-written ones a
    person accepted."""

    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)

    source_id: str = Field(min_length=1)
    kind: str = Field(pattern=_KIND)
    perturbation_class: PerturbationClass = Field(alias="class")
    origin: Literal["deterministic", "model"]
    status: CurationStatus = CurationStatus.GENERATED
    source_label: float | int | str | None = None

    @field_validator("source_id", mode="before")
    @classmethod
    def _source_id(cls, v: Any) -> Any:
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    def counts(self) -> bool:
        """Whether the case enters the figures: deterministic, or model-written and accepted."""
        return self.origin == "deterministic" or self.status == CurationStatus.ACCEPTED

    def as_meta(self) -> dict[str, Any]:
        """The JSON-ready value stored under ``meta["perturbation"]``."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def perturbation_of(item: Any) -> Perturbation | None:
    """The :class:`Perturbation` of a point item (``None`` for an unperturbed item); a malformed
    ``meta["perturbation"]`` raises :class:`ItemError` naming the item and the field."""
    meta = getattr(item, "meta", None) or {}
    raw = meta.get(PERTURBATION_KEY)
    if raw is None:
        return None
    try:
        return Perturbation.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ()))
        raise ItemError(err.get("msg", str(exc)), path=f"item {getattr(item, 'dataset', '?')}/"
                        f"{getattr(item, 'item_id', '?')}",
                        field=f"meta.{PERTURBATION_KEY}" + (f".{where}" if where else "")) from None


def make_pair_item(record: dict[str, Any], *, path: str | None = None, row: int | None = None,
                   **defaults: Any) -> PairItem:
    """Build a :class:`PairItem`, turning pydantic errors into an :class:`ItemError` that names
    the file, row and the first offending field."""
    data = {**defaults, **record}
    try:
        return PairItem(**data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or None
        raise ItemError(err.get("msg", str(exc)), path=path, row=row, field=field) from None


def pair_item_problems(record: dict[str, Any], *, path: str | None = None, row: int | None = None,
                       known: set[str] = frozenset(), **defaults: Any) -> list[ItemError]:  # type: ignore[assignment]
    """Every field problem :class:`PairItem` finds in ``record`` (one :class:`ItemError` per field), but
    those of the fields in ``known`` (already reported by the caller: a missing field, a text of another
    type), so a row lists all its problems at once."""
    try:
        PairItem(**{**defaults, **record})
    except ValidationError as exc:
        out = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err.get("loc", ())) or None
            if field is None or field.split(".")[0] not in known:
                out.append(ItemError(err.get("msg", str(exc)), path=path, row=row, field=field))
        return out
    return []
def item_systems(item: PairItem | PointItem) -> dict[str, str | None]:
    """The judgment columns ``system_a`` / ``system_b`` of a row about ``item`` (empty for a point item)."""
    if isinstance(item, PairItem):
        return {"system_a": item.system_a, "system_b": item.system_b}
    return {}


def to_canonical(shown_verdict: str | None, order: str) -> str | None:
    """Map a verdict given in *shown* terms (``A`` = first shown) back to canonical terms
    (:func:`verdictlab.core.vocab.swap`)."""
    return swap(shown_verdict, order)


def to_shown(canonical_verdict: str | None, order: str) -> str | None:
    """Inverse of :func:`to_canonical` (the map is its own inverse; :func:`verdictlab.core.vocab.swap`)."""
    return swap(canonical_verdict, order)


__all__ = ["LABELS", "MAX_PROBLEMS", "ORDERS", "PERTURBATION_KEY", "PERTURBATION_ORIGINS", "ItemError",
           "ItemProblems", "Label", "Order", "PairItem", "Perturbation", "PointItem", "Problems", "ToolCall", "Transcript",
           "TranscriptMessage", "Verdict", "Vote",
           "derived_item_id", "item_systems", "make_pair_item", "normalise_label", "pair_item_problems", "perturbation_of",
           "text_id",
           "to_canonical", "to_shown"]
