"""The domain words of verdictlab, once: presentation order, verdict, parse status, unparsed policy,
decoding mode, the cell key, and the one AB/BA swap rule.

Every other module takes these names from here instead of spelling the strings.  The enums are
``StrEnum``: a member *is* its string (``Order.BA == "BA"``), so frames, JSON and SQLite see plain
text; the tuples below are the same values for ``isin`` / validation.

Terms
-----
*Canonical* terms are the dataset's order: ``A`` = ``response_a``.  *Shown* terms are what the judge
saw: ``A`` = the response shown first.  Order ``AB`` shows ``response_a`` first, ``BA`` shows
``response_b`` first, so for ``BA`` the two terms differ by swapping ``A`` and ``B``; ``tie`` and
``None`` (no verdict) are the same in both.  :func:`swap` is that map; it is its own inverse, so it
turns shown verdicts into canonical ones and back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Order(StrEnum):
    """Presentation order of a pair: ``AB`` shows response_a first, ``BA`` shows response_b first."""

    AB = "AB"
    BA = "BA"


class Verdict(StrEnum):
    """A verdict or a label: ``A``, ``B`` or ``tie`` (``None`` = no verdict / unlabelled)."""

    A = "A"
    B = "B"
    TIE = "tie"


class ParseStatus(StrEnum):
    """How a verdict was read from the judge's output (see :mod:`verdictlab.protocols.base`)."""

    OK = "ok"                # the output matched the format exactly
    REPAIRED = "repaired"    # a documented repair step recovered an unambiguous verdict
    FALLBACK = "fallback"    # a named fallback rule produced the verdict
    FAILED = "failed"        # no verdict; nothing is ever guessed


class UnparsedPolicy(StrEnum):
    """How unparsed verdicts count in the figures: left out (and counted) or counted as wrong."""

    EXCLUDE = "exclude"
    WRONG = "wrong"


class Missing(StrEnum):
    """Why a figure of a cell is missing, in order of precedence: where several apply, the first is the
    reason (:func:`verdictlab.stats.figure_reasons`)."""

    NO_READABLE_REPLIES = "no readable replies"
    ONE_ORDER = "one order"
    ONE_REPETITION = "one repetition"
    NO_LABELS = "no labels"
    TOO_FEW_PAIRS = "too few pairs"
    ADAPTIVE_DESIGN = "adaptive design"


class Decoding(StrEnum):
    """How the judge's output was decoded: ``free`` text, or ``constrained`` to the protocol's format
    (a grammar / JSON schema)."""

    FREE = "free"
    CONSTRAINED = "constrained"


class PerturbationClass(StrEnum):
    """What a perturbation of a point item does to its meaning: ``preserving`` (the grade must not
    change: format, verbosity, paraphrase) or ``changing`` (the gold label flips: the grade must follow)."""

    PRESERVING = "preserving"
    CHANGING = "changing"


class CurationStatus(StrEnum):
    """Where a generated test case stands with the person curating it.  A model-written case counts in
    the figures only once ``accepted``; a deterministic one (a rule wrote it) counts as generated."""

    GENERATED = "generated"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    EDITED = "edited"


ORDERS: tuple[str, ...] = (Order.AB.value, Order.BA.value)
VERDICTS: tuple[str, ...] = (Verdict.A.value, Verdict.B.value, Verdict.TIE.value)
LABELS: tuple[str, ...] = VERDICTS
DECISIVE: tuple[str, ...] = (Verdict.A.value, Verdict.B.value)     # a winner was named
PARSE_STATUSES: tuple[str, ...] = tuple(s.value for s in ParseStatus)
UNPARSED_POLICIES: tuple[str, ...] = tuple(p.value for p in UnparsedPolicy)
DECODINGS: tuple[str, ...] = tuple(d.value for d in Decoding)
DEFAULT_DECODING: str = Decoding.FREE.value
#: the rules that make a pair's gold label from its annotators' votes (:func:`gold_label`): ``majority``
#: (more than half of the votes; a tie when no vote has that), ``majority-or-none`` (the same, but no
#: label when no vote has more than half), ``mean-sign`` (the sign of the mean vote with A = +1, B = -1,
#: tie = 0), ``unanimous`` (a label only when every vote agrees, none otherwise)
GOLD_RULES: tuple[str, ...] = ("majority", "majority-or-none", "mean-sign", "unanimous")
#: what a stated rule adds when a tie outcome leaves the pair unlabelled (``"mean-sign, ties dropped"``)
TIES_DROPPED = ", ties dropped"
#: the names a protocol may show the two responses under (G-Eval; the ``labels`` probe): first, second
LABEL_SETS: dict[str, tuple[str, str]] = {"ab": ("A", "B"), "12": ("1", "2"), "pq": ("P", "Q")}

