"""Soft preferences and score pairs in a judgment table, and the verdict they give.

A judge can say how strongly it prefers one response instead of (or beside) naming a winner:

* a **soft preference** -- the probability that a response wins: ``p_a`` (P(response_a), canonical
  terms) or ``p_first`` (P(the response shown first), converted with the row's order: ``BA`` shows
  response_b first, so P(A) = 1 - p_first).  Stored as ``p_a`` (AlpacaEval's weighted annotators,
  a reward model's Bradley-Terry probability, a logit-scored judge).
* a **score pair** -- both responses scored in one call (Vicuna / FastChat's GPT-4 review, 1-10):
  ``score_a`` / ``score_b`` (canonical) or ``score_first`` / ``score_second`` (shown order).  Stored
  in ``scores`` in shown terms, ``{"score_shown_first", "score_shown_second"}``, as the protocols store
  theirs (:func:`verdictlab.protocols.geval.canonical_scores` reads them back in canonical terms).
  FastChat writes ``[-1, -1]`` when it could not read the review's scores: that pair is "not read".

Where the table has no verdict column, the verdict is derived by a stated rule (recorded in the import
notes and every row's ``parse_detail``): from the soft preference, ``A`` if P(A) > 1/2, ``B`` if < 1/2,
``tie`` at exactly 1/2 (AlpacaEval's rounding); else from the score pair, the higher score wins and
equal scores are a ``tie``; a row with neither is unparsed.  A verdict column, where there is one,
always wins: its value is the judge's verdict and the numbers are stored beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.vocab import swap

#: the columns this module reads (each may be renamed with ``--map``)
PREFERENCE_COLUMNS: tuple[str, ...] = ("p_a", "p_first", "score_a", "score_b", "score_first", "score_second")
#: FastChat's "could not read the scores" pair
UNREAD_SCORES = (-1.0, -1.0)
RULE_FROM_P = "from the soft preference: A if P(A) > 1/2, B if P(A) < 1/2, tie at 1/2"
RULE_FROM_SCORES = "from the score pair: the higher score wins, tie where the scores are equal"

Fail = Callable[[str, str], Exception]       # (message, column) -> the error to raise


@dataclass(frozen=True)
class Preference:
    """What a row says beyond its verdict: ``p_a`` (canonical), ``scores`` (shown terms, or None),
    the verdict those numbers give (canonical; None when they give none) and the rule that gave it."""

    p_a: float | None = None
    scores: dict[str, float] | None = None
    verdict: str | None = None
    rule: str | None = None
    detail: str = ""


def _number(v: Any, column: str, fail: Fail) -> float | None:
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, bool):
        raise fail(f"must be a number, got {v!r}", column)
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise fail(f"must be a number, got {v!r}", column) from None
    if not math.isfinite(f):
        raise fail(f"must be a finite number, got {v!r}", column)
    return f


def _probability(values: dict[str, Any], order: str, fail: Fail) -> float | None:
    p_a, p_first = (_number(values.get(c), c, fail) for c in ("p_a", "p_first"))
    if p_a is not None and p_first is not None:
        raise fail("give P(A) or P(first shown wins), not both", "p_first")
    p = p_a if p_a is not None else p_first
    if p is not None and not 0.0 <= p <= 1.0:
        raise fail(f"must be a probability in [0, 1], got {p!r}", "p_a" if p_a is not None else "p_first")
    if p_first is not None:
        return p_first if order == "AB" else 1.0 - p_first
    return p_a


def _score_pair(values: dict[str, Any], order: str, fail: Fail) -> tuple[float, float] | None:
    """(first shown, second shown) scores, or None."""
    canon = [_number(values.get(c), c, fail) for c in ("score_a", "score_b")]
    shown = [_number(values.get(c), c, fail) for c in ("score_first", "score_second")]
    if any(v is not None for v in canon) and any(v is not None for v in shown):
        raise fail("give score_a/score_b or score_first/score_second, not both", "score_first")
    for pair, names in ((canon, ("score_a", "score_b")), (shown, ("score_first", "score_second"))):
        if (pair[0] is None) != (pair[1] is None):
            missing = names[0] if pair[0] is None else names[1]
            raise fail(f"a score pair needs both scores; {missing} is empty", missing)
    if canon[0] is not None and canon[1] is not None:
        a, b = canon[0], canon[1]
        return (a, b) if order == "AB" else (b, a)
    if shown[0] is not None and shown[1] is not None:
        return shown[0], shown[1]
    return None


def read_preference(values: dict[str, Any], order: str, fail: Fail) -> Preference:
    """The soft preference and score pair of one row (``values``: the columns of
    :data:`PREFERENCE_COLUMNS` present in it, by their judgment-column names) shown in ``order``."""
    p_a = _probability(values, order, fail)
    pair = _score_pair(values, order, fail)
    detail = ""
    if pair == UNREAD_SCORES:
        pair, detail = None, "score pair [-1, -1]: the source could not read the scores"
    elif pair is not None and min(pair) < 0:
        raise fail(f"a score must be >= 0, got {min(pair)!r}", "score_first" if "score_first" in values
                   else "score_a")
    scores = None if pair is None else {"score_shown_first": pair[0], "score_shown_second": pair[1]}
    if p_a is not None:
        verdict = "A" if p_a > 0.5 else "B" if p_a < 0.5 else "tie"
        return Preference(p_a, scores, verdict, RULE_FROM_P, detail)
    if pair is not None:
        first, second = pair
        shown = "A" if first > second else "B" if second > first else "tie"
        return Preference(None, scores, swap(shown, order), RULE_FROM_SCORES, detail)
    return Preference(None, None, None, None, detail)
