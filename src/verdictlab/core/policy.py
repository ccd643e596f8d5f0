"""The figure policy: how every figure of a report, an analysis or a command is computed, in one object.

A :class:`FigurePolicy` holds the four settings that change figures -- what an unparsed verdict counts as
(:class:`~verdictlab.core.vocab.UnparsedPolicy`), the confidence of the intervals, the bootstrap resamples
behind them and the seed of every random draw.  It is built once (from the command line's
``--unparsed/--confidence/--bootstrap/--seed``, or by an API caller), validated when it is built, and passed
as one argument everywhere; code reads its answers (:attr:`FigurePolicy.drops_unparsed`,
:attr:`FigurePolicy.alpha`), never compares the policy's words.

>>> FigurePolicy(unparsed="wrong").drops_unparsed
False
>>> FigurePolicy().alpha
0.050000000000000044
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, replace
from typing import Any

from .vocab import UNPARSED_POLICIES, UnparsedPolicy

__all__ = ["DEFAULT_POLICY", "FigurePolicy"]


@dataclass(frozen=True, slots=True)
class FigurePolicy:
    """How figures are computed: ``unparsed`` (an :class:`UnparsedPolicy`, or its word, converted once:
    ``exclude`` leaves unparsed verdicts out and counts them, ``wrong`` counts them as wrong),
    ``confidence`` (of every interval, in (0, 1)), ``n_bootstrap`` (resamples behind a bootstrap
    interval, >= 0; 0 = none) and ``seed`` (of every random draw, >= 0).  ``ValueError`` naming the
    setting when one is out of range."""

    unparsed: UnparsedPolicy = UnparsedPolicy.EXCLUDE
    confidence: float = 0.95
    n_bootstrap: int = 1000
    seed: int = 0

    def __post_init__(self) -> None:
        try:
            unparsed = UnparsedPolicy(self.unparsed)
        except ValueError:
            raise ValueError(f"unparsed must be one of {UNPARSED_POLICIES}, got {self.unparsed!r}") from None
        object.__setattr__(self, "unparsed", unparsed)
        conf = self.confidence
        if isinstance(conf, bool) or not isinstance(conf, int | float) or not (0 < conf < 1) or math.isnan(conf):
            raise ValueError(f"confidence must be in (0, 1), got {conf!r}")
        object.__setattr__(self, "confidence", float(conf))
        for name in ("n_bootstrap", "seed"):
            value = getattr(self, name)
            try:
                whole = -1 if isinstance(value, bool) else operator.index(value)
            except TypeError:
                whole = -1
            if whole < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
            object.__setattr__(self, name, whole)

    @property
    def drops_unparsed(self) -> bool:
        """True when an unparsed verdict is left out of a figure (and counted); False when it counts as a
        wrong verdict (a value of its own, next to A, B and tie)."""
        return self.unparsed is UnparsedPolicy.EXCLUDE

    @property
    def alpha(self) -> float:
        """The level of the tests read beside the intervals: 1 - confidence."""
        return 1.0 - self.confidence

    def but(self, **changes: Any) -> FigurePolicy:
        """A copy with ``changes`` (validated like a new policy)."""
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """``{"unparsed": "exclude", "confidence": 0.95, "n_bootstrap": 1000, "seed": 0}`` (JSON-ready)."""
        return {"unparsed": self.unparsed.value, "confidence": self.confidence, "n_bootstrap": self.n_bootstrap,
                "seed": self.seed}


#: the policy every figure uses unless told otherwise
DEFAULT_POLICY = FigurePolicy()
