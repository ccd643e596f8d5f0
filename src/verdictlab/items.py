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

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .vocab import LABELS, ORDERS, swap

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


class ItemError(ValueError):
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


class PairItem(BaseModel):
    """Two responses to one question, in canonical order, with an optional gold label."""

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
    model_a: str | None = None       # authoring system of response_a (None = unknown)
    model_b: str | None = None       # authoring system of response_b

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


class PointItem(BaseModel):
    """One response with a graded label (e.g. 3-level correctness or a 1-5 score)."""

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

    @field_validator("item_id", mode="before")
    @classmethod
    def _item_id(cls, v: Any) -> str:
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        return v


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


def to_canonical(shown_verdict: str | None, order: str) -> str | None:
    """Map a verdict given in *shown* terms (``A`` = first shown) back to canonical terms
    (:func:`verdictlab.vocab.swap`)."""
    return swap(shown_verdict, order)


def to_shown(canonical_verdict: str | None, order: str) -> str | None:
    """Inverse of :func:`to_canonical` (the map is its own inverse; :func:`verdictlab.vocab.swap`)."""
    return swap(canonical_verdict, order)


__all__ = ["LABELS", "ORDERS", "ItemError", "Label", "Order", "PairItem", "PointItem", "Verdict",
           "make_pair_item", "normalise_label", "to_canonical", "to_shown"]
