"""The near-duplicate filter of model-written test cases.

Measure
-------
**word-sequence similarity**: the texts are case-folded and cut into words (``\\w+``), and the
similarity is :class:`difflib.SequenceMatcher`'s ratio over the two word lists, 2·M / (n₁ + n₂), M the
words in matching blocks (the standard library's Ratcliff/Obershelp matching, ``autojunk`` off so
frequent words are not ignored).  1 means the same words in the same order; a reordering of the same
sentences scores low.

Why this one (``bench/perturb_similarity.py``, one 200-word response against variants built the way
writers fail and succeed; load 13 on 2 cores): the word ratio gives an exact repeat 1.00, a copy behind
a lead-in 0.99 and a one-word change 0.99, against 0.57 for a reworded text, 0.35 for the same sentences
reordered and 0.23 for both.  A token-set Jaccard is 6x cheaper but calls the reordered text a duplicate
(1.00: it cannot see word order); a character ratio separates the same cases less widely (0.74 for the
rewording) at 44x the cost (88 ms against 2 ms per pair).  No text-similarity library is installed with
verdictlab; the standard library's matcher serves.

Threshold
---------
:data:`DEFAULT_THRESHOLD` = 0.9: a case at 0.9 or above to a text it is compared with is a near
duplicate (on the bench the failures to catch score 0.99 and more, the rewordings 0.57 and less).  What a case is compared with is the caller's rule (``datasets/perturb_model.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from difflib import SequenceMatcher

__all__ = ["DEFAULT_THRESHOLD", "MEASURE", "most_similar", "similarity", "words"]

DEFAULT_THRESHOLD = 0.9
#: the measure's name as stored with each case
MEASURE = "difflib word-sequence ratio"
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The case-folded words of ``text``."""
    return _WORD.findall(text.casefold())


def similarity(a: str, b: str) -> float:
    """Word-sequence similarity of two texts in [0, 1] (module docstring); two texts without words are
    the same (1.0)."""
    wa, wb = words(a), words(b)
    if not wa and not wb:
        return 1.0
    return SequenceMatcher(None, wa, wb, autojunk=False).ratio()


def most_similar(text: str, others: Iterable[tuple[str, str]]) -> tuple[str | None, float]:
    """``(key, similarity)`` of the most similar of ``others`` (key, text) pairs to ``text``
    (``(None, 0.0)`` when there are none)."""
    best: tuple[str | None, float] = (None, 0.0)
    for key, other in others:
        s = similarity(text, other)
        if s > best[1]:
            best = (key, s)
    return best
