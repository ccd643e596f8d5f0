"""What every perturbation family shares: a rule's result (:class:`Edit`), a case that could not be made
(:class:`NotApplicable`, :class:`Dropped`), the seeded draw of one case and the case item itself
(:func:`make_case`: the data contract of ``meta["perturbation"]``, docs/architecture.md)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ..core.items import PERTURBATION_KEY, Perturbation, PointItem, Transcript
from ..core.vocab import CurationStatus, PerturbationClass

__all__ = ["DROP_REASONS", "Dropped", "Edit", "NotApplicable", "case_id", "case_rng", "make_case"]

#: why a case is not in a suite: the rule does not apply to the source, the text came back unchanged,
#: the writing call failed, its reply had no text, the validation call failed or could not be read, the
#: validator found the case invalid, it is a near duplicate, or the budget stopped the calls first
DROP_REASONS: tuple[str, ...] = ("not_applicable", "unchanged", "call_failed", "unparsed", "validation_failed",
                                 "validation_unparsed", "invalid", "near_duplicate", "not_sent")


class NotApplicable(Exception):
    """A rule that cannot perturb this source (no list to restyle, no tool result to drop...): the
    message says why; the case is counted as ``not_applicable``."""


@dataclass(frozen=True)
class Edit:
    """What a deterministic rule did to a source: the new ``response`` and/or ``transcript`` (None =
    unchanged) and the ``params`` that reproduce it."""

    response: str | None = None
    transcript: Transcript | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dropped:
    """A case that is not in the suite, and why (:data:`DROP_REASONS`); ``detail`` says more (the
    error, the similarity and the case it repeats, the validator's reasoning)."""

    case_id: str
    source_id: str
    kind: str
    reason: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"case_id": self.case_id, "source_id": self.source_id, "kind": self.kind, "reason": self.reason,
                "detail": self.detail}


def case_id(source_id: str, kind: str, variant: int | None = None) -> str:
    """``<source>~<kind>`` (``~<kind>.<k>`` for the k-th variant when a kind writes several)."""
    return f"{source_id}~{kind}" + (f".{variant}" if variant is not None else "")


def case_rng(seed: int, *parts: Any) -> random.Random:
    """The seeded draw of one case: the same seed and parts give the same choices in any process and
    whatever the order the cases are made in."""
    return random.Random("\x1f".join(["perturb", str(seed), *map(str, parts)]))


def make_case(source: PointItem, *, kind: str, klass: PerturbationClass, origin: str, cid: str, label: Any,
              response: str | None = None, transcript: Transcript | None = None,
              extra: dict[str, Any] | None = None) -> PointItem:
    """The perturbed item: ``source`` with its new text under ``cid``, in the same dataset, its label the
    *expected* label and ``meta["perturbation"]`` filled (status ``generated``).  A preserving case keeps
    the source's meta (per-criterion labels stay true); a changing one keeps none of it."""
    pert = Perturbation.model_validate({
        "source_id": source.item_id, "kind": kind, "class": klass.value, "origin": origin,
        "status": CurationStatus.GENERATED.value, "source_label": source.label, **(extra or {})})
    base = {k: v for k, v in source.meta.items() if k != PERTURBATION_KEY} if klass == PerturbationClass.PRESERVING \
        else {}
    update: dict[str, Any] = {"item_id": cid, "label": label, "meta": {**base, PERTURBATION_KEY: pert.as_meta()}}
    if response is not None:
        update["response"] = response
    if transcript is not None:
        update["transcript"] = transcript
    return PointItem.model_validate({**source.model_dump(), **update})