_SWAPPED = {"A": "B", "B": "A"}


_VOTE_SIGN = {"A": 1, "B": -1, "tie": 0}


def check_gold_rule(rule: str) -> str:
    """``rule`` itself if it states a gold rule: one of :data:`GOLD_RULES`, optionally followed by
    :data:`TIES_DROPPED`; ``ValueError`` otherwise."""
    base = rule[: -len(TIES_DROPPED)] if isinstance(rule, str) and rule.endswith(TIES_DROPPED) else rule
    if base not in GOLD_RULES:
        raise ValueError(f"gold rule must be one of {list(GOLD_RULES)} (optionally + {TIES_DROPPED!r}), got {rule!r}")
    return rule


def gold_label(votes: Sequence[str], rule: str) -> str | None:
    """The gold label of a pair from its annotators' votes (canonical ``A`` / ``B`` / ``tie``) under
    ``rule`` (:func:`check_gold_rule`): the one definition every loader, importer and figure uses.

    ``majority``: the vote more than half of the votes give, else ``tie`` (``majority-or-none``: else
    None).  ``mean-sign``: the sign of
    the mean with A = +1, B = -1, tie = 0 (positive ``A``, negative ``B``, zero ``tie``) -- it differs
    from ``majority`` when one decisive vote and ties outnumber the other side (A, tie, tie: ``A``
    here, ``tie`` by majority).  ``unanimous``: the common vote when all agree, else None (no label).
    ``..., ties dropped``: a ``tie`` outcome is no label (None).  No votes: None.  A vote other than
    A / B / tie is a ``ValueError``."""
    check_gold_rule(rule)
    bad = [v for v in votes if v not in _VOTE_SIGN]
    if bad:
        raise ValueError(f"a vote must be 'A', 'B' or 'tie', got {bad[0]!r}")
    if not votes:
        return None
    drop_ties = rule.endswith(TIES_DROPPED)
    base = rule[: -len(TIES_DROPPED)] if drop_ties else rule
    n_a, n_b = sum(v == "A" for v in votes), sum(v == "B" for v in votes)
    n_tie = len(votes) - n_a - n_b
    label: str | None
    if base == "unanimous":
        label = votes[0] if max(n_a, n_b, n_tie) == len(votes) else None
    elif base in ("majority", "majority-or-none"):
        best = max((n_a, "A"), (n_b, "B"), (n_tie, "tie"))
        label = best[1] if 2 * best[0] > len(votes) else "tie" if base == "majority" else None
    else:       # mean-sign: the sign of (n_a - n_b) / n
        label = "A" if n_a > n_b else "B" if n_b > n_a else "tie"
    return None if drop_ties and label == "tie" else label


def check_order(order: str) -> str:
    """``order`` itself if it is ``AB`` or ``BA``; ``ValueError`` otherwise."""
    if order != "AB" and order != "BA":
        raise ValueError(f"order must be 'AB' or 'BA', got {order!r}")
    return str(order)


def swap(verdict: str | None, order: str) -> str | None:
    """Map a verdict between shown and canonical terms for ``order`` (the map is its own inverse).

    ``AB``: unchanged.  ``BA``: ``A`` <-> ``B``.  ``tie`` and ``None`` are unchanged in both orders;
    any other value is returned as is (pointwise protocols carry their own vocabulary).
    """
    if order == "AB":
        return verdict
    if order == "BA":
        return verdict if verdict is None else _SWAPPED.get(verdict, verdict)
    raise ValueError(f"order must be 'AB' or 'BA', got {order!r}")


def other_side(side: str) -> str:
    """``A`` <-> ``B`` (the other response of a pair); ``ValueError`` for anything else."""
    if side == "A":
        return "B"
    if side == "B":
        return "A"
    raise ValueError(f"side must be 'A' or 'B', got {side!r}")


def first_shown(order: str) -> str:
    """The canonical side shown first: ``A`` for ``AB``, ``B`` for ``BA``."""
    return "A" if check_order(order) == "AB" else "B"


def shown_first_won(shown_verdict: str | None) -> int | None:
    """From a verdict in *shown* terms: 1 if the first-shown response won, 0 if the second, None for
    ``tie`` and no verdict."""
    if shown_verdict == "A":
        return 1
    if shown_verdict == "B":
        return 0
    return None


def canonical_first_won(verdict: str | None, order: str) -> int | None:
    """Like :func:`shown_first_won`, from a verdict in *canonical* terms shown in ``order``."""
    return shown_first_won(swap(verdict, order))


