"""Curation of generated test cases: a person accepts, rejects or edits a model-written perturbed item.

A model-written case (``meta["perturbation"]["origin"] == "model"``, the data contract of
:class:`verdictlab.core.items.Perturbation`) counts in the figures only once a person accepted it.  The
person's decisions are kept **in the case itself**, under ``meta["perturbation"]``:

* ``status``: the current curation status (``accepted``, ``rejected``, ``edited``; ``generated`` before
  anyone looked at it);
* ``curation``: every decision in order, ``{"action", "by", "at", "status"}`` (who, when -- seconds since
  the epoch, UTC -- and the status it left);
* ``generated_response``: the response as the model wrote it, set by the first edit (the item's
  ``response`` is then the person's text).

Transitions: ``accept`` -> accepted, ``reject`` -> rejected, ``edit`` -> edited (an edited case counts
once it is accepted: the edit is a new text nobody has approved yet).  A decision can be revised (a
rejected case accepted later); every decision stays in the history.  A deterministic case (a rule wrote
it) is not curated: it counts as written.

:func:`as_generated` undoes the curation (the case as the generator wrote it), so a run resumed from the
generator's file keeps the person's decisions: :func:`keep_curated` prefers the stored, curated case
when it is the curated form of the case read again.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import InputError
from .items import PERTURBATION_KEY, PairItem, PointItem, perturbation_of
from .vocab import CurationStatus

__all__ = ["CURATION_ACTIONS", "CurationError", "CurationEvent", "as_generated", "curate", "curation_events",
           "keep_curated", "was_edited"]

#: what a person can do to a generated case
CURATION_ACTIONS: tuple[str, ...] = ("accept", "reject", "edit")
_STATUS_AFTER = {"accept": CurationStatus.ACCEPTED, "reject": CurationStatus.REJECTED,
                 "edit": CurationStatus.EDITED}
#: the longest curator name kept
MAX_CURATOR_CHARS = 100

Item = PairItem | PointItem


class CurationError(InputError):
    """A curation decision that cannot be recorded (names the case and why): bad input."""


class CurationEvent(BaseModel):
    """One decision: ``action`` by ``by`` at ``at`` (seconds since the epoch), leaving ``status``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    action: Literal["accept", "reject", "edit"]
    by: str = Field(min_length=1, max_length=MAX_CURATOR_CHARS)
    at: float
    status: CurationStatus


def _case(item: Item) -> dict[str, Any]:
    """The item's ``meta["perturbation"]`` when it is a model-written case, else :class:`CurationError`."""
    where = f"case {item.dataset}/{item.item_id}"
    p = perturbation_of(item) if isinstance(item, PointItem) else None
    if p is None:
        raise CurationError(f"{where}: not a perturbed case (no meta.{PERTURBATION_KEY}); nothing to curate")
    if p.origin != "model":
        raise CurationError(f"{where}: written by a rule ({p.kind}); a deterministic case counts as written "
                            "and is not curated")
    return dict(item.meta[PERTURBATION_KEY])


def curation_events(item: Item) -> list[CurationEvent]:
    """The decisions recorded on ``item``, oldest first (empty for a case nobody curated)."""
    raw = (getattr(item, "meta", None) or {}).get(PERTURBATION_KEY) or {}
    return [CurationEvent.model_validate(e) for e in raw.get("curation") or ()]


def was_edited(item: Item) -> bool:
    """Whether a person edited the case's text at least once."""
    return any(e.action == "edit" for e in curation_events(item))


def curate(item: PointItem, action: str, *, by: str, at: float, response: str | None = None) -> PointItem:
    """``item`` after ``action`` (``accept``, ``reject`` or ``edit`` with the new ``response``) by the
    person ``by`` at time ``at``; :class:`CurationError` when it cannot be recorded."""
    meta = _case(item)
    where = f"case {item.dataset}/{item.item_id}"
    if action not in _STATUS_AFTER:
        raise CurationError(f"{where}: action must be one of {', '.join(CURATION_ACTIONS)}, got {action!r}")
    who = " ".join(str(by or "").split())
    if not who:
        raise CurationError(f"{where}: say who decided (a curator name)")
    if len(who) > MAX_CURATOR_CHARS:
        raise CurationError(f"{where}: the curator name is longer than {MAX_CURATOR_CHARS} characters")
    if not isinstance(at, int | float) or not math.isfinite(at):
        raise CurationError(f"{where}: the time of the decision must be a finite number of seconds")
    update: dict[str, Any] = {}
    if action == "edit":
        if response is None or not response.strip():
            raise CurationError(f"{where}: an edit needs the new text of the response")
        if response == item.response:
            raise CurationError(f"{where}: the edited text is the same as the current one")
        meta.setdefault("generated_response", item.response)
        update["response"] = response
    elif response is not None:
        raise CurationError(f"{where}: only an edit carries a response text")
    status = _STATUS_AFTER[action]
    event = CurationEvent.model_validate({"action": action, "by": who, "at": float(at), "status": status})
    meta["status"] = status.value
    meta["curation"] = [*(meta.get("curation") or ()), event.model_dump(mode="json")]
    update["meta"] = {**item.meta, PERTURBATION_KEY: meta}
    return item.model_copy(update=update)


def as_generated(item: Item) -> Item:
    """``item`` as its generator wrote it: status ``generated``, no decisions, the model's own text."""
    raw = (getattr(item, "meta", None) or {}).get(PERTURBATION_KEY)
    if not isinstance(raw, dict) or not raw.get("curation"):
        return item
    meta = {k: v for k, v in raw.items() if k not in ("curation", "generated_response")}
    meta["status"] = CurationStatus.GENERATED.value
    update: dict[str, Any] = {"meta": {**item.meta, PERTURBATION_KEY: meta}}
    if "generated_response" in raw:
        update["response"] = raw["generated_response"]
    return item.model_copy(update=update)


def keep_curated(new: Item, stored: Item) -> Item | None:
    """The item to keep for one id when ``new`` is read again over a ``stored`` one: the stored item when
    both are the same, or when the stored one is ``new`` after a person's curation (the decisions are
    the person's and a file written before them cannot undo them); None when they differ otherwise."""
    if new == stored:
        return stored
    if curation_events(stored) and as_generated(stored) == new:
        return stored
    return None