def order_showing_first(side: str) -> str:
    """The order that shows canonical ``side`` (``A`` or ``B``) first: the inverse of :func:`first_shown`."""
    if side == "A":
        return "AB"
    if side == "B":
        return "BA"
    raise ValueError(f"side must be 'A' or 'B', got {side!r}")


def swap_array(verdicts: Any, orders: Any) -> Any:
    """:func:`swap` over arrays (numpy or pandas): element-wise shown <-> canonical terms.  Missing
    values, ``tie`` and other values are unchanged; an order other than AB/BA raises ``ValueError``."""
    import numpy as np

    v = np.asarray(verdicts, dtype=object)
    o = np.asarray(orders, dtype=object)
    bad = ~np.isin(o, ORDERS)
    if bad.any():
        raise ValueError(f"order must be 'AB' or 'BA', got {o[bad][0]!r}")
    ba = o == "BA"
    out = v.copy()
    out[ba & (v == "A")] = "B"
    out[ba & (v == "B")] = "A"
    return out


def first_shown_array(orders: Any) -> Any:
    """:func:`first_shown` over an array of orders: the canonical side shown first, element-wise."""
    import numpy as np

    return swap_array(np.full(len(orders), "A", dtype=object), orders)


def check_decoding(decoding: str) -> str:
    if decoding not in DECODINGS:
        raise ValueError(f"decoding must be one of {DECODINGS}, got {decoding!r}")
    return str(decoding)


# -- the cell --------------------------------------------------------------------------------------
CELL_KEY: tuple[str, ...] = ("judge", "protocol", "dataset", "temperature", "decoding")
"""The columns that name a cell: every per-cell figure and every table row about a cell carries all
five.  A frame without a ``decoding`` column (or a NULL in it: runs stored before decoding became a
factor) is ``free`` decoding; :class:`CellKey` reads it so."""


def _temperature(value: Any) -> float | None:
    """A temperature as a float; None for a missing one (None, NaN, NA)."""
    try:
        t = float(value)
    except (TypeError, ValueError):
        return None
    return None if t != t else t


@dataclass(frozen=True, slots=True, order=True)
class CellKey:
    """One ``(judge, protocol, dataset, temperature, decoding)`` combination: the unit of the
    reliability figures.  ``decoding`` defaults to ``free`` (runs stored before decoding became a factor).
    The one way to name the cell of a row: ``CellKey.of(row)`` (temperature as a float, a missing
    decoding as ``free``), so two tables join on it whatever their column types."""

    judge: str
    protocol: str
    dataset: str
    temperature: float | None
    decoding: str = DEFAULT_DECODING

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> CellKey:
        """The cell of a judgment row, a trial key or a figure record (any mapping with the fields;
        a missing or empty ``decoding`` is ``free``; a missing temperature -- NULL in stores written
        before it was required -- is None)."""
        dec = row.get("decoding")
        return cls(str(row["judge"]), str(row["protocol"]), str(row["dataset"]), _temperature(row.get("temperature")),
                   str(dec) if isinstance(dec, str) and dec else DEFAULT_DECODING)

    def as_tuple(self) -> tuple[Any, ...]:
        """The values in :data:`CELL_KEY` order."""
        return (self.judge, self.protocol, self.dataset, self.temperature, self.decoding)

    def as_dict(self) -> dict[str, Any]:
        """``{column: value}`` in :data:`CELL_KEY` order."""
        return dict(zip(CELL_KEY, self.as_tuple(), strict=True))

    def label(self) -> str:
        """Short human-readable name: ``judge / protocol / dataset / T=0.7`` (+ decoding if not free)."""
        t = "?" if self.temperature is None else f"{self.temperature:g}"
        s = f"{self.judge} / {self.protocol} / {self.dataset} / T={t}"
        return s if self.decoding == DEFAULT_DECODING else f"{s} / {self.decoding}"


__all__ = [
    "CELL_KEY",
    "DECISIVE",
    "DECODINGS",
    "DEFAULT_DECODING",
    "GOLD_RULES",
    "TIES_DROPPED",
    "LABELS",
    "ORDERS",
    "PARSE_STATUSES",
    "UNPARSED_POLICIES",
    "VERDICTS",
    "CellKey",
    "CurationStatus",
    "Decoding",
    "Order",
    "ParseStatus",
    "Missing",
    "PerturbationClass",
    "UnparsedPolicy",
    "Verdict",
    "canonical_first_won",
    "check_decoding",
    "check_gold_rule",
    "check_order",
    "first_shown",
    "first_shown_array",
    "gold_label",
    "order_showing_first",
    "other_side",
    "shown_first_won",
    "swap",
    "swap_array",
]
